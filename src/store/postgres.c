/* postgres.c: the PostgreSQL backend (SPEC §3.7, §4) for shared, multi-replica
 * deployments: its schema and migrations, a bounded pool of libpq connections, and units
 * of work each run as one transaction on one pooled connection, with the job row locked
 * by SELECT ... FOR UPDATE so that several processes on one database stay correct.
 * The only file that talks to libpq; libpq results and SQLSTATEs never leave it
 * untranslated. Never writes a password into a message or a log line. */
#include <libpq-fe.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/pgurl.h"
#include "store/storeInt.h"
#include "util/log.h"

#define PG_LATEST 2
#define PG_POOL_MAX 16            /* connections per store; more callers wait for one */
#define PG_ATTEMPTS 3             /* runs of a unit that meets a retryable conflict */
#define PG_CONNECT_TIMEOUT_S "3"  /* unless the URL sets connect_timeout */
/* Serializes schema changes (the key is "zbso" in ASCII), so that replicas starting
 * together on an empty database create the schema once. */
#define PG_SCHEMA_LOCK_SQL "SELECT pg_advisory_xact_lock(2053272431);"
#define PG_SHOWN_MAX 256          /* bytes of the masked URL kept for messages */

/* Schema history. The version lives in the one row of zbso_schema (no such table: an
 * empty database, version 0), written by the last statement of each step inside the
 * step's transaction. Append only: a released step never changes.
 * Encodings: stage 0 Pruning / 1 MAB; trial type 0 Exploration / 1 Concurrent / 2 MAB;
 * status 0 Dispatched / 1 Succeeded / 2 Failed; beta_knob and mab_seed NULL when absent;
 * mab_seed holds the uint64 seed's bits as a signed 64-bit integer; min_cost NULL until one
 * is known; a NULL time/energy/metric is NaN; rng_state is rng_format()'s text. */
static const char *const schema_v1[] = {
    "CREATE TABLE jobs (\n"
    "  job_id TEXT PRIMARY KEY,\n"
    "  job_id_prefix TEXT NOT NULL,\n"
    "  batch_sizes BIGINT[] NOT NULL,\n"
    "  default_batch_size BIGINT NOT NULL,\n"
    "  eta_knob DOUBLE PRECISION NOT NULL,\n"
    "  beta_knob DOUBLE PRECISION,\n"
    "  target_metric DOUBLE PRECISION NOT NULL,\n"
    "  higher_is_better_metric BOOLEAN NOT NULL,\n"
    "  max_epochs BIGINT NOT NULL,\n"
    "  num_pruning_rounds BIGINT NOT NULL,\n"
    "  window_size BIGINT NOT NULL,\n"
    "  mab_prior_mean DOUBLE PRECISION NOT NULL,\n"
    "  mab_prior_precision DOUBLE PRECISION NOT NULL,\n"
    "  mab_num_explorations BIGINT NOT NULL,\n"
    "  mab_seed BIGINT,\n"
    "  max_power DOUBLE PRECISION NOT NULL,\n"
    "  number_of_gpus BIGINT NOT NULL,\n"
    "  gpu_model TEXT NOT NULL,\n"
    "  stage INTEGER NOT NULL,\n"
    "  exp_default_batch_size BIGINT NOT NULL,\n"
    "  min_cost DOUBLE PRECISION,\n"
    "  min_cost_batch_size BIGINT NOT NULL,\n"
    "  rng_state TEXT NOT NULL,\n"
    "  num_trials BIGINT NOT NULL,\n"
    "  created_at DOUBLE PRECISION NOT NULL,\n"
    "  version BIGINT NOT NULL\n"
    ");",
    "CREATE TABLE trials (\n"
    "  job_id TEXT NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,\n"
    "  trial_number BIGINT NOT NULL,\n"
    "  batch_size BIGINT NOT NULL,\n"
    "  type INTEGER NOT NULL,\n"
    "  status INTEGER NOT NULL,\n"
    "  start_time DOUBLE PRECISION NOT NULL,\n"
    "  end_time DOUBLE PRECISION NOT NULL,\n"
    "  lease_renewed_at DOUBLE PRECISION NOT NULL,\n"
    "  time DOUBLE PRECISION,\n"
    "  energy DOUBLE PRECISION,\n"
    "  metric DOUBLE PRECISION,\n"
    "  epochs BIGINT NOT NULL,\n"
    "  converged BOOLEAN NOT NULL,\n"
    "  PRIMARY KEY (job_id, trial_number)\n"
    ");",
    "CREATE TABLE arms (\n"
    "  job_id TEXT NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,\n"
    "  batch_size BIGINT NOT NULL,\n"
    "  param_mean DOUBLE PRECISION NOT NULL,\n"
    "  param_precision DOUBLE PRECISION NOT NULL,\n"
    "  num_observations BIGINT NOT NULL,\n"
    "  PRIMARY KEY (job_id, batch_size)\n"
    ");",
    "CREATE TABLE zbso_schema (version INTEGER NOT NULL);",
    "INSERT INTO zbso_schema (version) VALUES (1);",
    NULL,
};

