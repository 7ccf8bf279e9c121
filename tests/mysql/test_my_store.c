/* test_my_store.c: what only the MySQL/MariaDB backend has to prove, against the real
 * server that tests/mysql/with_mysql.sh runs around this program, as test_pg_store.c does
 * for PostgreSQL: reruns after an insert race and a lock wait timeout, job ids byte for
 * byte, schema creation, refusal, finishing a step cut short and creation by three stores
 * at once, user/password handling, the durability warnings, storage faults (the error
 * table, and a server that turns read-only: ZBSO_EUNAVAIL, store_health, refused at open,
 * then recovered) and infinities. What every networked database proves (row locks across
 * stores, unique trial numbers, register races, deadlock reruns, the outage) is
 * tests/netdb/test_netdb_suite.c's, run here as netdb/suite_mysql. Each case works on a
 * fresh database. */
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
#include "my_fresh.h"
#include "service/service.h"
#include "store/netdb/myInt.h"
#include "store/store.h"

static char g_url[512];       /* the current case's fresh database */
static char g_name[32];
static int g_n_dbs;

/* Creates the case's database (empty, no schema). */
static int fresh(void **state)
{
    snprintf(g_name, sizeof g_name, "mystore_%d", g_n_dbs++);
    return my_fresh_db(g_name, g_url, sizeof g_url);
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
    return my_query_int(g_name, sql);
}

typedef struct insert_race {
    store *st_a;
    const char *id;
    bool a_holds;                /* (1): A holds its transaction open after inserting */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool a_inserted;
    int rc_a;
    int b_runs;                  /* how many times B's unit ran */
    bool b_found;                /* B's last run found the job */
} insert_race;

static int u_race_a(store_txn *t, void *arg, zbso_err *err);

static void *race_a_main(void *arg)
{
    insert_race *r = arg;
    zbso_err err = {0};
    r->rc_a = store_exec(r->st_a, u_race_a, r, &err);
    return NULL;
}

/* Register-like: the job if it exists, else insert it. In (2), B's first run lets A
 * insert and commit between its read and its insert. */
