/* mysql_engine.c: the MySQL/MariaDB driver of netdb.c (docs/internals/STORE.md), as
 * pg_engine.c is PostgreSQL's: libmariadb connections, prepared statements on the binary
 * protocol, and error numbers translated into store codes. The pool, units of work and
 * reruns are netdb.c's; the SQL and the domain operations are mysql_ops.c's. Together the
 * two are the only files that talk to libmariadb; its results and error numbers never
 * leave them untranslated. Never writes a password into a message or a log line.
 *
 * Design notes.
 * - Isolation: write units run in READ COMMITTED (the session's level), as on
 *   PostgreSQL: each statement sees what committed before it, and InnoDB takes no gap
 *   locks, so units on different jobs do not block each other through index gaps. Read
 *   units run in REPEATABLE READ with a consistent snapshot, READ ONLY: one snapshot
 *   for the whole unit.
 * - Round trips: autocommit is off, so a write unit's first statement starts its
 *   transaction (no BEGIN of its own); statements are prepared once per connection.
 * - Reruns (netdb.c) follow a deadlock (1213) or a lock wait timeout (1205).
 * - Durability: the server decides it (innodb_flush_log_at_trx_commit, sync_binlog);
 *   check_durability reads both and warns when a commit would not be durable. */
#include <errmsg.h>
#include <math.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/netdb/myInt.h"
#include "util/log.h"

#define MY_CONNECT_TIMEOUT_S 3u   /* unless the URL sets connect_timeout */
/* A reply slower than this means a lost server: above innodb_lock_wait_timeout's
 * default (50 s), so that a lock wait ends as a 1205 (a rerun), not as a lost
 * connection. */
#define MY_READ_TIMEOUT_S 90u
#define MY_WRITE_TIMEOUT_S 60u
#define MY_SQL_MODE "STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION"

/* ---- errors ---- */

/* True for errors after which the connection is gone. */
static bool errno_is_broken(unsigned e)
{
    switch (e) {
    case CR_CONNECTION_ERROR:      /* 2002 */
    case CR_CONN_HOST_ERROR:       /* 2003 */
    case CR_SERVER_GONE_ERROR:     /* 2006 */
    case CR_SERVER_LOST:           /* 2013 */
    case CR_SERVER_LOST_EXTENDED:  /* 2055 */
    case ER_SERVER_SHUTDOWN:       /* 1053 */
    case 1927:                     /* ER_CONNECTION_KILLED (MariaDB) */
    case 4031:                     /* ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8) */
        return true;
    default:
        return false;
    }
}

/* True for errors that a rerun of the unit may not meet. */
static bool errno_is_retryable(unsigned e)
{
    return e == ER_LOCK_DEADLOCK || e == ER_LOCK_WAIT_TIMEOUT;
}

int my_errno_code(unsigned e, const char **cause)
{
    const char *why = NULL;
    int code = ZBSO_ESTORE;
    if (e == 0) {
        /* no error number */
    } else if (errno_is_broken(e) || e == ER_CON_COUNT_ERROR) {
        code = ZBSO_EUNAVAIL;
        why = e == ER_CON_COUNT_ERROR ? "the database server has too many connections"
                                      : "the database server is unreachable or shutting down";
    } else if (e == ER_LOCK_DEADLOCK) {
        code = ZBSO_EUNAVAIL;
        why = "a deadlock with a concurrent transaction persisted";
    } else if (e == ER_LOCK_WAIT_TIMEOUT) {
        code = ZBSO_EUNAVAIL;
        why = "a lock wait timeout";
    } else if (e == ER_DUP_ENTRY) {
        code = ZBSO_ECONFLICT;
    } else if (e == ER_NO_REFERENCED_ROW_2 || e == ER_NO_REFERENCED_ROW) {
        code = ZBSO_ENOTFOUND;
    } else if (e == ER_WARN_DATA_OUT_OF_RANGE || e == ER_TRUNCATED_WRONG_VALUE_FOR_FIELD ||
               e == ER_DATA_TOO_LONG || e == ER_WARN_NULL_TO_NOTNULL) {
        code = ZBSO_EINVAL;
    } else if (e == ER_RECORD_FILE_FULL || e == ER_DISK_FULL || e == 3 /* EE_WRITE */ ||
               e == ER_OUT_OF_RESOURCES || e == ER_OUTOFMEMORY || e == ER_GET_ERRNO) {
        code = ZBSO_EUNAVAIL;
        why = "the database server is out of disk space or resources";
    } else if (e == ER_OPTION_PREVENTS_STATEMENT ||
               e == ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION || e == 1836 /* read-only mode */) {
        code = ZBSO_EUNAVAIL;
        why = "the database is read-only (read_only, or a replica)";
    }
    if (cause != NULL)
        *cause = why;
    return code;
}

