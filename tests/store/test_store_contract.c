/* test_store_contract.c: the store.h contract, run against the sqlite backend (a fresh
 * temp file per test) and memory://, read-only units included, plus sqlite's schema,
 * migration and reopen rules and its read snapshots. With --pg, the contract, reopening
 * and read snapshots against PostgreSQL instead (a fresh database per test), run under
 * tests/pg/with_pg.sh; with --mysql the same against MariaDB, under
 * tests/mysql/with_mysql.sh. Writes only under its own mkdtemp directory, which it
 * removes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mysql/my_fresh.h"
#include "../pg/pg_fresh.h"
#include "core/rng.h"
#include "store/sqlite/sqliteInt.h"
#include "store/store.h"

static char g_dir[64];        /* the temp directory */
static char g_url[320];       /* the URL every generic test opens */
static char g_path[256];      /* the sqlite file behind g_url, or "" for memory:// */
static bool g_pg;             /* PostgreSQL: each open_fresh creates a database */
static bool g_my;             /* MariaDB: each open_fresh creates a database */
static int g_pg_dbs;          /* databases created so far (either server) */

/* Removes the sqlite file and its WAL/shm companions. */
static void remove_db(const char *path)
{
    char p[300];
    static const char *const suffix[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffix[i]);
        unlink(p);
    }
}

/* Opens a fresh, empty store for the backend under test; fails the test on error. */
static store *open_fresh(void)
{
    store_options opt = {.create_if_empty = true};
    zbso_err err = {0};
    store *st = NULL;
    if (g_path[0] != '\0')
        remove_db(g_path);
    if (g_pg) {
        char name[32];
        snprintf(name, sizeof name, "contract_%d", g_pg_dbs++);
        if (pg_fresh_db(name, g_url, sizeof g_url) < 0)
            fail_msg("cannot create PostgreSQL database %s", name);
    }
    if (g_my) {
        char name[32];
        snprintf(name, sizeof name, "contract_%d", g_pg_dbs++);
        if (my_fresh_db(name, g_url, sizeof g_url) < 0)
            fail_msg("cannot create MariaDB database %s", name);
    }
    int rc = store_open(g_url, &opt, &st, &err);
    if (rc != 0)
        fail_msg("store_open(%s) = %d: %s", g_url, rc, err.msg);
    return st;
}

static int group_memory(void **state)
{
    snprintf(g_url, sizeof g_url, "memory://");
    g_path[0] = '\0';
    return 0;
}

static int group_sqlite(void **state)
{
    snprintf(g_path, sizeof g_path, "%s/contract.db", g_dir);
    snprintf(g_url, sizeof g_url, "sqlite:///%s", g_path); /* g_dir is absolute: 4 slashes */
    return 0;
}

static int group_pg(void **state)
{
    g_pg = true;
    g_path[0] = '\0';
    return 0;
}

static int group_my(void **state)
{
    g_my = true;
    g_path[0] = '\0';
    return 0;
}

static int group_end(void **state)
{
    if (g_path[0] != '\0')
        remove_db(g_path);
    return 0;
}

/* A job with a distinct value in every field, so a field lost or swapped shows. */
static void make_job(zbso_job *j, const char *id)
{
    memset(j, 0, sizeof *j);
    zbso_job_spec *s = &j->spec;
    snprintf(s->job_id, sizeof s->job_id, "%s", id);
    snprintf(s->job_id_prefix, sizeof s->job_id_prefix, "prefix-%s", id);
    s->n_batch_sizes = 4;
    s->batch_sizes[0] = 8;
    s->batch_sizes[1] = 16;
    s->batch_sizes[2] = 32;
    s->batch_sizes[3] = 1024;
    s->default_batch_size = 32;
    s->eta_knob = 0.25;
    s->has_beta_knob = true;
    s->beta_knob = 2.5;
    s->target_metric = 0.875;
    s->higher_is_better_metric = true;
    s->max_epochs = 77;
    s->num_pruning_rounds = 3;
    s->window_size = 5;
    s->mab_prior_mean = -1.5;
    s->mab_prior_precision = 0.125;
    s->mab_num_explorations = 4;
    s->has_mab_seed = true;
    s->mab_seed = UINT64_C(0xFEDCBA9876543210); /* high bit set: must survive int64 */
    s->max_power = 3000.5;
    s->number_of_gpus = 8;
    snprintf(s->gpu_model, sizeof s->gpu_model, "NVIDIA H200");
    /* Issue 21's fields: ids with the separator and escape of store_prior_format's text. */
    s->policy = ZBSO_POLICY_SMART;
    s->has_policy = true;
    s->warm_start = true;
    s->n_prior_jobs = 3;
    snprintf(s->prior_jobs[0], sizeof s->prior_jobs[0], "%s", "a\\n\\");
    snprintf(s->prior_jobs[1], sizeof s->prior_jobs[1], "%s", "b\nline\\");
    snprintf(s->prior_jobs[2], sizeof s->prior_jobs[2], "%s", "prior-\xce\xa9");
    /* Issue 25's own carbon intensity: a value that reads back bit for bit only when the
     * backend keeps every digit. */
    s->has_carbon_intensity = true;
    s->carbon_intensity_g_per_kwh = 412.30000000000001;
    j->stage = ZBSO_STAGE_PRUNING;
    j->exp_default_batch_size = 32;
    j->has_min_cost = true;
    j->min_cost = 1234.5;
    j->min_cost_batch_size = 16;
    rng_seed_u64(&j->rng, 42);
    rng_next_u64(&j->rng);
    j->num_trials = 3;
    j->created_at = 1700000000.25;
    j->revision = 5;
    j->updated_at = 1700000050.125;
}

static void assert_job_equal(const zbso_job *a, const zbso_job *b)
{
    const zbso_job_spec *x = &a->spec, *y = &b->spec;
    assert_string_equal(x->job_id, y->job_id);
    assert_string_equal(x->job_id_prefix, y->job_id_prefix);
    assert_int_equal(x->n_batch_sizes, y->n_batch_sizes);
    for (size_t i = 0; i < x->n_batch_sizes; i++)
        assert_int_equal(x->batch_sizes[i], y->batch_sizes[i]);
    assert_int_equal(x->default_batch_size, y->default_batch_size);
    assert_true(x->eta_knob == y->eta_knob);
    assert_int_equal(x->has_beta_knob, y->has_beta_knob);
    assert_true(x->beta_knob == y->beta_knob);
    assert_true(x->target_metric == y->target_metric);
    assert_int_equal(x->higher_is_better_metric, y->higher_is_better_metric);
    assert_int_equal(x->max_epochs, y->max_epochs);
    assert_int_equal(x->num_pruning_rounds, y->num_pruning_rounds);
    assert_int_equal(x->window_size, y->window_size);
    assert_true(x->mab_prior_mean == y->mab_prior_mean);
    assert_true(x->mab_prior_precision == y->mab_prior_precision);
    assert_int_equal(x->mab_num_explorations, y->mab_num_explorations);
    assert_int_equal(x->has_mab_seed, y->has_mab_seed);
    assert_true(x->mab_seed == y->mab_seed);
    assert_true(x->max_power == y->max_power);
    assert_int_equal(x->number_of_gpus, y->number_of_gpus);
    assert_string_equal(x->gpu_model, y->gpu_model);
    assert_int_equal(x->policy, y->policy);
    assert_int_equal(x->has_policy, y->has_policy);
    assert_int_equal(x->warm_start, y->warm_start);
    assert_int_equal(x->n_prior_jobs, y->n_prior_jobs);
    for (size_t i = 0; i < x->n_prior_jobs; i++)
        assert_string_equal(x->prior_jobs[i], y->prior_jobs[i]);
    assert_int_equal(x->has_carbon_intensity, y->has_carbon_intensity);
    assert_true(x->carbon_intensity_g_per_kwh == y->carbon_intensity_g_per_kwh);
    assert_int_equal(a->stage, b->stage);
    assert_int_equal(a->exp_default_batch_size, b->exp_default_batch_size);
    assert_int_equal(a->has_min_cost, b->has_min_cost);
    assert_true(a->min_cost == b->min_cost);
    assert_int_equal(a->min_cost_batch_size, b->min_cost_batch_size);
    assert_true(a->rng.state_hi == b->rng.state_hi && a->rng.state_lo == b->rng.state_lo);
    assert_true(a->rng.inc_hi == b->rng.inc_hi && a->rng.inc_lo == b->rng.inc_lo);
    assert_int_equal(a->rng.has_uint32, b->rng.has_uint32);
    assert_int_equal(a->rng.uinteger, b->rng.uinteger);
    assert_int_equal(a->num_trials, b->num_trials);
    assert_int_equal(a->revision, b->revision);
    assert_true(a->created_at == b->created_at);
    assert_true(a->updated_at == b->updated_at);
}

static zbso_trial make_trial(int64_t n, int64_t bs, zbso_trial_type type,
                             zbso_trial_status status, double lease)
{
    zbso_trial t = {.trial_number = n, .batch_size = bs, .type = type, .status = status,
                    .start_time = 1000.0 + (double)n, .end_time = 0.0,
                    .lease_renewed_at = lease, .time = 0.0, .energy = 0.0, .metric = 0.0,
                    .epochs = 0, .converged = false};
    if (status == ZBSO_TRIAL_SUCCEEDED) {
        t.end_time = 2000.0 + (double)n;
        t.time = 10.5 * (double)n;
        t.energy = 200.25 * (double)n;
        t.metric = 0.5 + 0.01 * (double)n;
        t.epochs = n;
        t.converged = n % 2 == 0;
        /* every stored reason a Succeeded trial can have, in turn */
        t.stop_reason = t.converged ? ZBSO_STOP_TARGET_REACHED
                        : n % 3 == 0 ? ZBSO_STOP_COST_BOUND
                                     : ZBSO_STOP_MAX_EPOCHS;
    } else if (status == ZBSO_TRIAL_FAILED) {
        t.end_time = 2000.0 + (double)n;
        t.stop_reason = ZBSO_STOP_ENDED;
    }
    return t;
}

static void assert_trial_equal(const zbso_trial *a, const zbso_trial *b)
{
    assert_int_equal(a->trial_number, b->trial_number);
    assert_int_equal(a->batch_size, b->batch_size);
    assert_int_equal(a->type, b->type);
    assert_int_equal(a->status, b->status);
    assert_true(a->start_time == b->start_time);
    assert_true(a->end_time == b->end_time);
    assert_true(a->lease_renewed_at == b->lease_renewed_at);
    assert_true(a->time == b->time);
    assert_true(a->energy == b->energy);
    assert_true(a->metric == b->metric || (isnan(a->metric) && isnan(b->metric)));
    assert_int_equal(a->epochs, b->epochs);
    assert_int_equal(a->converged, b->converged);
    assert_int_equal(a->stop_reason, b->stop_reason);
}

/* ---- units of work used by the tests; each returns the first failing op's code ---- */

typedef struct put_arg {
    const zbso_job *job;
    const zbso_trial *trials;
    size_t n_trials;
    const zbso_arm *arms;
    size_t n_arms;
} put_arg;

static int u_put(store_txn *t, void *argp, zbso_err *err)
{
    put_arg *a = argp;
    int rc = a->job != NULL ? store_job_insert(t, a->job, err) : 0;
    for (size_t i = 0; rc == 0 && i < a->n_trials; i++)
        rc = store_trial_insert(t, a->job->spec.job_id, &a->trials[i], NULL, err);
    for (size_t i = 0; rc == 0 && i < a->n_arms; i++)
        rc = store_arm_put(t, a->job->spec.job_id, &a->arms[i], err);
    return rc;
}

static void put(store *st, const zbso_job *job, const zbso_trial *tr, size_t n_tr,
                const zbso_arm *arms, size_t n_arms)
{
    zbso_err err = {0};
    put_arg a = {job, tr, n_tr, arms, n_arms};
    int rc = store_exec(st, u_put, &a, &err);
    if (rc != 0)
        fail_msg("put %s: %d %s", job->spec.job_id, rc, err.msg);
}

typedef struct get_arg {
    const char *id;
    zbso_job job;
} get_arg;

static int u_job_get(store_txn *t, void *argp, zbso_err *err)
{
    get_arg *a = argp;
    return store_job_get(t, a->id, true, &a->job, err);
}

static int u_job_update(store_txn *t, void *argp, zbso_err *err)
{
    return store_job_update(t, argp, err);
}

static int u_job_insert(store_txn *t, void *argp, zbso_err *err)
{
    return store_job_insert(t, argp, err);
}

static int u_job_delete(store_txn *t, void *argp, zbso_err *err)
{
    return store_job_delete(t, argp, err);
}

typedef struct trial_arg {
    const char *id;
    int64_t n;
    zbso_trial trial;
    const char *key;             /* the request key of trial_insert and trial_by_key */
} trial_arg;

static int u_trial_get(store_txn *t, void *argp, zbso_err *err)
{
    trial_arg *a = argp;
    return store_trial_get(t, a->id, a->n, &a->trial, err);
}

static int u_trial_insert(store_txn *t, void *argp, zbso_err *err)
{
    trial_arg *a = argp;
    return store_trial_insert(t, a->id, &a->trial, a->key, err);
}

static int u_trial_by_key(store_txn *t, void *argp, zbso_err *err)
{
    trial_arg *a = argp;
    return store_trial_by_key(t, a->id, a->key, &a->trial, err);
}

static int u_trial_update(store_txn *t, void *argp, zbso_err *err)
{
    trial_arg *a = argp;
    return store_trial_update(t, a->id, &a->trial, err);
}

#define LIST_MAX 64
typedef struct list_arg {
    const char *id;
    store_trial_query q;
    int stop_after;              /* > 0: the callback returns 99 at this row */
    int64_t numbers[LIST_MAX];
    size_t n;
} list_arg;

static int list_cb(void *ctx, const zbso_trial *tr)
{
    list_arg *a = ctx;
    if (a->n == LIST_MAX)
        return -100;
    a->numbers[a->n++] = tr->trial_number;
    return a->stop_after > 0 && (int)a->n == a->stop_after ? 99 : 0;
}

static int u_list(store_txn *t, void *argp, zbso_err *err)
{
    list_arg *a = argp;
    a->n = 0;
    return store_trials_list(t, a->id, &a->q, list_cb, a, err);
}

/* Lists the trial numbers of id matching q into out; returns how many. */
static size_t list(store *st, const char *id, store_trial_query q, int64_t *out)
{
    list_arg a = {.id = id, .q = q};
    zbso_err err = {0};
    int rc = store_exec(st, u_list, &a, &err);
    if (rc != 0)
        fail_msg("trials_list: %d %s", rc, err.msg);
    memcpy(out, a.numbers, a.n * sizeof *out);
    return a.n;
}

static void assert_numbers(const int64_t *got, size_t n, const int64_t *want, size_t n_want)
{
    assert_int_equal(n, n_want);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], want[i]);
}

typedef struct arms_arg {
    const char *id;
    size_t cap;
    zbso_arm arms[8];
    size_t n;
} arms_arg;

