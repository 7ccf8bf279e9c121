/* test_pg_store.c: what only the PostgreSQL backend has to prove, against the real server
 * that tests/pg/with_pg.sh runs around this program: the insert race and its rerun,
 * schema creation, refusal and migration (also by three stores at once on an empty
 * database), user/password handling, storage faults (the SQLSTATE table, and a database
 * that turns read-only: ZBSO_EUNAVAIL, store_health, refused at open, then recovered).
 * What every networked database proves (row locks across stores, unique trial numbers,
 * register races, deadlock reruns, the outage) is tests/netdb/test_netdb_suite.c's, run
 * here as netdb/suite_pg. Each case works on a fresh database. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/rng.h"
#include "core/spec.h"
#include "../netdb/db_test.h"
#include "pg_fresh.h"
#include "service/service.h"
#include "store/netdb/pgInt.h"
#include "store/store.h"

static char g_url[512];       /* the current case's fresh database */
static char g_name[32];
static int g_n_dbs;

/* Creates the case's database (empty, no schema). */
static int fresh(void **state)
{
    snprintf(g_name, sizeof g_name, "pgstore_%d", g_n_dbs++);
    return pg_fresh_db(g_name, g_url, sizeof g_url);
}

static store *open_store(const store_options *opt)
{
    store *st = NULL;
    zbso_err err = {0};
    store_options def = {.create_if_empty = true};
    int rc = store_open(g_url, opt != NULL ? opt : &def, &st, &err);
    if (rc != 0)
        fail_msg("store_open = %d: %s", rc, err.msg);
    return st;
}

/* The integer in the first column of the first row of sql on the case's database. */
static long long query_int(const char *sql)
{
    char url[512];
    pg_url_of(g_name, url, sizeof url);
    PGconn *db = PQconnectdb(url);
    assert_int_equal(PQstatus(db), CONNECTION_OK);
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        fail_msg("%s: %s", sql, PQerrorMessage(db));
    long long v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    PQfinish(db);
    return v;
}

/* The store-level race behind register: A inserts a job and holds its transaction open;
 * B, which found the job missing, inserts it too, waits for A's commit and meets the
 * row. B's unit then runs again (PostgreSQL's READ COMMITTED gives the rerun a snapshot
 * with A's row) and sees the job instead of failing with a conflict. */
typedef struct insert_race {
    store *st_a;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool a_inserted;
    int rc_a;
    int b_runs;                  /* how many times B's unit ran */
    bool b_found;                /* B's last run found the job */
} insert_race;

/* Register-like: the job if it exists, else insert it. */
static int get_or_insert(store_txn *t, insert_race *r, bool is_a, zbso_err *err)
{
    zbso_job j;
    int rc = store_job_get(t, "raced", true, &j, err);
    if (!is_a)
        r->b_runs++;
    if (rc == 0) {
        r->b_found = true;
        return 0;
    }
    if (rc != ZBSO_ENOTFOUND)
        return rc;
    make_job(&j, "raced");
    if ((rc = store_job_insert(t, &j, err)) < 0)
        return rc;
    if (is_a) {
        pthread_mutex_lock(&r->mu);
        r->a_inserted = true;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        sleep_s(0.3);
    }
    return 0;
}

static int u_race_a(store_txn *t, void *arg, zbso_err *err)
{
    return get_or_insert(t, arg, true, err);
}

static int u_race_b(store_txn *t, void *arg, zbso_err *err)
{
    return get_or_insert(t, arg, false, err);
}

static void *race_a_main(void *arg)
{
    insert_race *r = arg;
    zbso_err err = {0};
    r->rc_a = store_exec(r->st_a, u_race_a, r, &err);
    return NULL;
}

