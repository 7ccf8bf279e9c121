/* pg_fresh.h: for test programs run under tests/pg/with_pg.sh: a fresh, empty database on
 * that server per test case, and plain SQL on one. Header only (static functions); needs
 * libpq. Reads ZBSO_PG_URL, ZBSO_PG_USER, ZBSO_PG_PASSWORD and ZBSO_PG_PORT. */
#ifndef ZBSO_TESTS_PG_FRESH_H
#define ZBSO_TESTS_PG_FRESH_H

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* True when the with_pg.sh variables are all set. */
static inline int pg_env_ok(void)
{
    static const char *const vars[] = {"ZBSO_PG_URL", "ZBSO_PG_USER", "ZBSO_PG_PASSWORD",
                                       "ZBSO_PG_PORT"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v == NULL || v[0] == '\0') {
            fprintf(stderr, "%s is not set: run this under tests/pg/with_pg.sh\n", vars[i]);
            return 0;
        }
    }
    return 1;
}

/* Writes the URL of database name on the with_pg.sh server into url. */
static inline void pg_url_of(const char *name, char *url, size_t cap)
{
    snprintf(url, cap, "postgresql://%s:%s@127.0.0.1:%s/%s", getenv("ZBSO_PG_USER"),
             getenv("ZBSO_PG_PASSWORD"), getenv("ZBSO_PG_PORT"), name);
}

static inline void pg_quiet(void *arg, const char *message)
{
}

/* Runs sql (one or more statements) on database name as the superuser. Returns 0, or -1
 * after printing why to stderr. */
static inline int pg_sql(const char *name, const char *sql)
{
    char url[512];
    int rc = 0;
    pg_url_of(name, url, sizeof url);
    PGconn *db = PQconnectdb(url);
    if (PQstatus(db) != CONNECTION_OK) {
        fprintf(stderr, "pg_sql: cannot connect to database %s: %s", name, PQerrorMessage(db));
        PQfinish(db);
        return -1;
    }
    PQsetNoticeProcessor(db, pg_quiet, NULL);
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
        fprintf(stderr, "pg_sql: %s on %s: %s", sql, name, PQerrorMessage(db));
        rc = -1;
    }
    PQclear(r);
    PQfinish(db);
    return rc;
}

/* Creates database name (dropping one of that name first, cutting off its connections)
 * and writes its URL into url. name must be a plain identifier. Returns 0 or -1. */
static inline int pg_fresh_db(const char *name, char *url, size_t cap)
{
    char sql[256];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
    if (pg_sql("zbso", sql) < 0)
        return -1;
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    if (pg_sql("zbso", sql) < 0)
        return -1;
    pg_url_of(name, url, cap);
    return 0;
}

#endif