static int get_or_insert(store_txn *t, insert_race *r, bool is_a, zbso_err *err)
{
    zbso_job j;
    int rc = store_job_get(t, r->id, true, &j, err);
    if (!is_a)
        r->b_runs++;
    if (rc == 0) {
        r->b_found = !is_a;
        return 0;
    }
    if (rc != ZBSO_ENOTFOUND)
        return rc;
    if (!is_a && !r->a_holds && r->b_runs == 1) {
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, race_a_main, r), 0);
        pthread_join(th, NULL);
        assert_int_equal(r->rc_a, 0);
    }
    make_job(&j, r->id);
    if ((rc = store_job_insert(t, &j, err)) < 0)
        return rc;
    if (is_a && r->a_holds) {
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

static void test_insert_race_reruns_the_unit(void **state)
{
    insert_race r = {.rc_a = -100, .id = "raced", .a_holds = true};
    store *st_b = open_store(NULL);
    zbso_err err = {0};
    store_stats stats;
    pthread_t th;
    r.st_a = open_store(NULL);
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.cv, NULL);
    /* (1) */
    assert_int_equal(pthread_create(&th, NULL, race_a_main, &r), 0);
    pthread_mutex_lock(&r.mu);
    while (!r.a_inserted)
        pthread_cond_wait(&r.cv, &r.mu);
    pthread_mutex_unlock(&r.mu);
    assert_int_equal(store_exec(st_b, u_race_b, &r, &err), 0);
    pthread_join(th, NULL);
    assert_int_equal(r.rc_a, 0);
    assert_int_equal(r.b_runs, 1);
    assert_true(r.b_found);
    store_stats_get(st_b, &stats);
    assert_int_equal(stats.reruns, 0);
    /* (2) */
    r.id = "raced-2";
    r.a_holds = false;
    r.rc_a = -100;
    r.b_runs = 0;
    r.b_found = false;
    assert_int_equal(store_exec(st_b, u_race_b, &r, &err), 0);
    assert_int_equal(r.b_runs, 2);
    assert_true(r.b_found);
    /* /metrics' zbso_store_reruns_total: B's store ran one unit again, A's none. */
    store_stats_get(st_b, &stats);
    assert_int_equal(stats.reruns, 1);
    store_stats_get(r.st_a, &stats);
    assert_int_equal(stats.reruns, 0);
    assert_int_equal(query_int("SELECT count(*) FROM jobs"), 2);
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

typedef struct ids_arg {
    char ids[8][ZBSO_ID_MAX + 1];
    size_t n;
} ids_arg;

static int collect_id(void *ctx, const zbso_job *job)
{
    ids_arg *a = ctx;
    if (a->n < 8)
        snprintf(a->ids[a->n++], sizeof a->ids[0], "%s", job->spec.job_id);
    return 0;
}

typedef struct list_arg {
    store_job_query q;
    ids_arg out;
} list_arg;

static int u_list(store_txn *t, void *arg, zbso_err *err)
{
    list_arg *a = arg;
    a->out.n = 0;
    return store_jobs_list(t, &a->q, collect_id, &a->out, err);
}

/* Job ids are VARBINARY: any bytes, stored as they are (not valid UTF-8 included, unlike
 * PostgreSQL's text), compared and listed byte by byte (0x7f < 0x80 < 0xff, "a" != "A",
 * trailing spaces kept), and a prefix range that ends at 0xff bytes still lists. A
 * gpu_model that is not UTF-8 is bad input for its utf8mb4 column, not a database
 * failure, and the store goes on working. */
static void test_ids_byte_for_byte(void **state)
{
    store *st = open_store(NULL);
    zbso_err err = {0};
    zbso_job j;
    static const char *const ids[] = {"p\xff\xff", "p\xff", "p\x80", "p\x7f", "pA", "pa",
                                      "pa ", "q"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        make_job(&j, ids[i]);
        assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    }
    get_arg g = {.id = "pa "};
    assert_int_equal(store_exec_read(st, u_get, &g, &err), 0);
    assert_string_equal(g.job.spec.job_id, "pa ");
    g.id = "PA";
    assert_int_equal(store_exec_read(st, u_get, &g, &err), ZBSO_ENOTFOUND);
    g.id = "p\xff";
    assert_int_equal(store_exec_read(st, u_get, &g, &err), 0);
    assert_string_equal(g.job.spec.job_id, "p\xff");

    list_arg l = {.q = {.prefix = "p"}};
    assert_int_equal(store_exec_read(st, u_list, &l, &err), 0);
    assert_int_equal(l.out.n, 7);
    static const char *const order[] = {"pA", "pa", "pa ", "p\x7f", "p\x80", "p\xff",
                                        "p\xff\xff"};
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(l.out.ids[i], order[i]);
    l = (list_arg){.q = {.prefix = "p\xff"}};
    assert_int_equal(store_exec_read(st, u_list, &l, &err), 0);
    assert_int_equal(l.out.n, 2);
    l = (list_arg){.q = {.prefix = "p", .after = "p\x80", .limit = 1}};
    assert_int_equal(store_exec_read(st, u_list, &l, &err), 0);
    assert_int_equal(l.out.n, 1);
    assert_string_equal(l.out.ids[0], "p\xff");

    make_job(&j, "bad-model");
    snprintf(j.spec.gpu_model, sizeof j.spec.gpu_model, "A\xff");
    assert_int_equal(store_exec(st, u_insert, &j, &err), ZBSO_EINVAL);
    assert_null(strstr(err.msg, "\xff"));
    make_job(&j, "fine");
    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    assert_int_equal(query_int("SELECT count(*) FROM jobs"), 9);
    assert_int_equal(query_int("SELECT count(*) FROM jobs WHERE job_id = X'70FF'"), 1);
    store_close(st);
}

typedef struct arm_arg {
    const char *id;
    zbso_arm arm;
    zbso_arm got[4];
    size_t n;
} arm_arg;

static int u_arm_put_get(store_txn *t, void *argp, zbso_err *err)
{
    arm_arg *a = argp;
    int rc = store_arm_put(t, a->id, &a->arm, err);
    if (rc < 0)
        return rc;
    return store_arms_get(t, a->id, a->got, 4, &a->n, err);
}

typedef struct trial_arg {
    const char *id;
    zbso_trial tr;
} trial_arg;

static int u_trial_insert(store_txn *t, void *argp, zbso_err *err)
{
    trial_arg *a = argp;
    return store_trial_insert(t, a->id, &a->tr, NULL, err);
}

/* MySQL's DOUBLE holds no infinity. An arm fitted from one reward has an infinite
 * precision (opt_arm_fit): stored as NULL and read back as infinity. Any other infinity
 * is refused as bad input, naming the backend's limit, and nothing is written. NaN is
 * NULL, as elsewhere. Finite doubles round-trip exactly. */
static void test_infinities(void **state)
{
    store *st = open_store(NULL);
    zbso_err err = {0};
    zbso_job j;
    make_job(&j, "inf");
    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    arm_arg a = {.id = "inf", .arm = {.batch_size = 8, .param_mean = -0.1,
                                      .param_precision = INFINITY, .num_observations = 1}};
    assert_int_equal(store_exec(st, u_arm_put_get, &a, &err), 0);
    assert_int_equal(a.n, 1);
    assert_true(isinf(a.got[0].param_precision) && a.got[0].param_precision > 0);
    assert_true(a.got[0].param_mean == -0.1);
    assert_int_equal(query_int("SELECT count(*) FROM arms WHERE param_precision IS NULL"), 1);
    a.arm.param_precision = 5e-324;   /* the least subnormal double, exactly */
    a.arm.param_mean = 0.1 + 0.2;
    assert_int_equal(store_exec(st, u_arm_put_get, &a, &err), 0);
    assert_true(a.got[0].param_precision == 5e-324);
    assert_true(a.got[0].param_mean == 0.1 + 0.2);

    trial_arg t = {.id = "inf", .tr = {.trial_number = 1, .batch_size = 8, .start_time = 1.0,
                                       .lease_renewed_at = 1.0, .time = INFINITY,
                                       .energy = NAN, .metric = NAN}};
    assert_int_equal(store_exec(st, u_trial_insert, &t, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "infinite"));
    assert_int_equal(query_int("SELECT count(*) FROM trials"), 0);
    t.tr.time = 2.5;
    assert_int_equal(store_exec(st, u_trial_insert, &t, &err), 0);
    assert_int_equal(query_int("SELECT count(*) FROM trials WHERE energy IS NULL"), 1);
    store_close(st);
}

/* ---- schema ---- */

static const store_backend *my_backend(void)
{
    zbso_err err = {0};
    const store_backend *b = store_backend_for_url(g_url, &err);
    assert_non_null(b);
    assert_string_equal(b->name, "mysql");
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

/* The tables of the case's database. */
static long long n_tables(void)
{
    return query_int("SELECT count(*) FROM information_schema.tables"
                     " WHERE table_schema = DATABASE()");
}

static void test_schema_created_on_empty_database(void **state)
{
    const store_backend *b = my_backend();
    zbso_err err = {0};
    store *st = NULL;
    int v = -1;
    assert_int_equal(b->latest_schema_version, MY_LATEST);
    /* without create_if_empty an empty database is refused, naming zbso migrate */
    assert_int_equal(store_open(g_url, &(store_options){0}, &st, &err), ZBSO_ESCHEMA);
    assert_null(st);
    assert_non_null(strstr(err.msg, "zbso migrate"));
    assert_non_null(strstr(err.msg, "empty"));
    assert_null(strstr(err.msg, getenv("ZBSO_MYSQL_PASSWORD")));
    assert_int_equal(n_tables(), 0);

    st = open_store(NULL);
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, MY_LATEST);
    assert_int_equal(store_migrate(st, 0, &err), 0);
    assert_int_equal(store_migrate(st, MY_LATEST + 1, &err), ZBSO_EINVAL);
    store_close(st);
    assert_int_equal(query_int("SELECT version FROM zbso_schema"), MY_LATEST);
    assert_int_equal(n_tables(), 6);
    /* InnoDB (row locks, transactions), utf8mb4; job ids binary */
    assert_int_equal(query_int("SELECT count(*) FROM information_schema.tables WHERE"
                               " table_schema = DATABASE() AND engine = 'InnoDB' AND"
                               " table_collation LIKE 'utf8mb4%'"), 6);
    assert_int_equal(query_int("SELECT count(*) FROM information_schema.columns WHERE"
                               " table_schema = DATABASE() AND column_name = 'job_id'"
                               " AND data_type = 'varbinary'"), 5);
    assert_int_equal(query_int("SELECT count(*) FROM information_schema.statistics WHERE"
                               " table_schema = DATABASE() AND table_name = 'trials' AND"
                               " index_name LIKE 'trials_by_%' AND seq_in_index = 1"), 3);
    /* request_key: nullable, unique per job */
    assert_int_equal(query_int("SELECT count(*) FROM information_schema.statistics WHERE"
                               " table_schema = DATABASE() AND index_name ="
                               " 'trials_by_request_key' AND non_unique = 0"), 2);
    /* the curve points go with their trial, the trials, arms and power profiles with their
     * job */
    assert_int_equal(query_int("SELECT count(*) FROM information_schema.referential_constraints"
                               " WHERE constraint_schema = DATABASE() AND"
                               " delete_rule = 'CASCADE'"), 4);
    /* reopening finds it at the latest version and changes nothing */
    st = open_store(&(store_options){0});
    store_close(st);
}

/* MySQL commits DDL implicitly, so a step is not atomic: a crash in the middle of
 * version 1 leaves zbso_schema (created first) and some tables, and no version row.
 * That database is recognized as zbso's at version 0 and finished: refused without
 * create_if_empty as an empty one would be, created with it, the tables that exist kept
 * with their rows. */
static void test_step_cut_short_is_finished(void **state)
{
    const store_backend *b = my_backend();
    zbso_err err = {0};
    store *st = NULL;
    /* the first three statements of step 1: zbso_schema, jobs, trials */
    for (int i = 0; i < 3; i++)
        assert_int_equal(my_sql(g_name, b->schema_steps[0][i]), 0);
    assert_int_equal(n_tables(), 3);
    assert_int_equal(store_open(g_url, &(store_options){0}, &st, &err), ZBSO_ESCHEMA);
    assert_non_null(strstr(err.msg, "zbso migrate"));
    st = open_store(NULL);
    zbso_job j;
    make_job(&j, "after-cut");
    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    store_close(st);
    assert_int_equal(n_tables(), 6);
    assert_int_equal(query_int("SELECT count(*) FROM zbso_schema"), 1);
    assert_int_equal(query_int("SELECT version FROM zbso_schema"), MY_LATEST);
}

/* Step 2 (power profiles) cut short after its table and before its version: the database
 * is zbso's at version 1 (the table is one of the newest schema's, not foreign), and the
 * step runs again as it is. */
static void test_step_2_cut_short_is_finished(void **state)
{
    const store_backend *b = my_backend();
    zbso_err err = {0};
    store *st = NULL;
    int v = -1;
    assert_int_equal(store_open(g_url, &(store_options){.any_schema = true}, &st, &err), 0);
    assert_int_equal(store_migrate(st, 1, &err), 0);
    store_close(st);
    assert_int_equal(my_sql(g_name, b->schema_steps[1][0]), 0);
    assert_int_equal(n_tables(), 6);
    assert_int_equal(store_open(g_url, &(store_options){0}, &st, &err), ZBSO_ESCHEMA);
    assert_non_null(strstr(err.msg, "zbso migrate"));
    assert_non_null(strstr(err.msg, "version 1"));
    st = open_store(&(store_options){.migrate = true});
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, MY_LATEST);
    store_close(st);
    assert_int_equal(n_tables(), 6);
    assert_int_equal(query_int("SELECT version FROM zbso_schema"), MY_LATEST);
}

