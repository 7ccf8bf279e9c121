/* memory.c: the "memory://" backend: the store.h semantics in process memory, for tests
 * and the simulator. One mutex serializes units of work; an undo log makes a failing unit
 * leave no trace. Nothing is durable and nothing is shared between processes. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/storeInt.h"

/* Sane maxima: a simulator run or a test never comes near them, and a runaway caller
 * gets ZBSO_ESTORE instead of eating the machine's memory. */
#define MEM_MAX_JOBS 1000000
#define MEM_MAX_TRIALS_PER_JOB 1000000
#define MEM_MAX_UNDO 1000000
#define MEM_MAX_POINTS_PER_JOB 10000000

/* A request key and the trial that holds it (trial_insert). */
typedef struct mem_key {
    int64_t trial_number;
    char key[STORE_KEY_MAX + 1];
} mem_key;

/* A curve point and the trial it belongs to. */
typedef struct mem_point {
    int64_t trial_number;
    zbso_curve_point p;
} mem_point;

typedef struct mem_job {
    zbso_job job;
    zbso_trial *trials;          /* ascending trial_number */
    size_t n_trials, cap_trials;
    mem_point *points;           /* ascending (trial_number, epoch) */
    size_t n_points, cap_points;
    mem_key *keys;               /* in the order first given; each key once */
    size_t n_keys, cap_keys;
    zbso_arm arms[ZBSO_MAX_BATCH_SIZES]; /* ascending batch_size */
    size_t n_arms;
    zbso_power_profile **profiles; /* ascending batch_size, each malloc'd */
    size_t n_profiles, cap_profiles;
} mem_job;

/* The mutable part of a job, which job_update may change and undo restores. */
typedef struct mem_job_state {
    zbso_stage stage;
    int64_t exp_default_batch_size;
    bool has_min_cost;
    double min_cost;
    int64_t min_cost_batch_size;
    zbso_rng rng;
    int64_t num_trials;
    int64_t revision;
    double updated_at;
} mem_job_state;

enum undo_kind {
    UNDO_JOB_INSERT,   /* remove and free j */
    UNDO_JOB_UPDATE,   /* restore state into j */
    UNDO_JOB_DELETE,   /* put j back; freed for good when the unit commits */
    UNDO_TRIAL_INSERT, /* remove trial number from j */
    UNDO_TRIAL_UPDATE, /* restore trial into j */
    UNDO_ARM_INSERT,   /* remove arm batch_size from j */
    UNDO_ARM_UPDATE,   /* restore arm into j */
    UNDO_KEY_ADD,      /* remove j's last key */
    UNDO_KEY_MOVE,     /* give key i of j back to its former trial */
    UNDO_POINT_INSERT, /* remove point (trial_number, epoch) from j */
    UNDO_POINT_UPDATE, /* restore point into j */
    UNDO_PROFILE_PUT,  /* put profile.old back (or remove, NULL), free profile.new */
};

typedef struct mem_undo {
    enum undo_kind kind;
    mem_job *j;
    union {
        mem_job_state state;
        zbso_trial trial;
        zbso_arm arm;
        mem_point point;
        struct {
            size_t i;
            int64_t trial_number;
        } key;
        struct {
            zbso_power_profile *old, *new_;
        } profile;
    } u;
} mem_undo;

typedef struct mem_store {
    store base;
    pthread_mutex_t mu;
    mem_job **jobs;              /* ascending job_id */
    size_t n_jobs, cap_jobs;
    mem_undo *undo;              /* the running unit's log; capacity kept between units */
    size_t n_undo, cap_undo;
} mem_store;

typedef struct mem_txn {
    store_txn base;
    mem_store *st;
} mem_txn;

/* Grows *arr (elements of size elem) to hold at least need, doubling, never past max.
 * Returns 0, or ZBSO_ESTORE (max reached) / ZBSO_ENOMEM with err naming what. */
static int grow(void **arr, size_t *cap, size_t need, size_t elem, size_t max,
                const char *what, zbso_err *err)
{
    int rc = 0;
    if (need <= *cap)
        goto out;
    if (need > max) {
        rc = err_set(err, ZBSO_ESTORE, "memory store: more than %zu %s", max, what);
        goto out;
    }
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need)
        ncap *= 2;
    if (ncap > max)
        ncap = max;
    void *p = realloc(*arr, ncap * elem);
    if (p == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "memory store: out of memory growing %s to %zu",
                     what, ncap);
        goto out;
    }
    *arr = p;
    *cap = ncap;
out:
    return rc;
}

