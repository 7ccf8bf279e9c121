/* myurl.c: MySQL/MariaDB URL -> what mysql_real_connect and mysql_options take: the
 * schemes and query keys of MySQL URLs; the split, masking, decoding, hosts and ports are
 * dburl.c's (one rule for every backend). Pure: no libmariadb, no I/O, no allocation. Never
 * puts a password into a message. */
#include "store/netdb/myurl.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "store/dburl.h"

/* SQLAlchemy's spellings: the dialect, then its driver. */
static const char *const schemes[] = {
    "mysql://", "mysql+asyncmy://", "mysql+aiomysql://", "mysql+pymysql://",
    "mysql+mysqldb://", "mysql+mysqlconnector://", "mariadb://",
    "mariadb+mariadbconnector://",
};

static const struct {
    const char *name;
    myurl_ssl mode;
} ssl_modes[] = {
    {"DISABLED", MYURL_SSL_DISABLED}, {"PREFERRED", MYURL_SSL_PREFERRED},
    {"REQUIRED", MYURL_SSL_REQUIRED}, {"VERIFY_CA", MYURL_SSL_VERIFY_CA},
    {"VERIFY_IDENTITY", MYURL_SSL_VERIFY_IDENTITY},
};

/* Query keys, each with the spellings a URL may use (the first is the one named). */
typedef enum { K_CHARSET, K_UNIX_SOCKET, K_SSL_MODE, K_SSL_CA, K_SSL_CERT, K_SSL_KEY,
               K_CONNECT_TIMEOUT, K_COUNT } query_key;

static const char *const key_names[K_COUNT][2] = {
    [K_CHARSET] = {"charset", NULL},
    [K_UNIX_SOCKET] = {"unix_socket", NULL},
    [K_SSL_MODE] = {"ssl-mode", "ssl_mode"},
    [K_SSL_CA] = {"ssl_ca", "ssl-ca"},
    [K_SSL_CERT] = {"ssl_cert", "ssl-cert"},
    [K_SSL_KEY] = {"ssl_key", "ssl-key"},
    [K_CONNECT_TIMEOUT] = {"connect_timeout", NULL},
};

#define CONNECT_TIMEOUT_MAX 3600

static char upper(char c)
{
    return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
}

/* True when a and b are equal but for the case of ASCII letters. */
static bool equal_nocase(const char *a, const char *b)
{
    for (; *a != '\0' && upper(*a) == upper(*b); a++)
        b++;
    return *a == '\0' && *b == '\0';
}

/* The query key spelt [s, s + n) after decoding, or K_COUNT. */
static query_key find_key(const char *s, size_t n)
{
    for (int k = 0; k < K_COUNT; k++)
        for (int i = 0; i < 2; i++)
            if (key_names[k][i] != NULL && dburl_decoded_equals(s, n, key_names[k][i]))
                return (query_key)k;
    return K_COUNT;
}

/* Sets key k from its decoded value v (raw text [raw, raw + raw_n), for messages). */
static int set_key(myurl *u, dburl_text *t, query_key k, const char *v, const char *raw,
                   size_t raw_n, zbso_err *err)
{
    char msg[300], shown[DBURL_SHOWN_MAX + 4];
    const char *name = key_names[k][0];
    dburl_show(raw, raw_n, shown);
    switch (k) {
    case K_CHARSET: {
        bool ok = v[0] != '\0';
        for (const char *c = v; ok && *c != '\0'; c++)
            ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9');
        if (!ok) {
            snprintf(msg, sizeof msg, "charset \"%s\" is not a character set name (letters and"
                     " digits, such as utf8mb4)", shown);
            return dburl_fail(t, err, msg);
        }
        u->charset = v;
        return 0;
    }
    case K_SSL_MODE: {
        size_t n_modes = sizeof ssl_modes / sizeof ssl_modes[0];
        for (size_t i = 0; i < n_modes; i++) {
            if (equal_nocase(v, ssl_modes[i].name)) {
                u->ssl_mode = ssl_modes[i].mode;
                return 0;
            }
        }
        snprintf(msg, sizeof msg, "ssl-mode \"%s\" is none of DISABLED, PREFERRED, REQUIRED,"
                 " VERIFY_CA, VERIFY_IDENTITY", shown);
        return dburl_fail(t, err, msg);
    }
    case K_CONNECT_TIMEOUT: {
        unsigned s = 0;
        bool ok = v[0] != '\0';
        for (const char *c = v; ok && *c != '\0'; c++) {
            ok = *c >= '0' && *c <= '9';
            s = s * 10 + (unsigned)(*c - '0');
            ok = ok && s <= CONNECT_TIMEOUT_MAX;
        }
        if (!ok || s < 1) {
            snprintf(msg, sizeof msg, "connect_timeout \"%s\" is not a number of seconds from"
                     " 1 to %d", shown, CONNECT_TIMEOUT_MAX);
            return dburl_fail(t, err, msg);
        }
        u->connect_timeout = s;
        return 0;
    }
    default:
        break;
    }
    if (v[0] == '\0') {
        snprintf(msg, sizeof msg, "query parameter %s is empty; give a path or leave it out",
                 name);
        return dburl_fail(t, err, msg);
    }
    if (k == K_UNIX_SOCKET)
        u->unix_socket = v;
    else if (k == K_SSL_CA)
        u->ssl_ca = v;
    else if (k == K_SSL_CERT)
        u->ssl_cert = v;
    else
        u->ssl_key = v;
    return 0;
}