int my_txn_fail(my_txn *t, unsigned errnum, const char *sqlstate, const char *msg,
                const char *what, const char *job_id, zbso_err *err)
{
    char detail[48];
    netdb_fault f = {0};
    f.code = my_errno_code(errnum, &f.cause);
    f.broken = errno_is_broken(errnum);
    f.retry = errno_is_retryable(errnum);
    f.statement_only = errnum == ER_DUP_ENTRY;
    snprintf(detail, sizeof detail, "error %u, SQLSTATE %s", errnum,
             sqlstate != NULL ? sqlstate : "none");
    return netdb_txn_fail(t, &f, msg, detail, what, job_id, err);
}

/* Records the connection's last error (or the statement's, when s is not NULL). */
static int fail_conn(my_txn *t, MYSQL_STMT *s, const char *what, const char *job_id,
                     zbso_err *err)
{
    if (s != NULL)
        return my_txn_fail(t, mysql_stmt_errno(s), mysql_stmt_sqlstate(s), mysql_stmt_error(s),
                           what, job_id, err);
    return my_txn_fail(t, mysql_errno(my_db(t)), mysql_sqlstate(my_db(t)), mysql_error(my_db(t)),
                       what, job_id, err);
}

/* ---- rows ---- */

void my_rows_free(my_rows *r)
{
    if (r != NULL) {
        free(r->cells);
        free(r->data);
        free(r);
    }
}

static bool type_is_int(enum enum_field_types ty)
{
    return ty == MYSQL_TYPE_TINY || ty == MYSQL_TYPE_SHORT || ty == MYSQL_TYPE_LONG ||
           ty == MYSQL_TYPE_INT24 || ty == MYSQL_TYPE_LONGLONG || ty == MYSQL_TYPE_YEAR;
}

static bool type_is_real(enum enum_field_types ty)
{
    return ty == MYSQL_TYPE_FLOAT || ty == MYSQL_TYPE_DOUBLE || ty == MYSQL_TYPE_DECIMAL ||
           ty == MYSQL_TYPE_NEWDECIMAL;
}

/* A growing arena of cell bytes: cells hold offsets into it until rows_fix_bytes. */
typedef struct arena {
    char *data;
    size_t len, cap;
} arena;

/* Appends n bytes and a NUL; returns the offset, or SIZE_MAX when out of memory. */
static size_t arena_put(arena *a, const char *s, size_t n)
{
    if (n + 1 > a->cap - a->len) {
        size_t cap = a->cap ? a->cap : 256;
        while (n + 1 > cap - a->len)
            cap *= 2;
        char *d = realloc(a->data, cap);
        if (d == NULL)
            return SIZE_MAX;
        a->data = d;
        a->cap = cap;
    }
    size_t off = a->len;
    if (n > 0)
        memcpy(a->data + off, s, n);
    a->data[off + n] = '\0';
    a->len += n + 1;
    return off;
}

/* Turns the offsets of MV_BYTES cells (kept in .i) into pointers into r->data. */
static void rows_fix_bytes(my_rows *r)
{
    for (size_t k = 0; k < r->n_rows * r->n_cols; k++)
        if (r->cells[k].type == MV_BYTES)
            r->cells[k].s = r->data + r->cells[k].i;
}

