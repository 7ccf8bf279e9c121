/* fuzz_mysql_url.c: MySQL/MariaDB database URLs (SPEC §4) through myurl_parse, as the
 * MariaDB backend takes them from --db, the environment or a `.env` file. The input is
 * "URL[\nUSER[\nPASSWORD]]" (USER and PASSWORD stand for ZEUS_BSO_DB_USER /
 * ZEUS_BSO_DB_PASSWORD). Checks that the masked URL is dburl_mask's and every message starts
 * with it; that a parsed URL has a known scheme, its strings NUL-terminated inside the
 * struct, a database, a port and a timeout in range; that USER/PASSWORD fill only what the
 * URL left out; that neither the masked URL nor any message depends on a password (the
 * URL's, as dburl_split reads it or as SQLAlchemy does, or the one given apart) beyond a
 * fixed text, and that the masked URL never parses back to the password it hid. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "store/netdb/myurl.h"
#include "store/netdb/pgurl.h"

static const char *const schemes[] = {
    "mysql://", "mysql+asyncmy://", "mysql+aiomysql://", "mysql+pymysql://",
    "mysql+mysqldb://", "mysql+mysqlconnector://", "mariadb://",
    "mariadb+mariadbconnector://",
};

/* What a message may say after the masked URL when a password decides it: no text of the
 * password, the host or the port in it. */
static const char *const content_free[] = {
    "the password has a '%' that is not followed by two hex digits",
    "the password holds an escaped NUL byte (%00)",
    "names several hosts; give one host",
    ("has an '@' after the one that ends the user and password (masked: it may be part of"
     " a password); escape an '@' in a user name or password as %40"),
};

/* The text after the scheme, or NULL when url has none of the schemes. */
static const char *after_scheme(const char *url)
{
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
        if (strncmp(url, schemes[i], strlen(schemes[i])) == 0)
            return url + strlen(schemes[i]);
    return NULL;
}

/* s is NULL or NUL-terminated inside u->text. */
static void check_inside(const myurl *u, const char *s)
{
    if (s == NULL)
        return;
    FUZZ_CHECK(s >= u->text && s < u->text + u->text_len);
    FUZZ_CHECK(memchr(s, '\0', (size_t)(u->text + u->text_len - s)) != NULL);
}

