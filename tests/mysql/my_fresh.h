/* my_fresh.h: for test programs run under tests/mysql/with_mysql.sh: a fresh, empty
 * database on that server per test case, and plain SQL on one, as pg_fresh.h does for
 * PostgreSQL. Header only (static functions); needs libmariadb. Reads ZBSO_MYSQL_USER,
 * ZBSO_MYSQL_PASSWORD, ZBSO_MYSQL_HOST and ZBSO_MYSQL_PORT. */
#ifndef ZBSO_TESTS_MY_FRESH_H
#define ZBSO_TESTS_MY_FRESH_H

#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* True when the with_mysql.sh variables are all set. */
static inline int my_env_ok(void)
{
    static const char *const vars[] = {"ZBSO_MYSQL_URL", "ZBSO_MYSQL_USER",
                                       "ZBSO_MYSQL_PASSWORD", "ZBSO_MYSQL_HOST",
                                       "ZBSO_MYSQL_PORT"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v == NULL || v[0] == '\0') {
            fprintf(stderr, "%s is not set: run this under tests/mysql/with_mysql.sh\n",
                    vars[i]);
            return 0;
        }
    }
    return 1;
}

/* Writes the URL of database name on the with_mysql.sh server into url. */
static inline void my_url_of(const char *name, char *url, size_t cap)
{
    snprintf(url, cap, "mysql://%s:%s@%s:%s/%s", getenv("ZBSO_MYSQL_USER"),
             getenv("ZBSO_MYSQL_PASSWORD"), getenv("ZBSO_MYSQL_HOST"),
             getenv("ZBSO_MYSQL_PORT"), name);
}

/* A connection to database name (NULL: none) as the with_mysql.sh user, with multiple
 * statements allowed; NULL after printing why. */
static inline MYSQL *my_connect(const char *name)
{
    MYSQL *db = mysql_init(NULL);
    unsigned proto = MYSQL_PROTOCOL_TCP;
    if (db == NULL)
        return NULL;
    mysql_options(db, MYSQL_OPT_PROTOCOL, &proto);
    if (mysql_real_connect(db, getenv("ZBSO_MYSQL_HOST"), getenv("ZBSO_MYSQL_USER"),
                           getenv("ZBSO_MYSQL_PASSWORD"), name,
                           (unsigned)strtoul(getenv("ZBSO_MYSQL_PORT"), NULL, 10), NULL,
                           CLIENT_MULTI_STATEMENTS) == NULL) {
        fprintf(stderr, "my_connect: database %s: %s\n", name ? name : "(none)",
                mysql_error(db));
        mysql_close(db);
        return NULL;
    }
    return db;
}

/* Runs sql (one or more statements) on db, discarding results. Returns 0, or -1 after
 * printing why to stderr. */
static inline int my_exec_all(MYSQL *db, const char *sql)
{
    if (mysql_real_query(db, sql, (unsigned long)strlen(sql)) != 0) {
        fprintf(stderr, "my_sql: %.200s: %s\n", sql, mysql_error(db));
        return -1;
    }
    int more;
    do {
        MYSQL_RES *res = mysql_store_result(db);
        mysql_free_result(res);
        more = mysql_next_result(db);
        if (more > 0) {
            fprintf(stderr, "my_sql: %.200s: %s\n", sql, mysql_error(db));
            return -1;
        }
    } while (more == 0);
    return 0;
}

/* Runs sql on database name (NULL: none selected). Returns 0 or -1. */
static inline int my_sql(const char *name, const char *sql)
{
    MYSQL *db = my_connect(name);
    if (db == NULL)
        return -1;
    int rc = my_exec_all(db, sql);
    mysql_close(db);
    return rc;
}

/* The integer in the first column of the first row of sql on database name; exits the
 * program when that cannot be read (a test's own query is wrong). NULL reads as -1. */
static inline long long my_query_int(const char *name, const char *sql)
{
    MYSQL *db = my_connect(name);
    long long v = -1;
    if (db == NULL || mysql_real_query(db, sql, (unsigned long)strlen(sql)) != 0) {
        fprintf(stderr, "my_query_int: %s: %s\n", sql, db ? mysql_error(db) : "no connection");
        exit(1);
    }
    MYSQL_RES *res = mysql_store_result(db);
    MYSQL_ROW row = res != NULL ? mysql_fetch_row(res) : NULL;
    if (row == NULL) {
        fprintf(stderr, "my_query_int: %s: no row\n", sql);
        exit(1);
    }
    if (row[0] != NULL)
        v = strtoll(row[0], NULL, 10);
    mysql_free_result(res);
    mysql_close(db);
    return v;
}

/* Creates database name (dropping one of that name first) and writes its URL into url.
 * name must be a plain identifier. Returns 0 or -1. */
static inline int my_fresh_db(const char *name, char *url, size_t cap)
{
    char sql[256];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s; CREATE DATABASE %s", name, name);
    if (my_sql(NULL, sql) < 0)
        return -1;
    my_url_of(name, url, cap);
    return 0;
}

#endif
