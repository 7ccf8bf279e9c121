/* dburl.c: the primitives every database URL shares (dburl.h). Pure: no I/O, no
 * allocation; every loop is bounded by the input's length, which the callers bound by
 * DBURL_URL_MAX. Never puts a password into a message. */
#include "store/dburl.h"

#include <stdio.h>
#include <string.h>

/* Query keys whose values a message may show: libpq's connection keywords but the
 * passwords, asyncpg's ssl, and myurl.c's keys. Any other key's value is masked: it may be
 * a mangled "password". */
static const char *const shown_keys[] = {
    "host", "hostaddr", "port", "dbname", "user", "passfile", "channel_binding",
    "connect_timeout", "client_encoding", "options", "application_name",
    "fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval",
    "keepalives_count", "tcp_user_timeout", "gssencmode", "sslmode", "sslcompression",
    "sslcert", "sslkey", "sslrootcert", "sslcrl", "sslcrldir", "sslsni", "requirepeer",
    "ssl_min_protocol_version", "ssl_max_protocol_version", "krbsrvname", "gsslib",
    "gssdelegation", "service", "target_session_attrs", "load_balance_hosts",
    "require_auth", "sslcertmode", "ssl", "charset", "unix_socket", "ssl-mode", "ssl_mode",
    "ssl_ca", "ssl-ca", "ssl_cert", "ssl-cert", "ssl_key", "ssl-key",
};

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

/* Appends c to out[*len] while it fits (one byte kept for the NUL); control bytes and
 * DEL become '?', so that a message shows no terminal escapes. */
static void put_char(char *out, size_t cap, size_t *len, char c)
{
    if (*len + 1 < cap)
        out[(*len)++] = (unsigned char)c < 0x20 || c == 0x7f ? '?' : c;
}

static void put_str(char *out, size_t cap, size_t *len, const char *s)
{
    while (*s != '\0')
        put_char(out, cap, len, *s++);
}

bool dburl_decoded_equals(const char *s, size_t n, const char *word)
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

/* True when [s, s + n) is 1 to 5 digits, which a message may show as a port. */
static bool plain_port(const char *s, size_t n)
{
    bool ok = n >= 1 && n <= 5;
    for (size_t i = 0; ok && i < n; i++)
        ok = s[i] >= '0' && s[i] <= '9';
    return ok;
}

void dburl_split(const char *p, const char *end, dburl_parts *u)
{
    memset(u, 0, sizeof *u);
    u->end = end;
    const char *s = p;
    while (s < end && *s != ':' && *s != '/' && *s != '?' && *s != '@')
        s++;
    const char *at = NULL;
    if (s < end && *s == '@') {
        at = s;
    } else if (s < end && *s == ':') {
        at = memchr(s, '@', (size_t)(end - s));
        if (at != NULL) {
            u->pw = s + 1;
            u->pw_end = at;
        }
    }
    if (at != NULL) {
        u->user = p;
        u->user_end = u->pw != NULL ? u->pw - 1 : at;
        p = at + 1;
    }
    u->host = p;
    while (p < end && *p != '/' && *p != '?')
        p++;
    u->host_end = p;
    /* After "...@", more '@' before the host's end: what lies before the last one may be
     * the rest of a password with an unescaped '@' ("user:p@ss@host"), or a password after
     * a user name with one ("user@server:secret@host"). */
    const char *host = u->host, *last_at = NULL;
    for (s = host; at != NULL && s < p; s++)
        if (*s == '@')
            last_at = s;
    if (last_at != NULL && last_at > host) {
        u->odd_host = host;
        u->odd_host_end = last_at;
        host = last_at + 1;
    }
    /* Each host of a list ("h1:5432,h2:5433") has its own port. */
    const char *e, *e_end;
    for (const char *q = host; u->odd_port == NULL && dburl_next_host(&q, p, &e, &e_end);) {
        const char *colon = NULL;
        if (e < e_end && *e == '[') {
            const char *close = memchr(e, ']', (size_t)(e_end - e));
            if (close != NULL && close + 1 < e_end && close[1] == ':')
                colon = close + 1;
        } else {
            colon = memchr(e, ':', (size_t)(e_end - e));
        }
        if (colon != NULL && colon + 1 < e_end &&
            !plain_port(colon + 1, (size_t)(e_end - colon - 1))) {
            u->odd_port = colon + 1;
            u->odd_port_end = p;
        }
    }
    if (p < end && *p == '/') {
        u->path = ++p;
        while (p < end && *p != '?')
            p++;
        u->path_end = p;
    }
    if (p < end && *p == '?')
        u->query = p + 1;
}