/* Version 2: the indexes behind trials_list(batch_size) and trials_fail_stale. */
static const char *const schema_v2[] = {
    "CREATE INDEX trials_by_batch_size ON trials (job_id, batch_size, trial_number);",
    "CREATE INDEX trials_by_status_lease ON trials (job_id, status, lease_renewed_at);",
    "UPDATE zbso_schema SET version = 2;",
    NULL,
};

/* steps[v - 1] takes a database from version v - 1 to v. */
static const char *const *const steps[PG_LATEST] = {schema_v1, schema_v2};

#define JOB_COLS                                                                          \
    "job_id, job_id_prefix, batch_sizes, default_batch_size, eta_knob, beta_knob, "        \
    "target_metric, higher_is_better_metric, max_epochs, num_pruning_rounds, window_size, " \
    "mab_prior_mean, mab_prior_precision, mab_num_explorations, mab_seed, max_power, "     \
    "number_of_gpus, gpu_model, stage, exp_default_batch_size, min_cost, "                 \
    "min_cost_batch_size, rng_state, num_trials, created_at, version"
#define N_JOB_COLS 26
#define TRIAL_COLS                                                                        \
    "trial_number, batch_size, type, status, start_time, end_time, lease_renewed_at, "     \
    "time, energy, metric, epochs, converged"
#define N_TRIAL_COLS 12

enum {
    S_JOB_GET, S_JOB_GET_LOCK, S_JOB_INSERT, S_JOB_UPDATE, S_JOB_DELETE, S_JOB_IDS,
    S_TRIAL_INSERT, S_TRIAL_GET, S_TRIAL_UPDATE, S_TRIALS_LIST, S_TRIALS_LIST_BS,
    S_TRIALS_FAIL_STALE, S_ARMS_GET, S_ARM_PUT,
    S_COUNT
};

/* Trials filters: masks arrive as $2 (type) and $3 (status), LIMIT $4 keeps the newest
 * rows (NULL: all), and the outer query puts them back in ascending order. */
#define TRIALS_LIST_SQL(bs_cond)                                                          \
    "SELECT " TRIAL_COLS " FROM (SELECT " TRIAL_COLS " FROM trials WHERE job_id = $1"      \
    " AND (($2::bigint >> type) & 1) = 1 AND (($3::bigint >> status) & 1) = 1" bs_cond     \
    " ORDER BY trial_number DESC LIMIT $4) AS newest ORDER BY trial_number"

static const struct {
    const char *sql;
    int n_params;
} stmts[S_COUNT] = {
    [S_JOB_GET] = {"SELECT " JOB_COLS " FROM jobs WHERE job_id = $1", 1},
    [S_JOB_GET_LOCK] = {"SELECT " JOB_COLS " FROM jobs WHERE job_id = $1 FOR UPDATE", 1},
    [S_JOB_INSERT] = {"INSERT INTO jobs (" JOB_COLS ") VALUES ($1, $2, $3, $4, $5, $6, $7,"
                      " $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21,"
                      " $22, $23, $24, $25, $26) ON CONFLICT (job_id) DO NOTHING", N_JOB_COLS},
    [S_JOB_UPDATE] = {"UPDATE jobs SET stage = $2, exp_default_batch_size = $3, min_cost = $4,"
                      " min_cost_batch_size = $5, rng_state = $6, num_trials = $7,"
                      " version = $8 WHERE job_id = $1", 8},
    [S_JOB_DELETE] = {"DELETE FROM jobs WHERE job_id = $1", 1},
    /* Byte order, as sqlite's BINARY collation lists them, whatever the database's. */
    [S_JOB_IDS] = {"SELECT job_id FROM jobs ORDER BY job_id COLLATE \"C\"", 0},
    [S_TRIAL_INSERT] = {"INSERT INTO trials (job_id, " TRIAL_COLS ") VALUES ($1, $2, $3, $4,"
                        " $5, $6, $7, $8, $9, $10, $11, $12, $13)"
                        " ON CONFLICT (job_id, trial_number) DO NOTHING", 1 + N_TRIAL_COLS},
    [S_TRIAL_GET] = {"SELECT " TRIAL_COLS " FROM trials WHERE job_id = $1 AND trial_number = $2",
                     2},
    [S_TRIAL_UPDATE] = {"UPDATE trials SET batch_size = $3, type = $4, status = $5,"
                        " start_time = $6, end_time = $7, lease_renewed_at = $8, time = $9,"
                        " energy = $10, metric = $11, epochs = $12, converged = $13"
                        " WHERE job_id = $1 AND trial_number = $2", 1 + N_TRIAL_COLS},
    [S_TRIALS_LIST] = {TRIALS_LIST_SQL(""), 4},
    [S_TRIALS_LIST_BS] = {TRIALS_LIST_SQL(" AND batch_size = $5"), 5},
    [S_TRIALS_FAIL_STALE] = {"UPDATE trials SET status = 2, end_time = $3 WHERE job_id = $1"
                             " AND status = 0 AND lease_renewed_at < $2", 3},
    [S_ARMS_GET] = {"SELECT batch_size, param_mean, param_precision, num_observations"
                    " FROM arms WHERE job_id = $1 ORDER BY batch_size", 1},
    [S_ARM_PUT] = {"INSERT INTO arms (job_id, batch_size, param_mean, param_precision,"
                   " num_observations) VALUES ($1, $2, $3, $4, $5)"
                   " ON CONFLICT (job_id, batch_size) DO UPDATE"
                   " SET param_mean = excluded.param_mean,"
                   " param_precision = excluded.param_precision,"
                   " num_observations = excluded.num_observations", 5},
};

