/* pgurl.c: PostgreSQL URL -> libpq keyword/value pairs: the schemes, the host list and
 * the query keys of PostgreSQL URLs; the split, masking, decoding, hosts and ports are
 * dburl.c's (one rule for every backend). No I/O; asks libpq only for its keywords. Never
 * puts a password into a message.
 *
 * Why not hand the URL to libpq's own parser (PQconninfoParse): Zeus's URLs are written
 * for SQLAlchemy, whose grammar differs from libpq's URI grammar (a password may hold
 * '/', '?' and ':' unescaped, which libpq would split on; asyncpg's ssl=verify-full is not
 * libpq's), the mask must split exactly where the parser does or a message could show a
 * password, and libpq's parse errors quote the token they failed on, which may be the
 * password. So the URL is split and decoded here (dburl.c), and libpq decides what only it
 * knows: which connection keywords exist in the linked libpq (PQconndefaults; a newer
 * libpq's keywords then work without a change here) and which of them hold a secret
 * (dispchar "*"). libpq itself checks the values when it connects. */
#include "store/netdb/pgurl.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char *const schemes[] = {"postgresql://", "postgresql+asyncpg://",
                                      "postgres://"};

/* libpq keywords a URL may not set: zbso needs an ordinary session. */
static const char *const refused[] = {"replication", "requiressl"};

/* asyncpg's ssl= values and the sslmode each means. */
static const struct {
    const char *ssl, *sslmode;
} ssl_modes[] = {
    {"disable", "disable"}, {"allow", "allow"},         {"prefer", "prefer"},
    {"require", "require"}, {"verify-ca", "verify-ca"}, {"verify-full", "verify-full"},
    {"true", "require"},    {"false", "disable"},
};

/* The linked libpq's connection options (PQconndefaults), read once; NULL when libpq
 * could not allocate them. Kept for the life of the process. */
static PQconninfoOption *libpq_options;
static pthread_once_t options_once = PTHREAD_ONCE_INIT;
static void options_init(void)
{
    libpq_options = PQconndefaults();
}

/* libpq's option spelt [s, s + n) after decoding, or NULL (also when libpq's list could
 * not be read: every key is then refused, naming it, rather than guessed at). */
static const PQconninfoOption *find_option(const char *s, size_t n)
{
    pthread_once(&options_once, options_init);
    for (const PQconninfoOption *o = libpq_options; o != NULL && o->keyword != NULL; o++)
        if (dburl_decoded_equals(s, n, o->keyword))
            return o;
    return NULL;
}

static int fail(pgurl *u, zbso_err *err, const char *what)
{
    dburl_text t = {NULL, 0, 0, u->masked};
    return dburl_fail(&t, err, what);
}

/* Sets key to value (a later key replaces an earlier one). key must live as long as u:
 * a string literal or libpq's option table. */
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

/* host[:port][,host[:port]...], libpq's multi-host form (target_session_attrs picks
 * among them): host is the hosts joined by ',', port the ports (empty for a host without
 * one: libpq's default) when any host has one. */
static int parse_hosts(pgurl *u, dburl_text *t, const dburl_parts *parts, zbso_err *err)
{
    char hosts[PGURL_URL_MAX + 1], ports[PGURL_URL_MAX + 1];
    size_t hosts_len = 0, ports_len = 0, n_hosts = 0;
    bool any_host = false, any_port = false;
    const char *p = parts->host, *h, *h_end;
    while (dburl_next_host(&p, parts->host_end, &h, &h_end)) {
        dburl_host one;
        size_t mark = t->len;
        int rc = dburl_host_port(t, h, h_end, parts->user != NULL, &one, err);
        if (rc < 0)
            return rc;
        if (one.host != NULL && strchr(one.host, ',') != NULL)
            return fail(u, err, "has a host with an escaped ',' (%2C), which libpq would take"
                        " for two hosts");
        /* hosts and ports fit, together no longer than the host part they came from;
         * checked all the same */
        if (hosts_len + strlen(one.host != NULL ? one.host : "") + 8 > sizeof hosts ||
            ports_len + 8 > sizeof ports)
            return fail(u, err, "is too long");
        hosts_len += (size_t)snprintf(hosts + hosts_len, sizeof hosts - hosts_len, "%s%s",
                                      n_hosts > 0 ? "," : "", one.host != NULL ? one.host : "");
        if (one.port != 0)
            ports_len += (size_t)snprintf(ports + ports_len, sizeof ports - ports_len, "%s%u",
                                          n_hosts > 0 ? "," : "", one.port);
        else if (n_hosts > 0)
            ports_len += (size_t)snprintf(ports + ports_len, sizeof ports - ports_len, ",");
        any_host = any_host || one.host != NULL;
        any_port = any_port || one.port != 0;
        n_hosts++;
        t->len = mark; /* the decoded host is in hosts now */
    }
    if (n_hosts > 1 && parts->host_end > parts->host && parts->host_end[-1] == ',')
        return fail(u, err, "ends its host list with a ','");
    const char *v;
    int rc = 0;
    if (any_host && ((rc = dburl_copy(t, hosts, hosts_len, &v, err)) < 0 ||
                     (rc = add(u, "host", v, err)) < 0))
        return rc;
    if (any_port && ((rc = dburl_copy(t, ports, ports_len, &v, err)) < 0 ||
                     (rc = add(u, "port", v, err)) < 0))
        return rc;
    return 0;
}

