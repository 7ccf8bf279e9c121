/* copy.c: writing a whole job through store.h in one unit of work (zjob_put), and copying
 * every job of one zbso database into another in one read snapshot (xfer_copy). A job
 * already in the target must hold the same data: a re-run writes nothing twice. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/spec.h"
#include "xfer/xfer.h"

/* Doubles equal bit for bit, NaN included (a metric Zeus never stored). */
static bool same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

static bool same_trial(const zbso_trial *a, const zbso_trial *b)
{
    return a->trial_number == b->trial_number && a->batch_size == b->batch_size &&
           a->type == b->type && a->status == b->status &&
           same_double(a->start_time, b->start_time) && same_double(a->end_time, b->end_time) &&
           same_double(a->lease_renewed_at, b->lease_renewed_at) &&
           same_double(a->time, b->time) && same_double(a->energy, b->energy) &&
           same_double(a->metric, b->metric) && a->epochs == b->epochs &&
           a->converged == b->converged;
}

static bool same_rng(const zbso_rng *a, const zbso_rng *b)
{
    return a->state_hi == b->state_hi && a->state_lo == b->state_lo && a->inc_hi == b->inc_hi &&
           a->inc_lo == b->inc_lo && (a->has_uint32 != 0) == (b->has_uint32 != 0) &&
           a->uinteger == b->uinteger;
}

static bool same_profile(const zbso_power_profile *a, const zbso_power_profile *b)
{
    if (a->batch_size != b->batch_size || a->trial_number != b->trial_number ||
        a->observer != b->observer || a->profile_steps != b->profile_steps ||
        !same_double(a->created_at, b->created_at) || a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (a->m[i].power_limit_w != b->m[i].power_limit_w ||
            !same_double(a->m[i].time_s, b->m[i].time_s) ||
            !same_double(a->m[i].energy_j, b->m[i].energy_j))
            return false;
    return true;
}

/* Whether the stored a and the new b hold the same data. exact: every field (a copy);
 * otherwise the times zbso gives an imported job (created_at, updated_at, revision) and,
 * for a job without mab_seed, the generator (seeded anew at each import) are left out. */
static bool same_job(const zjob *a, const zjob *b, bool exact)
{
    const zbso_job *x = &a->job, *y = &b->job;
    if (!spec_equal(&x->spec, &y->spec) || x->stage != y->stage ||
        x->exp_default_batch_size != y->exp_default_batch_size ||
        x->has_min_cost != y->has_min_cost ||
        (x->has_min_cost && !same_double(x->min_cost, y->min_cost)) ||
        x->min_cost_batch_size != y->min_cost_batch_size || x->num_trials != y->num_trials)
        return false;
    if ((exact || x->spec.has_mab_seed) && !same_rng(&x->rng, &y->rng))
        return false;
    if (exact && (!same_double(x->created_at, y->created_at) ||
                  !same_double(x->updated_at, y->updated_at) || x->revision != y->revision))
        return false;
    if (a->n_trials != b->n_trials || a->n_arms != b->n_arms)
        return false;
    for (size_t i = 0; i < a->n_trials; i++)
        if (!same_trial(&a->trials[i], &b->trials[i]))
            return false;
    for (size_t i = 0; i < a->n_arms; i++) {
        const zbso_arm *p = &a->arms[i], *q = &b->arms[i];
        if (p->batch_size != q->batch_size || !same_double(p->param_mean, q->param_mean) ||
            !same_double(p->param_precision, q->param_precision) ||
            p->num_observations != q->num_observations)
            return false;
    }
    if (!exact)
        return true;
    if (a->n_profiles != b->n_profiles)
        return false;
    for (size_t i = 0; i < a->n_profiles; i++)
        if (!same_profile(a->profiles[i], b->profiles[i]))
            return false;
    for (size_t i = 0; i < a->n_trials; i++) {
        size_t na = a->n_points ? a->n_points[i] : 0, nb = b->n_points ? b->n_points[i] : 0;
        if (na != nb)
            return false;
        for (size_t k = 0; k < na; k++) {
            const zbso_curve_point *p = &a->points[i][k], *q = &b->points[i][k];
            if (p->epoch != q->epoch || !same_double(p->time, q->time) ||
                !same_double(p->energy, q->energy) || !same_double(p->metric, q->metric) ||
                !same_double(p->received_at, q->received_at))
                return false;
        }
    }
    return true;
}

/* ---- reading a zbso job (both sides of a copy, and the target of an import) ---- */

static int add_trial_cb(void *ctx, const zbso_trial *t)
{
    return zjob_add_trial(ctx, t, NULL) < 0 ? ZBSO_ENOMEM : 0;
}

typedef struct points_ctx {
    zbso_curve_point *p;
    size_t n, cap;
} points_ctx;

static int add_point_cb(void *ctx, const zbso_curve_point *pt)
{
    points_ctx *c = ctx;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        zbso_curve_point *n = realloc(c->p, cap * sizeof *n);
        if (n == NULL)
            return ZBSO_ENOMEM;
        c->p = n;
        c->cap = cap;
    }
    c->p[c->n++] = *pt;
    return 0;
}