/* A pooled connection with the statements prepared on it so far. */
typedef struct pg_conn {
    PGconn *db;
    bool prepared[S_COUNT];
    /* The COMMIT or ROLLBACK that ended the last unit is sent, its result not read yet:
     * nobody waits on the end of a read unit or of a failed one. */
    bool end_pending;
    struct pg_conn *next_free;
} pg_conn;

typedef struct pg_store {
    store base;
    pgurl url;                   /* the parsed URL; conn_keys/conn_values point into it */
    const char *conn_keys[PGURL_PARAMS_MAX + 7];   /* the URL's, the defaults, NULL */
    const char *conn_values[PGURL_PARAMS_MAX + 7];
    char shown[PG_SHOWN_MAX];    /* the URL with its password masked, for messages */
    bool echo_sql;
    /* The database's synchronous_commit is off: each connection sets it on, since an
     * answer may only rest on a durable commit (SPEC §3.7). Set once by pg_open. */
    bool force_sync_commit;
    store_txn_ops read_ops;      /* pg_ops with writes refused */

    pthread_mutex_t mu;          /* guards the four fields below */
    pthread_cond_t cv;           /* a connection came back, or a slot opened */
    pg_conn *free_conns;
    int n_open;                  /* open or being opened */
    int n_free;
} pg_store;

/* One unit of work in progress: its connection and what its statements met. */
typedef struct pg_txn {
    store_txn base;
    pg_store *st;
    pg_conn *c;
    bool aborted;                /* a statement failed: PostgreSQL aborted the transaction */
    bool broken;                 /* the connection is lost */
    bool retry;                  /* running the unit again may succeed */
    bool read_only;              /* exec_read: a snapshot, which needs no row locks */
    const char *begin_sql;       /* sent along with the unit's first statement */
    bool begun;                  /* begin_sql has been sent */
    bool stale;                  /* the connection was found lost by the first statement,
                                  * before anything of the unit ran on the server */
    zbso_err first;              /* the first failure, for a unit that carries on */
    /* The last id that job_get found missing: an insert of it that meets a row means
     * another transaction committed the job meanwhile, and a rerun will see it. */
    char missing_job[ZBSO_ID_MAX + 1];
} pg_txn;

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

/* Records a failed statement in t and err. Translates: a lost connection, a shutdown or
 * a retryable conflict is ZBSO_EUNAVAIL; unique_violation ZBSO_ECONFLICT;
 * foreign_key_violation ZBSO_ENOTFOUND (the parent job is missing); a data exception
 * (22xxx, e.g. bytes invalid in the database's encoding) ZBSO_EINVAL; insufficient
 * resources (53xxx), lock or statement timeouts ZBSO_EUNAVAIL; the rest ZBSO_ESTORE.
 * Returns the code. */
static int txn_fail(pg_txn *t, const PGresult *r, const char *what, const char *job_id,
                    zbso_err *err)
{
    char msg[384];
    const char *state = r != NULL ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    int code = ZBSO_ESTORE;
    result_message(t->c->db, r, msg, sizeof msg);
    if (PQstatus(t->c->db) == CONNECTION_BAD || state_is_broken(state)) {
        t->broken = true;
        code = ZBSO_EUNAVAIL;
    } else if (state_is_retryable(state)) {
        t->retry = true;
        code = ZBSO_EUNAVAIL;
    } else if (state != NULL && strcmp(state, "23505") == 0) {
        code = ZBSO_ECONFLICT;
    } else if (state != NULL && strcmp(state, "23503") == 0) {
        code = ZBSO_ENOTFOUND;
    } else if (state != NULL && strncmp(state, "22", 2) == 0) {
        /* A value the database cannot take, such as a job id that is not valid in its
         * encoding; the message leaves the id out, since it may not be printable. */
        code = ZBSO_EINVAL;
        job_id = NULL;
    } else if (state != NULL && (strncmp(state, "53", 2) == 0 || strcmp(state, "55P03") == 0 ||
                                 strcmp(state, "57014") == 0)) {
        code = ZBSO_EUNAVAIL;
    }
    t->aborted = true;
    if (job_id == NULL)
        err_set(&t->first, code, "postgresql: %s failed on %s: %s (SQLSTATE %s)", what,
                t->st->shown, msg, state != NULL ? state : "none");
    else
        err_set(&t->first, code, "postgresql: %s for job \"%.300s\" failed: %s (SQLSTATE %s)",
                what, job_id, msg, state != NULL ? state : "none");
    if (err != NULL)
        *err = t->first;
    return code;
}