/* key=value&key=value... */
static int parse_query(pgurl *u, dburl_text *t, const char *p, const char *end,
                       zbso_err *err)
{
    char msg[300], shown[DBURL_SHOWN_MAX + 4];
    dburl_kv kv;
    while (dburl_query_next(&p, end, &kv)) {
        const PQconninfoOption *o = find_option(kv.key, kv.key_n);
        bool ssl = o == NULL && dburl_decoded_equals(kv.key, kv.key_n, "ssl");
        for (size_t i = 0; o != NULL && i < sizeof refused / sizeof refused[0]; i++)
            if (strcmp(o->keyword, refused[i]) == 0) {
                snprintf(msg, sizeof msg, "sets \"%s\", which zbso does not take", o->keyword);
                return fail(u, err, msg);
            }
        if (!kv.has_value)
            return dburl_no_value(t, o != NULL ? o->keyword : ssl ? "ssl" : NULL, err);
        int rc;
        if (o != NULL) {
            /* dispchar "*": libpq's mark of a secret (password, sslpassword) */
            bool secret = o->dispchar != NULL && strchr(o->dispchar, '*') != NULL;
            char what[64];
            const char *v = NULL;
            snprintf(what, sizeof what, "value of %s", o->keyword);
            if ((rc = dburl_decode(t, kv.val, kv.val_n, what, secret, &v, err)) == 0)
                rc = add(u, o->keyword, v, err);
        } else if (ssl) {
            size_t i, n_modes = sizeof ssl_modes / sizeof ssl_modes[0];
            for (i = 0; i < n_modes; i++)
                if (dburl_decoded_equals(kv.val, kv.val_n, ssl_modes[i].ssl))
                    break;
            if (i == n_modes) {
                dburl_show(kv.val, kv.val_n, shown);
                snprintf(msg, sizeof msg, "ssl=\"%s\" is none of disable, allow, prefer,"
                         " require, verify-ca, verify-full, true, false", shown);
                return fail(u, err, msg);
            }
            rc = add(u, "sslmode", ssl_modes[i].sslmode, err);
        } else {
            dburl_show(kv.key, kv.key_n, shown);
            snprintf(msg, sizeof msg, "\"%s\" is not a PostgreSQL connection parameter"
                     " (for example sslmode, sslrootcert, application_name, connect_timeout,"
                     " target_session_attrs)", shown);
            return fail(u, err, msg);
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Adds user or password from outside the URL when the URL gave none. */
static int fill(pgurl *u, dburl_text *t, const char *key, const char *value, zbso_err *err)
{
    const char *v = pgurl_get(u, key);
    if (v != NULL)
        return 0;
    int rc = dburl_cred(t, key, value, &v, err);
    return rc < 0 || v == NULL ? rc : add(u, key, v, err);
}

/* pgurl_parse into t, out->text's bookkeeping. */
static int parse(const char *url, const char *user, const char *password, pgurl *out,
                 dburl_text *t, zbso_err *err)
{
    int rc = 0;
    dburl_parts parts;
    if ((rc = dburl_start(url, schemes, sizeof schemes / sizeof schemes[0],
                          "is not a PostgreSQL URL (postgresql://user:password@host:port/"
                          "dbname, also spelt postgres:// and postgresql+asyncpg://)",
                          t, out->masked, sizeof out->masked, &parts, err)) < 0)
        return rc;
    const char *v, *pw;
    if ((rc = dburl_userinfo(t, &parts, &v, &pw, err)) < 0 ||
        (v != NULL && (rc = add(out, "user", v, err)) < 0) ||
        (pw != NULL && (rc = add(out, "password", pw, err)) < 0))
        return rc;
    if ((rc = parse_hosts(out, t, &parts, err)) < 0)
        return rc;
    if ((rc = dburl_dbname(t, &parts, &v, err)) < 0 ||
        (v != NULL && (rc = add(out, "dbname", v, err)) < 0))
        return rc;
    if (parts.query != NULL && (rc = parse_query(out, t, parts.query, parts.end, err)) < 0)
        return rc;
    if ((rc = fill(out, t, "user", user, err)) < 0 ||
        (rc = fill(out, t, "password", password, err)) < 0)
        return rc;
    return 0;
}

int pgurl_parse(const char *url, const char *user, const char *password, pgurl *out,
                zbso_err *err)
{
    out->n = 0;
    out->keys[0] = NULL;
    out->values[0] = NULL;
    out->masked[0] = '\0';
    dburl_text t = {out->text, sizeof out->text, 0, out->masked};
    int rc = parse(url, user, password, out, &t, err);
    out->text_len = t.len;
    return rc;
}

const char *pgurl_get(const pgurl *u, const char *key)
{
    for (size_t i = 0; i < u->n; i++)
        if (strcmp(u->keys[i], key) == 0)
            return u->values[i];
    return NULL;
}
