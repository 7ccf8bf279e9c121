/* pgInt.h: private to the PostgreSQL backend, shared by its two files and nothing else:
 * pg_engine.c (the driver of netdb.c: connections, statements on the wire, error
 * translation) and pg_ops.c (schema history, statements' SQL, values and
 * rows, domain operations). Callers use store.h; this header is the seam between the
 * two halves. */
#ifndef ZBSO_STORE_PGINT_H
#define ZBSO_STORE_PGINT_H

#include <libpq-fe.h>
#include <pthread.h>

#include "store/netdb/pgurl.h"
#include "store/netdb/netdb.h"

/* The newest schema version of pg_ops.c's history. */
#define PG_LATEST 8
/* Serializes schema changes (the key is "zbso" in ASCII), so that replicas starting
 * together on an empty database create the schema once. */
#define PG_SCHEMA_LOCK_SQL "SELECT pg_advisory_xact_lock(2053272431);"

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
    netdb_conn base;
    PGconn *db;
    bool prepared[S_COUNT];
} pg_conn;

/* The PostgreSQL part of a netdb store. */
typedef struct pg_store {
    netdb base;
    pgurl url;                   /* the parsed URL; conn_keys/conn_values point into it */
    const char *conn_keys[PGURL_PARAMS_MAX + 7];   /* the URL's, the defaults, NULL */
    const char *conn_values[PGURL_PARAMS_MAX + 7];
    /* The database's synchronous_commit is off: each connection sets it on, since an
     * answer may only rest on a durable commit (SPEC §3.7). Set once by check. */
    bool force_sync_commit;
} pg_store;

/* One unit of work in progress: netdb's. */
typedef netdb_txn pg_txn;

/* The libpq connection of t's unit. */
static inline PGconn *pg_db(const pg_txn *t)
{
    return ((const pg_conn *)t->c)->db;
}

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
typedef netdb_schema_arg pg_schema_arg;

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