static void test_insert_race_reruns_the_unit(void **state)
{
    insert_race r = {.rc_a = -100};
    store *st_b = open_store(NULL);
    zbso_err err = {0};
    pthread_t th;
    r.st_a = open_store(NULL);
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.cv, NULL);
    assert_int_equal(pthread_create(&th, NULL, race_a_main, &r), 0);
    pthread_mutex_lock(&r.mu);
    while (!r.a_inserted)
        pthread_cond_wait(&r.cv, &r.mu);
    pthread_mutex_unlock(&r.mu);
    assert_int_equal(store_exec(st_b, u_race_b, &r, &err), 0);
    pthread_join(th, NULL);
    assert_int_equal(r.rc_a, 0);
    assert_int_equal(r.b_runs, 2);
    assert_true(r.b_found);
    /* /metrics' zbso_store_reruns_total: B's store ran one unit again, A's none. */
    store_stats stats;
    store_stats_get(st_b, &stats);
    assert_int_equal(stats.reruns, 1);
    store_stats_get(r.st_a, &stats);
    assert_int_equal(stats.reruns, 0);
    assert_int_equal(query_int("SELECT count(*) FROM jobs"), 1);
    /* An insert of an id that the unit did not find missing is a plain conflict. */
    zbso_job j;
    make_job(&j, "raced");
    assert_int_equal(store_exec(st_b, u_insert, &j, &err), ZBSO_ECONFLICT);
    assert_non_null(strstr(err.msg, "raced"));
    store_close(r.st_a);
    store_close(st_b);
    pthread_cond_destroy(&r.cv);
    pthread_mutex_destroy(&r.mu);
}

/* A job id that is not valid UTF-8 (the database's encoding) is bad input, not a database
 * failure, and the store goes on working. */
static void test_id_invalid_in_encoding(void **state)
{
    store *st = open_store(NULL);
    zbso_err err = {0};
    get_arg g = {.id = "bad-\xff-id"};
    assert_int_equal(store_exec_read(st, u_get, &g, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "UTF8"));
    assert_null(strstr(err.msg, "\xff"));
    assert_int_equal(store_exec(st, u_get, &g, &err), ZBSO_EINVAL);
    zbso_job j;
    make_job(&j, "bad-\xfe");
    assert_int_equal(store_exec(st, u_insert, &j, &err), ZBSO_EINVAL);
    g.id = "fine";
    assert_int_equal(store_exec_read(st, u_get, &g, &err), ZBSO_ENOTFOUND);
    make_job(&j, "fine");
    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    assert_int_equal(store_exec(st, u_get, &g, &err), 0);
    store_close(st);
}

/* ---- schema ---- */

static const store_backend *pg_backend(void)
{
    zbso_err err = {0};
    const store_backend *b = store_backend_for_url(g_url, &err);
    assert_non_null(b);
    assert_string_equal(b->name, "postgresql");
    return b;
}

#define SQL_MAX 16384
typedef struct sql_buf {
    char text[SQL_MAX];
    size_t len;
} sql_buf;

static void sql_line(void *ctx, const char *sql)
{
    sql_buf *b = ctx;
    int n = snprintf(b->text + b->len, SQL_MAX - b->len, "%s\n", sql);
    assert_true(n > 0 && (size_t)n < SQL_MAX - b->len);
    b->len += (size_t)n;
}

/* Puts the case's database at schema version `to` with migrate_sql's own text. */
static void make_db_at(int to)
{
    sql_buf buf = {.len = 0};
    zbso_err err = {0};
    assert_int_equal(store_migrate_sql(pg_backend(), 0, to, sql_line, &buf, &err), 0);
    assert_int_equal(pg_sql(g_name, buf.text), 0);
}