/* Reads a text-protocol result (may be NULL: a statement without rows) into rows. */
static int rows_from_res(MYSQL_RES *res, my_rows *out)
{
    if (res == NULL)
        return 0;
    arena a = {0};
    size_t n_cols = mysql_num_fields(res), n_rows = (size_t)mysql_num_rows(res);
    MYSQL_FIELD *f = mysql_fetch_fields(res);
    out->n_cols = n_cols;
    out->cells = calloc(n_rows * n_cols + 1, sizeof *out->cells);
    if (out->cells == NULL)
        return -1;
    MYSQL_ROW row;
    size_t i = 0;
    while ((row = mysql_fetch_row(res)) != NULL && i < n_rows) {
        unsigned long *len = mysql_fetch_lengths(res);
        for (size_t c = 0; c < n_cols; c++) {
            my_value *v = &out->cells[i * n_cols + c];
            if (row[c] == NULL) {
                *v = my_null();
            } else if (type_is_int(f[c].type)) {
                *v = my_i64(strtoll(row[c], NULL, 10));
            } else if (type_is_real(f[c].type)) {
                *v = my_f64(strtod(row[c], NULL));
            } else {
                size_t off = arena_put(&a, row[c], len[c]);
                if (off == SIZE_MAX) {
                    free(a.data);
                    return -1;
                }
                *v = (my_value){.type = MV_BYTES, .i = (int64_t)off, .len = len[c]};
            }
        }
        i++;
    }
    out->n_rows = i;
    out->data = a.data;
    rows_fix_bytes(out);
    return 0;
}

/* ---- statements ---- */

/* Logs a statement and its parameters at INFO (ZEUS_BSO_ECHO_SQL). */
static void echo(const char *sql, int n, const my_value *v)
{
    char line[2048];
    size_t len = (size_t)snprintf(line, sizeof line, "sql: %s", sql);
    for (int i = 0; i < n && len < sizeof line; i++) {
        const char *sep = i == 0 ? " -- " : ", ";
        switch (v[i].type) {
        case MV_NULL:
            len += (size_t)snprintf(line + len, sizeof line - len, "%s?%d=NULL", sep, i + 1);
            break;
        case MV_I64:
            len += (size_t)snprintf(line + len, sizeof line - len, "%s?%d=%lld", sep, i + 1,
                                    (long long)v[i].i);
            break;
        case MV_F64:
            len += (size_t)snprintf(line + len, sizeof line - len, "%s?%d=%.17g", sep, i + 1,
                                    v[i].f);
            break;
        case MV_BYTES:
            len += (size_t)snprintf(line + len, sizeof line - len, "%s?%d='%.*s'", sep, i + 1,
                                    (int)(v[i].len > 200 ? 200 : v[i].len), v[i].s);
            break;
        }
    }
    log_info("%s", line);
}

/* Runs a text statement on c; result rows into *out when out is not NULL. Returns 0, or
 * -1 with the error on the connection (mysql_errno). */
static int conn_query(MYSQL *db, const char *sql, my_rows **out)
{
    if (out != NULL)
        *out = NULL;
    if (mysql_real_query(db, sql, (unsigned long)strlen(sql)) != 0)
        return -1;
    MYSQL_RES *res = mysql_store_result(db);
    if (res == NULL && mysql_field_count(db) != 0)
        return -1;
    my_rows *r = NULL;
    int rc = 0;
    if (out != NULL) {
        r = calloc(1, sizeof *r);
        if (r == NULL || rows_from_res(res, r) < 0) {
            my_rows_free(r);
            r = NULL;
            rc = -2;
        } else {
            r->affected = res == NULL ? (int64_t)mysql_affected_rows(db) : 0;
        }
    }
    mysql_free_result(res);
    if (out != NULL)
        *out = r;
    return rc;
}

/* Starts t's transaction on the server when it has not started: a read unit sends its
 * isolation level and START TRANSACTION; a write unit's first statement starts it
 * (autocommit off). A connection found lost here marks the unit stale. */
static int txn_begin(my_txn *t, zbso_err *err)
{
    if (t->begun)
        return 0;
    t->begun = true;
    if (!t->base.read_only)
        return 0;
    static const char *const begin[] = {
        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
        "START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT",
    };
    for (size_t i = 0; i < 2; i++) {
        if (t->st->echo_sql)
            log_info("sql: %s", begin[i]);
        if (conn_query(my_db(t), begin[i], NULL) < 0) {
            int rc = fail_conn(t, NULL, "START TRANSACTION", NULL, err);
            t->stale = t->broken && i == 0;
            return rc;
        }
    }
    return 0;
}

/* What every statement does first: a unit that failed gets its first failure again;
 * otherwise its transaction starts when it has not (*first: this is its first
 * statement). Returns 0 or the failure. */
static int statement_start(my_txn *t, bool *first, zbso_err *err)
{
    if (t->aborted)
        return netdb_failed_before(t, err);
    *first = !t->begun;
    return txn_begin(t, err);
}