/* Index of the first job whose id is >= id; *found tells whether it is equal. */
static size_t job_pos(const mem_store *st, const char *id, bool *found)
{
    size_t lo = 0, hi = st->n_jobs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(st->jobs[mid]->job.spec.job_id, id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < st->n_jobs && strcmp(st->jobs[lo]->job.spec.job_id, id) == 0;
    return lo;
}

static mem_job *job_find(const mem_store *st, const char *id)
{
    bool found;
    size_t i = job_pos(st, id, &found);
    return found ? st->jobs[i] : NULL;
}

/* Index of the first trial with number >= n; *found tells whether it is equal. */
static size_t trial_pos(const mem_job *j, int64_t n, bool *found)
{
    size_t lo = 0, hi = j->n_trials;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (j->trials[mid].trial_number < n)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < j->n_trials && j->trials[lo].trial_number == n;
    return lo;
}

/* Index of the first point at or after (n, epoch); *found tells whether it is equal. */
static size_t point_pos(const mem_job *j, int64_t n, int64_t epoch, bool *found)
{
    size_t lo = 0, hi = j->n_points;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const mem_point *m = &j->points[mid];
        if (m->trial_number < n || (m->trial_number == n && m->p.epoch < epoch))
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < j->n_points && j->points[lo].trial_number == n &&
             j->points[lo].p.epoch == epoch;
    return lo;
}

static size_t profile_pos(const mem_job *j, int64_t bs, bool *found)
{
    size_t i = 0;
    while (i < j->n_profiles && j->profiles[i]->batch_size < bs)
        i++;
    *found = i < j->n_profiles && j->profiles[i]->batch_size == bs;
    return i;
}

static size_t arm_pos(const mem_job *j, int64_t bs, bool *found)
{
    size_t i = 0;
    while (i < j->n_arms && j->arms[i].batch_size < bs)
        i++;
    *found = i < j->n_arms && j->arms[i].batch_size == bs;
    return i;
}

/* Places j into the sorted job array; the caller has reserved room. */
static void jobs_put(mem_store *st, mem_job *j)
{
    bool found;
    size_t i = job_pos(st, j->job.spec.job_id, &found);
    memmove(&st->jobs[i + 1], &st->jobs[i], (st->n_jobs - i) * sizeof *st->jobs);
    st->jobs[i] = j;
    st->n_jobs++;
}

static void jobs_remove(mem_store *st, const mem_job *j)
{
    bool found;
    size_t i = job_pos(st, j->job.spec.job_id, &found);
    memmove(&st->jobs[i], &st->jobs[i + 1], (st->n_jobs - i - 1) * sizeof *st->jobs);
    st->n_jobs--;
}

static void job_free(mem_job *j)
{
    if (j != NULL) {
        free(j->trials);
        free(j->keys);
        free(j->points);
        for (size_t i = 0; i < j->n_profiles; i++)
            free(j->profiles[i]);
        free(j->profiles);
        free(j);
    }
}

/* Reserves one undo entry. Returns 0 with *out (may be NULL) pointing at it, or
 * ZBSO_ESTORE / ZBSO_ENOMEM with err set (log full / no memory). */
static int undo_push(mem_store *st, enum undo_kind kind, mem_job *j, mem_undo **out,
                     zbso_err *err)
{
    int rc = grow((void **)&st->undo, &st->cap_undo, st->n_undo + 1, sizeof *st->undo,
                  MEM_MAX_UNDO, "changes in one unit of work", err);
    if (rc < 0)
        return rc;
    mem_undo *u = &st->undo[st->n_undo++];
    u->kind = kind;
    u->j = j;
    if (out != NULL)
        *out = u;
    return 0;
}

static void state_get(const zbso_job *job, mem_job_state *s)
{
    *s = (mem_job_state){job->stage, job->exp_default_batch_size, job->has_min_cost,
                         job->min_cost, job->min_cost_batch_size, job->rng,
                         job->num_trials, job->revision, job->updated_at};
}

static void state_put(zbso_job *job, const mem_job_state *s)
{
    job->stage = s->stage;
    job->exp_default_batch_size = s->exp_default_batch_size;
    job->has_min_cost = s->has_min_cost;
    job->min_cost = s->min_cost;
    job->min_cost_batch_size = s->min_cost_batch_size;
    job->rng = s->rng;
    job->num_trials = s->num_trials;
    job->revision = s->revision;
    job->updated_at = s->updated_at;
}

/* Undoes the running unit's changes, newest first, leaving the store as it was. */
static void undo_all(mem_store *st)
{
    bool found;
    size_t i;
    while (st->n_undo > 0) {
        mem_undo *u = &st->undo[--st->n_undo];
        mem_job *j = u->j;
        switch (u->kind) {
        case UNDO_JOB_INSERT:
            jobs_remove(st, j);
            job_free(j);
            break;
        case UNDO_JOB_UPDATE:
            state_put(&j->job, &u->u.state);
            break;
        case UNDO_JOB_DELETE:
            /* Room exists: the delete made it and nothing since can have kept it. */
            jobs_put(st, j);
            break;
        case UNDO_TRIAL_INSERT:
            i = trial_pos(j, u->u.trial.trial_number, &found);
            memmove(&j->trials[i], &j->trials[i + 1], (j->n_trials - i - 1) * sizeof *j->trials);
            j->n_trials--;
            break;
        case UNDO_TRIAL_UPDATE:
            i = trial_pos(j, u->u.trial.trial_number, &found);
            j->trials[i] = u->u.trial;
            break;
        case UNDO_ARM_INSERT:
            i = arm_pos(j, u->u.arm.batch_size, &found);
            memmove(&j->arms[i], &j->arms[i + 1], (j->n_arms - i - 1) * sizeof *j->arms);
            j->n_arms--;
            break;
        case UNDO_ARM_UPDATE:
            i = arm_pos(j, u->u.arm.batch_size, &found);
            j->arms[i] = u->u.arm;
            break;
        case UNDO_KEY_ADD:
            j->n_keys--;
            break;
        case UNDO_KEY_MOVE:
            j->keys[u->u.key.i].trial_number = u->u.key.trial_number;
            break;
        case UNDO_POINT_INSERT:
            i = point_pos(j, u->u.point.trial_number, u->u.point.p.epoch, &found);
            memmove(&j->points[i], &j->points[i + 1],
                    (j->n_points - i - 1) * sizeof *j->points);
            j->n_points--;
            break;
        case UNDO_POINT_UPDATE:
            i = point_pos(j, u->u.point.trial_number, u->u.point.p.epoch, &found);
            j->points[i] = u->u.point;
            break;
        case UNDO_PROFILE_PUT:
            i = profile_pos(j, u->u.profile.new_->batch_size, &found);
            if (u->u.profile.old != NULL) {
                j->profiles[i] = u->u.profile.old;
            } else {
                memmove(&j->profiles[i], &j->profiles[i + 1],
                        (j->n_profiles - i - 1) * sizeof *j->profiles);
                j->n_profiles--;
            }
            free(u->u.profile.new_);
            break;
        }
    }
}

/* Makes the running unit's changes final: frees the jobs it deleted. */
static void undo_forget(mem_store *st)
{
    for (size_t i = 0; i < st->n_undo; i++) {
        if (st->undo[i].kind == UNDO_JOB_DELETE)
            job_free(st->undo[i].j);
        else if (st->undo[i].kind == UNDO_PROFILE_PUT)
            free(st->undo[i].u.profile.old);
    }
    st->n_undo = 0;
}

static mem_store *txn_store(store_txn *t)
{
    return ((mem_txn *)t)->st;
}

static int not_found_job(zbso_err *err, const char *id)
{
    return err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id);
}