static void test_schema_created_on_empty_database(void **state)
{
    const store_backend *b = pg_backend();
    zbso_err err = {0};
    store *st = NULL;
    int v = -1;
    assert_int_equal(b->latest_schema_version, PG_LATEST);
    /* without create_if_empty an empty database is refused, naming zbso migrate */
    assert_int_equal(store_open(g_url, &(store_options){0}, &st, &err), ZBSO_ESCHEMA);
    assert_null(st);
    assert_non_null(strstr(err.msg, "zbso migrate"));
    assert_non_null(strstr(err.msg, "empty"));
    assert_null(strstr(err.msg, getenv("ZBSO_PG_PASSWORD")));
    assert_int_equal(query_int("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"), 0);

    st = open_store(NULL);
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, PG_LATEST);
    assert_int_equal(store_migrate(st, 0, &err), 0);
    assert_int_equal(store_migrate(st, 1, &err), ZBSO_ESCHEMA);
    assert_non_null(strstr(err.msg, "cannot go down"));
    assert_int_equal(store_migrate(st, PG_LATEST + 1, &err), ZBSO_EINVAL);
    store_close(st);
    assert_int_equal(query_int("SELECT version FROM zbso_schema"), PG_LATEST);
    /* jobs.updated_at, NOT NULL without a default; the byte-order index of job ids */
    assert_int_equal(query_int("SELECT count(*) FROM information_schema.columns WHERE"
                               " table_name = 'jobs' AND column_name = 'updated_at'"
                               " AND is_nullable = 'NO' AND column_default IS NULL"
                               " AND data_type = 'double precision'"), 1);
    assert_int_equal(query_int("SELECT count(*) FROM pg_indexes WHERE indexname ="
                               " 'jobs_by_id_bytes' AND indexdef LIKE '%COLLATE \"C\"%'"), 1);
    assert_int_equal(
        query_int("SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'trials_by_%'"), 3);
    /* request_key: nullable text, unique per job */
    assert_int_equal(query_int("SELECT count(*) FROM information_schema.columns WHERE"
                               " table_name = 'trials' AND column_name = 'request_key'"
                               " AND is_nullable = 'YES' AND data_type = 'text'"), 1);
    assert_int_equal(query_int("SELECT count(*) FROM pg_indexes WHERE indexname ="
                               " 'trials_by_request_key' AND indexdef LIKE 'CREATE UNIQUE%'"
                               " AND indexdef LIKE '%(job_id, request_key)'"), 1);
    /* the job row has its version column, NOT NULL */
    assert_int_equal(query_int("SELECT count(*) FROM information_schema.columns WHERE"
                               " table_name = 'jobs' AND column_name = 'version'"
                               " AND is_nullable = 'NO' AND data_type = 'bigint'"), 1);
    /* reopening finds it at the latest version and changes nothing */
    st = open_store(&(store_options){0});
    store_close(st);
}

