/* test_netdb_suite.c: what every networked database (src/store/netdb/netdb.c and a driver) has
 * to prove, written once and run against each through its "fresh database" hook:
 *   --pg     PostgreSQL, under tests/pg/with_pg.sh
 *   --mysql  MariaDB, under tests/mysql/with_mysql.sh
 *   --fake   fakedb (fakedb.h): memory:// behind a netdb driver, with fault injection
 * Row locks that serialize units on one job across stores (replicas), unique trial
 * numbers from three replicas at once, one registration winner, a deadlock victim's unit
 * run again, and an outage: ZBSO_EUNAVAIL while the server is down (also for a unit in
 * flight), the password in no message, and the first unit after the restart succeeding
 * on a fresh connection with nothing committed lost. Everything is checked through the
 * store's own operations, not the backend's SQL. Each case works on a fresh database; the
 * outage case stops and restarts the server, so it runs last. The backend-specific cases
 * (SQL state tables, schema steps, encodings) stay in tests/pg and tests/mysql. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../mysql/my_fresh.h"
#include "../pg/pg_fresh.h"
#include "db_test.h"
#include "core/rng.h"
#include "core/spec.h"
#include "fakedb.h"
#include "service/service.h"
#include "store/store.h"

/* ---- the backend under test ---- */

typedef struct suite_db {
    const char *name;
    /* The backend, or NULL to pick it by URL (store_open). */
    const store_backend *backend;
    /* Creates an empty database `name` and writes its URL. Returns 0 or -1. */
    int (*fresh)(const char *name, char *url, size_t cap);
    /* Controls the server: "stop fast", "stop immediate", "start". Returns 0 or not. */
    int (*ctl)(const char *action);
    /* Gets the database ready for a deadlock (PostgreSQL: a short deadlock_timeout), or
     * NULL. Returns 0 or -1. */
    int (*prepare_deadlock)(const char *name);
    /* Row locks (two units on different rows run at once); without them (fakedb: one
     * lock per database) a deadlock cannot happen and is injected into the driver. */
    bool row_locks;
    /* The environment variable holding the password of the URLs fresh writes, or NULL:
     * then FAKEDB_PASSWORD. */
    const char *password_var;
} suite_db;

static int shell_ctl(const char *var, const char *action)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "\"%s\" %s", getenv(var), action);
    return system(cmd);
}

static int pg_ctl(const char *action)
{
    return shell_ctl("ZBSO_PG_CTL", action);
}

static int my_ctl(const char *action)
{
    return shell_ctl("ZBSO_MYSQL_CTL", action);
}

static int pg_deadlock_timeout(const char *name)
{
    char sql[128];
    snprintf(sql, sizeof sql, "ALTER DATABASE %s SET deadlock_timeout = '100ms'", name);
    return pg_sql("zbso", sql);
}

static const suite_db dbs[] = {
    {"postgresql", NULL, pg_fresh_db, pg_ctl, pg_deadlock_timeout, true, "ZBSO_PG_PASSWORD"},
    {"mysql", NULL, my_fresh_db, my_ctl, NULL, true, "ZBSO_MYSQL_PASSWORD"},
    {"fakedb", &fakedb_backend, fakedb_fresh, fakedb_ctl, NULL, false, NULL},
};

static const suite_db *g_db;
static char g_url[512];       /* the current case's fresh database */
static char g_name[32];
static int g_n_dbs;

static const char *password(void)
{
    return g_db->password_var != NULL ? getenv(g_db->password_var) : FAKEDB_PASSWORD;
}

/* Creates the case's database (empty, no schema). */
static int fresh(void **state)
{
    snprintf(g_name, sizeof g_name, "netdb_%d", g_n_dbs++);
    return g_db->fresh(g_name, g_url, sizeof g_url);
}