static int u_arms_get(store_txn *t, void *argp, zbso_err *err)
{
    arms_arg *a = argp;
    return store_arms_get(t, a->id, a->arms, a->cap, &a->n, err);
}

static int u_arm_put(store_txn *t, void *argp, zbso_err *err)
{
    const zbso_arm *arm = argp;
    return store_arm_put(t, "ghost", arm, err);
}

/* ---- generic contract tests (both backends) ---- */

static void test_job_roundtrip_and_codes(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job j, plain;
    make_job(&j, "job-a");
    make_job(&plain, "job-plain");
    plain.spec.has_beta_knob = false;
    plain.spec.beta_knob = 0.0;
    plain.spec.has_mab_seed = false;
    plain.spec.mab_seed = 0;
    plain.has_min_cost = false;
    plain.min_cost = 0.0;
    plain.spec.policy = ZBSO_POLICY_ZEUS;
    plain.spec.warm_start = false;
    plain.spec.n_prior_jobs = 0;
    plain.spec.has_carbon_intensity = false;
    plain.spec.carbon_intensity_g_per_kwh = 0.0;
    /* the most prior_jobs text there can be: every id at its longest, every byte escaped */
    zbso_job full;
    make_job(&full, "job-full-priors");
    full.spec.carbon_intensity_g_per_kwh = 0.0;   /* an intensity of 0 is not "none" */
    full.spec.n_prior_jobs = ZBSO_MAX_PRIOR_JOBS;
    for (size_t i = 0; i < ZBSO_MAX_PRIOR_JOBS; i++) {
        memset(full.spec.prior_jobs[i], i % 2 ? '\n' : '\\', ZBSO_ID_MAX);
        full.spec.prior_jobs[i][ZBSO_ID_MAX - 1] = (char)('0' + i);
        full.spec.prior_jobs[i][ZBSO_ID_MAX] = '\0';
    }
    put(st, &full, NULL, 0, NULL, 0);
    put(st, &j, NULL, 0, NULL, 0);
    put(st, &plain, NULL, 0, NULL, 0);

    get_arg g = {.id = "job-a"};
    assert_int_equal(store_exec(st, u_job_get, &g, &err), 0);
    assert_job_equal(&g.job, &j);
    g.id = "job-plain";
    assert_int_equal(store_exec(st, u_job_get, &g, &err), 0);
    assert_job_equal(&g.job, &plain);
    g.id = "job-full-priors";
    assert_int_equal(store_exec(st, u_job_get, &g, &err), 0);
    assert_job_equal(&g.job, &full);

    assert_int_equal(store_exec(st, u_job_insert, &j, &err), ZBSO_ECONFLICT);
    assert_non_null(strstr(err.msg, "job-a"));
    g.id = "nope";
    assert_int_equal(store_exec(st, u_job_get, &g, &err), ZBSO_ENOTFOUND);
    assert_non_null(strstr(err.msg, "nope"));
    zbso_job ghost;
    make_job(&ghost, "ghost");
    assert_int_equal(store_exec(st, u_job_update, &ghost, &err), ZBSO_ENOTFOUND);
    assert_int_equal(store_exec(st, u_job_delete, "ghost", &err), ZBSO_ENOTFOUND);
    /* NULL err is allowed and the code still comes back. */
    assert_int_equal(store_exec(st, u_job_delete, "ghost", NULL), ZBSO_ENOTFOUND);
    store_close(st);
}

static void test_job_update_every_field(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job j, upd;
    make_job(&j, "job-u");
    put(st, &j, NULL, 0, NULL, 0);
    upd = j;
    upd.stage = ZBSO_STAGE_MAB;
    upd.exp_default_batch_size = 1024;
    upd.has_min_cost = false;
    upd.min_cost = 0.0;
    upd.min_cost_batch_size = 8;
    for (int i = 0; i < 5; i++)
        rng_next_u64(&upd.rng);
    upd.rng.has_uint32 = 1;
    upd.rng.uinteger = 0xDEADBEEFu;
    upd.num_trials = 99;
    upd.revision = 6;
    upd.updated_at = 1700009999.75;
    zbso_job sent = upd;
    sent.spec.eta_knob = 0.75; /* the spec is immutable: job_update must not write it */
    sent.created_at = 5.0;
    assert_int_equal(store_exec(st, u_job_update, &sent, &err), 0);
    get_arg g = {.id = "job-u"};
    assert_int_equal(store_exec(st, u_job_get, &g, &err), 0);
    assert_job_equal(&g.job, &upd);

    /* and back to a known min cost */
    upd.has_min_cost = true;
    upd.min_cost = 7.25;
    assert_int_equal(store_exec(st, u_job_update, &upd, &err), 0);
    assert_int_equal(store_exec(st, u_job_get, &g, &err), 0);
    assert_job_equal(&g.job, &upd);
    store_close(st);
}

typedef struct ids_arg {
    char ids[4][16];
    int n;
    int stop_at;
} ids_arg;

static int ids_cb(void *ctx, const char *id)
{
    ids_arg *a = ctx;
    if (a->n == 4)
        return -100;
    snprintf(a->ids[a->n++], sizeof a->ids[0], "%s", id);
    return a->n == a->stop_at ? 7 : 0;
}

static int u_ids(store_txn *t, void *argp, zbso_err *err)
{
    ids_arg *a = argp;
    a->n = 0;
    return t->ops->job_ids(t, ids_cb, a, err);
}

static void test_job_ids_and_delete_cascade(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job a, b, c;
    make_job(&a, "a");
    make_job(&b, "b");
    make_job(&c, "c");
    zbso_trial tr[2] = {make_trial(1, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_SUCCEEDED, 1.0),
                        make_trial(2, 16, ZBSO_TRIAL_MAB, ZBSO_TRIAL_DISPATCHED, 2.0)};
    zbso_arm arm = {16, 1.0, 2.0, 3};
    put(st, &b, tr, 2, &arm, 1);
    put(st, &c, NULL, 0, NULL, 0);
    put(st, &a, tr, 1, NULL, 0);

    ids_arg ia = {.stop_at = 0};
    assert_int_equal(store_exec(st, u_ids, &ia, &err), 0);
    assert_int_equal(ia.n, 3);
    assert_string_equal(ia.ids[0], "a");
    assert_string_equal(ia.ids[1], "b");
    assert_string_equal(ia.ids[2], "c");
    ia.stop_at = 2;
    assert_int_equal(store_exec(st, u_ids, &ia, &err), 7);
    assert_int_equal(ia.n, 2);

    assert_int_equal(store_exec(st, u_job_delete, "b", &err), 0);
    trial_arg ta = {.id = "b", .n = 1};
    assert_int_equal(store_exec(st, u_trial_get, &ta, &err), ZBSO_ENOTFOUND);
    arms_arg aa = {.id = "b", .cap = 8};
    assert_int_equal(store_exec(st, u_arms_get, &aa, &err), 0);
    assert_int_equal(aa.n, 0);
    /* a job created again under the same id starts with no trials or arms */
    put(st, &b, NULL, 0, NULL, 0);
    int64_t got[LIST_MAX];
    assert_int_equal(list(st, "b", (store_trial_query){0}, got), 0);
    assert_int_equal(store_exec(st, u_arms_get, &aa, &err), 0);
    assert_int_equal(aa.n, 0);
    /* the other jobs keep theirs */
    ta.id = "a";
    assert_int_equal(store_exec(st, u_trial_get, &ta, &err), 0);
    assert_trial_equal(&ta.trial, &tr[0]);
    store_close(st);
}

static void test_trials_ops_and_filters(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job j, other;
    make_job(&j, "t");
    make_job(&other, "other");
    zbso_trial tr[7] = {
        make_trial(1, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_SUCCEEDED, 10.0),
        make_trial(2, 16, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_FAILED, 20.0),
        make_trial(3, 8, ZBSO_TRIAL_CONCURRENT, ZBSO_TRIAL_SUCCEEDED, 30.0),
        make_trial(4, 16, ZBSO_TRIAL_MAB, ZBSO_TRIAL_SUCCEEDED, 40.0),
        make_trial(5, 8, ZBSO_TRIAL_MAB, ZBSO_TRIAL_DISPATCHED, 50.0),
        make_trial(6, 16, ZBSO_TRIAL_MAB, ZBSO_TRIAL_SUCCEEDED, 60.0),
        make_trial(7, 8, ZBSO_TRIAL_MAB, ZBSO_TRIAL_SUCCEEDED, 70.0),
    };
    /* inserted out of order: listing must still be ascending */
    zbso_trial shuffled[7] = {tr[3], tr[0], tr[6], tr[1], tr[5], tr[2], tr[4]};
    put(st, &j, shuffled, 7, NULL, 0);
    zbso_trial other_tr = make_trial(8, 8, ZBSO_TRIAL_MAB, ZBSO_TRIAL_SUCCEEDED, 1.0);
    put(st, &other, &other_tr, 1, NULL, 0);

    for (int i = 0; i < 7; i++) {
        trial_arg ta = {.id = "t", .n = i + 1};
        assert_int_equal(store_exec(st, u_trial_get, &ta, &err), 0);
        assert_trial_equal(&ta.trial, &tr[i]);
    }
    trial_arg ta = {.id = "t", .n = 8};
    assert_int_equal(store_exec(st, u_trial_get, &ta, &err), ZBSO_ENOTFOUND);
    assert_non_null(strstr(err.msg, "8"));
    ta = (trial_arg){.id = "t", .trial = tr[2]};
    assert_int_equal(store_exec(st, u_trial_insert, &ta, &err), ZBSO_ECONFLICT);
    ta = (trial_arg){.id = "ghost", .trial = tr[0]};
    assert_int_equal(store_exec(st, u_trial_insert, &ta, &err), ZBSO_ENOTFOUND);
    ta = (trial_arg){.id = "t", .trial = make_trial(42, 8, 0, 0, 0.0)};
    assert_int_equal(store_exec(st, u_trial_update, &ta, &err), ZBSO_ENOTFOUND);

    /* update rewrites every field; a NaN metric survives */
    zbso_trial upd = make_trial(5, 1024, ZBSO_TRIAL_CONCURRENT, ZBSO_TRIAL_SUCCEEDED, 55.5);
    upd.metric = NAN;
    upd.converged = true;
    ta = (trial_arg){.id = "t", .trial = upd};
    assert_int_equal(store_exec(st, u_trial_update, &ta, &err), 0);
    ta = (trial_arg){.id = "t", .n = 5};
    assert_int_equal(store_exec(st, u_trial_get, &ta, &err), 0);
    assert_trial_equal(&ta.trial, &upd);
    ta = (trial_arg){.id = "t", .trial = tr[4]};
    assert_int_equal(store_exec(st, u_trial_update, &ta, &err), 0);

    int64_t got[LIST_MAX];
    size_t n;
    n = list(st, "t", (store_trial_query){0}, got);
    assert_numbers(got, n, (int64_t[]){1, 2, 3, 4, 5, 6, 7}, 7);
    n = list(st, "t", (store_trial_query){.type_mask = 1u << ZBSO_TRIAL_EXPLORATION}, got);
    assert_numbers(got, n, (int64_t[]){1, 2}, 2);
    n = list(st, "t", (store_trial_query){.type_mask = 1u << ZBSO_TRIAL_EXPLORATION |
                                                        1u << ZBSO_TRIAL_CONCURRENT}, got);
    assert_numbers(got, n, (int64_t[]){1, 2, 3}, 3);
    n = list(st, "t", (store_trial_query){.status_mask = 1u << ZBSO_TRIAL_SUCCEEDED}, got);
    assert_numbers(got, n, (int64_t[]){1, 3, 4, 6, 7}, 5);
    n = list(st, "t", (store_trial_query){.status_mask = 1u << ZBSO_TRIAL_DISPATCHED |
                                                          1u << ZBSO_TRIAL_FAILED}, got);
    assert_numbers(got, n, (int64_t[]){2, 5}, 2);
    n = list(st, "t", (store_trial_query){.batch_size = 8}, got);
    assert_numbers(got, n, (int64_t[]){1, 3, 5, 7}, 4);
    n = list(st, "t", (store_trial_query){.batch_size = 512}, got);
    assert_int_equal(n, 0);
    n = list(st, "t", (store_trial_query){.last_n = 3}, got);
    assert_numbers(got, n, (int64_t[]){5, 6, 7}, 3);
    n = list(st, "t", (store_trial_query){.last_n = 100}, got);
    assert_numbers(got, n, (int64_t[]){1, 2, 3, 4, 5, 6, 7}, 7);
    n = list(st, "t", (store_trial_query){.type_mask = 1u << ZBSO_TRIAL_MAB,
                                          .status_mask = 1u << ZBSO_TRIAL_SUCCEEDED,
                                          .batch_size = 16, .last_n = 1}, got);
    assert_numbers(got, n, (int64_t[]){6}, 1);
    n = list(st, "t", (store_trial_query){.status_mask = 1u << ZBSO_TRIAL_SUCCEEDED,
                                          .last_n = 2}, got);
    assert_numbers(got, n, (int64_t[]){6, 7}, 2);
    n = list(st, "ghost", (store_trial_query){0}, got);
    assert_int_equal(n, 0);
    n = list(st, "other", (store_trial_query){0}, got);
    assert_numbers(got, n, (int64_t[]){8}, 1);

    list_arg la = {.id = "t", .stop_after = 2};
    assert_int_equal(store_exec(st, u_list, &la, &err), 99);
    assert_int_equal(la.n, 2);
    store_close(st);
}

typedef struct stale_arg {
    const char *id;
    int64_t n;
} stale_arg;

static int u_stale(store_txn *t, void *argp, zbso_err *err)
{
    stale_arg *a = argp;
    return store_trials_fail_stale(t, a->id, 250.0, 1000.0, &a->n, err);
}

static void test_trials_fail_stale(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job j, other;
    make_job(&j, "s");
    make_job(&other, "s2");
    zbso_trial tr[5] = {
        make_trial(1, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_DISPATCHED, 100.0),
        make_trial(2, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_DISPATCHED, 249.0),
        make_trial(3, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_DISPATCHED, 250.0),
        make_trial(4, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_SUCCEEDED, 50.0),
        make_trial(5, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_DISPATCHED, 300.0),
    };
    put(st, &j, tr, 5, NULL, 0);
    put(st, &other, tr, 1, NULL, 0);
    stale_arg sa = {.id = "s", .n = -1};
    assert_int_equal(store_exec(st, u_stale, &sa, &err), 0);
    assert_int_equal(sa.n, 2);
    for (int i = 0; i < 5; i++) {
        trial_arg ta = {.id = "s", .n = i + 1};
        assert_int_equal(store_exec(st, u_trial_get, &ta, &err), 0);
        zbso_trial want = tr[i];
        if (i < 2) {
            want.status = ZBSO_TRIAL_FAILED;
            want.end_time = 1000.0;
            want.stop_reason = ZBSO_STOP_LEASE_EXPIRED;
        }
        assert_trial_equal(&ta.trial, &want);
    }
    trial_arg ta = {.id = "s2", .n = 1};
    assert_int_equal(store_exec(st, u_trial_get, &ta, &err), 0);
    assert_trial_equal(&ta.trial, &tr[0]);
    assert_int_equal(store_exec(st, u_stale, &sa, &err), 0);
    assert_int_equal(sa.n, 0);
    sa.id = "ghost";
    assert_int_equal(store_exec(st, u_stale, &sa, &err), 0);
    assert_int_equal(sa.n, 0);
    store_close(st);
}