/* key=value&key=value... */
static int parse_query(myurl *u, dburl_text *t, const char *p, const char *end,
                       zbso_err *err)
{
    char msg[300], shown[DBURL_SHOWN_MAX + 4];
    dburl_kv kv;
    while (dburl_query_next(&p, end, &kv)) {
        query_key k = find_key(kv.key, kv.key_n);
        if (!kv.has_value)
            return dburl_no_value(t, k != K_COUNT ? key_names[k][0] : NULL, err);
        if (k == K_COUNT) {
            dburl_show(kv.key, kv.key_n, shown);
            snprintf(msg, sizeof msg, "\"%s\" is not a MySQL URL parameter (charset,"
                     " unix_socket, ssl-mode, ssl_ca, ssl_cert, ssl_key, connect_timeout)",
                     shown);
            return dburl_fail(t, err, msg);
        }
        char what[64];
        const char *v = NULL;
        snprintf(what, sizeof what, "value of %s", key_names[k][0]);
        int rc = dburl_decode(t, kv.val, kv.val_n, what, false, &v, err);
        if (rc < 0 || (rc = set_key(u, t, k, v, kv.val, kv.val_n, err)) < 0)
            return rc;
    }
    return 0;
}

/* myurl_parse into t, out->text's bookkeeping. */
static int parse(const char *url, const char *user, const char *password, myurl *out,
                 dburl_text *t, zbso_err *err)
{
    int rc;
    dburl_parts parts;
    if ((rc = dburl_start(url, schemes, sizeof schemes / sizeof schemes[0],
                          "is not a MySQL URL (mysql://user:password@host:port/database, also"
                          " spelt mysql+asyncmy://, mysql+aiomysql://, mysql+pymysql://,"
                          " mysql+mysqldb://, mysql+mysqlconnector://, mariadb://,"
                          " mariadb+mariadbconnector://)",
                          t, out->masked, sizeof out->masked, &parts, err)) < 0)
        return rc;
    if ((rc = dburl_copy(t, "utf8mb4", 7, &out->charset, err)) < 0)
        return rc;
    if ((rc = dburl_userinfo(t, &parts, &out->user, &out->password, err)) < 0)
        return rc;
    dburl_host h;
    if ((rc = dburl_host_port(t, parts.host, parts.host_end, parts.user != NULL, &h,
                              err)) < 0)
        return rc;
    out->host = h.host;
    out->port = h.port;
    if ((rc = dburl_dbname(t, &parts, &out->database, err)) < 0)
        return rc;
    if (out->database == NULL)
        return dburl_fail(t, err, "names no database (mysql://user:password@host:port/"
                          "database)");
    if (parts.query != NULL && (rc = parse_query(out, t, parts.query, parts.end, err)) < 0)
        return rc;
    if ((rc = dburl_cred(t, "user", user, &out->user, err)) < 0 ||
        (rc = dburl_cred(t, "password", password, &out->password, err)) < 0)
        return rc;
    return 0;
}

int myurl_parse(const char *url, const char *user, const char *password, myurl *out,
                zbso_err *err)
{
    memset(out, 0, offsetof(myurl, masked));
    out->masked[0] = '\0';
    dburl_text t = {out->text, sizeof out->text, 0, out->masked};
    int rc = parse(url, user, password, out, &t, err);
    out->text_len = t.len;
    return rc;
}

const char *myurl_ssl_name(myurl_ssl mode)
{
    for (size_t i = 0; i < sizeof ssl_modes / sizeof ssl_modes[0]; i++)
        if (ssl_modes[i].mode == mode)
            return ssl_modes[i].name;
    return "";
}
