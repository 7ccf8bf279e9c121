/* pg_engine.c: the PostgreSQL driver of netdb.c (docs/internals/STORE.md): libpq
 * connections, statements on the wire, and SQLSTATEs translated into store codes. The
 * pool, units of work and reruns are netdb.c's; the SQL and the domain operations are
 * pg_ops.c's. Together the two are the only files that talk to libpq; libpq results and
 * SQLSTATEs never leave them untranslated. Never writes a password into a message or a
 * log line.
 *
 * Design notes.
 * - Round trips: statements are prepared once per connection; BEGIN travels in one
 *   pipeline with the unit's first statement. Read units run REPEATABLE READ READ ONLY
 *   (one snapshot); their end and a failed unit's are sent without waiting (end), and
 *   read by the connection's next user (settle).
 * - Reruns (netdb.c) follow a serialization failure or a deadlock (40001, 40P01). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/netdb/pgInt.h"
#include "util/log.h"

#define PG_CONNECT_TIMEOUT_S "3"  /* unless the URL sets connect_timeout */

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
    netdb_one_line(m, out, cap);
}

int pg_txn_fail(pg_txn *t, const PGresult *r, const char *what, const char *job_id,
                zbso_err *err)
{
    char msg[384], detail[32];
    const char *state = r != NULL ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    netdb_fault f = {0};
    f.code = pg_state_code(state, &f.cause);
    /* A write refused as read-only (25006) means this connection's server is no longer
     * the primary (fenced, or demoted): nothing was written, and only a new connection,
     * which target_session_attrs=read-write sends to the new primary, can help. So the
     * connection is dropped as a lost one is (a unit that met it first moves on). */
    f.broken = PQstatus(pg_db(t)) == CONNECTION_BAD || state_is_broken(state) ||
               (state != NULL && strcmp(state, "25006") == 0);
    f.retry = state_is_retryable(state);
    result_message(pg_db(t), r, msg, sizeof msg);
    snprintf(detail, sizeof detail, "SQLSTATE %s", state != NULL ? state : "none");
    return netdb_txn_fail(t, &f, msg, detail, what, job_id, err);
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

/* The BEGIN of t's unit. */
static const char *begin_sql(const pg_txn *t)
{
    return t->base.read_only ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN";
}

int pg_run_simple(pg_txn *t, const char *sql, const char *what, zbso_err *err)
{
    if (t->aborted)
        return netdb_failed_before(t, err);
    if (!t->begun) {
        t->begun = true;
        int rc = pg_run_simple(t, begin_sql(t), "BEGIN", err);
        /* A connection found lost by the unit's BEGIN ran nothing of it: stale, as in
         * run_first, so the unit moves to the next connection. */
        t->stale = t->broken;
        if (rc < 0)
            return rc;
    }
    if (t->st->echo_sql)
        log_info("sql: %s", sql);
    PGresult *r = PQexec(pg_db(t), sql);
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
    pg_conn *c = (pg_conn *)t->c;
    PGresult *out = NULL, *bad = NULL;
    bool prepare = !c->prepared[id], ok;
    t->begun = true;
    if (t->st->echo_sql) {
        log_info("sql: %s", begin_sql(t));
        echo(pg_stmts[id].sql, pg_stmts[id].n_params, v);
    }
    ok = PQenterPipelineMode(c->db) &&
         PQsendQueryParams(c->db, begin_sql(t), 0, NULL, NULL, NULL, NULL, 0) &&
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
    pg_conn *c = (pg_conn *)t->c;
    PGresult *r = NULL;
    char name[16];
    if (t->aborted) {
        netdb_failed_before(t, err);
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

static void conn_close(netdb_conn *nc)
{
    pg_conn *c = (pg_conn *)nc;
    if (c != NULL) {
        PQfinish(c->db);
        free(c);
    }
}

/* Opens a connection. Returns 0 with *out (freed by conn_close), or ZBSO_EUNAVAIL with
 * err naming the masked URL and libpq's reason (which never holds the password). */
static int conn_open(netdb *nst, netdb_conn **out, zbso_err *err)
{
    pg_store *st = (pg_store *)nst;
    char msg[384];
    pg_conn *c = calloc(1, sizeof *c);
    if (c == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory connecting to %s", nst->shown);
    c->db = PQconnectdbParams(st->conn_keys, st->conn_values, 0);
    if (c->db == NULL || PQstatus(c->db) != CONNECTION_OK) {
        if (c->db != NULL)
            result_message(c->db, NULL, msg, sizeof msg);
        else
            snprintf(msg, sizeof msg, "out of memory");
        conn_close(&c->base);
        return err_set(err, ZBSO_EUNAVAIL, "cannot connect to PostgreSQL at %s: %s", nst->shown,
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
            conn_close(&c->base);
            return err_set(err, ZBSO_EUNAVAIL, "cannot set synchronous_commit on %s: %s",
                           nst->shown, msg);
        }
    }
    *out = &c->base;
    return 0;
}

/* Reads the server's durability settings on a new store's first connection: with fsync
 * off nothing is durable, which only the server's owner can change (a warning); with
 * synchronous_commit off, this store's connections set it on (c's included). Returns 0
 * or ZBSO_EUNAVAIL. */
static int check_durability(netdb *nst, netdb_conn *nc, zbso_err *err)
{
    pg_store *st = (pg_store *)nst;
    pg_conn *c = (pg_conn *)nc;
    char msg[384];
    int rc = 0;
    PGresult *r = PQexec(c->db, "SELECT current_setting('fsync'),"
                                " current_setting('synchronous_commit'), version()");
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        result_message(c->db, r, msg, sizeof msg);
        rc = err_set(err, ZBSO_EUNAVAIL, "cannot read the settings of %s: %s", nst->shown, msg);
        goto out;
    }
    log_debug("database %s: %s", nst->shown, PQgetvalue(r, 0, 2));
    if (strcmp(PQgetvalue(r, 0, 0), "off") == 0)
        log_warn("database %s runs with fsync off: its commits are not durable, whatever"
                 " zbso does", nst->shown);
    if (strcmp(PQgetvalue(r, 0, 1), "off") == 0) {
        log_warn("database %s defaults to synchronous_commit off; zbso sets it on for its"
                 " connections", nst->shown);
        st->force_sync_commit = true;
        PQclear(r);
        r = PQexec(c->db, "SET synchronous_commit = on");
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            result_message(c->db, r, msg, sizeof msg);
            rc = err_set(err, ZBSO_EUNAVAIL, "cannot set synchronous_commit on %s: %s",
                         nst->shown, msg);
        }
    }
out:
    PQclear(r);
    return rc;
}

/* Reads the result of the COMMIT or ROLLBACK that end sent without waiting. Returns
 * false when the connection turned out lost or out of step. */
static bool conn_settle(netdb_conn *nc)
{
    pg_conn *c = (pg_conn *)nc;
    bool ok = true;
    PGresult *r;
    while ((r = PQgetResult(c->db)) != NULL) {
        ok = ok && PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
    }
    return ok && PQstatus(c->db) == CONNECTION_OK && PQtransactionStatus(c->db) == PQTRANS_IDLE;
}

static bool conn_reusable(netdb_conn *nc)
{
    pg_conn *c = (pg_conn *)nc;
    return PQstatus(c->db) == CONNECTION_OK &&
           (nc->end_pending || PQtransactionStatus(c->db) == PQTRANS_IDLE);
}

/* ---- ends of units ---- */

/* COMMIT, waited for, checking that PostgreSQL committed, not rolled back. */
static int txn_commit(pg_txn *t, zbso_err *err)
{
    int rc = 0;
    PGresult *r = PQexec(pg_db(t), "COMMIT");
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        rc = pg_txn_fail(t, r, "COMMIT", NULL, err);
    else if (strcmp(PQcmdStatus(r), "COMMIT") != 0)
        rc = err_set(err, ZBSO_ESTORE, "postgresql: COMMIT on %s rolled back (%s)", t->st->shown,
                     PQcmdStatus(r));
    PQclear(r);
    return rc;
}

/* COMMIT or ROLLBACK sent without waiting for its result, which settle reads. */
static void txn_end_async(pg_txn *t, bool commit)
{
    if (PQsendQuery(pg_db(t), commit ? "COMMIT" : "ROLLBACK"))
        t->c->end_pending = true;
    else
        t->broken = true;
}

/* ---- open ---- */

/* Adds key=value to the connection parameters unless the URL set key. */
static void conn_default(pg_store *st, size_t *n, const char *key, const char *value)
{
    if (pgurl_get(&st->url, key) == NULL) {
        st->conn_keys[*n] = key;
        st->conn_values[*n] = value;
        (*n)++;
    }
}

/* Parses postgresql://... (and the spellings of pgurl.h; opt->db_user and db_password
 * fill what it lacks) into the connection parameters. Returns 0, or ZBSO_EINVAL naming
 * the URL with its password masked. */
static int pg_init(netdb *nst, const char *url, const store_options *opt, zbso_err *err)
{
    pg_store *st = (pg_store *)nst;
    int rc = pgurl_parse(url, opt->db_user, opt->db_password, &st->url, err);
    if (rc < 0)
        return rc;
    snprintf(nst->shown, sizeof nst->shown, "%.*s", NETDB_SHOWN_MAX - 1, st->url.masked);
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
    return 0;
}

static const netdb_driver pg_driver;

/* Opens postgresql://...: netdb_open with this driver; store.c then checks the schema. */
static int pg_open(const char *url, const store_options *opt, store **out, zbso_err *err)
{
    return netdb_open(&pg_driver, url, opt, out, err);
}

const store_backend store_postgresql_backend =
    NETDB_BACKEND("postgresql", pg_open, PG_LATEST, pg_schema_steps, PG_SCHEMA_LOCK_SQL);

static const netdb_driver pg_driver = {
    .version = NETDB_DRIVER_VERSION,
    .name = "postgresql",
    .backend = &store_postgresql_backend,
    .store_size = sizeof(pg_store),
    .ops = &pg_ops,
    .init = pg_init,
    .connect = conn_open,
    .disconnect = conn_close,
    .check = check_durability,
    .settle = conn_settle,
    .reusable = conn_reusable,
    .commit = txn_commit,
    .end = txn_end_async,
    .schema_unit = pg_schema_unit,
    .write_probe_unit = pg_write_probe_unit,
};