/* ---- values ---- */

/* Text parameters of one statement: each slot is a value's text, or NULL for SQL NULL. */
typedef struct params {
    const char *v[N_JOB_COLS];
    char num[N_JOB_COLS][32];
} params;

static void p_i64(params *p, int i, int64_t x)
{
    snprintf(p->num[i], sizeof p->num[i], "%lld", (long long)x);
    p->v[i] = p->num[i];
}

/* NaN is SQL NULL; infinities are PostgreSQL's spellings; finite values round-trip
 * exactly with 17 significant digits. */
static void p_f64(params *p, int i, double x)
{
    if (isnan(x))
        p->v[i] = NULL;
    else if (isinf(x))
        p->v[i] = x > 0 ? "Infinity" : "-Infinity";
    else {
        snprintf(p->num[i], sizeof p->num[i], "%.17g", x);
        p->v[i] = p->num[i];
    }
}

static void p_bool(params *p, int i, bool x)
{
    p->v[i] = x ? "true" : "false";
}

static bool r_null(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) != 0;
}

static int64_t r_i64(const PGresult *r, int row, int col)
{
    return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* NULL reads as NaN. */
static double r_f64(const PGresult *r, int row, int col)
{
    return r_null(r, row, col) ? NAN : strtod(PQgetvalue(r, row, col), NULL);
}

static bool r_bool(const PGresult *r, int row, int col)
{
    return PQgetvalue(r, row, col)[0] == 't';
}

static void r_text(const PGresult *r, int row, int col, char *out, size_t cap)
{
    snprintf(out, cap, "%s", PQgetvalue(r, row, col));
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

/* Runs a simple statement (no parameters, not prepared) on the unit's connection, after
 * the unit's BEGIN when that is not sent yet. Returns 0, or the translated failure
 * recorded in t. */
static int run_simple(pg_txn *t, const char *sql, const char *what, zbso_err *err)
{
    if (t->aborted)
        return failed_before(t, err);
    if (!t->begun) {
        t->begun = true;
        int rc = run_simple(t, t->begin_sql, "BEGIN", err);
        if (rc < 0)
            return rc;
    }
    if (t->st->echo_sql)
        log_info("sql: %s", sql);
    PGresult *r = PQexec(t->c->db, sql);
    ExecStatusType s = PQresultStatus(r);
    int rc = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK ? 0 : txn_fail(t, r, what, NULL, err);
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
        echo(stmts[id].sql, stmts[id].n_params, v);
    }
    ok = PQenterPipelineMode(c->db) &&
         PQsendQueryParams(c->db, t->begin_sql, 0, NULL, NULL, NULL, NULL, 0) &&
         (!prepare || PQsendPrepare(c->db, name, stmts[id].sql, stmts[id].n_params, NULL)) &&
         PQsendQueryPrepared(c->db, name, stmts[id].n_params, v, NULL, NULL, 0) &&
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
    txn_fail(t, bad, what, job_id, err);
    t->stale = t->broken;
    PQclear(bad);
    return NULL;
}

/* Runs prepared statement id (preparing it on this connection the first time) with the
 * text parameters v. Returns the result (the caller PQclears it), or NULL with the failure
 * translated into err and recorded in t. A unit whose transaction is aborted sends
 * nothing more and gets its first failure again. */
static PGresult *run(pg_txn *t, int id, const char *const *v, const char *what,
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
        r = PQprepare(c->db, name, stmts[id].sql, stmts[id].n_params, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            txn_fail(t, r, what, job_id, err);
            PQclear(r);
            return NULL;
        }
        PQclear(r);
        c->prepared[id] = true;
    }
    if (t->st->echo_sql)
        echo(stmts[id].sql, stmts[id].n_params, v);
    r = PQexecPrepared(c->db, name, stmts[id].n_params, v, NULL, NULL, 0);
    if (result_ok(r))
        return r;
    txn_fail(t, r, what, job_id, err);
    PQclear(r);
    return NULL;
}

/* Rows a write changed (PQcmdTuples). */
static int64_t changed(const PGresult *r)
{
    return strtoll(PQcmdTuples((PGresult *)r), NULL, 10);
}

static pg_txn *txn_of(store_txn *t)
{
    return (pg_txn *)t;
}

/* ---- jobs ---- */

/* Fills p with the job's columns in JOB_COLS order ($1..$26); bs and rng hold the
 * batch_sizes array literal and the rng text. */
