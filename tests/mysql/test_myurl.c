/* test_myurl.c: myurl_parse on good and bad MySQL/MariaDB URLs: every scheme spelling,
 * Zeus's compose URL, user/password filling, percent-decoding, query options, bounds, and
 * messages that name the URL with its password masked. Pure: needs no MariaDB. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/netdb/myurl.h"
#include "store/netdb/pgurl.h"

static myurl u; /* large; one at a time */

#define SECRET "Zq9secretZq9"

static void parse_ok(const char *url, const char *user, const char *password)
{
    zbso_err err = {0};
    int rc = myurl_parse(url, user, password, &u, &err);
    if (rc != 0)
        fail_msg("myurl_parse(%s) = %d: %s", url, rc, err.msg);
}

/* s is NULL, or NUL-terminated inside u.text (what the header promises). */
static bool inside_text(const char *s)
{
    if (s == NULL)
        return true;
    if (s < u.text || s >= u.text + u.text_len)
        return false;
    return memchr(s, '\0', (size_t)(u.text + u.text_len - s)) != NULL;
}

static void assert_inside(void)
{
    const char *const fields[] = {u.user, u.password, u.host, u.database, u.unix_socket,
                                  u.charset, u.ssl_ca, u.ssl_cert, u.ssl_key};
    assert_true(u.text_len <= sizeof u.text);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (!inside_text(fields[i]))
            fail_msg("field %zu does not point into the struct's text", i);
    assert_non_null(u.database);
    assert_non_null(u.charset);
}

/* Expects want (NULL: none) in field got. */
static void assert_str(const char *got, const char *want)
{
    if (want == NULL) {
        if (got != NULL)
            fail_msg("\"%s\", want none", got);
        return;
    }
    if (got == NULL)
        fail_msg("missing, want \"%s\"", want);
    assert_string_equal(got, want);
}

/* Parses url expecting ZBSO_EINVAL with a message that starts with the masked URL, holds
 * each of the NULL-terminated words, and never the secret (when not NULL). */
static void parse_bad(const char *url, const char *secret, ...)
{
    zbso_err err = {0};
    char want[ZBSO_ERR_MSG_MAX], masked[MYURL_URL_MAX + 1];
    va_list ap;
    assert_int_equal(myurl_parse(url, NULL, NULL, &u, &err), ZBSO_EINVAL);
    assert_int_equal(err.code, ZBSO_EINVAL);
    if (url != NULL) {
        dburl_mask(url, masked, sizeof masked);
        assert_string_equal(u.masked, masked);
        snprintf(want, sizeof want, "database URL \"%.200s\": ", masked);
        if (strncmp(err.msg, want, strlen(want)) != 0)
            fail_msg("message \"%s\" does not start with \"%s\"", err.msg, want);
    }
    va_start(ap, secret);
    for (const char *w = va_arg(ap, const char *); w != NULL; w = va_arg(ap, const char *))
        if (strstr(err.msg, w) == NULL)
            fail_msg("message \"%s\" lacks \"%s\"", err.msg, w);
    va_end(ap);
    if (secret != NULL && strstr(err.msg, secret) != NULL)
        fail_msg("message \"%s\" shows the password", err.msg);
    if (secret != NULL && strstr(u.masked, secret) != NULL)
        fail_msg("masked \"%s\" shows the password", u.masked);
}

static void test_zeus_compose_url(void **state)
{
    parse_ok("mysql+asyncmy://me:secret@localhost:3306/Zeus", NULL, NULL);
    assert_inside();
    assert_str(u.user, "me");
    assert_str(u.password, "secret");
    assert_str(u.host, "localhost");
    assert_int_equal(u.port, 3306);
    assert_str(u.database, "Zeus");
    assert_str(u.unix_socket, NULL);
    assert_str(u.charset, "utf8mb4");
    assert_int_equal(u.ssl_mode, MYURL_SSL_DEFAULT);
    assert_str(u.ssl_ca, NULL);
    assert_str(u.ssl_cert, NULL);
    assert_str(u.ssl_key, NULL);
    assert_int_equal(u.connect_timeout, 0);
    assert_string_equal(u.masked, "mysql+asyncmy://me:***@localhost:3306/Zeus");
    /* the environment fills nothing the URL gave */
    parse_ok("mysql+asyncmy://me:secret@localhost:3306/Zeus", "envuser", "envpass");
    assert_str(u.user, "me");
    assert_str(u.password, "secret");
}