static void test_older_schema_refused_then_migrated(void **state)
{
    zbso_err err = {0};
    store *st = NULL;
    int v = -1;
    make_db_at(1);
    store_options opt = {.create_if_empty = true};
    assert_int_equal(store_open(g_url, &opt, &st, &err), ZBSO_ESCHEMA);
    assert_null(st);
    assert_non_null(strstr(err.msg, "zbso migrate"));
    assert_non_null(strstr(err.msg, "version 1"));
    assert_non_null(strstr(err.msg, "older"));
    assert_non_null(strstr(err.msg, "postgresql://zbso:***@127.0.0.1:"));
    assert_null(strstr(err.msg, getenv("ZBSO_PG_PASSWORD")));
    assert_int_equal(query_int("SELECT version FROM zbso_schema"), 1);

    /* zbso migrate's way: any_schema opens it as it is, migrate takes it up */
    assert_int_equal(store_open(g_url, &(store_options){.any_schema = true}, &st, &err), 0);
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, 1);
    assert_int_equal(store_migrate(st, 2, &err), 0);
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, 2);
    /* jobs and trials stored at version 2 are kept by migration 3, the trials with no
     * request key; migration 4 gives each job updated_at, the latest of its creation and
     * its trials' start, end and lease renewal, and takes curve points for the trials */
    assert_int_equal(pg_sql(g_name,
        "INSERT INTO jobs (job_id, job_id_prefix, batch_sizes, default_batch_size, eta_knob,"
        " beta_knob, target_metric, higher_is_better_metric, max_epochs, num_pruning_rounds,"
        " window_size, mab_prior_mean, mab_prior_precision, mab_num_explorations, mab_seed,"
        " max_power, number_of_gpus, gpu_model, stage, exp_default_batch_size, min_cost,"
        " min_cost_batch_size, rng_state, num_trials, created_at, version) VALUES"
        " ('at-v2', 'at', '{8,16}', 8, 0.5, NULL, 0.9, TRUE, 10, 2, 0, 0, 0, 2, NULL, 300, 1,"
        " 'A40', 0, 8, NULL, 8, 'x', 2, 1.5, 2),"
        " ('bare-v2', 'at', '{8,16}', 8, 0.5, NULL, 0.9, TRUE, 10, 2, 0, 0, 0, 2, NULL, 300,"
        " 1, 'A40', 0, 8, NULL, 8, 'x', 0, 2.5, 2),"
        " ('ended-v2', 'at', '{8,16}', 8, 0.5, NULL, 0.9, TRUE, 10, 2, 0, 0, 0, 2, NULL, 300,"
        " 1, 'A40', 0, 8, NULL, 8, 'x', 1, 3.5, 2);"
        "INSERT INTO trials VALUES ('at-v2', 1, 8, 0, 0, 5.5, 0, 5.5, NULL, NULL, NULL, 0,"
        " false), ('at-v2', 2, 8, 0, 0, 4.5, 0, 9.25, NULL, NULL, NULL, 0, false),"
        " ('ended-v2', 1, 8, 0, 1, 4.5, 70.5, 9.25, 1, 2, 0.5, 3, true)"), 0);
    assert_int_equal(store_migrate(st, 0, &err), 0);
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, PG_LATEST);
    store_close(st);
    assert_int_equal(query_int("SELECT count(*) FROM trials WHERE job_id = 'at-v2' AND"
                               " trial_number = 1 AND start_time = 5.5 AND request_key IS NULL"),
                     1);
    assert_int_equal(query_int("SELECT count(*) FROM jobs WHERE job_id = 'at-v2'"), 1);
    assert_int_equal(query_int("SELECT count(*) FROM jobs WHERE job_id = 'at-v2'"
                               " AND updated_at = 9.25"), 1);
    assert_int_equal(query_int("SELECT count(*) FROM jobs WHERE job_id = 'bare-v2'"
                               " AND updated_at = 2.5"), 1);
    assert_int_equal(query_int("SELECT count(*) FROM jobs WHERE job_id = 'ended-v2'"
                               " AND updated_at = 70.5"), 1);
    assert_int_equal(pg_sql(g_name, "INSERT INTO reports VALUES ('at-v2', 2, 0, 1, 2, 0.5,"
                                    " 10)"), 0);
    assert_int_equal(pg_sql(g_name, "DELETE FROM jobs WHERE job_id = 'at-v2'"), 0);
    assert_int_equal(query_int("SELECT count(*) FROM reports"), 0);
    zbso_job j;

    /* serve --migrate's way, from version 1 again */
    assert_int_equal(pg_fresh_db(g_name, g_url, sizeof g_url), 0);
    make_db_at(1);
    opt.migrate = true;
    st = open_store(&opt);
    make_job(&j, "after-migrate");
    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    store_close(st);
    assert_int_equal(query_int("SELECT version FROM zbso_schema"), PG_LATEST);

    /* an empty database, step by step */
    assert_int_equal(pg_fresh_db(g_name, g_url, sizeof g_url), 0);
    assert_int_equal(store_open(g_url, &(store_options){.any_schema = true}, &st, &err), 0);
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, 0);
    assert_int_equal(store_migrate(st, 1, &err), 0);
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, 1);
    assert_int_equal(store_migrate(st, 0, &err), 0);
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, PG_LATEST);
    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    store_close(st);
}

