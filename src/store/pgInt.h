/* pgInt.h: private to the PostgreSQL backend, shared by its two files and nothing else:
 * pg_engine.c (connections and their pool, statements on the wire, units of work,
 * reruns, error translation) and pg_ops.c (schema history, statements' SQL, values and
 * rows, domain operations). Callers use store.h; this header is the seam between the
 * two halves. */
#ifndef ZBSO_STORE_PGINT_H
#define ZBSO_STORE_PGINT_H

#include <libpq-fe.h>
#include <pthread.h>

#include "store/pgurl.h"
#include "store/storeInt.h"

/* The newest schema version of pg_ops.c's history. */
#define PG_LATEST 6
/* Serializes schema changes (the key is "zbso" in ASCII), so that replicas starting
 * together on an empty database create the schema once. */
#define PG_SCHEMA_LOCK_SQL "SELECT pg_advisory_xact_lock(2053272431);"
#define PG_SHOWN_MAX 256          /* bytes of the masked URL kept for messages */

/* Prepared statements: pg_ops.c holds their SQL (pg_stmts), a connection prepares each
 * on first use. */
enum {
    S_JOB_GET, S_JOB_GET_LOCK, S_JOB_INSERT, S_JOB_UPDATE, S_JOB_DELETE, S_JOB_IDS,
    S_TRIAL_INSERT, S_TRIAL_GET, S_TRIAL_BY_KEY, S_TRIAL_UNKEY, S_TRIAL_UPDATE,
    S_TRIALS_LIST, S_TRIALS_LIST_BS, S_TRIALS_PAGE, S_TRIALS_PAGE_BS, S_TRIALS_FAIL_STALE,
    S_ARMS_GET, S_ARM_PUT, S_JOBS_FROM, S_JOBS_FROM_TO, S_JOBS_AFTER, S_JOBS_AFTER_TO,
    S_REPORTS_PUT, S_REPORTS_LIST, S_COUNTS, S_PROFILE_PUT, S_PROFILE_GET, S_PROFILES_LIST,
    S_COUNT
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
    const char *begin_sql;       /* sent along with the unit's first statement */
    bool begun;                  /* begin_sql has been sent */
    bool stale;                  /* the connection was found lost by the first statement,
                                  * before anything of the unit ran on the server */
    zbso_err first;              /* the first failure, for a unit that carries on */
    /* The last id that job_get found missing: an insert of it that meets a row means
     * another transaction committed the job meanwhile, and a rerun will see it. */
    char missing_job[ZBSO_ID_MAX + 1];
} pg_txn;

/* ---- pg_ops.c ---- */

/* pg_schema_steps[v - 1] takes a database from schema version v - 1 to v. */
extern const char *const *const pg_schema_steps[PG_LATEST];

typedef struct pg_stmt {
    const char *sql;
    int n_params;
} pg_stmt;

/* The SQL of each prepared statement, by id. */
extern const pg_stmt pg_stmts[S_COUNT];

/* The domain operations of store_txn_ops on a pg_txn. */
extern const store_txn_ops pg_ops;

/* What pg_schema_unit is to do: store.c's plan (store.h, schema_run). */
typedef struct pg_schema_arg {
    store_schema_plan_fn plan;
    void *ctx;
} pg_schema_arg;

/* Unit of work (arg: pg_schema_arg): takes the schema lock, reads the schema version,
 * asks the plan and applies the steps up to its answer. Returns 0, the plan's code, or
 * the translated failure of the step that failed. */
int pg_schema_unit(store_txn *t, void *arg, zbso_err *err);

/* Unit of work (arg unused) that runs a write statement changing nothing, which fails as
 * writes would on a database that takes none (read-only, unreachable). Returns 0 or the
 * translated failure. */
int pg_write_probe_unit(store_txn *t, void *arg, zbso_err *err);

/* ---- pg_engine.c ---- */

/* Translates a SQLSTATE (NULL: none) into a store code, and *cause (may be NULL) into
 * the words a message gives the faults a retry may outlive, or NULL. ZBSO_EUNAVAIL (503
 * with Retry-After): a lost connection or a shutdown (08xxx, 57P01-03), a serialization
 * failure or deadlock (40001, 40P01), insufficient resources such as a full disk (53xxx),
 * an I/O or system error (58xxx), a read-only transaction (25006: a standby, or
 * default_transaction_read_only), lock or statement timeouts (55P03, 57014).
 * unique_violation is ZBSO_ECONFLICT, foreign_key_violation ZBSO_ENOTFOUND (the parent
 * job is missing), a data exception (22xxx, e.g. bytes invalid in the database's
 * encoding) ZBSO_EINVAL; the rest ZBSO_ESTORE. Pure. */
int pg_state_code(const char *state, const char **cause);

/* Records a failed statement in t and err with pg_state_code's code and cause; a lost
 * connection (whatever the SQLSTATE) is ZBSO_EUNAVAIL and marks t broken, a retryable
 * conflict marks t for a rerun. r may be NULL (the connection's message is used).
 * Returns the code. */
int pg_txn_fail(pg_txn *t, const PGresult *r, const char *what, const char *job_id,
                zbso_err *err);

/* Runs a simple statement (no parameters, not prepared) on the unit's connection, after
 * the unit's BEGIN when that is not sent yet. Returns 0, or the translated failure
 * recorded in t. */
int pg_run_simple(pg_txn *t, const char *sql, const char *what, zbso_err *err);

/* Runs prepared statement id (preparing it on this connection the first time) with the
 * text parameters v; the unit's first statement travels with its BEGIN. Returns the
 * result (the caller PQclears it), or NULL with the failure translated into err and
 * recorded in t. A unit whose transaction is aborted sends nothing more and gets its
 * first failure again. */
PGresult *pg_run(pg_txn *t, int id, const char *const *v, const char *what,
                 const char *job_id, zbso_err *err);

#endif