/* Copies the job out. ZBSO_ENOTFOUND when absent; for_update needs nothing here because
 * the store mutex already serializes units of work. */
static int m_job_get(store_txn *t, const char *id, bool for_update, zbso_job *out,
                     zbso_err *err)
{
    mem_job *j = job_find(txn_store(t), id);
    if (j == NULL)
        return not_found_job(err, id);
    *out = j->job;
    return 0;
}

/* Adds a job. ZBSO_ECONFLICT when the id exists; ZBSO_ESTORE/ENOMEM when full. */
static int m_job_insert(store_txn *t, const zbso_job *job, zbso_err *err)
{
    mem_store *st = txn_store(t);
    mem_job *j = NULL;
    int rc;
    if (job_find(st, job->spec.job_id) != NULL) {
        rc = err_set(err, ZBSO_ECONFLICT, "job \"%.300s\" already exists", job->spec.job_id);
        goto out;
    }
    rc = grow((void **)&st->jobs, &st->cap_jobs, st->n_jobs + 1, sizeof *st->jobs,
              MEM_MAX_JOBS, "jobs", err);
    if (rc < 0)
        goto out;
    j = calloc(1, sizeof *j);
    if (j == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "memory store: out of memory for job \"%.300s\"",
                     job->spec.job_id);
        goto out;
    }
    rc = undo_push(st, UNDO_JOB_INSERT, j, NULL, err);
    if (rc < 0)
        goto out;
    j->job = *job;
    jobs_put(st, j);
    j = NULL;
