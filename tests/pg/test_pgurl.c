/* test_pgurl.c: pgurl_parse and dburl_mask on good and bad PostgreSQL URLs: libpq
 * keywords, percent-decoding, user/password filling, and messages that name the URL with
 * its password masked. Pure: needs no PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/netdb/pgurl.h"

static pgurl u; /* large; one at a time */

static void assert_param(const char *key, const char *want)
{
    const char *got = pgurl_get(&u, key);
    if (want == NULL) {
        if (got != NULL)
            fail_msg("%s = \"%s\", want none", key, got);
        return;
    }
    if (got == NULL)
        fail_msg("%s missing, want \"%s\"", key, want);
    assert_string_equal(got, want);
}

static void parse_ok(const char *url, const char *user, const char *password)
{
    zbso_err err = {0};
    int rc = pgurl_parse(url, user, password, &u, &err);
    if (rc != 0)
        fail_msg("pgurl_parse(%s) = %d: %s", url, rc, err.msg);
    assert_null(u.keys[u.n]);
    assert_null(u.values[u.n]);
}

/* Parses url expecting ZBSO_EINVAL with a message holding each of the NULL-terminated
 * words, and never the secret (when not NULL). */
static void parse_bad(const char *url, const char *secret, ...)
{
    zbso_err err = {0};
    va_list ap;
    assert_int_equal(pgurl_parse(url, NULL, NULL, &u, &err), ZBSO_EINVAL);
    assert_int_equal(err.code, ZBSO_EINVAL);
    va_start(ap, secret);
    for (const char *w = va_arg(ap, const char *); w != NULL; w = va_arg(ap, const char *))
        if (strstr(err.msg, w) == NULL)
            fail_msg("message \"%s\" lacks \"%s\"", err.msg, w);
    va_end(ap);
    if (secret != NULL && strstr(err.msg, secret) != NULL)
        fail_msg("message \"%s\" shows the password", err.msg);
}

static void test_full_url(void **state)
{
    parse_ok("postgresql://alice:s3cret@db.example.com:6543/zeus", NULL, NULL);
    assert_int_equal(u.n, 5);
    assert_param("user", "alice");
    assert_param("password", "s3cret");
    assert_param("host", "db.example.com");
    assert_param("port", "6543");
    assert_param("dbname", "zeus");
    assert_string_equal(u.masked, "postgresql://alice:***@db.example.com:6543/zeus");
}

static void test_asyncpg_spelling(void **state)
{
    parse_ok("postgresql+asyncpg://bob:pw@127.0.0.1:5432/bso", NULL, NULL);
    assert_param("user", "bob");
    assert_param("password", "pw");
    assert_param("host", "127.0.0.1");
    assert_param("port", "5432");
    assert_param("dbname", "bso");
    /* libpq's own alias */
    parse_ok("postgres://carol:pw2@db:6000/x", NULL, NULL);
    assert_param("user", "carol");
    assert_param("password", "pw2");
    assert_param("host", "db");
    assert_param("port", "6000");
    assert_param("dbname", "x");
}

static void test_minimal_urls(void **state)
{
    parse_ok("postgresql://", NULL, NULL);
    assert_int_equal(u.n, 0);
    parse_ok("postgresql:///only_db", NULL, NULL);
    assert_int_equal(u.n, 1);
    assert_param("dbname", "only_db");
    parse_ok("postgresql://h", NULL, NULL);
    assert_int_equal(u.n, 1);
    assert_param("host", "h");
    parse_ok("postgresql://h/", NULL, NULL);
    assert_param("dbname", NULL);
    parse_ok("postgresql://u@h/d", NULL, NULL);
    assert_param("user", "u");
    assert_param("password", NULL);
    assert_param("host", "h");
    parse_ok("postgresql://[::1]:5433/d", NULL, NULL);
    assert_param("host", "::1");
    assert_param("port", "5433");
    parse_ok("postgresql://[fe80::1%25eth0]/d", NULL, NULL);
    assert_param("host", "fe80::1%eth0");
    assert_param("port", NULL);
    parse_ok("postgresql://:7777/d", NULL, NULL);
    assert_param("host", NULL);
    assert_param("port", "7777");
}

