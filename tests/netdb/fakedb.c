/* fakedb.c: the fakedb driver (fakedb.h): a netdb.c driver holding only "library calls"
 * (here: memory:// units begun and ended by separate calls) and no pool or rerun code, to
 * show that a fourth networked database needs nothing more, and to run the shared
 * database suite through netdb.c without a server process. Test code: aborts on misuse. */
#include "fakedb.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/dburl.h"
#include "store/netdb/netdb.h"

#define FAKE_DBS_MAX 64

typedef struct fake_database {
    char name[64];
    store *mem;                  /* memory:// */
} fake_database;

/* The server: its databases and whether it runs. epoch counts the stops, so that a
 * connection made before the last stop knows itself broken. */
static struct {
    pthread_mutex_t mu;
    bool down;
    unsigned epoch;
    int deadlock_in;             /* > 0: the statement this many from now fails */
    fake_database dbs[FAKE_DBS_MAX];
    size_t n_dbs;
} server = {.mu = PTHREAD_MUTEX_INITIALIZER};

typedef struct fake_conn {
    netdb_conn base;
    unsigned epoch;
    store *mem;
    store_txn *unit;             /* the memory unit this connection's transaction holds */
} fake_conn;

typedef struct fake_store {
    netdb base;
    char name[64];
} fake_store;

static fake_conn *conn_of(store_txn *t)
{
    return (fake_conn *)((netdb_txn *)t)->c;
}

/* ---- the server ---- */

int fakedb_fresh(const char *name, char *url, size_t cap)
{
    zbso_err err = {0};
    store *mem = NULL;
    store_options opt = {.create_if_empty = true, .discard_curves = true};
    if (store_open("memory://", &opt, &mem, &err) < 0)
        return -1;
    pthread_mutex_lock(&server.mu);
    fake_database *d = NULL;
    for (size_t i = 0; i < server.n_dbs && d == NULL; i++)
        if (strcmp(server.dbs[i].name, name) == 0)
            d = &server.dbs[i];
    if (d == NULL && server.n_dbs < FAKE_DBS_MAX)
        d = &server.dbs[server.n_dbs++];
    if (d == NULL) {
        pthread_mutex_unlock(&server.mu);
        store_close(mem);
        return -1;
    }
    store_close(d->mem);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->mem = mem;
    pthread_mutex_unlock(&server.mu);
    snprintf(url, cap, "fakedb://zbso:%s@127.0.0.1/%s", FAKEDB_PASSWORD, name);
    return 0;
}

int fakedb_ctl(const char *action)
{
    pthread_mutex_lock(&server.mu);
    int rc = 0;
    if (strcmp(action, "stop fast") == 0 || strcmp(action, "stop immediate") == 0) {
        server.down = true;
        server.epoch++;
    } else if (strcmp(action, "start") == 0) {
        server.down = false;
    } else {
        rc = -1;
    }
    pthread_mutex_unlock(&server.mu);
    return rc;
}

void fakedb_deadlock_at(int nth)
{
    pthread_mutex_lock(&server.mu);
    server.deadlock_in = nth;
    pthread_mutex_unlock(&server.mu);
}

void fakedb_cleanup(void)
{
    pthread_mutex_lock(&server.mu);
    for (size_t i = 0; i < server.n_dbs; i++)
        store_close(server.dbs[i].mem);
    server.n_dbs = 0;
    pthread_mutex_unlock(&server.mu);
}

/* ---- statements ---- */

/* What every statement does first: finds a lost connection (marking the unit stale when
 * nothing of it ran yet), meets an injected deadlock, and starts the unit's transaction.
 * Returns 0, or the failure recorded in t. */
static int statement(store_txn *tb, const char *what, zbso_err *err)
{
    netdb_txn *t = (netdb_txn *)tb;
    fake_conn *c = conn_of(tb);
    if (t->aborted)
        return netdb_failed_before(t, err);
    pthread_mutex_lock(&server.mu);
    bool lost = server.down || c->epoch != server.epoch;
    bool deadlock = !lost && server.deadlock_in > 0 && --server.deadlock_in == 0;
    pthread_mutex_unlock(&server.mu);
    if (lost) {
        netdb_fault f = {.code = ZBSO_EUNAVAIL, .broken = true,
                         .cause = "the database server is unreachable or shutting down"};
        t->stale = !t->begun;
        return netdb_txn_fail(t, &f, "server closed the connection", "fake", what, NULL, err);
    }
    if (deadlock) {
        netdb_fault f = {.code = ZBSO_EUNAVAIL, .retry = true,
                         .cause = "a conflict with a concurrent transaction persisted"};
        return netdb_txn_fail(t, &f, "deadlock detected", "fake", what, NULL, err);
    }
    if (!t->begun) {
        int rc = store_memory_begin(c->mem, t->base.read_only, &c->unit, err);
        if (rc < 0)
            return rc;
        t->begun = true;
    }
    return 0;
}