static void test_every_scheme(void **state)
{
    static const char *const schemes[] = {
        "mysql", "mysql+asyncmy", "mysql+aiomysql", "mysql+pymysql", "mysql+mysqldb",
        "mysql+mysqlconnector", "mariadb", "mariadb+mariadbconnector",
    };
    char url[128], masked[128];
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        snprintf(url, sizeof url, "%s://u:pw@db.example:3307/bso", schemes[i]);
        parse_ok(url, NULL, NULL);
        assert_str(u.user, "u");
        assert_str(u.password, "pw");
        assert_str(u.host, "db.example");
        assert_int_equal(u.port, 3307);
        assert_str(u.database, "bso");
        snprintf(masked, sizeof masked, "%s://u:***@db.example:3307/bso", schemes[i]);
        assert_string_equal(u.masked, masked);
    }
    static const char *const refused[] = {
        "postgresql://u:" SECRET "@h/d", "MYSQL://u:" SECRET "@h/d",
        "Mysql+asyncmy://u:" SECRET "@h/d", "mysql+asyncpg://u:" SECRET "@h/d",
        "mariadb+asyncmy://u:" SECRET "@h/d", "mysqlx://u:" SECRET "@h/d",
        "mysql:/u:" SECRET "@h/d", "mysql:u:" SECRET "@h/d", " mysql://u:" SECRET "@h/d",
        "mysql+://u:" SECRET "@h/d", "sqlite:///x.db", "", "mysql",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        parse_bad(refused[i], SECRET, "is not a MySQL URL", "mysql+asyncmy://",
                  "mariadb+mariadbconnector://", NULL);
    parse_bad(NULL, NULL, "missing", NULL);
}

static void test_minimal_urls(void **state)
{
    parse_ok("mysql:///only_db", NULL, NULL);
    assert_inside();
    assert_str(u.user, NULL);
    assert_str(u.password, NULL);
    assert_str(u.host, NULL);
    assert_int_equal(u.port, 0);
    assert_str(u.database, "only_db");
    parse_ok("mysql://h/d", NULL, NULL);
    assert_str(u.host, "h");
    assert_str(u.user, NULL);
    parse_ok("mysql://u@h/d", NULL, NULL);
    assert_str(u.user, "u");
    assert_str(u.password, NULL);
    parse_ok("mysql://:7777/d", NULL, NULL);
    assert_str(u.host, NULL);
    assert_int_equal(u.port, 7777);
    parse_ok("mysql://h:1/d", NULL, NULL);
    assert_int_equal(u.port, 1);
    parse_ok("mysql://h:65535/d", NULL, NULL);
    assert_int_equal(u.port, 65535);
    parse_ok("mysql://h:00080/d", NULL, NULL);
    assert_int_equal(u.port, 80);
    /* an empty user or password is none: the environment may fill it */
    parse_ok("mysql://u:@h/d", NULL, NULL);
    assert_str(u.user, "u");
    assert_str(u.password, NULL);
    assert_string_equal(u.masked, "mysql://u:***@h/d");
    parse_ok("mysql://:pw@h/d", NULL, NULL);
    assert_str(u.user, NULL);
    assert_str(u.password, "pw");
    parse_ok("mysql://@h/d", NULL, NULL);
    assert_str(u.user, NULL);
    assert_str(u.host, "h");
    /* an empty query, empty parts of one */
    parse_ok("mysql://h/d?", NULL, NULL);
    parse_ok("mysql://h/d?&&charset=latin1&", NULL, NULL);
    assert_str(u.charset, "latin1");
}

