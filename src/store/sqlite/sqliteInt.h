/* sqliteInt.h: private to the SQLite backend, shared by its two files and nothing else:
 * sqlite_engine.c (connections, the writer thread and its group commits, the reader pool,
 * the checkpointer, units of work, the statement cache, error translation) and
 * sqlite_ops.c (schema history, statements' SQL, row mapping, domain operations). Callers
 * use store.h; this header is the seam between the two halves. */
#ifndef ZBSO_STORE_SQLITEINT_H
#define ZBSO_STORE_SQLITEINT_H

#include <sqlite3.h>
#include <sys/types.h>

#include "store/storeInt.h"

/* The newest schema version of sqlite_ops.c's history. */
#define SQ_LATEST 9
#define SQ_PATH_MAX 1024         /* bytes of a database path, its NUL included */

/* Statement ids: sqlite_ops.c holds their SQL, a connection caches them prepared. */
enum {
    S_BEGIN, S_BEGIN_READ, S_COMMIT, S_ROLLBACK, S_SAVEPOINT, S_ROLLBACK_TO, S_RELEASE,
    S_JOB_GET, S_JOB_INSERT, S_JOB_UPDATE, S_JOB_DELETE, S_JOB_IDS,
    S_TRIAL_INSERT, S_TRIAL_GET, S_TRIAL_BY_KEY, S_TRIAL_UNKEY, S_TRIAL_UPDATE,
    S_TRIALS_LIST, S_TRIALS_LIST_BS, S_TRIALS_PAGE, S_TRIALS_PAGE_BS, S_TRIALS_FAIL_STALE,
    S_ARMS_GET, S_ARM_PUT, S_USER_VERSION, S_JOBS_FROM, S_JOBS_AFTER, S_TRIAL_EXISTS,
    S_REPORT_PUT, S_REPORTS_LIST, S_REPORTS_DELETE, S_COUNT_JOBS, S_COUNT_TRIALS, S_OLDEST_LEASE,
    S_PROFILE_PUT, S_PROFILE_GET, S_PROFILES_LIST,
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

/* The SQL of each cached statement, by id. */
extern const char *const sq_stmt_sql[S_COUNT];

/* What sq_schema_unit is to do: store.c's plan (store.h, schema_run). */
typedef struct sq_schema_arg {
    store_schema_plan_fn plan;
    void *ctx;
} sq_schema_arg;

/* Unit of work (arg: sq_schema_arg) that reads the schema version, asks the plan and
 * applies the steps up to its answer. Returns 0, the plan's code, or sq_fault's code
 * naming the step that failed. */
int sq_schema_unit(store_txn *t, void *arg, zbso_err *err);

/* Unit of work (arg unused) that writes user_version as it is: committed, it proves that
 * the database can be written now. Returns 0 or sq_fail's code. */
int sq_write_probe_unit(store_txn *t, void *arg, zbso_err *err);

/* ---- sqlite_engine.c ---- */

/* Translates SQLite result rc (db's, which may be NULL, gives the errno behind it): the
 * storage faults that a later retry may outlive are ZBSO_EUNAVAIL (503 with Retry-After),
 * with their cause written to cause: another connection or process holding the database
 * (BUSY, LOCKED), a full disk (FULL), an I/O error (IOERR), a database that cannot be
 * written (READONLY) or a file that cannot be opened (CANTOPEN). Anything else is
 * ZBSO_ESTORE with cause "". Returns the code. */
int sq_fault(sqlite3 *db, int rc, char *cause, size_t cap);

/* Fills err from the connection's last error, for the failed step that returned rc, with
 * sq_fault's code and cause. Names job_id when not NULL, and the file. Returns the code. */
int sq_fail(sq_conn *c, int rc, const char *what, const char *job_id, zbso_err *err);

/* The store code (sq_fault) of c's last error, for a caller whose err was filled by a
 * failed sq_stmt. */
int sq_code(sq_conn *c);

/* Returns c's cached statement id, prepared on first use, or NULL with err set as by
 * sq_fail (sq_code(c) gives the code). The caller resets it after use. */
sqlite3_stmt *sq_stmt(sq_conn *c, int id, zbso_err *err);

/* Steps statement id, which returns no rows, then resets it. Returns 0 or sq_fail's
 * code. */
int sq_run(sq_conn *c, int id, const char *what, const char *job_id, zbso_err *err);

/* ---- sqlite_file.c ---- */

/* The database file and its WAL as this process opened them: its own read-only
 * descriptors (kept until every connection is closed, since closing a descriptor of a
 * file drops the process's POSIX locks on it, SQLite's included) and their identities. */
typedef struct sq_file_id {
    int db_fd, wal_fd;
    dev_t db_dev, wal_dev;
    ino_t db_ino, wal_ino;
} sq_file_id;

/* Before any connection to path exists: checks that path can be opened for writing (when
 * it exists) and that its directory can be written (SQLite creates -wal and -shm there).
 * Returns 0 or ZBSO_ESTORE naming the file or directory and the cause. */
int sq_file_check_writable(const char *path, zbso_err *err);

/* Records path and path-wal (both exist once a connection has read the database in WAL
 * mode). Returns 0 or ZBSO_ESTORE; sq_file_id_close is needed either way. */
int sq_file_id_open(sq_file_id *id, const char *path, zbso_err *err);
void sq_file_id_close(sq_file_id *id);

/* Returns 0 while path and path-wal are the files recorded, else ZBSO_EUNAVAIL with err
 * saying which was deleted or replaced. A few system calls; safe from any thread. */
int sq_file_id_check(const sq_file_id *id, const char *path, zbso_err *err);

/* Writes what db (a connection to the database that id watched) has committed to a new,
 * synced, standalone file, and moves it to path when that replaces nothing but the
 * database's own files (path deleted or still its own, path-wal absent or its own, which
 * is then removed); else it stays beside path. where receives the copy's final path.
 * Returns 0, or ZBSO_ESTORE when no copy could be written. Call it from the connection's
 * thread with no transaction open. */
int sq_file_rescue(sqlite3 *db, const sq_file_id *id, const char *path, char *where,
                   size_t cap, zbso_err *err);

#endif