static void test_percent_decoding(void **state)
{
    /* SQLAlchemy's grammar: a password may hold '/', '?' and ':' as they are; '@' and
     * '%' need escapes */
    parse_ok("postgresql://us%40er:p%40ss%2Fw:o/r?d@%2Frun%2Fpostgresql/my%20db", NULL, NULL);
    assert_param("user", "us@er");
    assert_param("password", "p@ss/w:o/r?d");
    assert_param("host", "/run/postgresql");
    assert_param("dbname", "my db");
    assert_string_equal(u.masked, "postgresql://us%40er:***@%2Frun%2Fpostgresql/my%20db");
    parse_ok("postgresql://h/d?application_name=zbso%20test&options=-c%20search_path%3Dx",
             NULL, NULL);
    assert_param("application_name", "zbso test");
    assert_param("options", "-c search_path=x");
}

static void test_query_parameters(void **state)
{
    parse_ok("postgresql://h/d?sslmode=require&connect_timeout=3&sslrootcert=%2Fca.pem&",
             NULL, NULL);
    assert_param("sslmode", "require");
    assert_param("connect_timeout", "3");
    assert_param("sslrootcert", "/ca.pem");
    /* asyncpg's ssl= spelling; a later key replaces an earlier one */
    parse_ok("postgresql+asyncpg://h/d?ssl=true", NULL, NULL);
    assert_param("sslmode", "require");
    parse_ok("postgresql://h/d?sslmode=disable&ssl=verify-full", NULL, NULL);
    assert_param("sslmode", "verify-full");
    parse_ok("postgresql://h:1/d?port=2&host=other", NULL, NULL);
    assert_param("port", "2");
    assert_param("host", "other");
    /* a password in the query is masked too */
    parse_ok("postgresql://u@h/d?password=qsecret&sslmode=prefer", NULL, NULL);
    assert_param("password", "qsecret");
    assert_string_equal(u.masked, "postgresql://u@h/d?password=***&sslmode=prefer");
}