static void test_newer_and_foreign_schemas_refused(void **state)
{
    zbso_err err = {0};
    store *st = NULL;
    assert_int_equal(my_sql(g_name, "CREATE TABLE zbso_schema (version INT NOT NULL);"
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
    assert_int_equal(my_fresh_db(g_name, g_url, sizeof g_url), 0);
    assert_int_equal(my_sql(g_name, "CREATE TABLE jobs (x INT)"), 0);
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
    /* and a zbso schema beside a foreign table is foreign too */
    assert_int_equal(my_fresh_db(g_name, g_url, sizeof g_url), 0);
    st = open_store(NULL);
    store_close(st);
    assert_int_equal(my_sql(g_name, "CREATE TABLE theirs (x INT)"), 0);
    assert_int_equal(store_open(g_url, &(store_options){.create_if_empty = true}, &st, &err),
                     0);
    store_close(st);
    assert_int_equal(n_tables(), 7);
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
            assert_int_equal(my_fresh_db(g_name, g_url, sizeof g_url), 0);
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
        assert_int_equal(query_int("SELECT version FROM zbso_schema"), MY_LATEST);
    }
}

static void test_migrate_sql(void **state)
{
    const store_backend *b = my_backend();
    zbso_err err = {0};
    sql_buf all = {.len = 0}, up = {.len = 0};
    assert_int_equal(store_migrate_sql(b, 0, 0, sql_line, &all, &err), 0);
    assert_int_equal(strncmp(all.text, "BEGIN;\nSELECT GET_LOCK('zbso_schema', 60);\n", 43), 0);
    assert_string_equal(all.text + all.len - 8, "COMMIT;\n");
    assert_non_null(strstr(all.text, "CREATE TABLE IF NOT EXISTS jobs"));
    assert_non_null(strstr(all.text, "job_id VARBINARY(300) NOT NULL PRIMARY KEY"));
    assert_non_null(strstr(all.text, "ENGINE=InnoDB"));
    assert_non_null(strstr(all.text, "PRIMARY KEY (job_id, trial_number)"));
    assert_non_null(strstr(all.text, "CREATE TABLE IF NOT EXISTS reports"));
    assert_non_null(strstr(all.text, "INSERT INTO zbso_schema (version) VALUES (1);"));
    assert_non_null(strstr(all.text, "CREATE TABLE IF NOT EXISTS power_profiles"));
    assert_non_null(strstr(all.text, "UPDATE zbso_schema SET version = 2;"));
    assert_non_null(strstr(all.text, "ADD COLUMN stop_reason INT NOT NULL DEFAULT 0"));
    assert_int_equal(store_migrate_sql(b, 1, 1, sql_line, &up, &err), 0);
    assert_null(strstr(up.text, "CREATE TABLE"));
    assert_int_equal(store_migrate_sql(b, 0, MY_LATEST + 1, sql_line, &up, &err), ZBSO_EINVAL);
    /* the text runs as it is (the mariadb client would do the same) and gives the latest
     * schema */
    assert_int_equal(my_sql(g_name, all.text), 0);
    store *st = open_store(&(store_options){0});
    int v = 0;
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, MY_LATEST);
    store_close(st);
}