static void job_params(params *p, const zbso_job *job, char *bs, size_t bs_cap, char rng[96])
{
    const zbso_job_spec *sp = &job->spec;
    size_t len = (size_t)snprintf(bs, bs_cap, "{");
    for (size_t i = 0; i < sp->n_batch_sizes && i < ZBSO_MAX_BATCH_SIZES && len < bs_cap; i++)
        len += (size_t)snprintf(bs + len, bs_cap - len, "%s%lld", i ? "," : "",
                                (long long)sp->batch_sizes[i]);
    if (len < bs_cap)
        snprintf(bs + len, bs_cap - len, "}");
    rng_format(&job->rng, rng);
    p->v[0] = sp->job_id;
    p->v[1] = sp->job_id_prefix;
    p->v[2] = bs;
    p_i64(p, 3, sp->default_batch_size);
    p_f64(p, 4, sp->eta_knob);
    if (sp->has_beta_knob)
        p_f64(p, 5, sp->beta_knob);
    else
        p->v[5] = NULL;
    p_f64(p, 6, sp->target_metric);
    p_bool(p, 7, sp->higher_is_better_metric);
    p_i64(p, 8, sp->max_epochs);
    p_i64(p, 9, sp->num_pruning_rounds);
    p_i64(p, 10, sp->window_size);
    p_f64(p, 11, sp->mab_prior_mean);
    p_f64(p, 12, sp->mab_prior_precision);
    p_i64(p, 13, sp->mab_num_explorations);
    if (sp->has_mab_seed) {
        int64_t seed;
        memcpy(&seed, &sp->mab_seed, sizeof seed);
        p_i64(p, 14, seed);
    } else {
        p->v[14] = NULL;
    }
    p_f64(p, 15, sp->max_power);
    p_i64(p, 16, sp->number_of_gpus);
    p->v[17] = sp->gpu_model;
    p_i64(p, 18, (int64_t)job->stage);
    p_i64(p, 19, job->exp_default_batch_size);
    if (job->has_min_cost)
        p_f64(p, 20, job->min_cost);
    else
        p->v[20] = NULL;
    p_i64(p, 21, job->min_cost_batch_size);
    p->v[22] = rng;
    p_i64(p, 23, job->num_trials);
    p_f64(p, 24, job->created_at);
    p_i64(p, 25, job->version);
}

/* Reads a jobs row (JOB_COLS order). Returns 0, or ZBSO_ESTORE when batch_sizes or
 * rng_state do not parse (the row was not written by this code). */
static int r_job(const PGresult *r, zbso_job *job, zbso_err *err)
{
    zbso_job_spec *sp = &job->spec;
    memset(job, 0, sizeof *job);
    r_text(r, 0, 0, sp->job_id, sizeof sp->job_id);
    r_text(r, 0, 1, sp->job_id_prefix, sizeof sp->job_id_prefix);
    const char *bs = PQgetvalue(r, 0, 2), *p = bs;
    if (*p == '{')
        p++;
    while (*p != '}' && *p != '\0') {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || (*end != ',' && *end != '}') || sp->n_batch_sizes == ZBSO_MAX_BATCH_SIZES)
            return err_set(err, ZBSO_ESTORE, "postgresql: job \"%.300s\" has malformed"
                           " batch_sizes \"%.100s\"", sp->job_id, bs);
        sp->batch_sizes[sp->n_batch_sizes++] = v;
        p = *end == ',' ? end + 1 : end;
    }
    sp->default_batch_size = r_i64(r, 0, 3);
    sp->eta_knob = r_f64(r, 0, 4);
    sp->has_beta_knob = !r_null(r, 0, 5);
    sp->beta_knob = sp->has_beta_knob ? r_f64(r, 0, 5) : 0.0;
    sp->target_metric = r_f64(r, 0, 6);
    sp->higher_is_better_metric = r_bool(r, 0, 7);
    sp->max_epochs = r_i64(r, 0, 8);
    sp->num_pruning_rounds = r_i64(r, 0, 9);
    sp->window_size = r_i64(r, 0, 10);
    sp->mab_prior_mean = r_f64(r, 0, 11);
    sp->mab_prior_precision = r_f64(r, 0, 12);
    sp->mab_num_explorations = r_i64(r, 0, 13);
    sp->has_mab_seed = !r_null(r, 0, 14);
    if (sp->has_mab_seed) {
        int64_t seed = r_i64(r, 0, 14);
        memcpy(&sp->mab_seed, &seed, sizeof seed);
    }
    sp->max_power = r_f64(r, 0, 15);
    sp->number_of_gpus = r_i64(r, 0, 16);
    r_text(r, 0, 17, sp->gpu_model, sizeof sp->gpu_model);
    job->stage = r_i64(r, 0, 18) == ZBSO_STAGE_MAB ? ZBSO_STAGE_MAB : ZBSO_STAGE_PRUNING;
    job->exp_default_batch_size = r_i64(r, 0, 19);
    job->has_min_cost = !r_null(r, 0, 20);
    job->min_cost = job->has_min_cost ? r_f64(r, 0, 20) : 0.0;
    job->min_cost_batch_size = r_i64(r, 0, 21);
    const char *rng = PQgetvalue(r, 0, 22);
    if (rng_parse(&job->rng, rng) != 0)
        return err_set(err, ZBSO_ESTORE, "postgresql: job \"%.300s\" has malformed rng_state"
                       " \"%.100s\"", sp->job_id, rng);
    job->num_trials = r_i64(r, 0, 23);
    job->created_at = r_f64(r, 0, 24);
    job->version = r_i64(r, 0, 25);
    return 0;
}