static store *open_store(void)
{
    store *st = NULL;
    zbso_err err = {0};
    store_options opt = {.create_if_empty = true};
    int rc = g_db->backend != NULL ? store_open_backend(g_db->backend, g_url, &opt, &st, &err)
                                   : store_open(g_url, &opt, &st, &err);
    if (rc != 0)
        fail_msg("store_open(%s) = %d: %s", g_db->name, rc, err.msg);
    return st;
}

/* The job as stored now (fails the case when it cannot be read). */
static zbso_job job_now(store *st, const char *id)
{
    get_arg g = {.id = id};
    zbso_err err = {0};
    if (store_exec_read(st, u_get, &g, &err) != 0)
        fail_msg("job %s: %s", id, err.msg);
    return g.job;
}

/* A job's trial numbers, ascending. */
typedef struct numbers_arg {
    const char *id;
    int64_t n[512];
    size_t len;
} numbers_arg;

static int collect_number(void *ctx, const zbso_trial *trial)
{
    numbers_arg *a = ctx;
    if (a->len < sizeof a->n / sizeof a->n[0])
        a->n[a->len] = trial->trial_number;
    a->len++;
    return 0;
}

static int u_numbers(store_txn *t, void *arg, zbso_err *err)
{
    numbers_arg *a = arg;
    store_trial_query q = {0};
    a->len = 0;
    return store_trials_list(t, a->id, &q, collect_number, a, err);
}

static int u_counts(store_txn *t, void *arg, zbso_err *err)
{
    return store_counts_get(t, arg, err);
}

/* ---- row locks ---- */

typedef struct lock_case {
    store *st_a, *st_b;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool a_locked;
    double a_fn_end;             /* when A's unit finished its work, before its COMMIT */
    double b_got;                /* when B's job_get returned */
    int64_t a_wrote, b_saw;      /* num_trials A stored, and what B then read */
    int rc_a, rc_b;
} lock_case;

/* Takes the next trial number under the job's row lock; A holds the lock for a while
 * after telling B to start. */
static int u_next_trial(store_txn *t, lock_case *c, bool is_a, zbso_err *err)
{
    zbso_job j;
    int rc = store_job_get(t, "locked", true, &j, err);
    if (rc < 0)
        return rc;
    if (is_a) {
        pthread_mutex_lock(&c->mu);
        c->a_locked = true;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
        sleep_s(0.4);
    } else {
        c->b_got = now_s();
        c->b_saw = j.num_trials;
    }
    j.num_trials++;
    j.revision++;
    zbso_trial tr = {.trial_number = j.num_trials, .batch_size = 8, .start_time = 1.0,
                     .lease_renewed_at = 1.0, .time = NAN, .energy = NAN, .metric = NAN};
    if ((rc = store_trial_insert(t, "locked", &tr, NULL, err)) < 0 ||
        (rc = store_job_update(t, &j, err)) < 0)
        return rc;
    if (is_a) {
        c->a_wrote = j.num_trials;
        c->a_fn_end = now_s();
    }
    return 0;
}

static int u_lock_a(store_txn *t, void *arg, zbso_err *err)
{
    return u_next_trial(t, arg, true, err);
}

static int u_lock_b(store_txn *t, void *arg, zbso_err *err)
{
    return u_next_trial(t, arg, false, err);
}

static void *lock_a_main(void *arg)
{
    lock_case *c = arg;
    zbso_err err = {0};
    c->rc_a = store_exec(c->st_a, u_lock_a, c, &err);
    return NULL;
}

/* Two stores (as two replicas would), one unit each on one job: B's job_get(for_update)
 * waits until A has committed, then reads A's num_trials, so the trial numbers follow
 * on. */