/* True when a message may show the value of query key [s, s + n). */
static bool shown_value(const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof shown_keys / sizeof shown_keys[0]; i++)
        if (dburl_decoded_equals(s, n, shown_keys[i]))
            return true;
    return false;
}

void dburl_mask(const char *url, char *out, size_t cap)
{
    size_t len = 0;
    if (cap == 0)
        return;
    if (url == NULL) {
        out[0] = '\0';
        return;
    }
    const char *end = url + strnlen(url, 4 * DBURL_URL_MAX);
    /* "//" rather than "://": a mangled scheme still has its password masked. */
    const char *sep = NULL;
    for (const char *s = url; sep == NULL && s + 2 <= end; s++)
        if (s[0] == '/' && s[1] == '/')
            sep = s;
    dburl_parts u;
    if (sep != NULL) {
        dburl_split(sep + 2, end, &u);
    } else {
        /* No "//" at all: mask from the last ':' before the first '@' up to it. */
        memset(&u, 0, sizeof u);
        const char *at = memchr(url, '@', (size_t)(end - url)), *q = url;
        for (const char *s = url; at != NULL && s < at; s++)
            if (*s == ':')
                u.pw = s + 1;
        if (u.pw != NULL) {
            u.pw_end = at;
            q = at;
        }
        u.query = memchr(q, '?', (size_t)(end - q));
        if (u.query != NULL)
            u.query++;
    }
    const char *p = url;
    while (p < end) {
        /* Each span is masked once and then forgotten: an empty one (a password given as
         * "user:@") ends where it starts, and must not be found again. */
        if (p == u.pw) {
            put_str(out, cap, &len, "***");
            p = u.pw_end;
            u.pw = NULL;
            continue;
        }
        if (p == u.odd_host) {
            put_str(out, cap, &len, "***");
            p = u.odd_host_end;
            u.odd_host = NULL;
            continue;
        }
        if (p == u.odd_port) {
            put_str(out, cap, &len, "***");
            p = u.odd_port_end;
            u.odd_port = NULL;
            continue;
        }
        if (p == u.query) {
            /* Each key=value of the query; a password's value is masked. */
            while (p < end) {
                const char *seg_end = memchr(p, '&', (size_t)(end - p));
                if (seg_end == NULL)
                    seg_end = end;
                const char *eq = memchr(p, '=', (size_t)(seg_end - p));
                if (eq != NULL && !shown_value(p, (size_t)(eq - p))) {
                    while (p <= eq)
                        put_char(out, cap, &len, *p++);
                    put_str(out, cap, &len, "***");
                    p = seg_end;
                } else if (eq == NULL && seg_end > p) {
                    /* no key=value: perhaps a password= that lost its '=' */
                    put_str(out, cap, &len, "***");
                    p = seg_end;
                } else {
                    while (p < seg_end)
                        put_char(out, cap, &len, *p++);
                }
                if (p < end)
                    put_char(out, cap, &len, *p++); /* the '&' */
            }
            break;
        }
        put_char(out, cap, &len, *p++);
    }
    out[len] = '\0';
}


int dburl_fail(const dburl_text *t, zbso_err *err, const char *what)
{
    return err_set(err, ZBSO_EINVAL, "database URL \"%.200s\": %s", t->masked, what);
}

void dburl_show(const char *s, size_t n, char *out)
{
    size_t len = 0;
    for (size_t i = 0; i < n && i < DBURL_SHOWN_MAX; i++)
        put_char(out, DBURL_SHOWN_MAX + 4, &len, s[i]);
    if (n > DBURL_SHOWN_MAX)
        put_str(out, DBURL_SHOWN_MAX + 4, &len, "...");
    out[len] = '\0';
}

