/* pg_engine.c: the engine of the PostgreSQL backend (docs/DESIGN.md) for shared,
 * multi-replica deployments: a bounded pool of libpq connections, statements on the
 * wire, and units of work each run as one transaction on one pooled connection in the
 * caller's thread. The SQL and the domain operations are pg_ops.c's. Together the two
 * are the only files that talk to libpq; libpq results and SQLSTATEs never leave them
 * untranslated. Never writes a password into a message or a log line.
 *
 * Design notes.
 * - Correctness across replicas rests on the database: job_get(for_update) is SELECT ...
 *   FOR UPDATE, so units on one job are serialized by the row lock whichever process
 *   runs them, and trial numbers come from the locked job row.
 * - Round trips: statements are prepared once per connection; BEGIN travels in one
 *   pipeline with the unit's first statement; only a read-write unit that succeeded
 *   waits for its COMMIT (synchronous_commit on: the answer rests on it). Read units
 *   (REPEATABLE READ READ ONLY) and failed units send their end and do not wait: the
 *   next user of the connection reads that result (conn_settle).
 * - Reruns: a serialization failure, a deadlock, or an insert that meets a job another
 *   transaction committed after this unit found it missing, run the unit again,
 *   PG_ATTEMPTS times at most. A pooled connection found lost by a unit's first
 *   statement (the server restarted) is replaced and the unit moved to the next one,
 *   so the first request after an outage succeeds.
 * - Failures become store codes once, in pg_txn_fail: a lost server is ZBSO_EUNAVAIL
 *   (503 with Retry-After), conflicts and missing parents domain codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/pgInt.h"
#include "util/log.h"

#define PG_POOL_MAX 16            /* connections per store; more callers wait for one */
#define PG_ATTEMPTS 3             /* runs of a unit that meets a retryable conflict */
#define PG_CONNECT_TIMEOUT_S "3"  /* unless the URL sets connect_timeout */

/* The store whose unit of work this thread is running, to refuse a nested unit. */
static _Thread_local const pg_store *unit_store;

/* ---- errors ---- */

/* True for SQLSTATEs after which the connection is gone: connection exceptions (08),
 * shutdown (57P01 admin, 57P02 crash, 57P03 cannot connect now). */
static bool state_is_broken(const char *state)
{
    return state != NULL && (strncmp(state, "08", 2) == 0 || strcmp(state, "57P01") == 0 ||
                             strcmp(state, "57P02") == 0 || strcmp(state, "57P03") == 0);
}

/* True for SQLSTATEs that a rerun of the unit may not meet: serialization failure and
 * deadlock. */
static bool state_is_retryable(const char *state)
{
    return state != NULL && (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0);
}

int pg_state_code(const char *state, const char **cause)
{
    const char *why = NULL;
    int code = ZBSO_ESTORE;
    if (state == NULL) {
        /* no SQLSTATE: a libpq failure, told by the connection's status */
    } else if (state_is_broken(state)) {
        code = ZBSO_EUNAVAIL;
        why = "the database server is unreachable or shutting down";
    } else if (state_is_retryable(state)) {
        code = ZBSO_EUNAVAIL;
        why = "a conflict with a concurrent transaction persisted";
    } else if (strcmp(state, "23505") == 0) {
        code = ZBSO_ECONFLICT;
    } else if (strcmp(state, "23503") == 0) {
        code = ZBSO_ENOTFOUND;
    } else if (strncmp(state, "22", 2) == 0) {
        code = ZBSO_EINVAL;
    } else if (strcmp(state, "53100") == 0) {
        code = ZBSO_EUNAVAIL;
        why = "the database server's disk is full";
    } else if (strncmp(state, "53", 2) == 0) {
        code = ZBSO_EUNAVAIL;
        why = "the database server is out of resources";
    } else if (strncmp(state, "58", 2) == 0) {
        code = ZBSO_EUNAVAIL;
        why = "the database server met an I/O or system error";
    } else if (strcmp(state, "25006") == 0) {
        code = ZBSO_EUNAVAIL;
        why = "the database is read-only (a standby, or default_transaction_read_only)";
    } else if (strcmp(state, "55P03") == 0 || strcmp(state, "57014") == 0) {
        code = ZBSO_EUNAVAIL;
        why = "a lock or statement timeout";
    }
    if (cause != NULL)
        *cause = why;
    return code;
}