static void test_arms(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job j;
    make_job(&j, "m");
    zbso_arm in[4] = {{64, 3.5, 0.5, 2}, {16, -1.25, 0.0, 0}, {32, 7.0, INFINITY, 9},
                      {16, 2.25, 4.0, 1}}; /* the last replaces the second */
    put(st, &j, NULL, 0, in, 4);
    arms_arg aa = {.id = "m", .cap = 8};
    assert_int_equal(store_exec(st, u_arms_get, &aa, &err), 0);
    assert_int_equal(aa.n, 3);
    const zbso_arm want[3] = {in[3], in[2], in[0]};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(aa.arms[i].batch_size, want[i].batch_size);
        assert_true(aa.arms[i].param_mean == want[i].param_mean);
        assert_true(aa.arms[i].param_precision == want[i].param_precision);
        assert_int_equal(aa.arms[i].num_observations, want[i].num_observations);
    }
    assert_true(isinf(aa.arms[1].param_precision) && aa.arms[1].param_precision > 0);
    aa.cap = 2;
    assert_int_equal(store_exec(st, u_arms_get, &aa, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "m"));
    assert_int_equal(store_exec(st, u_arm_put, &in[0], &err), ZBSO_ENOTFOUND);
    aa = (arms_arg){.id = "ghost", .cap = 8};
    assert_int_equal(store_exec(st, u_arms_get, &aa, &err), 0);
    assert_int_equal(aa.n, 0);
    store_close(st);
}

/* Request keys: trial_by_key finds the trial inserted with a key, per job; a key given
 * again moves to the new trial; updates keep it; a key over STORE_KEY_MAX is refused;
 * deleting the job drops its keys; read units may look keys up. */
static void test_request_keys(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job j, other;
    char long_key[STORE_KEY_MAX + 2];
    make_job(&j, "k");
    make_job(&other, "k-other");
    put(st, &j, NULL, 0, NULL, 0);
    put(st, &other, NULL, 0, NULL, 0);
    const char *keys[] = {"a", NULL, "b"};
    for (int i = 0; i < 3; i++) {
        trial_arg ta = {.id = "k", .key = keys[i],
                        .trial = make_trial(i + 1, 8, ZBSO_TRIAL_MAB, ZBSO_TRIAL_DISPATCHED,
                                            10.0 * (i + 1))};
        assert_int_equal(store_exec(st, u_trial_insert, &ta, &err), 0);
    }
    trial_arg ta = {.id = "k-other", .key = "a",
                    .trial = make_trial(1, 16, ZBSO_TRIAL_MAB, ZBSO_TRIAL_DISPATCHED, 5.0)};
    assert_int_equal(store_exec(st, u_trial_insert, &ta, &err), 0);

    ta = (trial_arg){.id = "k", .key = "a"};
    assert_int_equal(store_exec(st, u_trial_by_key, &ta, &err), 0);
    assert_int_equal(ta.trial.trial_number, 1);
    assert_true(ta.trial.start_time == 1001.0);
    ta = (trial_arg){.id = "k", .key = "b"};
    assert_int_equal(store_exec_read(st, u_trial_by_key, &ta, &err), 0);
    assert_int_equal(ta.trial.trial_number, 3);
    ta = (trial_arg){.id = "k-other", .key = "a"};
    assert_int_equal(store_exec(st, u_trial_by_key, &ta, &err), 0);
    assert_int_equal(ta.trial.trial_number, 1);
    assert_int_equal(ta.trial.batch_size, 16);
    ta = (trial_arg){.id = "k", .key = "c"};
    assert_int_equal(store_exec(st, u_trial_by_key, &ta, &err), ZBSO_ENOTFOUND);
    ta = (trial_arg){.id = "ghost", .key = "a"};
    assert_int_equal(store_exec(st, u_trial_by_key, &ta, &err), ZBSO_ENOTFOUND);

    /* "a" again: it moves to trial 4; trial 1 stays */
    ta = (trial_arg){.id = "k", .key = "a",
                     .trial = make_trial(4, 8, ZBSO_TRIAL_MAB, ZBSO_TRIAL_DISPATCHED, 40.0)};
    assert_int_equal(store_exec(st, u_trial_insert, &ta, &err), 0);
    ta = (trial_arg){.id = "k", .key = "a"};
    assert_int_equal(store_exec(st, u_trial_by_key, &ta, &err), 0);
    assert_int_equal(ta.trial.trial_number, 4);
    ta = (trial_arg){.id = "k", .n = 1};
    assert_int_equal(store_exec(st, u_trial_get, &ta, &err), 0);
    /* an update keeps the key */
    ta = (trial_arg){.id = "k", .trial = make_trial(4, 8, ZBSO_TRIAL_MAB,
                                                    ZBSO_TRIAL_SUCCEEDED, 40.0)};
    assert_int_equal(store_exec(st, u_trial_update, &ta, &err), 0);
    ta = (trial_arg){.id = "k", .key = "a"};
    assert_int_equal(store_exec(st, u_trial_by_key, &ta, &err), 0);
    assert_int_equal(ta.trial.trial_number, 4);
    assert_int_equal(ta.trial.status, ZBSO_TRIAL_SUCCEEDED);

    /* STORE_KEY_MAX bytes are a key; one more is refused before the database */
    memset(long_key, 'x', sizeof long_key - 1);
    long_key[STORE_KEY_MAX] = '\0';
    ta = (trial_arg){.id = "k", .key = long_key,
                     .trial = make_trial(5, 8, ZBSO_TRIAL_MAB, ZBSO_TRIAL_DISPATCHED, 50.0)};
    assert_int_equal(store_exec(st, u_trial_insert, &ta, &err), 0);
    assert_int_equal(store_exec(st, u_trial_by_key, &ta, &err), 0);
    assert_int_equal(ta.trial.trial_number, 5);
    long_key[STORE_KEY_MAX] = 'x';
    long_key[STORE_KEY_MAX + 1] = '\0';
    ta = (trial_arg){.id = "k", .key = long_key,
                     .trial = make_trial(6, 8, ZBSO_TRIAL_MAB, ZBSO_TRIAL_DISPATCHED, 60.0)};
    assert_int_equal(store_exec(st, u_trial_insert, &ta, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "longer than 255"));
    assert_int_equal(store_exec(st, u_trial_by_key, &ta, &err), ZBSO_EINVAL);

    /* deleting the job drops its keys */
    assert_int_equal(store_exec(st, u_job_delete, "k", &err), 0);
    put(st, &j, NULL, 0, NULL, 0);
    ta = (trial_arg){.id = "k", .key = "a"};
    assert_int_equal(store_exec(st, u_trial_by_key, &ta, &err), ZBSO_ENOTFOUND);
    store_close(st);
}

/* A unit that changes everything it can, then fails: none of it may remain. */
static int u_change_then_fail(store_txn *t, void *argp, zbso_err *err)
{
    zbso_job j, fresh;
    int rc = store_job_get(t, "r", true, &j, err);
    if (rc < 0)
        return rc;
    j.num_trials = 1000;
    j.stage = ZBSO_STAGE_MAB;
    zbso_trial tr = make_trial(9, 8, ZBSO_TRIAL_MAB, ZBSO_TRIAL_DISPATCHED, 1.0);
    zbso_trial upd = make_trial(1, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_FAILED, 5.0);
    zbso_arm arm = {8, 9.0, 9.0, 9}, arm2 = {32, 1.0, 1.0, 1};
    int64_t n;
    make_job(&fresh, "r-new");
    zbso_trial tr2 = make_trial(10, 8, ZBSO_TRIAL_MAB, ZBSO_TRIAL_DISPATCHED, 1.0);
    if ((rc = store_job_update(t, &j, err)) < 0 ||
        (rc = store_trial_insert(t, "r", &tr, "k1", err)) < 0 ||
        (rc = store_trial_insert(t, "r", &tr2, "k-new", err)) < 0 ||
        (rc = store_trial_update(t, "r", &upd, err)) < 0 ||
        (rc = store_trials_fail_stale(t, "r", 1e9, 5.0, &n, err)) < 0 ||
        (rc = store_arm_put(t, "r", &arm, err)) < 0 ||
        (rc = store_arm_put(t, "r", &arm2, err)) < 0 ||
        (rc = store_job_insert(t, &fresh, err)) < 0 || (rc = store_job_delete(t, "r2", err)) < 0)
        return rc;
    return err_set(err, ZBSO_ECONFLICT, "deliberate failure after changes");
}

static void test_failed_unit_leaves_no_trace(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job j, j2;
    make_job(&j, "r");
    make_job(&j2, "r2");
    zbso_trial tr[2] = {make_trial(1, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_SUCCEEDED, 1.0),
                        make_trial(2, 16, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_DISPATCHED, 2.0)};
    zbso_arm arm = {8, 1.0, 2.0, 3};
    put(st, &j, tr, 2, &arm, 1);
    put(st, &j2, tr, 1, NULL, 0);
    trial_arg keyed = {.id = "r", .trial = make_trial(3, 8, ZBSO_TRIAL_MAB,
                                                     ZBSO_TRIAL_DISPATCHED, 3.0), .key = "k1"};
    assert_int_equal(store_exec(st, u_trial_insert, &keyed, &err), 0);
    assert_int_equal(store_exec(st, u_change_then_fail, NULL, &err), ZBSO_ECONFLICT);
    assert_string_equal(err.msg, "deliberate failure after changes");

    get_arg g = {.id = "r"};
    assert_int_equal(store_exec(st, u_job_get, &g, &err), 0);
    assert_job_equal(&g.job, &j);
    g.id = "r2";
    assert_int_equal(store_exec(st, u_job_get, &g, &err), 0);
    g.id = "r-new";
    assert_int_equal(store_exec(st, u_job_get, &g, &err), ZBSO_ENOTFOUND);
    int64_t got[LIST_MAX];
    size_t n = list(st, "r", (store_trial_query){0}, got);
    assert_numbers(got, n, (int64_t[]){1, 2, 3}, 3);
    /* the key went back to trial 3, and the new key is gone */
    trial_arg kq = {.id = "r", .key = "k1"};
    assert_int_equal(store_exec(st, u_trial_by_key, &kq, &err), 0);
    assert_int_equal(kq.trial.trial_number, 3);
    kq.key = "k-new";
    assert_int_equal(store_exec(st, u_trial_by_key, &kq, &err), ZBSO_ENOTFOUND);
    for (int i = 0; i < 2; i++) {
        trial_arg ta = {.id = "r", .n = i + 1};
        assert_int_equal(store_exec(st, u_trial_get, &ta, &err), 0);
        assert_trial_equal(&ta.trial, &tr[i]);
    }
    n = list(st, "r2", (store_trial_query){0}, got);
    assert_numbers(got, n, (int64_t[]){1}, 1);
    arms_arg aa = {.id = "r", .cap = 8};
    assert_int_equal(store_exec(st, u_arms_get, &aa, &err), 0);
    assert_int_equal(aa.n, 1);
    assert_true(aa.arms[0].param_mean == 1.0 && aa.arms[0].num_observations == 3);
    store_close(st);
}

static int u_noop_read(store_txn *t, void *argp, zbso_err *err)
{
    zbso_job j;
    return store_job_get(t, "none", false, &j, err) == ZBSO_ENOTFOUND ? 0 : -1;
}

static int u_nested(store_txn *t, void *argp, zbso_err *err)
{
    return store_exec(argp, u_noop_read, NULL, err);
}

static int u_nested_read(store_txn *t, void *argp, zbso_err *err)
{
    return store_exec_read(argp, u_noop_read, NULL, err);
}

/* Every nesting of exec and exec_read would deadlock or see through its own snapshot. */
static void test_nested_exec_refused(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    assert_int_equal(store_exec(st, u_nested, st, &err), ZBSO_EINTERNAL);
    assert_non_null(strstr(err.msg, "inside a unit of work"));
    assert_int_equal(store_exec(st, u_nested_read, st, &err), ZBSO_EINTERNAL);
    assert_non_null(strstr(err.msg, "inside a unit of work"));
    assert_int_equal(store_exec_read(st, u_nested, st, &err), ZBSO_EINTERNAL);
    assert_non_null(strstr(err.msg, "inside a unit of work"));
    assert_int_equal(store_exec_read(st, u_nested_read, st, &err), ZBSO_EINTERNAL);
    assert_non_null(strstr(err.msg, "inside a unit of work"));
    assert_int_equal(store_exec(st, u_noop_read, NULL, &err), 0);
    assert_int_equal(store_exec_read(st, u_noop_read, NULL, &err), 0);
    store_close(st);
}

/* ---- read-only units ---- */

#define N_WRITE_OPS 7

typedef struct ro_arg {
    int rcs[N_WRITE_OPS];        /* each write operation's return */
    char msgs[N_WRITE_OPS][ZBSO_ERR_MSG_MAX];
    zbso_job job;                /* "ro" as the unit read it after the attempts */
    zbso_trial trial;            /* its trial 1, likewise */
} ro_arg;

/* Tries every write operation on job "ro" (each would succeed in exec), then reads. */
static int u_read_tries_writes(store_txn *t, void *argp, zbso_err *err)
{
    ro_arg *a = argp;
    zbso_job j, fresh;
    zbso_trial tr = make_trial(9, 8, ZBSO_TRIAL_MAB, ZBSO_TRIAL_DISPATCHED, 1.0);
    zbso_trial upd = make_trial(1, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_FAILED, 5.0);
    zbso_arm arm = {8, 9.0, 9.0, 9};
    int64_t n = -1;
    int rc = store_job_get(t, "ro", false, &j, err);
    if (rc < 0)
        return rc;
    j.num_trials = 1000;
    make_job(&fresh, "ro-new");
    for (int i = 0; i < N_WRITE_OPS; i++) {
        zbso_err e = {0};
        switch (i) {
        case 0: a->rcs[i] = store_job_insert(t, &fresh, &e); break;
        case 1: a->rcs[i] = store_job_update(t, &j, &e); break;
        case 2: a->rcs[i] = store_job_delete(t, "ro", &e); break;
        case 3: a->rcs[i] = store_trial_insert(t, "ro", &tr, "k", &e); break;
        case 4: a->rcs[i] = store_trial_update(t, "ro", &upd, &e); break;
        case 5: a->rcs[i] = store_trials_fail_stale(t, "ro", 1e9, 5.0, &n, &e); break;
        default: a->rcs[i] = store_arm_put(t, "ro", &arm, &e); break;
        }
        snprintf(a->msgs[i], sizeof a->msgs[i], "%s", e.msg);
    }
    if (n != 0)
        return err_set(err, ZBSO_EINVAL, "trials_fail_stale left n_failed at %lld", (long long)n);
    if ((rc = store_job_get(t, "ro", false, &a->job, err)) < 0)
        return rc;
    if ((rc = store_trial_by_key(t, "ro", "k", &tr, err)) != ZBSO_ENOTFOUND)
        return err_set(err, ZBSO_EINVAL, "trial_by_key after a refused insert: %d", rc);
    return store_trial_get(t, "ro", 1, &a->trial, err);
}