static void test_ipv6(void **state)
{
    parse_ok("mariadb://u:pw@[::1]:3307/d", NULL, NULL);
    assert_str(u.host, "::1");
    assert_int_equal(u.port, 3307);
    assert_string_equal(u.masked, "mariadb://u:***@[::1]:3307/d");
    parse_ok("mysql://[2001:db8::5]/d", NULL, NULL);
    assert_str(u.host, "2001:db8::5");
    assert_int_equal(u.port, 0);
    parse_ok("mysql://[fe80::1%25eth0]:3306/d", NULL, NULL);
    assert_str(u.host, "fe80::1%eth0");
    parse_bad("mysql://u:" SECRET "@[::1/d", SECRET, "'['", "']'", NULL);
    parse_bad("mysql://u:" SECRET "@[::1]x/d", SECRET, "between the host's ']'", NULL);
    parse_bad("mysql://u:" SECRET "@[::1]:99999/d", SECRET, "port \"99999\"", NULL);
}

static void test_percent_decoding(void **state)
{
    /* SQLAlchemy's grammar: a password may hold '/', '?' and ':' as they are; '@' and
     * '%' need escapes; '+' stays '+' */
    parse_ok("mysql+pymysql://us%40er:p%40ss%2Fw:o/r?d+%25@%6Cocalhost/my%20db", NULL, NULL);
    assert_str(u.user, "us@er");
    assert_str(u.password, "p@ss/w:o/r?d+%");
    assert_str(u.host, "localhost");
    assert_str(u.database, "my db");
    assert_string_equal(u.masked, "mysql+pymysql://us%40er:***@%6Cocalhost/my%20db");
    parse_ok("mysql://u+x:a+b@h/d+e", NULL, NULL);
    assert_str(u.user, "u+x");
    assert_str(u.password, "a+b");
    assert_str(u.database, "d+e");
    /* keys and values of the query are decoded too */
    parse_ok("mysql://h/d?unix%5Fsocket=%2Frun%2Fmysqld%2Fmysqld.sock&ssl%2Dmode=re%71uired",
             NULL, NULL);
    assert_str(u.unix_socket, "/run/mysqld/mysqld.sock");
    assert_int_equal(u.ssl_mode, MYURL_SSL_REQUIRED);
    /* an escape is decoded once: "%2541" is "%41", not "A" */
    parse_ok("mysql://h/d%2541", NULL, NULL);
    assert_str(u.database, "d%41");
    parse_ok("mysql://h/d?ssl_ca=%2541", NULL, NULL);
    assert_str(u.ssl_ca, "%41");
    parse_bad("mysql://h/d?ssl-mode=%2544ISABLED", NULL, "ssl-mode \"%2544ISABLED\"", NULL);

    parse_bad("mysql://u:top%zz" SECRET "@h/d", SECRET, "the password has a '%'",
              "hex digits", NULL);
    parse_bad("mysql://u:" SECRET "%4@h/d", SECRET, "password", "hex digits", NULL);
    parse_bad("mysql://u:" SECRET "%00x@h/d", SECRET, "the password holds an escaped NUL",
              NULL);
    parse_bad("mysql://us%4:" SECRET "@h/d", SECRET, "the user \"us%4\" has a '%'", NULL);
    parse_bad("mysql://u:" SECRET "@h%zz/d", SECRET, "the host \"h%zz\"", NULL);
    parse_bad("mysql://u:" SECRET "@h/d%4", SECRET, "the database name \"d%4\"", NULL);
    parse_bad("mysql://u:" SECRET "@h/d%00", SECRET, "database name holds an escaped NUL",
              NULL);
    parse_bad("mysql://h/d?charset=%", NULL, "the value of charset \"%\" has a '%'", NULL);
    parse_bad("mysql://h/d?unix_socket=%00", NULL, "value of unix_socket holds an escaped NUL",
              NULL);
}

