/* netdb.c: the engine of the databases behind a socket (netdb.h), once for every driver:
 * a bounded pool of connections, and units of work each run as one transaction on one
 * pooled connection in the caller's thread. Holds no SQL and calls no client library:
 * the driver's table (pg_engine.c, mysql_engine.c) does both. Never writes a password
 * into a message or a log line (st->shown is masked by the driver's init).
 *
 * Design notes (docs/internals/STORE.md).
 * - Correctness across replicas rests on the database: job_get(for_update) is SELECT ...
 *   FOR UPDATE, so units on one job are serialized by the row lock whichever process runs
 *   them, and trial numbers come from the locked job row.
 * - Round trips: only a read-write unit that succeeded waits for its COMMIT (the answer
 *   rests on it). Read units and failed units send their end and do not wait: the next
 *   user of the connection reads that result (driver->settle in pool_get).
 * - Reruns: a failure the driver marks retryable (serialization failure, deadlock, lock
 *   wait timeout) or an insert that meets a job another transaction committed after this
 *   unit found it missing run the unit again, NETDB_ATTEMPTS times at most. A pooled
 *   connection found lost by a unit's first statement (the server restarted) is replaced
 *   and the unit moved to the next one, so the first request after an outage succeeds.
 * - Failures become store codes once, in netdb_txn_fail with the driver's classification:
 *   a lost server is ZBSO_EUNAVAIL (503 with Retry-After). */
#include "store/netdb/netdb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

/* The store whose unit of work this thread is running, to refuse a nested unit. */
static _Thread_local const netdb *unit_store;

/* ---- failures ---- */