/* Runs CALL (an operation of memory://'s table on unit m) after statement(). */
#define FORWARD(tb, err, CALL)                                                                \
    do {                                                                                      \
        int rc_ = statement(tb, __func__, err);                                               \
        if (rc_ < 0)                                                                          \
            return rc_;                                                                       \
        store_txn *m = conn_of(tb)->unit;                                                     \
        return m->ops->CALL;                                                                  \
    } while (0)

static int f_job_get(store_txn *t, const char *id, bool fu, zbso_job *out, zbso_err *err)
{
    FORWARD(t, err, job_get(m, id, fu, out, err));
}

static int f_job_insert(store_txn *t, const zbso_job *job, zbso_err *err)
{
    FORWARD(t, err, job_insert(m, job, err));
}

static int f_job_update(store_txn *t, const zbso_job *job, zbso_err *err)
{
    FORWARD(t, err, job_update(m, job, err));
}

static int f_job_delete(store_txn *t, const char *id, zbso_err *err)
{
    FORWARD(t, err, job_delete(m, id, err));
}

static int f_job_ids(store_txn *t, int (*fn)(void *ctx, const char *job_id), void *ctx,
                     zbso_err *err)
{
    FORWARD(t, err, job_ids(m, fn, ctx, err));
}

static int f_trial_insert(store_txn *t, const char *id, const zbso_trial *trial,
                          const char *key, zbso_err *err)
{
    FORWARD(t, err, trial_insert(m, id, trial, key, err));
}

static int f_trial_get(store_txn *t, const char *id, int64_t n, zbso_trial *out,
                       zbso_err *err)
{
    FORWARD(t, err, trial_get(m, id, n, out, err));
}

static int f_trial_by_key(store_txn *t, const char *id, const char *key, zbso_trial *out,
                          zbso_err *err)
{
    FORWARD(t, err, trial_by_key(m, id, key, out, err));
}

static int f_trial_update(store_txn *t, const char *id, const zbso_trial *trial,
                          zbso_err *err)
{
    FORWARD(t, err, trial_update(m, id, trial, err));
}

static int f_trials_list(store_txn *t, const char *id, const store_trial_query *q,
                         store_trial_fn fn, void *ctx, zbso_err *err)
{
    FORWARD(t, err, trials_list(m, id, q, fn, ctx, err));
}

static int f_trials_fail_stale(store_txn *t, const char *id, double cutoff, double now,
                               int64_t *n_failed, zbso_err *err)
{
    FORWARD(t, err, trials_fail_stale(m, id, cutoff, now, n_failed, err));
}

static int f_arms_get(store_txn *t, const char *id, zbso_arm *out, size_t cap, size_t *n_out,
                      zbso_err *err)
{
    FORWARD(t, err, arms_get(m, id, out, cap, n_out, err));
}

static int f_arm_put(store_txn *t, const char *id, const zbso_arm *arm, zbso_err *err)
{
    FORWARD(t, err, arm_put(m, id, arm, err));
}

static int f_jobs_list(store_txn *t, const store_job_query *q, store_job_fn fn, void *ctx,
                       zbso_err *err)
{
    FORWARD(t, err, jobs_list(m, q, fn, ctx, err));
}

static int f_reports_put(store_txn *t, const char *id, int64_t n, const zbso_curve_point *p,
                         size_t n_points, zbso_err *err)
{
    FORWARD(t, err, reports_put(m, id, n, p, n_points, err));
}

static int f_reports_list(store_txn *t, const char *id, int64_t n, store_point_fn fn,
                          void *ctx, zbso_err *err)
{
    FORWARD(t, err, reports_list(m, id, n, fn, ctx, err));
}

static int f_counts(store_txn *t, store_counts *out, zbso_err *err)
{
    FORWARD(t, err, counts(m, out, err));
}

static int f_profile_put(store_txn *t, const char *id, const zbso_power_profile *p,
                         zbso_err *err)
{
    FORWARD(t, err, profile_put(m, id, p, err));
}

static int f_profile_get(store_txn *t, const char *id, int64_t bs, zbso_power_profile *out,
                         zbso_err *err)
{
    FORWARD(t, err, profile_get(m, id, bs, out, err));
}

static int f_profiles_list(store_txn *t, const char *id, store_profile_fn fn, void *ctx,
                           zbso_err *err)
{
    FORWARD(t, err, profiles_list(m, id, fn, ctx, err));
}

static const store_txn_ops fake_ops = {
    .job_get = f_job_get,
    .job_insert = f_job_insert,
    .job_update = f_job_update,
    .job_delete = f_job_delete,
    .job_ids = f_job_ids,
    .trial_insert = f_trial_insert,
    .trial_get = f_trial_get,
    .trial_by_key = f_trial_by_key,
    .trial_update = f_trial_update,
    .trials_list = f_trials_list,
    .trials_fail_stale = f_trials_fail_stale,
    .arms_get = f_arms_get,
    .arm_put = f_arm_put,
    .jobs_list = f_jobs_list,
    .reports_put = f_reports_put,
    .reports_list = f_reports_list,
    .counts = f_counts,
    .profile_put = f_profile_put,
    .profile_get = f_profile_get,
    .profiles_list = f_profiles_list,
};