static void check_struct(const char *url, const myurl *u)
{
    FUZZ_CHECK(after_scheme(url) != NULL);
    FUZZ_CHECK(u->text_len <= sizeof u->text);
    const char *const fields[] = {u->user, u->password, u->host, u->database, u->unix_socket,
                                  u->charset, u->ssl_ca, u->ssl_cert, u->ssl_key};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        check_inside(u, fields[i]);
    /* none is empty: an empty part is none */
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        FUZZ_CHECK(fields[i] == NULL || fields[i][0] != '\0');
    FUZZ_CHECK(u->database != NULL && u->charset != NULL);
    for (const char *c = u->charset; *c != '\0'; c++)
        FUZZ_CHECK((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                   (*c >= '0' && *c <= '9'));
    FUZZ_CHECK(u->port <= 65535);
    FUZZ_CHECK(u->connect_timeout <= 3600);
    FUZZ_CHECK(u->ssl_mode >= MYURL_SSL_DEFAULT && u->ssl_mode <= MYURL_SSL_VERIFY_IDENTITY);
    const char *name = myurl_ssl_name(u->ssl_mode);
    FUZZ_CHECK(name != NULL && (name[0] == '\0') == (u->ssl_mode == MYURL_SSL_DEFAULT));
    FUZZ_CHECK(strnlen(u->masked, sizeof u->masked) < sizeof u->masked);
}

/* Parses url (USER, PASSWORD) into *u; checks the masked URL, the code and the message's
 * start. Returns the code. */
static int parse(const char *url, const char *user, const char *password, myurl *u,
                 zbso_err *err)
{
    char masked[MYURL_URL_MAX + 1], want[ZBSO_ERR_MSG_MAX];
    err_clear(err);
    int rc = myurl_parse(url, user, password, u, err);
    dburl_mask(url, masked, sizeof masked);
    FUZZ_CHECK(strcmp(u->masked, masked) == 0);
    if (rc < 0) {
        FUZZ_CHECK(rc == ZBSO_EINVAL && err->code == rc);
        snprintf(want, sizeof want, "database URL \"%.200s\": ", masked);
        FUZZ_CHECK(strncmp(err->msg, want, strlen(want)) == 0);
    } else {
        FUZZ_CHECK(rc == 0);
        check_struct(url, u);
    }
    return rc;
}

static bool same(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The same URL settings (the user and password aside). */
static void check_same_settings(const myurl *a, const myurl *b)
{
    FUZZ_CHECK(same(a->host, b->host) && a->port == b->port && same(a->database, b->database));
    FUZZ_CHECK(same(a->unix_socket, b->unix_socket) && same(a->charset, b->charset));
    FUZZ_CHECK(a->ssl_mode == b->ssl_mode && same(a->ssl_ca, b->ssl_ca));
    FUZZ_CHECK(same(a->ssl_cert, b->ssl_cert) && same(a->ssl_key, b->ssl_key));
    FUZZ_CHECK(a->connect_timeout == b->connect_timeout);
    FUZZ_CHECK(strcmp(a->masked, b->masked) == 0);
}

/* A copy of s with [from, to) (offsets) replaced by as many 'x' ('y' where it was all
 * 'x'); the caller frees it. */
static char *replaced(const char *s, size_t from, size_t to)
{
    char *r = strdup(s);
    FUZZ_CHECK(r != NULL);
    bool all_x = true;
    for (size_t i = from; i < to; i++)
        all_x &= s[i] == 'x';
    memset(r + from, all_x ? 'y' : 'x', to - from);
    return r;
}

/* True when msg is "database URL "<masked>": " and one of content_free. */
static bool is_content_free(const char *msg, const char *masked)
{
    char prefix[ZBSO_ERR_MSG_MAX];
    snprintf(prefix, sizeof prefix, "database URL \"%.200s\": ", masked);
    if (strncmp(msg, prefix, strlen(prefix)) != 0)
        return false;
    const char *what = msg + strlen(prefix);
    for (size_t i = 0; i < sizeof content_free / sizeof content_free[0]; i++)
        if (strcmp(what, content_free[i]) == 0)
            return true;
    return false;
}

/* The masked URL and the message do not depend on what [from, to) of url holds (a part
 * that may be a password): with it overwritten they are the same, or the first message
 * says only a fixed text. */
static void check_hidden(const char *url, size_t from, size_t to, const myurl *u, int rc,
                         const zbso_err *err)
{
    if (to <= from)
        return;
    char *other = replaced(url, from, to);
    myurl *v = malloc(sizeof *v);
    zbso_err err2;
    FUZZ_CHECK(v != NULL);
    int rc2 = parse(other, NULL, NULL, v, &err2);
    FUZZ_CHECK(strcmp(u->masked, v->masked) == 0);
    if (rc < 0 && (rc2 == 0 || strcmp(err->msg, err2.msg) != 0))
        FUZZ_CHECK(is_content_free(err->msg, u->masked));
    if (rc == 0)
        FUZZ_CHECK(rc2 == 0);
    free(v);
    free(other);
}

/* SQLAlchemy's reading of the user info (sqlalchemy.engine.url's
 * "(?P<username>[^:/]*)(?::(?P<password>[^@]*))?@", greedy, tried first): a password when
 * the first ':' or '/' is a ':' with an '@' after it. */
static bool sa_password(const char *p, const char *end, const char **pw, const char **pw_end)
{
    const char *s = p;
    while (s < end && *s != ':' && *s != '/')
        s++;
    if (s == end || *s != ':')
        return false;
    const char *at = memchr(s + 1, '@', (size_t)(end - s - 1));
    if (at == NULL)
        return false;
    *pw = s + 1;
    *pw_end = at;
    return true;
}

/* Every part of url that may be a password is hidden in the masked URL and the message. */
static void check_secrets(const char *url, const myurl *u, int rc, const zbso_err *err)
{
    const char *p = after_scheme(url);
    if (p == NULL)
        return;
    const char *end = p + strlen(p);
    dburl_parts parts;
    dburl_split(p, end, &parts);
    if (parts.pw != NULL)
        check_hidden(url, (size_t)(parts.pw - url), (size_t)(parts.pw_end - url), u, rc, err);
    if (parts.odd_host != NULL)
        check_hidden(url, (size_t)(parts.odd_host - url), (size_t)(parts.odd_host_end - url),
                     u, rc, err);
    if (parts.odd_port != NULL)
        check_hidden(url, (size_t)(parts.odd_port - url), (size_t)(parts.odd_port_end - url),
                     u, rc, err);
    /* SQLAlchemy's password, where it lies in what dburl_split takes for the host (a user
     * name with an '@' in it: "user@server:secret@host"). Where it reaches into the path
     * or the query, the mask does not follow it (docs/FUZZING.md). */
    const char *sa, *sa_end;
    if (sa_password(p, end, &sa, &sa_end) && sa != parts.pw && sa >= parts.host &&
        sa_end <= parts.host_end)
        check_hidden(url, (size_t)(sa - url), (size_t)(sa_end - url), u, rc, err);
}

/* The masked URL, parsed again, does not give back the password the original gave. */
static void check_mask_hides(const myurl *u)
{
    if (u->password == NULL || strcmp(u->password, "***") == 0 ||
        strlen(u->masked) >= MYURL_URL_MAX)
        return; /* cut short: what is left need not parse alike */
    myurl *again = malloc(sizeof *again);
    zbso_err err;
    FUZZ_CHECK(again != NULL);
    if (parse(u->masked, NULL, NULL, again, &err) == 0)
        FUZZ_CHECK(again->password == NULL || strcmp(again->password, u->password) != 0);
    free(again);
}

/* USER and PASSWORD fill only what the URL left out, and no message depends on the
 * PASSWORD given apart. */
static void check_filling(const char *url, const char *user, const char *password,
                          const myurl *bare, int rc, const zbso_err *err)
{
    myurl *u = malloc(sizeof *u);
    zbso_err err2;
    FUZZ_CHECK(u != NULL);
    int rc2 = parse(url, user, password, u, &err2);
    if (rc < 0) {
        /* the URL is judged first */
        FUZZ_CHECK(rc2 == rc && strcmp(err->msg, err2.msg) == 0);
    } else if (rc2 < 0) {
        FUZZ_CHECK(strstr(err2.msg, "given apart from the URL is longer than") != NULL);
        FUZZ_CHECK((!bare->user && user && strlen(user) > MYURL_CRED_MAX) ||
                   (!bare->password && password && strlen(password) > MYURL_CRED_MAX));
    } else {
        check_same_settings(bare, u);
        const char *given[] = {user, password}, *from_url[] = {bare->user, bare->password};
        const char *got[] = {u->user, u->password};
        for (size_t i = 0; i < 2; i++) {
            if (from_url[i] != NULL)
                FUZZ_CHECK(got[i] != NULL && strcmp(got[i], from_url[i]) == 0);
            else if (given[i] != NULL && given[i][0] != '\0')
                FUZZ_CHECK(got[i] != NULL && strcmp(got[i], given[i]) == 0);
            else
                FUZZ_CHECK(got[i] == NULL);
        }
    }
    if (password != NULL && password[0] != '\0') {
        char *other = replaced(password, 0, strlen(password));
        zbso_err err3;
        int rc3 = parse(url, user, other, u, &err3);
        FUZZ_CHECK(rc3 == rc2 && (rc3 == 0 || strcmp(err2.msg, err3.msg) == 0));
        free(other);
    }
    free(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *url = fuzz_cstr(data, size);
    if (!url)
        return -1;
    char *user = strchr(url, '\n'), *password = NULL;
    if (user) {
        *user++ = '\0';
        password = strchr(user, '\n');
        if (password)
            *password++ = '\0';
    }
    myurl *bare = malloc(sizeof *bare);
    zbso_err err;
    FUZZ_CHECK(bare != NULL);
    int rc = parse(url, NULL, NULL, bare, &err);
    if (rc == 0)
        check_mask_hides(bare);
    check_secrets(url, bare, rc, &err);
    check_filling(url, user, password, bare, rc, &err);
    free(bare);
    free(url);
    return 0;
}