out:
    free(j);
    return rc;
}

/* Writes the job's mutable state. ZBSO_ENOTFOUND when absent. */
static int m_job_update(store_txn *t, const zbso_job *job, zbso_err *err)
{
    mem_store *st = txn_store(t);
    mem_job *j = job_find(st, job->spec.job_id);
    if (j == NULL)
        return not_found_job(err, job->spec.job_id);
    mem_undo *u;
    int rc = undo_push(st, UNDO_JOB_UPDATE, j, &u, err);
    if (rc < 0)
        return rc;
    state_get(&j->job, &u->u.state);
    mem_job_state s;
    state_get(job, &s);
    state_put(&j->job, &s);
    return 0;
}

/* Removes the job; its memory lives on in the undo log until the unit ends. */
static int m_job_delete(store_txn *t, const char *id, zbso_err *err)
{
    mem_store *st = txn_store(t);
    mem_job *j = job_find(st, id);
    if (j == NULL)
        return not_found_job(err, id);
    int rc = undo_push(st, UNDO_JOB_DELETE, j, NULL, err);
    if (rc < 0)
        return rc;
    jobs_remove(st, j);
    return 0;
}

/* Calls fn with every id ascending; a non-zero return from fn stops and is returned. */
static int m_job_ids(store_txn *t, int (*fn)(void *ctx, const char *job_id), void *ctx,
                     zbso_err *err)
{
    mem_store *st = txn_store(t);
    char id[ZBSO_ID_MAX + 1];
    for (size_t i = 0; i < st->n_jobs; i++) {
        /* A copy, so that fn may change the job set without pulling id from under it. */
        memcpy(id, st->jobs[i]->job.spec.job_id, sizeof id);
        int rc = fn(ctx, id);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The index of key in j's keys, or j->n_keys. */
static size_t key_pos(const mem_job *j, const char *key)
{
    size_t i = 0;
    while (i < j->n_keys && strcmp(j->keys[i].key, key) != 0)
        i++;
    return i;
}

/* Gives key to trial n of j, taking it from the trial that held it. The caller has
 * reserved room for a new key. Returns 0 or undo_push's code. */
static int key_give(mem_store *st, mem_job *j, const char *key, int64_t n, zbso_err *err)
{
    size_t i = key_pos(j, key);
    mem_undo *u;
    int rc = undo_push(st, i < j->n_keys ? UNDO_KEY_MOVE : UNDO_KEY_ADD, j, &u, err);
    if (rc < 0)
        return rc;
    if (i < j->n_keys) {
        u->u.key.i = i;
        u->u.key.trial_number = j->keys[i].trial_number;
    } else {
        snprintf(j->keys[i].key, sizeof j->keys[i].key, "%s", key);
        j->n_keys++;
    }
    j->keys[i].trial_number = n;
    return 0;
}

/* Adds a trial in trial-number order, holding key when not NULL. ZBSO_ENOTFOUND (no
 * job), ZBSO_ECONFLICT (number taken), ZBSO_ESTORE/ENOMEM (full). */
static int m_trial_insert(store_txn *t, const char *id, const zbso_trial *trial,
                          const char *key, zbso_err *err)
{
    mem_store *st = txn_store(t);
    mem_job *j = job_find(st, id);
    bool found;
    if (j == NULL)
        return not_found_job(err, id);
    size_t i = trial_pos(j, trial->trial_number, &found);
    if (found)
        return err_set(err, ZBSO_ECONFLICT, "trial %lld of job \"%.300s\" already exists",
                       (long long)trial->trial_number, id);
    int rc = grow((void **)&j->trials, &j->cap_trials, j->n_trials + 1, sizeof *j->trials,
                  MEM_MAX_TRIALS_PER_JOB, "trials in one job", err);
    if (rc == 0 && key != NULL)
        rc = grow((void **)&j->keys, &j->cap_keys, j->n_keys + 1, sizeof *j->keys,
                  MEM_MAX_TRIALS_PER_JOB, "request keys in one job", err);
    if (rc < 0)
        return rc;
    mem_undo *u;
    rc = undo_push(st, UNDO_TRIAL_INSERT, j, &u, err);
    if (rc < 0)
        return rc;
    u->u.trial = *trial;
    memmove(&j->trials[i + 1], &j->trials[i], (j->n_trials - i) * sizeof *j->trials);
    j->trials[i] = *trial;
    j->n_trials++;
    return key != NULL ? key_give(st, j, key, trial->trial_number, err) : 0;
}

/* Finds the trial; returns its index or a negative code with err set. */
static int trial_lookup(mem_store *st, const char *id, int64_t n, mem_job **jo, size_t *idx,
                        zbso_err *err)
{
    bool found;
    mem_job *j = job_find(st, id);
    if (j == NULL)
        return not_found_job(err, id);
    size_t i = trial_pos(j, n, &found);
    if (!found)
        return err_set(err, ZBSO_ENOTFOUND, "trial %lld of job \"%.300s\" not found",
                       (long long)n, id);
    *jo = j;
    *idx = i;
    return 0;
}

static int m_trial_get(store_txn *t, const char *id, int64_t n, zbso_trial *out,
                       zbso_err *err)
{
    mem_job *j = NULL;   /* set when rc is 0; gcc -O3 cannot tell (maybe-uninitialized) */
    size_t i = 0;
    int rc = trial_lookup(txn_store(t), id, n, &j, &i, err);
    if (rc == 0)
        *out = j->trials[i];
    return rc;
}

static int m_trial_by_key(store_txn *t, const char *id, const char *key, zbso_trial *out,
                          zbso_err *err)
{
    mem_job *j = job_find(txn_store(t), id);
    size_t i = j != NULL ? key_pos(j, key) : 0;
    if (j == NULL || i == j->n_keys)
        return err_set(err, ZBSO_ENOTFOUND, "the trial of a request key of job \"%.300s\""
                       " not found", id);
    return m_trial_get(t, id, j->keys[i].trial_number, out, err);
}

/* Replaces trial i of j, logging the old value. */
static int trial_replace(mem_store *st, mem_job *j, size_t i, const zbso_trial *trial,
                         zbso_err *err)
{
    mem_undo *u;
    int rc = undo_push(st, UNDO_TRIAL_UPDATE, j, &u, err);
    if (rc < 0)
        return rc;
    u->u.trial = j->trials[i];
    j->trials[i] = *trial;
    return 0;
}

static int m_trial_update(store_txn *t, const char *id, const zbso_trial *trial,
                          zbso_err *err)
{
    mem_store *st = txn_store(t);
    mem_job *j = NULL;   /* as in m_trial_get */
    size_t i = 0;
    int rc = trial_lookup(st, id, trial->trial_number, &j, &i, err);
    if (rc == 0)
        rc = trial_replace(st, j, i, trial, err);
    return rc;
}

static bool trial_matches(const zbso_trial *tr, const store_trial_query *q)
{
    unsigned tm = q->type_mask ? q->type_mask : ~0u;
    unsigned sm = q->status_mask ? q->status_mask : ~0u;
    return (tm >> tr->type & 1u) && (sm >> tr->status & 1u) &&
           (q->batch_size == 0 || tr->batch_size == q->batch_size) &&
           (q->after <= 0 || tr->trial_number > q->after);
}

/* Calls fn on copies of the matching trials, ascending; with last_n > 0 only the last
 * last_n of them, and of those at most limit (> 0) first ones. An unknown job has no
 * trials (returns 0). */
static int m_trials_list(store_txn *t, const char *id, const store_trial_query *q,
                         store_trial_fn fn, void *ctx, zbso_err *err)
{
    mem_job *j = job_find(txn_store(t), id);
    if (j == NULL)
        return 0;
    size_t start = 0;
    if (q->last_n > 0) {
        int64_t seen = 0;
        start = j->n_trials;
        while (start > 0 && seen < q->last_n)
            if (trial_matches(&j->trials[--start], q))
                seen++;
    }
    /* Index and copy each row: fn may change this job's trials through the txn. */
    int64_t sent = 0;
    for (size_t i = start; i < j->n_trials && (q->limit <= 0 || sent < q->limit); i++) {
        zbso_trial tr = j->trials[i];
        if (!trial_matches(&tr, q))
            continue;
        sent++;
        int rc = fn(ctx, &tr);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int m_trials_fail_stale(store_txn *t, const char *id, double cutoff, double now,
                               int64_t *n_failed, zbso_err *err)
{
    mem_store *st = txn_store(t);
    mem_job *j = job_find(st, id);
    int64_t n = 0;
    int rc = 0;
    for (size_t i = 0; j != NULL && i < j->n_trials; i++) {
        zbso_trial tr = j->trials[i];
        if (tr.status != ZBSO_TRIAL_DISPATCHED || !(tr.lease_renewed_at < cutoff))
            continue;
        tr.status = ZBSO_TRIAL_FAILED;
        tr.end_time = now;
        tr.stop_reason = ZBSO_STOP_LEASE_EXPIRED;
        rc = trial_replace(st, j, i, &tr, err);
        if (rc < 0)
            goto out;
        n++;
    }
out:
    if (n_failed != NULL)
        *n_failed = n;
    return rc;
}

/* Copies the arms out ascending. ZBSO_EINVAL when there are more than cap. */
static int m_arms_get(store_txn *t, const char *id, zbso_arm *out, size_t cap,
                      size_t *n_out, zbso_err *err)
{
    mem_job *j = job_find(txn_store(t), id);
    size_t n = j != NULL ? j->n_arms : 0;
    *n_out = 0;
    if (n > cap)
        return err_set(err, ZBSO_EINVAL, "job \"%.300s\" has %zu arms, more than the %zu asked for",
                       id, n, cap);
    if (n > 0)
        memcpy(out, j->arms, n * sizeof *out);
    *n_out = n;
    return 0;
}

/* Inserts or replaces the arm. ZBSO_ENOTFOUND (no job); ZBSO_ESTORE when the job would
 * have more arms than ZBSO_MAX_BATCH_SIZES. */
static int m_arm_put(store_txn *t, const char *id, const zbso_arm *arm, zbso_err *err)
{
    mem_store *st = txn_store(t);
    mem_job *j = job_find(st, id);
    bool found;
    if (j == NULL)
        return not_found_job(err, id);
    size_t i = arm_pos(j, arm->batch_size, &found);
    if (!found && j->n_arms == ZBSO_MAX_BATCH_SIZES)
        return err_set(err, ZBSO_ESTORE,
                       "job \"%.300s\" already has %d arms; no room for batch size %lld",
                       id, ZBSO_MAX_BATCH_SIZES, (long long)arm->batch_size);
    mem_undo *u;
    int rc = undo_push(st, found ? UNDO_ARM_UPDATE : UNDO_ARM_INSERT, j, &u, err);
    if (rc < 0)
        return rc;
    if (found) {
        u->u.arm = j->arms[i];
    } else {
        u->u.arm = *arm;
        memmove(&j->arms[i + 1], &j->arms[i], (j->n_arms - i) * sizeof *j->arms);
        j->n_arms++;
    }
    j->arms[i] = *arm;
    return 0;
}

/* Calls fn on a copy of each job matching q, ascending by id (strcmp compares bytes as
 * unsigned char, so the order is memcmp's). */
static int m_jobs_list(store_txn *t, const store_job_query *q, store_job_fn fn, void *ctx,
                       zbso_err *err)
{
    mem_store *st = txn_store(t);
    const char *prefix = q->prefix != NULL ? q->prefix : "";
    size_t plen = strlen(prefix);
    bool found;
    size_t i = job_pos(st, prefix, &found);
    if (q->after != NULL && q->after[0] != '\0' && strcmp(q->after, prefix) >= 0) {
        i = job_pos(st, q->after, &found);
        if (found)
            i++;
    }
    int64_t sent = 0;
    while (i < st->n_jobs && (q->limit <= 0 || sent < q->limit)) {
        zbso_job job = st->jobs[i]->job;
        if (strncmp(job.spec.job_id, prefix, plen) != 0)
            break;
        sent++;
        int rc = fn(ctx, &job);
        if (rc != 0)
            return rc;
        /* fn may change the job set through the txn: go on after this id, wherever it is. */
        i = job_pos(st, job.spec.job_id, &found);
        if (found)
            i++;
    }
    return 0;
}

/* Stores one point of trial n of j (which exists): inserts it, or replaces the point of
 * its epoch unless that one was received later. Returns 0 or undo_push/grow's code. */
static int point_put(mem_store *st, mem_job *j, int64_t n, const zbso_curve_point *p,
                     zbso_err *err)
{
    bool found;
    size_t i = point_pos(j, n, p->epoch, &found);
    mem_undo *u;
    int rc;
    if (found) {
        if (j->points[i].p.received_at > p->received_at)
            return 0;
        if ((rc = undo_push(st, UNDO_POINT_UPDATE, j, &u, err)) < 0)
            return rc;
        u->u.point = j->points[i];
        j->points[i].p = *p;
        return 0;
    }
    rc = grow((void **)&j->points, &j->cap_points, j->n_points + 1, sizeof *j->points,
              MEM_MAX_POINTS_PER_JOB, "curve points in one job", err);
    if (rc == 0)
        rc = undo_push(st, UNDO_POINT_INSERT, j, &u, err);
    if (rc < 0)
        return rc;
    u->u.point = (mem_point){n, *p};
    memmove(&j->points[i + 1], &j->points[i], (j->n_points - i) * sizeof *j->points);
    j->points[i] = u->u.point;
    j->n_points++;
    return 0;
}

/* Stores the points of trial n; points of an unknown job or trial are dropped (0). */
static int m_reports_put(store_txn *t, const char *id, int64_t n, const zbso_curve_point *points,
                         size_t np, zbso_err *err)
{
    mem_store *st = txn_store(t);
    mem_job *j = job_find(st, id);
    bool found = false;
    if (j != NULL)
        trial_pos(j, n, &found);
    int rc = 0;
    for (size_t k = 0; found && rc == 0 && k < np; k++)
        rc = point_put(st, j, n, &points[k], err);
    return rc;
}

/* Calls fn on a copy of each point of trial n, ascending by epoch. */
static int m_reports_list(store_txn *t, const char *id, int64_t n, store_point_fn fn,
                          void *ctx, zbso_err *err)
{
    mem_job *j = job_find(txn_store(t), id);
    bool found;
    if (j == NULL)
        return 0;
    for (size_t i = point_pos(j, n, INT64_MIN, &found);
         i < j->n_points && j->points[i].trial_number == n; i++) {
        zbso_curve_point p = j->points[i].p;
        int rc = fn(ctx, &p);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int m_counts(store_txn *t, store_counts *out, zbso_err *err)
{
    mem_store *st = txn_store(t);
    memset(out, 0, sizeof *out);
    out->jobs = (int64_t)st->n_jobs;
    for (size_t i = 0; i < st->n_jobs; i++)
        for (size_t k = 0; k < st->jobs[i]->n_trials; k++) {
            const zbso_trial *tr = &st->jobs[i]->trials[k];
            out->trials[tr->type][tr->status]++;
            int64_t renewed = (int64_t)floor(tr->lease_renewed_at);
            if (tr->status == ZBSO_TRIAL_DISPATCHED &&
                (!out->has_oldest_lease || renewed < out->oldest_lease_renewed_at)) {
                out->has_oldest_lease = true;
                out->oldest_lease_renewed_at = renewed;
            }
        }
    return 0;
}

static int m_profile_put(store_txn *t, const char *id, const zbso_power_profile *p,
                         zbso_err *err)
{
    mem_store *st = txn_store(t);
    mem_job *j = job_find(st, id);
    mem_undo *u;
    bool found;
    if (j == NULL)
        return not_found_job(err, id);
    size_t i = profile_pos(j, p->batch_size, &found);
    int rc = found ? 0 : grow((void **)&j->profiles, &j->cap_profiles, j->n_profiles + 1,
                              sizeof *j->profiles, ZBSO_MAX_BATCH_SIZES * 4,
                              "power profiles of one job", err);
    zbso_power_profile *copy = rc == 0 ? malloc(sizeof *copy) : NULL;
    if (rc == 0 && copy == NULL)
        rc = err_set(err, ZBSO_ENOMEM, "memory store: out of memory storing a power profile");
    if (rc == 0)
        rc = undo_push(st, UNDO_PROFILE_PUT, j, &u, err);
    if (rc < 0) {
        free(copy);
        return rc;
    }
    *copy = *p;
    u->u.profile.new_ = copy;
    u->u.profile.old = found ? j->profiles[i] : NULL;
    if (!found) {
        memmove(&j->profiles[i + 1], &j->profiles[i],
                (j->n_profiles - i) * sizeof *j->profiles);
        j->n_profiles++;
    }
    j->profiles[i] = copy;
    return 0;
}

static int m_profile_get(store_txn *t, const char *id, int64_t bs, zbso_power_profile *out,
                         zbso_err *err)
{
    mem_job *j = job_find(txn_store(t), id);
    bool found = false;
    size_t i = j != NULL ? profile_pos(j, bs, &found) : 0;
    if (!found)
        return err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" has no power profile of batch "
                       "size %lld", id, (long long)bs);
    *out = *j->profiles[i];
    return 0;
}

static int m_profiles_list(store_txn *t, const char *id, store_profile_fn fn, void *ctx,
                           zbso_err *err)
{
    mem_job *j = job_find(txn_store(t), id);
    for (size_t i = 0; j != NULL && i < j->n_profiles; i++) {
        int rc = fn(ctx, j->profiles[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static const store_txn_ops mem_ops = {
    .job_get = m_job_get,
    .job_insert = m_job_insert,
    .job_update = m_job_update,
    .job_delete = m_job_delete,
    .job_ids = m_job_ids,
    .trial_insert = m_trial_insert,
    .trial_get = m_trial_get,
    .trial_by_key = m_trial_by_key,
    .trial_update = m_trial_update,
    .trials_list = m_trials_list,
    .trials_fail_stale = m_trials_fail_stale,
    .arms_get = m_arms_get,
    .arm_put = m_arm_put,
    .jobs_list = m_jobs_list,
    .reports_put = m_reports_put,
    .reports_list = m_reports_list,
    .counts = m_counts,
    .profile_put = m_profile_put,
    .profile_get = m_profile_get,
    .profiles_list = m_profiles_list,
};

/* Opens an empty store; anything after "memory://" is ignored. Returns 0 or ZBSO_ENOMEM. */
static int m_open(const char *url, const store_options *opt, store **out, zbso_err *err)
{
    int rc = 0;
    mem_store *st = calloc(1, sizeof *st);
    *out = NULL;
    if (st == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory opening %.128s", url);
        goto out;
    }
    st->base.backend = &store_memory_backend;
    st->base.shown = "memory://";
    pthread_mutex_init(&st->mu, NULL);
    *out = &st->base;
out:
    return rc;
}

static void m_close(store *base)
{
    mem_store *st = (mem_store *)base;
    if (st == NULL)
        return;
    for (size_t i = 0; i < st->n_jobs; i++)
        job_free(st->jobs[i]);
    free(st->jobs);
    free(st->undo);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

/* The store whose unit of work this thread is running, to refuse a nested store_exec. */
static _Thread_local const mem_store *unit_store;

/* Runs fn under the mutex; a negative return undoes everything fn changed. Returns fn's
 * code, or ZBSO_EINTERNAL when called from inside a unit of work (it would deadlock). */
static int m_exec(store *base, store_work_fn fn, void *arg, zbso_err *err)
{
    mem_store *st = (mem_store *)base;
    mem_txn txn = {.base = {.ops = &mem_ops}, .st = st};
    if (unit_store == st)
        return err_set(err, ZBSO_EINTERNAL, "store_exec called inside a unit of work on memory://");
    pthread_mutex_lock(&st->mu);
    unit_store = st;
    int rc = fn(&txn.base, arg, err);
    if (rc < 0)
        undo_all(st);
    else
        undo_forget(st);
    unit_store = NULL;
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* Runs fn under the same mutex as m_exec, with the write operations refused, so there is
 * nothing to undo. Returns fn's code, or ZBSO_EINTERNAL inside a unit of work. */
static int m_exec_read(store *base, store_work_fn fn, void *arg, zbso_err *err)
{
    mem_store *st = (mem_store *)base;
    mem_txn txn = {.base = {.ops = &mem_ops, .read_only = true}, .st = st};
    if (unit_store == st)
        return err_set(err, ZBSO_EINTERNAL,
                       "store_exec_read called inside a unit of work on memory://");
    pthread_mutex_lock(&st->mu);
    unit_store = st;
    int rc = fn(&txn.base, arg, err);
    unit_store = NULL;
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* Process memory has one schema, version 1, always current: the plan sees it as found
 * and can only keep it. */
static int m_schema_run(store *st, store_schema_plan_fn plan, void *ctx, zbso_err *err)
{
    int to = 1;
    int rc = plan(ctx, 1, false, &to, err);
    if (rc == 0 && to != 1)
        rc = err_set(err, ZBSO_EINTERNAL, "memory:// has schema version 1 only, not %d", to);
    return rc;
}

/* Process memory takes writes while the process runs. */
static int m_health(store *st, zbso_err *err)
{
    return 0;
}

const store_backend store_memory_backend = {
    .name = "memory",
    .open = m_open,
    .close = m_close,
    .exec = m_exec,
    .latest_schema_version = 1,
    .schema_run = m_schema_run,
    .exec_read = m_exec_read,
    .health = m_health,
};

/* ---- a unit of work over several calls (storeInt.h) ---- */

int store_memory_begin(store *base, bool read_only, store_txn **out, zbso_err *err)
{
    mem_store *st = (mem_store *)base;
    mem_txn *txn = calloc(1, sizeof *txn);
    if (txn == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory beginning a unit on memory://");
    txn->base.ops = &mem_ops;
    txn->base.read_only = read_only;
    txn->st = st;
    pthread_mutex_lock(&st->mu);
    *out = &txn->base;
    return 0;
}

void store_memory_end(store_txn *t, bool commit)
{
    mem_txn *txn = (mem_txn *)t;
    mem_store *st = txn->st;
    if (commit)
        undo_forget(st);
    else
        undo_all(st);
    pthread_mutex_unlock(&st->mu);
    free(txn);
}
