/* store.c: picks a backend from a database URL and forwards open/close/exec to it, and
 * holds what every backend's read-only units share. No database state of its own and no
 * backend's internals. */
#include <string.h>

#include "store/storeInt.h"

/* URL prefix -> backend. */
static const struct {
    const char *prefix;
    const store_backend *backend;
} backends[] = {
    {"sqlite:///", &store_sqlite_backend},
    {"sqlite+aiosqlite:///", &store_sqlite_backend},
    {"postgresql://", &store_postgresql_backend},
    {"postgresql+asyncpg://", &store_postgresql_backend},
    {"memory://", &store_memory_backend},
};

#define SUPPORTED_SCHEMES                                                                 \
    "sqlite:///path, sqlite+aiosqlite:///path, postgresql://user:password@host:port/db,"   \
    " postgresql+asyncpg://user:password@host:port/db, memory://"

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

/* Runs fn read-only; through exec for a backend older than version 2. */
int store_exec_read(store *st, store_work_fn fn, void *arg, zbso_err *err)
{
    const store_backend *b = st->backend;
    if (b->version >= 2 && b->exec_read != NULL)
        return b->exec_read(st, fn, arg, err);
    return b->exec(st, fn, arg, err);
}

/* The write operations of a read-only unit: each changes nothing and says which
 * operation a read-only unit of work tried. */
static int refuse(zbso_err *err, const char *op)
{
    return err_set(err, ZBSO_EINTERNAL, "%s called in a read-only unit of work", op);
}

static int ro_job_insert(store_txn *t, const zbso_job *job, zbso_err *err)
{
    return refuse(err, "job_insert");
}

static int ro_job_update(store_txn *t, const zbso_job *job, zbso_err *err)
{
    return refuse(err, "job_update");
}

static int ro_job_delete(store_txn *t, const char *job_id, zbso_err *err)
{
    return refuse(err, "job_delete");
}

static int ro_trial_insert(store_txn *t, const char *job_id, const zbso_trial *trial,
                           zbso_err *err)
{
    return refuse(err, "trial_insert");
}

static int ro_trial_update(store_txn *t, const char *job_id, const zbso_trial *trial,
                           zbso_err *err)
{
    return refuse(err, "trial_update");
}

static int ro_trials_fail_stale(store_txn *t, const char *job_id, double cutoff, double now,
                                int64_t *n_failed, zbso_err *err)
{
    if (n_failed != NULL)
        *n_failed = 0;
    return refuse(err, "trials_fail_stale");
}

static int ro_arm_put(store_txn *t, const char *job_id, const zbso_arm *arm, zbso_err *err)
{
    return refuse(err, "arm_put");
}

void store_ops_read_only(const store_txn_ops *rw, store_txn_ops *ro)
{
    *ro = (store_txn_ops){
        .job_get = rw->job_get,
        .job_insert = ro_job_insert,
        .job_update = ro_job_update,
        .job_delete = ro_job_delete,
        .job_ids = rw->job_ids,
        .trial_insert = ro_trial_insert,
        .trial_get = rw->trial_get,
        .trial_update = ro_trial_update,
        .trials_list = rw->trials_list,
        .trials_fail_stale = ro_trials_fail_stale,
        .arms_get = rw->arms_get,
        .arm_put = ro_arm_put,
    };
}