static int add_profile_cb(void *ctx, const zbso_power_profile *p)
{
    zjob *j = ctx;
    zbso_power_profile **n = realloc(j->profiles, (j->n_profiles + 1) * sizeof *n);
    if (n == NULL)
        return ZBSO_ENOMEM;
    j->profiles = n;
    if ((n[j->n_profiles] = malloc(sizeof **n)) == NULL)
        return ZBSO_ENOMEM;
    *n[j->n_profiles++] = *p;
    return 0;
}

/* Reads job id from t into *out; with all, its curve points and profiles too. Returns 0,
 * ZBSO_ENOTFOUND, or another error (out freed then). */
static int zjob_load(store_txn *t, const char *id, bool for_update, bool all, zjob *out,
                     zbso_err *err)
{
    store_trial_query q = {0};
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = store_job_get(t, id, for_update, &out->job, err)) < 0)
        return rc;
    rc = store_trials_list(t, id, &q, add_trial_cb, out, err);
    if (rc == ZBSO_ENOMEM)
        rc = err_set(err, ZBSO_ENOMEM, "out of memory reading the trials of job %s", id);
    if (rc < 0)
        goto out;
    if ((rc = store_arms_get(t, id, out->arms, ZBSO_MAX_BATCH_SIZES, &out->n_arms, err)) < 0)
        goto out;
    if (!all)
        goto out;
    out->points = calloc(out->n_trials + 1, sizeof *out->points);
    out->n_points = calloc(out->n_trials + 1, sizeof *out->n_points);
    if (out->points == NULL || out->n_points == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory reading job %s", id);
        goto out;
    }
    for (size_t i = 0; i < out->n_trials; i++) {
        points_ctx pc = {0};
        rc = store_reports_list(t, id, out->trials[i].trial_number, add_point_cb, &pc, err);
        out->points[i] = pc.p;
        out->n_points[i] = pc.n;
        if (rc == ZBSO_ENOMEM)
            rc = err_set(err, ZBSO_ENOMEM, "out of memory reading job %s", id);
        if (rc < 0)
            goto out;
    }
    rc = store_profiles_list(t, id, add_profile_cb, out, err);
    if (rc == ZBSO_ENOMEM)
        rc = err_set(err, ZBSO_ENOMEM, "out of memory reading job %s", id);
out:
    if (rc < 0)
        zjob_free(out);
    return rc;
}

/* Writes every part of j (the job is not there). */
static int write_all(store_txn *t, const zjob *j, zbso_err *err)
{
    const char *id = j->job.spec.job_id;
    int rc;
    if ((rc = store_job_insert(t, &j->job, err)) < 0)
        return rc;
    for (size_t i = 0; i < j->n_trials; i++)
        if ((rc = store_trial_insert(t, id, &j->trials[i], NULL, err)) < 0)
            return rc;
    for (size_t i = 0; i < j->n_arms; i++)
        if ((rc = store_arm_put(t, id, &j->arms[i], err)) < 0)
            return rc;
    if (j->n_points != NULL)
        for (size_t i = 0; i < j->n_trials; i++)
            if (j->n_points[i] > 0 &&
                (rc = store_reports_put(t, id, j->trials[i].trial_number, j->points[i],
                                        j->n_points[i], err)) < 0)
                return rc;
    for (size_t i = 0; i < j->n_profiles; i++)
        if ((rc = store_profile_put(t, id, j->profiles[i], err)) < 0)
            return rc;
    return 0;
}

typedef struct put_work {
    const zjob *j;
    bool replace, exact;
    zput_result res;
} put_work;