static void test_unix_socket(void **state)
{
    parse_ok("mysql://me:" SECRET "@localhost/Zeus?unix_socket=/run/mysqld/mysqld.sock",
             NULL, NULL);
    assert_str(u.host, "localhost");
    assert_str(u.unix_socket, "/run/mysqld/mysqld.sock");
    assert_str(u.database, "Zeus");
    /* the socket path is no secret: the masked URL shows it */
    assert_string_equal(u.masked,
                        "mysql://me:***@localhost/Zeus?unix_socket=/run/mysqld/mysqld.sock");
    parse_ok("mysql:///Zeus?unix_socket=%2Ftmp%2Fa%26b.sock", NULL, NULL);
    assert_str(u.unix_socket, "/tmp/a&b.sock");
    assert_str(u.host, NULL);
    parse_bad("mysql://h/d?unix_socket=", NULL, "unix_socket is empty", NULL);
    parse_bad("mysql://h/d?unix_socket", NULL, "\"unix_socket\" has no '=value'", NULL);
}

static void test_ssl_options(void **state)
{
    static const struct {
        const char *value;
        myurl_ssl mode;
        const char *name;
    } modes[] = {
        {"DISABLED", MYURL_SSL_DISABLED, "DISABLED"},
        {"preferred", MYURL_SSL_PREFERRED, "PREFERRED"},
        {"Required", MYURL_SSL_REQUIRED, "REQUIRED"},
        {"verify_ca", MYURL_SSL_VERIFY_CA, "VERIFY_CA"},
        {"VERIFY_identity", MYURL_SSL_VERIFY_IDENTITY, "VERIFY_IDENTITY"},
    };
    char url[160];
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        for (int spelling = 0; spelling < 2; spelling++) {
            snprintf(url, sizeof url, "mysql://h/d?%s=%s", spelling ? "ssl_mode" : "ssl-mode",
                     modes[i].value);
            parse_ok(url, NULL, NULL);
            assert_int_equal(u.ssl_mode, modes[i].mode);
            assert_string_equal(myurl_ssl_name(u.ssl_mode), modes[i].name);
        }
    }
    assert_string_equal(myurl_ssl_name(MYURL_SSL_DEFAULT), "");

    parse_ok("mysql://u:" SECRET "@h/d?ssl-mode=VERIFY_CA&ssl_ca=/etc/ca.pem&ssl-cert=%2Fc.pem"
             "&ssl_key=/k.pem", NULL, NULL);
    assert_inside();
    assert_int_equal(u.ssl_mode, MYURL_SSL_VERIFY_CA);
    assert_str(u.ssl_ca, "/etc/ca.pem");
    assert_str(u.ssl_cert, "/c.pem");
    assert_str(u.ssl_key, "/k.pem");
    /* the ssl settings are no secret (the key is a path): the masked URL shows them */
    assert_string_equal(u.masked, "mysql://u:***@h/d?ssl-mode=VERIFY_CA&ssl_ca=/etc/ca.pem"
                        "&ssl-cert=%2Fc.pem&ssl_key=/k.pem");
    /* every spelling; a later key replaces an earlier one */
    parse_ok("mysql://h/d?ssl_ca=/a&ssl-ca=/b&ssl-key=/k1&ssl_key=/k2&ssl_cert=/c1"
             "&ssl-cert=/c2&ssl_mode=DISABLED&ssl-mode=required", NULL, NULL);
    assert_str(u.ssl_ca, "/b");
    assert_str(u.ssl_key, "/k2");
    assert_str(u.ssl_cert, "/c2");
    assert_int_equal(u.ssl_mode, MYURL_SSL_REQUIRED);

    parse_bad("mysql://u:" SECRET "@h/d?ssl-mode=verify-full", SECRET,
              "ssl-mode \"verify-full\" is none of DISABLED, PREFERRED, REQUIRED, VERIFY_CA,"
              " VERIFY_IDENTITY", NULL);
    parse_bad("mysql://h/d?ssl_mode=", NULL, "ssl-mode \"\" is none of", NULL);
    parse_bad("mysql://h/d?ssl-mode=REQUIRED%20", NULL, "ssl-mode \"REQUIRED%20\"", NULL);
    parse_bad("mysql://h/d?ssl_ca=", NULL, "ssl_ca is empty", NULL);
    parse_bad("mysql://h/d?ssl-cert=", NULL, "ssl_cert is empty", NULL);
    parse_bad("mysql://h/d?ssl_key=", NULL, "ssl_key is empty", NULL);
    /* asyncpg's and libpq's spellings are PostgreSQL's */
    parse_bad("mysql://h/d?ssl=true", NULL, "\"ssl\" is not a MySQL URL parameter", NULL);
    parse_bad("mysql://h/d?sslmode=require", NULL, "\"sslmode\" is not a MySQL URL parameter",
              NULL);
}

