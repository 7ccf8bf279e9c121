/* myInt.h: private to the MySQL/MariaDB backend, shared by its two files and nothing
 * else: mysql_engine.c (the driver of netdb.c: connections, prepared statements on the
 * binary protocol, error translation) and mysql_ops.c (schema history,
 * statements' SQL, values and rows, domain operations). Callers use store.h; this header
 * is the seam between the two halves, as pgInt.h is for PostgreSQL. */
#ifndef ZBSO_STORE_MYINT_H
#define ZBSO_STORE_MYINT_H

#include <mysql.h>
#include <pthread.h>
#include <stdint.h>

#include "store/netdb/myurl.h"
#include "store/netdb/netdb.h"

/* The newest schema version of mysql_ops.c's history. */
#define MY_LATEST 5
/* Serializes schema changes between processes (replicas starting together on an empty
 * database create the schema once). A named lock belongs to the session, not to the
 * transaction: DDL commits implicitly on MySQL, and the lock outlives those commits.
 * Waits up to 60 s; my_schema_unit checks that the answer is 1, and the engine releases
 * the lock when the unit ends (my_txn.schema_locked). */
#define MY_SCHEMA_LOCK_SQL "SELECT GET_LOCK('zbso_schema', 60);"
#define MY_SCHEMA_UNLOCK_SQL "SELECT RELEASE_LOCK('zbso_schema');"

/* Prepared statements: mysql_ops.c holds their SQL (my_stmts), a connection prepares
 * each on first use and keeps it. */
enum {
    MS_JOB_GET, MS_JOB_GET_LOCK, MS_JOB_INSERT, MS_JOB_UPDATE, MS_JOB_DELETE, MS_JOB_IDS,
    MS_TRIAL_INSERT, MS_TRIAL_GET, MS_TRIAL_BY_KEY, MS_TRIAL_UNKEY, MS_TRIAL_UPDATE,
    MS_TRIALS_LIST, MS_TRIALS_LIST_BS, MS_TRIALS_PAGE, MS_TRIALS_PAGE_BS,
    MS_TRIALS_FAIL_STALE, MS_ARMS_GET, MS_ARM_PUT, MS_JOBS_FROM, MS_JOBS_FROM_TO,
    MS_JOBS_AFTER, MS_JOBS_AFTER_TO, MS_TRIAL_SHARE, MS_REPORTS_LIST, MS_COUNTS,
    MS_JOB_SHARE, MS_PROFILE_PUT, MS_PROFILE_GET, MS_PROFILES_LIST,
    MS_COUNT
};

typedef struct my_stmt_sql {
    const char *sql;
    int n_params;
} my_stmt_sql;

/* The SQL of each prepared statement, by id (mysql_ops.c). */
extern const my_stmt_sql my_stmts[MS_COUNT];

/* One value of a parameter or a result cell. A parameter's type picks its wire type; a
 * result cell's type comes from its column: integers MV_I64, DOUBLE MV_F64, text and
 * binary MV_BYTES (s points at len bytes followed by a NUL, valid until the rows are
 * freed), SQL NULL MV_NULL. */
typedef enum { MV_NULL, MV_I64, MV_F64, MV_BYTES } my_vtype;

typedef struct my_value {
    my_vtype type;
    int64_t i;
    double f;
    const char *s;
    size_t len;
} my_value;

static inline my_value my_null(void) { return (my_value){.type = MV_NULL}; }
static inline my_value my_i64(int64_t x) { return (my_value){.type = MV_I64, .i = x}; }
static inline my_value my_f64(double x) { return (my_value){.type = MV_F64, .f = x}; }
static inline my_value my_bytes(const char *s, size_t len)
{ return (my_value){.type = MV_BYTES, .s = s, .len = len}; }
static inline my_value my_text(const char *s) { return my_bytes(s, strlen(s)); }

/* A statement's answer: every row fetched (cells row-major, n_rows * n_cols), and for a
 * write the rows it matched (CLIENT_FOUND_ROWS: an UPDATE that writes equal values still
 * counts its rows). Freed with my_rows_free. */
typedef struct my_rows {
    size_t n_rows, n_cols;
    my_value *cells;
    int64_t affected;
    char *data;                 /* storage of the MV_BYTES cells */
} my_rows;

static inline const my_value *my_cell(const my_rows *r, size_t row, size_t col)
{ return &r->cells[row * r->n_cols + col]; }