/* The policy step (issue 21) cut short after its ALTER TABLE and before its version: MySQL
 * has no ADD COLUMN IF NOT EXISTS, so the step adds the columns only while jobs has no
 * policy column, and runs again as it is. Its number is found in its SQL. */
static void test_policy_step_cut_short_is_finished(void **state)
{
    const store_backend *b = my_backend();
    zbso_err err = {0};
    store *st = NULL;
    int step = 0, v = -1;
    for (int i = 1; i <= b->latest_schema_version && step == 0; i++)
        if (strstr(b->schema_steps[i - 1][0], "ADD COLUMN policy") != NULL)
            step = i;
    assert_true(step > 0);
    assert_int_equal(store_open(g_url, &(store_options){.any_schema = true}, &st, &err), 0);
    assert_int_equal(store_migrate(st, step - 1, &err), 0);
    store_close(st);
    /* every statement of the step but the last (the version), in one session: the step
     * keeps its ALTER TABLE in a session variable */
    char cut[4096];
    size_t len = 0;
    cut[0] = '\0';
    for (const char *const *sql = b->schema_steps[step - 1]; sql[1] != NULL; sql++) {
        len += (size_t)snprintf(cut + len, sizeof cut - len, "%s\n", *sql);
        assert_true(len < sizeof cut);
    }
    assert_int_equal(my_sql(g_name, cut), 0);
    assert_int_equal(query_int("SELECT count(*) FROM information_schema.columns WHERE"
                               " table_schema = DATABASE() AND table_name = 'jobs' AND"
                               " column_name IN ('policy', 'warm_start', 'prior_jobs')"), 3);
    assert_int_equal(query_int("SELECT version FROM zbso_schema"), step - 1);
    st = open_store(&(store_options){.migrate = true});
    assert_int_equal(store_schema_version(st, &v, &err), 0);
    assert_int_equal(v, MY_LATEST);
    zbso_job j;
    make_job(&j, "after-policy-cut");
    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    store_close(st);
    assert_int_equal(query_int("SELECT version FROM zbso_schema"), MY_LATEST);
}