/* The message of r (or of the connection when r is NULL) as one line, into out. */
static void result_message(PGconn *db, const PGresult *r, char *out, size_t cap)
{
    const char *m = r != NULL ? PQresultErrorMessage(r) : NULL;
    if (m == NULL || m[0] == '\0')
        m = db != NULL ? PQerrorMessage(db) : "no connection";
    if (m == NULL || m[0] == '\0')
        m = "unknown error";
    size_t n = 0;
    for (; m[n] != '\0' && n + 1 < cap; n++)
        out[n] = m[n] == '\n' || m[n] == '\r' ? ' ' : m[n];
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

int pg_txn_fail(pg_txn *t, const PGresult *r, const char *what, const char *job_id,
                zbso_err *err)
{
    char msg[384], why[160] = "";
    const char *state = r != NULL ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *cause = NULL;
    int code = pg_state_code(state, &cause);
    result_message(t->c->db, r, msg, sizeof msg);
    if (PQstatus(t->c->db) == CONNECTION_BAD || state_is_broken(state)) {
        t->broken = true;
        code = ZBSO_EUNAVAIL;
    } else if (state_is_retryable(state)) {
        t->retry = true;
    } else if (code == ZBSO_EINVAL) {
        /* A value the database cannot take, such as a job id that is not valid in its
         * encoding; the message leaves the id out, since it may not be printable. */
        job_id = NULL;
    }
    if (cause != NULL)
        snprintf(why, sizeof why, "%s: ", cause);
    t->aborted = true;
    if (job_id == NULL)
        err_set(&t->first, code, "postgresql: %s failed on %s: %s%s (SQLSTATE %s)", what,
                t->st->shown, why, msg, state != NULL ? state : "none");
    else
        err_set(&t->first, code, "postgresql: %s for job \"%.300s\" failed: %s%s (SQLSTATE"
                " %s)", what, job_id, why, msg, state != NULL ? state : "none");
    if (err != NULL)
        *err = t->first;
    return code;
}

/* ---- statements ---- */

/* Logs a statement and its parameters at INFO (ZEUS_BSO_ECHO_SQL). */
static void echo(const char *sql, int n, const char *const *v)
{
    char line[2048];
    size_t len = (size_t)snprintf(line, sizeof line, "sql: %s", sql);
    for (int i = 0; i < n && len < sizeof line; i++)
        len += (size_t)snprintf(line + len, sizeof line - len, "%s$%d=%s%s%s",
                                i == 0 ? " -- " : ", ", i + 1, v[i] != NULL ? "'" : "",
                                v[i] != NULL ? v[i] : "NULL", v[i] != NULL ? "'" : "");
    log_info("%s", line);
}

/* Returns t's first failure again, for a unit that carries on after it. */
static int failed_before(pg_txn *t, zbso_err *err)
{
    if (err != NULL)
        *err = t->first;
    return t->first.code;
}

int pg_run_simple(pg_txn *t, const char *sql, const char *what, zbso_err *err)
{
    if (t->aborted)
        return failed_before(t, err);
    if (!t->begun) {
        t->begun = true;
        int rc = pg_run_simple(t, t->begin_sql, "BEGIN", err);
        /* A connection found lost by the unit's BEGIN ran nothing of it: stale, as in
         * run_first, so the unit moves to the next connection. */
        t->stale = t->broken;
        if (rc < 0)
            return rc;
    }
    if (t->st->echo_sql)
        log_info("sql: %s", sql);
    PGresult *r = PQexec(t->c->db, sql);
    ExecStatusType s = PQresultStatus(r);
    int rc = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK ? 0 : pg_txn_fail(t, r, what, NULL, err);
    PQclear(r);
    return rc;
}

/* True for a result that ends a query successfully. */
static bool result_ok(const PGresult *r)
{
    ExecStatusType s = PQresultStatus(r);
    return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

/* The unit's first statement, in one round trip with its BEGIN (and the statement's
 * PREPARE when this connection has not prepared it): a libpq pipeline of BEGIN,
 * [PREPARE,] EXECUTE and a sync. Returns the statement's result, or NULL with the first
 * failure translated into err and recorded in t; a connection found lost here marks the
 * unit stale, since nothing of it has run. */
static PGresult *run_first(pg_txn *t, int id, const char *name, const char *const *v,
                           const char *what, const char *job_id, zbso_err *err)
{
    pg_conn *c = t->c;
    PGresult *out = NULL, *bad = NULL;
    bool prepare = !c->prepared[id], ok;
    t->begun = true;
    if (t->st->echo_sql) {
        log_info("sql: %s", t->begin_sql);
        echo(pg_stmts[id].sql, pg_stmts[id].n_params, v);
    }
    ok = PQenterPipelineMode(c->db) &&
         PQsendQueryParams(c->db, t->begin_sql, 0, NULL, NULL, NULL, NULL, 0) &&
         (!prepare || PQsendPrepare(c->db, name, pg_stmts[id].sql, pg_stmts[id].n_params, NULL)) &&
         PQsendQueryPrepared(c->db, name, pg_stmts[id].n_params, v, NULL, NULL, 0) &&
         PQpipelineSync(c->db);
    /* Each query's result is followed by a NULL; the sync's result ends the pipeline. A
     * query after a failed one reports PGRES_PIPELINE_ABORTED. */
    int n_queries = prepare ? 3 : 2;
    for (int q = 0; ok && q < n_queries; q++) {
        PGresult *r = PQgetResult(c->db);
        if (r == NULL || PQstatus(c->db) == CONNECTION_BAD) {
            if (bad == NULL)
                bad = r;
            else
                PQclear(r);
            ok = false;
            break;
        }
        if (result_ok(r) && q == n_queries - 1) {
            out = r;
        } else if (result_ok(r) || PQresultStatus(r) == PGRES_PIPELINE_ABORTED) {
            if (prepare && q == 1 && result_ok(r))
                c->prepared[id] = true;
            PQclear(r);
        } else if (bad == NULL) {
            bad = r;
        } else {
            PQclear(r);
        }
        PQclear(PQgetResult(c->db)); /* the NULL after each query's result */
    }
    if (ok) {
        PGresult *sync = PQgetResult(c->db);
        ok = PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
        PQclear(sync);
        ok = ok && PQexitPipelineMode(c->db);
    }
    if (ok && bad == NULL && out != NULL)
        return out;
    PQclear(out);
    if (!ok && PQstatus(c->db) == CONNECTION_OK)
        t->broken = true; /* the pipeline is in an unknown state: use no more of it */
    pg_txn_fail(t, bad, what, job_id, err);
    t->stale = t->broken;
    PQclear(bad);
    return NULL;
}

PGresult *pg_run(pg_txn *t, int id, const char *const *v, const char *what,
                 const char *job_id, zbso_err *err)
{
    pg_conn *c = t->c;
    PGresult *r = NULL;
    char name[16];
    if (t->aborted) {
        failed_before(t, err);
        return NULL;
    }
    snprintf(name, sizeof name, "z%d", id);
    if (!t->begun)
        return run_first(t, id, name, v, what, job_id, err);
    if (!c->prepared[id]) {
        r = PQprepare(c->db, name, pg_stmts[id].sql, pg_stmts[id].n_params, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            pg_txn_fail(t, r, what, job_id, err);
            PQclear(r);
            return NULL;
        }
        PQclear(r);
        c->prepared[id] = true;
    }
    if (t->st->echo_sql)
        echo(pg_stmts[id].sql, pg_stmts[id].n_params, v);
    r = PQexecPrepared(c->db, name, pg_stmts[id].n_params, v, NULL, NULL, 0);
    if (result_ok(r))
        return r;
    pg_txn_fail(t, r, what, job_id, err);
    PQclear(r);
    return NULL;
}

/* ---- connections ---- */

/* Server notices (a NOTICE from DDL, for instance) go to the log at DEBUG, not stderr. */
static void notice_cb(void *arg, const char *message)
{
    log_debug("postgresql: %s", message);
}

/* Opens a connection. Returns 0 with *out (freed by conn_close), or ZBSO_EUNAVAIL with
 * err naming the masked URL and libpq's reason (which never holds the password). */
static int conn_open(pg_store *st, pg_conn **out, zbso_err *err)
{
    char msg[384];
    pg_conn *c = calloc(1, sizeof *c);
    if (c == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory connecting to %s", st->shown);
    c->db = PQconnectdbParams(st->conn_keys, st->conn_values, 0);
    if (c->db == NULL || PQstatus(c->db) != CONNECTION_OK) {
        if (c->db != NULL)
            result_message(c->db, NULL, msg, sizeof msg);
        else
            snprintf(msg, sizeof msg, "out of memory");
        PQfinish(c->db);
        free(c);
        return err_set(err, ZBSO_EUNAVAIL, "cannot connect to PostgreSQL at %s: %s", st->shown,
                       msg);
    }
    PQsetNoticeProcessor(c->db, notice_cb, NULL);
    if (st->force_sync_commit) {
        PGresult *r = PQexec(c->db, "SET synchronous_commit = on");
        bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            result_message(c->db, r, msg, sizeof msg);
        PQclear(r);
        if (!ok) {
            PQfinish(c->db);
            free(c);
            return err_set(err, ZBSO_EUNAVAIL, "cannot set synchronous_commit on %s: %s",
                           st->shown, msg);
        }
    }
    *out = c;
    return 0;
}

/* Reads the server's durability settings on a new store's first connection: with fsync
 * off nothing is durable, which only the server's owner can change (a warning); with
 * synchronous_commit off, this store's connections set it on (c's included). Returns 0
 * or ZBSO_EUNAVAIL. */
static int check_durability(pg_store *st, pg_conn *c, zbso_err *err)
{
    char msg[384];
    int rc = 0;
    PGresult *r = PQexec(c->db, "SELECT current_setting('fsync'),"
                                " current_setting('synchronous_commit'), version()");
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        result_message(c->db, r, msg, sizeof msg);
        rc = err_set(err, ZBSO_EUNAVAIL, "cannot read the settings of %s: %s", st->shown, msg);
        goto out;
    }
    log_debug("database %s: %s", st->shown, PQgetvalue(r, 0, 2));
    if (strcmp(PQgetvalue(r, 0, 0), "off") == 0)
        log_warn("database %s runs with fsync off: its commits are not durable, whatever"
                 " zbso does", st->shown);
    if (strcmp(PQgetvalue(r, 0, 1), "off") == 0) {
        log_warn("database %s defaults to synchronous_commit off; zbso sets it on for its"
                 " connections", st->shown);
        st->force_sync_commit = true;
        PQclear(r);
        r = PQexec(c->db, "SET synchronous_commit = on");
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            result_message(c->db, r, msg, sizeof msg);
            rc = err_set(err, ZBSO_EUNAVAIL, "cannot set synchronous_commit on %s: %s",
                         st->shown, msg);
        }
    }
out:
    PQclear(r);
    return rc;
}

static void conn_close(pg_conn *c)
{
    if (c != NULL) {
        PQfinish(c->db);
        free(c);
    }
}

/* Reads the result of the COMMIT or ROLLBACK that txn_end sent without waiting. Returns
 * false when the connection turned out lost or out of step. */
static bool conn_settle(pg_conn *c)
{
    bool ok = true;
    PGresult *r;
    while ((r = PQgetResult(c->db)) != NULL) {
        ok = ok && PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
    }
    c->end_pending = false;
    return ok && PQstatus(c->db) == CONNECTION_OK && PQtransactionStatus(c->db) == PQTRANS_IDLE;
}

/* Takes a connection from the pool, opening one while fewer than PG_POOL_MAX exist, else
 * waiting for one to come back; a pooled one whose last unit's end failed is closed and
 * the next one taken. Returns 0 with *out, or conn_open's failure. */
static int pool_get(pg_store *st, pg_conn **out, zbso_err *err)
{
    int rc = 0;
    for (;;) {
        pthread_mutex_lock(&st->mu);
        while (st->free_conns == NULL && st->n_open == PG_POOL_MAX)
            pthread_cond_wait(&st->cv, &st->mu);
        pg_conn *c = st->free_conns;
        if (c == NULL)
            break;
        st->free_conns = c->next_free;
        st->n_free--;
        pthread_mutex_unlock(&st->mu);
        if (!c->end_pending || conn_settle(c)) {
            *out = c;
            return 0;
        }
        conn_close(c);
        pthread_mutex_lock(&st->mu);
        st->n_open--;
        pthread_cond_signal(&st->cv);
        pthread_mutex_unlock(&st->mu);
    }
    /* Count the new connection now, so that connecting needs no lock held. */
    st->n_open++;
    pthread_mutex_unlock(&st->mu);
    rc = conn_open(st, out, err);
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
static void pool_put(pg_store *st, pg_conn *c, bool broken)
{
    if (broken || PQstatus(c->db) != CONNECTION_OK ||
        (!c->end_pending && PQtransactionStatus(c->db) != PQTRANS_IDLE)) {
        conn_close(c);
        c = NULL;
    }
    pthread_mutex_lock(&st->mu);
    if (c == NULL) {
        st->n_open--;
    } else {
        c->next_free = st->free_conns;
        st->free_conns = c;
        st->n_free++;
    }
    pthread_cond_signal(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

/* ---- units of work ---- */

/* Sends sql (COMMIT or ROLLBACK) to end t's transaction without waiting for its result,
 * which pool_get reads before the connection's next use. */
static void txn_end_async(pg_store *st, pg_txn *t, const char *sql)
{
    if (st->echo_sql)
        log_info("sql: %s", sql);
    if (PQsendQuery(t->c->db, sql))
        t->c->end_pending = true;
    else
        t->broken = true;
}

/* Ends t's transaction and returns the connection to the pool: a read-write unit that
 * succeeded with COMMIT, waiting for it (the answer rests on it) and checking that
 * PostgreSQL committed, not rolled back; a read unit with COMMIT and a failed unit with
 * ROLLBACK, without waiting (nothing rests on those). Returns 0, or the commit's
 * translated failure (ZBSO_EUNAVAIL when the connection was lost during the commit: its
 * outcome is then unknown, which the message says). */
static int txn_end(pg_store *st, pg_txn *t, bool commit, zbso_err *err)
{
    int rc = 0;
    if (!t->begun || t->broken) {
        /* Nothing was sent, or nothing more can be: no transaction to end here. */
    } else if (commit && !t->base.read_only) {
        if (st->echo_sql)
            log_info("sql: COMMIT");
        PGresult *r = PQexec(t->c->db, "COMMIT");
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            rc = pg_txn_fail(t, r, "COMMIT", NULL, err);
            if (t->broken)
                rc = err_set(err, ZBSO_EUNAVAIL, "%s; the connection was lost during the"
                             " commit, whose outcome is unknown", t->first.msg);
        } else if (strcmp(PQcmdStatus(r), "COMMIT") != 0) {
            rc = err_set(err, ZBSO_ESTORE, "postgresql: COMMIT on %s rolled back (%s)",
                         st->shown, PQcmdStatus(r));
        }
        PQclear(r);
    } else {
        txn_end_async(st, t, commit ? "COMMIT" : "ROLLBACK");
    }
    pool_put(st, t->c, t->broken);
    t->c = NULL;
    return rc;
}

/* Runs fn as one transaction (read_only: REPEATABLE READ READ ONLY, one snapshot), on a
 * pooled connection, in the calling thread; BEGIN goes with the unit's first statement.
 * fn's failure rolls everything back. A unit that meets a serialization failure, a
 * deadlock or a job another transaction inserted meanwhile runs again, PG_ATTEMPTS times
 * at most. A unit whose first statement finds its pooled connection lost (the server
 * restarted since it was last used) runs again on the next connection, a fresh one at
 * the latest, so that the first unit after an outage already succeeds. Returns fn's code,
 * a translated database error (ZBSO_EUNAVAIL when the server is unreachable or the
 * conflict persists), or ZBSO_EINTERNAL inside a unit of work of st. */
static int pg_run_unit(pg_store *st, bool read_only, store_work_fn fn, void *arg,
                       zbso_err *err)
{
    zbso_err own;
    int rc = 0;
    if (err == NULL)
        err = &own;
    if (unit_store == st)
        return err_set(err, ZBSO_EINTERNAL, "store_exec%s called inside a unit of work on %s",
                       read_only ? "_read" : "", st->shown);
    for (int attempt = 1, stale_runs = 0;; attempt++) {
        pg_txn t;
        memset(&t, 0, sizeof t);
        t.base.ops = &pg_ops;
        t.base.read_only = read_only;
        t.st = st;
        t.begin_sql = read_only ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN";
        err_clear(err);
        if ((rc = pool_get(st, &t.c, err)) < 0)
            return rc;
        unit_store = st;
        rc = fn(&t.base, arg, err);
        unit_store = NULL;
        if (t.broken) {
            /* Whatever fn made of it, the unit did not happen. */
            *err = t.first;
            rc = t.first.code;
        } else if (rc == 0 && t.aborted) {
            /* fn carried on past a failed statement: PostgreSQL rolls it all back. */
            rc = err_set(err, t.first.code, "%s (the unit went on after it and was rolled"
                         " back)", t.first.msg);
        }
        int end_rc = txn_end(st, &t, rc == 0, err);
        if (rc == 0)
            rc = end_rc;
        if (t.stale && stale_runs++ < PG_POOL_MAX) {
            attempt--;
            continue;
        }
        if (rc == 0 || !t.retry || attempt == PG_ATTEMPTS)
            return rc;
        atomic_fetch_add_explicit(&st->base.reruns, 1, memory_order_relaxed);
        log_debug("postgresql: running a unit of work again (attempt %d): %s", attempt + 1,
                  err->msg);
    }
}

static int pg_exec(store *base, store_work_fn fn, void *arg, zbso_err *err)
{
    return pg_run_unit((pg_store *)base, false, fn, arg, err);
}

static int pg_exec_read(store *base, store_work_fn fn, void *arg, zbso_err *err)
{
    return pg_run_unit((pg_store *)base, true, fn, arg, err);
}

/* The schema runs as one unit of work (pg_ops.c has the SQL). */
static int pg_schema_run(store *base, store_schema_plan_fn plan, void *ctx, zbso_err *err)
{
    pg_schema_arg a = {plan, ctx};
    return pg_exec(base, pg_schema_unit, &a, err);
}

/* ---- open and close ---- */

static void pg_close(store *base);

/* Adds key=value to the connection parameters unless the URL set key. */
static void conn_default(pg_store *st, size_t *n, const char *key, const char *value)
{
    if (pgurl_get(&st->url, key) == NULL) {
        st->conn_keys[*n] = key;
        st->conn_values[*n] = value;
        (*n)++;
    }
}

/* Opens postgresql://... or postgresql+asyncpg://...: parses the URL (opt->db_user and
 * db_password fill what it lacks) and connects once to check the server's durability
 * settings; store.c then checks the schema. Returns 0 with *out set, or ZBSO_EINVAL (bad
 * URL), ZBSO_EUNAVAIL (cannot connect) or ZBSO_ESTORE, err naming the URL with its
 * password masked. */
static int pg_open(const char *url, const store_options *opt, store **out, zbso_err *err)
{
    int rc = 0;
    pg_conn *c = NULL;
    *out = NULL;
    pg_store *st = calloc(1, sizeof *st);
    if (st == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory opening a PostgreSQL store");
    st->base.backend = &store_postgresql_backend;
    st->base.shown = st->shown;
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    st->echo_sql = opt->echo_sql;
    if ((rc = pgurl_parse(url, opt->db_user, opt->db_password, &st->url, err)) < 0)
        goto out;
    snprintf(st->shown, sizeof st->shown, "%.*s", PG_SHOWN_MAX - 1, st->url.masked);
    size_t n = 0;
    for (; n < st->url.n; n++) {
        st->conn_keys[n] = st->url.keys[n];
        st->conn_values[n] = st->url.values[n];
    }
    conn_default(st, &n, "connect_timeout", PG_CONNECT_TIMEOUT_S);
    conn_default(st, &n, "application_name", "zbso");
    /* A server host that vanishes mid-unit is noticed in about a minute, not the
     * kernel's two hours (keepalives) or fifteen minutes (unacknowledged data). */
    conn_default(st, &n, "keepalives_idle", "30");
    conn_default(st, &n, "keepalives_interval", "10");
    conn_default(st, &n, "keepalives_count", "3");
    conn_default(st, &n, "tcp_user_timeout", "60000");
    st->conn_keys[n] = NULL;
    st->conn_values[n] = NULL;

    if ((rc = pool_get(st, &c, err)) < 0)
        goto out;
    rc = check_durability(st, c, err);
    pool_put(st, c, rc < 0);
    if (rc < 0)
        goto out;
    *out = &st->base;
    st = NULL;
out:
    if (st != NULL)
        pg_close(&st->base);
    return rc;
}

/* Waits for every connection to come back, then closes them all. */
static void pg_close(store *base)
{
    pg_store *st = (pg_store *)base;
    if (st == NULL)
        return;
    pthread_mutex_lock(&st->mu);
    while (st->n_free < st->n_open)
        pthread_cond_wait(&st->cv, &st->mu);
    pthread_mutex_unlock(&st->mu);
    while (st->free_conns != NULL) {
        pg_conn *c = st->free_conns;
        st->free_conns = c->next_free;
        conn_close(c);
    }
    pthread_cond_destroy(&st->cv);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

/* One round trip or two: the write probe as a unit of work. */
static int pg_health(store *base, zbso_err *err)
{
    return pg_exec(base, pg_write_probe_unit, NULL, err);
}

const store_backend store_postgresql_backend = {
    .name = "postgresql",
    .open = pg_open,
    .close = pg_close,
    .exec = pg_exec,
    .latest_schema_version = PG_LATEST,
    .schema_steps = pg_schema_steps,
    .schema_lock_sql = PG_SCHEMA_LOCK_SQL,
    .schema_run = pg_schema_run,
    .exec_read = pg_exec_read,
    .health = pg_health,
};