void netdb_one_line(const char *m, char *out, size_t cap)
{
    if (m == NULL || m[0] == '\0')
        m = "unknown error";
    size_t n = 0;
    for (; m[n] != '\0' && n + 1 < cap; n++)
        out[n] = m[n] == '\n' || m[n] == '\r' ? ' ' : m[n];
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

int netdb_txn_fail(netdb_txn *t, const netdb_fault *f, const char *msg, const char *detail,
                   const char *what, const char *job_id, zbso_err *err)
{
    char line[384], why[160] = "";
    int code = f->code;
    netdb_one_line(msg, line, sizeof line);
    if (f->broken) {
        t->broken = true;
        code = ZBSO_EUNAVAIL;
    } else if (f->retry) {
        t->retry = true;
    } else if (code == ZBSO_EINVAL) {
        /* A value the database cannot take, such as a job id that is not valid in its
         * encoding: the message leaves the id out, since it may not be printable. */
        job_id = NULL;
    }
    if (f->cause != NULL)
        snprintf(why, sizeof why, "%s: ", f->cause);
    zbso_err e;
    if (job_id == NULL)
        err_set(&e, code, "%s: %s failed on %s: %s%s (%s)", t->st->drv->name, what,
                t->st->shown, why, line, detail);
    else
        err_set(&e, code, "%s: %s for job \"%.300s\" failed: %s%s (%s)", t->st->drv->name,
                what, job_id, why, line, detail);
    if (!f->statement_only && !t->aborted) {
        t->aborted = true;
        t->first = e;
    }
    if (err != NULL)
        *err = e;
    return code;
}

int netdb_failed_before(netdb_txn *t, zbso_err *err)
{
    if (err != NULL)
        *err = t->first;
    return t->first.code;
}

/* ---- the pool ---- */

/* Closes c, which held a slot: the slot opens for a new connection. */
static void pool_drop(netdb *st, netdb_conn *c)
{
    st->drv->disconnect(c);
    pthread_mutex_lock(&st->mu);
    st->n_open--;
    pthread_cond_signal(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

/* Takes a connection from the pool, opening one while fewer than NETDB_POOL_MAX exist,
 * else waiting for one to come back; a pooled one whose last unit's end failed is closed
 * and the next one taken. Returns 0 with *out, or the driver's connect failure. */
static int pool_get(netdb *st, netdb_conn **out, zbso_err *err)
{
    for (;;) {
        pthread_mutex_lock(&st->mu);
        while (st->free_conns == NULL && st->n_open == NETDB_POOL_MAX)
            pthread_cond_wait(&st->cv, &st->mu);
        netdb_conn *c = st->free_conns;
        if (c == NULL)
            break;
        st->free_conns = c->next_free;
        st->n_free--;
        pthread_mutex_unlock(&st->mu);
        if (!c->end_pending) {
            *out = c;
            return 0;
        }
        bool ok = st->drv->settle(c);
        c->end_pending = false;
        if (ok) {
            *out = c;
            return 0;
        }
        pool_drop(st, c);
    }
    /* Count the new connection now, so that connecting needs no lock held. */
    st->n_open++;
    pthread_mutex_unlock(&st->mu);
    int rc = st->drv->connect(st, out, err);
    if (rc < 0) {
        pthread_mutex_lock(&st->mu);
        st->n_open--;
        pthread_cond_signal(&st->cv);
        pthread_mutex_unlock(&st->mu);
    }
    return rc;
}

/* Gives c back to the pool, or closes it when it is broken (lost, or inside a
 * transaction it could not end), so that a later unit connects afresh. */
static void pool_put(netdb *st, netdb_conn *c, bool broken)
{
    if (broken || !st->drv->reusable(c)) {
        pool_drop(st, c);
        return;
    }
    pthread_mutex_lock(&st->mu);
    c->next_free = st->free_conns;
    st->free_conns = c;
    st->n_free++;
    pthread_cond_signal(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

/* ---- units of work ---- */

/* Ends t's transaction and returns the connection to the pool: a read-write unit that
 * succeeded with a COMMIT waited for; anything else through the driver's end, which does
 * not wait where it can. Returns 0, or the commit's translated failure (ZBSO_EUNAVAIL
 * when the connection was lost during the commit: its outcome is then unknown, which the
 * message says). */
static int txn_end(netdb *st, netdb_txn *t, bool commit, zbso_err *err)
{
    int rc = 0;
    if (!t->begun || t->broken) {
        /* Nothing was sent, or nothing more can be: no transaction to end here. */
    } else if (commit && !t->base.read_only) {
        if (st->echo_sql)
            log_info("sql: COMMIT");
        rc = st->drv->commit(t, err);
        if (rc < 0 && t->broken)
            rc = err_set(err, ZBSO_EUNAVAIL, "%s; the connection was lost during the commit,"
                         " whose outcome is unknown", t->first.msg);
    } else {
        if (st->echo_sql)
            log_info("sql: %s", commit ? "COMMIT" : "ROLLBACK");
        st->drv->end(t, commit);
    }
    pool_put(st, t->c, t->broken);
    t->c = NULL;
    return rc;
}

/* Runs fn as one transaction (read_only: one snapshot, writes refused) on a pooled
 * connection, in the calling thread. fn's failure rolls everything back. A unit that
 * meets a retryable conflict or a job another transaction inserted meanwhile runs again,
 * NETDB_ATTEMPTS times at most. A unit whose first statement finds its pooled connection
 * lost (the server restarted since it was last used) runs again on the next connection, a
 * fresh one at the latest, so that the first unit after an outage already succeeds.
 * Returns fn's code, a translated database error (ZBSO_EUNAVAIL when the server is
 * unreachable or the conflict persists), or ZBSO_EINTERNAL inside a unit of work of st. */
static int run_unit(netdb *st, bool read_only, store_work_fn fn, void *arg, zbso_err *err)
{
    zbso_err own;
    int rc = 0;
    if (err == NULL)
        err = &own;
    if (unit_store == st)
        return err_set(err, ZBSO_EINTERNAL, "store_exec%s called inside a unit of work on %s",
                       read_only ? "_read" : "", st->shown);
    for (int attempt = 1, stale_runs = 0;; attempt++) {
        netdb_txn t;
        memset(&t, 0, sizeof t);
        t.base.ops = st->drv->ops;
        t.base.read_only = read_only;
        t.st = st;
        err_clear(err);
        if ((rc = pool_get(st, &t.c, err)) < 0)
            return rc;
        /* A unit may run a unit of another store (a copy between databases): the outer
         * store is put back after, so that it still refuses a nested unit of its own. */
        const netdb *outer = unit_store;
        unit_store = st;
        rc = fn(&t.base, arg, err);
        unit_store = outer;
        if (t.broken) {
            /* Whatever fn made of it, the unit did not happen. */
            *err = t.first;
            rc = t.first.code;
        } else if (rc == 0 && t.aborted) {
            /* fn carried on past a failed statement: the database rolls it all back. */
            rc = err_set(err, t.first.code, "%s (the unit went on after it and was rolled"
                         " back)", t.first.msg);
        }
        int end_rc = txn_end(st, &t, rc == 0, err);
        if (rc == 0)
            rc = end_rc;
        if (t.stale && stale_runs++ < NETDB_POOL_MAX) {
            attempt--;
            continue;
        }
        if (rc == 0 || !t.retry || attempt == NETDB_ATTEMPTS)
            return rc;
        atomic_fetch_add_explicit(&st->base.reruns, 1, memory_order_relaxed);
        log_debug("%s: running a unit of work again (attempt %d): %s", st->drv->name,
                  attempt + 1, err->msg);
    }
}

int netdb_exec(store *base, store_work_fn fn, void *arg, zbso_err *err)
{
    return run_unit((netdb *)base, false, fn, arg, err);
}

int netdb_exec_read(store *base, store_work_fn fn, void *arg, zbso_err *err)
{
    return run_unit((netdb *)base, true, fn, arg, err);
}

/* The schema runs as one unit of work (the driver has the SQL). */
int netdb_schema_run(store *base, store_schema_plan_fn plan, void *ctx, zbso_err *err)
{
    netdb_schema_arg a = {plan, ctx};
    return netdb_exec(base, ((netdb *)base)->drv->schema_unit, &a, err);
}

/* One round trip or two: the write probe as a unit of work. */
int netdb_health(store *base, zbso_err *err)
{
    return netdb_exec(base, ((netdb *)base)->drv->write_probe_unit, NULL, err);
}

/* ---- open and close ---- */

int netdb_open(const netdb_driver *drv, const char *url, const store_options *opt,
               store **out, zbso_err *err)
{
    int rc = 0;
    netdb_conn *c = NULL;
    *out = NULL;
    if (drv->version != NETDB_DRIVER_VERSION || drv->store_size < sizeof(netdb))
        return err_set(err, ZBSO_EINTERNAL, "%s: driver table of version %d, not %d",
                       drv->name, drv->version, NETDB_DRIVER_VERSION);
    netdb *st = calloc(1, drv->store_size);
    if (st == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory opening a %s store", drv->name);
    st->base.backend = drv->backend;
    st->base.shown = st->shown;
    st->drv = drv;
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    st->echo_sql = opt->echo_sql;
    if ((rc = drv->init(st, url, opt, err)) < 0)
        goto out;
    if ((rc = pool_get(st, &c, err)) < 0)
        goto out;
    rc = drv->check(st, c, err);
    pool_put(st, c, rc < 0);
    if (rc < 0)
        goto out;
    *out = &st->base;
    st = NULL;
out:
    if (st != NULL)
        netdb_close(&st->base);
    return rc;
}

void netdb_close(store *base)
{
    netdb *st = (netdb *)base;
    if (st == NULL)
        return;
    pthread_mutex_lock(&st->mu);
    while (st->n_free < st->n_open)
        pthread_cond_wait(&st->cv, &st->mu);
    pthread_mutex_unlock(&st->mu);
    while (st->free_conns != NULL) {
        netdb_conn *c = st->free_conns;
        st->free_conns = c->next_free;
        st->drv->disconnect(c);
    }
    pthread_cond_destroy(&st->cv);
    pthread_mutex_destroy(&st->mu);
    free(st);
}