static void test_for_update_serializes_across_stores(void **state)
{
    lock_case c = {.rc_a = -100, .rc_b = -100};
    zbso_err err = {0};
    zbso_job j;
    pthread_t th;
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    c.st_a = open_store();
    c.st_b = open_store();
    make_job(&j, "locked");
    assert_int_equal(store_exec(c.st_a, u_insert, &j, &err), 0);

    assert_int_equal(pthread_create(&th, NULL, lock_a_main, &c), 0);
    pthread_mutex_lock(&c.mu);
    while (!c.a_locked)
        pthread_cond_wait(&c.cv, &c.mu);
    pthread_mutex_unlock(&c.mu);
    double b_start = now_s();
    c.rc_b = store_exec(c.st_b, u_lock_b, &c, &err);
    pthread_join(th, NULL);

    assert_int_equal(c.rc_a, 0);
    assert_int_equal(c.rc_b, 0);
    assert_int_equal(c.a_wrote, 1);
    assert_int_equal(c.b_saw, 1);         /* A's committed value, not the 0 before it */
    assert_true(c.b_got >= c.a_fn_end);   /* B waited for A's whole unit */
    assert_true(c.b_got - b_start > 0.2); /* ... which held the lock for 0.4 s */
    numbers_arg n = {.id = "locked"};
    assert_int_equal(store_exec_read(c.st_b, u_numbers, &n, &err), 0);
    assert_int_equal(n.len, 2);
    assert_int_equal(n.n[0], 1);
    assert_int_equal(n.n[1], 2);
    assert_int_equal(job_now(c.st_a, "locked").num_trials, 2);
    store_close(c.st_a);
    store_close(c.st_b);
    pthread_cond_destroy(&c.cv);
    pthread_mutex_destroy(&c.mu);
}

/* ---- replicas through the service ---- */

#define N_REPLICAS 3
#define N_CLIENTS 3              /* threads per replica */
#define N_NEXT 15                /* batch size requests per thread */

typedef struct next_thread {
    store *st;
    const svc_env *env;
    int64_t numbers[N_NEXT];
    int failures;
    char last_err[ZBSO_ERR_MSG_MAX];
} next_thread;