static void test_newer_and_foreign_schemas_refused(void **state)
{
    zbso_err err = {0};
    store *st = NULL;
    assert_int_equal(pg_sql(g_name, "CREATE TABLE zbso_schema (version INTEGER NOT NULL);"
                                    " INSERT INTO zbso_schema VALUES (99);"), 0);
    store_options opt = {.create_if_empty = true, .migrate = true};
    assert_int_equal(store_open(g_url, &opt, &st, &err), ZBSO_ESCHEMA);
    assert_non_null(strstr(err.msg, "99"));
    assert_non_null(strstr(err.msg, "newer"));
    assert_int_equal(store_open(g_url, &(store_options){.any_schema = true}, &st, &err), 0);
    assert_int_equal(store_migrate(st, 0, &err), ZBSO_ESCHEMA);
    assert_non_null(strstr(err.msg, "99"));
    store_close(st);

    /* somebody else's tables and no zbso_schema: not a zbso database, left alone */
    assert_int_equal(pg_fresh_db(g_name, g_url, sizeof g_url), 0);
    assert_int_equal(pg_sql(g_name, "CREATE TABLE jobs (x INTEGER)"), 0);
    st = NULL;
    assert_int_equal(store_open(g_url, &opt, &st, &err), ZBSO_ESCHEMA);
    assert_null(st);
    assert_non_null(strstr(err.msg, "not a zbso database"));
    /* the same answer without create_if_empty, and for zbso migrate (one policy, store.c) */
    assert_int_equal(store_open(g_url, &(store_options){0}, &st, &err), ZBSO_ESCHEMA);
    assert_non_null(strstr(err.msg, "not a zbso database"));
    assert_int_equal(store_open(g_url, &(store_options){.any_schema = true}, &st, &err),
                     ZBSO_ESCHEMA);
    assert_null(st);
    assert_non_null(strstr(err.msg, "not a zbso database"));
    assert_int_equal(query_int("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"), 1);
}

#define N_STARTERS 3

typedef struct starter {
    pthread_barrier_t *go;
    int rc;
    char msg[ZBSO_ERR_MSG_MAX];
} starter;

static void *starter_main(void *arg)
{
    starter *s = arg;
    store *st = NULL;
    zbso_err err = {0};
    pthread_barrier_wait(s->go);
    s->rc = store_open(g_url, &(store_options){.create_if_empty = true}, &st, &err);
    snprintf(s->msg, sizeof s->msg, "%s", err.msg);
    store_close(st);
    return NULL;
}

/* Three replicas starting at once on one empty database all open it; the schema is
 * created once (without the schema lock, the losers' CREATE TABLE fails). Repeated, since
 * a lucky schedule would hide a missing lock. */
static void test_three_replicas_create_the_schema_at_once(void **state)
{
    for (int round = 0; round < 4; round++) {
        if (round > 0)
            assert_int_equal(pg_fresh_db(g_name, g_url, sizeof g_url), 0);
        pthread_barrier_t go;
        pthread_t tid[N_STARTERS];
        starter s[N_STARTERS];
        pthread_barrier_init(&go, NULL, N_STARTERS);
        for (int i = 0; i < N_STARTERS; i++) {
            s[i] = (starter){.go = &go, .rc = -100};
            assert_int_equal(pthread_create(&tid[i], NULL, starter_main, &s[i]), 0);
        }
        for (int i = 0; i < N_STARTERS; i++)
            pthread_join(tid[i], NULL);
        pthread_barrier_destroy(&go);
        for (int i = 0; i < N_STARTERS; i++)
            if (s[i].rc != 0)
                fail_msg("round %d starter %d: %d %s", round, i, s[i].rc, s[i].msg);
        assert_int_equal(query_int("SELECT count(*) FROM zbso_schema"), 1);
        assert_int_equal(query_int("SELECT version FROM zbso_schema"), PG_LATEST);
    }
}

