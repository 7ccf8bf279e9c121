/* zeusdb.c: reads a Zeus BSO server's database (Zeus's SQLAlchemy tables Job, BatchSize,
 * Trial, GaussianTsArmState) on SQLite, PostgreSQL or MySQL/MariaDB, read-only and in one
 * snapshot. Hands rows out as cells; it judges no value (zeus_import.c does). */
#include <mysql.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/netdb/myurl.h"
#include "store/netdb/pgurl.h"
#include "xfer/xfer.h"

typedef enum zdb_dialect { ZD_SQLITE, ZD_PG, ZD_MYSQL } zdb_dialect;

struct zdb {
    zdb_dialect dialect;
    sqlite3 *sq;
    sqlite3_stmt *stmts[ZQ_COUNT];
    PGconn *pg;
    MYSQL *my;
    char shown[PGURL_URL_MAX + 1];
};

static const char *const job_cols[] = {
    "job_id", "job_id_prefix", "default_batch_size", "higher_is_better_metric", "eta_knob",
    "beta_knob", "target_metric", "max_epochs", "num_pruning_rounds", "window_size",
    "max_power", "number_of_gpus", "gpu_model", "mab_prior_mean", "mab_prior_precision",
    "mab_num_explorations", "mab_seed", "mab_random_generator_state",
    "exp_default_batch_size", "stage", "min_cost", "min_cost_batch_size", NULL};
static const char *const bs_cols[] = {"job_id", "batch_size", NULL};
static const char *const trial_cols[] = {
    "job_id", "batch_size", "trial_number", "start_timestamp", "type", "status",
    "end_timestamp", "time", "energy", "converged", NULL};
static const char *const arm_cols[] = {"job_id", "batch_size", "param_mean",
                                       "param_precision", "reward_precision",
                                       "num_observations", NULL};

const char *const zdb_tables[4] = {"Job", "BatchSize", "Trial", "GaussianTsArmState"};
const char *const *const zdb_table_cols[4] = {job_cols, bs_cols, trial_cols, arm_cols};

/* The queries, with Q as the identifier quote and ? where the job id goes (SQLite binds
 * ?1, PostgreSQL $1, MySQL an escaped literal). Written once, quoted per dialect. */
#define Q "\x01"
static const char *const queries[ZQ_COUNT] = {
    [ZQ_JOB_IDS] = "SELECT job_id, job_id_prefix FROM " Q "Job" Q,
    [ZQ_JOB] = "SELECT job_id, job_id_prefix, default_batch_size, higher_is_better_metric,"
               " eta_knob, beta_knob, target_metric, max_epochs, num_pruning_rounds,"
               " window_size, max_power, number_of_gpus, gpu_model, mab_prior_mean,"
               " mab_prior_precision, mab_num_explorations, mab_seed,"
               " mab_random_generator_state, exp_default_batch_size, stage, min_cost,"
               " min_cost_batch_size FROM " Q "Job" Q " WHERE job_id = ?",
    [ZQ_BATCH_SIZES] = "SELECT job_id, batch_size FROM " Q "BatchSize" Q
                       " WHERE job_id = ? ORDER BY batch_size",
    [ZQ_TRIALS] = "SELECT job_id, batch_size, trial_number, start_timestamp, type, status,"
                  " end_timestamp, " Q "time" Q ", energy, converged FROM " Q "Trial" Q
                  " WHERE job_id = ? ORDER BY trial_number",
    [ZQ_ARMS] = "SELECT job_id, batch_size, param_mean, param_precision, reward_precision,"
                " num_observations FROM " Q "GaussianTsArmState" Q
                " WHERE job_id = ? ORDER BY batch_size",
};

/* Writes query q in db's dialect into out (cap bytes): quotes, and the placeholder as
 * ph (NULL: leave '?'). Returns 0, or -1 when it does not fit. */