static void test_read_unit_refuses_writes(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job j;
    make_job(&j, "ro");
    zbso_trial tr[2] = {make_trial(1, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_DISPATCHED, 1.0),
                        make_trial(2, 16, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_DISPATCHED, 2.0)};
    zbso_arm arm = {8, 1.0, 2.0, 3};
    put(st, &j, tr, 2, &arm, 1);

    ro_arg a;
    memset(&a, 0, sizeof a);
    assert_int_equal(store_exec_read(st, u_read_tries_writes, &a, &err), 0);
    for (int i = 0; i < N_WRITE_OPS; i++) {
        assert_int_equal(a.rcs[i], ZBSO_EINTERNAL);
        assert_non_null(strstr(a.msgs[i], "read-only unit of work"));
    }
    assert_job_equal(&a.job, &j);
    assert_trial_equal(&a.trial, &tr[0]);

    /* Nothing changed, as a later unit of work sees. */
    get_arg g = {.id = "ro"};
    assert_int_equal(store_exec(st, u_job_get, &g, &err), 0);
    assert_job_equal(&g.job, &j);
    g.id = "ro-new";
    assert_int_equal(store_exec(st, u_job_get, &g, &err), ZBSO_ENOTFOUND);
    int64_t got[LIST_MAX];
    size_t n = list(st, "ro", (store_trial_query){0}, got);
    assert_numbers(got, n, (int64_t[]){1, 2}, 2);
    for (int i = 0; i < 2; i++) {
        trial_arg ta = {.id = "ro", .n = i + 1};
        assert_int_equal(store_exec(st, u_trial_get, &ta, &err), 0);
        assert_trial_equal(&ta.trial, &tr[i]);
    }
    arms_arg aa = {.id = "ro", .cap = 8};
    assert_int_equal(store_exec(st, u_arms_get, &aa, &err), 0);
    assert_int_equal(aa.n, 1);
    assert_true(aa.arms[0].param_mean == 1.0 && aa.arms[0].num_observations == 3);
    store_close(st);
}

/* A read unit sees what committed units wrote and nothing of one that failed; the
 * failure of fn is returned as it is. */
static void test_read_unit_sees_committed(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job j, j2;
    make_job(&j, "r");
    make_job(&j2, "r2");
    zbso_trial tr = make_trial(1, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_SUCCEEDED, 1.0);
    get_arg g = {.id = "r"};
    assert_int_equal(store_exec_read(st, u_job_get, &g, &err), ZBSO_ENOTFOUND);
    put(st, &j, &tr, 1, NULL, 0);
    put(st, &j2, NULL, 0, NULL, 0);
    assert_int_equal(store_exec_read(st, u_job_get, &g, &err), 0);
    assert_job_equal(&g.job, &j);

    j.num_trials = 77;
    assert_int_equal(store_exec(st, u_job_update, &j, &err), 0);
    assert_int_equal(store_exec_read(st, u_job_get, &g, &err), 0);
    assert_int_equal(g.job.num_trials, 77);

    assert_int_equal(store_exec(st, u_change_then_fail, NULL, &err), ZBSO_ECONFLICT);
    assert_int_equal(store_exec_read(st, u_job_get, &g, &err), 0);
    assert_job_equal(&g.job, &j);
    g.id = "r2";
    assert_int_equal(store_exec_read(st, u_job_get, &g, &err), 0);
    g.id = "r-new";
    assert_int_equal(store_exec_read(st, u_job_get, &g, &err), ZBSO_ENOTFOUND);
    trial_arg ta = {.id = "r", .n = 9};
    assert_int_equal(store_exec_read(st, u_trial_get, &ta, &err), ZBSO_ENOTFOUND);
    ta.n = 1;
    assert_int_equal(store_exec_read(st, u_trial_get, &ta, &err), 0);
    assert_trial_equal(&ta.trial, &tr);
    list_arg la = {.id = "r"};
    assert_int_equal(store_exec_read(st, u_list, &la, &err), 0);
    assert_numbers(la.numbers, la.n, (int64_t[]){1}, 1);
    arms_arg aa = {.id = "r", .cap = 8};
    assert_int_equal(store_exec_read(st, u_arms_get, &aa, &err), 0);
    assert_int_equal(aa.n, 0);
    store_close(st);
}

/* ---- concurrency: many threads, grouped commits, some units failing ---- */

#define N_THREADS 8
#define N_UNITS 40

typedef struct conc_arg {
    store *st;
    int thread;
    int ok, failed, wrong;
} conc_arg;

typedef struct conc_unit {
    int thread, i;
} conc_unit;

/* Takes the next trial number from the job, inserts the trial, stores the counter; every
 * third unit then fails after all that, so its trial and counter must vanish. */
static int u_conc(store_txn *t, void *argp, zbso_err *err)
{
    conc_unit *u = argp;
    zbso_job j;
    int rc = store_job_get(t, "conc", true, &j, err);
    if (rc < 0)
        return rc;
    j.num_trials++;
    zbso_trial tr = make_trial(j.num_trials, 8 << (u->thread % 3), ZBSO_TRIAL_MAB,
                               ZBSO_TRIAL_DISPATCHED, (double)u->thread);
    if ((rc = store_trial_insert(t, "conc", &tr, NULL, err)) < 0 ||
        (rc = store_job_update(t, &j, err)) < 0)
        return rc;
    if ((u->thread + u->i) % 3 == 0)
        return err_set(err, ZBSO_EINVAL, "unit %d/%d fails", u->thread, u->i);
    return 0;
}

static void *conc_main(void *p)
{
    conc_arg *a = p;
    for (int i = 0; i < N_UNITS; i++) {
        conc_unit u = {a->thread, i};
        zbso_err err = {0};
        char want[64];
        int rc = store_exec(a->st, u_conc, &u, &err);
        snprintf(want, sizeof want, "unit %d/%d fails", a->thread, i);
        if (rc == 0)
            a->ok++;
        else if (rc == ZBSO_EINVAL && strcmp(err.msg, want) == 0 && (a->thread + i) % 3 == 0)
            a->failed++;
        else
            a->wrong++;
    }
    return NULL;
}

static void test_concurrent_units(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job j;
    make_job(&j, "conc");
    j.num_trials = 0;
    put(st, &j, NULL, 0, NULL, 0);
    pthread_t th[N_THREADS];
    conc_arg args[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        args[i] = (conc_arg){.st = st, .thread = i};
        assert_int_equal(pthread_create(&th[i], NULL, conc_main, &args[i]), 0);
    }
    int ok = 0, failed = 0, wrong = 0, want_failed = 0;
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(th[i], NULL);
        ok += args[i].ok;
        failed += args[i].failed;
        wrong += args[i].wrong;
        for (int k = 0; k < N_UNITS; k++)
            want_failed += (i + k) % 3 == 0;
    }
    assert_int_equal(wrong, 0);
    assert_int_equal(failed, want_failed);
    assert_int_equal(ok, N_THREADS * N_UNITS - want_failed);
    get_arg g = {.id = "conc"};
    assert_int_equal(store_exec(st, u_job_get, &g, &err), 0);
    assert_int_equal(g.job.num_trials, ok);
    list_arg la = {.id = "conc"};
    assert_int_equal(store_exec(st, u_list, &la, &err), -100); /* more than LIST_MAX rows */
    store_trial_query q = {.last_n = LIST_MAX};
    int64_t got[LIST_MAX];
    size_t n = list(st, "conc", q, got);
    assert_int_equal(n, LIST_MAX);
    for (size_t i = 0; i < n; i++) /* the numbers are dense: no gaps left by rollbacks */
        assert_int_equal(got[i], ok - LIST_MAX + 1 + (int64_t)i);
    store_close(st);
}

/* ---- read units alongside writers ---- */

#define N_READERS 24             /* more than sqlite's pool of readers */
#define N_READS 60

typedef struct snap_arg {
    store *st;
    int reads, torn, failed;
} snap_arg;

typedef struct snap {
    int64_t num_trials, n_listed;
} snap;

static int count_cb(void *ctx, const zbso_trial *tr)
{
    ((snap *)ctx)->n_listed++;
    return 0;
}

/* Reads job "conc" and counts its trials: within one snapshot the two always agree,
 * since every u_conc unit that commits adds one trial and one to num_trials. */
static int u_snap(store_txn *t, void *argp, zbso_err *err)
{
    snap *s = argp;
    zbso_job j;
    int rc = store_job_get(t, "conc", false, &j, err);
    if (rc < 0)
        return rc;
    s->num_trials = j.num_trials;
    s->n_listed = 0;
    return store_trials_list(t, "conc", &(store_trial_query){0}, count_cb, s, err);
}

static void *snap_main(void *p)
{
    snap_arg *a = p;
    for (int i = 0; i < N_READS; i++) {
        snap s = {0};
        zbso_err err = {0};
        if (store_exec_read(a->st, u_snap, &s, &err) != 0)
            a->failed++;
        else if (s.num_trials != s.n_listed)
            a->torn++;
        a->reads++;
    }
    return NULL;
}