/* Loads a job; with for_update, SELECT ... FOR UPDATE: the row stays locked until the
 * unit ends, and a unit that waited for the lock reads the row as its holder left it.
 * A read unit reads its snapshot, which no lock would change (and a READ ONLY transaction
 * may not take one). */
static int q_job_get(store_txn *tb, const char *id, bool for_update, zbso_job *out,
                     zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    const char *v[1] = {id};
    PGresult *r = run(t, for_update && !t->read_only ? S_JOB_GET_LOCK : S_JOB_GET, v,
                      "job_get", id, err);
    int rc;
    if (r == NULL)
        return t->first.code;
    if (PQntuples(r) == 0) {
        snprintf(t->missing_job, sizeof t->missing_job, "%s", id);
        rc = err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id);
    } else {
        rc = r_job(r, out, err);
    }
    PQclear(r);
    return rc;
}

/* ZBSO_ECONFLICT when the id exists. An existing row that this unit's job_get found
 * missing was committed by another transaction meanwhile (two replicas registering one
 * job at once): the unit is marked to run again, and then sees that row. */
static int q_job_insert(store_txn *tb, const zbso_job *job, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    char bs[ZBSO_MAX_BATCH_SIZES * 21 + 3], rng[96];
    job_params(&p, job, bs, sizeof bs, rng);
    PGresult *r = run(t, S_JOB_INSERT, p.v, "job_insert", job->spec.job_id, err);
    if (r == NULL)
        return t->first.code;
    int64_t n = changed(r);
    PQclear(r);
    if (n == 1)
        return 0;
    if (strcmp(t->missing_job, job->spec.job_id) == 0)
        t->retry = true;
    return err_set(err, ZBSO_ECONFLICT, "job \"%.300s\" already exists", job->spec.job_id);
}

/* Writes the mutable columns; ZBSO_ENOTFOUND when no row has the id. */
static int q_job_update(store_txn *tb, const zbso_job *job, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    char rng[96];
    rng_format(&job->rng, rng);
    p.v[0] = job->spec.job_id;
    p_i64(&p, 1, (int64_t)job->stage);
    p_i64(&p, 2, job->exp_default_batch_size);
    if (job->has_min_cost)
        p_f64(&p, 3, job->min_cost);
    else
        p.v[3] = NULL;
    p_i64(&p, 4, job->min_cost_batch_size);
    p.v[5] = rng;
    p_i64(&p, 6, job->num_trials);
    p_i64(&p, 7, job->version);
    PGresult *r = run(t, S_JOB_UPDATE, p.v, "job_update", job->spec.job_id, err);
    if (r == NULL)
        return t->first.code;
    int64_t n = changed(r);
    PQclear(r);
    return n == 0 ? err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", job->spec.job_id)
                  : 0;
}

/* Deletes the job; its trials and arms go with it (ON DELETE CASCADE). */
static int q_job_delete(store_txn *tb, const char *id, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    const char *v[1] = {id};
    PGresult *r = run(t, S_JOB_DELETE, v, "job_delete", id, err);
    if (r == NULL)
        return t->first.code;
    int64_t n = changed(r);
    PQclear(r);
    return n == 0 ? err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id) : 0;
}

static int q_job_ids(store_txn *tb, int (*fn)(void *ctx, const char *job_id), void *ctx,
                     zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    PGresult *r = run(t, S_JOB_IDS, NULL, "job_ids", NULL, err);
    int rc = 0;
    if (r == NULL)
        return t->first.code;
    for (int i = 0, n = PQntuples(r); i < n && rc == 0; i++)
        rc = fn(ctx, PQgetvalue(r, i, 0));
    PQclear(r);
    return rc;
}

/* ---- trials ---- */

/* Fills p with job_id as $1 and the trial's columns as $2..$13 in TRIAL_COLS order. */
static void trial_params(params *p, const char *job_id, const zbso_trial *tr)
{
    p->v[0] = job_id;
    p_i64(p, 1, tr->trial_number);
    p_i64(p, 2, tr->batch_size);
    p_i64(p, 3, (int64_t)tr->type);
    p_i64(p, 4, (int64_t)tr->status);
    p_f64(p, 5, tr->start_time);
    p_f64(p, 6, tr->end_time);
    p_f64(p, 7, tr->lease_renewed_at);
    p_f64(p, 8, tr->time);
    p_f64(p, 9, tr->energy);
    p_f64(p, 10, tr->metric);
    p_i64(p, 11, tr->epochs);
    p_bool(p, 12, tr->converged);
}