static void *next_main(void *arg)
{
    next_thread *a = arg;
    for (int i = 0; i < N_NEXT; i++) {
        zbso_trial_id id;
        zbso_err err = {0};
        if (svc_next_batch_size(a->st, a->env, "replicated", NULL, &id, NULL, &err) != 0) {
            a->failures++;
            snprintf(a->last_err, sizeof a->last_err, "%s", err.msg);
            a->numbers[i] = -1;
        } else {
            a->numbers[i] = id.trial_number;
        }
    }
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Three stores, three threads each, asking for batch sizes of one job at once: every
 * trial number from 1 to 135 is issued exactly once, and the job's counters agree. */
static void test_replicas_issue_unique_trial_numbers(void **state)
{
    svc_env env = svc_env_system(0);
    store *st[N_REPLICAS];
    next_thread th[N_REPLICAS * N_CLIENTS];
    pthread_t tid[N_REPLICAS * N_CLIENTS];
    zbso_job_spec spec, out;
    zbso_err err = {0};
    bool created = false;
    for (int i = 0; i < N_REPLICAS; i++)
        st[i] = open_store();
    spec_defaults(&spec);
    snprintf(spec.job_id, sizeof spec.job_id, "replicated");
    snprintf(spec.job_id_prefix, sizeof spec.job_id_prefix, "replicated");
    snprintf(spec.gpu_model, sizeof spec.gpu_model, "NVIDIA H200");
    spec.max_power = 700.0;
    spec.number_of_gpus = 1;
    spec.n_batch_sizes = 4;
    for (int i = 0; i < 4; i++)
        spec.batch_sizes[i] = 8 << i;
    spec.default_batch_size = 32;
    spec.has_mab_seed = true;
    spec.mab_seed = 1;
    if (spec_validate(&spec, &err) != 0)
        fail_msg("spec: %s", err.msg);
    assert_int_equal(svc_register_job(st[0], &env, &spec, &out, &created, NULL, &err), 0);
    assert_true(created);

    for (int i = 0; i < N_REPLICAS * N_CLIENTS; i++) {
        th[i] = (next_thread){.st = st[i % N_REPLICAS], .env = &env};
        assert_int_equal(pthread_create(&tid[i], NULL, next_main, &th[i]), 0);
    }
    int64_t all[N_REPLICAS * N_CLIENTS * N_NEXT];
    size_t n = 0;
    for (int i = 0; i < N_REPLICAS * N_CLIENTS; i++) {
        pthread_join(tid[i], NULL);
        if (th[i].failures != 0)
            fail_msg("thread %d: %d failures, last: %s", i, th[i].failures, th[i].last_err);
        for (int k = 0; k < N_NEXT; k++)
            all[n++] = th[i].numbers[k];
    }
    qsort(all, n, sizeof all[0], cmp_i64);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(all[i], (int64_t)i + 1);
    numbers_arg stored = {.id = "replicated"};
    assert_int_equal(store_exec_read(st[1], u_numbers, &stored, &err), 0);
    assert_int_equal(stored.len, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(stored.n[i], (int64_t)i + 1);
    zbso_job j = job_now(st[2], "replicated");
    assert_int_equal(j.num_trials, (int64_t)n);
    /* registered as 1, then one more per dispatched trial */
    assert_int_equal(j.revision, (int64_t)n + 1);
    for (int i = 0; i < N_REPLICAS; i++)
        store_close(st[i]);
}

#define N_RACES 12

typedef struct reg_thread {
    store *st;
    const svc_env *env;
    const zbso_job_spec *spec;
    pthread_barrier_t *start;
    int rc;
    bool created;
    char msg[ZBSO_ERR_MSG_MAX];
} reg_thread;

static void *reg_main(void *arg)
{
    reg_thread *a = arg;
    zbso_job_spec out;
    zbso_err err = {0};
    pthread_barrier_wait(a->start);
    a->rc = svc_register_job(a->st, a->env, a->spec, &out, &a->created, NULL, &err);
    snprintf(a->msg, sizeof a->msg, "%s", err.msg);
    return NULL;
}

/* Two stores register one job id at the same moment, N_RACES times: with the same spec
 * exactly one creates it and the other gets the re-registration answer; with different
 * specs one creates it and the other gets ZBSO_ECONFLICT (409). */
static void test_register_race(void **state)
{
    svc_env env = svc_env_system(0);
    store *st[2] = {open_store(), open_store()};
    pthread_barrier_t start;
    zbso_err err = {0};
    for (int round = 0; round < 2 * N_RACES; round++) {
        bool same = round < N_RACES;
        zbso_job_spec spec[2];
        for (int i = 0; i < 2; i++) {
            spec_defaults(&spec[i]);
            snprintf(spec[i].job_id, sizeof spec[i].job_id, "race-%d", round);
            snprintf(spec[i].job_id_prefix, sizeof spec[i].job_id_prefix, "race");
            snprintf(spec[i].gpu_model, sizeof spec[i].gpu_model, "NVIDIA H200");
            spec[i].max_power = 700.0;
            spec[i].number_of_gpus = 1;
            spec[i].n_batch_sizes = 2;
            spec[i].batch_sizes[0] = 16;
            spec[i].batch_sizes[1] = 32;
            spec[i].default_batch_size = 32;
            spec[i].max_epochs = same || i == 0 ? 10 : 11;
            if (spec_validate(&spec[i], &err) != 0)
                fail_msg("spec: %s", err.msg);
        }
        reg_thread th[2];
        pthread_t tid[2];
        pthread_barrier_init(&start, NULL, 2);
        for (int i = 0; i < 2; i++) {
            th[i] = (reg_thread){.st = st[i], .env = &env, .spec = &spec[i], .start = &start};
            assert_int_equal(pthread_create(&tid[i], NULL, reg_main, &th[i]), 0);
        }
        for (int i = 0; i < 2; i++)
            pthread_join(tid[i], NULL);
        pthread_barrier_destroy(&start);
        int n_created = 0, n_again = 0, n_conflict = 0;
        for (int i = 0; i < 2; i++) {
            if (th[i].rc == 0 && th[i].created)
                n_created++;
            else if (th[i].rc == 0)
                n_again++;
            else if (th[i].rc == ZBSO_ECONFLICT && strstr(th[i].msg, "different configuration"))
                n_conflict++;
            else
                fail_msg("round %d thread %d: %d %s", round, i, th[i].rc, th[i].msg);
        }
        assert_int_equal(n_created, 1);
        assert_int_equal(n_again, same ? 1 : 0);
        assert_int_equal(n_conflict, same ? 0 : 1);
    }
    store_counts counts;
    assert_int_equal(store_exec_read(st[0], u_counts, &counts, &err), 0);
    assert_int_equal(counts.jobs, 2 * N_RACES);
    store_close(st[0]);
    store_close(st[1]);
}

/* ---- deadlocks ---- */

/* Two units lock two jobs in opposite orders: the database breaks the deadlock by failing
 * one (PostgreSQL 40P01, InnoDB 1213), whose unit then runs again and succeeds; neither
 * caller sees an error. The rerun waits until the other unit has committed: a rerun that
 * asks for its first row again before the other unit has woken (under CPU load) can take
 * the row back and deadlock again, which can use up NETDB_ATTEMPTS: reruns are promised,
 * not that a rerun racing the same conflict wins. On fakedb (one lock per database) the
 * deadlock is injected into the second unit's second statement. */
typedef struct deadlock_case {
    store *st;
    bool row_locks;
    pthread_barrier_t both_locked;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done[2];                /* the unit's store_exec returned */
    int runs[2];
    int rc[2];
} deadlock_case;

typedef struct deadlock_arg {
    deadlock_case *c;
    int who;
} deadlock_arg;

/* Waits until the other unit's store_exec has returned, 30 s at most (then the case fails
 * on its counts rather than hanging). */
static void wait_for_other(deadlock_case *c, int who)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&c->mu);
    while (!c->done[1 - who] && pthread_cond_timedwait(&c->cv, &c->mu, &until) == 0)
        ;
    pthread_mutex_unlock(&c->mu);
}

