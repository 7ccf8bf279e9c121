/* store.c: picks a backend from a database URL and forwards open/close/exec to it.
 * Holds no database state of its own and knows no backend's internals. */
#include <string.h>

#include "store/storeInt.h"

/* URL prefix -> backend. PostgreSQL joins this table with its backend. */
static const struct {
    const char *prefix;
    const store_backend *backend;
} backends[] = {
    {"sqlite:///", &store_sqlite_backend},
    {"sqlite+aiosqlite:///", &store_sqlite_backend},
    {"memory://", &store_memory_backend},
};

#define SUPPORTED_SCHEMES "sqlite:///path, sqlite+aiosqlite:///path, memory://"

/* Returns the backend whose prefix url starts with, or NULL with ZBSO_EINVAL naming the
 * URL's scheme (the text before "://", or the whole URL when it has none). */
const store_backend *store_backend_for_url(const char *url, zbso_err *err)
{
    const store_backend *found = NULL;
    if (url == NULL || url[0] == '\0') {
        err_set(err, ZBSO_EINVAL,
                "the database URL is empty; supported schemes: " SUPPORTED_SCHEMES);
        goto out;
    }
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        if (strncmp(url, backends[i].prefix, strlen(backends[i].prefix)) == 0) {
            found = backends[i].backend;
            goto out;
        }
    }
    const char *sep = strstr(url, "://");
    int scheme_len = sep != NULL ? (int)(sep - url) : (int)strlen(url);
    if (scheme_len > 64)
        scheme_len = 64;
    err_set(err, ZBSO_EINVAL,
            "unsupported database URL scheme \"%.*s\" in \"%.128s\"; supported: " SUPPORTED_SCHEMES,
            scheme_len, url, url);
out:
    return found;
}

/* Opens url with its backend. Returns 0 with *out set, or the backend's negative code
 * (ZBSO_EINVAL for an unknown scheme) with *out NULL. */
int store_open(const char *url, const store_options *opt, store **out, zbso_err *err)
{
    static const store_options defaults = {.create_if_empty = true};
    int rc;
    *out = NULL;
    const store_backend *b = store_backend_for_url(url, err);
    if (b == NULL) {
        rc = ZBSO_EINVAL;
        goto out;
    }
    rc = b->open(url, opt != NULL ? opt : &defaults, out, err);
out:
    return rc;
}

/* Closes st (NULL is a no-op); pending units of work finish first. */
void store_close(store *st)
{
    if (st != NULL)
        st->backend->close(st);
}

/* Runs fn as one durable unit of work; returns fn's code or a database error. */
int store_exec(store *st, store_work_fn fn, void *arg, zbso_err *err)
{
    return st->backend->exec(st, fn, arg, err);
}