static void r_trial(const PGresult *r, int row, zbso_trial *tr)
{
    tr->trial_number = r_i64(r, row, 0);
    tr->batch_size = r_i64(r, row, 1);
    tr->type = (zbso_trial_type)r_i64(r, row, 2);
    tr->status = (zbso_trial_status)r_i64(r, row, 3);
    tr->start_time = r_f64(r, row, 4);
    tr->end_time = r_f64(r, row, 5);
    tr->lease_renewed_at = r_f64(r, row, 6);
    tr->time = r_f64(r, row, 7);
    tr->energy = r_f64(r, row, 8);
    tr->metric = r_f64(r, row, 9);
    tr->epochs = r_i64(r, row, 10);
    tr->converged = r_bool(r, row, 11);
}

/* ZBSO_ECONFLICT when the trial number is taken, ZBSO_ENOTFOUND without the job. */
static int q_trial_insert(store_txn *tb, const char *id, const zbso_trial *trial,
                          zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    trial_params(&p, id, trial);
    PGresult *r = run(t, S_TRIAL_INSERT, p.v, "trial_insert", id, err);
    if (r == NULL) {
        if (t->first.code == ZBSO_ENOTFOUND)
            return err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id);
        return t->first.code;
    }
    int64_t n = changed(r);
    PQclear(r);
    return n == 1 ? 0 : err_set(err, ZBSO_ECONFLICT, "trial %lld of job \"%.300s\" already"
                                " exists", (long long)trial->trial_number, id);
}

static int q_trial_get(store_txn *tb, const char *id, int64_t n, zbso_trial *out,
                       zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    p.v[0] = id;
    p_i64(&p, 1, n);
    PGresult *r = run(t, S_TRIAL_GET, p.v, "trial_get", id, err);
    int rc = 0;
    if (r == NULL)
        return t->first.code;
    if (PQntuples(r) == 0)
        rc = err_set(err, ZBSO_ENOTFOUND, "trial %lld of job \"%.300s\" not found",
                     (long long)n, id);
    else
        r_trial(r, 0, out);
    PQclear(r);
    return rc;
}

static int q_trial_update(store_txn *tb, const char *id, const zbso_trial *trial,
                          zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    trial_params(&p, id, trial);
    PGresult *r = run(t, S_TRIAL_UPDATE, p.v, "trial_update", id, err);
    if (r == NULL)
        return t->first.code;
    int64_t n = changed(r);
    PQclear(r);
    return n == 0 ? err_set(err, ZBSO_ENOTFOUND, "trial %lld of job \"%.300s\" not found",
                            (long long)trial->trial_number, id)
                  : 0;
}

/* The rows are all fetched before fn runs, so fn may use any operation of the unit. */
static int q_trials_list(store_txn *tb, const char *id, const store_trial_query *q,
                         store_trial_fn fn, void *ctx, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    zbso_trial tr;
    int rc = 0;
    p.v[0] = id;
    p_i64(&p, 1, q->type_mask ? (int64_t)q->type_mask : (int64_t)UINT32_MAX);
    p_i64(&p, 2, q->status_mask ? (int64_t)q->status_mask : (int64_t)UINT32_MAX);
    if (q->last_n > 0)
        p_i64(&p, 3, q->last_n);
    else
        p.v[3] = NULL;
    if (q->batch_size != 0)
        p_i64(&p, 4, q->batch_size);
    PGresult *r = run(t, q->batch_size != 0 ? S_TRIALS_LIST_BS : S_TRIALS_LIST, p.v,
                      "trials_list", id, err);
    if (r == NULL)
        return t->first.code;
    for (int i = 0, n = PQntuples(r); i < n && rc == 0; i++) {
        r_trial(r, i, &tr);
        rc = fn(ctx, &tr);
    }
    PQclear(r);
    return rc;
}

static int q_trials_fail_stale(store_txn *tb, const char *id, double cutoff, double now,
                               int64_t *n_failed, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    int64_t n = 0;
    int rc = 0;
    p.v[0] = id;
    p_f64(&p, 1, cutoff);
    p_f64(&p, 2, now);
    PGresult *r = run(t, S_TRIALS_FAIL_STALE, p.v, "trials_fail_stale", id, err);
    if (r == NULL) {
        rc = t->first.code;
    } else {
        n = changed(r);
        PQclear(r);
    }
    if (n_failed != NULL)
        *n_failed = n;
    return rc;
}

/* ---- arms ---- */

static int q_arms_get(store_txn *tb, const char *id, zbso_arm *out, size_t cap,
                      size_t *n_out, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    const char *v[1] = {id};
    int rc = 0;
    *n_out = 0;
    PGresult *r = run(t, S_ARMS_GET, v, "arms_get", id, err);
    if (r == NULL)
        return t->first.code;
    size_t n = (size_t)PQntuples(r);
    if (n > cap) {
        rc = err_set(err, ZBSO_EINVAL, "job \"%.300s\" has more than the %zu arms asked for",
                     id, cap);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        out[i].batch_size = r_i64(r, (int)i, 0);
        out[i].param_mean = r_f64(r, (int)i, 1);
        out[i].param_precision = r_f64(r, (int)i, 2);
        out[i].num_observations = r_i64(r, (int)i, 3);
    }
    *n_out = n;
out:
    PQclear(r);
    return rc;
}