static void test_reads_during_writes(void **state)
{
    store *st = open_fresh();
    zbso_job j;
    make_job(&j, "conc");
    j.num_trials = 0;
    put(st, &j, NULL, 0, NULL, 0);
    pthread_t wth[N_THREADS], rth[N_READERS];
    conc_arg wargs[N_THREADS];
    snap_arg rargs[N_READERS];
    for (int i = 0; i < N_THREADS; i++) {
        wargs[i] = (conc_arg){.st = st, .thread = i};
        assert_int_equal(pthread_create(&wth[i], NULL, conc_main, &wargs[i]), 0);
    }
    for (int i = 0; i < N_READERS; i++) {
        rargs[i] = (snap_arg){.st = st};
        assert_int_equal(pthread_create(&rth[i], NULL, snap_main, &rargs[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(wth[i], NULL);
        assert_int_equal(wargs[i].wrong, 0);
    }
    for (int i = 0; i < N_READERS; i++) {
        pthread_join(rth[i], NULL);
        assert_int_equal(rargs[i].reads, N_READS);
        assert_int_equal(rargs[i].failed, 0);
        assert_int_equal(rargs[i].torn, 0);
    }
    store_close(st);
}

/* ---- sqlite only ---- */

typedef struct iso_arg {
    store *st;
    int64_t first, second;       /* num_trials read before and after the write */
    int write_rc;
} iso_arg;

static void *iso_writer(void *p)
{
    iso_arg *a = p;
    zbso_job j;
    zbso_err err = {0};
    make_job(&j, "iso");
    j.num_trials = 42;
    a->write_rc = store_exec(a->st, u_job_update, &j, &err);
    return NULL;
}

/* Reads "iso", has another thread commit a change to it (store_exec returns once it is
 * durable), reads again: the unit keeps its snapshot. */
static int u_iso(store_txn *t, void *argp, zbso_err *err)
{
    iso_arg *a = argp;
    zbso_job j;
    pthread_t th;
    int rc = store_job_get(t, "iso", false, &j, err);
    if (rc < 0)
        return rc;
    a->first = j.num_trials;
    if (pthread_create(&th, NULL, iso_writer, a) != 0)
        return err_set(err, ZBSO_EINTERNAL, "pthread_create failed");
    pthread_join(th, NULL);
    if ((rc = store_job_get(t, "iso", false, &j, err)) < 0)
        return rc;
    a->second = j.num_trials;
    return 0;
}

static void test_read_snapshot(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job j;
    make_job(&j, "iso");
    put(st, &j, NULL, 0, NULL, 0);
    iso_arg a = {.st = st};
    assert_int_equal(store_exec_read(st, u_iso, &a, &err), 0);
    assert_int_equal(a.write_rc, 0);
    assert_int_equal(a.first, 3);
    assert_int_equal(a.second, 3);
    get_arg g = {.id = "iso"};
    assert_int_equal(store_exec_read(st, u_job_get, &g, &err), 0);
    assert_int_equal(g.job.num_trials, 42);
    store_close(st);
}

/* ---- inspection: job listing, trial pages, curve points, counts ---- */

#define JL_MAX 24
typedef struct jl_arg {
    store_job_query q;
    int stop_at;                 /* > 0: the callback returns 5 at this row */
    char ids[JL_MAX][32];
    zbso_job jobs[JL_MAX];
    int n;
} jl_arg;

static int jl_cb(void *ctx, const zbso_job *job)
{
    jl_arg *a = ctx;
    if (a->n == JL_MAX)
        return -100;
    snprintf(a->ids[a->n], sizeof a->ids[0], "%.31s", job->spec.job_id);
    a->jobs[a->n++] = *job;
    return a->stop_at > 0 && a->n == a->stop_at ? 5 : 0;
}

static int u_jobs_list(store_txn *t, void *argp, zbso_err *err)
{
    jl_arg *a = argp;
    a->n = 0;
    return store_jobs_list(t, &a->q, jl_cb, a, err);
}

/* Lists jobs matching q (read-only unit) and checks the ids against want (n_want). */
static void assert_jobs(store *st, store_job_query q, const char *const *want, int n_want)
{
    jl_arg a = {.q = q};
    zbso_err err = {0};
    int rc = store_exec_read(st, u_jobs_list, &a, &err);
    if (rc != 0)
        fail_msg("jobs_list: %d %s", rc, err.msg);
    for (int i = 0; i < a.n && i < n_want; i++)
        if (strcmp(a.ids[i], want[i]) != 0)
            fail_msg("jobs_list row %d: \"%s\", want \"%s\"", i, a.ids[i], want[i]);
    assert_int_equal(a.n, n_want);
}

/* Ids in bytewise order: upper case before lower, '%' and '_' (LIKE's wildcards) as
 * themselves, DEL (0x7f) and a two-byte UTF-8 letter (0xC3 0xA9) after ASCII letters, and
 * the characters around the ends of a prefix's range on PostgreSQL: U+D7FF (the next
 * character is U+E000) and U+10FFFF (none is next). A collation of a locale would put "B"
 * between "ab" and "b", and "é" next to "e". */
static const char *const jl_ids[] = {
    "B", "a", "a%b", "a_c", "ab", "abc", "axb", "b", "e", "f", "\x7f", "\xc3\xa9",
    "\xc3\xa9t\xc3\xa9", "\xed\x9f\xbf", "\xed\x9f\xbfz", "\xee\x80\x80",
    "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf" "a"};
#define JL_N (sizeof jl_ids / sizeof jl_ids[0])

/* open_fresh, but on PostgreSQL a database whose default collation is ICU's en-US, and on
 * MariaDB one whose default is utf8mb4_unicode_ci, in which "B" sorts after "a": the store
 * must ask for byte order itself. */
static store *open_fresh_collated(void)
{
    char name[32], sql[256];
    if (g_my) {
        snprintf(name, sizeof name, "contract_%d", g_pg_dbs++);
        snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s; CREATE DATABASE %s"
                 " CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci", name, name);
        assert_int_equal(my_sql(NULL, sql), 0);
        /* 'B' sorts after 'a' in the database's collation, and a table made without
         * naming one gets it */
        assert_int_equal(my_query_int(name, "SELECT @@collation_database ="
                                            " 'utf8mb4_unicode_ci'"), 1);
        assert_int_equal(my_query_int(name, "SELECT STRCMP('B' COLLATE utf8mb4_unicode_ci,"
                                            " 'a')"), 1);
        my_url_of(name, g_url, sizeof g_url);
        store_options opt = {.create_if_empty = true};
        zbso_err err = {0};
        store *st = NULL;
        if (store_open(g_url, &opt, &st, &err) != 0)
            fail_msg("store_open(%s): %s", g_url, err.msg);
        return st;
    }
    if (!g_pg)
        return open_fresh();
    snprintf(name, sizeof name, "contract_%d", g_pg_dbs++);
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
    assert_int_equal(pg_sql("zbso", sql), 0);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s TEMPLATE template0 LOCALE_PROVIDER icu"
             " ICU_LOCALE 'en-US' LOCALE 'C'", name);
    assert_int_equal(pg_sql("zbso", sql), 0);
    /* a division by zero unless 'B' sorts after 'a' here */
    assert_int_equal(pg_sql(name, "SELECT 1 / (CASE WHEN 'B' > 'a' THEN 1 ELSE 0 END)"), 0);
    pg_url_of(name, g_url, sizeof g_url);
    store_options opt = {.create_if_empty = true};
    zbso_err err = {0};
    store *st = NULL;
    if (store_open(g_url, &opt, &st, &err) != 0)
        fail_msg("store_open(%s): %s", g_url, err.msg);
    return st;
}

static void test_jobs_list(void **state)
{
    store *st = open_fresh_collated();
    zbso_err err = {0};
    /* inserted in reverse, so the store must order them */
    for (size_t i = JL_N; i-- > 0;) {
        zbso_job j;
        make_job(&j, jl_ids[i]);
        j.updated_at = 1700000100.5 + (double)i;
        put(st, &j, NULL, 0, NULL, 0);
    }
    assert_jobs(st, (store_job_query){0}, jl_ids, JL_N);
    assert_jobs(st, (store_job_query){.prefix = "", .after = ""}, jl_ids, JL_N);
    /* every field comes back, updated_at included */
    jl_arg a = {.q = {.prefix = "ab"}};
    assert_int_equal(store_exec(st, u_jobs_list, &a, &err), 0);
    assert_int_equal(a.n, 2);
    zbso_job want;
    make_job(&want, "ab");
    want.updated_at = 1700000100.5 + 4.0;
    assert_job_equal(&a.jobs[0], &want);

    assert_jobs(st, (store_job_query){.prefix = "a"}, jl_ids + 1, 6);
    assert_jobs(st, (store_job_query){.prefix = "a%"}, (const char *[]){"a%b"}, 1);
    assert_jobs(st, (store_job_query){.prefix = "a_"}, (const char *[]){"a_c"}, 1);
    assert_jobs(st, (store_job_query){.prefix = "A"}, NULL, 0);
    assert_jobs(st, (store_job_query){.prefix = "abcd"}, NULL, 0);
    assert_jobs(st, (store_job_query){.prefix = "\xc3\xa9"}, jl_ids + 11, 2);
    assert_jobs(st, (store_job_query){.prefix = "\x7f"}, jl_ids + 10, 1);
    assert_jobs(st, (store_job_query){.prefix = "\xc3"}, jl_ids + 11, 2);
    assert_jobs(st, (store_job_query){.prefix = "\xc3\xa9t"}, jl_ids + 12, 1);
    assert_jobs(st, (store_job_query){.prefix = "\xed\x9f\xbf"}, jl_ids + 13, 2);
    assert_jobs(st, (store_job_query){.prefix = "\xf4\x8f\xbf\xbf"}, jl_ids + 16, 2);
    assert_jobs(st, (store_job_query){.prefix = "\xf4\x8f\xbf\xbf" "a"}, jl_ids + 17, 1);
    assert_jobs(st, (store_job_query){.prefix = "\xf4\x8f", .limit = 1}, jl_ids + 16, 1);
    assert_jobs(st, (store_job_query){.prefix = "\xc3", .after = "\xc3\xa9", .limit = 1},
                jl_ids + 12, 1);
    assert_jobs(st, (store_job_query){.prefix = "\xc3", .after = "\xc3"}, jl_ids + 11, 2);
    /* pages: limit, then after = the last id of the page */
    assert_jobs(st, (store_job_query){.limit = 3}, jl_ids, 3);
    assert_jobs(st, (store_job_query){.after = "a%b", .limit = 3}, jl_ids + 3, 3);
    assert_jobs(st, (store_job_query){.after = "abc", .limit = 100}, jl_ids + 6, JL_N - 6);
    assert_jobs(st, (store_job_query){.after = "\xf4\x8f\xbf\xbf" "a"}, NULL, 0);
    assert_jobs(st, (store_job_query){.after = "\xc3\xa9t\xc3\xa9", .limit = 2},
                jl_ids + 13, 2);
    /* a cursor that is no job id: the ids above it */
    assert_jobs(st, (store_job_query){.after = "c"}, jl_ids + 8, JL_N - 8);
    assert_jobs(st, (store_job_query){.after = "\x01"}, jl_ids, JL_N);
    /* prefix and cursor together */
    assert_jobs(st, (store_job_query){.prefix = "a", .after = "a_c", .limit = 2},
                jl_ids + 4, 2);
    assert_jobs(st, (store_job_query){.prefix = "a", .after = "axb"}, NULL, 0);
    assert_jobs(st, (store_job_query){.prefix = "ab", .after = "a"}, jl_ids + 4, 2);
    assert_jobs(st, (store_job_query){.prefix = "a", .after = "b"}, NULL, 0);
    /* the callback stops the listing with its code */
    a = (jl_arg){.stop_at = 2};
    assert_int_equal(store_exec(st, u_jobs_list, &a, &err), 5);
    assert_int_equal(a.n, 2);
    store_close(st);
}

/* trials_list's page fields: after (a cursor), limit (the first rows), with last_n. */
static void test_trials_pages(void **state)
{
    store *st = open_fresh();
    zbso_job j;
    make_job(&j, "pages");
    zbso_trial tr[6];
    for (int i = 0; i < 6; i++)
        tr[i] = make_trial(i + 1, i % 2 ? 16 : 8, ZBSO_TRIAL_MAB,
                           i % 3 ? ZBSO_TRIAL_SUCCEEDED : ZBSO_TRIAL_DISPATCHED, 1.0);
    put(st, &j, tr, 6, NULL, 0);
    int64_t got[LIST_MAX];
    size_t n;
    n = list(st, "pages", (store_trial_query){.limit = 2}, got);
    assert_numbers(got, n, (int64_t[]){1, 2}, 2);
    n = list(st, "pages", (store_trial_query){.after = 2, .limit = 2}, got);
    assert_numbers(got, n, (int64_t[]){3, 4}, 2);
    n = list(st, "pages", (store_trial_query){.after = 4, .limit = 100}, got);
    assert_numbers(got, n, (int64_t[]){5, 6}, 2);
    n = list(st, "pages", (store_trial_query){.after = 6}, got);
    assert_int_equal(n, 0);
    n = list(st, "pages", (store_trial_query){.after = 100}, got);
    assert_int_equal(n, 0);
    /* after counts trial numbers, not matching rows */
    n = list(st, "pages", (store_trial_query){.batch_size = 16, .after = 2, .limit = 1}, got);
    assert_numbers(got, n, (int64_t[]){4}, 1);
    n = list(st, "pages", (store_trial_query){.status_mask = 1u << ZBSO_TRIAL_SUCCEEDED,
                                              .after = 3}, got);
    assert_numbers(got, n, (int64_t[]){5, 6}, 2);
    /* last_n first, then the first limit of those; after filters before last_n */
    n = list(st, "pages", (store_trial_query){.last_n = 4, .limit = 2}, got);
    assert_numbers(got, n, (int64_t[]){3, 4}, 2);
    n = list(st, "pages", (store_trial_query){.last_n = 4, .after = 4}, got);
    assert_numbers(got, n, (int64_t[]){5, 6}, 2);
    store_close(st);
}

#define PT_MAX 16
typedef struct pt_arg {
    const char *id;
    int64_t n;
    const zbso_curve_point *points;
    size_t np;
    zbso_curve_point got[PT_MAX];
    size_t n_got;
    int stop_at;
} pt_arg;

static int pt_cb(void *ctx, const zbso_curve_point *p)
{
    pt_arg *a = ctx;
    if (a->n_got == PT_MAX)
        return -100;
    a->got[a->n_got++] = *p;
    return a->stop_at > 0 && (int)a->n_got == a->stop_at ? 3 : 0;
}

static int u_reports_put(store_txn *t, void *argp, zbso_err *err)
{
    pt_arg *a = argp;
    return store_reports_put(t, a->id, a->n, a->points, a->np, err);
}

static int u_reports_list(store_txn *t, void *argp, zbso_err *err)
{
    pt_arg *a = argp;
    a->n_got = 0;
    return store_reports_list(t, a->id, a->n, pt_cb, a, err);
}

static void put_points(store *st, const char *id, int64_t n, const zbso_curve_point *p,
                       size_t np)
{
    pt_arg a = {.id = id, .n = n, .points = p, .np = np};
    zbso_err err = {0};
    int rc = store_exec(st, u_reports_put, &a, &err);
    if (rc != 0)
        fail_msg("reports_put %s/%lld: %d %s", id, (long long)n, rc, err.msg);
}

/* Checks the points of trial (id, n), listed in a read-only unit, against want. */
static void assert_points(store *st, const char *id, int64_t n, const zbso_curve_point *want,
                          size_t n_want)
{
    pt_arg a = {.id = id, .n = n};
    zbso_err err = {0};
    int rc = store_exec_read(st, u_reports_list, &a, &err);
    if (rc != 0)
        fail_msg("reports_list %s/%lld: %d %s", id, (long long)n, rc, err.msg);
    assert_int_equal(a.n_got, n_want);
    for (size_t i = 0; i < n_want; i++) {
        const zbso_curve_point *g = &a.got[i], *w = &want[i];
        assert_int_equal(g->epoch, w->epoch);
        assert_true(g->time == w->time && g->energy == w->energy);
        assert_true(g->metric == w->metric || (isnan(g->metric) && isnan(w->metric)));
        assert_true(g->received_at == w->received_at);
    }
}

static zbso_curve_point pt(int64_t epoch, double received_at)
{
    return (zbso_curve_point){epoch, 10.25 * (double)epoch + 0.125,
                              300.5 * (double)epoch + 1.0 / 3.0, 0.5 + 0.0625 * (double)epoch,
                              received_at};
}

/* A unit that stores points and then fails: none of them may remain. */
static int u_points_then_fail(store_txn *t, void *argp, zbso_err *err)
{
    zbso_curve_point p[2] = {pt(1, 9e9), pt(7, 9e9)};
    p[0].metric = -1.0;
    int rc = store_reports_put(t, "rp", 1, p, 2, err);
    if (rc == 0)
        rc = store_job_delete(t, "rp2", err);
    return rc < 0 ? rc : err_set(err, ZBSO_ECONFLICT, "deliberate failure");
}

static void test_reports_put_and_list(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job j, j2;
    make_job(&j, "rp");
    make_job(&j2, "rp2");
    zbso_trial tr[2] = {make_trial(1, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_DISPATCHED, 1.0),
                        make_trial(2, 16, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_DISPATCHED, 2.0)};
    put(st, &j, tr, 2, NULL, 0);
    put(st, &j2, tr, 1, NULL, 0);
    assert_points(st, "rp", 1, NULL, 0);

    /* out of order in; ascending by epoch out; a NaN metric survives */
    zbso_curve_point in[4] = {pt(2, 100.0), pt(0, 90.0), pt(3, 110.0), pt(1, 95.0)};
    in[3].metric = NAN;
    put_points(st, "rp", 1, in, 4);
    zbso_curve_point want[4] = {in[1], in[3], in[0], in[2]};
    assert_points(st, "rp", 1, want, 4);
    assert_points(st, "rp", 2, NULL, 0);
    assert_points(st, "rp2", 1, NULL, 0);

    /* a point received later replaces its epoch; one received earlier does not */
    zbso_curve_point later = pt(2, 200.0), earlier = pt(3, 50.0);
    later.metric = 0.99;
    earlier.metric = 0.01;
    zbso_curve_point two[2] = {later, earlier};
    put_points(st, "rp", 1, two, 2);
    want[2] = later;
    assert_points(st, "rp", 1, want, 4);
    /* an equal time replaces too (the newer report of the same instant) */
    zbso_curve_point same = pt(0, 90.0);
    same.energy = 1.5;
    put_points(st, "rp", 1, &same, 1);
    want[0] = same;
    assert_points(st, "rp", 1, want, 4);

    /* one epoch twice in one call: the later received wins, on a tie the later one */
    zbso_curve_point dup[4] = {pt(5, 300.0), pt(5, 301.0), pt(5, 250.0), pt(6, 400.0)};
    dup[0].metric = 1.0;
    dup[1].metric = 2.0;
    dup[2].metric = 3.0;
    dup[3].metric = 4.0;
    zbso_curve_point tie[2] = {pt(6, 400.0), pt(6, 400.0)};
    tie[0].metric = 5.0;
    tie[1].metric = 6.0;
    put_points(st, "rp", 2, dup, 4);
    put_points(st, "rp", 2, tie, 2);
    assert_points(st, "rp", 2, (zbso_curve_point[]){dup[1], tie[1]}, 2);

    /* points of an unknown trial or job are dropped without an error */
    put_points(st, "rp", 9, in, 4);
    put_points(st, "ghost", 1, in, 4);
    put_points(st, "rp", 1, NULL, 0);
    assert_points(st, "rp", 9, NULL, 0);
    assert_points(st, "ghost", 1, NULL, 0);
    assert_points(st, "rp", 1, want, 4);

    /* the callback stops the listing with its code */
    pt_arg la = {.id = "rp", .n = 1, .stop_at = 2};
    assert_int_equal(store_exec(st, u_reports_list, &la, &err), 3);
    assert_int_equal(la.n_got, 2);

    /* a failed unit leaves no point; a read-only unit stores none */
    assert_int_equal(store_exec(st, u_points_then_fail, NULL, &err), ZBSO_ECONFLICT);
    assert_points(st, "rp", 1, want, 4);
    pt_arg ro = {.id = "rp", .n = 1, .points = in, .np = 1};
    assert_int_equal(store_exec_read(st, u_reports_put, &ro, &err), ZBSO_EINTERNAL);
    assert_non_null(strstr(err.msg, "read-only unit of work"));

    /* points go with their job, and a job made again under its id has none */
    put_points(st, "rp2", 1, in, 2);
    assert_int_equal(store_exec(st, u_job_delete, "rp", &err), 0);
    assert_points(st, "rp", 1, NULL, 0);
    put(st, &j, tr, 2, NULL, 0);
    assert_points(st, "rp", 1, NULL, 0);
    assert_points(st, "rp", 2, NULL, 0);
    assert_points(st, "rp2", 1, (zbso_curve_point[]){in[1], in[0]}, 2);
    store_close(st);
}

/* ---- power profiles ---- */

typedef struct profile_arg {
    const char *id;
    int64_t bs;
    zbso_power_profile *p;       /* put: stored; get: filled */
    int64_t listed[8];           /* profiles_list: the batch sizes, in order */
    size_t n_listed;
    bool fail_after;             /* put, then fail the unit */
} profile_arg;

static int u_profile_put(store_txn *t, void *argp, zbso_err *err)
{
    profile_arg *a = argp;
    int rc = store_profile_put(t, a->id, a->p, err);
    if (rc == 0 && a->fail_after)
        return err_set(err, ZBSO_EINVAL, "failing on purpose");
    return rc;
}

static int u_profile_get(store_txn *t, void *argp, zbso_err *err)
{
    profile_arg *a = argp;
    return store_profile_get(t, a->id, a->bs, a->p, err);
}

static int profile_cb(void *ctx, const zbso_power_profile *p)
{
    profile_arg *a = ctx;
    if (a->n_listed < 8)
        a->listed[a->n_listed++] = p->batch_size;
    if (p->batch_size == a->bs)
        *a->p = *p;
    return 0;
}

static int u_profiles_list(store_txn *t, void *argp, zbso_err *err)
{
    profile_arg *a = argp;
    a->n_listed = 0;
    return store_profiles_list(t, a->id, profile_cb, a, err);
}

static void assert_profile_equal(const zbso_power_profile *a, const zbso_power_profile *b)
{
    assert_int_equal(a->batch_size, b->batch_size);
    assert_int_equal(a->trial_number, b->trial_number);
    assert_int_equal(a->observer, b->observer);
    assert_int_equal(a->profile_steps, b->profile_steps);
    assert_memory_equal(&a->created_at, &b->created_at, sizeof a->created_at);
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_int_equal(a->m[i].power_limit_w, b->m[i].power_limit_w);
        assert_memory_equal(&a->m[i].time_s, &b->m[i].time_s, sizeof(double));
        assert_memory_equal(&a->m[i].energy_j, &b->m[i].energy_j, sizeof(double));
    }
}