static int u_lock_two(store_txn *t, void *argp, zbso_err *err)
{
    deadlock_arg *a = argp;
    const char *first = a->who == 0 ? "dl-x" : "dl-y", *second = a->who == 0 ? "dl-y" : "dl-x";
    bool rerun = a->c->runs[a->who]++ > 0;
    zbso_job j;
    if (rerun && a->c->row_locks)
        wait_for_other(a->c, a->who);
    int rc = store_job_get(t, first, true, &j, err);
    if (rc < 0)
        return rc;
    if (!rerun && a->c->row_locks)
        pthread_barrier_wait(&a->c->both_locked);
    else if (!rerun)
        fakedb_deadlock_at(1);
    if ((rc = store_job_get(t, second, true, &j, err)) < 0)
        return rc;
    j.num_trials++;
    return store_job_update(t, &j, err);
}

static void *deadlock_main(void *argp)
{
    deadlock_arg *a = argp;
    zbso_err err = {0};
    a->c->rc[a->who] = store_exec(a->c->st, u_lock_two, a, &err);
    pthread_mutex_lock(&a->c->mu);
    a->c->done[a->who] = true;
    pthread_cond_broadcast(&a->c->cv);
    pthread_mutex_unlock(&a->c->mu);
    return NULL;
}

static void test_deadlock_reruns_the_unit(void **state)
{
    zbso_err err = {0};
    zbso_job j;
    if (g_db->prepare_deadlock != NULL)
        assert_int_equal(g_db->prepare_deadlock(g_name), 0);
    deadlock_case c = {.st = open_store(), .row_locks = g_db->row_locks, .rc = {-100, -100}};
    make_job(&j, "dl-x");
    assert_int_equal(store_exec(c.st, u_insert, &j, &err), 0);
    make_job(&j, "dl-y");
    assert_int_equal(store_exec(c.st, u_insert, &j, &err), 0);
    pthread_barrier_init(&c.both_locked, NULL, 2);
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    deadlock_arg args[2] = {{&c, 0}, {&c, 1}};
    pthread_t tid[2];
    if (c.row_locks) {
        for (int i = 0; i < 2; i++)
            assert_int_equal(pthread_create(&tid[i], NULL, deadlock_main, &args[i]), 0);
        for (int i = 0; i < 2; i++)
            pthread_join(tid[i], NULL);
    } else {
        /* one lock for the whole database: the units run one after the other */
        for (int i = 0; i < 2; i++)
            deadlock_main(&args[i]);
    }
    pthread_barrier_destroy(&c.both_locked);
    pthread_cond_destroy(&c.cv);
    pthread_mutex_destroy(&c.mu);
    assert_int_equal(c.rc[0], 0);
    assert_int_equal(c.rc[1], 0);
    if (c.row_locks)
        assert_int_equal(c.runs[0] + c.runs[1], 3); /* one of them ran twice */
    else
        assert_int_equal(c.runs[0] * 10 + c.runs[1], 22); /* each victim of an injection */
    /* /metrics' zbso_store_reruns_total counts the reruns */
    store_stats stats;
    store_stats_get(c.st, &stats);
    assert_int_equal(stats.reruns, (uint64_t)(c.runs[0] + c.runs[1] - 2));
    assert_int_equal(job_now(c.st, "dl-x").num_trials + job_now(c.st, "dl-y").num_trials, 2);
    store_close(c.st);
}