static void test_user_password_filling(void **state)
{
    parse_ok("postgresql://h:5432/d", "envuser", "envpass");
    assert_param("user", "envuser");
    assert_param("password", "envpass");
    /* the URL's own win */
    parse_ok("postgresql://urluser:urlpass@h/d", "envuser", "envpass");
    assert_param("user", "urluser");
    assert_param("password", "urlpass");
    /* only what is missing is filled */
    parse_ok("postgresql://urluser@h/d", "envuser", "envpass");
    assert_param("user", "urluser");
    assert_param("password", "envpass");
    parse_ok("postgresql://:urlpass@h/d", "envuser", "envpass");
    assert_param("user", "envuser");
    assert_param("password", "urlpass");
    /* empty and NULL fill nothing */
    parse_ok("postgresql://h/d", "", NULL);
    assert_param("user", NULL);
    assert_param("password", NULL);
    /* a password given apart never shows in the masked URL */
    assert_null(strstr(u.masked, "envpass"));
    char big[PGURL_CRED_MAX + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    zbso_err err = {0};
    assert_int_equal(pgurl_parse("postgresql://h/d", NULL, big, &u, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "password"));
    assert_null(strstr(err.msg, "xxxx"));
}

static void test_bad_urls(void **state)
{
    parse_bad("mysql://u:pw@h/d", NULL, "\"mysql://u:***@h/d\"", "postgresql://", NULL);
    parse_bad("postgresql://u:topsecret@h:99999/d", "topsecret",
              "postgresql://u:***@h:99999/d", "port \"99999\"", "1 to 65535", NULL);
    parse_bad("postgresql://u:topsecret@h:abc/d", "topsecret", "the port is not a number", NULL);
    /* without "@host" a password reads as a port: masked, never shown */
    parse_bad("postgresql://alice:topsecret/d", "topsecret", "postgresql://alice:***/d",
              "the port is not a number", NULL);
    parse_bad("postgresql://alice:123456/d", "123456", "postgresql://alice:***/d", NULL);
    parse_bad("postgresql://u:topsecret@h:/d", "topsecret", "port \"\"", NULL);
    parse_bad("postgresql://u:topsecret@h:0/d", "topsecret", "port \"0\"", NULL);
    parse_bad("postgresql://u:top%zzsecret@h/d", "top%zzsecret", "password", "hex digits", NULL);
    parse_bad("postgresql://u:p@h/d%4", NULL, "database name \"d%4\"", NULL);
    parse_bad("postgresql://u:p@h/d%00x", NULL, "NUL", NULL);
    parse_bad("postgresql://u:topsecret@h/d?sslmode", "topsecret", "\"sslmode\"", "=value", NULL);
    parse_bad("postgresql://h/d?passwordqsecret", "qsecret", "without '=value'", NULL);
    parse_bad("postgresql://u:topsecret@h/d?bogus=1", "topsecret", "\"bogus\"",
              "not a PostgreSQL connection parameter", NULL);
    parse_bad("postgresql://u:topsecret@h/d?replication=1", "topsecret", "\"replication\"", NULL);
    parse_bad("postgresql://h/d?ssl=maybe", NULL, "ssl=\"maybe\"", NULL);
    parse_bad("postgresql://u:topsecret@h1,h%2C2/d", "topsecret", "%2C", NULL);
    parse_bad("postgresql://u:topsecret@h1:5432,h2:0/d", "topsecret", "port \"0\"", NULL);
    parse_bad("postgresql://u:topsecret@h1,h2,/d", "topsecret", "ends its host list", NULL);
    parse_bad("postgresql://u:topsecret@h1,[::1/d", "topsecret", "']'", NULL);
    parse_bad("postgresql://u@h1:1,h2:topsecret/d", "topsecret", "port is not a number", NULL);
    parse_bad("postgresql://u:topsecret@[::1/d", "topsecret", "']'", NULL);
    parse_bad("postgresql://u:topsecret@[::1]x/d", "topsecret", "']'", NULL);
    parse_bad("postgresql://u:topsecret@h/d/e", "topsecret", "path \"/d/e\"", NULL);
    parse_bad("postgresql://h/d?password=qq%zz", "qq%zz", "value of password", NULL);
    zbso_err err = {0};
    assert_int_equal(pgurl_parse(NULL, NULL, NULL, &u, &err), ZBSO_EINVAL);

    /* longer than PGURL_URL_MAX */
    size_t n = PGURL_URL_MAX + 10;
    char *long_url = malloc(n + 1);
    assert_non_null(long_url);
    snprintf(long_url, n + 1, "postgresql://u:topsecret@h/");
    size_t len = strlen(long_url);
    memset(long_url + len, 'd', n - len);
    long_url[n] = '\0';
    parse_bad(long_url, "topsecret", "longer than", NULL);
    free(long_url);
}

/* libpq's multi-host form (issue 26 builds failover on it) and its postgres:// alias. */
static void test_multi_host(void **state)
{
    parse_ok("postgresql://u:pw@h1:5432,h2:5433/d?target_session_attrs=read-write"
             "&connect_timeout=2&sslmode=prefer", NULL, NULL);
    assert_param("host", "h1,h2");
    assert_param("port", "5432,5433");
    assert_param("dbname", "d");
    assert_param("target_session_attrs", "read-write");
    assert_param("connect_timeout", "2");
    assert_param("sslmode", "prefer");
    assert_string_equal(u.masked, "postgresql://u:***@h1:5432,h2:5433/d?target_session_attrs="
                                  "read-write&connect_timeout=2&sslmode=prefer");
    /* a port for some hosts only: libpq's default for the others (an empty list entry) */
    parse_ok("postgresql://h1,h2:5433,[::1]/d", NULL, NULL);
    assert_param("host", "h1,h2,::1");
    assert_param("port", ",5433,");
    parse_ok("postgresql://h1,h2/d", NULL, NULL);
    assert_param("host", "h1,h2");
    assert_param("port", NULL);
    parse_ok("postgresql://[::1]:5432,[fe80::1%25eth0]:5433/d", NULL, NULL);
    assert_param("host", "::1,fe80::1%eth0");
    assert_param("port", "5432,5433");
    parse_ok("postgres://bob:pw@db:5432/bso?target_session_attrs=primary", NULL, NULL);
    assert_param("user", "bob");
    assert_param("host", "db");
    assert_param("target_session_attrs", "primary");
    assert_string_equal(u.masked, "postgres://bob:***@db:5432/bso?target_session_attrs=primary");
    parse_bad("postgres+asyncpg://u:pw@h/d", NULL, "postgres+asyncpg://u:***@h/d", NULL);
    /* a bad port after a good one is masked from there on: it may be a password */
    char out[256];
    dburl_mask("postgresql://u@h1:1,h2:s3cret/d", out, sizeof out);
    assert_string_equal(out, "postgresql://u@h1:1,h2:***/d");
    dburl_mask("postgresql://u:pw@[::1]:nope/d", out, sizeof out);
    assert_string_equal(out, "postgresql://u:***@[::1]:***/d");
}

static void test_too_many_params(void **state)
{
    char url[1024];
    size_t len = (size_t)snprintf(url, sizeof url, "postgresql://u:p@h:1/d?");
    /* 5 from the authority and path + 20 distinct query keywords = 25 > 24 */
    static const char *const keys[] = {
        "passfile", "channel_binding", "connect_timeout", "client_encoding", "options",
        "application_name", "fallback_application_name", "keepalives", "keepalives_idle",
        "keepalives_interval", "keepalives_count", "tcp_user_timeout", "gssencmode",
        "sslmode", "sslcompression", "sslcert", "sslkey", "sslrootcert", "sslcrl", "sslcrldir",
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        len += (size_t)snprintf(url + len, sizeof url - len, "%s=1&", keys[i]);
    parse_bad(url, NULL, "more than 24", NULL);
}

static void test_mask(void **state)
{
    char out[256];
    dburl_mask("postgresql://u:pw@h/d", out, sizeof out);
    assert_string_equal(out, "postgresql://u:***@h/d");
    dburl_mask("postgresql://u@h/d", out, sizeof out);
    assert_string_equal(out, "postgresql://u@h/d");
    dburl_mask("postgresql://h:5432/d", out, sizeof out);
    assert_string_equal(out, "postgresql://h:5432/d");
    dburl_mask("sqlite:///x.db", out, sizeof out);
    assert_string_equal(out, "sqlite:///x.db");
    dburl_mask("postgresql://u:p%40w@h/d?a=1&pass%77ord=zz&sslmode=require", out, sizeof out);
    assert_string_equal(out, "postgresql://u:***@h/d?a=***&pass%77ord=***&sslmode=require");
    dburl_mask("no scheme?password=x", out, sizeof out);
    assert_string_equal(out, "no scheme?password=***");
    dburl_mask("postgresql?//u:pw@h/d?sslmode=x&passwordpw&&", out, sizeof out);
    assert_string_equal(out, "postgresql?//u:***@h/d?sslmode=x&***&&");
    dburl_mask("postgresql://u:p\x1b[31m@h\n/d", out, sizeof out);
    assert_string_equal(out, "postgresql://u:***@h?/d");
    dburl_mask("postgresql://u:pw@h/d", out, 8);
    assert_string_equal(out, "postgre");
    dburl_mask("postgresql://u:pw@h/d", out, 17);
    assert_string_equal(out, "postgresql://u:*");
    dburl_mask(NULL, out, sizeof out);
    assert_string_equal(out, "");
    /* an empty password is masked once, not forever (the fuzz finding: an endless loop) */
    dburl_mask("postgresql://zeus:@db.example.com/zeus", out, sizeof out);
    assert_string_equal(out, "postgresql://zeus:***@db.example.com/zeus");
    dburl_mask("x:@y", out, sizeof out);
    assert_string_equal(out, "x:***@y");
    /* a second '@' (unescaped in a password or a user name): up to the last is masked */
    dburl_mask("postgresql://u:p@ss@h/d", out, sizeof out);
    assert_string_equal(out, "postgresql://u:***@***@h/d");
    dburl_mask("postgresql://u@srv:secret@h:5432/d", out, sizeof out);
    assert_string_equal(out, "postgresql://u@***@h:5432/d");
    /* a port that is not 1-5 digits, also after "...@" */
    dburl_mask("postgresql://u:pw@h:abc/d", out, sizeof out);
    assert_string_equal(out, "postgresql://u:***@h:***/d");
    /* MySQL URLs' settings (myurl.h) are no secrets */
    dburl_mask("mysql://u:pw@h/d?charset=x&unix_socket=/s&ssl-mode=y&ssl_key=/k", out,
               sizeof out);
    assert_string_equal(out, "mysql://u:***@h/d?charset=x&unix_socket=/s&ssl-mode=y&ssl_key=/k");
}

/* Every prefix and a sample of byte flips of some URLs parse or fail cleanly, and no
 * masked form or message shows the password. */
static void test_any_bytes(void **state)
{
    static const char *const seeds[] = {
        "postgresql://alice:Zq9secretZq9@[::1]:5432/db?sslmode=require&password=Zq9secretZq9",
        "postgresql+asyncpg://u:Zq9secretZq9@h%2F:1/d%20b?ssl=true&options=-c%20x%3Dy",
    };
    char buf[256];
    zbso_err err;
    for (size_t s = 0; s < 2; s++) {
        size_t n = strlen(seeds[s]);
        for (size_t cut = 0; cut <= n; cut++) {
            memcpy(buf, seeds[s], cut);
            buf[cut] = '\0';
            err.msg[0] = '\0';
            pgurl_parse(buf, "x", "y", &u, &err);
            assert_null(strstr(err.msg, "Zq9secretZq9"));
            assert_null(strstr(u.masked, "Zq9secretZq9"));
            /* The ':' before a password and the '&' before password= are where a flip
             * makes the secret a user name or part of another value: no rule can tell. */
            bool inherent = cut == (size_t)(strstr(seeds[s], ":Zq9") - seeds[s]) ||
                            cut == (size_t)(strstr(seeds[s], "&password") - seeds[s]);
            for (unsigned b = 1; b < 256; b += 37) {
                if (cut == n || inherent)
                    break;
                memcpy(buf, seeds[s], n + 1);
                buf[cut] = (char)b;
                err.msg[0] = '\0';
                pgurl_parse(buf, NULL, NULL, &u, &err);
                assert_true(strlen(u.masked) <= PGURL_URL_MAX);
                if (strstr(err.msg, "Zq9secretZq9") != NULL)
                    fail_msg("flip %zu to %u: \"%s\" shows the password", cut, b, err.msg);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_url),
        cmocka_unit_test(test_asyncpg_spelling),
        cmocka_unit_test(test_minimal_urls),
        cmocka_unit_test(test_percent_decoding),
        cmocka_unit_test(test_query_parameters),
        cmocka_unit_test(test_user_password_filling),
        cmocka_unit_test(test_bad_urls),
        cmocka_unit_test(test_multi_host),
        cmocka_unit_test(test_too_many_params),
        cmocka_unit_test(test_mask),
        cmocka_unit_test(test_any_bytes),
    };
    return cmocka_run_group_tests_name("pgurl", tests, NULL, NULL);
}