/* store.h's power profiles: replace, order and doubles kept bit for bit, one per batch
 * size listed ascending, refused in a read unit, rolled back with their unit, gone with
 * their job. */
static void test_power_profiles(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job j, other;
    zbso_power_profile *a = test_malloc(sizeof *a), *b = test_malloc(sizeof *b);
    zbso_power_profile *got = test_malloc(sizeof *got);
    profile_arg pa = {.id = "pp", .bs = 16, .p = got};
    make_job(&j, "pp");
    make_job(&other, "pp-other");
    put(st, &j, NULL, 0, NULL, 0);
    put(st, &other, NULL, 0, NULL, 0);

    assert_int_equal(store_exec_read(st, u_profile_get, &pa, &err), ZBSO_ENOTFOUND);
    assert_non_null(strstr(err.msg, "no power profile of batch size 16"));
    memset(a, 0, sizeof *a);
    a->batch_size = 16;
    a->trial_number = 7;
    a->profile_steps = 40;
    a->created_at = 1700000000.123456789;
    a->n = 3;
    /* Limits not in order (a profile keeps its order: ties go to the first), doubles that
     * need 17 digits, the smallest normal and a subnormal. */
    a->m[0] = (zbso_pl_measurement){300, 0.1, 2.2250738585072014e-308};
    a->m[1] = (zbso_pl_measurement){250, 1.0 / 3.0, 123456789.12345678};
    a->m[2] = (zbso_pl_measurement){275, 4.9406564584124654e-324, 0.0};
    profile_arg put_a = {.id = "pp", .p = a};
    assert_int_equal(store_exec(st, u_profile_put, &put_a, &err), 0);
    assert_int_equal(store_exec_read(st, u_profile_get, &pa, &err), 0);
    assert_profile_equal(got, a);

    /* An unknown job: ENOTFOUND, nothing stored. */
    profile_arg ghost = {.id = "ghost", .p = a};
    assert_int_equal(store_exec(st, u_profile_put, &ghost, &err), ZBSO_ENOTFOUND);
    ghost.bs = 16;
    ghost.p = got;
    assert_int_equal(store_exec_read(st, u_profiles_list, &ghost, &err), 0);
    assert_int_equal(ghost.n_listed, 0);

    /* A second batch size, then the first replaced (fewer measurements, observer). */
    memset(b, 0, sizeof *b);
    b->batch_size = 8;
    b->n = 1;
    b->m[0] = (zbso_pl_measurement){700, 2.5, 1750.0};
    profile_arg put_b = {.id = "pp", .p = b};
    assert_int_equal(store_exec(st, u_profile_put, &put_b, &err), 0);
    a->n = 2;
    a->observer = true;
    a->trial_number = 9;
    a->created_at = 1700000100.5;
    assert_int_equal(store_exec(st, u_profile_put, &put_a, &err), 0);
    assert_int_equal(store_exec_read(st, u_profiles_list, &pa, &err), 0);
    assert_numbers(pa.listed, pa.n_listed, (int64_t[]){8, 16}, 2);
    assert_profile_equal(got, a);
    /* the other job has none */
    profile_arg po = {.id = "pp-other", .bs = 8, .p = got};
    assert_int_equal(store_exec_read(st, u_profile_get, &po, &err), ZBSO_ENOTFOUND);

    /* A read unit refuses the write; a failed unit leaves the profile as it was. */
    assert_int_equal(store_exec_read(st, u_profile_put, &put_b, &err), ZBSO_EINTERNAL);
    assert_non_null(strstr(err.msg, "profile_put"));
    b->m[0].time_s = 99.0;
    put_b.fail_after = true;
    assert_int_equal(store_exec(st, u_profile_put, &put_b, &err), ZBSO_EINVAL);
    pa.bs = 8;
    assert_int_equal(store_exec_read(st, u_profile_get, &pa, &err), 0);
    assert_true(got->m[0].time_s == 2.5);

    /* The most measurements a profile may have. */
    b->n = ZBSO_MAX_POWER_LIMITS;
    for (size_t i = 0; i < b->n; i++)
        b->m[i] = (zbso_pl_measurement){(int64_t)(5000 - i), 1e-3 * (double)(i + 1) / 7.0,
                                        -1.0 / 3.0 + (double)i};
    b->m[0].energy_j = 1e300;
    put_b.fail_after = false;
    assert_int_equal(store_exec(st, u_profile_put, &put_b, &err), 0);
    assert_int_equal(store_exec_read(st, u_profile_get, &pa, &err), 0);
    assert_profile_equal(got, b);

    /* Gone with the job, and not back with a job of the same id. */
    assert_int_equal(store_exec(st, u_job_delete, "pp", &err), 0);
    assert_int_equal(store_exec_read(st, u_profiles_list, &pa, &err), 0);
    assert_int_equal(pa.n_listed, 0);
    put(st, &j, NULL, 0, NULL, 0);
    assert_int_equal(store_exec_read(st, u_profile_get, &pa, &err), ZBSO_ENOTFOUND);
    store_close(st);
    test_free(a);
    test_free(b);
    test_free(got);
}

static int u_counts(store_txn *t, void *argp, zbso_err *err)
{
    return store_counts_get(t, argp, err);
}

static void test_counts(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    store_counts c;
    memset(&c, 0x55, sizeof c);
    assert_int_equal(store_exec_read(st, u_counts, &c, &err), 0);
    assert_int_equal(c.jobs, 0);
    for (int ty = 0; ty < 3; ty++)
        for (int s = 0; s < 3; s++)
            assert_int_equal(c.trials[ty][s], 0);
    zbso_job j, j2, j3;
    make_job(&j, "c1");
    make_job(&j2, "c2");
    make_job(&j3, "c3");
    zbso_trial tr[5] = {
        make_trial(1, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_SUCCEEDED, 1.0),
        make_trial(2, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_FAILED, 1.0),
        make_trial(3, 8, ZBSO_TRIAL_CONCURRENT, ZBSO_TRIAL_DISPATCHED, 1.0),
        make_trial(4, 8, ZBSO_TRIAL_MAB, ZBSO_TRIAL_SUCCEEDED, 1.0),
        make_trial(5, 8, ZBSO_TRIAL_MAB, ZBSO_TRIAL_SUCCEEDED, 1.0),
    };
    put(st, &j, tr, 5, NULL, 0);
    put(st, &j2, tr, 2, NULL, 0);
    put(st, &j3, NULL, 0, NULL, 0);
    assert_int_equal(store_exec(st, u_counts, &c, &err), 0);
    assert_int_equal(c.jobs, 3);
    int64_t want[3][3] = {{0, 2, 2}, {1, 0, 0}, {0, 2, 0}};
    for (int ty = 0; ty < 3; ty++)
        for (int s = 0; s < 3; s++)
            assert_int_equal(c.trials[ty][s], want[ty][s]);
    assert_int_equal(store_exec(st, u_job_delete, "c1", &err), 0);
    assert_int_equal(store_exec_read(st, u_counts, &c, &err), 0);
    assert_int_equal(c.jobs, 2);
    assert_int_equal(c.trials[ZBSO_TRIAL_EXPLORATION][ZBSO_TRIAL_SUCCEEDED], 1);
    assert_int_equal(c.trials[ZBSO_TRIAL_EXPLORATION][ZBSO_TRIAL_FAILED], 1);
    assert_int_equal(c.trials[ZBSO_TRIAL_MAB][ZBSO_TRIAL_SUCCEEDED], 0);
    store_close(st);
}

/* ---- the buffer of curve points (store_report_add) ---- */

/* Adds points epochs [from, to) of trial (id, n), received at 1000 + epoch. */
static void add_points(store *st, const char *id, int64_t n, int64_t from, int64_t to)
{
    for (int64_t e = from; e < to; e++) {
        zbso_curve_point p = pt(e, 1000.0 + (double)e);
        store_report_add(st, id, n, &p);
    }
}

typedef struct count_pts {
    const char *id;
    int64_t n;
    size_t count;
    int64_t next_epoch;          /* the epoch expected next; -1 once one was out of order */
} count_pts;

static int count_pt_cb(void *ctx, const zbso_curve_point *p)
{
    count_pts *a = ctx;
    zbso_curve_point w = pt(a->next_epoch, 1000.0 + (double)a->next_epoch);
    a->next_epoch = p->epoch == w.epoch && p->time == w.time && p->received_at ==
                    w.received_at ? a->next_epoch + 1 : -1;
    a->count++;
    return 0;
}

static int u_count_pts(store_txn *t, void *argp, zbso_err *err)
{
    count_pts *a = argp;
    a->count = 0;
    a->next_epoch = 0;
    return store_reports_list(t, a->id, a->n, count_pt_cb, a, err);
}

/* The number of stored points of (id, n); fails unless they are epochs 0, 1, ... */
static size_t stored_points(store *st, const char *id, int64_t n)
{
    count_pts a = {.id = id, .n = n};
    zbso_err err = {0};
    int rc = store_exec_read(st, u_count_pts, &a, &err);
    if (rc != 0)
        fail_msg("reports_list: %d %s", rc, err.msg);
    if (a.count > 0 && a.next_epoch != (int64_t)a.count)
        fail_msg("points of %s/%lld are not epochs 0..%zu", id, (long long)n, a.count - 1);
    return a.count;
}

static void assert_stats(store *st, uint64_t written, uint64_t dropped, uint64_t buffered)
{
    uint64_t w, d, b;
    store_curve_stats(st, &w, &d, &b);
    if (w != written || d != dropped || b != buffered)
        fail_msg("curve stats written %llu dropped %llu buffered %llu, want %llu %llu %llu",
                 (unsigned long long)w, (unsigned long long)d, (unsigned long long)b,
                 (unsigned long long)written, (unsigned long long)dropped,
                 (unsigned long long)buffered);
}

/* store_report_flush writes every buffered point, grouped per trial, and the flusher
 * writes a point on its own within STORE_CURVE_DELAY_S (waited for up to 20 s: a loaded
 * machine). */
static void test_curve_buffer(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job a, b;
    make_job(&a, "cb-a");
    make_job(&b, "cb-b");
    zbso_trial tr[2] = {make_trial(1, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_DISPATCHED, 1.0),
                        make_trial(2, 16, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_DISPATCHED, 2.0)};
    put(st, &a, tr, 2, NULL, 0);
    put(st, &b, tr, 1, NULL, 0);
    assert_stats(st, 0, 0, 0);
    assert_int_equal(store_report_flush(st, &err), 0);
    /* interleaved trials; the stats count what was added, the unknown trial's too */
    for (int64_t e = 0; e < 40; e++) {
        add_points(st, "cb-a", 1, e, e + 1);
        add_points(st, "cb-b", 1, e, e + 1);
        if (e < 10)
            add_points(st, "cb-a", 2, e, e + 1);
        if (e < 5)
            add_points(st, "cb-a", 3, e, e + 1);
    }
    assert_int_equal(store_report_flush(st, &err), 0);
    assert_stats(st, 95, 0, 0);
    assert_int_equal(stored_points(st, "cb-a", 1), 40);
    assert_int_equal(stored_points(st, "cb-b", 1), 40);
    assert_int_equal(stored_points(st, "cb-a", 2), 10);
    assert_int_equal(stored_points(st, "cb-a", 3), 0);

    /* a point left alone reaches the database without a flush call; the flusher counts
     * it just after its commit, which a reader may see first */
    add_points(st, "cb-b", 1, 40, 41);
    size_t got = 0;
    uint64_t written = 0;
    for (int i = 0; i < 400 && (got < 41 || written < 96); i++) {
        usleep(50 * 1000);
        got = stored_points(st, "cb-b", 1);
        store_curve_stats(st, &written, NULL, NULL);
    }
    assert_int_equal(got, 41);
    assert_stats(st, 96, 0, 0);
    store_close(st);
}

typedef struct hold_arg {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int phase;                   /* 1: the unit runs; 2: it may end */
} hold_arg;

/* A unit that holds the writer (memory's mutex, sqlite's writer thread) until phase 2. */
static int u_hold(store_txn *t, void *argp, zbso_err *err)
{
    hold_arg *h = argp;
    pthread_mutex_lock(&h->mu);
    h->phase = 1;
    pthread_cond_broadcast(&h->cv);
    while (h->phase != 2)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    return 0;
}

typedef struct hold_thread {
    store *st;
    hold_arg *h;
    int rc;
} hold_thread;

static void *hold_main(void *p)
{
    hold_thread *ht = p;
    zbso_err err = {0};
    ht->rc = store_exec(ht->st, u_hold, ht->h, &err);
    return NULL;
}

/* While the database cannot take the flusher's unit, the buffer holds STORE_CURVE_MAX
 * points, those taken by the waiting flush included, and drops and counts the rest. */