static int render(const zdb *db, const char *sql, const char *ph, char *out, size_t cap)
{
    size_t n = 0;
    /* Backquotes on SQLite too: a double-quoted name that names no column would be read
     * as a string there, and a probe for a missing column would pass. */
    char quote = db->dialect == ZD_PG ? '"' : '`';
    for (const char *p = sql; *p != '\0'; p++) {
        const char *piece = NULL;
        char one[2] = {*p, '\0'};
        if (*p == '\x01')
            one[0] = quote;
        else if (*p == '?' && ph != NULL)
            piece = ph;
        piece = piece != NULL ? piece : one;
        size_t len = strlen(piece);
        if (n + len + 1 > cap)
            return -1;
        memcpy(out + n, piece, len);
        n += len;
    }
    out[n] = '\0';
    return 0;
}

const char *zdb_shown(const zdb *db)
{
    return db->shown;
}

/* ---- SQLite ---- */

static int sq_open_db(zdb *db, const char *url, zbso_err *err)
{
    const char *sep = strstr(url, ":///");
    const char *path = sep != NULL ? sep + 4 : "";
    snprintf(db->shown, sizeof db->shown, "%s", path);
    if (path[0] == '\0')
        return err_set(err, ZBSO_EINVAL, "Zeus database URL \"%.200s\" has no file path"
                       " (write sqlite:///relative/path or sqlite:////absolute/path)", url);
    /* Read-only and no creation: a missing file is an error, not a new empty database. */
    int rc = sqlite3_open_v2(path, &db->sq, SQLITE_OPEN_READONLY, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db->sq, "BEGIN; SELECT count(*) FROM sqlite_master;", NULL, NULL,
                          NULL);
    if (rc != SQLITE_OK)
        return err_set(err, ZBSO_EINVAL, "cannot read Zeus database %s: %s", path,
                       db->sq != NULL ? sqlite3_errmsg(db->sq) : "out of memory");
    sqlite3_busy_timeout(db->sq, 5000);
    return 0;
}

static int sq_query(zdb *db, zdb_query_id q, const char *sql, const char *arg, zdb_row_fn fn,
                    void *ctx, zbso_err *err)
{
    int rc = 0;
    sqlite3_stmt *once = NULL; /* a probe's statement, not kept */
    sqlite3_stmt **slot = q < ZQ_COUNT ? &db->stmts[q] : &once;
    if (*slot == NULL) {
        char text[1024];
        if (render(db, sql, "?1", text, sizeof text) < 0 ||
            sqlite3_prepare_v2(db->sq, text, -1, slot, NULL) != SQLITE_OK)
            return err_set(err, ZBSO_ESTORE, "Zeus database %s: cannot prepare a query: %s",
                           db->shown, sqlite3_errmsg(db->sq));
    }
    sqlite3_stmt *s = *slot;
    sqlite3_reset(s);
    if (sqlite3_bind_parameter_count(s) > 0)
        sqlite3_bind_text(s, 1, arg != NULL ? arg : "", -1, SQLITE_TRANSIENT);
    size_t n = (size_t)sqlite3_column_count(s);
    zcell cells[32];
    if (n > 32)
        n = 32;
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        for (size_t i = 0; i < n; i++) {
            zcell *c = &cells[i];
            memset(c, 0, sizeof *c);
            switch (sqlite3_column_type(s, (int)i)) {
            case SQLITE_NULL:
                c->kind = ZC_NULL;
                break;
            case SQLITE_INTEGER:
                c->kind = ZC_INT;
                c->i = sqlite3_column_int64(s, (int)i);
                break;
            case SQLITE_FLOAT:
                c->kind = ZC_REAL;
                c->d = sqlite3_column_double(s, (int)i);
                break;
            default: /* text, and a blob read as its bytes */
                c->kind = ZC_TEXT;
                c->text = (const char *)sqlite3_column_text(s, (int)i);
                c->len = (size_t)sqlite3_column_bytes(s, (int)i);
                if (c->text == NULL)
                    c->text = "";
                break;
            }
        }
        if ((rc = fn(ctx, cells, n)) != 0)
            goto out;
    }
    if (step != SQLITE_DONE)
        rc = err_set(err, ZBSO_ESTORE, "Zeus database %s: reading failed: %s", db->shown,
                     sqlite3_errmsg(db->sq));