/* A deadlock that persists through every run (NETDB_ATTEMPTS) is ZBSO_EUNAVAIL, a 503 the
 * client retries, and the unit left nothing behind. Only fakedb can make one on demand,
 * so only fakedb runs this case. */
static int u_bump(store_txn *t, void *arg, zbso_err *err)
{
    int *runs = arg;
    zbso_job j;
    int rc = store_job_get(t, "dl-x", true, &j, err);
    if (rc < 0)
        return rc;
    j.num_trials++;
    if ((rc = store_job_update(t, &j, err)) < 0)
        return rc;
    (*runs)++;
    fakedb_deadlock_at(1);
    return store_job_get(t, "dl-x", true, &j, err);
}

static void test_persistent_deadlock_is_unavailable(void **state)
{
    zbso_err err = {0};
    zbso_job j;
    int runs = 0;
    store *st = open_store();
    make_job(&j, "dl-x");
    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    assert_int_equal(store_exec(st, u_bump, &runs, &err), ZBSO_EUNAVAIL);
    assert_int_equal(runs, 3);
    assert_non_null(strstr(err.msg, "a conflict with a concurrent transaction persisted"));
    assert_int_equal(job_now(st, "dl-x").num_trials, 0);
    store_stats stats;
    store_stats_get(st, &stats);
    assert_int_equal(stats.reruns, 2);
    store_close(st);
}

/* ---- nesting ---- */

typedef struct nest_arg {
    store *self, *other;
    int rc_other, rc_self;
    char msg[ZBSO_ERR_MSG_MAX];
} nest_arg;

static int u_nest(store_txn *t, void *arg, zbso_err *err)
{
    nest_arg *a = arg;
    get_arg g = {.id = "nested"};
    zbso_err e = {0};
    int rc = store_job_get(t, "nested", false, &g.job, err);
    if (rc < 0)
        return rc;
    a->rc_other = store_exec_read(a->other, u_get, &g, &e);
    a->rc_self = store_exec_read(a->self, u_get, &g, &e);
    snprintf(a->msg, sizeof a->msg, "%s", e.msg);
    return 0;
}

