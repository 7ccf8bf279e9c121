/* store.c: picks a backend from a database URL and forwards open/close/exec to it; owns
 * the schema policy (create, migrate or refuse, with its messages) on top of each
 * backend's schema primitives, the refusal of writes in read-only units, the buffer
 * of curve points with its flusher thread, and power profiles' text for SQL backends. No
 * database state and no backend's internals. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/optimizer.h"
#include "core/spec.h"
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
    {"postgres://", &store_postgresql_backend},   /* libpq's alias */
    {"mysql://", &store_mysql_backend},
    {"mysql+asyncmy://", &store_mysql_backend},
    {"mysql+aiomysql://", &store_mysql_backend},
    {"mysql+pymysql://", &store_mysql_backend},
    {"mysql+mysqldb://", &store_mysql_backend},
    {"mysql+mysqlconnector://", &store_mysql_backend},
    {"mariadb://", &store_mysql_backend},
    {"mariadb+mariadbconnector://", &store_mysql_backend},
    {"memory://", &store_memory_backend},
};

#define SUPPORTED_SCHEMES                                                                \
    "sqlite:///path, sqlite+aiosqlite:///path, postgresql://user:password@host:port/db," \
    " postgresql+asyncpg://user:password@host:port/db (also postgres://),"               \
    " mysql://user:password@host:port/db"                                                \
    " (also mysql+asyncmy, mysql+aiomysql, mysql+pymysql, mariadb), memory://"

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
    /* sqlite://x.db reads as host "x.db": say what was meant. */
    if (strncmp(url, "sqlite://", 9) == 0 || strncmp(url, "sqlite+aiosqlite://", 19) == 0) {
        const char *path = strstr(url, "://") + 3;
        err_set(err, ZBSO_EINVAL,
                "\"%.128s\" has two slashes after \"sqlite:\"; a SQLite URL has three and then "
                "the path: sqlite:///%.128s (relative to the working directory) or "
                "sqlite:////absolute/path", url, path);
        goto out;
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

static int curves_start(store *st, zbso_err *err);
static void curves_stop(store *st);

/* Opens url with its backend and checks its schema against opt (store.h), then starts the
 * flusher of curve points unless opt->discard_curves. Returns 0 with *out set, or the
 * negative code (ZBSO_EINVAL for an unknown scheme, ZBSO_ESCHEMA for a refused schema,
 * ZBSO_ENOMEM when the flusher cannot start) with *out NULL and the store closed. */
int store_open(const char *url, const store_options *opt, store **out, zbso_err *err)
{
    *out = NULL;
    const store_backend *b = store_backend_for_url(url, err);
    if (b == NULL)
        return ZBSO_EINVAL;
    return store_open_backend(b, url, opt, out, err);
}

int store_open_backend(const store_backend *b, const char *url, const store_options *opt,
                       store **out, zbso_err *err)
{
    static const store_options defaults = {.create_if_empty = true};
    int rc;
    store *st = NULL;
    *out = NULL;
    if (opt == NULL)
        opt = &defaults;
    if ((rc = b->open(url, opt, &st, err)) < 0)
        goto out;
    schema_plan p = {.st = st, .opt = opt};
    if ((rc = schema_apply(st, &p, err)) < 0)
        goto out;
    if (!opt->any_schema && (rc = store_health(st, err)) < 0)
        goto out;
    if (!opt->discard_curves && (rc = curves_start(st, err)) < 0)
        goto out;
    *out = st;
    st = NULL;
out:
    store_close(st);
    return rc;
}

/* Closes st (NULL is a no-op): writes the buffered curve points, then the backend
 * finishes its pending units of work. */
void store_close(store *st)
{
    if (st != NULL) {
        curves_stop(st);
        st->backend->close(st);
    }
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

/* ---- curve points (store.h, docs/DESIGN.md "Curve points") ---- */

/* A retry after a flush that failed waits this long, so that a database that is down is
 * not asked again at every point. */
#define CURVE_RETRY_S 1.0

/* One buffered point with the trial it belongs to. */
typedef struct curve_entry {
    char job_id[ZBSO_ID_MAX + 1];
    int64_t trial_number;
    uint64_t seq;                /* order of arrival, to keep it through qsort */
    zbso_curve_point p;
} curve_entry;

struct store_curves {
    pthread_mutex_t mu;          /* guards everything below but flush_mu */
    pthread_cond_t cv;           /* on CLOCK_MONOTONIC: wakes the flusher */
    pthread_mutex_t flush_mu;    /* one flush at a time: the flusher's or a caller's */
    curve_entry *buf;            /* the points not yet taken by a flush, in arrival order */
    size_t n, cap;
    curve_entry *spare;          /* a second array, swapped with buf by each flush */
    size_t spare_cap;
    size_t inflight;             /* points a flush has taken and not yet settled */
    double oldest_s;             /* CLOCK_MONOTONIC s when buf's first point came */
    double retry_at_s;           /* after a failed flush: the flusher waits until then */
    uint64_t seq, written, dropped;
    bool stop;
    pthread_t thread;
    log_limit drop_log, fail_log;
};

/* Orders pointers to entries by (job id, trial number, arrival). */
static int entry_cmp(const void *a, const void *b)
{
    const curve_entry *x = *(const curve_entry *const *)a, *y = *(const curve_entry *const *)b;
    int c = strcmp(x->job_id, y->job_id);
    if (c != 0)
        return c;
    if (x->trial_number != y->trial_number)
        return x->trial_number < y->trial_number ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

typedef struct curve_batch {
    const curve_entry **e;       /* sorted by (job id, trial number, arrival) */
    zbso_curve_point *points;    /* the same points in that order, for reports_put */
    size_t n;
} curve_batch;

/* The unit of a flush: one reports_put per (job, trial). */
static int curves_unit(store_txn *t, void *arg, zbso_err *err)
{
    const curve_batch *b = arg;
    int rc = 0;
    for (size_t i = 0, k; rc == 0 && i < b->n; i = k) {
        for (k = i + 1; k < b->n && b->e[k]->trial_number == b->e[i]->trial_number &&
                        strcmp(b->e[k]->job_id, b->e[i]->job_id) == 0; k++)
            ;
        rc = store_reports_put(t, b->e[i]->job_id, b->e[i]->trial_number, &b->points[i],
                               k - i, err);
    }
    return rc;
}

/* Writes what buf holds now in one unit of work. A unit that fails for a storage outage
 * (ZBSO_EUNAVAIL) puts its points back in front of those that came meanwhile, for the next
 * try; any other failure (a value the database refuses, a bug) would fail again, so its
 * points are dropped and counted. Returns 0 or the unit's code with err set. */
static int curves_flush(store *st, zbso_err *err)
{
    struct store_curves *c = st->curves;
    zbso_curve_point *points = NULL;
    const curve_entry **order = NULL;
    int rc = 0;
    pthread_mutex_lock(&c->flush_mu);
    pthread_mutex_lock(&c->mu);
    curve_entry *take = c->buf;
    size_t n = c->n, take_cap = c->cap;
    c->buf = c->spare;
    c->cap = c->spare_cap;
    c->spare = NULL;
    c->spare_cap = 0;
    c->n = 0;
    c->inflight = n;
    pthread_mutex_unlock(&c->mu);
    if (n > 0) {
        points = malloc(n * sizeof *points);
        order = malloc(n * sizeof *order);
        if (points == NULL || order == NULL) {
            rc = err_set(err, ZBSO_ENOMEM, "out of memory writing %zu curve points", n);
        } else {
            /* Sort pointers: an entry is 360 bytes. */
            for (size_t i = 0; i < n; i++)
                order[i] = &take[i];
            qsort(order, n, sizeof *order, entry_cmp);
            for (size_t i = 0; i < n; i++)
                points[i] = order[i]->p;
            curve_batch b = {order, points, n};
            rc = store_exec(st, curves_unit, &b, err);
        }
    }
    pthread_mutex_lock(&c->mu);
    bool keep = rc == ZBSO_EUNAVAIL || rc == ZBSO_ENOMEM;
    if (keep && take_cap < n + c->n) {
        /* Never past STORE_CURVE_MAX: store_report_add counts the points in flight. */
        curve_entry *grown = realloc(take, (n + c->n) * sizeof *take);
        keep = grown != NULL;
        if (grown != NULL) {
            take = grown;
            take_cap = n + c->n;
        }
    }
    if (keep) {
        /* The points taken go back in front of those that came meanwhile. */
        if (c->n > 0)
            memcpy(take + n, c->buf, c->n * sizeof *take);
        curve_entry *emptied = c->buf;
        size_t emptied_cap = c->cap;
        c->buf = take;
        c->cap = take_cap;
        c->n += n;
        take = emptied;
        take_cap = emptied_cap;
        c->retry_at_s = clk_mono_s() + CURVE_RETRY_S;
        log_limited(&c->fail_log, ZLOG_WARN, "database %s: %zu curve points not written,"
                    " kept for the next try: %s", st->shown, n, err ? err->msg : "");
    } else if (rc < 0) {
        c->dropped += n;
        log_limited(&c->fail_log, ZLOG_WARN, "database %s: %zu curve points dropped: %s",
                    st->shown, n, err ? err->msg : "");
    } else {
        c->written += n;
    }
    c->inflight = 0;
    free(c->spare);
    c->spare = take;
    c->spare_cap = take_cap;
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_unlock(&c->flush_mu);
    free(points);
    free(order);
    return rc;
}

/* The flusher: writes buf once it holds STORE_CURVE_BATCH points or its oldest point is
 * STORE_CURVE_DELAY_S old, not before retry_at_s after a failure, until stop. */
static void *curves_main(void *arg)
{
    store *st = arg;
    struct store_curves *c = st->curves;
    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        double now = clk_mono_s(), due = INFINITY;
        if (c->n >= STORE_CURVE_BATCH)
            due = now;
        else if (c->n > 0)
            due = c->oldest_s + STORE_CURVE_DELAY_S;
        if (c->n > 0 && due < c->retry_at_s)
            due = c->retry_at_s;
        if (due <= now) {
            pthread_mutex_unlock(&c->mu);
            zbso_err err = {0};
            curves_flush(st, &err);
            pthread_mutex_lock(&c->mu);
        } else if (isinf(due)) {
            pthread_cond_wait(&c->cv, &c->mu);
        } else {
            struct timespec ts = clk_deadline(CLOCK_MONOTONIC, due - now);
            pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* Sets up st->curves and starts its flusher. Returns 0 or ZBSO_ENOMEM with err set. */
static int curves_start(store *st, zbso_err *err)
{
    struct store_curves *c = calloc(1, sizeof *c);
    if (c == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory opening %s", st->shown);
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->flush_mu, NULL);
    clk_cond_init_mono(&c->cv);
    st->curves = c;
    if (pthread_create(&c->thread, NULL, curves_main, st) != 0) {
        st->curves = NULL;
        pthread_cond_destroy(&c->cv);
        pthread_mutex_destroy(&c->flush_mu);
        pthread_mutex_destroy(&c->mu);
        free(c);
        return err_set(err, ZBSO_ENOMEM, "cannot start the curve point writer of %s",
                       st->shown);
    }
    return 0;
}

/* Stops the flusher and writes what is left (one try: a point that cannot be written now
 * is lost, and the log says how many). */
static void curves_stop(store *st)
{
    struct store_curves *c = st->curves;
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    zbso_err err = {0};
    if (curves_flush(st, &err) < 0 && c->n > 0)
        log_warn("database %s: %zu curve points lost at close: %s", st->shown, c->n, err.msg);
    st->curves = NULL;
    free(c->buf);
    free(c->spare);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->flush_mu);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void store_report_add(store *st, const char *job_id, int64_t trial_number,
                      const zbso_curve_point *point)
{
    struct store_curves *c = st->curves;
    size_t len = strlen(job_id);
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    if (len > ZBSO_ID_MAX || c->n + c->inflight >= STORE_CURVE_MAX)
        goto drop;
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 64;
        if (ncap > STORE_CURVE_MAX)
            ncap = STORE_CURVE_MAX;
        curve_entry *grown = realloc(c->buf, ncap * sizeof *grown);
        if (grown == NULL)
            goto drop;
        c->buf = grown;
        c->cap = ncap;
    }
    curve_entry *e = &c->buf[c->n++];
    memcpy(e->job_id, job_id, len + 1);
    e->trial_number = trial_number;
    e->seq = c->seq++;
    e->p = *point;
    if (c->n == 1)
        c->oldest_s = clk_mono_s();
    /* The flusher needs to hear of the first point (to time it) and of a full batch. */
    if (c->n == 1 || c->n == STORE_CURVE_BATCH)
        pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return;
drop:
    c->dropped++;
    size_t held = c->n + c->inflight;
    pthread_mutex_unlock(&c->mu);
    char shown[128];
    log_escape(job_id, len, shown, sizeof shown);
    log_limited(&c->drop_log, ZLOG_WARN, "database %s: curve point of job \"%s\" dropped"
                " (%zu points buffered, at most %d)", st->shown, shown, held, STORE_CURVE_MAX);
}

int store_report_flush(store *st, zbso_err *err)
{
    return st->curves != NULL ? curves_flush(st, err) : 0;
}

void store_curve_stats(store *st, uint64_t *written, uint64_t *dropped, uint64_t *buffered)
{
    struct store_curves *c = st->curves;
    uint64_t w = 0, d = 0, b = 0;
    if (c != NULL) {
        pthread_mutex_lock(&c->mu);
        w = c->written;
        d = c->dropped;
        b = c->n + c->inflight;
        pthread_mutex_unlock(&c->mu);
    }
    if (written != NULL)
        *written = w;
    if (dropped != NULL)
        *dropped = d;
    if (buffered != NULL)
        *buffered = b;
}

/* ---- power profiles' measurements as text (storeInt.h) ---- */

void store_prior_format(const zbso_job_spec *s, char *buf)
{
    size_t len = 0;
    for (size_t i = 0; i < s->n_prior_jobs && i < ZBSO_MAX_PRIOR_JOBS; i++) {
        if (i > 0)
            buf[len++] = '\n';
        for (const char *p = s->prior_jobs[i]; *p != '\0'; p++) {
            if (*p == '\\' || *p == '\n') {
                buf[len++] = '\\';
                buf[len++] = *p == '\n' ? 'n' : '\\';
            } else {
                buf[len++] = *p;
            }
        }
    }
    buf[len] = '\0';
}

int store_extras_read(const char *policy, bool warm_start, const char *prior_text,
                      bool has_intensity, double intensity, zbso_job_spec *s, zbso_err *err)
{
    char buf[OPT_FMT_DOUBLE_MAX];
    if (has_intensity && !(intensity >= 0.0 && intensity <= ZBSO_INTENSITY_MAX))
        return err_set(err, ZBSO_ESTORE, "job \"%.300s\" has carbon_intensity %s, outside "
                       "0..%g", s->job_id, opt_fmt_double(buf, intensity), ZBSO_INTENSITY_MAX);
    s->has_carbon_intensity = has_intensity;
    s->carbon_intensity_g_per_kwh = has_intensity ? intensity : 0.0;
    if (spec_policy_parse(policy, &s->policy) < 0)
        return err_set(err, ZBSO_ESTORE, "job \"%.300s\" has an unknown policy \"%.40s\"",
                       s->job_id, policy);
    s->has_policy = true;
    s->warm_start = warm_start;
    s->n_prior_jobs = 0;
    const char *p = prior_text;
    while (*p != '\0') {
        size_t len = 0;
        if (s->n_prior_jobs == ZBSO_MAX_PRIOR_JOBS)
            goto bad;
        char *id = s->prior_jobs[s->n_prior_jobs];
        for (; *p != '\0' && *p != '\n'; p++) {
            char c = *p;
            if (c == '\\') {
                p++;
                if (*p != '\\' && *p != 'n')
                    goto bad;
                c = *p == 'n' ? '\n' : '\\';
            }
            if (len == ZBSO_ID_MAX)
                goto bad;
            id[len++] = c;
        }
        if (len == 0)
            goto bad;
        id[len] = '\0';
        s->n_prior_jobs++;
        if (*p == '\n' && *++p == '\0')
            goto bad;
    }
    return 0;
bad:
    return err_set(err, ZBSO_ESTORE, "job \"%.300s\" has malformed prior_jobs \"%.100s\"",
                   s->job_id, prior_text);
}

void store_pl_format(const zbso_power_profile *p, char *buf)
{
    char t[OPT_FMT_DOUBLE_MAX], e[OPT_FMT_DOUBLE_MAX];
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < p->n && i < ZBSO_MAX_POWER_LIMITS; i++)
        len += (size_t)snprintf(buf + len, STORE_PL_TEXT_MAX - len, "%s%lld,%s,%s",
                                i ? ";" : "", (long long)p->m[i].power_limit_w,
                                opt_fmt_double(t, p->m[i].time_s),
                                opt_fmt_double(e, p->m[i].energy_j));
}

int store_pl_parse(const char *text, const char *job_id, zbso_power_profile *out,
                   zbso_err *err)
{
    const char *p = text;
    out->n = 0;
    while (*p != '\0') {
        char *end;
        zbso_pl_measurement m;
        bool ok = out->n < ZBSO_MAX_POWER_LIMITS;
        if (ok) {
            m.power_limit_w = strtoll(p, &end, 10);
            ok = end != p && *end == ',';
        }
        if (ok) {
            p = end + 1;
            m.time_s = strtod(p, &end);
            ok = end != p && *end == ',';
        }
        if (ok) {
            p = end + 1;
            m.energy_j = strtod(p, &end);
            ok = end != p && (*end == ';' || *end == '\0');
        }
        if (!ok)
            return err_set(err, ZBSO_ESTORE, "job \"%.300s\" has a malformed power profile "
                           "\"%.100s\"", job_id, text);
        out->m[out->n++] = m;
        p = *end == ';' ? end + 1 : end;
    }
    if (out->n == 0)
        return err_set(err, ZBSO_ESTORE, "job \"%.300s\" has an empty power profile", job_id);
    return 0;
}