int dburl_decode(dburl_text *t, const char *s, size_t n, const char *what, bool secret,
                 const char **value, zbso_err *err)
{
    char msg[200], shown[DBURL_SHOWN_MAX + 4];
    if (n >= t->cap - t->len)
        return dburl_fail(t, err, "is too long");
    char *dst = t->buf + t->len, *d = dst;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= n || !is_hex(s[i + 1]) || !is_hex(s[i + 2])) {
                dburl_show(s, n, shown);
                snprintf(msg, sizeof msg, "the %s%s%s%s has a '%%' that is not followed by two"
                         " hex digits", what, secret ? "" : " \"", secret ? "" : shown,
                         secret ? "" : "\"");
                return dburl_fail(t, err, msg);
            }
            c = (char)(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
            i += 2;
            if (c == '\0') {
                snprintf(msg, sizeof msg, "the %s holds an escaped NUL byte (%%00)", what);
                return dburl_fail(t, err, msg);
            }
        }
        *d++ = c;
    }
    *d++ = '\0';
    t->len += (size_t)(d - dst);
    *value = dst;
    return 0;
}

int dburl_copy(dburl_text *t, const char *s, size_t n, const char **value, zbso_err *err)
{
    if (n >= t->cap - t->len)
        return dburl_fail(t, err, "is too long");
    char *dst = t->buf + t->len;
    memcpy(dst, s, n);
    dst[n] = '\0';
    t->len += n + 1;
    *value = dst;
    return 0;
}

int dburl_cred(dburl_text *t, const char *what, const char *value, const char **out,
               zbso_err *err)
{
    if (value == NULL || value[0] == '\0' || *out != NULL)
        return 0;
    size_t n = strnlen(value, DBURL_CRED_MAX + 1);
    if (n > DBURL_CRED_MAX) {
        char msg[120];
        snprintf(msg, sizeof msg, "the database %s given apart from the URL is longer than %d"
                 " bytes", what, DBURL_CRED_MAX);
        return dburl_fail(t, err, msg);
    }
    return dburl_copy(t, value, n, out, err);
}

bool dburl_next_host(const char **p, const char *end, const char **host,
                     const char **host_end)
{
    const char *s = *p;
    if (s >= end)
        return false;
    *host = s;
    bool bracket = false;
    while (s < end && (bracket || *s != ',')) {
        if (*s == '[')
            bracket = true;
        else if (*s == ']')
            bracket = false;
        s++;
    }
    *host_end = s;
    *p = s < end ? s + 1 : s;
    return true;
}

int dburl_host_port(dburl_text *t, const char *p, const char *end, bool userinfo,
                    dburl_host *out, zbso_err *err)
{
    char msg[300], shown[DBURL_SHOWN_MAX + 4];
    const char *host = p, *host_end, *port = NULL;
    out->host = NULL;
    out->port = 0;
    if (memchr(p, '@', (size_t)(end - p)) != NULL)
        return dburl_fail(t, err, "has an '@' after the one that ends the user and password"
                          " (masked: it may be part of a password); escape an '@' in a user"
                          " name or password as %40");
    if (p < end && *p == '[') {
        const char *close = memchr(p, ']', (size_t)(end - p));
        if (close == NULL)
            return dburl_fail(t, err, "has a '[' before the host without its ']'");
        host = p + 1;
        host_end = close;
        if (close + 1 < end) {
            if (close[1] != ':')
                return dburl_fail(t, err, "has text between the host's ']' and the port's ':'");
            port = close + 2;
        }
    } else {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        host_end = colon != NULL ? colon : end;
        port = colon != NULL ? colon + 1 : NULL;
    }
    if (memchr(host, ',', (size_t)(host_end - host)) != NULL ||
        (port != NULL && memchr(port, ',', (size_t)(end - port)) != NULL))
        return dburl_fail(t, err, "names several hosts; give one host");
    if (host_end > host) {
        int rc = dburl_decode(t, host, (size_t)(host_end - host), "host", false, &out->host,
                              err);
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
                dburl_show(port, n, shown);
                snprintf(msg, sizeof msg, "port \"%s\" is not a number from 1 to 65535", shown);
            } else if (userinfo) {
                snprintf(msg, sizeof msg, "the port is not a number from 1 to 65535 (masked:"
                         " it may be part of a password)");
            } else {
                snprintf(msg, sizeof msg, "the port is not a number from 1 to 65535 (it is"
                         " masked in case it is a password: a password needs \"@host\" after"
                         " it)");
            }
            return dburl_fail(t, err, msg);
        }
        out->port = v;
    }
    return 0;
}