static void test_charset(void **state)
{
    parse_ok("mysql://h/d", NULL, NULL);
    assert_str(u.charset, "utf8mb4");
    parse_ok("mysql://h/d?charset=latin1", NULL, NULL);
    assert_str(u.charset, "latin1");
    assert_inside();
    parse_ok("mysql://h/d?charset=UTF8MB4&charset=utf8mb3", NULL, NULL);
    assert_str(u.charset, "utf8mb3");
    assert_string_equal(u.masked, "mysql://h/d?charset=UTF8MB4&charset=utf8mb3");
    parse_bad("mysql://h/d?charset=utf-8", NULL, "charset \"utf-8\" is not a character set",
              NULL);
    parse_bad("mysql://h/d?charset=", NULL, "charset \"\"", NULL);
    parse_bad("mysql://h/d?charset=utf8%3Bx", NULL, "charset \"utf8%3Bx\"", NULL);
    parse_bad("mysql://h/d?charset=utf8mb4%C3%A9", NULL, "charset \"utf8mb4%C3%A9\"", NULL);
}

static void test_timeouts(void **state)
{
    parse_ok("mysql://h/d?connect_timeout=1", NULL, NULL);
    assert_int_equal(u.connect_timeout, 1);
    parse_ok("mysql://h/d?connect_timeout=3600", NULL, NULL);
    assert_int_equal(u.connect_timeout, 3600);
    parse_ok("mysql://h/d?connect_timeout=10&connect_timeout=0010", NULL, NULL);
    assert_int_equal(u.connect_timeout, 10);
    assert_string_equal(u.masked, "mysql://h/d?connect_timeout=10&connect_timeout=0010");
    static const char *const bad[] = {"0", "3601", "-1", "", "abc", "1.5", " 5", "+5",
                                      "99999999999999999999999", "4294967297", "10s"};
    char url[128], word[96];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(url, sizeof url, "mysql://u:" SECRET "@h/d?connect_timeout=%s", bad[i]);
        snprintf(word, sizeof word, "connect_timeout \"%s\" is not a number of seconds from 1"
                 " to 3600", bad[i]);
        parse_bad(url, SECRET, word, NULL);
    }
}

static void test_user_password_filling(void **state)
{
    parse_ok("mysql://h:3306/d", "envuser", "envpass");
    assert_inside();
    assert_str(u.user, "envuser");
    assert_str(u.password, "envpass");
    /* a password given apart never shows in the masked URL */
    assert_null(strstr(u.masked, "envpass"));
    /* the URL's own win */
    parse_ok("mysql://urluser:urlpass@h/d", "envuser", "envpass");
    assert_str(u.user, "urluser");
    assert_str(u.password, "urlpass");
    /* only what is missing is filled */
    parse_ok("mysql://urluser@h/d", "envuser", "envpass");
    assert_str(u.user, "urluser");
    assert_str(u.password, "envpass");
    parse_ok("mysql://:urlpass@h/d", "envuser", "envpass");
    assert_str(u.user, "envuser");
    assert_str(u.password, "urlpass");
    parse_ok("mysql://urluser:@h/d", NULL, "envpass");
    assert_str(u.password, "envpass");
    /* empty and NULL fill nothing */
    parse_ok("mysql://h/d", "", NULL);
    assert_str(u.user, NULL);
    assert_str(u.password, NULL);
    parse_ok("mysql://h/d", NULL, "");
    assert_str(u.password, NULL);
    /* taken as given: no percent-decoding outside the URL */
    parse_ok("mysql://h/d", "a%40b", "p%zz");
    assert_str(u.user, "a%40b");
    assert_str(u.password, "p%zz");
    /* a bad URL is refused whatever the environment holds */
    zbso_err err = {0};
    assert_int_equal(myurl_parse("mysql://h", "envuser", "envpass", &u, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "names no database"));
    assert_null(strstr(err.msg, "envpass"));
}

