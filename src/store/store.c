/* store.c: picks a backend from a database URL and forwards open/close/exec to it; owns
 * the schema policy (create, migrate or refuse, with its messages) on top of each
 * backend's schema primitives, and the refusal of writes in read-only units. No database
 * state of its own and no backend's internals. */
#include <string.h>

#include "store/storeInt.h"
#include "util/clock.h"
#include "util/log.h"

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

/* ---- schema policy ---- */

/* What a schema_run decided, for the caller's message and log line. */
typedef struct schema_plan {
    const store *st;
    const store_options *opt;    /* opening: the options; NULL for store_migrate */
    int want;                    /* store_migrate: the target version */
    bool read_only;              /* store_schema_version: change nothing */
    int from, to;                /* OUT: the version found and the one chosen */
} schema_plan;

/* The refusals every use shares: a database with tables but no zbso schema, and (unless
 * opened with any_schema) a schema newer than this binary's. Returns 0 or ZBSO_ESCHEMA. */
static int refuse_foreign_or_newer(const schema_plan *p, int version, bool foreign,
                                   zbso_err *err)
{
    int latest = p->st->backend->latest_schema_version;
    if (version == 0 && foreign)
        return err_set(err, ZBSO_ESCHEMA, "database %s holds tables but no zbso schema"
                       " version; it is not a zbso database", p->st->shown);
    if (version > latest && (p->opt == NULL || !p->opt->any_schema))
        return err_set(err, ZBSO_ESCHEMA, "database %s has schema version %d, newer than"
                       " this binary's %d; use a newer zbso", p->st->shown, version, latest);
    return 0;
}

/* store_schema_plan_fn of store_open, store_migrate and store_schema_version. */
static int plan_schema(void *ctx, int version, bool foreign, int *to, zbso_err *err)
{
    schema_plan *p = ctx;
    const store_options *opt = p->opt;
    int latest = p->st->backend->latest_schema_version;
    int rc = 0;
    p->from = p->to = *to = version;
    if (p->read_only)
        goto out;
    if ((rc = refuse_foreign_or_newer(p, version, foreign, err)) < 0)
        goto out;
    if (opt == NULL) {
        if (p->want < version) {
            rc = err_set(err, ZBSO_ESCHEMA, "%s: schema version %d cannot go down to %d",
                         p->st->shown, version, p->want);
            goto out;
        }
        p->to = *to = p->want;
        goto out;
    }
    /* zbso migrate opens at any version and then calls store_migrate. */
    if (version == latest || opt->any_schema)
        goto out;
    if (version == 0 && !opt->create_if_empty && !opt->migrate) {
        rc = err_set(err, ZBSO_ESCHEMA, "database %s is empty (schema version 0, this"
                     " binary's is %d); run `zbso migrate`", p->st->shown, latest);
        goto out;
    }
    if (version > 0 && !opt->migrate) {
        rc = err_set(err, ZBSO_ESCHEMA, "database %s has schema version %d, older than this"
                     " binary's %d; run `zbso migrate` (or serve with --migrate)",
                     p->st->shown, version, latest);
        goto out;
    }
    p->to = *to = latest;
out:
    return rc;
}

/* Runs the plan through the backend and logs a change. Returns schema_run's code. */
static int schema_apply(store *st, schema_plan *p, zbso_err *err)
{
    int rc = st->backend->schema_run(st, plan_schema, p, err);
    if (rc == 0 && p->to != p->from)
        log_info("database %s: schema version %d -> %d", st->shown, p->from, p->to);
    return rc;
}

int store_schema_version(store *st, int *out, zbso_err *err)
{
    schema_plan p = {.st = st, .read_only = true};
    int rc = st->backend->schema_run(st, plan_schema, &p, err);
    *out = p.from;
    return rc;
}

/* Checks the range first, so that a version that does not exist touches no database. */
int store_migrate(store *st, int to, zbso_err *err)
{
    int latest = st->backend->latest_schema_version;
    if (to < 0 || to > latest)
        return err_set(err, ZBSO_EINVAL, "schema version %d does not exist; the latest is %d",
                       to, latest);
    schema_plan p = {.st = st, .want = to != 0 ? to : latest};
    return schema_apply(st, &p, err);
}