/* ---- credentials and messages ---- */

static void test_user_and_password(void **state)
{
    const char *user = getenv("ZBSO_MYSQL_USER"), *pw = getenv("ZBSO_MYSQL_PASSWORD");
    const char *port = getenv("ZBSO_MYSQL_PORT");
    char url[512];
    store *st = NULL;
    zbso_err err = {0};
    /* user and password from the options fill a URL without them; Zeus's spelling, and
     * localhost reached over TCP at the URL's port */
    snprintf(url, sizeof url, "mysql+asyncmy://localhost:%s/%s", port, g_name);
    store_options opt = {.create_if_empty = true, .db_user = user, .db_password = pw};
    assert_int_equal(store_open(url, &opt, &st, &err), 0);
    zbso_job j;
    make_job(&j, "creds");
    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    store_close(st);
    /* a user in the URL keeps the password option */
    snprintf(url, sizeof url, "mariadb://%s@127.0.0.1:%s/%s", user, port, g_name);
    opt.db_user = "nobody";
    assert_int_equal(store_open(url, &opt, &st, &err), 0);
    store_close(st);

    /* a wrong password fails without showing it, naming the URL */
    snprintf(url, sizeof url, "mysql://%s:WrongPw%%2Fx@127.0.0.1:%s/%s", user, port, g_name);
    st = NULL;
    assert_int_equal(store_open(url, NULL, &st, &err), ZBSO_EUNAVAIL);
    assert_null(st);
    assert_null(strstr(err.msg, "WrongPw"));
    assert_non_null(strstr(err.msg, ":***@127.0.0.1:"));
    assert_non_null(strstr(err.msg, "Access denied"));
    /* a bad URL names itself, masked */
    snprintf(url, sizeof url, "mysql://%s:%s@127.0.0.1:%s/%s?sslmode=x", user, pw, port,
             g_name);
    assert_int_equal(store_open(url, NULL, &st, &err), ZBSO_EINVAL);
    assert_null(strstr(err.msg, pw));
    assert_non_null(strstr(err.msg, "sslmode"));
    /* no such database: named, masked */
    snprintf(url, sizeof url, "mysql://%s:%s@127.0.0.1:%s/nosuchdb", user, pw, port);
    assert_int_equal(store_open(url, NULL, &st, &err), ZBSO_EUNAVAIL);
    assert_null(strstr(err.msg, pw));
    assert_non_null(strstr(err.msg, "nosuchdb"));
}