static int q_arm_put(store_txn *tb, const char *id, const zbso_arm *arm, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    p.v[0] = id;
    p_i64(&p, 1, arm->batch_size);
    p_f64(&p, 2, arm->param_mean);
    p_f64(&p, 3, arm->param_precision);
    p_i64(&p, 4, arm->num_observations);
    PGresult *r = run(t, S_ARM_PUT, p.v, "arm_put", id, err);
    if (r == NULL) {
        if (t->first.code == ZBSO_ENOTFOUND)
            return err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id);
        return t->first.code;
    }
    PQclear(r);
    return 0;
}

static const store_txn_ops pg_ops = {
    .job_get = q_job_get,
    .job_insert = q_job_insert,
    .job_update = q_job_update,
    .job_delete = q_job_delete,
    .job_ids = q_job_ids,
    .trial_insert = q_trial_insert,
    .trial_get = q_trial_get,
    .trial_update = q_trial_update,
    .trials_list = q_trials_list,
    .trials_fail_stale = q_trials_fail_stale,
    .arms_get = q_arms_get,
    .arm_put = q_arm_put,
};

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
    } else if (commit && !t->read_only) {
        if (st->echo_sql)
            log_info("sql: COMMIT");
        PGresult *r = PQexec(t->c->db, "COMMIT");
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            rc = txn_fail(t, r, "COMMIT", NULL, err);
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
        t.base.ops = read_only ? &st->read_ops : &pg_ops;
        t.st = st;
        t.read_only = read_only;
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

/* ---- schema ---- */

/* Reads the schema version (0 when there is no zbso_schema table) and how many tables the
 * current schema holds. Returns 0 or the translated failure. */
static int read_version(pg_txn *t, int *version, int64_t *n_tables, zbso_err *err)
{
    PGresult *r;
    const char *probe = "SELECT to_regclass('zbso_schema') IS NOT NULL, (SELECT count(*)"
                        " FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n"
                        " ON n.oid = c.relnamespace WHERE n.nspname = current_schema()"
                        " AND c.relkind IN ('r', 'p', 'v', 'm', 'f'))";
    if (t->st->echo_sql)
        log_info("sql: %s", probe);
    r = PQexec(t->c->db, probe);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        int rc = txn_fail(t, r, "reading the schema version", NULL, err);
        PQclear(r);
        return rc;
    }
    bool has_table = r_bool(r, 0, 0);
    *n_tables = r_i64(r, 0, 1);
    *version = 0;
    PQclear(r);
    if (!has_table)
        return 0;
    const char *sql = "SELECT max(version) FROM zbso_schema";
    if (t->st->echo_sql)
        log_info("sql: %s", sql);
    r = PQexec(t->c->db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        int rc = txn_fail(t, r, "reading the schema version", NULL, err);
        PQclear(r);
        return rc;
    }
    *version = r_null(r, 0, 0) ? 0 : (int)r_i64(r, 0, 0);
    PQclear(r);
    return 0;
}

typedef struct schema_arg {
    store_schema_plan_fn plan;
    void *ctx;
} schema_arg;

/* Unit of work of pg_schema_run: under the schema lock (replicas starting together on an
 * empty database create the schema once: the others then find it made), reads the
 * version, asks the plan, applies the steps. */
static int schema_unit(store_txn *tb, void *argp, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    schema_arg *a = argp;
    int64_t n_tables = 0;
    int version = 0, to = 0, rc;
    if ((rc = run_simple(t, PG_SCHEMA_LOCK_SQL, "taking the schema lock", err)) < 0)
        return rc;
    if ((rc = read_version(t, &version, &n_tables, err)) < 0)
        return rc;
    if ((rc = a->plan(a->ctx, version, n_tables > 0, &to, err)) < 0)
        return rc;
    if (to != version && (to < version || to > PG_LATEST))
        return err_set(err, ZBSO_EINTERNAL, "%s: no way from schema version %d to %d",
                       t->st->shown, version, to);
    for (int v = version + 1; v <= to; v++) {
        for (const char *const *sql = steps[v - 1]; *sql != NULL; sql++) {
            char what[64];
            snprintf(what, sizeof what, "migration to schema version %d", v);
            if ((rc = run_simple(t, *sql, what, err)) < 0)
                return rc;
        }
    }
    return 0;
}

static int pg_schema_run(store *base, store_schema_plan_fn plan, void *ctx, zbso_err *err)
{
    schema_arg a = {plan, ctx};
    return pg_exec(base, schema_unit, &a, err);
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
    store_ops_read_only(&pg_ops, &st->read_ops);
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

const store_backend store_postgresql_backend = {
    .version = 2,
    .name = "postgresql",
    .open = pg_open,
    .close = pg_close,
    .exec = pg_exec,
    .latest_schema_version = PG_LATEST,
    .schema_steps = steps,
    .schema_lock_sql = PG_SCHEMA_LOCK_SQL,
    .schema_run = pg_schema_run,
    .exec_read = pg_exec_read,
};