static void test_migrate_sql(void **state)
{
    const store_backend *b = pg_backend();
    zbso_err err = {0};
    sql_buf all = {.len = 0}, up = {.len = 0};
    assert_int_equal(store_migrate_sql(b, 0, 0, sql_line, &all, &err), 0);
    assert_int_equal(strncmp(all.text, "BEGIN;\nSELECT pg_advisory_xact_lock(", 36), 0);
    assert_string_equal(all.text + all.len - 8, "COMMIT;\n");
    assert_non_null(strstr(all.text, "CREATE TABLE jobs"));
    assert_non_null(strstr(all.text, "version BIGINT NOT NULL"));
    assert_non_null(strstr(all.text, "CREATE TABLE trials"));
    assert_non_null(strstr(all.text, "PRIMARY KEY (job_id, trial_number)"));
    assert_non_null(strstr(all.text, "CREATE TABLE arms"));
    assert_non_null(strstr(all.text, "CREATE INDEX"));
    assert_non_null(strstr(all.text, "UPDATE zbso_schema SET version = 2;"));
    assert_non_null(strstr(all.text, "ADD COLUMN request_key TEXT"));
    assert_non_null(strstr(all.text, "UPDATE zbso_schema SET version = 3;"));
    assert_non_null(strstr(all.text, "CREATE TABLE reports"));
    assert_non_null(strstr(all.text, "ADD COLUMN updated_at"));
    assert_non_null(strstr(all.text, "UPDATE zbso_schema SET version = 4;"));
    assert_non_null(strstr(all.text, "CREATE TABLE power_profiles"));
    assert_non_null(strstr(all.text, "UPDATE zbso_schema SET version = 5;"));
    assert_non_null(strstr(all.text, "ALTER TABLE trials ADD COLUMN stop_reason INTEGER"));
    assert_int_equal(store_migrate_sql(b, 1, 2, sql_line, &up, &err), 0);
    assert_null(strstr(up.text, "CREATE TABLE"));
    assert_non_null(strstr(up.text, "CREATE INDEX"));
    assert_int_equal(store_migrate_sql(b, 2, 1, sql_line, &up, &err), ZBSO_EINVAL);
    assert_null(strstr(up.text, "request_key"));
    assert_int_equal(store_migrate_sql(b, 0, PG_LATEST + 1, sql_line, &up, &err), ZBSO_EINVAL);
    /* the text runs as it is (psql would do the same) and gives the latest schema */
    assert_int_equal(pg_sql(g_name, all.text), 0);
    store *st = open_store(&(store_options){0});
    int v = 0;
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, PG_LATEST);
    store_close(st);
}

/* ---- credentials and messages ---- */

static void test_user_and_password(void **state)
{
    const char *user = getenv("ZBSO_PG_USER"), *pw = getenv("ZBSO_PG_PASSWORD");
    const char *port = getenv("ZBSO_PG_PORT");
    char url[512];
    store *st = NULL;
    zbso_err err = {0};
    /* user and password from the options fill a URL without them */
    snprintf(url, sizeof url, "postgresql+asyncpg://127.0.0.1:%s/%s", port, g_name);
    store_options opt = {.create_if_empty = true, .db_user = user, .db_password = pw};
    assert_int_equal(store_open(url, &opt, &st, &err), 0);
    zbso_job j;
    make_job(&j, "creds");
    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    store_close(st);
    /* a user in the URL keeps the password option */
    snprintf(url, sizeof url, "postgresql://%s@127.0.0.1:%s/%s", user, port, g_name);
    opt.db_user = "nobody";
    assert_int_equal(store_open(url, &opt, &st, &err), 0);
    store_close(st);

    /* a wrong password fails without showing it, naming the URL */
    snprintf(url, sizeof url, "postgresql://%s:WrongPw%%2Fx@127.0.0.1:%s/%s", user, port,
             g_name);
    st = NULL;
    assert_int_equal(store_open(url, NULL, &st, &err), ZBSO_EUNAVAIL);
    assert_null(st);
    assert_null(strstr(err.msg, "WrongPw"));
    assert_non_null(strstr(err.msg, ":***@127.0.0.1:"));
    assert_non_null(strstr(err.msg, "password authentication failed"));
    /* a bad URL names itself, masked */
    snprintf(url, sizeof url, "postgresql://%s:%s@127.0.0.1:%s/%s?sslmode", user, pw, port,
             g_name);
    assert_int_equal(store_open(url, NULL, &st, &err), ZBSO_EINVAL);
    assert_null(strstr(err.msg, pw));
    assert_non_null(strstr(err.msg, "sslmode"));
}

/* Sends stderr (the log) to a temp file until capture_end, which reads it into text. */
typedef struct capture {
    char path[32];
    int fd, saved;
} capture;

static void capture_start(capture *c)
{
    snprintf(c->path, sizeof c->path, "/tmp/zbso-pg-log-XXXXXX");
    c->fd = mkstemp(c->path);
    assert_true(c->fd >= 0);
    fflush(stderr);
    c->saved = dup(2);
    assert_true(c->saved >= 0);
    assert_true(dup2(c->fd, 2) >= 0);
}

