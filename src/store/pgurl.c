/* pgurl.c: PostgreSQL URL -> libpq keyword/value pairs, and password masking. Pure: no
 * libpq, no I/O, no allocation; every loop is bounded by the input's length, which is
 * bounded by PGURL_URL_MAX. Never puts a password into a message. */
#include "store/pgurl.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char *const schemes[] = {"postgresql://", "postgresql+asyncpg://", "postgres://"};

/* libpq connection keywords a URL's query may set (PostgreSQL 15's list, less
 * replication and the deprecated requiressl). */
static const char *const keywords[] = {
    "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "channel_binding",
    "connect_timeout", "client_encoding", "options", "application_name",
    "fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval",
    "keepalives_count", "tcp_user_timeout", "gssencmode", "sslmode", "sslcompression",
    "sslcert", "sslkey", "sslpassword", "sslrootcert", "sslcrl", "sslcrldir", "sslsni",
    "requirepeer", "ssl_min_protocol_version", "ssl_max_protocol_version", "krbsrvname",
    "gsslib", "service", "target_session_attrs",
};

/* asyncpg's ssl= values and the sslmode each means. */
static const struct {
    const char *ssl, *sslmode;
} ssl_modes[] = {
    {"disable", "disable"}, {"allow", "allow"},         {"prefer", "prefer"},
    {"require", "require"}, {"verify-ca", "verify-ca"}, {"verify-full", "verify-full"},
    {"true", "require"},    {"false", "disable"},
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

/* True when [s, s + n) is 1 to 5 digits, which a message may show as a port. */
static bool plain_port(const char *s, size_t n)
{
    bool ok = n >= 1 && n <= 5;
    for (size_t i = 0; ok && i < n; i++)
        ok = s[i] >= '0' && s[i] <= '9';
    return ok;
}

void pgurl_split(const char *p, const char *end, pgurl_parts *u)
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
    if (host < p && *host != '[') {
        const char *colon = memchr(host, ':', (size_t)(p - host));
        if (colon != NULL && !plain_port(colon + 1, (size_t)(p - colon - 1)) && colon + 1 < p) {
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

static const char *keyword(const char *s, size_t n);

/* The query keys of MySQL URLs (myurl.h) that hold no secret. */
static const char *const my_shown[] = {
    "charset", "unix_socket", "ssl-mode", "ssl_mode", "ssl_ca", "ssl-ca", "ssl_cert",
    "ssl-cert", "ssl_key", "ssl-key",
};

/* True when a message may show the value of query key [s, s + n): a known keyword that
 * is not a password (libpq's, asyncpg's ssl, myurl's). An unknown key may be a mangled
 * "password", so its value is not. */
static bool shown_value(const char *s, size_t n)
{
    const char *kw = keyword(s, n);
    if (kw != NULL)
        return strcmp(kw, "password") != 0 && strcmp(kw, "sslpassword") != 0;
    for (size_t i = 0; i < sizeof my_shown / sizeof my_shown[0]; i++)
        if (decoded_equals(s, n, my_shown[i]))
            return true;
    return decoded_equals(s, n, "ssl");
}

void pgurl_mask(const char *url, char *out, size_t cap)
{
    size_t len = 0;
    if (cap == 0)
        return;
    if (url == NULL) {
        out[0] = '\0';
        return;
    }
    const char *end = url + strnlen(url, 4 * PGURL_URL_MAX);
    /* "//" rather than "://": a mangled scheme still has its password masked. */
    const char *sep = NULL;
    for (const char *s = url; sep == NULL && s + 2 <= end; s++)
        if (s[0] == '/' && s[1] == '/')
            sep = s;
    pgurl_parts u;
    if (sep != NULL) {
        pgurl_split(sep + 2, end, &u);
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

/* Sets err to ZBSO_EINVAL: "database URL "<masked>": <what>". */
static int fail(const pgurl *u, zbso_err *err, const char *what)
{
    return err_set(err, ZBSO_EINVAL, "database URL \"%.200s\": %s", u->masked, what);
}

/* Writes at most 64 bytes of [s, s + n) for a message, control bytes as '?'. */
static void show(const char *s, size_t n, char *out, size_t cap)
{
    size_t len = 0;
    for (size_t i = 0; i < n && i < 64; i++)
        put_char(out, cap, &len, s[i]);
    if (n > 64)
        put_str(out, cap, &len, "...");
    out[len] = '\0';
}

/* Percent-decodes [s, s + n) into u->text. Returns 0 with *value pointing at the
 * NUL-terminated result, or ZBSO_EINVAL naming `what` (never the text itself when
 * secret): a '%' not followed by two hex digits, or an escape of a NUL byte. */
static int decode(pgurl *u, const char *s, size_t n, const char *what, bool secret,
                  const char **value, zbso_err *err)
{
    char msg[200], shown[80];
    if (u->text_len + n + 1 > sizeof u->text)
        return fail(u, err, "is too long");
    char *dst = u->text + u->text_len, *d = dst;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= n || !is_hex(s[i + 1]) || !is_hex(s[i + 2])) {
                show(s, n, shown, sizeof shown);
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
        } else if (c == '\0') {
            return fail(u, err, "holds a NUL byte");
        }
        *d++ = c;
    }
    *d++ = '\0';
    u->text_len += (size_t)(d - dst);
    *value = dst;
    return 0;
}

/* Stores a static-lifetime string (a keyword's canonical value) as a value. */
static int add(pgurl *u, const char *key, const char *value, zbso_err *err)
{
    for (size_t i = 0; i < u->n; i++) {
        if (strcmp(u->keys[i], key) == 0) {
            u->values[i] = value;
            return 0;
        }
    }
    if (u->n == PGURL_PARAMS_MAX) {
        char msg[100];
        snprintf(msg, sizeof msg, "has more than %d connection parameters", PGURL_PARAMS_MAX);
        return fail(u, err, msg);
    }
    u->keys[u->n] = key;
    u->values[u->n] = value;
    u->n++;
    u->keys[u->n] = NULL;
    u->values[u->n] = NULL;
    return 0;
}

/* Decodes [s, s + n) and stores it as key's value. */
static int add_decoded(pgurl *u, const char *key, const char *s, size_t n, const char *what,
                       bool secret, zbso_err *err)
{
    const char *v = NULL;
    int rc = decode(u, s, n, what, secret, &v, err);
    return rc < 0 ? rc : add(u, key, v, err);
}

/* The canonical keyword spelt [s, s + n) after decoding, or NULL. */
static const char *keyword(const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
        if (decoded_equals(s, n, keywords[i]))
            return keywords[i];
    return NULL;
}

/* host[:port] or [v6]:port. */
static int parse_host_port(pgurl *u, const char *p, const char *end, zbso_err *err)
{
    char msg[200], shown[80];
    const char *host = p, *host_end, *port = NULL;
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
        int rc = add_decoded(u, "host", host, (size_t)(host_end - host), "host", false, err);
        if (rc < 0)
            return rc;
    }
    if (port != NULL) {
        size_t n = (size_t)(end - port);
        long v = 0;
        bool ok = n >= 1 && n <= 5;
        for (size_t i = 0; ok && i < n; i++) {
            ok = port[i] >= '0' && port[i] <= '9';
            v = v * 10 + (port[i] - '0');
        }
        if (!ok || v < 1 || v > 65535) {
            if (plain_port(port, n) || n == 0) {
                show(port, n, shown, sizeof shown);
                snprintf(msg, sizeof msg, "port \"%s\" is not a number from 1 to 65535", shown);
            } else {
                snprintf(msg, sizeof msg, "the port is not a number from 1 to 65535 (it is"
                         " masked in case it is a password: a password needs \"@host\" after"
                         " it)");
            }
            return fail(u, err, msg);
        }
        const char *pv = NULL;
        int rc = decode(u, port, n, "port", false, &pv, err);
        if (rc < 0 || (rc = add(u, "port", pv, err)) < 0)
            return rc;
    }
    return 0;
}

/* key=value&key=value... */
static int parse_query(pgurl *u, const char *p, const char *end, zbso_err *err)
{
    char msg[200], shown[80];
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
            /* Named only when it is a keyword: the text might be a mangled password=. */
            const char *kw = keyword(p, (size_t)(seg_end - p));
            if (kw == NULL && decoded_equals(p, (size_t)(seg_end - p), "ssl"))
                kw = "ssl";
            if (kw != NULL)
                snprintf(msg, sizeof msg, "query parameter \"%s\" has no '=value'", kw);
            else
                snprintf(msg, sizeof msg, "the query has a part without '=value'");
            return fail(u, err, msg);
        }
        size_t key_n = (size_t)(eq - p), val_n = (size_t)(seg_end - eq - 1);
        const char *key = keyword(p, key_n);
        int rc;
        if (key != NULL) {
            bool secret = strcmp(key, "password") == 0 || strcmp(key, "sslpassword") == 0;
            char what[64];
            snprintf(what, sizeof what, "value of %s", key);
            rc = add_decoded(u, key, eq + 1, val_n, what, secret, err);
        } else if (decoded_equals(p, key_n, "ssl")) {
            size_t i, n_modes = sizeof ssl_modes / sizeof ssl_modes[0];
            for (i = 0; i < n_modes; i++)
                if (decoded_equals(eq + 1, val_n, ssl_modes[i].ssl))
                    break;
            if (i == n_modes) {
                show(eq + 1, val_n, shown, sizeof shown);
                snprintf(msg, sizeof msg, "ssl=\"%s\" is none of disable, allow, prefer,"
                         " require, verify-ca, verify-full, true, false", shown);
                return fail(u, err, msg);
            }
            rc = add(u, "sslmode", ssl_modes[i].sslmode, err);
        } else {
            show(p, key_n, shown, sizeof shown);
            snprintf(msg, sizeof msg, "\"%s\" is not a PostgreSQL connection parameter"
                     " (for example sslmode, sslrootcert, application_name, connect_timeout)",
                     shown);
            return fail(u, err, msg);
        }
        if (rc < 0)
            return rc;
        p = seg_end;
    }
    return 0;
}