bool dburl_query_next(const char **p, const char *end, dburl_kv *kv)
{
    const char *s = *p;
    while (s < end && *s == '&')
        s++;
    if (s >= end) {
        *p = s;
        return false;
    }
    const char *seg_end = memchr(s, '&', (size_t)(end - s));
    if (seg_end == NULL)
        seg_end = end;
    const char *eq = memchr(s, '=', (size_t)(seg_end - s));
    kv->key = s;
    kv->has_value = eq != NULL;
    kv->key_n = (size_t)((eq != NULL ? eq : seg_end) - s);
    kv->val = eq != NULL ? eq + 1 : seg_end;
    kv->val_n = (size_t)(seg_end - kv->val);
    *p = seg_end;
    return true;
}

int dburl_no_value(const dburl_text *t, const char *name, zbso_err *err)
{
    char msg[120];
    if (name != NULL)
        snprintf(msg, sizeof msg, "query parameter \"%s\" has no '=value'", name);
    else
        snprintf(msg, sizeof msg, "the query has a part without '=value'");
    return dburl_fail(t, err, msg);
}

int dburl_start(const char *url, const char *const *schemes, size_t n_schemes,
                const char *not_ours, dburl_text *t, char *masked, size_t masked_cap,
                dburl_parts *parts, zbso_err *err)
{
    if (url == NULL)
        return err_set(err, ZBSO_EINVAL, "the database URL is missing");
    dburl_mask(url, masked, masked_cap);
    size_t len = strnlen(url, DBURL_URL_MAX + 1);
    if (len > DBURL_URL_MAX) {
        char msg[80];
        snprintf(msg, sizeof msg, "is longer than %d bytes", DBURL_URL_MAX);
        return dburl_fail(t, err, msg);
    }
    const char *p = NULL;
    for (size_t i = 0; p == NULL && i < n_schemes; i++) {
        size_t n = strlen(schemes[i]);
        if (len >= n && memcmp(url, schemes[i], n) == 0)
            p = url + n;
    }
    if (p == NULL)
        return dburl_fail(t, err, not_ours);
    dburl_split(p, url + len, parts);
    return 0;
}

int dburl_dbname(dburl_text *t, const dburl_parts *parts, const char **value, zbso_err *err)
{
    const char *db = parts->path, *db_end = parts->path_end;
    *value = NULL;
    if (db == NULL || db_end == db)
        return 0;
    if (memchr(db, '/', (size_t)(db_end - db)) != NULL) {
        char msg[200], shown[DBURL_SHOWN_MAX + 4];
        dburl_show(db, (size_t)(db_end - db), shown);
        snprintf(msg, sizeof msg, "path \"/%s\" is more than a database name", shown);
        return dburl_fail(t, err, msg);
    }
    return dburl_decode(t, db, (size_t)(db_end - db), "database name", false, value, err);
}

int dburl_userinfo(dburl_text *t, const dburl_parts *parts, const char **user,
                   const char **password, zbso_err *err)
{
    int rc = 0;
    *user = NULL;
    *password = NULL;
    if (parts->user != NULL && parts->user_end > parts->user &&
        (rc = dburl_decode(t, parts->user, (size_t)(parts->user_end - parts->user), "user",
                           false, user, err)) < 0)
        return rc;
    if (parts->pw != NULL && parts->pw_end > parts->pw)
        rc = dburl_decode(t, parts->pw, (size_t)(parts->pw_end - parts->pw), "password", true,
                          password, err);
    return rc;
}
