/* myurl.c: MySQL/MariaDB URL -> what mysql_real_connect and mysql_options take. Pure: no
 * libmariadb, no I/O, no allocation; every loop is bounded by the input's length, which is
 * bounded by MYURL_URL_MAX. Splits and masks as pgurl does (one rule), and never puts a
 * password into a message. */
#include "store/myurl.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "store/pgurl.h"

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
#define SHOWN_MAX 64            /* bytes of a bad value a message shows */

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return c - 'A' + 10;
}

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

/* True when the n bytes at s, percent-decoded, spell word. */
static bool decoded_equals(const char *s, size_t n, const char *word)
{
    size_t i = 0, w = 0;
    while (i < n) {
        char c = s[i];
        if (c == '%' && i + 2 < n && is_hex(s[i + 1]) && is_hex(s[i + 2])) {
            c = (char)(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
            i += 3;
        } else {
            i++;
        }
        if (word[w] == '\0' || word[w] != c)
            return false;
        w++;
    }
    return word[w] == '\0';
}

/* Writes at most SHOWN_MAX bytes of [s, s + n) for a message, control bytes and DEL as
 * '?' (no terminal escapes), "..." when cut. out has room for SHOWN_MAX + 4 bytes. */
static void show(const char *s, size_t n, char *out)
{
    size_t len = 0;
    for (size_t i = 0; i < n && i < SHOWN_MAX; i++)
        out[len++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    if (n > SHOWN_MAX) {
        memcpy(out + len, "...", 3);
        len += 3;
    }
    out[len] = '\0';
}

/* Sets err to ZBSO_EINVAL: "database URL "<masked>": <what>", the words pgurl uses. */
static int fail(const myurl *u, zbso_err *err, const char *what)
{
    return err_set(err, ZBSO_EINVAL, "database URL \"%.200s\": %s", u->masked, what);
}

/* Copies n bytes of s, NUL-terminated, into u->text. Returns the copy, or NULL when the
 * text is full (it is sized so that this cannot happen; checked all the same). */
static char *store(myurl *u, const char *s, size_t n)
{
    if (n >= sizeof u->text - u->text_len)
        return NULL;
    char *dst = u->text + u->text_len;
    memcpy(dst, s, n);
    dst[n] = '\0';
    u->text_len += n + 1;
    return dst;
}

/* Percent-decodes [s, s + n) into u->text. Returns 0 with *value pointing at the
 * NUL-terminated result, or ZBSO_EINVAL naming `what` (and the raw text unless secret): a
 * '%' not followed by two hex digits, or an escape of a NUL byte. */
static int decode(myurl *u, const char *s, size_t n, const char *what, bool secret,
                  const char **value, zbso_err *err)
{
    char msg[200], shown[SHOWN_MAX + 4];
    if (n >= sizeof u->text - u->text_len)
        return fail(u, err, "is too long");
    char *dst = u->text + u->text_len, *d = dst;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= n || !is_hex(s[i + 1]) || !is_hex(s[i + 2])) {
                show(s, n, shown);
                snprintf(msg, sizeof msg, "the %s%s%s%s has a '%%' that is not followed by two"
                         " hex digits", what, secret ? "" : " \"", secret ? "" : shown,
                         secret ? "" : "\"");
                return fail(u, err, msg);
            }
            c = (char)(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
            i += 2;
            if (c == '\0') {
                snprintf(msg, sizeof msg, "the %s holds an escaped NUL byte (%%00)", what);
                return fail(u, err, msg);
            }
        }
        *d++ = c;
    }
    *d++ = '\0';
    u->text_len += (size_t)(d - dst);
    *value = dst;
    return 0;
}

/* True when [s, s + n) is 1 to 5 digits, which a message may show as a port (pgurl_mask
 * masks any other port of a URL without "@": it may be a password). */
static bool plain_port(const char *s, size_t n)
{
    bool ok = n >= 1 && n <= 5;
    for (size_t i = 0; ok && i < n; i++)
        ok = s[i] >= '0' && s[i] <= '9';
    return ok;
}