/* Adds user or password from outside the URL when the URL gave none. */
static int fill(pgurl *u, const char *key, const char *value, zbso_err *err)
{
    if (value == NULL || value[0] == '\0' || pgurl_get(u, key) != NULL)
        return 0;
    size_t n = strnlen(value, PGURL_CRED_MAX + 1);
    if (n > PGURL_CRED_MAX) {
        char msg[120];
        snprintf(msg, sizeof msg, "the database %s given apart from the URL is longer than %d"
                 " bytes", key, PGURL_CRED_MAX);
        return fail(u, err, msg);
    }
    if (u->text_len + n + 1 > sizeof u->text)
        return fail(u, err, "is too long");
    char *dst = u->text + u->text_len;
    memcpy(dst, value, n);
    dst[n] = '\0';
    u->text_len += n + 1;
    return add(u, key, dst, err);
}

int pgurl_parse(const char *url, const char *user, const char *password, pgurl *out,
                zbso_err *err)
{
    int rc = 0;
    out->n = 0;
    out->keys[0] = NULL;
    out->values[0] = NULL;
    out->text_len = 0;
    out->masked[0] = '\0';
    if (url == NULL)
        return err_set(err, ZBSO_EINVAL, "the database URL is missing");
    pgurl_mask(url, out->masked, sizeof out->masked);
    size_t len = strnlen(url, PGURL_URL_MAX + 1);
    if (len > PGURL_URL_MAX) {
        char msg[80];
        snprintf(msg, sizeof msg, "is longer than %d bytes", PGURL_URL_MAX);
        return fail(out, err, msg);
    }
    const char *p = NULL, *end = url + len;
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        size_t n = strlen(schemes[i]);
        if (len >= n && memcmp(url, schemes[i], n) == 0)
            p = url + n;
    }
    if (p == NULL)
        return fail(out, err, "is not a PostgreSQL URL (postgresql://user:password@host:port/"
                    "dbname, also spelt postgresql+asyncpg:// or postgres://)");

    pgurl_parts parts;
    pgurl_split(p, end, &parts);
    if (parts.user != NULL && parts.user_end > parts.user &&
        (rc = add_decoded(out, "user", parts.user, (size_t)(parts.user_end - parts.user),
                          "user", false, err)) < 0)
        return rc;
    if (parts.pw != NULL && parts.pw_end > parts.pw &&
        (rc = add_decoded(out, "password", parts.pw, (size_t)(parts.pw_end - parts.pw),
                          "password", true, err)) < 0)
        return rc;
    if ((rc = parse_host_port(out, parts.host, parts.host_end, err)) < 0)
        return rc;
    if (parts.path != NULL) {
        const char *db = parts.path, *db_end = parts.path_end;
        if (memchr(db, '/', (size_t)(db_end - db)) != NULL) {
            char msg[200], shown[80];
            show(db, (size_t)(db_end - db), shown, sizeof shown);
            snprintf(msg, sizeof msg, "path \"/%s\" is more than a database name", shown);
            return fail(out, err, msg);
        }
        if (db_end > db && (rc = add_decoded(out, "dbname", db, (size_t)(db_end - db),
                                             "database name", false, err)) < 0)
            return rc;
    }
    if (parts.query != NULL && (rc = parse_query(out, parts.query, end, err)) < 0)
        return rc;
    if ((rc = fill(out, "user", user, err)) < 0 || (rc = fill(out, "password", password, err)) < 0)
        return rc;
    return 0;
}

const char *pgurl_get(const pgurl *u, const char *key)
{
    for (size_t i = 0; i < u->n; i++)
        if (strcmp(u->keys[i], key) == 0)
            return u->values[i];
    return NULL;
}