/* A string of n bytes of c. */
static char *repeat(char c, size_t n)
{
    char *s = malloc(n + 1);
    assert_non_null(s);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

static void test_bounds(void **state)
{
    /* MYURL_URL_MAX bytes parse; one more does not */
    char *url = malloc(MYURL_URL_MAX + 2);
    assert_non_null(url);
    int head = snprintf(url, MYURL_URL_MAX + 2, "mysql://u:" SECRET "@h/");
    memset(url + head, 'd', MYURL_URL_MAX - (size_t)head);
    url[MYURL_URL_MAX] = '\0';
    parse_ok(url, NULL, NULL);
    assert_int_equal(strlen(u.database), MYURL_URL_MAX - (size_t)head);
    assert_int_equal(strlen(u.masked), MYURL_URL_MAX - strlen(SECRET) + 3);
    url[MYURL_URL_MAX] = 'd';
    url[MYURL_URL_MAX + 1] = '\0';
    parse_bad(url, SECRET, "is longer than 2048 bytes", NULL);
    /* the longest URL of the most parts, with the longest credentials given apart */
    head = snprintf(url, MYURL_URL_MAX + 2, "mariadb+mariadbconnector://");
    size_t part = (MYURL_URL_MAX - (size_t)head - 100) / 4;
    char *a = repeat('a', part);
    snprintf(url + head, MYURL_URL_MAX + 2 - (size_t)head,
             "%s@%s/%s?unix_socket=%s&charset=x&ssl_ca=x&ssl_cert=x&ssl_key=x&ssl-mode=DISABLED",
             a, a, a, a);
    assert_true(strlen(url) <= MYURL_URL_MAX);
    char *cred = repeat('c', MYURL_CRED_MAX);
    parse_ok(url, NULL, cred);
    assert_inside();
    assert_str(u.user, a);
    assert_str(u.password, cred);
    assert_str(u.unix_socket, a);
    parse_ok("mysql://h/d", cred, cred);
    assert_inside();
    assert_int_equal(strlen(u.user), MYURL_CRED_MAX);
    assert_int_equal(strlen(u.password), MYURL_CRED_MAX);
    free(cred);
    /* a user or password given apart that is too long is refused without showing it */
    cred = repeat('x', MYURL_CRED_MAX + 1);
    zbso_err err = {0};
    assert_int_equal(myurl_parse("mysql://h/d", NULL, cred, &u, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "database password given apart from the URL is longer"
                           " than 1024 bytes"));
    assert_null(strstr(err.msg, "xxxx"));
    assert_int_equal(myurl_parse("mysql://h/d", cred, NULL, &u, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "database user given apart"));
    /* not looked at when the URL has its own */
    parse_ok("mysql://u:p@h/d", cred, cred);
    free(cred);
    /* a long bad value is cut short in the message */
    char *v = repeat('v', 500);
    snprintf(url, MYURL_URL_MAX + 2, "mysql://h/d?charset=%s-", v);
    zbso_err e2 = {0};
    assert_int_equal(myurl_parse(url, NULL, NULL, &u, &e2), ZBSO_EINVAL);
    assert_non_null(strstr(e2.msg, "...\" is not a character set"));
    assert_true(strlen(e2.msg) < sizeof e2.msg - 1);
    free(v);
    free(a);
    free(url);
}

static void test_refusals(void **state)
{
    parse_bad("mysql://u:" SECRET "@h", SECRET, "names no database", NULL);
    parse_bad("mysql://u:" SECRET "@h/", SECRET, "names no database", NULL);
    parse_bad("mysql://u:" SECRET "@h?charset=x", SECRET, "names no database", NULL);
    parse_bad("mysql://u:" SECRET "@h/d/e", SECRET, "path \"/d/e\" is more than a database",
              NULL);
    parse_bad("mysql://u:" SECRET "@h:99999/d", SECRET, "mysql://u:***@h:99999/d",
              "port \"99999\" is not a number from 1 to 65535", NULL);
    parse_bad("mysql://u:" SECRET "@h:0/d", SECRET, "port \"0\"", NULL);
    parse_bad("mysql://u:" SECRET "@h:/d", SECRET, "port \"\"", NULL);
    parse_bad("mysql://u:" SECRET "@h:65536/d", SECRET, "port \"65536\"", NULL);
    parse_bad("mysql://u:" SECRET "@h:3306x/d", SECRET, "mysql://u:***@h:***/d",
              "the port is not a number from 1 to 65535 (masked: it may be part of a"
              " password)", NULL);
    parse_bad("mysql://u:" SECRET "@h:-1/d", SECRET, "the port is not a number", NULL);
    /* without "@host" a password reads as a port: masked, never shown */
    parse_bad("mysql://alice:" SECRET "/d", SECRET, "mysql://alice:***/d",
              "the port is not a number", NULL);
    parse_bad("mysql://alice:123456/d", "123456", "mysql://alice:***/d", NULL);
    /* an unescaped '@' in a password or a user name: the text up to the last '@' is
     * masked, since it may hold the rest of the password */
    parse_bad("mysql://u:ab@" SECRET "@h/d", SECRET, "mysql://u:***@***@h/d",
              "escape an '@' in a user name or password as %40", NULL);
    parse_bad("mysql://user@server:" SECRET "@h:3306/d", SECRET,
              "mysql://user@***@h:3306/d", "as %40", NULL);
    parse_bad("mysql://u:p@@h/d", NULL, "mysql://u:***@@h/d", "as %40", NULL);
    parse_bad("mysql://u:" SECRET "@h1,h2/d", SECRET, "several hosts", NULL);
    parse_bad("mysql://u:" SECRET "@h:1,h2:2/d", SECRET, "several hosts", NULL);
    /* unknown keys are named; their values are masked (one may be a password) */
    parse_bad("mysql://u:" SECRET "@h/d?bogus=" SECRET, SECRET, "mysql://u:***@h/d?bogus=***",
              "\"bogus\" is not a MySQL URL parameter", "charset, unix_socket, ssl-mode",
              NULL);
    parse_bad("mysql://u@h/d?password=" SECRET, SECRET, "?password=***",
              "\"password\" is not a MySQL URL parameter", NULL);
    parse_bad("mysql://u@h/d?pass%77ord=" SECRET, SECRET, "\"pass%77ord\"", NULL);
    parse_bad("mysql://u@h/d?=" SECRET, SECRET, "\"\" is not a MySQL URL parameter", NULL);
    /* a part without '=' is named only when it is a key */
    parse_bad("mysql://u@h/d?password" SECRET, SECRET, "the query has a part without '=value'",
              NULL);
    parse_bad("mysql://u@h/d?ssl-mode&charset=x", NULL, "\"ssl-mode\" has no '=value'", NULL);
    /* control bytes in what a message shows are '?' */
    parse_bad("mysql://h/d?charset=\x1b[31m", NULL, "charset \"?[31m\"", NULL);
    parse_bad("mysql://h\x01\x7f%zz/d", NULL, "the host \"h??%zz\"", NULL);
}

static void test_mask(void **state)
{
    /* one rule: myurl's masked is dburl_mask's */
    static const char *const urls[] = {
        "mysql+asyncmy://me:secret@localhost:3306/Zeus",
        "mysql://u:p@h/d?charset=x&unix_socket=/s&ssl-mode=REQUIRED&ssl_ca=/ca&bogus=v",
        "mysql://u:p@h", "mariadb://u@h/d?x", "mysql://alice:secret/d",
    };
    char masked[MYURL_URL_MAX + 1];
    zbso_err err;
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        myurl_parse(urls[i], NULL, NULL, &u, &err);
        dburl_mask(urls[i], masked, sizeof masked);
        assert_string_equal(u.masked, masked);
        assert_null(strstr(masked, "secret"));
    }
    dburl_mask(urls[1], masked, sizeof masked);
    assert_string_equal(masked, "mysql://u:***@h/d?charset=x&unix_socket=/s&ssl-mode=REQUIRED"
                        "&ssl_ca=/ca&bogus=***");
    /* the masked URL parses back to "***", never to the password */
    parse_ok("mysql://me:" SECRET "@h/d", NULL, NULL);
    char again[MYURL_URL_MAX + 1];
    memcpy(again, u.masked, sizeof again);
    parse_ok(again, NULL, NULL);
    assert_str(u.password, "***");
}