static void test_curve_buffer_cap(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job j;
    make_job(&j, "cap");
    zbso_trial tr = make_trial(1, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_DISPATCHED, 1.0);
    put(st, &j, &tr, 1, NULL, 0);
    hold_arg h = {.phase = 0};
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    hold_thread ht = {st, &h, -1};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, hold_main, &ht), 0);
    pthread_mutex_lock(&h.mu);
    while (h.phase != 1)
        pthread_cond_wait(&h.cv, &h.mu);
    pthread_mutex_unlock(&h.mu);

    add_points(st, "cap", 1, 0, STORE_CURVE_MAX + 7);
    assert_stats(st, 0, 7, STORE_CURVE_MAX);

    pthread_mutex_lock(&h.mu);
    h.phase = 2;
    pthread_cond_broadcast(&h.cv);
    pthread_mutex_unlock(&h.mu);
    pthread_join(th, NULL);
    assert_int_equal(ht.rc, 0);
    assert_int_equal(store_report_flush(st, &err), 0);
    assert_stats(st, STORE_CURVE_MAX, 7, 0);
    assert_int_equal(stored_points(st, "cap", 1), STORE_CURVE_MAX);
    /* room again */
    add_points(st, "cap", 1, STORE_CURVE_MAX, STORE_CURVE_MAX + 1);
    assert_int_equal(store_report_flush(st, &err), 0);
    assert_stats(st, STORE_CURVE_MAX + 1, 7, 0);
    pthread_cond_destroy(&h.cv);
    pthread_mutex_destroy(&h.mu);
    store_close(st);
}

/* discard_curves: store_report_add keeps nothing and writes nothing. */
static void test_curve_discard(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job j;
    make_job(&j, "discard");
    zbso_trial tr = make_trial(1, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_DISPATCHED, 1.0);
    put(st, &j, &tr, 1, NULL, 0);
    store_close(st);
    store_options opt = {.discard_curves = true};
    assert_int_equal(store_open(g_url, &opt, &st, &err), 0);
    if (g_path[0] == '\0' && !g_pg && !g_my) /* memory:// starts empty */
        put(st, &j, &tr, 1, NULL, 0);
    add_points(st, "discard", 1, 0, 3);
    assert_stats(st, 0, 0, 0);
    assert_int_equal(store_report_flush(st, &err), 0);
    assert_int_equal(stored_points(st, "discard", 1), 0);
    store_close(st);
}

static void test_reopen_finds_everything(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    zbso_job j;
    make_job(&j, "persist");
    zbso_trial tr[2] = {make_trial(1, 8, ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_SUCCEEDED, 1.0),
                        make_trial(2, 16, ZBSO_TRIAL_MAB, ZBSO_TRIAL_DISPATCHED, 2.0)};
    zbso_arm arm = {16, 1.5, INFINITY, 4};
    put(st, &j, tr, 2, &arm, 1);
    /* buffered points are written at close, flushed or not */
    add_points(st, "persist", 2, 0, 3);
    store_close(st);

    store_options opt = {0};
    assert_int_equal(store_open(g_url, &opt, &st, &err), 0);
    get_arg g = {.id = "persist"};
    assert_int_equal(store_exec(st, u_job_get, &g, &err), 0);
    assert_job_equal(&g.job, &j);
    for (int i = 0; i < 2; i++) {
        trial_arg ta = {.id = "persist", .n = i + 1};
        assert_int_equal(store_exec(st, u_trial_get, &ta, &err), 0);
        assert_trial_equal(&ta.trial, &tr[i]);
    }
    arms_arg aa = {.id = "persist", .cap = 8};
    assert_int_equal(store_exec(st, u_arms_get, &aa, &err), 0);
    assert_int_equal(aa.n, 1);
    assert_true(isinf(aa.arms[0].param_precision));
    assert_true(aa.arms[0].param_mean == 1.5 && aa.arms[0].num_observations == 4);
    assert_int_equal(stored_points(st, "persist", 2), 3);
    store_close(st);
}

#define SQL_MAX 16384
typedef struct sql_buf {
    char text[SQL_MAX];
    size_t len;
    int lines;
} sql_buf;

static void sql_line(void *ctx, const char *sql)
{
    sql_buf *b = ctx;
    int n = snprintf(b->text + b->len, SQL_MAX - b->len, "%s\n", sql);
    assert_true(n > 0 && (size_t)n < SQL_MAX - b->len);
    b->len += (size_t)n;
    b->lines++;
}

/* Creates g_path as a raw database at schema version `to` using migrate_sql's text. */
static void make_db_at(const store_backend *b, int to)
{
    sql_buf buf = {.len = 0};
    zbso_err err = {0};
    sqlite3 *db = NULL;
    remove_db(g_path);
    assert_int_equal(store_migrate_sql(b, 0, to, sql_line, &buf, &err), 0);
    assert_int_equal(sqlite3_open(g_path, &db), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(db, buf.text, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fail_msg("raw schema: %s", msg);
    sqlite3_close(db);
}

/* The version whose step adds jobs.policy (issue 21), found in the backend's SQL so that
 * the step may move to another number. */
static int policy_step(const store_backend *b)
{
    zbso_err err = {0};
    for (int v = 1; v <= b->latest_schema_version; v++) {
        sql_buf buf = {.len = 0};
        assert_int_equal(store_migrate_sql(b, v - 1, v, sql_line, &buf, &err), 0);
        if (strstr(buf.text, "ADD COLUMN policy") != NULL)
            return v;
    }
    fail_msg("no schema step adds jobs.policy");
    return 0;
}

static void test_schema_versions(void **state)
{
    zbso_err err = {0};
    const store_backend *b = store_backend_for_url(g_url, &err);
    assert_non_null(b);
    const int latest = b->latest_schema_version;
    char latest_text[16];
    snprintf(latest_text, sizeof latest_text, "%d", latest);
    assert_true(latest >= 7);

    store *st = open_fresh();
    int v = -1;
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, latest);
    assert_int_equal(store_migrate(st, 0, &err), 0);
    assert_int_equal(store_migrate(st, 1, &err), ZBSO_ESCHEMA);
    assert_int_equal(store_migrate(st, latest + 1, &err), ZBSO_EINVAL);
    store_close(st);

    /* an older schema is refused, naming both versions and `zbso migrate` */
    make_db_at(b, 1);
    store_options opt = {.create_if_empty = true};
    st = NULL;
    assert_int_equal(store_open(g_url, &opt, &st, &err), ZBSO_ESCHEMA);
    assert_null(st);
    assert_non_null(strstr(err.msg, "zbso migrate"));
    assert_non_null(strstr(err.msg, "version 1"));
    assert_non_null(strstr(err.msg, latest_text));
    /* ... and upgraded with opt.migrate */
    opt.migrate = true;
    assert_int_equal(store_open(g_url, &opt, &st, &err), 0);
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, latest);
    zbso_job j;
    make_job(&j, "after-migrate");
    put(st, &j, NULL, 0, NULL, 0);
    store_close(st);

    /* any_schema (zbso migrate) opens version 1 as it is; migrate then upgrades it */
    make_db_at(b, 1);
    assert_int_equal(store_open(g_url, &(store_options){.any_schema = true}, &st, &err), 0);
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, 1);
    assert_int_equal(store_migrate(st, 2, &err), 0);
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, 2);
    store_close(st);
    /* a job stored at schema version 2 gets job version 1 from migration 3, the rest of
     * it unchanged; its trial gains request_key (NULL: no key) from migration 4; from
     * migration 5 each job gets updated_at, the latest time of it and its trials, and its
     * trials take curve points */
    {
        zbso_rng rng;
        char rng_text[96], sql[1400];
        sqlite3 *db2 = NULL;
        rng_seed_u64(&rng, 7);
        rng_format(&rng, rng_text);
        snprintf(sql, sizeof sql,
                 "INSERT INTO jobs VALUES ('v2-job', 'v2', '8,16', 8, 0.5, NULL, 0.9, 1, 10, 2,"
                 " 3, 0, 1, 2, 7, 300, 1, 'A40', 0, 8, NULL, 8, '%s', 4, 1.5);"
                 "INSERT INTO jobs VALUES ('v2-bare', 'v2', '8,16', 8, 0.5, NULL, 0.9, 1, 10, 2,"
                 " 3, 0, 1, 2, 7, 300, 1, 'A40', 0, 8, NULL, 8, '%s', 0, 2.5);"
                 "INSERT INTO jobs VALUES ('v2-ended', 'v2', '8,16', 8, 0.5, NULL, 0.9, 1, 10,"
                 " 2, 3, 0, 1, 2, 7, 300, 1, 'A40', 0, 8, NULL, 8, '%s', 2, 3.5);"
                 "INSERT INTO trials VALUES ('v2-job', 4, 16, 2, 0, 100.5, 0, 100.5, NULL,"
                 " NULL, NULL, 0, 0);"
                 "INSERT INTO trials VALUES ('v2-job', 3, 16, 2, 0, 90.5, 0, 99.5, NULL,"
                 " NULL, NULL, 0, 0);"
                 "INSERT INTO trials VALUES ('v2-ended', 1, 8, 0, 1, 10.5, 300.25, 12.5, 1,"
                 " 2, 0.5, 3, 1);"
                 "INSERT INTO trials VALUES ('v2-ended', 2, 8, 0, 0, 20.5, 0, 250.75, NULL,"
                 " NULL, NULL, 0, 0);", rng_text, rng_text, rng_text);
        assert_int_equal(sqlite3_open(g_path, &db2), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db2, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db2);
        assert_int_equal(store_open(g_url, &(store_options){.migrate = true}, &st, &err), 0);
        get_arg ga = {.id = "v2-job"};
        assert_int_equal(store_exec(st, u_job_get, &ga, &err), 0);
        const zbso_job got = ga.job;
        assert_int_equal(got.revision, 1);
        assert_int_equal(got.num_trials, 4);
        assert_int_equal(got.spec.n_batch_sizes, 2);
        assert_int_equal(got.spec.mab_seed, 7);
        zbso_rng want;
        rng_seed_u64(&want, 7);
        assert_memory_equal(&got.rng, &want, sizeof want);
        trial_arg ta = {.id = "v2-job", .n = 4};
        assert_int_equal(store_exec(st, u_trial_get, &ta, &err), 0);
        assert_int_equal(ta.trial.batch_size, 16);
        assert_true(ta.trial.start_time == 100.5);
        ta.key = "k";
        assert_int_equal(store_exec(st, u_trial_by_key, &ta, &err), ZBSO_ENOTFOUND);
        ta.trial = make_trial(5, 8, ZBSO_TRIAL_MAB, ZBSO_TRIAL_DISPATCHED, 101.0);
        assert_int_equal(store_exec(st, u_trial_insert, &ta, &err), 0);
        assert_int_equal(store_exec(st, u_trial_by_key, &ta, &err), 0);
        assert_int_equal(ta.trial.trial_number, 5);
        assert_true(got.updated_at == 100.5);
        ga.id = "v2-bare";
        assert_int_equal(store_exec(st, u_job_get, &ga, &err), 0);
        assert_true(ga.job.updated_at == 2.5);
        ga.id = "v2-ended";
        assert_int_equal(store_exec(st, u_job_get, &ga, &err), 0);
        assert_true(ga.job.updated_at == 300.25);
        /* the stop reason of a trial stored before it existed reads as none (0): the
         * core derives it (opt_trial_stop_reason) */
        trial_arg te = {.id = "v2-ended", .n = 1};
        assert_int_equal(store_exec(st, u_trial_get, &te, &err), 0);
        assert_int_equal(te.trial.status, ZBSO_TRIAL_SUCCEEDED);
        assert_int_equal(te.trial.stop_reason, ZBSO_STOP_NONE);
        zbso_curve_point p = {1, 2.0, 3.0, 0.5, 101.0};
        put_points(st, "v2-job", 4, &p, 1);
        assert_points(st, "v2-job", 4, &p, 1);
        store_close(st);
    }
    /* ... and an empty database stays empty until migrate(0) creates the latest schema */
    remove_db(g_path);
    assert_int_equal(store_open(g_url, &(store_options){.any_schema = true}, &st, &err), 0);
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, 0);
    assert_int_equal(store_migrate(st, 1, &err), 0);
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, 1);
    assert_int_equal(store_migrate(st, 0, &err), 0);
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, latest);
    put(st, &j, NULL, 0, NULL, 0);
    store_close(st);

    /* a newer schema is refused */
    remove_db(g_path);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(g_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    opt.migrate = true;
    assert_int_equal(store_open(g_url, &opt, &st, &err), ZBSO_ESCHEMA);
    assert_non_null(strstr(err.msg, "99"));
    assert_non_null(strstr(err.msg, "newer"));
    assert_int_equal(store_open(g_url, &(store_options){.any_schema = true}, &st, &err), 0);
    assert_int_equal(store_migrate(st, 0, &err), ZBSO_ESCHEMA);
    assert_non_null(strstr(err.msg, "99"));
    assert_non_null(strstr(err.msg, "newer"));
    store_close(st);

    /* an empty database without create_if_empty is refused */
    remove_db(g_path);
    assert_int_equal(store_open(g_url, &(store_options){0}, &st, &err), ZBSO_ESCHEMA);
    assert_non_null(strstr(err.msg, "zbso migrate"));
    remove_db(g_path);
}