/* A unit may run a unit of another store (another database); a unit of its own store
 * inside it is refused with ZBSO_EINTERNAL (it could wait on itself), also after the
 * other store's unit has come and gone. */
static void test_nested_units(void **state)
{
    char name2[40], url2[512];
    store *st2 = NULL;
    zbso_err err = {0};
    zbso_job j;
    nest_arg a = {.self = open_store(), .rc_other = -100, .rc_self = -100};
    snprintf(name2, sizeof name2, "%s_b", g_name);
    assert_int_equal(g_db->fresh(name2, url2, sizeof url2), 0);
    store_options opt = {.create_if_empty = true};
    assert_int_equal(g_db->backend != NULL
                         ? store_open_backend(g_db->backend, url2, &opt, &st2, &err)
                         : store_open(url2, &opt, &st2, &err), 0);
    a.other = st2;
    make_job(&j, "nested");
    assert_int_equal(store_exec(a.self, u_insert, &j, &err), 0);
    assert_int_equal(store_exec(st2, u_insert, &j, &err), 0);
    assert_int_equal(store_exec(a.self, u_nest, &a, &err), 0);
    assert_int_equal(a.rc_other, 0);
    assert_int_equal(a.rc_self, ZBSO_EINTERNAL);
    assert_non_null(strstr(a.msg, "inside a unit of work"));
    store_close(st2);
    store_close(a.self);
}

/* ---- outage ---- */

typedef struct holder {
    store *st;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool inside, server_stopped;
    int rc;
    char msg[ZBSO_ERR_MSG_MAX];
} holder;

/* A unit in progress while the server goes away: its next statement fails. */
static int u_hold(store_txn *t, void *arg, zbso_err *err)
{
    holder *h = arg;
    zbso_job j;
    int rc = store_job_get(t, "outage", true, &j, err);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&h->mu);
    h->inside = true;
    pthread_cond_broadcast(&h->cv);
    while (!h->server_stopped)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    j.num_trials = 1000;
    return store_job_update(t, &j, err);
}

static void *hold_main(void *arg)
{
    holder *h = arg;
    zbso_err err = {0};
    h->rc = store_exec(h->st, u_hold, h, &err);
    snprintf(h->msg, sizeof h->msg, "%s", err.msg);
    return NULL;
}

/* Stops the server under an open store: a unit in flight, later units and read units all
 * get ZBSO_EUNAVAIL, each within seconds, without the password in any message; once the
 * server is back the same store works again (it reconnects) and nothing was lost. Also a
 * store cannot be opened while the server is down, quickly. */