/* host[:port] or [v6]:port; userinfo: whether "...@" came before. */
static int parse_host_port(myurl *u, const char *p, const char *end, bool userinfo,
                           zbso_err *err)
{
    char msg[300], shown[SHOWN_MAX + 4];
    const char *host = p, *host_end, *port = NULL;
    if (memchr(p, '@', (size_t)(end - p)) != NULL)
        return fail(u, err, "has an '@' after the one that ends the user and password (masked:"
                    " it may be part of a password); escape an '@' in a user name or password"
                    " as %40");
    if (p < end && *p == '[') {
        const char *close = memchr(p, ']', (size_t)(end - p));
        if (close == NULL)
            return fail(u, err, "has a '[' before the host without its ']'");
        host = p + 1;
        host_end = close;
        if (close + 1 < end) {
            if (close[1] != ':')
                return fail(u, err, "has text between the host's ']' and the port's ':'");
            port = close + 2;
        }
    } else {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        host_end = colon != NULL ? colon : end;
        port = colon != NULL ? colon + 1 : NULL;
    }
    if (memchr(host, ',', (size_t)(host_end - host)) != NULL ||
        (port != NULL && memchr(port, ',', (size_t)(end - port)) != NULL))
        return fail(u, err, "names several hosts; give one host");
    if (host_end > host) {
        int rc = decode(u, host, (size_t)(host_end - host), "host", false, &u->host, err);
        if (rc < 0)
            return rc;
    }
    if (port != NULL) {
        size_t n = (size_t)(end - port);
        unsigned v = 0;
        bool ok = plain_port(port, n);
        for (size_t i = 0; ok && i < n; i++)
            v = v * 10 + (unsigned)(port[i] - '0');
        if (!ok || v < 1 || v > 65535) {
            if (plain_port(port, n) || n == 0) {
                show(port, n, shown);
                snprintf(msg, sizeof msg, "port \"%s\" is not a number from 1 to 65535", shown);
            } else if (userinfo) {
                snprintf(msg, sizeof msg, "the port is not a number from 1 to 65535 (masked:"
                         " it may be part of a password)");
            } else {
                snprintf(msg, sizeof msg, "the port is not a number from 1 to 65535 (it is"
                         " masked in case it is a password: a password needs \"@host\" after"
                         " it)");
            }
            return fail(u, err, msg);
        }
        u->port = v;
    }
    return 0;
}

/* The query key spelt [s, s + n) after decoding, or K_COUNT. */
static query_key find_key(const char *s, size_t n)
{
    for (int k = 0; k < K_COUNT; k++)
        for (int i = 0; i < 2; i++)
            if (key_names[k][i] != NULL && decoded_equals(s, n, key_names[k][i]))
                return (query_key)k;
    return K_COUNT;
}