/* Sends stderr (the log) to a temp file until capture_end, which reads it into text. */
typedef struct capture {
    char path[40];
    int fd, saved;
} capture;

static void capture_start(capture *c)
{
    snprintf(c->path, sizeof c->path, "/tmp/zbso-mysql-log-XXXXXX");
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
    assert_non_null(strstr(text, "INFO sql: CREATE TABLE IF NOT EXISTS jobs"));
    assert_non_null(strstr(text, "INFO sql: SELECT GET_LOCK('zbso_schema', 60)"));
    assert_non_null(strstr(text, "INFO sql: SELECT RELEASE_LOCK('zbso_schema')"));
    assert_non_null(strstr(text, "INFO sql: START TRANSACTION READ ONLY, WITH CONSISTENT"
                                 " SNAPSHOT"));
    assert_non_null(strstr(text, "INFO sql: SELECT job_id, job_id_prefix"));
    assert_non_null(strstr(text, "?1='echoed-id'"));
    assert_null(strstr(text, getenv("ZBSO_MYSQL_PASSWORD")));
}

/* Sets a global variable of the server (the with_mysql.sh user may). */
static void set_global(const char *assignment)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SET GLOBAL %s", assignment);
    assert_int_equal(my_sql(NULL, sql), 0);
}

/* A server whose commits are not durable (innodb_flush_log_at_trx_commit = 2: the log is
 * written at commit but flushed once a second) is warned about at open, since no client
 * can change it; with the default 1 nothing is said. with_mysql.sh runs no binary log,
 * so sync_binlog, which only matters for one, is not warned about either. */
static void test_durability_warning(void **state)
{
    capture cap;
    char text[16384];
    set_global("innodb_flush_log_at_trx_commit = 2");
    capture_start(&cap);
    store *st = open_store(NULL);
    store_close(st);
    capture_end(&cap, text, sizeof text);
    set_global("innodb_flush_log_at_trx_commit = 1");
    assert_non_null(strstr(text, "innodb_flush_log_at_trx_commit = 2"));
    assert_non_null(strstr(text, "not durable"));
    assert_null(strstr(text, getenv("ZBSO_MYSQL_PASSWORD")));
    capture_start(&cap);
    st = open_store(NULL);
    store_close(st);
    capture_end(&cap, text, sizeof text);
    assert_null(strstr(text, "innodb_flush_log_at_trx_commit"));
    assert_null(strstr(text, "sync_binlog"));
}

typedef struct lock_holder {
    MYSQL *db;                   /* a plain client holding the job's row lock */
} lock_holder;

