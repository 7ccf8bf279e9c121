/* sqliteInt.h: private to the SQLite backend, shared by its two files and nothing else:
 * sqlite_engine.c (connections, the writer thread and its group commits, the reader pool,
 * the checkpointer, units of work) and sqlite_ops.c (schema history, statements, row
 * mapping, domain operations). Callers use store.h; this header is the seam between
 * the two halves. */
#ifndef ZBSO_STORE_SQLITEINT_H
#define ZBSO_STORE_SQLITEINT_H

#include <sqlite3.h>

#include "store/storeInt.h"

/* The newest schema version of sqlite_ops.c's history. */
#define SQ_LATEST 3

/* Statement ids: sqlite_ops.c holds their SQL, a connection caches them prepared. */
enum {
    S_BEGIN, S_BEGIN_READ, S_COMMIT, S_ROLLBACK, S_SAVEPOINT, S_ROLLBACK_TO, S_RELEASE,
    S_JOB_GET, S_JOB_INSERT, S_JOB_UPDATE, S_JOB_DELETE, S_JOB_IDS,
    S_TRIAL_INSERT, S_TRIAL_GET, S_TRIAL_UPDATE, S_TRIALS_LIST, S_TRIALS_LIST_BS,
    S_TRIALS_FAIL_STALE, S_ARMS_GET, S_ARM_PUT, S_USER_VERSION,
    S_COUNT
};

/* A connection with its statements, each prepared on first use (sq_stmt). */
typedef struct sq_conn {
    sqlite3 *db;
    sqlite3_stmt *stmts[S_COUNT];
    const char *path;            /* the store's, for messages */
    struct sq_conn *next_free;   /* a reader in the pool's free list */
} sq_conn;

/* A unit of work in progress on connection c; the engine sets it up, the operations
 * read c from it. */
typedef struct sq_txn {
    store_txn base;
    sq_conn *c;
} sq_txn;

/* ---- sqlite_ops.c ---- */

/* sq_schema_steps[v - 1] takes a database from schema version v - 1 to v. */
extern const char *const *const sq_schema_steps[SQ_LATEST];

/* The domain operations of store_txn_ops on an sq_txn. */
extern const store_txn_ops sq_ops;

/* Fills err from the connection's last error, for the failed step that returned rc:
 * SQLITE_BUSY/LOCKED (another process holds the database) is ZBSO_EUNAVAIL, everything
 * else ZBSO_ESTORE. Names job_id when not NULL, else the file. Returns the code. */
int sq_fail(sq_conn *c, int rc, const char *what, const char *job_id, zbso_err *err);

/* Returns c's cached statement id, prepared on first use, or NULL with err set
 * (ZBSO_ESTORE). The caller resets it after use. */
sqlite3_stmt *sq_stmt(sq_conn *c, int id, zbso_err *err);

/* Steps statement id, which returns no rows, then resets it. Returns 0 or sq_fail's
 * code. */
int sq_run(sq_conn *c, int id, const char *what, const char *job_id, zbso_err *err);

/* What sq_schema_unit is to do: store.c's plan (store.h, schema_run). */
typedef struct sq_schema_arg {
    store_schema_plan_fn plan;
    void *ctx;
} sq_schema_arg;

/* Unit of work (arg: sq_schema_arg) that reads the schema version, asks the plan and
 * applies the steps up to its answer. Returns 0, the plan's code, or ZBSO_ESTORE naming
 * the step that failed. */
int sq_schema_unit(store_txn *t, void *arg, zbso_err *err);

#endif