/* ---- the driver table ---- */

static int f_init(netdb *st, const char *url, const store_options *opt, zbso_err *err)
{
    fake_store *fs = (fake_store *)st;
    const char *slash = strrchr(url, '/');
    dburl_mask(url, st->shown, sizeof st->shown);
    if (strncmp(url, "fakedb://", 9) != 0 || slash == NULL || slash[1] == '\0')
        return err_set(err, ZBSO_EINVAL, "database URL \"%s\": not fakedb://.../NAME",
                       st->shown);
    snprintf(fs->name, sizeof fs->name, "%s", slash + 1);
    return 0;
}

static void f_disconnect(netdb_conn *nc)
{
    fake_conn *c = (fake_conn *)nc;
    if (c != NULL && c->unit != NULL)
        store_memory_end(c->unit, false);
    free(c);
}

static int f_connect(netdb *st, netdb_conn **out, zbso_err *err)
{
    fake_store *fs = (fake_store *)st;
    fake_conn *c = calloc(1, sizeof *c);
    if (c == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory connecting to %s", st->shown);
    pthread_mutex_lock(&server.mu);
    bool down = server.down;
    c->epoch = server.epoch;
    for (size_t i = 0; i < server.n_dbs; i++)
        if (strcmp(server.dbs[i].name, fs->name) == 0)
            c->mem = server.dbs[i].mem;
    pthread_mutex_unlock(&server.mu);
    if (down || c->mem == NULL) {
        free(c);
        return err_set(err, ZBSO_EUNAVAIL, "cannot connect to fakedb at %s: %s", st->shown,
                       down ? "connection refused" : "no such database");
    }
    *out = &c->base;
    return 0;
}

static int f_check(netdb *st, netdb_conn *c, zbso_err *err)
{
    return 0;
}

/* Nothing is ever left pending: end() ends the memory unit at once. */
static bool f_settle(netdb_conn *c)
{
    return true;
}

static bool f_reusable(netdb_conn *nc)
{
    fake_conn *c = (fake_conn *)nc;
    pthread_mutex_lock(&server.mu);
    bool ok = !server.down && c->epoch == server.epoch;
    pthread_mutex_unlock(&server.mu);
    return ok && c->unit == NULL;
}

static int f_commit(netdb_txn *t, zbso_err *err)
{
    fake_conn *c = (fake_conn *)t->c;
    pthread_mutex_lock(&server.mu);
    bool lost = server.down || c->epoch != server.epoch;
    pthread_mutex_unlock(&server.mu);
    if (lost) {
        /* the disconnect rolls the unit back */
        netdb_fault f = {.code = ZBSO_EUNAVAIL, .broken = true,
                         .cause = "the database server is unreachable or shutting down"};
        return netdb_txn_fail(t, &f, "server closed the connection", "fake", "COMMIT", NULL,
                              err);
    }
    store_memory_end(c->unit, true);
    c->unit = NULL;
    return 0;
}

static void f_end(netdb_txn *t, bool commit)
{
    fake_conn *c = (fake_conn *)t->c;
    store_memory_end(c->unit, commit);
    c->unit = NULL;
}

/* memory:// has schema version 1 only, always current. */
static int f_schema_unit(store_txn *t, void *argp, zbso_err *err)
{
    netdb_schema_arg *a = argp;
    int to = 1, rc = statement(t, "the schema", err);
    if (rc == 0)
        rc = a->plan(a->ctx, 1, false, &to, err);
    if (rc == 0 && to != 1)
        rc = err_set(err, ZBSO_EINTERNAL, "fakedb has schema version 1 only, not %d", to);
    return rc;
}

static int f_probe_unit(store_txn *t, void *arg, zbso_err *err)
{
    return statement(t, "the write probe", err);
}

static const netdb_driver fake_driver;

static int f_open(const char *url, const store_options *opt, store **out, zbso_err *err)
{
    return netdb_open(&fake_driver, url, opt, out, err);
}

const store_backend fakedb_backend = NETDB_BACKEND("fakedb", f_open, 1, NULL, NULL);

static const netdb_driver fake_driver = {
    .version = NETDB_DRIVER_VERSION,
    .name = "fakedb",
    .backend = &fakedb_backend,
    .store_size = sizeof(fake_store),
    .ops = &fake_ops,
    .init = f_init,
    .connect = f_connect,
    .disconnect = f_disconnect,
    .check = f_check,
    .settle = f_settle,
    .reusable = f_reusable,
    .commit = f_commit,
    .end = f_end,
    .schema_unit = f_schema_unit,
    .write_probe_unit = f_probe_unit,
};
