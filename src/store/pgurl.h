/* pgurl.h: PostgreSQL database URLs (SPEC §4) turned into libpq keyword/value pairs, and
 * the same URLs with their passwords masked for messages. Pure: no libpq, no network, no
 * allocation; bounded and safe on any bytes (a fuzz target calls it). */
#ifndef ZBSO_STORE_PGURL_H
#define ZBSO_STORE_PGURL_H

#include <stddef.h>

#include "util/err.h"

#define PGURL_URL_MAX 2048     /* bytes of a URL, without the NUL */
#define PGURL_CRED_MAX 1024    /* bytes of a user or password given apart from the URL */
#define PGURL_PARAMS_MAX 24    /* keyword/value pairs */
#define PGURL_TEXT_MAX (PGURL_URL_MAX + 2 * (PGURL_CRED_MAX + 1) + PGURL_PARAMS_MAX + 1)

/* A parsed URL. keys/values are NULL-terminated arrays, ready for PQconnectdbParams
 * (expand_dbname 0): keys are static libpq keywords, values point into text. The struct
 * points into itself, so it must not be copied by value; it owns nothing to free. */
typedef struct pgurl {
    size_t n;                                  /* pairs in keys/values */
    const char *keys[PGURL_PARAMS_MAX + 1];
    const char *values[PGURL_PARAMS_MAX + 1];
    char masked[PGURL_URL_MAX + 1];            /* the URL as pgurl_mask writes it */
    char text[PGURL_TEXT_MAX];                 /* storage of the values */
    size_t text_len;
} pgurl;

/* Parses postgresql://[user[:password]@][host][:port][/dbname][?key=value&...], also
 * spelt postgresql+asyncpg://. user, password, host, dbname and query values are
 * percent-decoded; a host in brackets is an IPv6 address; a host such as %2Frun%2Fpg is a
 * unix socket directory. Query keys are libpq connection keywords (sslmode, sslrootcert,
 * application_name, connect_timeout, options, ...); asyncpg's ssl=... is taken as sslmode.
 * A later key replaces an earlier one. user / password (may be NULL or "") fill the URL's
 * user and password when it has none (ZEUS_BSO_DB_USER / ZEUS_BSO_DB_PASSWORD).
 * Returns 0 with *out filled, or ZBSO_EINVAL with err naming the URL (password masked) and
 * what is wrong with it; *out is then unusable. url may hold any bytes. */
int pgurl_parse(const char *url, const char *user, const char *password, pgurl *out,
                zbso_err *err);

/* The value of keyword key, or NULL when the URL gave none. */
const char *pgurl_get(const pgurl *u, const char *key);

/* The parts of what follows "scheme://", as pointers into the URL; each part ends where
 * the next begins. The grammar is SQLAlchemy's (Zeus's URLs are written for it): a user
 * runs to the first ':', '/', '?' or '@'; a password to the first '@' after its ':' and
 * may hold '/', '?' and ':' but not '@'; host[:port] runs to the first '/' or '?'; then
 * /dbname, then ?query. Parsing (pgurl_parse, myurl_parse) and masking (pgurl_mask) all
 * split here, so a message never shows what a parser took for a password. */
typedef struct pgurl_parts {
    const char *user, *user_end;     /* NULL when there is no "...@" */
    const char *pw, *pw_end;         /* NULL when there is no ":password" */
    const char *host, *host_end;     /* host[:port] */
    const char *path, *path_end;     /* after the '/', or NULL */
    const char *query, *end;         /* after the '?', or NULL */
    /* After "...@", the host up to the last '@' in it: masked, since it may be the rest
     * of a password with an unescaped '@' ("user:p@ss@host"). */
    const char *odd_host, *odd_host_end;
    /* A port that is not 1-5 digits: masked too, since a password whose "@host" was left
     * out reads as one ("postgresql://user:secret/db"). */
    const char *odd_port, *odd_port_end;
} pgurl_parts;

/* Splits [p, end), the text after "scheme://", into *out. Any bytes; never fails. */
void pgurl_split(const char *p, const char *end, pgurl_parts *out);

/* Writes url to out (capacity cap >= 1, always NUL-terminated, cut short when longer)
 * with the password after "user:" and every password= query value replaced by "***",
 * and bytes below 0x20 or 0x7f as '?'. Any bytes; for messages and logs. */
void pgurl_mask(const char *url, char *out, size_t cap);

#endif
