/* dburl.h: what every database URL shares (SPEC §4): SQLAlchemy's split of
 * scheme://user:password@host:port/db?query, password masking, percent-decoding, hosts
 * and ports (IPv6 literals in brackets), the query's key=value pairs, and the credentials
 * from ZEUS_BSO_DB_USER / ZEUS_BSO_DB_PASSWORD. pgurl.c and myurl.c hold only their
 * backend's keys. Pure: no I/O, no allocation; bounded and safe on any bytes (fuzzed). */
#ifndef ZBSO_STORE_DBURL_H
#define ZBSO_STORE_DBURL_H

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

#define DBURL_URL_MAX 2048     /* bytes of a URL, without the NUL */
#define DBURL_CRED_MAX 1024    /* bytes of a user or password given apart from the URL */
#define DBURL_SHOWN_MAX 64     /* bytes of a bad value a message shows */

/* The parts of what follows "scheme://", as pointers into the URL; each part ends where
 * the next begins. The grammar is SQLAlchemy's (Zeus's URLs are written for it): a user
 * runs to the first ':', '/', '?' or '@'; a password to the first '@' after its ':' and
 * may hold '/', '?' and ':' but not '@'; host[:port] runs to the first '/' or '?'; then
 * /dbname, then ?query. Parsing (pgurl_parse, myurl_parse) and masking (dburl_mask) all
 * split here, so a message never shows what a parser took for a password. */
typedef struct dburl_parts {
    const char *user, *user_end;     /* NULL when there is no "...@" */
    const char *pw, *pw_end;         /* NULL when there is no ":password" */
    const char *host, *host_end;     /* host[:port][,host[:port]...] */
    const char *path, *path_end;     /* after the '/', or NULL */
    const char *query, *end;         /* after the '?', or NULL */
    /* After "...@", the host up to the last '@' in it: masked, since it may be the rest
     * of a password with an unescaped '@' ("user:p@ss@host"). */
    const char *odd_host, *odd_host_end;
    /* From the first port that is not 1-5 digits to the host's end: masked too, since a
     * password whose "@host" was left out reads as one ("postgresql://user:secret/db"). */
    const char *odd_port, *odd_port_end;
} dburl_parts;

/* Splits [p, end), the text after "scheme://", into *out. Any bytes; never fails. */
void dburl_split(const char *p, const char *end, dburl_parts *out);

/* Writes url to out (capacity cap >= 1, always NUL-terminated, cut short when longer)
 * with the password after "user:" and the value of every query key not known to hold no
 * secret replaced by "***", and bytes below 0x20 or 0x7f as '?'. Any bytes; for messages
 * and logs. */
void dburl_mask(const char *url, char *out, size_t cap);

/* Where decoded values go: buf[len..cap) is free; masked is the URL for messages. */
typedef struct dburl_text {
    char *buf;
    size_t cap, len;
    const char *masked;
} dburl_text;

/* Sets err to ZBSO_EINVAL: "database URL "<masked>": <what>". Returns ZBSO_EINVAL. */
int dburl_fail(const dburl_text *t, zbso_err *err, const char *what);

/* Writes at most DBURL_SHOWN_MAX bytes of [s, s + n) for a message into out (room for
 * DBURL_SHOWN_MAX + 4 bytes), control bytes and DEL as '?', "..." when cut. */
void dburl_show(const char *s, size_t n, char *out);

/* True when the n bytes at s, percent-decoded, spell word. */
bool dburl_decoded_equals(const char *s, size_t n, const char *word);

/* Percent-decodes [s, s + n) into t ('+' stays '+'). Returns 0 with *value pointing at
 * the NUL-terminated result, or ZBSO_EINVAL naming `what` (and the raw text unless
 * secret): a '%' not followed by two hex digits, an escape of a NUL byte, no room. */
int dburl_decode(dburl_text *t, const char *s, size_t n, const char *what, bool secret,
                 const char **value, zbso_err *err);

/* Copies n bytes of s into t, NUL-terminated. Returns 0 with *value, or ZBSO_EINVAL
 * ("is too long") when t is full. */
int dburl_copy(dburl_text *t, const char *s, size_t n, const char **value, zbso_err *err);

/* The user or password given apart from the URL (what: "user" or "password"; value may
 * be NULL or "", then *out is left alone): copied into t when *out is NULL (the URL gave
 * none). Returns 0, or ZBSO_EINVAL when it is longer than DBURL_CRED_MAX bytes. */
int dburl_cred(dburl_text *t, const char *what, const char *value, const char **out,
               zbso_err *err);

/* The start of every parse: writes url masked into masked (masked_cap bytes; t->masked
 * should point at it), then refuses a NULL url, one longer than DBURL_URL_MAX bytes or one
 * of none of the n_schemes schemes ("postgresql://"; not_ours is then the message, after
 * the masked URL), and splits what follows the scheme into *parts. Returns 0 or
 * ZBSO_EINVAL. */
int dburl_start(const char *url, const char *const *schemes, size_t n_schemes,
                const char *not_ours, dburl_text *t, char *masked, size_t masked_cap,
                dburl_parts *parts, zbso_err *err);

/* The user and password of parts, decoded into t: each NULL when the URL gives none or
 * an empty one. Returns 0 or ZBSO_EINVAL (the password's text never in the message). */
int dburl_userinfo(dburl_text *t, const dburl_parts *parts, const char **user,
                   const char **password, zbso_err *err);

/* The database name of parts' path, decoded into t: *value NULL when there is none (no
 * path, or "/" alone). Refuses a path with a second '/'. Returns 0 or ZBSO_EINVAL. */
int dburl_dbname(dburl_text *t, const dburl_parts *parts, const char **value, zbso_err *err);

/* One host of a URL: decoded host (NULL when empty) and port (0 when none). */
typedef struct dburl_host {
    const char *host;
    unsigned port;
} dburl_host;

/* Parses [p, end) as host[:port] or [v6]:port (the brackets go), the host decoded into t;
 * userinfo: whether "...@" came before (a message about a bad port then says it may be
 * part of a password). Refused: an '@' (masked), a ',' (one host here: a caller that
 * takes several splits them with dburl_next_host first), a port not from 1 to 65535 (not
 * shown unless it is digits), unbalanced brackets. Returns 0 or ZBSO_EINVAL. */
int dburl_host_port(dburl_text *t, const char *p, const char *end, bool userinfo,
                    dburl_host *out, zbso_err *err);

/* The next host of a comma-separated list [*p, end) ("h1:5432,[::1]:5433"): sets
 * [*host, *host_end) and moves *p past it and its ','. A ',' inside brackets belongs to
 * the host. Returns false when *p is at end. */
bool dburl_next_host(const char **p, const char *end, const char **host,
                     const char **host_end);

/* One key=value of a query, spans into the URL, not decoded. */
typedef struct dburl_kv {
    const char *key, *val;
    size_t key_n, val_n;
    bool has_value;          /* there was a '=' */
} dburl_kv;

/* The next key=value of the query [*p, end), skipping empty parts between '&'s; moves
 * *p past it. Returns false at the end. */
bool dburl_query_next(const char **p, const char *end, dburl_kv *kv);

/* The failure for a query part without '=': named (name, not NULL) only when it is a
 * known key, since the text might be a mangled "password=...". Returns ZBSO_EINVAL. */
int dburl_no_value(const dburl_text *t, const char *name, zbso_err *err);

#endif