int my_run_simple(my_txn *t, const char *sql, my_rows **out, const char *what,
                  zbso_err *err)
{
    bool first;
    if (out != NULL)
        *out = NULL;
    int rc = statement_start(t, &first, err);
    if (rc < 0)
        return rc;
    if (t->st->echo_sql)
        log_info("sql: %s", sql);
    rc = conn_query(my_db(t), sql, out);
    if (rc == -2)
        return err_set(err, ZBSO_ENOMEM, "out of memory reading the answer of %s", what);
    if (rc < 0) {
        rc = fail_conn(t, NULL, what, NULL, err);
        if (first && !t->base.read_only)
            t->stale = t->broken;
    }
    return rc;
}

/* Binds v[0..n) as the parameters of s. Returns 0, or ZBSO_EINVAL for an infinity
 * (MySQL's DOUBLE holds none). binds, lens and nulls have room for n. */
static int bind_params(my_txn *t, MYSQL_STMT *s, const my_value *v, int n, MYSQL_BIND *b,
                       unsigned long *lens, const char *what, const char *job_id,
                       zbso_err *err)
{
    memset(b, 0, (size_t)n * sizeof *b);
    for (int i = 0; i < n; i++) {
        switch (v[i].type) {
        case MV_NULL:
            b[i].buffer_type = MYSQL_TYPE_NULL;
            break;
        case MV_I64:
            b[i].buffer_type = MYSQL_TYPE_LONGLONG;
            b[i].buffer = (void *)&v[i].i;
            break;
        case MV_F64:
            if (isinf(v[i].f))
                return err_set(err, ZBSO_EINVAL, "mysql: %s for job \"%.300s\": MySQL cannot"
                               " store the infinite value of parameter %d", what,
                               job_id != NULL ? job_id : "", i + 1);
            b[i].buffer_type = MYSQL_TYPE_DOUBLE;
            b[i].buffer = (void *)&v[i].f;
            break;
        case MV_BYTES:
            /* Sent as binary: a VARBINARY column takes the bytes as they are, a utf8mb4
             * one checks them (STRICT_ALL_TABLES refuses what is not UTF-8). */
            b[i].buffer_type = MYSQL_TYPE_BLOB;
            b[i].buffer = (void *)v[i].s;
            lens[i] = (unsigned long)v[i].len;
            b[i].buffer_length = lens[i];
            b[i].length = &lens[i];
            break;
        }
    }
    if (mysql_stmt_bind_param(s, b) != 0)
        return fail_conn(t, s, what, job_id, err);
    return 0;
}

