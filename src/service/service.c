/* service.c: the optimizer's requests (SPEC §2-3), each one store_exec unit of work that
 * loads through the store, decides through the pure core and writes back. The only I/O of
 * its own is svc_env_system's clock and getrandom(2). No HTTP or JSON here. */
#include "service/service.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "core/optimizer.h"
#include "core/powerlimit.h"
#include "core/smart.h"
#include "core/spec.h"
#include "util/clock.h"
#include "util/log.h"

#define GEN_ID_TRIES 16          /* generated job ids tried before giving up */
#define MAX_LISTED_TRIALS 1048576 /* trials one decision may load */

/* An arm fit gets at most MAX_LISTED_TRIALS (+ the reported one, which is among them). */
_Static_assert(MAX_LISTED_TRIALS <= OPT_FIT_MAX_REWARDS, "arm fits within the core's bound");

/* ---- the system environment ---- */

static double system_now(void *ctx)
{
    return clk_real_s();
}

static int system_entropy(void *ctx, uint32_t *words, size_t n)
{
    size_t want = n * sizeof *words, got = 0;
    unsigned char *p = (unsigned char *)words;
    while (got < want) {
        ssize_t r = getrandom(p + got, want - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return ZBSO_EIO;
        }
        got += (size_t)r;
    }
    return 0;
}

svc_env svc_env_system(double trial_timeout_s)
{
    svc_env env = {.now = system_now, .entropy = system_entropy,
                   .trial_timeout_s = trial_timeout_s, .default_policy = ZBSO_POLICY_ZEUS};
    return env;
}

/* ---- counting for /metrics (svc_stats) ---- */