/* Every byte 0x01..0xff at every place of some URLs (put in, and put over what is there)
 * parses or fails cleanly; no masked form or message shows the password. */
static void test_any_bytes(void **state)
{
    static const char *const seeds[] = {
        "mysql+asyncmy://me:" SECRET "@[::1]:3306/Zeus?charset=utf8mb4&ssl-mode=REQUIRED",
        "mariadb://u:" SECRET "@h%2F:1/d%20b?unix_socket=/s&connect_timeout=5&ssl_ca=%2Fc",
    };
    char buf[256];
    zbso_err err;
    size_t parsed = 0;
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        size_t n = strlen(seeds[s]);
        size_t pw = (size_t)(strstr(seeds[s], SECRET) - seeds[s]);
        for (size_t at = 0; at <= n; at++) {
            for (unsigned b = 1; b < 256; b++) {
                for (int over = 0; over < 2; over++) {
                    if (over && at == n)
                        continue;
                    /* The ':' before the password replaced makes it part of the user
                     * name; a '/', '?' or '@' in the user name makes it a path, a query
                     * or a host (as in SQLAlchemy's grammar): no rule can tell those
                     * from a password. */
                    if ((over && at == pw - 1) || (at < pw && strchr(":/?@", (int)b) != NULL))
                        continue;
                    memcpy(buf, seeds[s], at);
                    buf[at] = (char)b;
                    memcpy(buf + at + 1, seeds[s] + at + over, n - at - over + 1);
                    err.msg[0] = '\0';
                    int rc = myurl_parse(buf, NULL, NULL, &u, &err);
                    assert_true(rc == 0 || rc == ZBSO_EINVAL);
                    if (strstr(u.masked, SECRET) != NULL || strstr(err.msg, SECRET) != NULL)
                        fail_msg("byte %u at %zu (over %d): \"%s\" / \"%s\"", b, at, over,
                                 u.masked, err.msg);
                    if (rc == 0) {
                        assert_inside();
                        parsed++;
                    }
                }
            }
        }
    }
    assert_true(parsed > 1000);
    /* every byte but '@' and '%' in a password, and every byte but '/', '?', '%' in a
     * database name, as they are */
    char pw[256], db[256], url[600];
    size_t np = 0, nd = 0;
    for (unsigned b = 1; b < 256; b++) {
        if (b != '@' && b != '%')
            pw[np++] = (char)b;
        if (b != '/' && b != '?' && b != '%')
            db[nd++] = (char)b;
    }
    pw[np] = '\0';
    db[nd] = '\0';
    snprintf(url, sizeof url, "mysql://u:%s@h/%s", pw, db);
    parse_ok(url, NULL, NULL);
    assert_str(u.password, pw);
    assert_str(u.database, db);
    assert_str(u.host, "h");
    assert_string_equal(u.user, "u");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zeus_compose_url),
        cmocka_unit_test(test_every_scheme),
        cmocka_unit_test(test_minimal_urls),
        cmocka_unit_test(test_ipv6),
        cmocka_unit_test(test_percent_decoding),
        cmocka_unit_test(test_unix_socket),
        cmocka_unit_test(test_ssl_options),
        cmocka_unit_test(test_charset),
        cmocka_unit_test(test_timeouts),
        cmocka_unit_test(test_user_password_filling),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_mask),
        cmocka_unit_test(test_any_bytes),
    };
    return cmocka_run_group_tests_name("myurl", tests, NULL, NULL);
}