/* Sets key k from its decoded value v (raw text [raw, raw + raw_n), for messages). */
static int set_key(myurl *u, query_key k, const char *v, const char *raw, size_t raw_n,
                   zbso_err *err)
{
    char msg[300], shown[SHOWN_MAX + 4];
    const char *name = key_names[k][0];
    show(raw, raw_n, shown);
    switch (k) {
    case K_CHARSET: {
        bool ok = v[0] != '\0';
        for (const char *c = v; ok && *c != '\0'; c++)
            ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9');
        if (!ok) {
            snprintf(msg, sizeof msg, "charset \"%s\" is not a character set name (letters and"
                     " digits, such as utf8mb4)", shown);
            return fail(u, err, msg);
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
        return fail(u, err, msg);
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
            return fail(u, err, msg);
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
        return fail(u, err, msg);
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
static int parse_query(myurl *u, const char *p, const char *end, zbso_err *err)
{
    char msg[300], shown[SHOWN_MAX + 4];
    while (p < end) {
        const char *seg_end = memchr(p, '&', (size_t)(end - p));
        if (seg_end == NULL)
            seg_end = end;
        if (seg_end == p) {
            p++;
            continue;
        }
        const char *eq = memchr(p, '=', (size_t)(seg_end - p));
        if (eq == NULL) {
            /* Named only when it is a key: the text might be a mangled password=. */
            query_key k = find_key(p, (size_t)(seg_end - p));
            if (k != K_COUNT)
                snprintf(msg, sizeof msg, "query parameter \"%s\" has no '=value'",
                         key_names[k][0]);
            else
                snprintf(msg, sizeof msg, "the query has a part without '=value'");
            return fail(u, err, msg);
        }
        size_t key_n = (size_t)(eq - p), val_n = (size_t)(seg_end - eq - 1);
        query_key k = find_key(p, key_n);
        if (k == K_COUNT) {
            show(p, key_n, shown);
            snprintf(msg, sizeof msg, "\"%s\" is not a MySQL URL parameter (charset,"
                     " unix_socket, ssl-mode, ssl_ca, ssl_cert, ssl_key, connect_timeout)",
                     shown);
            return fail(u, err, msg);
        }
        char what[64];
        const char *v = NULL;
        snprintf(what, sizeof what, "value of %s", key_names[k][0]);
        int rc = decode(u, eq + 1, val_n, what, false, &v, err);
        if (rc < 0 || (rc = set_key(u, k, v, eq + 1, val_n, err)) < 0)
            return rc;
        p = seg_end;
    }
    return 0;
}

/* Sets *field to value, from outside the URL, when the URL gave none. */
static int fill(myurl *u, const char **field, const char *what, const char *value,
                zbso_err *err)
{
    if (value == NULL || value[0] == '\0' || *field != NULL)
        return 0;
    size_t n = strnlen(value, MYURL_CRED_MAX + 1);
    if (n > MYURL_CRED_MAX) {
        char msg[120];
        snprintf(msg, sizeof msg, "the database %s given apart from the URL is longer than %d"
                 " bytes", what, MYURL_CRED_MAX);
        return fail(u, err, msg);
    }
    if ((*field = store(u, value, n)) == NULL)
        return fail(u, err, "is too long");
    return 0;
}

int myurl_parse(const char *url, const char *user, const char *password, myurl *out,
                zbso_err *err)
{
    int rc;
    memset(out, 0, offsetof(myurl, masked));
    out->masked[0] = '\0';
    out->text_len = 0;
    if (url == NULL)
        return err_set(err, ZBSO_EINVAL, "the database URL is missing");
    pgurl_mask(url, out->masked, sizeof out->masked);
    size_t len = strnlen(url, MYURL_URL_MAX + 1);
    if (len > MYURL_URL_MAX) {
        char msg[80];
        snprintf(msg, sizeof msg, "is longer than %d bytes", MYURL_URL_MAX);
        return fail(out, err, msg);
    }
    const char *p = NULL, *end = url + len;
    for (size_t i = 0; p == NULL && i < sizeof schemes / sizeof schemes[0]; i++) {
        size_t n = strlen(schemes[i]);
        if (len >= n && memcmp(url, schemes[i], n) == 0)
            p = url + n;
    }
    if (p == NULL)
        return fail(out, err, "is not a MySQL URL (mysql://user:password@host:port/database,"
                    " also spelt mysql+asyncmy://, mysql+aiomysql://, mysql+pymysql://,"
                    " mysql+mysqldb://, mysql+mysqlconnector://, mariadb://,"
                    " mariadb+mariadbconnector://)");
    if ((out->charset = store(out, "utf8mb4", 7)) == NULL)
        return fail(out, err, "is too long");

    pgurl_parts parts;
    pgurl_split(p, end, &parts);
    if (parts.user != NULL && parts.user_end > parts.user &&
        (rc = decode(out, parts.user, (size_t)(parts.user_end - parts.user), "user", false,
                     &out->user, err)) < 0)
        return rc;
    if (parts.pw != NULL && parts.pw_end > parts.pw &&
        (rc = decode(out, parts.pw, (size_t)(parts.pw_end - parts.pw), "password", true,
                     &out->password, err)) < 0)
        return rc;
    if ((rc = parse_host_port(out, parts.host, parts.host_end, parts.user != NULL, err)) < 0)
        return rc;
    const char *db = parts.path, *db_end = parts.path_end;
    if (db == NULL || db_end == db)
        return fail(out, err, "names no database (mysql://user:password@host:port/database)");
    if (memchr(db, '/', (size_t)(db_end - db)) != NULL) {
        char msg[200], shown[SHOWN_MAX + 4];
        show(db, (size_t)(db_end - db), shown);
        snprintf(msg, sizeof msg, "path \"/%s\" is more than a database name", shown);
        return fail(out, err, msg);
    }
    if ((rc = decode(out, db, (size_t)(db_end - db), "database name", false, &out->database,
                     err)) < 0)
        return rc;
    if (parts.query != NULL && (rc = parse_query(out, parts.query, end, err)) < 0)
        return rc;
    if ((rc = fill(out, &out->user, "user", user, err)) < 0 ||
        (rc = fill(out, &out->password, "password", password, err)) < 0)
        return rc;
    return 0;
}

const char *myurl_ssl_name(myurl_ssl mode)
{
    for (size_t i = 0; i < sizeof ssl_modes / sizeof ssl_modes[0]; i++)
        if (ssl_modes[i].mode == mode)
            return ssl_modes[i].name;
    return "";
}