static void capture_end(capture *c, char *text, size_t cap)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    ssize_t n = pread(c->fd, text, cap - 1, 0);
    close(c->fd);
    unlink(c->path);
    text[n > 0 ? n : 0] = '\0';
}

/* echo_sql logs every statement at INFO, as sqlite does. */
static void test_echo_sql(void **state)
{
    capture cap;
    char text[16384];
    capture_start(&cap);
    store *st = open_store(&(store_options){.create_if_empty = true, .echo_sql = true});
    get_arg g = {.id = "echoed-id"};
    zbso_err err = {0};
    int rc = store_exec_read(st, u_get, &g, &err);
    store_close(st);
    capture_end(&cap, text, sizeof text);
    assert_int_equal(rc, ZBSO_ENOTFOUND);
    assert_non_null(strstr(text, "INFO sql: CREATE TABLE jobs"));
    assert_non_null(strstr(text, "INFO sql: BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
    assert_non_null(strstr(text, "INFO sql: SELECT job_id, job_id_prefix"));
    assert_non_null(strstr(text, "$1='echoed-id'"));
    assert_null(strstr(text, getenv("ZBSO_PG_PASSWORD")));
}

/* A database whose default is synchronous_commit = off: the store says so and turns it
 * on for its own connections (answers rest on durable commits), which
 * pg_stat_activity's view of its backends cannot show, so the log must. */
static void test_synchronous_commit_forced_on(void **state)
{
    capture cap;
    char text[16384], sql[128];
    zbso_err err = {0};
    zbso_job j;
    snprintf(sql, sizeof sql, "ALTER DATABASE %s SET synchronous_commit = off", g_name);
    assert_int_equal(pg_sql("zbso", sql), 0);
    capture_start(&cap);
    store *st = open_store(NULL);
    make_job(&j, "durable");
    int rc = store_exec(st, u_insert, &j, &err);
    store_close(st);
    capture_end(&cap, text, sizeof text);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(text, "synchronous_commit off; zbso sets it on"));
    /* and with the default on, nothing is said */
    assert_int_equal(pg_fresh_db(g_name, g_url, sizeof g_url), 0);
    capture_start(&cap);
    st = open_store(NULL);
    store_close(st);
    capture_end(&cap, text, sizeof text);
    assert_null(strstr(text, "synchronous_commit"));
}

/* ---- storage faults ---- */

/* The SQLSTATE table (pgInt.h): storage faults are 503s, naming their cause. */
static void test_sqlstate_codes(void **state)
{
    static const struct {
        const char *state;
        int code;
        bool has_cause;
    } cases[] = {
        {"53100", ZBSO_EUNAVAIL, true},  /* disk_full */
        {"53200", ZBSO_EUNAVAIL, true},  /* out_of_memory */
        {"53300", ZBSO_EUNAVAIL, true},  /* too_many_connections */
        {"58030", ZBSO_EUNAVAIL, true},  /* io_error */
        {"58000", ZBSO_EUNAVAIL, true},  /* system_error */
        {"58P01", ZBSO_EUNAVAIL, true},  /* undefined_file */
        {"25006", ZBSO_EUNAVAIL, true},  /* read_only_sql_transaction */
        {"08006", ZBSO_EUNAVAIL, true},  /* connection_failure */
        {"57P01", ZBSO_EUNAVAIL, true},  /* admin_shutdown */
        {"40001", ZBSO_EUNAVAIL, true},  /* serialization_failure */
        {"40P01", ZBSO_EUNAVAIL, true},  /* deadlock_detected */
        {"55P03", ZBSO_EUNAVAIL, true},  /* lock_not_available */
        {"57014", ZBSO_EUNAVAIL, true},  /* query_canceled */
        {"23505", ZBSO_ECONFLICT, false},
        {"23503", ZBSO_ENOTFOUND, false},
        {"22P02", ZBSO_EINVAL, false},
        {"42P01", ZBSO_ESTORE, false},   /* undefined_table */
        {"XX000", ZBSO_ESTORE, false},   /* internal_error */
        {NULL, ZBSO_ESTORE, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *cause = "unset";
        int code = pg_state_code(cases[i].state, &cause);
        if (code != cases[i].code || (cause != NULL) != cases[i].has_cause)
            fail_msg("SQLSTATE %s: code %d cause %s", cases[i].state ? cases[i].state : "NULL",
                     code, cause ? cause : "NULL");
    }
    const char *cause = NULL;
    pg_state_code("53100", &cause);
    assert_non_null(strstr(cause, "disk is full"));
    pg_state_code("58030", &cause);
    assert_non_null(strstr(cause, "I/O"));
    pg_state_code("25006", &cause);
    assert_non_null(strstr(cause, "read-only"));
}

/* Sets (on) or resets the case's database's default_transaction_read_only, from another
 * database (a read-only session could not undo it), and ends the sessions on the case's
 * database so that new ones see the setting. */
static void set_read_only(bool on)
{
    char sql[256];
    snprintf(sql, sizeof sql, on ? "ALTER DATABASE %s SET default_transaction_read_only = on"
                                 : "ALTER DATABASE %s RESET default_transaction_read_only",
             g_name);
    assert_int_equal(pg_sql("postgres", sql), 0);
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
             " WHERE datname = '%s'", g_name);
    assert_int_equal(pg_sql("postgres", sql), 0);
}

/* A database that takes no writes (here default_transaction_read_only, as a hot standby
 * after a failover would): writes answer ZBSO_EUNAVAIL (503 with Retry-After) naming it,
 * reads go on, store_health says so, a new store refuses to open; once writable again
 * the same store writes. */
static void test_read_only_database(void **state)
{
    store *st = open_store(NULL);
    zbso_err err = {0};
    zbso_job j;
    make_job(&j, "ro-before");
    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    assert_int_equal(store_health(st, &err), 0);

    set_read_only(true);
    make_job(&j, "ro-during");
    assert_int_equal(store_exec(st, u_insert, &j, &err), ZBSO_EUNAVAIL);
    assert_non_null(strstr(err.msg, "read-only"));
    assert_non_null(strstr(err.msg, "25006"));
    assert_null(strstr(err.msg, getenv("ZBSO_PG_PASSWORD")));
    get_arg g = {.id = "ro-before"};
    assert_int_equal(store_exec_read(st, u_get, &g, &err), 0);
    assert_int_equal(store_health(st, &err), ZBSO_EUNAVAIL);
    assert_non_null(strstr(err.msg, "read-only"));
    store *other = NULL;
    assert_int_equal(store_open(g_url, &(store_options){.create_if_empty = true}, &other,
                                &err), ZBSO_EUNAVAIL);
    assert_null(other);
    assert_non_null(strstr(err.msg, "read-only"));
    assert_non_null(strstr(err.msg, "***@127.0.0.1"));

    set_read_only(false);
    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    assert_int_equal(store_health(st, &err), 0);
    store_close(st);
    assert_int_equal(query_int("SELECT count(*) FROM jobs"), 2);
}

int main(void)
{
    if (!pg_env_ok())
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_insert_race_reruns_the_unit, fresh),
        cmocka_unit_test_setup(test_id_invalid_in_encoding, fresh),
        cmocka_unit_test_setup(test_schema_created_on_empty_database, fresh),
        cmocka_unit_test_setup(test_older_schema_refused_then_migrated, fresh),
        cmocka_unit_test_setup(test_newer_and_foreign_schemas_refused, fresh),
        cmocka_unit_test_setup(test_three_replicas_create_the_schema_at_once, fresh),
        cmocka_unit_test_setup(test_migrate_sql, fresh),
        cmocka_unit_test_setup(test_user_and_password, fresh),
        cmocka_unit_test_setup(test_echo_sql, fresh),
        cmocka_unit_test_setup(test_synchronous_commit_forced_on, fresh),
        cmocka_unit_test(test_sqlstate_codes),
        cmocka_unit_test_setup(test_read_only_database, fresh),
        /* last: it stops and restarts the server */
    };
    return cmocka_run_group_tests_name("pg_store", tests, NULL, NULL);
}