/* Fetches every row of an executed statement into *out, with the rows it matched. */
static int fetch_rows(my_txn *t, MYSQL_STMT *s, my_rows **out, const char *what,
                      const char *job_id, zbso_err *err)
{
    my_rows *r = calloc(1, sizeof *r);
    MYSQL_RES *meta = NULL;
    MYSQL_BIND *b = NULL;
    struct col {
        int64_t i;
        double f;
        my_bool null, error;
        unsigned long len;
        char *buf;
    } *cols = NULL;
    arena a = {0};
    size_t n_cols = 0;
    int rc = 0;
    if (r == NULL)
        goto oom;
    meta = mysql_stmt_result_metadata(s);
    if (meta == NULL) {
        if (mysql_stmt_errno(s) != 0) {
            rc = fail_conn(t, s, what, job_id, err);
            goto out;
        }
        r->affected = (int64_t)mysql_stmt_affected_rows(s);
        goto done;
    }
    if (mysql_stmt_store_result(s) != 0) {
        rc = fail_conn(t, s, what, job_id, err);
        goto out;
    }
    n_cols = mysql_num_fields(meta);
    size_t n_rows = (size_t)mysql_stmt_num_rows(s);
    MYSQL_FIELD *f = mysql_fetch_fields(meta);
    r->n_cols = n_cols;
    b = calloc(n_cols + 1, sizeof *b);
    cols = calloc(n_cols + 1, sizeof *cols);
    r->cells = calloc(n_rows * n_cols + 1, sizeof *r->cells);
    if (b == NULL || cols == NULL || r->cells == NULL)
        goto oom;
    for (size_t c = 0; c < n_cols; c++) {
        b[c].is_null = &cols[c].null;
        b[c].error = &cols[c].error;
        b[c].length = &cols[c].len;
        if (type_is_int(f[c].type)) {
            b[c].buffer_type = MYSQL_TYPE_LONGLONG;
            b[c].buffer = &cols[c].i;
        } else if (type_is_real(f[c].type)) {
            b[c].buffer_type = MYSQL_TYPE_DOUBLE;
            b[c].buffer = &cols[c].f;
        } else {
            /* max_length: the longest value of the column in this result
             * (STMT_ATTR_UPDATE_MAX_LENGTH). */
            size_t cap = (size_t)f[c].max_length + 1;
            if ((cols[c].buf = malloc(cap)) == NULL)
                goto oom;
            b[c].buffer_type = MYSQL_TYPE_BLOB;
            b[c].buffer = cols[c].buf;
            b[c].buffer_length = (unsigned long)cap;
        }
    }
    if (mysql_stmt_bind_result(s, b) != 0) {
        rc = fail_conn(t, s, what, job_id, err);
        goto out;
    }
    size_t i = 0;
    for (int st; i < n_rows && (st = mysql_stmt_fetch(s)) != MYSQL_NO_DATA; i++) {
        if (st == 1) {
            rc = fail_conn(t, s, what, job_id, err);
            goto out;
        }
        for (size_t c = 0; c < n_cols; c++) {
            my_value *v = &r->cells[i * n_cols + c];
            if (cols[c].null) {
                *v = my_null();
            } else if (b[c].buffer_type == MYSQL_TYPE_LONGLONG) {
                *v = my_i64(cols[c].i);
            } else if (b[c].buffer_type == MYSQL_TYPE_DOUBLE) {
                *v = my_f64(cols[c].f);
            } else {
                size_t len = cols[c].len < b[c].buffer_length ? cols[c].len
                                                              : b[c].buffer_length - 1;
                size_t off = arena_put(&a, cols[c].buf, len);
                if (off == SIZE_MAX)
                    goto oom;
                *v = (my_value){.type = MV_BYTES, .i = (int64_t)off, .len = len};
            }
        }
    }
    r->n_rows = i;
    r->data = a.data;
    a.data = NULL;
    rows_fix_bytes(r);
    goto done;
oom:
    rc = err_set(err, ZBSO_ENOMEM, "out of memory reading the answer of %s", what);
    goto out;
done:
    *out = r;
    r = NULL;
out:
    mysql_stmt_free_result(s);
    if (meta != NULL)
        mysql_free_result(meta);
    for (size_t c = 0; cols != NULL && c < n_cols; c++)
        free(cols[c].buf);
    free(cols);
    free(b);
    free(a.data);
    my_rows_free(r);
    return rc;
}

/* Executes prepared statement s with v and fetches its answer. The statement that finds
 * the connection lost as the unit's first one marks the unit stale. */
static int exec_stmt(my_txn *t, MYSQL_STMT *s, const char *sql, const my_value *v, int n,
                     bool first, my_rows **out, const char *what, const char *job_id,
                     zbso_err *err)
{
    MYSQL_BIND *b = NULL;
    unsigned long *lens = NULL;
    int rc = 0;
    if (n > 0) {
        b = calloc((size_t)n, sizeof *b);
        lens = calloc((size_t)n, sizeof *lens);
        if (b == NULL || lens == NULL) {
            rc = err_set(err, ZBSO_ENOMEM, "out of memory running %s", what);
            goto out;
        }
        if ((rc = bind_params(t, s, v, n, b, lens, what, job_id, err)) < 0)
            goto out;
    }
    if (t->st->echo_sql)
        echo(sql, n, v);
    if (mysql_stmt_execute(s) != 0) {
        rc = fail_conn(t, s, what, job_id, err);
        if (first && !t->base.read_only)
            t->stale = t->broken;
        goto out;
    }
    rc = fetch_rows(t, s, out, what, job_id, err);
out:
    free(b);
    free(lens);
    return rc;
}

/* A new statement handle of c with sql prepared on it, or NULL with the failure
 * recorded in t. */
static MYSQL_STMT *prepare(my_txn *t, const char *sql, bool first, const char *what,
                           const char *job_id, zbso_err *err)
{
    MYSQL_STMT *s = mysql_stmt_init(my_db(t));
    my_bool update_max = 1;
    if (s == NULL) {
        err_set(err, ZBSO_ENOMEM, "out of memory preparing %s", what);
        return NULL;
    }
    if (mysql_stmt_prepare(s, sql, (unsigned long)strlen(sql)) != 0) {
        fail_conn(t, s, what, job_id, err);
        if (first && !t->base.read_only)
            t->stale = t->broken;
        mysql_stmt_close(s);
        return NULL;
    }
    mysql_stmt_attr_set(s, STMT_ATTR_UPDATE_MAX_LENGTH, &update_max);
    return s;
}