out:
    sqlite3_reset(s);
    sqlite3_finalize(once);
    return rc;
}

/* ---- PostgreSQL ---- */

static int pg_open_db(zdb *db, const char *url, const char *user, const char *pw,
                      zbso_err *err)
{
    pgurl *u = calloc(1, sizeof *u);
    int rc = 0;
    if (u == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory");
    if ((rc = pgurl_parse(url, user, pw, u, err)) < 0)
        goto out;
    snprintf(db->shown, sizeof db->shown, "%s", u->masked);
    db->pg = PQconnectdbParams(u->keys, u->values, 0);
    if (db->pg == NULL || PQstatus(db->pg) != CONNECTION_OK) {
        rc = err_set(err, ZBSO_EUNAVAIL, "cannot connect to Zeus database %s: %s", db->shown,
                     db->pg != NULL ? PQerrorMessage(db->pg) : "out of memory");
        goto out;
    }
    PGresult *r = PQexec(db->pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;"
                                 " SET LOCAL extra_float_digits = 3");
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        rc = err_set(err, ZBSO_ESTORE, "Zeus database %s: cannot begin a snapshot: %s",
                     db->shown, PQerrorMessage(db->pg));
    PQclear(r);
out:
    free(u);
    return rc;
}

static int pg_query(zdb *db, const char *sql, const char *arg, zdb_row_fn fn, void *ctx,
                    zbso_err *err)
{
    char text[1024];
    int rc = 0;
    if (render(db, sql, "$1", text, sizeof text) < 0)
        return err_set(err, ZBSO_EINTERNAL, "query too long");
    const char *params[1] = {arg != NULL ? arg : ""};
    int nparams = strstr(text, "$1") != NULL ? 1 : 0;
    PGresult *r = PQexecParams(db->pg, text, nparams, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = err_set(err, ZBSO_ESTORE, "Zeus database %s: reading failed: %s", db->shown,
                     PQerrorMessage(db->pg));
        goto out;
    }
    size_t n = (size_t)PQnfields(r);
    zcell cells[32];
    if (n > 32)
        n = 32;
    for (int row = 0; row < PQntuples(r); row++) {
        for (size_t i = 0; i < n; i++) {
            zcell *c = &cells[i];
            memset(c, 0, sizeof *c);
            if (PQgetisnull(r, row, (int)i)) {
                c->kind = ZC_NULL;
            } else {
                c->kind = ZC_TEXT;
                c->text = PQgetvalue(r, row, (int)i);
                c->len = (size_t)PQgetlength(r, row, (int)i);
            }
        }
        if ((rc = fn(ctx, cells, n)) != 0)
            goto out;
    }
out:
    PQclear(r);
    return rc;
}

/* ---- MySQL / MariaDB ---- */

static int my_open_db(zdb *db, const char *url, const char *user, const char *pw,
                      zbso_err *err)
{
    myurl *u = calloc(1, sizeof *u);
    int rc = 0;
    if (u == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory");
    if ((rc = myurl_parse(url, user, pw, u, err)) < 0)
        goto out;
    snprintf(db->shown, sizeof db->shown, "%s", u->masked);
    if ((db->my = mysql_init(NULL)) == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory");
        goto out;
    }
    unsigned timeout = u->connect_timeout ? u->connect_timeout : 10;
    mysql_options(db->my, MYSQL_SET_CHARSET_NAME, u->charset);
    mysql_options(db->my, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    if (u->unix_socket == NULL) {
        unsigned proto = MYSQL_PROTOCOL_TCP;
        mysql_options(db->my, MYSQL_OPT_PROTOCOL, &proto);
    }
    if (u->ssl_ca != NULL)
        mysql_options(db->my, MYSQL_OPT_SSL_CA, u->ssl_ca);
    if (u->ssl_cert != NULL)
        mysql_options(db->my, MYSQL_OPT_SSL_CERT, u->ssl_cert);
    if (u->ssl_key != NULL)
        mysql_options(db->my, MYSQL_OPT_SSL_KEY, u->ssl_key);
    if (u->ssl_mode >= MYURL_SSL_REQUIRED) {
        my_bool on = 1;
        mysql_options(db->my, MYSQL_OPT_SSL_ENFORCE, &on);
        if (u->ssl_mode >= MYURL_SSL_VERIFY_CA)
            mysql_options(db->my, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &on);
    }
    if (mysql_real_connect(db->my, u->host != NULL ? u->host : "localhost", u->user,
                           u->password, u->database, u->port, u->unix_socket, 0) == NULL) {
        rc = err_set(err, ZBSO_EUNAVAIL, "cannot connect to Zeus database %s: %s", db->shown,
                     mysql_error(db->my));
        goto out;
    }
    if (mysql_query(db->my, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ") != 0 ||
        mysql_query(db->my, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY") != 0)
        rc = err_set(err, ZBSO_ESTORE, "Zeus database %s: cannot begin a snapshot: %s",
                     db->shown, mysql_error(db->my));
out:
    free(u);
    return rc;
}

static int my_query(zdb *db, const char *sql, const char *arg, zdb_row_fn fn, void *ctx,
                    zbso_err *err)
{
    int rc = 0;
    size_t alen = arg != NULL ? strlen(arg) : 0;
    /* The id as a literal: escaped for the connection's character set. */
    char *lit = malloc(2 * alen + 4);
    char *text = malloc(1024 + 2 * alen + 4);
    MYSQL_RES *res = NULL;
    if (lit == NULL || text == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory");
        goto out;
    }
    lit[0] = '\'';
    size_t el = mysql_real_escape_string(db->my, lit + 1, arg != NULL ? arg : "",
                                         (unsigned long)alen);
    lit[el + 1] = '\'';
    lit[el + 2] = '\0';
    if (render(db, sql, lit, text, 1024 + 2 * alen + 4) < 0) {
        rc = err_set(err, ZBSO_EINTERNAL, "query too long");
        goto out;
    }
    if (mysql_query(db->my, text) != 0 || (res = mysql_use_result(db->my)) == NULL) {
        rc = err_set(err, ZBSO_ESTORE, "Zeus database %s: reading failed: %s", db->shown,
                     mysql_error(db->my));
        goto out;
    }
    size_t n = mysql_num_fields(res);
    zcell cells[32];
    if (n > 32)
        n = 32;
    MYSQL_ROW row;
    while ((row = mysql_fetch_row(res)) != NULL) {
        unsigned long *lens = mysql_fetch_lengths(res);
        for (size_t i = 0; i < n; i++) {
            zcell *c = &cells[i];
            memset(c, 0, sizeof *c);
            if (row[i] == NULL) {
                c->kind = ZC_NULL;
            } else {
                c->kind = ZC_TEXT;
                c->text = row[i];
                c->len = lens[i];
            }
        }
        if ((rc = fn(ctx, cells, n)) != 0) {
            while (mysql_fetch_row(res) != NULL) {
            }
            goto out;
        }
    }
    if (mysql_errno(db->my) != 0)
        rc = err_set(err, ZBSO_ESTORE, "Zeus database %s: reading failed: %s", db->shown,
                     mysql_error(db->my));
out:
    if (res != NULL)
        mysql_free_result(res);
    free(lit);
    free(text);
    return rc;
}

/* ---- common ---- */

static int run_sql(zdb *db, zdb_query_id q, const char *sql, const char *arg, zdb_row_fn fn,
                   void *ctx, zbso_err *err)
{
    switch (db->dialect) {
    case ZD_SQLITE:
        return sq_query(db, q, sql, arg, fn, ctx, err);
    case ZD_PG:
        return pg_query(db, sql, arg, fn, ctx, err);
    default:
        return my_query(db, sql, arg, fn, ctx, err);
    }
}

int zdb_query(zdb *db, zdb_query_id q, const char *arg, zdb_row_fn fn, void *ctx,
              zbso_err *err)
{
    return run_sql(db, q, queries[q], arg, fn, ctx, err);
}

static int ignore_row(void *ctx, const zcell *cells, size_t n)
{
    (void)ctx, (void)cells, (void)n;
    return 0;
}

/* Probes table t's column c (c NULL: the table itself) with a query that returns no row.
 * Returns 0 when it exists. PostgreSQL ends the snapshot on an error: the probe runs in a
 * savepoint there. */
static int probe(zdb *db, const char *t, const char *c)
{
    char sql[256];
    zbso_err ignored;
    snprintf(sql, sizeof sql, "SELECT %s%s%s FROM \x01%s\x01 WHERE 1 = 0", c ? "\x01" : "",
             c ? c : "1", c ? "\x01" : "", t);
    if (db->dialect == ZD_PG)
        PQclear(PQexec(db->pg, "SAVEPOINT zbso_probe"));
    int rc = run_sql(db, ZQ_COUNT, sql, NULL, ignore_row, NULL, &ignored);
    if (db->dialect == ZD_PG)
        PQclear(PQexec(db->pg, rc == 0 ? "RELEASE SAVEPOINT zbso_probe"
                                       : "ROLLBACK TO SAVEPOINT zbso_probe"));
    return rc;
}

/* Checks every table and column zbso reads (zdb_open). */
static int check_layout(zdb *db, zbso_err *err)
{
    for (size_t t = 0; t < 4; t++) {
        if (probe(db, zdb_tables[t], NULL) != 0) {
            if (t == 0)
                return err_set(err, ZBSO_EINVAL, "%s is not a Zeus BSO database: it has no"
                               " table Job (Zeus's tables are Job, BatchSize, Trial and"
                               " GaussianTsArmState)", db->shown);
            return err_set(err, ZBSO_EINVAL, "Zeus database %s: table %s is missing",
                           db->shown, zdb_tables[t]);
        }
        for (const char *const *c = zdb_table_cols[t]; *c != NULL; c++)
            if (probe(db, zdb_tables[t], *c) != 0)
                return err_set(err, ZBSO_EINVAL, "Zeus database %s: table %s has no column"
                               " %s", db->shown, zdb_tables[t], *c);
    }
    return 0;
}

int zdb_open(const char *url, const char *user, const char *password, zdb **out,
             zbso_err *err)
{
    int rc = 0;
    zdb *db = calloc(1, sizeof *db);
    *out = NULL;
    if (db == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory");
    const store_backend *b = store_backend_for_url(url, err);
    if (b == NULL || strcmp(b->name, "memory") == 0) {
        rc = b == NULL ? ZBSO_EINVAL
                       : err_set(err, ZBSO_EINVAL, "memory:// holds no Zeus database");
        goto out;
    }
    if (strcmp(b->name, "sqlite") == 0) {
        db->dialect = ZD_SQLITE;
        rc = sq_open_db(db, url, err);
    } else if (strcmp(b->name, "postgresql") == 0) {
        db->dialect = ZD_PG;
        rc = pg_open_db(db, url, user, password, err);
    } else {
        db->dialect = ZD_MYSQL;
        rc = my_open_db(db, url, user, password, err);
    }
    if (rc == 0)
        rc = check_layout(db, err);
    if (rc == 0) {
        *out = db;
        db = NULL;
    }
out:
    zdb_close(db);
    return rc;
}

void zdb_close(zdb *db)
{
    if (db == NULL)
        return;
    for (int i = 0; i < ZQ_COUNT; i++)
        sqlite3_finalize(db->stmts[i]);
    if (db->sq != NULL) {
        sqlite3_exec(db->sq, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close(db->sq);
    }
    if (db->pg != NULL)
        PQfinish(db->pg);
    if (db->my != NULL)
        mysql_close(db->my);
    free(db);
}