static void count(atomic_uint_least64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static void count_double(_Atomic double *c, double v)
{
    double old = atomic_load_explicit(c, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(c, &old, old + v, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

/* ---- trial lists ---- */

/* A growing list of trials loaded by store_trials_list, at most MAX_LISTED_TRIALS. */
typedef struct trial_list {
    zbso_trial *v;
    size_t n, cap;
} trial_list;

static int trial_list_add(void *ctx, const zbso_trial *t)
{
    trial_list *l = ctx;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        if (cap > MAX_LISTED_TRIALS)
            return ZBSO_ETOOBIG;
        zbso_trial *v = realloc(l->v, cap * sizeof *v);
        if (v == NULL)
            return ZBSO_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *t;
    return 0;
}

/* Lists the job's trials matching q into l (which the caller frees with free(l->v)).
 * Returns 0, a store error, ZBSO_ENOMEM, or ZBSO_ETOOBIG past MAX_LISTED_TRIALS. */
static int list_trials(store_txn *t, const char *job_id, const store_trial_query *q,
                       trial_list *l, zbso_err *err)
{
    int rc = store_trials_list(t, job_id, q, trial_list_add, l, err);
    if (rc == ZBSO_ENOMEM)
        return err_set(err, rc, "out of memory listing the trials of job %s", job_id);
    if (rc == ZBSO_ETOOBIG)
        return err_set(err, ZBSO_EINTERNAL, "job %s has more than %d matching trials",
                       job_id, MAX_LISTED_TRIALS);
    return rc;
}

/* Logs the stored measurements an arm fit left out (see opt_fit_skips): the core decides,
 * the service says so. */
static void warn_skips(const zbso_job *job, int64_t batch_size, const opt_fit_skips *skips)
{
    char cost[OPT_FMT_DOUBLE_MAX];
    if (skips->n == 0)
        return;
    log_warn("job %s: arm of batch size %lld fitted without %zu stored measurement(s) whose "
             "cost is not 0 or in [%g, %g] (first: trial %lld, cost %s); an older zbso "
             "accepted them",
             job->spec.job_id, (long long)batch_size, skips->n, OPT_COST_MIN, OPT_COST_MAX,
             (long long)skips->trial_number, opt_fmt_double(cost, skips->cost));
}

/* Lists the trials q selects (Succeeded ones of q->batch_size) and fits that batch size's
 * arm: from all of them in trial-number order when reported is NULL (arms created at the
 * end of pruning), else by Zeus's report rule after the trial reported ended
 * (opt_arm_refit). Stores the arm. Returns 0 or a negative code with err set. */
static int fit_arm(store_txn *t, const zbso_job *job, const store_trial_query *q,
                   const zbso_trial *reported, zbso_err *err)
{
    trial_list l = {0};
    double *rewards = NULL;
    zbso_arm arm;
    opt_fit_skips skips;
    int rc = list_trials(t, job->spec.job_id, q, &l, err);
    if (rc < 0)
        goto out;
    rewards = malloc((l.n + 1) * sizeof *rewards);
    if (rewards == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory fitting arm %lld of job %s",
                     (long long)q->batch_size, job->spec.job_id);
        goto out;
    }
    if (reported == NULL)
        opt_arm_fit_trials(&job->spec, q->batch_size, l.v, l.n, rewards, &arm, &skips);
    else
        opt_arm_refit(&job->spec, reported, l.v, l.n, rewards, &arm, &skips);
    warn_skips(job, q->batch_size, &skips);
    rc = store_arm_put(t, job->spec.job_id, &arm, err);
out:
    free(rewards);
    free(l.v);
    return rc;
}

/* ---- register ---- */

typedef struct register_work {
    const svc_env *env;
    const zbso_job_spec *spec;
    zbso_job_spec *out;
    bool *created;
    int64_t revision;            /* OUT: the job's revision after the unit */
} register_work;

/* Writes "<prefix>-<8 lowercase hex>" from one entropy word into job_id. */
static int generate_id(const svc_env *env, const char *prefix, char *job_id, zbso_err *err)
{
    uint32_t word;
    int rc = env->entropy(env->ctx, &word, 1);
    if (rc < 0)
        return err_set(err, rc, "could not read entropy to generate a job id");
    snprintf(job_id, ZBSO_ID_MAX + 1, "%s-%08x", prefix, (unsigned)word);
    return 0;
}

/* A registration under an id that exists: 200 with the stored spec when the spec is
 * identical (nothing is written), 409 when it differs. */
static int answer_existing(register_work *w, const zbso_job *existing, zbso_err *err)
{
    zbso_job_spec asked = *w->spec;
    if (!asked.has_policy) {
        asked.policy = existing->spec.policy;
        asked.has_policy = true;
    }
    if (!asked.has_carbon_intensity) {
        asked.has_carbon_intensity = existing->spec.has_carbon_intensity;
        asked.carbon_intensity_g_per_kwh = existing->spec.carbon_intensity_g_per_kwh;
    }
    if (!spec_equal(&existing->spec, &asked)) {
        zbso_job_spec same = asked;
        same.has_carbon_intensity = existing->spec.has_carbon_intensity;
        same.carbon_intensity_g_per_kwh = existing->spec.carbon_intensity_g_per_kwh;
        if (spec_equal(&existing->spec, &same)) {
            char was[OPT_FMT_DOUBLE_MAX] = "none", now[OPT_FMT_DOUBLE_MAX];
            if (existing->spec.has_carbon_intensity)
                opt_fmt_double(was, existing->spec.carbon_intensity_g_per_kwh);
            return err_set_field(err, ZBSO_ECONFLICT, "body", "carbon_intensity_g_per_kwh",
                                 "Job %s is already registered with carbon_intensity_g_per_kwh "
                                 "%s, not %s; a job's intensity is part of its spec: leave the "
                                 "field out to keep the stored one, or register the job under "
                                 "a new job_id", w->spec->job_id, was,
                                 opt_fmt_double(now, asked.carbon_intensity_g_per_kwh));
        }
        return err_set(err, ZBSO_ECONFLICT,
                       "Job %s is already registered with a different configuration; "
                       "register it under a new job_id or delete it first",
                       w->spec->job_id);
    }
    *w->out = existing->spec;
    *w->created = false;
    w->revision = existing->revision;
    return 0;
}

static int register_fn(store_txn *t, void *arg, zbso_err *err)
{
    register_work *w = arg;
    zbso_job job, existing;
    int rc = 0;

    memset(&job, 0, sizeof job);
    job.spec = *w->spec;
    if (job.spec.job_id[0] == '\0') {
        if (strlen(job.spec.job_id_prefix) + 9 > ZBSO_ID_MAX) {
            rc = err_set_field(err, ZBSO_EINVAL, "body", "job_id_prefix",
                               "job_id_prefix is too long to generate a job id from: %zu "
                               "bytes plus 9 is over %d",
                               strlen(job.spec.job_id_prefix), ZBSO_ID_MAX);
            goto out;
        }
        int tries;
        for (tries = 0; tries < GEN_ID_TRIES; tries++) {
            if ((rc = generate_id(w->env, job.spec.job_id_prefix, job.spec.job_id, err)) < 0)
                goto out;
            rc = store_job_get(t, job.spec.job_id, false, &existing, err);
            if (rc == ZBSO_ENOTFOUND)
                break;
            if (rc < 0)
                goto out;
        }
        if (tries == GEN_ID_TRIES) {
            rc = err_set(err, ZBSO_ECONFLICT,
                         "could not generate an unused job id with prefix %s in %d tries",
                         job.spec.job_id_prefix, GEN_ID_TRIES);
            goto out;
        }
        err_clear(err);
    } else {
        rc = store_job_get(t, job.spec.job_id, true, &existing, err);
        if (rc == 0) {
            rc = answer_existing(w, &existing, err);
            goto out;
        }
        if (rc != ZBSO_ENOTFOUND)
            goto out;
        err_clear(err);
    }

    if (!job.spec.has_policy) {
        job.spec.policy = w->env->default_policy;
        job.spec.has_policy = true;
        if (job.spec.warm_start && job.spec.policy != ZBSO_POLICY_SMART) {
            rc = err_set_field(err, ZBSO_EINVAL, "body", "warm_start",
                               "a warm start (warm_start or prior_jobs) needs policy "
                               "\"smart\", and this server's default policy is \"%s\": "
                               "add \"policy\": \"smart\" to the job spec",
                               spec_policy_name(job.spec.policy));
            goto out;
        }
    }
    job.stage = ZBSO_STAGE_PRUNING;
    job.exp_default_batch_size = job.spec.default_batch_size;
    job.has_min_cost = false;
    job.min_cost_batch_size = job.spec.default_batch_size;
    job.num_trials = 0;
    job.revision = 1;
    job.created_at = w->env->now(w->env->ctx);
    job.updated_at = job.created_at;
    if (job.spec.has_mab_seed) {
        rng_seed_u64(&job.rng, job.spec.mab_seed);
    } else {
        /* 128 bits of OS entropy, as numpy's default_rng(None) draws. */
        uint32_t words[4];
        if ((rc = w->env->entropy(w->env->ctx, words, 4)) < 0) {
            rc = err_set(err, rc, "could not read entropy to seed job %s", job.spec.job_id);
            goto out;
        }
        rng_seed_words(&job.rng, words, 4);
    }
    if ((rc = store_job_insert(t, &job, err)) < 0)
        goto out;
    *w->out = job.spec;
    *w->created = true;
    w->revision = job.revision;
out:
    return rc;
}

/* Read unit: answers a re-registration under a given id whose job exists (200 when the
 * spec is identical, 409 when not) from a snapshot; *w->created stays true when the job
 * does not exist, leaving the registration to register_fn. */
static int register_read_fn(store_txn *t, void *arg, zbso_err *err)
{
    register_work *w = arg;
    zbso_job existing;
    int rc = store_job_get(t, w->spec->job_id, false, &existing, err);
    if (rc == ZBSO_ENOTFOUND) {
        err_clear(err);
        return 0;
    }
    if (rc < 0)
        return rc;
    return answer_existing(w, &existing, err);
}

/* ---- a job that looks like another run of this one ---- */

typedef struct similar_work {
    const zbso_job_spec *spec;
    char *similar;
    int found;
} similar_work;

static int similar_cb(void *ctx, const zbso_job *job)
{
    similar_work *w = ctx;
    zbso_job_spec other = job->spec;
    if (strcmp(other.job_id, w->spec->job_id) == 0)
        return 0;
    memcpy(other.job_id, w->spec->job_id, sizeof other.job_id);
    if (!spec_equal(&other, w->spec))
        return 0;
    snprintf(w->similar, ZBSO_ID_MAX + 1, "%s", job->spec.job_id);
    w->found = 1;
    return 1;   /* stop the listing */
}

static int similar_fn(store_txn *t, void *arg, zbso_err *err)
{
    similar_work *w = arg;
    store_job_query q = {w->spec->job_id_prefix, NULL, SVC_SIMILAR_SCAN};
    int rc = store_jobs_list(t, &q, similar_cb, w, err);
    return rc < 0 ? rc : 0;
}

int svc_similar_job(store *st, const zbso_job_spec *spec, char *similar, zbso_err *err)
{
    similar_work w = {spec, similar, 0};
    similar[0] = '\0';
    int rc = store_exec_read(st, similar_fn, &w, err);
    return rc < 0 ? rc : w.found;
}

/* Stores revision into *out when out is not NULL and the unit succeeded; returns rc. */
static int put_revision(int rc, int64_t revision, int64_t *out)
{
    if (rc == 0 && out != NULL)
        *out = revision;
    return rc;
}

int svc_register_job(store *st, const svc_env *env, const zbso_job_spec *spec,
                     zbso_job_spec *out, bool *created, int64_t *job_revision, zbso_err *err)
{
    register_work w = {env, spec, out, created, 0};
    int rc;
    /* A job's spec is never changed once registered, so whatever a snapshot says about an
     * existing one is what the writer would say; only a new job needs the writer. */
    if (spec->job_id[0] != '\0') {
        *created = true;
        rc = store_exec_read(st, register_read_fn, &w, err);
        if (rc < 0 || !*created)
            return put_revision(rc, w.revision, job_revision);
    }
    rc = store_exec(st, register_fn, &w, err);
    return put_revision(rc, w.revision, job_revision);
}

/* ---- next batch size ---- */

typedef struct next_work {
    const svc_env *env;
    const char *job_id;
    const char *key;             /* NULL: the request carries no idempotency key */
    zbso_trial_id *out;
    int64_t revision;            /* OUT: the job's revision after the unit */
    int64_t expired;             /* OUT: trials the unit Failed by the lease timeout */
    int dispatched;              /* OUT: the type of the trial it dispatched, or -1 */
} next_work;

/* Loads the job (locked until the unit ends with for_update), 404 naming the id when it
 * does not exist. */
static int load_job(store_txn *t, const char *job_id, bool for_update, zbso_job *job,
                    zbso_err *err)
{
    int rc = store_job_get(t, job_id, for_update, job, err);
    if (rc == ZBSO_ENOTFOUND)
        rc = err_set(err, ZBSO_ENOTFOUND, "Unknown job %s", job_id);
    return rc;
}

/* Fits the arms of the surviving batch sizes from their Succeeded explorations and moves
 * the job to MAB. Returns 0 or a negative code. */
static int enter_mab(store_txn *t, zbso_job *job, const opt_prune_decision *d,
                     zbso_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < d->n_survivors; i++) {
        store_trial_query q = {
            .type_mask = 1u << ZBSO_TRIAL_EXPLORATION,
            .status_mask = 1u << ZBSO_TRIAL_SUCCEEDED,
            .batch_size = d->survivors[i],
            .last_n = 0,
        };
        if ((rc = fit_arm(t, job, &q, NULL, err)) < 0)
            goto out;
    }
    job->stage = ZBSO_STAGE_MAB;
out:
    return rc;
}

/* Picks the MAB answer from the job's stored arms; advances job->rng. */
static int mab_answer(store_txn *t, zbso_job *job, int64_t *bs, zbso_err *err)
{
    zbso_arm arms[ZBSO_MAX_BATCH_SIZES];
    size_t n = 0;
    int rc = store_arms_get(t, job->spec.job_id, arms, ZBSO_MAX_BATCH_SIZES, &n, err);
    if (rc < 0)
        return rc;
    return opt_mab_choose(&job->rng, arms, n, job->spec.mab_num_explorations, bs, err);
}

/* ---- the smart policy (core/smart.h) ---- */

#define PRIOR_JOBS_MAX 64          /* other jobs of a prefix read for a warm start */

/* The ids of the jobs a warm start reads: other jobs with the same job_id_prefix (their
 * ids begin with it, as generated ids do), at most PRIOR_JOBS_MAX. */
typedef struct prior_ids {
    const zbso_job *job;
    char (*id)[ZBSO_ID_MAX + 1];
    size_t n;
} prior_ids;

static int prior_id_add(void *ctx, const zbso_job *other)
{
    prior_ids *p = ctx;
    if (p->n == PRIOR_JOBS_MAX)
        return 1;
    if (strcmp(other->spec.job_id, p->job->spec.job_id) == 0 ||
        strcmp(other->spec.job_id_prefix, p->job->spec.job_id_prefix) != 0)
        return 0;
    snprintf(p->id[p->n++], ZBSO_ID_MAX + 1, "%s", other->spec.job_id);
    return 0;
}

/* Builds the warm start's prior of job from the Succeeded trials of its prior jobs: those
 * its spec lists (unknown ones are skipped), else the other jobs of its prefix. Reads
 * only; stores nothing. Returns 0 or a negative code. */
static int load_prior(store_txn *t, const zbso_job *job, opt_smart_prior *prior,
                      zbso_err *err)
{
    prior_ids p = {job, calloc(PRIOR_JOBS_MAX, sizeof *p.id), 0};
    int rc = 0;
    if (p.id == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory reading the prior of job %s",
                       job->spec.job_id);
    if (job->spec.n_prior_jobs > 0) {
        for (size_t i = 0; i < job->spec.n_prior_jobs && i < ZBSO_MAX_PRIOR_JOBS; i++)
            snprintf(p.id[p.n++], ZBSO_ID_MAX + 1, "%s", job->spec.prior_jobs[i]);
    } else {
        store_job_query q = {.prefix = job->spec.job_id_prefix};
        rc = store_jobs_list(t, &q, prior_id_add, &p, err);
        if (rc > 0)
            rc = 0;
        if (rc < 0)
            goto out;
    }
    for (size_t i = 0; i < p.n; i++) {
        trial_list l = {0};
        store_trial_query q = {.status_mask = 1u << ZBSO_TRIAL_SUCCEEDED};
        rc = list_trials(t, p.id[i], &q, &l, err);
        if (rc == 0)
            opt_smart_prior_add(&job->spec, l.v, l.n, prior);
        free(l.v);
        if (rc == ZBSO_ENOTFOUND) {
            err_clear(err);
            rc = 0;
        }
        if (rc < 0)
            goto out;
    }
out:
    free(p.id);
    return rc;
}

/* Decides job's next trial under the smart policy from all its live trials (and, for a
 * warm start that needs it, the prior), into *trial's type and batch size; advances the
 * job's generator, and on entering or staying in exploit stores the survivors' arms as
 * fitted (what GET /jobs/{id} shows). Returns 0 or a negative code. */
static int smart_answer(store_txn *t, zbso_job *job, zbso_trial *trial, zbso_err *err)
{
    trial_list l = {0};
    opt_smart_prior *prior = NULL;
    opt_smart_decision *d = malloc(sizeof *d);
    store_trial_query q = {
        .status_mask = (1u << ZBSO_TRIAL_DISPATCHED) | (1u << ZBSO_TRIAL_SUCCEEDED),
    };
    zbso_rng rng = job->rng;
    int rc;
    if (d == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory deciding for job %s", job->spec.job_id);
        goto out;
    }
    if ((rc = list_trials(t, job->spec.job_id, &q, &l, err)) < 0 ||
        (rc = opt_smart_next(job, l.v, l.n, NULL, &rng, d, err)) < 0)
        goto out;
    if (d->wants_prior) {
        if ((prior = calloc(1, sizeof *prior)) == NULL) {
            rc = err_set(err, ZBSO_ENOMEM, "out of memory for the prior of job %s",
                         job->spec.job_id);
            goto out;
        }
        rng = job->rng;
        if ((rc = load_prior(t, job, prior, err)) < 0 ||
            (rc = opt_smart_next(job, l.v, l.n, prior, &rng, d, err)) < 0)
            goto out;
    }
    job->rng = rng;
    job->exp_default_batch_size = d->center;
    trial->batch_size = d->batch_size;
    trial->type = d->kind == OPT_SMART_EXPLORE      ? ZBSO_TRIAL_EXPLORATION
                  : d->kind == OPT_SMART_CONCURRENT ? ZBSO_TRIAL_CONCURRENT
                                                    : ZBSO_TRIAL_MAB;
    if (d->kind != OPT_SMART_MAB)
        goto out;
    job->stage = ZBSO_STAGE_MAB;
    for (size_t i = 0; i < d->n_arms && rc == 0; i++)
        rc = store_arm_put(t, job->spec.job_id, &d->arms[i], err);
out:
    free(prior);
    free(d);
    free(l.v);
    return rc;
}

/* Sets the smart job's min_cost from its converged trials (opt_smart_min_cost), the
 * trial just ended among them. Returns 0 or a negative code. */
static int smart_min_cost(store_txn *t, zbso_job *job, zbso_err *err)
{
    trial_list l = {0};
    store_trial_query q = {.status_mask = 1u << ZBSO_TRIAL_SUCCEEDED};
    int rc = list_trials(t, job->spec.job_id, &q, &l, err);
    if (rc == 0) {
        bool has;
        double min_cost = 0;
        int64_t bs = job->min_cost_batch_size;
        opt_smart_min_cost(&job->spec, l.v, l.n, &has, &min_cost, &bs);
        if (has) {
            job->has_min_cost = true;
            job->min_cost = min_cost;
            job->min_cost_batch_size = bs;
        }
    }
    free(l.v);
    return rc;
}

/* Answers a repeated idempotency key with the trial its first request dispatched:
 * *answered is true when *w->out is that trial. A key whose trial started one lease ago
 * or earlier names nothing any more (the next dispatch takes it over), so keys need no
 * cleanup. Returns 0 or a negative code. */
static int keyed_answer(store_txn *t, next_work *w, const zbso_job *job, double now,
                        bool *answered, zbso_err *err)
{
    double lease = w->env->trial_timeout_s > 0 ? w->env->trial_timeout_s
                                               : SVC_KEY_LEASE_DEFAULT_S;
    zbso_trial trial;
    *answered = false;
    int rc = store_trial_by_key(t, job->spec.job_id, w->key, &trial, err);
    if (rc == ZBSO_ENOTFOUND) {
        err_clear(err);
        return 0;
    }
    if (rc < 0 || !(trial.start_time > now - lease))
        return rc;
    snprintf(w->out->job_id, sizeof w->out->job_id, "%s", job->spec.job_id);
    w->out->batch_size = trial.batch_size;
    w->out->trial_number = trial.trial_number;
    w->revision = job->revision;
    *answered = true;
    return 0;
}

static int next_fn(store_txn *t, void *arg, zbso_err *err)
{
    next_work *w = arg;
    double now = w->env->now(w->env->ctx);
    zbso_job job;
    zbso_trial trial;
    trial_list l = {0};
    opt_prune_decision *d = NULL;
    bool answered;
    int rc;

    w->expired = 0;
    w->dispatched = -1;
    if ((rc = load_job(t, w->job_id, true, &job, err)) < 0)
        goto out;
    if (w->key && (rc = keyed_answer(t, w, &job, now, &answered, err)) < 0)
        goto out;
    if (w->key && answered)
        goto out;
    if (w->env->trial_timeout_s > 0) {
        rc = store_trials_fail_stale(t, job.spec.job_id, now - w->env->trial_timeout_s, now,
                                     &w->expired, err);
        if (rc < 0)
            goto out;
    }
    memset(&trial, 0, sizeof trial);
    if (job.spec.policy == ZBSO_POLICY_SMART) {
        if ((rc = smart_answer(t, &job, &trial, err)) < 0)
            goto out;
    } else if (job.stage == ZBSO_STAGE_PRUNING) {
        store_trial_query q = {
            .type_mask = 1u << ZBSO_TRIAL_EXPLORATION,
            .status_mask = (1u << ZBSO_TRIAL_DISPATCHED) | (1u << ZBSO_TRIAL_SUCCEEDED),
        };
        if ((rc = list_trials(t, job.spec.job_id, &q, &l, err)) < 0)
            goto out;
        d = malloc(sizeof *d);
        if (d == NULL) {
            rc = err_set(err, ZBSO_ENOMEM, "out of memory deciding for job %s", w->job_id);
            goto out;
        }
        if ((rc = opt_prune_next(&job, l.v, l.n, d, err)) < 0)
            goto out;
        job.exp_default_batch_size = d->round_default;
        if (d->kind == OPT_PRUNE_TO_MAB) {
            if ((rc = enter_mab(t, &job, d, err)) < 0)
                goto out;
        } else {
            trial.type = d->kind == OPT_PRUNE_EXPLORE ? ZBSO_TRIAL_EXPLORATION
                                                      : ZBSO_TRIAL_CONCURRENT;
            trial.batch_size = d->batch_size;
        }
    }
    if (job.spec.policy != ZBSO_POLICY_SMART && job.stage == ZBSO_STAGE_MAB) {
        trial.type = ZBSO_TRIAL_MAB;
        if ((rc = mab_answer(t, &job, &trial.batch_size, err)) < 0)
            goto out;
    }
    trial.trial_number = ++job.num_trials;
    trial.status = ZBSO_TRIAL_DISPATCHED;
    trial.start_time = now;
    trial.lease_renewed_at = now;
    if ((rc = store_trial_insert(t, job.spec.job_id, &trial, w->key, err)) < 0)
        goto out;
    job.revision++;
    job.updated_at = now;
    if ((rc = store_job_update(t, &job, err)) < 0)
        goto out;
    w->revision = job.revision;
    w->dispatched = (int)trial.type;
    snprintf(w->out->job_id, sizeof w->out->job_id, "%s", job.spec.job_id);
    w->out->batch_size = trial.batch_size;
    w->out->trial_number = trial.trial_number;
out:
    free(d);
    free(l.v);
    return rc;
}

int svc_next_batch_size(store *st, const svc_env *env, const char *job_id,
                        const char *request_key, zbso_trial_id *out, int64_t *job_revision,
                        zbso_err *err)
{
    bool keyed = request_key && request_key[0];
    next_work w = {env, job_id, keyed ? request_key : NULL, out, 0, 0, -1};
    int rc = store_exec(st, next_fn, &w, err);
    if (rc == 0 && env->stats) {
        count(&env->stats->lease_expiries, (uint64_t)w.expired);
        count(&env->stats->finished[ZBSO_TRIAL_FAILED], (uint64_t)w.expired);
        count(&env->stats->stopped[ZBSO_STOP_LEASE_EXPIRED], (uint64_t)w.expired);
        if (w.dispatched >= 0)
            count(&env->stats->dispatched[w.dispatched], 1);
    }
    return put_revision(rc, w.revision, job_revision);
}

/* ---- report ---- */

typedef struct report_work {
    const svc_env *env;
    const zbso_training_result *result;
    zbso_report_response *out;
    bool answered;               /* OUT of report_read_fn: *out is the final answer */
    int64_t revision;            /* OUT: the job's revision the answer rests on */
    const zbso_trial *ended;     /* OUT of report_fn: the trial it ended, or NULL */
    zbso_trial ended_trial;
    /* OUT with ended: the footprint of its CO2e (opt_footprint_for_job: the job's own
     * intensity, else env->footprint), or NULL; own holds the job's. */
    const opt_footprint *ended_fp;
    opt_footprint own;
    /* OUT: the report was not a repeat, and its curve point (received at `now`, when the
     * decision was taken) is to be buffered (store_report_add). */
    bool add_point;
    double now;
} report_work;

/* Loads the trial named by id; 404 naming it when missing or of another batch size. */
static int load_trial(store_txn *t, const zbso_trial_id *id, zbso_trial *trial,
                      zbso_err *err)
{
    int rc = store_trial_get(t, id->job_id, id->trial_number, trial, err);
    if (rc == ZBSO_ENOTFOUND || (rc == 0 && trial->batch_size != id->batch_size))
        rc = err_set(err, ZBSO_ENOTFOUND,
                     "Could not find the trial: job %s, batch size %lld, trial number %lld",
                     id->job_id, (long long)id->batch_size, (long long)id->trial_number);
    return rc;
}

/* Loads the job (locked with for_update) and the reported trial, and decides the report
 * at the env's current time (w->now) into *job and *d. Returns 0, or 404/409 and store
 * errors. */
static int report_decide(store_txn *t, report_work *w, bool for_update, zbso_job *job,
                         opt_report_decision *d, zbso_err *err)
{
    const zbso_training_result *r = w->result;
    zbso_trial trial;
    int rc = load_job(t, r->trial.job_id, for_update, job, err);
    if (rc < 0)
        return rc;
    if ((rc = load_trial(t, &r->trial, &trial, err)) < 0)
        return rc;
    w->now = w->env->now(w->env->ctx);
    return opt_report_decide(job, &trial, r, w->now, d, err);
}

/* Whether the report's curve point is stored: only for epochs 0..max(max_epochs, 1) + 1,
 * the most a trial that ends at max_epochs can report, however it counts. A report
 * beyond is still decided and answered as ever; its point is not kept, so that a hostile
 * or broken client sending ever new epochs cannot grow the database without end (a
 * trial holds at most max(max_epochs, 1) + 2 points, one per epoch). */
static bool point_kept(const zbso_job *job, int64_t epoch)
{
    int64_t max = job->spec.max_epochs > 1 ? job->spec.max_epochs : 1;
    return epoch >= 0 && epoch <= max + 1;
}

static zbso_curve_point report_point(const report_work *w)
{
    const zbso_training_result *r = w->result;
    return (zbso_curve_point){r->current_epoch, r->time, r->energy, r->metric, w->now};
}

/* Whether a report decision changes stored state: a repeated report and one that keeps
 * training with a lease not yet due for renewal write nothing. */
static bool report_writes(const opt_report_decision *d)
{
    return !(d->kind == OPT_REPORT_REPEATED || (d->kind == OPT_REPORT_CONTINUE && !d->renew_lease));
}

/* Read unit: decides the report from a snapshot and answers it when the answer changes
 * nothing (a repeated report, or keep training with the lease still fresh: SPEC §3.5
 * makes most reports such), or when it is an error. Otherwise leaves w->answered false
 * for report_fn, which decides again under the writer. */
static int report_read_fn(store_txn *t, void *arg, zbso_err *err)
{
    report_work *w = arg;
    zbso_job job;
    opt_report_decision d;
    int rc = report_decide(t, w, false, &job, &d, err);
    if (rc < 0)
        return rc;
    if (!report_writes(&d)) {
        *w->out = d.response;
        w->answered = true;
        w->revision = job.revision;
        w->add_point = d.kind == OPT_REPORT_CONTINUE &&
                       point_kept(&job, w->result->current_epoch);
    }
    return 0;
}

static int report_fn(store_txn *t, void *arg, zbso_err *err)
{
    report_work *w = arg;
    zbso_job job;
    zbso_arm arms[ZBSO_MAX_BATCH_SIZES];
    size_t n_arms = 0;
    opt_report_decision dec, *d = &dec;
    int rc;

    w->ended = NULL;
    w->add_point = false;
    if ((rc = report_decide(t, w, true, &job, d, err)) < 0)
        goto out;
    *w->out = d->response;
    w->revision = job.revision;
    /* Every report that is not a repeat leaves a curve point, the one that ends the trial
     * too: its values are stored with the decision anyway (the trial's time, energy,
     * metric and epochs), so the buffer risks no figure, and the writer's unit stays
     * short (DESIGN.md "Curve points"). */
    w->add_point = (d->kind == OPT_REPORT_CONTINUE || d->kind == OPT_REPORT_END) &&
                   point_kept(&job, w->result->current_epoch);
    if (!report_writes(d))
        goto out;
    if ((rc = store_trial_update(t, job.spec.job_id, &d->trial, err)) < 0)
        goto out;
    if (job.spec.policy == ZBSO_POLICY_SMART && d->kind == OPT_REPORT_END &&
        d->trial.converged) {
        if ((rc = smart_min_cost(t, &job, err)) < 0)
            goto out;
    } else if (job.spec.policy != ZBSO_POLICY_SMART && d->update_min_cost) {
        job.has_min_cost = true;
        job.min_cost = d->cost;
        job.min_cost_batch_size = d->trial.batch_size;
    }
    job.revision++;
    job.updated_at = w->now;
    if ((rc = store_job_update(t, &job, err)) < 0)
        goto out;
    w->revision = job.revision;
    if (d->kind == OPT_REPORT_CONTINUE)
        goto out;
    w->ended_trial = d->trial;
    w->ended = &w->ended_trial;
    w->ended_fp = opt_footprint_for_job(w->env->footprint, &job.spec, &w->own);
    /* The smart policy refits its arms from the trials at every choice (smart_answer). */
    if (job.spec.policy == ZBSO_POLICY_SMART)
        goto out;
    if ((rc = store_arms_get(t, job.spec.job_id, arms, ZBSO_MAX_BATCH_SIZES, &n_arms, err)) < 0)
        goto out;
    for (size_t i = 0; i < n_arms; i++) {
        if (arms[i].batch_size != d->trial.batch_size)
            continue;
        /* The reported trial is stored by now: one more than the window leaves the
         * window's worth of others (opt_arm_refit ignores the reported one). A window
         * larger than any list is all of it. */
        int64_t window = job.spec.window_size;
        store_trial_query q = {
            .type_mask = 0,
            .status_mask = 1u << ZBSO_TRIAL_SUCCEEDED,
            .batch_size = d->trial.batch_size,
            .last_n = window > 0 && window < MAX_LISTED_TRIALS ? window + 1 : 0,
        };
        rc = fit_arm(t, &job, &q, &d->trial, err);
        break;
    }
out:
    return rc;
}

int svc_report(store *st, const svc_env *env, const zbso_training_result *result,
               zbso_report_response *out, int64_t *job_revision, zbso_err *err)
{
    report_work w = {.env = env, .result = result, .out = out};
    /* Decide on a snapshot first; only a report that must store something goes to the
     * writer, whose unit decides again from the latest state, so a request that slipped
     * in between only changes which of the two answers. */
    int rc = store_exec_read(st, report_read_fn, &w, err);
    if (rc == 0 && !w.answered)
        rc = store_exec(st, report_fn, &w, err);
    if (rc == 0 && w.ended && env->stats) {
        count(&env->stats->finished[w.ended->status], 1);
        if ((unsigned)w.ended->stop_reason < ZBSO_STOP_REASONS)
            count(&env->stats->stopped[w.ended->stop_reason], 1);
        count_double(&env->stats->energy_j, w.ended->energy);
        count_double(&env->stats->time_s, w.ended->time);
        if (w.ended_fp && w.ended_fp->has_intensity) {
            count_double(&env->stats->co2e_g,
                         opt_co2e_g(w.ended_fp, w.ended->energy, w.ended->start_time,
                                    w.ended->end_time));
            count(&env->stats->co2e_trials, 1);
        }
    }
    /* A report's point is buffered once its answer is decided for good (a repeated report
     * adds none): it rides with the next flush, not a unit of its own. */
    if (rc == 0 && w.add_point) {
        zbso_curve_point pt = report_point(&w);
        store_report_add(st, result->trial.job_id, result->trial.trial_number, &pt);
    }
    return put_revision(rc, w.revision, job_revision);
}

/* ---- the cost bound ---- */

typedef struct bound_work {
    const char *job_id;
    double bound;
    int64_t revision;
} bound_work;

static int bound_fn(store_txn *t, void *arg, zbso_err *err)
{
    bound_work *w = arg;
    zbso_job job;
    int rc = load_job(t, w->job_id, false, &job, err);
    if (rc < 0)
        return rc;
    w->bound = job.spec.has_beta_knob && job.has_min_cost ? job.spec.beta_knob * job.min_cost
                                                          : INFINITY;
    w->revision = job.revision;
    return 0;
}

int svc_cost_bound(store *st, const svc_env *env, const char *job_id, double *bound,
                   int64_t *job_revision, zbso_err *err)
{
    bound_work w = {job_id, INFINITY, 0};
    int rc = store_exec_read(st, bound_fn, &w, err);
    if (rc == 0)
        *bound = w.bound;
    return put_revision(rc, w.revision, job_revision);
}

/* ---- end trial and delete ---- */

typedef struct end_work {
    const svc_env *env;
    const zbso_trial_id *id;
    bool dispatched;             /* OUT of end_read_fn: the trial is Dispatched */
    int64_t revision;            /* OUT: the job's revision after the unit */
    bool failed;                 /* OUT of end_fn: it Failed the trial */
} end_work;

/* Loads the job (locked with for_update, so that this serializes with the job's other
 * requests) and the trial. Returns 0, or 404 naming what is missing, or a store error. */
static int end_load(store_txn *t, const end_work *w, bool for_update, zbso_job *job,
                    zbso_trial *trial, zbso_err *err)
{
    int rc = store_job_get(t, w->id->job_id, for_update, job, err);
    if (rc == ZBSO_ENOTFOUND)
        rc = err_set(err, ZBSO_ENOTFOUND, "Could not find the trial: job %s is unknown",
                     w->id->job_id);
    if (rc < 0)
        return rc;
    return load_trial(t, w->id, trial, err);
}

/* Read unit: a trial that is no longer Dispatched is left as it is (the usual case: a
 * client ends its trial on exit after its last report ended it), so only a Dispatched
 * one needs end_fn. */
static int end_read_fn(store_txn *t, void *arg, zbso_err *err)
{
    end_work *w = arg;
    zbso_job job;
    zbso_trial trial;
    int rc = end_load(t, w, false, &job, &trial, err);
    if (rc == 0) {
        w->dispatched = trial.status == ZBSO_TRIAL_DISPATCHED;
        w->revision = job.revision;
    }
    return rc;
}

static int end_fn(store_txn *t, void *arg, zbso_err *err)
{
    end_work *w = arg;
    zbso_job job;
    zbso_trial trial;
    int rc;

    w->failed = false;
    if ((rc = end_load(t, w, true, &job, &trial, err)) < 0)
        goto out;
    w->revision = job.revision;
    if (trial.status == ZBSO_TRIAL_DISPATCHED) {
        trial.status = ZBSO_TRIAL_FAILED;
        trial.stop_reason = ZBSO_STOP_ENDED;
        trial.end_time = w->env->now(w->env->ctx);
        if ((rc = store_trial_update(t, w->id->job_id, &trial, err)) < 0)
            goto out;
        job.revision++;
        job.updated_at = trial.end_time;
        if ((rc = store_job_update(t, &job, err)) < 0)
            goto out;
        w->revision = job.revision;
        w->failed = true;
    }
out:
    return rc;
}

int svc_end_trial(store *st, const svc_env *env, const zbso_trial_id *trial,
                  int64_t *job_revision, zbso_err *err)
{
    end_work w = {env, trial, false, 0, false};
    /* A trial leaves Dispatched for good, so a snapshot that shows it ended is final. */
    int rc = store_exec_read(st, end_read_fn, &w, err);
    if (rc < 0 || !w.dispatched)
        return put_revision(rc, w.revision, job_revision);
    rc = store_exec(st, end_fn, &w, err);
    if (rc == 0 && w.failed && env->stats) {
        count(&env->stats->finished[ZBSO_TRIAL_FAILED], 1);
        count(&env->stats->stopped[ZBSO_STOP_ENDED], 1);
    }
    return put_revision(rc, w.revision, job_revision);
}

static int delete_fn(store_txn *t, void *arg, zbso_err *err)
{
    const char *job_id = arg;
    int rc = store_job_delete(t, job_id, err);
    if (rc == ZBSO_ENOTFOUND)
        rc = err_set(err, ZBSO_ENOTFOUND, "No job was deleted: job %s is unknown", job_id);
    return rc;
}

int svc_delete_job(store *st, const svc_env *env, const char *job_id, zbso_err *err)
{
    return store_exec(st, delete_fn, (void *)job_id, err);
}

/* ---- power-limit profiles (SPEC §6.1) ---- */

typedef struct profile_work {
    const svc_env *env;
    const char *job_id;
    int64_t batch_size;
    const zbso_power_profile *in;  /* put */
    zbso_power_profile *out;
    int64_t revision;              /* OUT: the job's revision after the unit */
} profile_work;

/* 422 at body.batch_size unless bs is one of the job's batch sizes. */
static int check_batch_size(const zbso_job *job, int64_t bs, zbso_err *err)
{
    for (size_t i = 0; i < job->spec.n_batch_sizes; i++)
        if (job->spec.batch_sizes[i] == bs)
            return 0;
    return err_set_field(err, ZBSO_EINVAL, "body", "batch_size", "batch size %lld is not one "
                         "of job %s's batch sizes", (long long)bs, job->spec.job_id);
}

static int profile_put_fn(store_txn *t, void *arg, zbso_err *err)
{
    profile_work *w = arg;
    zbso_job job;
    int rc;
    if ((rc = load_job(t, w->job_id, true, &job, err)) < 0 ||
        (rc = check_batch_size(&job, w->in->batch_size, err)) < 0)
        return rc;
    *w->out = *w->in;
    w->out->created_at = w->env->now(w->env->ctx);
    if ((rc = store_profile_put(t, w->job_id, w->out, err)) < 0)
        return rc;
    job.revision++;
    job.updated_at = w->out->created_at;
    if ((rc = store_job_update(t, &job, err)) < 0)
        return rc;
    w->revision = job.revision;
    return 0;
}

int svc_profile_put(store *st, const svc_env *env, const char *job_id,
                    const zbso_power_profile *profile, zbso_power_profile *out,
                    int64_t *job_revision, zbso_err *err)
{
    profile_work w = {env, job_id, profile->batch_size, profile, out, 0};
    zbso_err why;
    if (opt_pl_measurements_check(profile->m, profile->n, &why) < 0)
        return err_set_field(err, ZBSO_EINVAL, "body", "measurements", "%s", why.msg);
    if (profile->trial_number < 0 || profile->profile_steps < 0)
        return err_set_field(err, ZBSO_EINVAL, "body", profile->trial_number < 0
                                 ? "trial_number" : "profile_steps",
                             "%s %lld is negative", profile->trial_number < 0
                                 ? "trial_number" : "profile_steps",
                             (long long)(profile->trial_number < 0 ? profile->trial_number
                                                                  : profile->profile_steps));
    int rc = store_exec(st, profile_put_fn, &w, err);
    return put_revision(rc, w.revision, job_revision);
}

static int profile_get_fn(store_txn *t, void *arg, zbso_err *err)
{
    profile_work *w = arg;
    zbso_job job;
    int rc;
    if ((rc = load_job(t, w->job_id, false, &job, err)) < 0)
        return rc;
    w->revision = job.revision;
    rc = store_profile_get(t, w->job_id, w->batch_size, w->out, err);
    if (rc == ZBSO_ENOTFOUND)
        rc = err_set(err, ZBSO_ENOTFOUND, "Job %s has no power profile of batch size %lld",
                     w->job_id, (long long)w->batch_size);
    return rc;
}

int svc_profile_get(store *st, const svc_env *env, const char *job_id, int64_t batch_size,
                    zbso_power_profile *out, int64_t *job_revision, zbso_err *err)
{
    profile_work w = {env, job_id, batch_size, NULL, out, 0};
    int rc = store_exec_read(st, profile_get_fn, &w, err);
    return put_revision(rc, w.revision, job_revision);
}
