/* pgurl.h: PostgreSQL database URLs (SPEC §4) turned into libpq keyword/value pairs, with
 * their passwords masked for messages (dburl.h). No network, no allocation but libpq's
 * keyword list read once; bounded and safe on any bytes (a fuzz target calls it). */
#ifndef ZBSO_STORE_PGURL_H
#define ZBSO_STORE_PGURL_H

#include <stddef.h>

#include "store/dburl.h"
#include "util/err.h"

#define PGURL_URL_MAX DBURL_URL_MAX     /* bytes of a URL, without the NUL */
#define PGURL_CRED_MAX DBURL_CRED_MAX   /* bytes of a user or password given apart */
#define PGURL_PARAMS_MAX 24    /* keyword/value pairs */
#define PGURL_TEXT_MAX (PGURL_URL_MAX + 2 * (PGURL_CRED_MAX + 1) + PGURL_PARAMS_MAX + 1)

/* A parsed URL. keys/values are NULL-terminated arrays, ready for PQconnectdbParams
 * (expand_dbname 0): keys are libpq keywords (static for the process), values point into
 * text. The struct points into itself, so it must not be copied by value; it owns nothing
 * to free. */
typedef struct pgurl {
    size_t n;                                  /* pairs in keys/values */
    const char *keys[PGURL_PARAMS_MAX + 1];
    const char *values[PGURL_PARAMS_MAX + 1];
    char masked[PGURL_URL_MAX + 1];            /* the URL as dburl_mask writes it */
    char text[PGURL_TEXT_MAX];                 /* storage of the values */
    size_t text_len;                           /* bytes of text in use */
} pgurl;

/* Parses postgresql://[user[:password]@][host][:port][,host[:port]...][/dbname]
 * [?key=value&...], also spelt postgres:// (libpq's) and postgresql+asyncpg://. user,
 * password, hosts, dbname and query values are percent-decoded; a host in brackets is an
 * IPv6 address; a host such as %2Frun%2Fpg is a unix socket directory; several hosts
 * become libpq's lists host=h1,h2 and port=p1,p2 (target_session_attrs=read-write picks
 * the primary). Query keys are the linked libpq's connection keywords (sslmode,
 * sslrootcert, application_name, connect_timeout, target_session_attrs, options, ...) but
 * replication and requiressl; asyncpg's ssl=... is taken as sslmode.
 * A later key replaces an earlier one. user / password (may be NULL or "") fill the URL's
 * user and password when it has none (ZEUS_BSO_DB_USER / ZEUS_BSO_DB_PASSWORD).
 * Returns 0 with *out filled, or ZBSO_EINVAL with err naming the URL (password masked) and
 * what is wrong with it; *out is then unusable. url may hold any bytes. */
int pgurl_parse(const char *url, const char *user, const char *password, pgurl *out,
                zbso_err *err);

/* The value of keyword key, or NULL when the URL gave none. */
const char *pgurl_get(const pgurl *u, const char *key);

#endif