static int put_fn(store_txn *t, void *arg, zbso_err *err)
{
    put_work *w = arg;
    const char *id = w->j->job.spec.job_id;
    zjob have;
    int rc = zjob_load(t, id, true, w->exact, &have, err);
    if (rc == ZBSO_ENOTFOUND) {
        err_clear(err);
        w->res = ZPUT_WRITTEN;
        return write_all(t, w->j, err);
    }
    if (rc < 0)
        return rc;
    bool same = same_job(&have, w->j, w->exact);
    zjob_free(&have);
    if (same) {
        w->res = ZPUT_SAME;
        return 0;
    }
    if (!w->replace)
        return err_set(err, ZBSO_ECONFLICT, "job %s is already in the target database with"
                       " other data%s", id, w->exact ? "" : " (--replace overwrites it)");
    if ((rc = store_job_delete(t, id, err)) < 0)
        return rc;
    w->res = ZPUT_REPLACED;
    return write_all(t, w->j, err);
}

int zjob_put(store *st, const zjob *j, bool replace, bool compare_times, zput_result *res,
             zbso_err *err)
{
    put_work w = {j, replace, compare_times, ZPUT_WRITTEN};
    int rc = store_exec(st, put_fn, &w, err);
    if (rc == 0 && res != NULL)
        *res = w.res;
    return rc;
}

/* ---- copy ---- */

typedef struct ids {
    char **v;
    size_t n, cap;
} ids;

static int add_id(void *ctx, const char *id)
{
    ids *l = ctx;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        char **n = realloc(l->v, cap * sizeof *n);
        if (n == NULL)
            return ZBSO_ENOMEM;
        l->v = n;
        l->cap = cap;
    }
    if ((l->v[l->n] = strdup(id)) == NULL)
        return ZBSO_ENOMEM;
    l->n++;
    return 0;
}

typedef struct copy_work {
    store *dst;
    void (*progress)(void *ctx, const xfer_copy_stats *s);
    void *ctx;
    xfer_copy_stats stats;
    int rc;          /* the first job's failure, with its message */
    zbso_err first;
} copy_work;

/* A job written (or found there) by the pool; the first failure stops the copy. */
static int copy_done(void *ctx, size_t seq, const zjob *j, int rc, zput_result res,
                     const zbso_err *err)
{
    copy_work *w = ctx;
    (void)seq;
    if (rc < 0) {
        if (w->rc == 0) {
            w->rc = rc;
            w->first = *err;
        }
        return 1;
    }
    w->stats.jobs++;
    w->stats.trials += (int64_t)j->n_trials;
    if (res == ZPUT_SAME)
        w->stats.same++;
    else
        w->stats.written++;
    if (w->progress != NULL)
        w->progress(w->ctx, &w->stats);
    return 0;
}

#define COPY_THREADS 8

static int copy_fn(store_txn *t, void *arg, zbso_err *err)
{
    copy_work *w = arg;
    ids l = {0};
    xfer_pool *pool = NULL;
    memset(&w->stats, 0, sizeof w->stats);
    w->rc = 0;
    int rc = t->ops->job_ids(t, add_id, &l, err);
    if (rc == ZBSO_ENOMEM)
        rc = err_set(err, ZBSO_ENOMEM, "out of memory listing the jobs");
    if (rc == 0)
        rc = xfer_pool_new(w->dst, COPY_THREADS, false, true, copy_done, w, &pool, err);
    for (size_t i = 0; rc == 0 && i < l.n; i++) {
        zjob j;
        if ((rc = zjob_load(t, l.v[i], false, true, &j, err)) < 0)
            break;
        if (xfer_pool_put(pool, &j, i, err) < 0)
            break; /* stopped: the first failure is in w->first */
    }
    if (pool != NULL)
        xfer_pool_wait(pool);
    xfer_pool_finish(pool);
    if (w->rc < 0) {
        *err = w->first;
        rc = w->rc;
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.v[i]);
    free(l.v);
    return rc;
}

int xfer_copy(store *src, store *dst, void (*progress)(void *ctx, const xfer_copy_stats *s),
              void *ctx, xfer_copy_stats *stats, zbso_err *err)
{
    copy_work w = {dst, progress, ctx, {0}, 0, {0}};
    int rc = store_exec_read(src, copy_fn, &w, err);
    if (stats != NULL)
        *stats = w.stats;
    return rc;
}