static void test_unavailable_then_reconnects(void **state)
{
    store *st = open_store();
    zbso_err err = {0};
    zbso_job j;
    make_job(&j, "outage");
    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    /* fill the pool with several connections, all of which the outage will break */
    get_arg g = {.id = "outage"};
    for (int i = 0; i < 4; i++)
        assert_int_equal(store_exec_read(st, u_get, &g, &err), 0);

    holder h = {.st = st, .rc = -100};
    pthread_t th;
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    assert_int_equal(pthread_create(&th, NULL, hold_main, &h), 0);
    pthread_mutex_lock(&h.mu);
    while (!h.inside)
        pthread_cond_wait(&h.cv, &h.mu);
    pthread_mutex_unlock(&h.mu);

    assert_int_equal(g_db->ctl("stop fast"), 0);
    pthread_mutex_lock(&h.mu);
    h.server_stopped = true;
    pthread_cond_broadcast(&h.cv);
    pthread_mutex_unlock(&h.mu);
    pthread_join(th, NULL);
    assert_int_equal(h.rc, ZBSO_EUNAVAIL);
    assert_null(strstr(h.msg, password()));

    for (int i = 0; i < 3; i++) {
        double t0 = now_s();
        assert_int_equal(store_exec(st, u_insert, &j, &err), ZBSO_EUNAVAIL);
        assert_true(now_s() - t0 < 5.0);
        assert_non_null(strstr(err.msg, "***@127.0.0.1"));
        assert_null(strstr(err.msg, password()));
        t0 = now_s();
        assert_int_equal(store_exec_read(st, u_get, &g, &err), ZBSO_EUNAVAIL);
        assert_true(now_s() - t0 < 5.0);
    }
    store *st2 = NULL;
    store_options opt = {.create_if_empty = true};
    double t0 = now_s();
    int rc = g_db->backend != NULL ? store_open_backend(g_db->backend, g_url, &opt, &st2, &err)
                                   : store_open(g_url, &opt, &st2, &err);
    assert_int_equal(rc, ZBSO_EUNAVAIL);
    assert_true(now_s() - t0 < 5.0);
    assert_null(st2);
    assert_non_null(strstr(err.msg, "cannot connect"));
    assert_null(strstr(err.msg, password()));

    assert_int_equal(g_db->ctl("start"), 0);
    /* the first unit after the restart already succeeds: stale connections are
     * replaced before the unit runs */
    assert_int_equal(store_exec_read(st, u_get, &g, &err), 0);
    assert_int_equal(g.job.num_trials, 0); /* the unit cut off by the outage left nothing */
    make_job(&j, "after-outage");
    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(store_exec(st, u_get, &g, &err), 0);

    /* a restart between two units: the pooled connections are all stale, and the next
     * unit still succeeds (it moves on to a fresh connection) */
    assert_int_equal(g_db->ctl("stop fast"), 0);
    assert_int_equal(g_db->ctl("start"), 0);
    assert_int_equal(store_exec_read(st, u_get, &g, &err), 0);
    assert_int_equal(store_exec(st, u_get, &g, &err), 0);

    /* an immediate stop (a crash) loses nothing committed */
    assert_int_equal(g_db->ctl("stop immediate"), 0);
    assert_int_equal(store_exec(st, u_get, &g, &err), ZBSO_EUNAVAIL);
    assert_int_equal(g_db->ctl("start"), 0);
    g.id = "after-outage";
    assert_int_equal(store_exec(st, u_get, &g, &err), 0);
    store_close(st);
    pthread_cond_destroy(&h.cv);
    pthread_mutex_destroy(&h.mu);
}

int main(int argc, char **argv)
{
    const char *which = argc == 2 ? argv[1] : "";
    for (size_t i = 0; i < sizeof dbs / sizeof dbs[0]; i++)
        if (strncmp(which, "--", 2) == 0 && strcmp(which + 2, i == 0 ? "pg" : i == 1 ?
                                                   "mysql" : "fake") == 0)
            g_db = &dbs[i];
    if (g_db == NULL) {
        fprintf(stderr, "usage: test_netdb_suite --pg | --mysql | --fake\n");
        return 2;
    }
    if ((g_db == &dbs[0] && !pg_env_ok()) || (g_db == &dbs[1] && !my_env_ok()))
        return 1;
    struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_for_update_serializes_across_stores, fresh),
        cmocka_unit_test_setup(test_replicas_issue_unique_trial_numbers, fresh),
        cmocka_unit_test_setup(test_register_race, fresh),
        cmocka_unit_test_setup(test_deadlock_reruns_the_unit, fresh),
        cmocka_unit_test_setup(test_nested_units, fresh),
        /* last: it stops and restarts the server */
        cmocka_unit_test_setup(test_unavailable_then_reconnects, fresh),
        /* fakedb only (past the end of the list for the others) */
        cmocka_unit_test_setup(test_persistent_deadlock_is_unavailable, fresh),
    };
    size_t n_tests = sizeof tests / sizeof tests[0] - (g_db->row_locks ? 1 : 0);
    char group[64];
    snprintf(group, sizeof group, "netdb suite on %s", g_db->name);
    int failed = _cmocka_run_group_tests(group, tests, n_tests, NULL, NULL);
    fakedb_cleanup();
    return failed;
}