int my_run(my_txn *t, int id, const my_value *v, my_rows **out, const char *what,
           const char *job_id, zbso_err *err)
{
    bool first;
    *out = NULL;
    int rc = statement_start(t, &first, err);
    if (rc < 0)
        return rc;
    MYSQL_STMT **slot = &((my_conn *)t->c)->stmts[id];
    MYSQL_STMT *s = *slot;
    if (s == NULL) {
        if ((s = prepare(t, my_stmts[id].sql, first, what, job_id, err)) == NULL)
            return t->aborted ? t->first.code : ZBSO_ENOMEM;
        *slot = s;
    }
    return exec_stmt(t, s, my_stmts[id].sql, v, my_stmts[id].n_params, first, out, what,
                     job_id, err);
}

int my_run_sql(my_txn *t, const char *sql, const my_value *v, int n_params, my_rows **out,
               const char *what, const char *job_id, zbso_err *err)
{
    bool first;
    *out = NULL;
    int rc = statement_start(t, &first, err);
    if (rc < 0)
        return rc;
    MYSQL_STMT *s = prepare(t, sql, first, what, job_id, err);
    if (s == NULL)
        return t->aborted ? t->first.code : ZBSO_ENOMEM;
    rc = exec_stmt(t, s, sql, v, n_params, first, out, what, job_id, err);
    mysql_stmt_close(s);
    return rc;
}

/* ---- connections ---- */

static void conn_close(netdb_conn *nc)
{
    my_conn *c = (my_conn *)nc;
    if (c == NULL)
        return;
    if (nc->end_pending)
        mysql_read_query_result(c->db);
    for (int i = 0; i < MS_COUNT; i++)
        if (c->stmts[i] != NULL)
            mysql_stmt_close(c->stmts[i]);
    mysql_close(c->db);
    free(c);
}