static void test_migrate_sql(void **state)
{
    zbso_err err = {0};
    const store_backend *b = store_backend_for_url(g_url, &err);
    sql_buf all = {.len = 0}, up = {.len = 0};
    assert_int_equal(store_migrate_sql(b, 0, 0, sql_line, &all, &err), 0);
    assert_non_null(strstr(all.text, "CREATE TABLE jobs"));
    assert_non_null(strstr(all.text, "CREATE TABLE trials"));
    assert_non_null(strstr(all.text, "CREATE TABLE arms"));
    assert_non_null(strstr(all.text, "CREATE INDEX"));
    assert_non_null(strstr(all.text, "PRAGMA user_version = 2;"));
    assert_non_null(strstr(all.text, "ADD COLUMN version"));
    assert_non_null(strstr(all.text, "PRAGMA user_version = 3;"));
    assert_non_null(strstr(all.text, "ADD COLUMN request_key TEXT"));
    assert_non_null(strstr(all.text, "PRAGMA user_version = 4;"));
    assert_non_null(strstr(all.text, "CREATE TABLE reports"));
    assert_non_null(strstr(all.text, "ADD COLUMN updated_at"));
    assert_non_null(strstr(all.text, "PRAGMA user_version = 5;"));
    assert_int_equal(strncmp(all.text, "BEGIN;\n", 7), 0);
    assert_string_equal(all.text + all.len - 8, "COMMIT;\n");
    assert_int_equal(store_migrate_sql(b, 1, 2, sql_line, &up, &err), 0);
    assert_null(strstr(up.text, "CREATE TABLE"));
    assert_non_null(strstr(up.text, "CREATE INDEX"));
    assert_null(strstr(up.text, "request_key"));
    sql_buf last = {.len = 0};
    assert_int_equal(store_migrate_sql(b, 3, 4, sql_line, &last, &err), 0);
    assert_string_equal(last.text, "BEGIN;\nALTER TABLE trials ADD COLUMN request_key TEXT;\n"
                        "CREATE UNIQUE INDEX trials_by_request_key ON trials (job_id,"
                        " request_key);\nPRAGMA user_version = 4;\nCOMMIT;\n");
    sql_buf v5 = {.len = 0};
    assert_int_equal(store_migrate_sql(b, 4, 5, sql_line, &v5, &err), 0);
    assert_null(strstr(v5.text, "request_key"));
    assert_non_null(strstr(v5.text, "CREATE TABLE reports"));
    assert_string_equal(v5.text + v5.len - 33, "PRAGMA user_version = 5;\nCOMMIT;\n");
    sql_buf v6 = {.len = 0};
    assert_int_equal(store_migrate_sql(b, 5, 6, sql_line, &v6, &err), 0);
    assert_null(strstr(v6.text, "CREATE TABLE reports"));
    assert_non_null(strstr(v6.text, "CREATE TABLE power_profiles"));
    assert_string_equal(v6.text + v6.len - 33, "PRAGMA user_version = 6;\nCOMMIT;\n");
    /* Issue 25's step (the latest here; renumbered when other steps come first). */
    sql_buf stop = {.len = 0};
    char tail[64];
    assert_int_equal(store_migrate_sql(b, 6, 0, sql_line, &stop, &err), 0);
    assert_non_null(strstr(stop.text, "ALTER TABLE trials ADD COLUMN stop_reason INTEGER"));
    assert_null(strstr(stop.text, "CREATE TABLE power_profiles"));
    snprintf(tail, sizeof tail, "PRAGMA user_version = %d;\nCOMMIT;\n", SQ_LATEST);
    assert_string_equal(stop.text + stop.len - strlen(tail), tail);
    assert_int_equal(store_migrate_sql(b, 2, 1, sql_line, &up, &err), ZBSO_EINVAL);
    assert_int_equal(store_migrate_sql(b, 0, b->latest_schema_version + 1, sql_line, &up,
                                       &err), ZBSO_EINVAL);
    /* the policy step adds the three columns and records its own version */
    int step = policy_step(b);
    sql_buf pol = {.len = 0};
    char want[64];
    assert_int_equal(store_migrate_sql(b, step - 1, step, sql_line, &pol, &err), 0);
    assert_non_null(strstr(pol.text, "ADD COLUMN policy TEXT NOT NULL DEFAULT 'zeus'"));
    assert_non_null(strstr(pol.text, "ADD COLUMN warm_start"));
    assert_non_null(strstr(pol.text, "ADD COLUMN prior_jobs"));
    snprintf(want, sizeof want, "PRAGMA user_version = %d;\nCOMMIT;\n", step);
    assert_string_equal(pol.text + pol.len - strlen(want), want);
}

/* A job stored before the policy step (a row without its columns) is a "zeus" job without
 * a warm start after it; a smart job with prior jobs can be stored beside it. */
static void test_policy_migration(void **state)
{
    zbso_err err = {0};
    const store_backend *b = store_backend_for_url(g_url, &err);
    int step = policy_step(b);
    make_db_at(b, step - 1);
    zbso_rng rng;
    char rng_text[96], sql[1200];
    rng_seed_u64(&rng, 9);
    rng_format(&rng, rng_text);
    snprintf(sql, sizeof sql,
             "INSERT INTO jobs (job_id, job_id_prefix, batch_sizes, default_batch_size,"
             " eta_knob, beta_knob, target_metric, higher_is_better_metric, max_epochs,"
             " num_pruning_rounds, window_size, mab_prior_mean, mab_prior_precision,"
             " mab_num_explorations, mab_seed, max_power, number_of_gpus, gpu_model, stage,"
             " exp_default_batch_size, min_cost, min_cost_batch_size, rng_state, num_trials,"
             " created_at, version, updated_at) VALUES ('old-z', 'old', '8,16', 8, 0.5,"
             " NULL, 0.9, 1, 10, 2, 0, 0, 0, 2, NULL, 300, 1, 'A40', 0, 8, NULL, 8, '%s', 0,"
             " 1.5, 1, 1.5);", rng_text);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(g_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    store *st = NULL;
    assert_int_equal(store_open(g_url, &(store_options){.migrate = true}, &st, &err), 0);
    get_arg g = {.id = "old-z"};
    assert_int_equal(store_exec(st, u_job_get, &g, &err), 0);
    assert_int_equal(g.job.spec.policy, ZBSO_POLICY_ZEUS);
    assert_true(g.job.spec.has_policy);
    assert_false(g.job.spec.warm_start);
    assert_int_equal(g.job.spec.n_prior_jobs, 0);
    assert_false(g.job.spec.has_carbon_intensity);   /* the intensity step's NULL */
    zbso_job j;
    make_job(&j, "new-smart");
    put(st, &j, NULL, 0, NULL, 0);
    g.id = "new-smart";
    assert_int_equal(store_exec(st, u_job_get, &g, &err), 0);
    assert_job_equal(&g.job, &j);
    store_close(st);
}

/* A reader that cannot open the file (deleted before the pool had a reader) is a
 * storage fault naming the deletion, 503 and not 500. */
static void test_reader_after_deletion(void **state)
{
    store *st = open_fresh();
    zbso_err err = {0};
    remove_db(g_path);
    assert_int_equal(store_exec_read(st, u_noop_read, NULL, &err), ZBSO_EUNAVAIL);
    assert_non_null(strstr(err.msg, "deleted"));
    store_close(st);
    remove_db(g_path);
}

static void test_not_a_database(void **state)
{
    zbso_err err = {0};
    store *st = NULL;
    remove_db(g_path);
    FILE *f = fopen(g_path, "w");
    assert_non_null(f);
    for (int i = 0; i < 64; i++)
        fputs("this is a text file, not a database\n", f);
    fclose(f);
    assert_int_equal(store_open(g_url, NULL, &st, &err), ZBSO_ESTORE);
    assert_null(st);
    assert_non_null(strstr(err.msg, g_path));
    assert_non_null(strstr(err.msg, "not a database"));
    remove_db(g_path);
}

static void test_urls(void **state)
{
    zbso_err err = {0};
    store *st = NULL;
    const store_backend *b = store_backend_for_url("postgres2://u:p@host:5432/db", &err);
    assert_null(b);
    assert_int_equal(err.code, ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "\"postgres2\""));
    /* libpq's alias postgres:// is PostgreSQL, its multi-host form too */
    assert_string_equal(store_backend_for_url("postgres://u:p@h:1/d", &err)->name,
                        "postgresql");
    assert_string_equal(store_backend_for_url("postgres://h1:5432,h2:5432/d", &err)->name,
                        "postgresql");
    assert_null(store_backend_for_url("postgres2://h/d", &err));
    assert_non_null(strstr(err.msg, "postgres://"));
    assert_non_null(strstr(err.msg, "sqlite:///"));
    assert_non_null(strstr(err.msg, "postgresql://"));
    assert_non_null(strstr(err.msg, "postgresql+asyncpg://"));
    assert_non_null(strstr(err.msg, "memory://"));
    assert_non_null(strstr(err.msg, "mysql://"));
    /* libpq's alias postgres:// is PostgreSQL; sqlite://x (two slashes) is explained. */
    assert_string_equal(store_backend_for_url("postgres://u:p@h:1/d", &err)->name,
                        "postgresql");
    assert_null(store_backend_for_url("sqlite://rel.db", &err));
    assert_non_null(strstr(err.msg, "sqlite:///rel.db"));
    assert_string_equal(store_backend_for_url("postgresql://u:p@h:1/d", &err)->name,
                        "postgresql");
    assert_string_equal(store_backend_for_url("postgresql+asyncpg://h/d", &err)->name,
                        "postgresql");
    static const char *const mysql_urls[] = {
        "mysql://u:p@h:1/d", "mysql+asyncmy://me:secret@localhost:3306/Zeus",
        "mysql+aiomysql://h/d", "mysql+pymysql://h/d", "mysql+mysqldb://h/d",
        "mysql+mysqlconnector://h/d", "mariadb://h/d", "mariadb+mariadbconnector://h/d"};
    for (size_t i = 0; i < sizeof mysql_urls / sizeof mysql_urls[0]; i++)
        assert_string_equal(store_backend_for_url(mysql_urls[i], &err)->name, "mysql");
    assert_int_equal(store_open("oracle://x/y", NULL, &st, &err), ZBSO_EINVAL);
    assert_null(st);
    assert_non_null(strstr(err.msg, "\"oracle\""));
    assert_null(store_backend_for_url("mysqlx://h/d", &err));
    assert_null(store_backend_for_url("zbso.db", &err));
    assert_non_null(strstr(err.msg, "zbso.db"));
    assert_string_equal(store_backend_for_url("sqlite:///x.db", &err)->name, "sqlite");
    assert_string_equal(store_backend_for_url("sqlite+aiosqlite:///x.db", &err)->name, "sqlite");
    assert_string_equal(store_backend_for_url("memory://", &err)->name, "memory");
    assert_int_equal(store_open("sqlite:///", NULL, &st, &err), ZBSO_EINVAL);

    /* sqlite:///relative resolves against the working directory; the aiosqlite spelling
     * opens the same file; echo_sql logs and still works */
    char cwd[512], rel[300];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(g_dir), 0);
    store_options opt = {.create_if_empty = true, .echo_sql = true};
    assert_int_equal(store_open("sqlite+aiosqlite:///rel.db", &opt, &st, &err), 0);
    assert_int_equal(store_exec(st, u_noop_read, NULL, &err), 0);
    store_close(st);
    assert_int_equal(chdir(cwd), 0);
    snprintf(rel, sizeof rel, "%s/rel.db", g_dir);
    assert_int_equal(access(rel, F_OK), 0);
    remove_db(rel);
}

/* store_stats_get (for /metrics): every store_exec and store_exec_read is one
 * observation of its histogram, failed units included; only PostgreSQL and MariaDB rerun
 * units (tests/pg/test_pg_store.c and tests/mysql/test_my_store.c count those). */
static int u_nothing(store_txn *t, void *arg, zbso_err *err)
{
    return arg ? err_set(err, ZBSO_ECONFLICT, "refused") : 0;
}

static void test_unit_stats(void **state)
{
    store *st = open_fresh();
    store_stats a, b;
    zbso_err err = {0};
    store_stats_get(st, &a);
    for (int i = 0; i < 3; i++)
        assert_int_equal(store_exec(st, u_nothing, NULL, &err), 0);
    assert_int_equal(store_exec(st, u_nothing, "fail", &err), ZBSO_ECONFLICT);
    for (int i = 0; i < 5; i++)
        assert_int_equal(store_exec_read(st, u_nothing, NULL, &err), 0);
    store_stats_get(st, &b);
    assert_int_equal(b.write.count - a.write.count, 4);
    assert_int_equal(b.read.count - a.read.count, 5);
    assert_int_equal(b.write.cumulative[HIST_BUCKETS], b.write.count);
    assert_true(b.write.sum_s >= a.write.sum_s && b.read.sum_s >= a.read.sum_s);
    assert_int_equal(b.reruns, 0);
    store_close(st);
}

int main(int argc, char **argv)
{
    bool pg = argc == 2 && strcmp(argv[1], "--pg") == 0;
    bool my = argc == 2 && strcmp(argv[1], "--mysql") == 0;
    if (argc > 1 && !pg && !my) {
        fprintf(stderr, "usage: test_store_contract [--pg | --mysql]\n");
        return 2;
    }
    if ((pg && !pg_env_ok()) || (my && !my_env_ok()))
        return 1;
    snprintf(g_dir, sizeof g_dir, "/tmp/zbso-store-XXXXXX");
    if (mkdtemp(g_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    const struct CMUnitTest contract[] = {
        cmocka_unit_test(test_job_roundtrip_and_codes),
        cmocka_unit_test(test_job_update_every_field),
        cmocka_unit_test(test_job_ids_and_delete_cascade),
        cmocka_unit_test(test_trials_ops_and_filters),
        cmocka_unit_test(test_trials_fail_stale),
        cmocka_unit_test(test_request_keys),
        cmocka_unit_test(test_arms),
        cmocka_unit_test(test_failed_unit_leaves_no_trace),
        cmocka_unit_test(test_nested_exec_refused),
        cmocka_unit_test(test_read_unit_refuses_writes),
        cmocka_unit_test(test_read_unit_sees_committed),
        cmocka_unit_test(test_concurrent_units),
        cmocka_unit_test(test_reads_during_writes),
        cmocka_unit_test(test_unit_stats),
        cmocka_unit_test(test_jobs_list),
        cmocka_unit_test(test_trials_pages),
        cmocka_unit_test(test_reports_put_and_list),
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_power_profiles),
        cmocka_unit_test(test_curve_buffer),
        cmocka_unit_test(test_curve_discard),
    };
    /* A unit holding the writer holds the flusher's unit back: one writer (memory's
     * mutex, sqlite's writer thread), not PostgreSQL's or MariaDB's row locks. */
    const struct CMUnitTest one_writer[] = {
        cmocka_unit_test(test_curve_buffer_cap),
    };
    const struct CMUnitTest sqlite_only[] = {
        cmocka_unit_test(test_reopen_finds_everything),
        cmocka_unit_test(test_read_snapshot),
        cmocka_unit_test(test_schema_versions),
        cmocka_unit_test(test_migrate_sql),
        cmocka_unit_test(test_policy_migration),
        cmocka_unit_test(test_not_a_database),
        cmocka_unit_test(test_reader_after_deletion),
        cmocka_unit_test(test_urls),
    };
    /* PostgreSQL and MariaDB: reopening and read snapshots (their schema rules are in
     * tests/pg/test_pg_store.c and tests/mysql/test_my_store.c). */
    const struct CMUnitTest pg_more[] = {
        cmocka_unit_test(test_reopen_finds_everything),
        cmocka_unit_test(test_read_snapshot),
    };
    int failed = 0;
    if (pg) {
        failed += cmocka_run_group_tests_name("postgresql", contract, group_pg, group_end);
        failed += cmocka_run_group_tests_name("postgresql_more", pg_more, group_pg, group_end);
    } else if (my) {
        failed += cmocka_run_group_tests_name("mysql", contract, group_my, group_end);
        failed += cmocka_run_group_tests_name("mysql_more", pg_more, group_my, group_end);
    } else {
        failed += cmocka_run_group_tests_name("memory", contract, group_memory, group_end);
        failed += cmocka_run_group_tests_name("memory_one_writer", one_writer, group_memory,
                                              group_end);
        failed += cmocka_run_group_tests_name("sqlite", contract, group_sqlite, group_end);
        failed += cmocka_run_group_tests_name("sqlite_one_writer", one_writer, group_sqlite,
                                              group_end);
        failed += cmocka_run_group_tests_name("sqlite_only", sqlite_only, group_sqlite,
                                              group_end);
    }
    rmdir(g_dir);
    return failed != 0;
}