/* A pooled connection with the statements prepared on it so far. */
typedef struct my_conn {
    netdb_conn base;
    MYSQL *db;
    MYSQL_STMT *stmts[MS_COUNT];
} my_conn;

/* The MySQL part of a netdb store. */
typedef struct my_store {
    netdb base;
    myurl url;
} my_store;

/* One unit of work in progress: netdb's. */
typedef netdb_txn my_txn;

/* The libmariadb connection of t's unit. */
static inline MYSQL *my_db(const my_txn *t)
{
    return ((const my_conn *)t->c)->db;
}

/* ---- mysql_ops.c ---- */

/* my_schema_steps[v - 1] takes a database from schema version v - 1 to v. */
extern const char *const *const my_schema_steps[MY_LATEST];

/* The domain operations of store_txn_ops on a my_txn. */
extern const store_txn_ops my_ops;

/* What my_schema_unit is to do: store.c's plan (store.h, schema_run). */
typedef netdb_schema_arg my_schema_arg;

/* Unit of work (arg: my_schema_arg): takes the schema lock (released by the engine when
 * the unit ends), reads the schema version and whether tables other than
 * zbso's exist, asks the plan and applies the steps up to its answer. Returns 0, the
 * plan's code, or the translated failure of the step that failed. */
int my_schema_unit(store_txn *t, void *arg, zbso_err *err);

/* Unit of work (arg unused) that runs a write statement changing nothing, which fails as
 * writes would on a database that takes none (read-only, unreachable). */
int my_write_probe_unit(store_txn *t, void *arg, zbso_err *err);

/* ---- mysql_engine.c ---- */

/* Translates a MySQL/MariaDB error number (0: none) into a store code, and *cause (may
 * be NULL) into the words a message gives the faults a retry may outlive, or NULL.
 * ZBSO_EUNAVAIL (503 with Retry-After): a lost connection or a server shutting down
 * (client errors 2002, 2003, 2006, 2013, 2055; server 1053, 1927, 4031), a deadlock
 * (1213) or lock wait timeout (1205), a full disk or out of resources (1021, 1041, 1114,
 * 1135, 3 (EE_WRITE), 1030 with an errno from the engine), read-only (1290, 1792, 1836),
 * too many connections (1040). Duplicate key (1062) is ZBSO_ECONFLICT, a missing parent
 * (1452) ZBSO_ENOTFOUND, a value the column cannot take (1264, 1366, 1406, 1367)
 * ZBSO_EINVAL; the rest ZBSO_ESTORE. Pure. */
int my_errno_code(unsigned errnum, const char **cause);

/* Records a failed statement in t and err with my_errno_code's code and cause, the
 * error number and SQLSTATE; a lost connection marks t broken, a deadlock or lock wait
 * timeout marks t for a rerun. Any failure but a duplicate key (1062, after which MySQL
 * rolls back the statement only, as an insert that does nothing on PostgreSQL) marks t
 * aborted: the unit's later statements get the first failure again and it cannot
 * commit, as on PostgreSQL. msg and errnum come from the connection or the statement
 * that failed. Returns the code. */
int my_txn_fail(my_txn *t, unsigned errnum, const char *sqlstate, const char *msg,
                const char *what, const char *job_id, zbso_err *err);

/* Runs a simple statement (text protocol, not prepared) on the unit's connection,
 * starting the unit's transaction first when it has not started. Result rows, if any,
 * are returned in *out when out is not NULL (else discarded). Returns 0, or the
 * translated failure recorded in t. */
int my_run_simple(my_txn *t, const char *sql, my_rows **out, const char *what,
                  zbso_err *err);

/* Runs prepared statement id (preparing it on this connection the first time) with the
 * parameters v[0 .. my_stmts[id].n_params); the unit's transaction starts first when it
 * has not. Returns 0 with *out (the caller frees it with my_rows_free), or the failure
 * translated into err and recorded in t, *out NULL. */
int my_run(my_txn *t, int id, const my_value *v, my_rows **out, const char *what,
           const char *job_id, zbso_err *err);

/* my_run for SQL that is not in my_stmts (a statement whose number of placeholders
 * varies, such as a multi-row INSERT): prepared, run and closed at once. */
int my_run_sql(my_txn *t, const char *sql, const my_value *v, int n_params, my_rows **out,
               const char *what, const char *job_id, zbso_err *err);

void my_rows_free(my_rows *r);

#endif