/* Sets the connection options of st's URL on db. */
static void conn_options(my_store *st, MYSQL *db)
{
    const myurl *u = &st->url;
    unsigned connect_timeout = u->connect_timeout ? u->connect_timeout : MY_CONNECT_TIMEOUT_S;
    unsigned read_timeout = MY_READ_TIMEOUT_S, write_timeout = MY_WRITE_TIMEOUT_S;
    my_bool off = 0, on = 1;
    mysql_options(db, MYSQL_SET_CHARSET_NAME, u->charset);
    mysql_options(db, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
    mysql_options(db, MYSQL_OPT_READ_TIMEOUT, &read_timeout);
    mysql_options(db, MYSQL_OPT_WRITE_TIMEOUT, &write_timeout);
    mysql_options(db, MYSQL_OPT_RECONNECT, &off);
    /* Without a unix_socket, always TCP: libmariadb takes "localhost" for its default
     * socket, where Zeus's drivers (asyncmy, pymysql) connect to localhost:port. */
    if (u->unix_socket == NULL) {
        unsigned proto = MYSQL_PROTOCOL_TCP;
        mysql_options(db, MYSQL_OPT_PROTOCOL, &proto);
    }
    if (u->ssl_ca != NULL)
        mysql_options(db, MYSQL_OPT_SSL_CA, u->ssl_ca);
    if (u->ssl_cert != NULL)
        mysql_options(db, MYSQL_OPT_SSL_CERT, u->ssl_cert);
    if (u->ssl_key != NULL)
        mysql_options(db, MYSQL_OPT_SSL_KEY, u->ssl_key);
    switch (u->ssl_mode) {
    case MYURL_SSL_DEFAULT:
    case MYURL_SSL_DISABLED:
        break;
    case MYURL_SSL_PREFERRED:
        mysql_ssl_set(db, u->ssl_key, u->ssl_cert, u->ssl_ca, NULL, NULL);
        break;
    case MYURL_SSL_REQUIRED:
        mysql_options(db, MYSQL_OPT_SSL_ENFORCE, &on);
        break;
    case MYURL_SSL_VERIFY_CA:
    case MYURL_SSL_VERIFY_IDENTITY:
        mysql_options(db, MYSQL_OPT_SSL_ENFORCE, &on);
        mysql_options(db, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &on);
        break;
    }
}

/* Opens a connection: autocommit off, READ COMMITTED, strict SQL mode. Returns 0 with
 * *out (freed by conn_close), or ZBSO_EUNAVAIL with err naming the masked URL and
 * libmariadb's reason (which never holds the password). */
static int conn_open(netdb *nst, netdb_conn **out, zbso_err *err)
{
    my_store *st = (my_store *)nst;
    char msg[384];
    static const char *const setup[] = {
        "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
        "SET SESSION sql_mode = '" MY_SQL_MODE "'",
    };
    my_conn *c = calloc(1, sizeof *c);
    if (c == NULL || (c->db = mysql_init(NULL)) == NULL) {
        free(c);
        return err_set(err, ZBSO_ENOMEM, "out of memory connecting to %s", nst->shown);
    }
    conn_options(st, c->db);
    const myurl *u = &st->url;
    if (mysql_real_connect(c->db, u->host != NULL ? u->host : "localhost", u->user, u->password,
                           u->database, u->port, u->unix_socket, CLIENT_FOUND_ROWS) == NULL)
        goto fail;
    /* ssl-mode=REQUIRED and above: libmariadb 3.3 connects in plain text to a server
     * without TLS despite MYSQL_OPT_SSL_ENFORCE, so the cipher in use is checked here. */
    if (u->ssl_mode >= MYURL_SSL_REQUIRED && mysql_get_ssl_cipher(c->db) == NULL) {
        conn_close(&c->base);
        return err_set(err, ZBSO_EUNAVAIL, "cannot connect to MySQL at %s: ssl-mode=%s, but"
                       " the connection is not encrypted (the server offers no TLS)",
                       nst->shown, myurl_ssl_name(u->ssl_mode));
    }
    if (mysql_autocommit(c->db, 0) != 0)
        goto fail;
    for (size_t i = 0; i < sizeof setup / sizeof setup[0]; i++)
        if (conn_query(c->db, setup[i], NULL) != 0)
            goto fail;
    *out = &c->base;
    return 0;
fail:
    netdb_one_line(mysql_error(c->db), msg, sizeof msg);
    unsigned e = mysql_errno(c->db);
    conn_close(&c->base);
    /* ZBSO_EUNAVAIL whatever the cause (wrong credentials too), as on PostgreSQL. */
    return err_set(err, ZBSO_EUNAVAIL, "cannot connect to MySQL at %s: %s (error %u)", nst->shown,
                   msg, e);
}

/* Reads the server's durability settings on a new store's first connection and warns
 * when a commit would not be durable: innodb_flush_log_at_trx_commit other than 1, or a
 * binary log (log_bin on) with sync_binlog other than 1. Only the server's owner can
 * change them. Returns 0 or ZBSO_EUNAVAIL. */
static int check_durability(netdb *st, netdb_conn *nc, zbso_err *err)
{
    my_conn *c = (my_conn *)nc;
    char msg[384];
    my_rows *r = NULL;
    int rc = 0;
    if (conn_query(c->db, "SELECT @@innodb_flush_log_at_trx_commit, @@sync_binlog,"
                          " @@log_bin, VERSION()", &r) != 0 || r == NULL || r->n_rows != 1) {
        netdb_one_line(mysql_error(c->db), msg, sizeof msg);
        rc = err_set(err, ZBSO_EUNAVAIL, "cannot read the settings of %s: %s", st->shown, msg);
        goto out;
    }
    int64_t flush = my_cell(r, 0, 0)->i, sync_binlog = my_cell(r, 0, 1)->i;
    bool log_bin = my_cell(r, 0, 2)->i != 0;
    const my_value *version = my_cell(r, 0, 3);
    log_debug("database %s: MySQL %.*s", st->shown, (int)version->len,
              version->type == MV_BYTES ? version->s : "");
    if (flush != 1)
        log_warn("database %s runs with innodb_flush_log_at_trx_commit = %lld: a commit is"
                 " not durable until InnoDB flushes its log, whatever zbso does", st->shown,
                 (long long)flush);
    if (log_bin && sync_binlog != 1)
        log_warn("database %s writes a binary log with sync_binlog = %lld: a commit's binary"
                 " log entry may be lost in a crash", st->shown, (long long)sync_binlog);
    /* The write unit just run (this SELECT, autocommit off) ends here. */
    if (mysql_commit(c->db) != 0) {
        netdb_one_line(mysql_error(c->db), msg, sizeof msg);
        rc = err_set(err, ZBSO_EUNAVAIL, "cannot read the settings of %s: %s", st->shown, msg);
    }
out:
    my_rows_free(r);
    return rc;
}

/* Whether c's session is inside a transaction. */
static bool conn_in_trans(my_conn *c)
{
    unsigned status = 0;
    if (mariadb_get_infov(c->db, MARIADB_CONNECTION_SERVER_STATUS, &status) != 0)
        return true;
    return (status & SERVER_STATUS_IN_TRANS) != 0;
}

/* Reads the result of the COMMIT or ROLLBACK that end sent without waiting. Returns
 * false when the connection turned out lost or out of step. */
static bool conn_settle(netdb_conn *nc)
{
    my_conn *c = (my_conn *)nc;
    bool ok = mysql_read_query_result(c->db) == 0;
    return ok && !conn_in_trans(c);
}

static bool conn_reusable(netdb_conn *nc)
{
    return nc->end_pending || !conn_in_trans((my_conn *)nc);
}

/* ---- ends of units ---- */

/* Releases the schema lock of t's session, after its transaction ended. A lost
 * connection released it with the session. */
static void release_schema_lock(my_txn *t)
{
    if (t->st->echo_sql)
        log_info("sql: %s", MY_SCHEMA_UNLOCK_SQL);
    if (conn_query(my_db(t), MY_SCHEMA_UNLOCK_SQL, NULL) != 0 || mysql_commit(my_db(t)) != 0)
        t->broken = true;
}

/* COMMIT, waited for; then the schema lock goes, when the unit took it. */
static int txn_commit(my_txn *t, zbso_err *err)
{
    int rc = 0;
    if (mysql_commit(my_db(t)) != 0)
        rc = fail_conn(t, NULL, "COMMIT", NULL, err);
    if (t->schema_locked && !t->broken)
        release_schema_lock(t);
    return rc;
}

/* COMMIT or ROLLBACK sent without waiting for its result, which settle reads; a unit
 * holding the schema lock waits, since the lock is released right after on this
 * connection. */
static void txn_end(my_txn *t, bool commit)
{
    const char *sql = commit ? "COMMIT" : "ROLLBACK";
    if (t->schema_locked) {
        if (mysql_rollback(my_db(t)) != 0)
            t->broken = true;
        else
            release_schema_lock(t);
    } else if (mysql_send_query(my_db(t), sql, (unsigned long)strlen(sql)) == 0) {
        t->c->end_pending = true;
    } else {
        t->broken = true;
    }
}

/* ---- open ---- */

/* libmariadb's process-wide set-up, once, before any thread connects. */
static pthread_once_t library_once = PTHREAD_ONCE_INIT;
static void library_init(void)
{
    mysql_library_init(0, NULL, NULL);
}

/* Parses mysql://... (and the other spellings myurl.h lists; opt->db_user and
 * db_password fill what it lacks). Returns 0, or ZBSO_EINVAL naming the URL with its
 * password masked. */
static int my_init(netdb *nst, const char *url, const store_options *opt, zbso_err *err)
{
    my_store *st = (my_store *)nst;
    pthread_once(&library_once, library_init);
    int rc = myurl_parse(url, opt->db_user, opt->db_password, &st->url, err);
    if (rc == 0)
        snprintf(nst->shown, sizeof nst->shown, "%.*s", NETDB_SHOWN_MAX - 1, st->url.masked);
    return rc;
}

static const netdb_driver my_driver;

/* Opens mysql://...: netdb_open with this driver; store.c then checks the schema. */
static int my_open(const char *url, const store_options *opt, store **out, zbso_err *err)
{
    return netdb_open(&my_driver, url, opt, out, err);
}

const store_backend store_mysql_backend =
    NETDB_BACKEND("mysql", my_open, MY_LATEST, my_schema_steps, MY_SCHEMA_LOCK_SQL);

static const netdb_driver my_driver = {
    .version = NETDB_DRIVER_VERSION,
    .name = "mysql",
    .backend = &store_mysql_backend,
    .store_size = sizeof(my_store),
    .ops = &my_ops,
    .init = my_init,
    .connect = conn_open,
    .disconnect = conn_close,
    .check = check_durability,
    .settle = conn_settle,
    .reusable = conn_reusable,
    .commit = txn_commit,
    .end = txn_end,
    .schema_unit = my_schema_unit,
    .write_probe_unit = my_write_probe_unit,
};