static int u_get_locked(store_txn *t, void *arg, zbso_err *err)
{
    get_arg *a = arg;
    return store_job_get(t, a->id, true, &a->job, err);
}

/* A unit that meets a row lock held longer than innodb_lock_wait_timeout gets 1205 and
 * runs again (the rerun counted); when the lock outlives every run the caller gets
 * ZBSO_EUNAVAIL naming the lock wait timeout, and the store goes on working. */
static void test_lock_wait_timeout_reruns(void **state)
{
    store *st = open_store(NULL);
    zbso_err err = {0};
    zbso_job j;
    make_job(&j, "held");
    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    store_close(st);
    /* new sessions (the store's, opened after this) wait 1 s for a row lock */
    set_global("innodb_lock_wait_timeout = 1");
    st = open_store(NULL);
    lock_holder h = {.db = my_connect(g_name)};
    assert_non_null(h.db);
    assert_int_equal(my_exec_all(h.db, "START TRANSACTION; SELECT * FROM jobs"
                                       " WHERE job_id = 'held' FOR UPDATE"), 0);
    get_arg g = {.id = "held"};
    double t0 = now_s();
    int rc = store_exec(st, u_get_locked, &g, &err);
    double waited = now_s() - t0;
    assert_int_equal(my_exec_all(h.db, "ROLLBACK"), 0);
    set_global("innodb_lock_wait_timeout = 50");
    assert_int_equal(rc, ZBSO_EUNAVAIL);
    assert_non_null(strstr(err.msg, "lock wait timeout"));
    assert_non_null(strstr(err.msg, "1205"));
    assert_true(waited >= 2.5); /* three runs of about 1 s */
    store_stats stats;
    store_stats_get(st, &stats);
    assert_int_equal(stats.reruns, 2);
    /* released: the same store locks the row at once */
    assert_int_equal(store_exec(st, u_get_locked, &g, &err), 0);
    mysql_close(h.db);
    store_close(st);
}

/* ---- storage faults ---- */