/* BEGIN, the backend's schema lock, the steps, COMMIT: what schema_run would run. */
int store_migrate_sql(const store_backend *b, int from, int to,
                      void (*fn)(void *ctx, const char *sql), void *ctx, zbso_err *err)
{
    int latest = b->latest_schema_version;
    if (to == 0)
        to = latest;
    if (from < 0 || to > latest || from > to)
        return err_set(err, ZBSO_EINVAL,
                       "cannot write SQL from schema version %d to %d (versions 0..%d exist)",
                       from, to, latest);
    if (b->schema_steps == NULL)
        return 0;
    fn(ctx, "BEGIN;");
    if (b->schema_lock_sql != NULL)
        fn(ctx, b->schema_lock_sql);
    for (int v = from + 1; v <= to; v++)
        for (const char *const *sql = b->schema_steps[v - 1]; *sql != NULL; sql++)
            fn(ctx, *sql);
    fn(ctx, "COMMIT;");
    return 0;
}

/* Opens url with its backend and checks its schema against opt (store.h). Returns 0 with
 * *out set, or the negative code (ZBSO_EINVAL for an unknown scheme, ZBSO_ESCHEMA for a
 * refused schema) with *out NULL and the store closed. */
int store_open(const char *url, const store_options *opt, store **out, zbso_err *err)
{
    static const store_options defaults = {.create_if_empty = true};
    int rc;
    store *st = NULL;
    *out = NULL;
    if (opt == NULL)
        opt = &defaults;
    const store_backend *b = store_backend_for_url(url, err);
    if (b == NULL) {
        rc = ZBSO_EINVAL;
        goto out;
    }
    if ((rc = b->open(url, opt, &st, err)) < 0)
        goto out;
    schema_plan p = {.st = st, .opt = opt};
    if ((rc = schema_apply(st, &p, err)) < 0)
        goto out;
    if (!opt->any_schema && (rc = store_health(st, err)) < 0)
        goto out;
    *out = st;
    st = NULL;
out:
    store_close(st);
    return rc;
}

/* Closes st (NULL is a no-op); pending units of work finish first. */
void store_close(store *st)
{
    if (st != NULL)
        st->backend->close(st);
}

/* Runs fn as one durable unit of work; returns fn's code or a database error. Times it
 * for store_stats_get (two clock reads and two atomic adds). */
int store_exec(store *st, store_work_fn fn, void *arg, zbso_err *err)
{
    int64_t t0_ns = clk_mono_ns();
    int rc = st->backend->exec(st, fn, arg, err);
    hist_observe_ns(&st->exec_hist, clk_mono_ns() - t0_ns);
    return rc;
}

/* Runs fn read-only (store_backend.exec_read), timed as store_exec is. */
int store_exec_read(store *st, store_work_fn fn, void *arg, zbso_err *err)
{
    int64_t t0_ns = clk_mono_ns();
    int rc = st->backend->exec_read(st, fn, arg, err);
    hist_observe_ns(&st->exec_read_hist, clk_mono_ns() - t0_ns);
    return rc;
}

void store_stats_get(store *st, store_stats *out)
{
    hist_read(&st->exec_hist, &out->write);
    hist_read(&st->exec_read_hist, &out->read);
    out->reruns = atomic_load_explicit(&st->reruns, memory_order_relaxed);
}

int store_health(store *st, zbso_err *err)
{
    return st->backend->health(st, err);
}

int store_write_refused(const char *op, zbso_err *err)
{
    return err_set(err, ZBSO_EINTERNAL, "%s called in a read-only unit of work", op);
}

int store_key_refused(const char *job_id, zbso_err *err)
{
    return err_set(err, ZBSO_EINVAL, "a request key of job \"%.300s\" is longer than %d bytes",
                   job_id, STORE_KEY_MAX);
}