/* The error table (myInt.h): storage faults are 503s, naming their cause. */
static void test_errno_codes(void **state)
{
    static const struct {
        unsigned errnum;
        int code;
        bool has_cause;
    } cases[] = {
        {1114, ZBSO_EUNAVAIL, true},  /* ER_RECORD_FILE_FULL: the table is full */
        {1021, ZBSO_EUNAVAIL, true},  /* ER_DISK_FULL */
        {1041, ZBSO_EUNAVAIL, true},  /* ER_OUT_OF_RESOURCES */
        {1040, ZBSO_EUNAVAIL, true},  /* ER_CON_COUNT_ERROR: too many connections */
        {1290, ZBSO_EUNAVAIL, true},  /* ER_OPTION_PREVENTS_STATEMENT: read_only */
        {1792, ZBSO_EUNAVAIL, true},  /* ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION */
        {1213, ZBSO_EUNAVAIL, true},  /* ER_LOCK_DEADLOCK */
        {1205, ZBSO_EUNAVAIL, true},  /* ER_LOCK_WAIT_TIMEOUT */
        {2006, ZBSO_EUNAVAIL, true},  /* CR_SERVER_GONE_ERROR */
        {2013, ZBSO_EUNAVAIL, true},  /* CR_SERVER_LOST */
        {2003, ZBSO_EUNAVAIL, true},  /* CR_CONN_HOST_ERROR */
        {1053, ZBSO_EUNAVAIL, true},  /* ER_SERVER_SHUTDOWN */
        {1927, ZBSO_EUNAVAIL, true},  /* ER_CONNECTION_KILLED */
        {1062, ZBSO_ECONFLICT, false},
        {1452, ZBSO_ENOTFOUND, false},
        {1366, ZBSO_EINVAL, false},   /* incorrect string value (not UTF-8) */
        {1406, ZBSO_EINVAL, false},   /* data too long */
        {1264, ZBSO_EINVAL, false},   /* out of range */
        {1146, ZBSO_ESTORE, false},   /* no such table */
        {1064, ZBSO_ESTORE, false},   /* syntax error */
        {0, ZBSO_ESTORE, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *cause = "unset";
        int code = my_errno_code(cases[i].errnum, &cause);
        if (code != cases[i].code || (cause != NULL) != cases[i].has_cause)
            fail_msg("error %u: code %d cause %s", cases[i].errnum, code,
                     cause ? cause : "NULL");
    }
    const char *cause = NULL;
    my_errno_code(1021, &cause);
    assert_non_null(strstr(cause, "disk"));
    my_errno_code(1290, &cause);
    assert_non_null(strstr(cause, "read-only"));
    my_errno_code(2013, &cause);
    assert_non_null(strstr(cause, "unreachable"));
}

/* A server that takes no writes (read_only, as a replica after a failover would be): a
 * user without the privilege to write there gets ZBSO_EUNAVAIL (503 with Retry-After)
 * naming it for writes, reads go on, store_health says so, a new store refuses to open;
 * once writable again the same store writes. (The with_mysql.sh user holds every
 * privilege, READ_ONLY ADMIN included, which read_only does not stop: the case uses a
 * user of its own with the rights zbso needs on its database.) */
static void test_read_only_database(void **state)
{
    char sql[512], url[512];
    snprintf(sql, sizeof sql, "DROP USER IF EXISTS zbso_rw; CREATE USER zbso_rw IDENTIFIED BY"
             " 'RwPw1'; GRANT ALL ON %s.* TO zbso_rw", g_name);
    assert_int_equal(my_sql(NULL, sql), 0);
    snprintf(url, sizeof url, "mysql://zbso_rw:RwPw1@127.0.0.1:%s/%s", getenv("ZBSO_MYSQL_PORT"),
             g_name);
    store *st = NULL;
    zbso_err err = {0};
    assert_int_equal(store_open(url, &(store_options){.create_if_empty = true}, &st, &err), 0);
    zbso_job j;
    make_job(&j, "ro-before");
    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    assert_int_equal(store_health(st, &err), 0);

    set_global("read_only = ON");
    make_job(&j, "ro-during");
    int rc_write = store_exec(st, u_insert, &j, &err);
    zbso_err write_err = err;
    get_arg g = {.id = "ro-before"};
    int rc_read = store_exec_read(st, u_get, &g, &err);
    int rc_health = store_health(st, &err);
    zbso_err health_err = err;
    store *other = NULL;
    int rc_open = store_open(url, &(store_options){.create_if_empty = true}, &other, &err);
    set_global("read_only = OFF");
    assert_int_equal(rc_write, ZBSO_EUNAVAIL);
    assert_non_null(strstr(write_err.msg, "read-only"));
    assert_non_null(strstr(write_err.msg, "1290"));
    assert_null(strstr(write_err.msg, "RwPw1"));
    assert_int_equal(rc_read, 0);
    assert_int_equal(rc_health, ZBSO_EUNAVAIL);
    assert_non_null(strstr(health_err.msg, "read-only"));
    assert_int_equal(rc_open, ZBSO_EUNAVAIL);
    assert_null(other);
    assert_non_null(strstr(err.msg, "read-only"));
    assert_non_null(strstr(err.msg, "***@127.0.0.1"));

    assert_int_equal(store_exec(st, u_insert, &j, &err), 0);
    assert_int_equal(store_health(st, &err), 0);
    store_close(st);
    assert_int_equal(query_int("SELECT count(*) FROM jobs"), 2);
}

int main(void)
{
    if (!my_env_ok())
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_insert_race_reruns_the_unit, fresh),
        cmocka_unit_test_setup(test_lock_wait_timeout_reruns, fresh),
        cmocka_unit_test_setup(test_ids_byte_for_byte, fresh),
        cmocka_unit_test_setup(test_infinities, fresh),
        cmocka_unit_test_setup(test_schema_created_on_empty_database, fresh),
        cmocka_unit_test_setup(test_step_cut_short_is_finished, fresh),
        cmocka_unit_test_setup(test_step_2_cut_short_is_finished, fresh),
        cmocka_unit_test_setup(test_policy_step_cut_short_is_finished, fresh),
        cmocka_unit_test_setup(test_newer_and_foreign_schemas_refused, fresh),
        cmocka_unit_test_setup(test_three_replicas_create_the_schema_at_once, fresh),
        cmocka_unit_test_setup(test_migrate_sql, fresh),
        cmocka_unit_test_setup(test_user_and_password, fresh),
        cmocka_unit_test_setup(test_echo_sql, fresh),
        cmocka_unit_test_setup(test_durability_warning, fresh),
        cmocka_unit_test(test_errno_codes),
        cmocka_unit_test_setup(test_read_only_database, fresh),
        /* last: it stops and restarts the server */
    };
    return cmocka_run_group_tests_name("my_store", tests, NULL, NULL);
}
