/* store.h: the storage interface (SPEC §3.7, §4). Domain operations on jobs, trials and
 * arms, run inside units of work that a backend executes atomically and durably. A backend
 * is a struct of function pointers (like sqlite3_vfs, without its version field: every
 * backend is built in); one per database, each owning its SQL, while store.c owns the
 * schema policy. Knows nothing of HTTP or JSON. */
#ifndef ZBSO_STORE_STORE_H
#define ZBSO_STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/types.h"
#include "util/err.h"
#include "util/hist.h"

typedef struct store store;         /* an open database: backend + its private state */
typedef struct store_txn store_txn; /* one unit of work in progress */

#define STORE_KEY_MAX 255  /* bytes of a trial's request key (the Idempotency-Key) */

/* Filter for store_trials_list. Rows come in ascending trial_number order. */
typedef struct store_trial_query {
    unsigned type_mask;     /* bit (1u << zbso_trial_type); 0 means every type */
    unsigned status_mask;   /* bit (1u << zbso_trial_status); 0 means every status */
    int64_t batch_size;     /* 0: any batch size */
    int64_t last_n;         /* > 0: only the last n matching rows (still ascending) */
    int64_t after;          /* > 0: only trials numbered above this (a page's cursor) */
    int64_t limit;          /* > 0: at most this many rows, the first ones (after last_n) */
} store_trial_query;

/* Filter for jobs_list. Rows come in ascending job id order (bytewise, as memcmp). */
typedef struct store_job_query {
    const char *prefix;     /* NULL or "": every job; else job ids that begin with it */
    const char *after;      /* NULL or "": from the first; else job ids above it (cursor) */
    int64_t limit;          /* > 0: at most this many rows */
} store_job_query;

/* Counts for /metrics (store_txn_ops.counts). */
typedef struct store_counts {
    int64_t jobs;
    int64_t trials[3][3];   /* [zbso_trial_type][zbso_trial_status] */
    /* The least recent lease renewal of any Dispatched trial, in whole unix seconds
     * (rounded down); has_oldest_lease is false when no trial is Dispatched. /metrics
     * exports it so an alert can find trials held past their lease (issue 26). */
    bool has_oldest_lease;
    int64_t oldest_lease_renewed_at;
} store_counts;

/* Called once per job by store_jobs_list, per point by store_reports_list; a non-zero
 * return stops the listing and is returned. */
typedef int (*store_job_fn)(void *ctx, const zbso_job *job);
typedef int (*store_point_fn)(void *ctx, const zbso_curve_point *point);

/* Called once per row by store_trials_list; a non-zero return stops the listing and is
 * returned by store_trials_list. */
typedef int (*store_trial_fn)(void *ctx, const zbso_trial *trial);

/* Called once per profile by store_profiles_list (the profile is the backend's; copy
 * what you keep); a non-zero return stops the listing and is returned. */
typedef int (*store_profile_fn)(void *ctx, const zbso_power_profile *profile);

/* Domain operations inside a unit of work. Each returns 0 or a negative ZBSO_E* code and
 * fills err on failure; ZBSO_ESTORE / ZBSO_EUNAVAIL for database failures. */
typedef struct store_txn_ops {
    /* Loads a job. With for_update, the job is locked until the unit of work ends (a row
     * lock on PostgreSQL and MySQL/MariaDB). ZBSO_ENOTFOUND when there is no such job. */
    int (*job_get)(store_txn *t, const char *job_id, bool for_update, zbso_job *out,
                   zbso_err *err);
    /* Inserts a new job. ZBSO_ECONFLICT when the id exists. */
    int (*job_insert)(store_txn *t, const zbso_job *job, zbso_err *err);
    /* Writes the mutable state of a job (stage, exp_default_batch_size, min cost, rng,
     * num_trials). The spec is immutable. ZBSO_ENOTFOUND when there is no such job. */
    int (*job_update)(store_txn *t, const zbso_job *job, zbso_err *err);
    /* Deletes a job with its trials and arms. ZBSO_ENOTFOUND when there is no such job. */
    int (*job_delete)(store_txn *t, const char *job_id, zbso_err *err);
    /* Calls fn for every job id, ascending; for listing and tools. */
    int (*job_ids)(store_txn *t, int (*fn)(void *ctx, const char *job_id), void *ctx,
                   zbso_err *err);

    /* Inserts a trial. request_key (NULL: none; at most STORE_KEY_MAX bytes) is the
     * idempotency key of the request that dispatched it: it moves to this trial from any
     * other trial of the job that held it, so that a key names one trial per job.
     * ZBSO_ECONFLICT when (job_id, trial_number) exists. */
    int (*trial_insert)(store_txn *t, const char *job_id, const zbso_trial *trial,
                        const char *request_key, zbso_err *err);
    /* ZBSO_ENOTFOUND when there is no such trial. */
    int (*trial_get)(store_txn *t, const char *job_id, int64_t trial_number,
                     zbso_trial *out, zbso_err *err);
    /* The trial of the job that holds request_key (trial_insert). ZBSO_ENOTFOUND when
     * none does (or no such job). */
    int (*trial_by_key)(store_txn *t, const char *job_id, const char *request_key,
                        zbso_trial *out, zbso_err *err);
    /* Rewrites every field of an existing trial (keyed by trial_number). */
    int (*trial_update)(store_txn *t, const char *job_id, const zbso_trial *trial,
                        zbso_err *err);
    /* Lists the job's trials that match q, ascending by trial number. */
    int (*trials_list)(store_txn *t, const char *job_id, const store_trial_query *q,
                       store_trial_fn fn, void *ctx, zbso_err *err);
    /* Marks the job's Dispatched trials whose lease_renewed_at < cutoff as Failed with
     * end_time = now. *n_failed (may be NULL) receives how many. */
    int (*trials_fail_stale)(store_txn *t, const char *job_id, double cutoff, double now,
                             int64_t *n_failed, zbso_err *err);

    /* Writes the job's arms, ascending by batch size, into out (capacity cap). */
    int (*arms_get)(store_txn *t, const char *job_id, zbso_arm *out, size_t cap,
                    size_t *n_out, zbso_err *err);
    /* Inserts or replaces the arm of arm->batch_size. */
    int (*arm_put)(store_txn *t, const char *job_id, const zbso_arm *arm, zbso_err *err);

    /* ---- inspection (SPEC §5) and curve points ---- */
    /* Calls fn for each job matching q, ascending by job id. */
    int (*jobs_list)(store_txn *t, const store_job_query *q, store_job_fn fn, void *ctx,
                     zbso_err *err);
    /* Stores points[0..n-1] of trial (job_id, trial_number): a point replaces the stored
     * point of its epoch unless that one was received later. Points may repeat an epoch:
     * the one received last wins, on a tie the later in points. Points of a trial or job
     * that does not exist (deleted meanwhile) are dropped without an error. */
    int (*reports_put)(store_txn *t, const char *job_id, int64_t trial_number,
                       const zbso_curve_point *points, size_t n, zbso_err *err);
    /* Calls fn for each stored point of the trial, ascending by epoch (none for an
     * unknown trial). */
    int (*reports_list)(store_txn *t, const char *job_id, int64_t trial_number,
                        store_point_fn fn, void *ctx, zbso_err *err);
    /* Fills *out with the number of jobs and of trials by type and status. */
    int (*counts)(store_txn *t, store_counts *out, zbso_err *err);

    /* Power-limit profiles (SPEC §6.1), one per (job, batch size), deleted with their
     * job. profile_put stores p (every field, created_at included) as the profile of
     * (job_id, p->batch_size), replacing the one stored: ZBSO_ENOTFOUND when there is no
     * such job. profile_get fills *out: ZBSO_ENOTFOUND when there is none.
     * profiles_list calls fn for each of the job's profiles, ascending batch size (none
     * for an unknown job). Measurements keep their order and their doubles bit for bit. */
    int (*profile_put)(store_txn *t, const char *job_id, const zbso_power_profile *p,
                       zbso_err *err);
    int (*profile_get)(store_txn *t, const char *job_id, int64_t batch_size,
                       zbso_power_profile *out, zbso_err *err);
    int (*profiles_list)(store_txn *t, const char *job_id, store_profile_fn fn, void *ctx,
                         zbso_err *err);
} store_txn_ops;

struct store_txn {
    const store_txn_ops *ops;
    /* A unit of exec_read: the write operations below change nothing and fail with
     * ZBSO_EINTERNAL naming themselves (store_write_refused), whatever the backend. */
    bool read_only;
};

/* A unit of work: runs inside a transaction; returns 0 to commit, a negative code to roll
 * back everything it did (err says why). */
typedef int (*store_work_fn)(store_txn *t, void *arg, zbso_err *err);

typedef struct store_options {
    bool create_if_empty;  /* create the schema in a new, empty database */
    bool migrate;          /* upgrade an older schema instead of refusing */
    bool echo_sql;         /* log every statement at INFO (ZEUS_BSO_ECHO_SQL) */
    const char *db_user;     /* ZEUS_BSO_DB_USER: fills a URL without a user; may be NULL */
    const char *db_password; /* ZEUS_BSO_DB_PASSWORD, likewise */
    /* zbso migrate: open a database at any schema version (0 included) without creating,
     * upgrading or refusing it, so that store_migrate can then take it to a version.
     * Overrides create_if_empty and migrate; a foreign database is still refused. */
    bool any_schema;
    /* Drop curve points instead of storing them (store_report_add does nothing): for the
     * simulator's memory:// stores, whose points nobody reads. */
    bool discard_curves;
} store_options;

/* Chooses the schema version to take a database to (store.c's policy). A backend's
 * schema_run calls it inside its transaction with the version found there (0: an empty
 * database) and whether the database holds tables that are not zbso's (meaningful at
 * version 0). Sets *to (>= version; version itself changes nothing) and returns 0, or
 * returns a negative code with err set, which ends the transaction with nothing
 * changed. */
typedef int (*store_schema_plan_fn)(void *ctx, int version, bool foreign_tables, int *to,
                                    zbso_err *err);

/* A backend; store_open needs every member set. */
typedef struct store_backend {
    const char *name;                    /* "sqlite", "postgresql", "mysql", "memory" */
    /* Opens the database at url (already known to be this backend's scheme) as it is:
     * store_open then checks its schema (opt's create_if_empty, migrate, any_schema)
     * through schema_run. */
    int (*open)(const char *url, const store_options *opt, store **out, zbso_err *err);
    void (*close)(store *st);
    /* Runs fn atomically; returns only after a commit is durable (synced). Safe to call
     * from many threads at once; calls for one job are serialized by the backend (one
     * writer, or a row lock from job_get(for_update)). Returns fn's code, or a database
     * error. */
    int (*exec)(store *st, store_work_fn fn, void *arg, zbso_err *err);

    /* Schema primitives. The backend owns its SQL; store.c owns the decisions (create,
     * migrate, refuse), the range checks and the messages, so a new backend brings SQL
     * only. The newest schema version this backend knows: */
    int latest_schema_version;
    /* schema_steps[v - 1]: the statements (NULL-terminated) that take a database from
     * version v - 1 to v, the last of them recording v; NULL for a backend without SQL
     * (memory://). Append only: a released step never changes. */
    const char *const *const *schema_steps;
    /* A statement that serializes schema changes between processes, run first in the
     * transaction of schema_run and printed after BEGIN by store_migrate_sql; NULL when
     * the transaction itself is enough (SQLite's write lock). */
    const char *schema_lock_sql;
    /* One durable read-write unit: runs schema_lock_sql, reads the schema version and
     * whether foreign tables exist, asks plan for the target and applies the steps from
     * the version found up to it. Returns 0, plan's code (nothing changed), or a
     * database error naming the step that failed (nothing changed either). */
    int (*schema_run)(store *st, store_schema_plan_fn plan, void *ctx, zbso_err *err);

    /* Runs fn in a read-only snapshot of committed data, in the calling thread,
     * without queueing behind writes. The snapshot holds only what exec has committed, and
     * exec answers only after its commit is durable, so an answer decided here never
     * rests on state that could be lost. fn gets a store_txn with read_only set: its
     * write operations fail with ZBSO_EINTERNAL and change nothing. Safe to call from many
     * threads at once. Returns fn's code, a database error, or ZBSO_EINTERNAL when called inside a
     * unit of work of st (exec or exec_read). */
    int (*exec_read)(store *st, store_work_fn fn, void *arg, zbso_err *err);
    /* Returns 0 when a write could be committed now, or ZBSO_EUNAVAIL naming why not (a
     * storage fault, the database unreachable, read-only, or its files gone). Cheap when
     * all is well; may commit a write that changes nothing to find out. */
    int (*health)(store *st, zbso_err *err);
} store_backend;

struct store {
    const store_backend *backend;
    const char *shown;  /* the database in messages: a file path, a URL with "***" */
    /* For /metrics (store_stats_get); backends calloc their store, so these start at 0.
     * store.c times the units; a backend counts its reruns. */
    zbso_hist exec_hist, exec_read_hist;
    atomic_uint_least64_t reruns;
    /* store.c's buffer of curve points (store_report_add); NULL until store_open sets it,
     * and for a store opened with discard_curves. Backends leave it alone. */
    struct store_curves *curves;
};

/* Picks the backend from the URL scheme: sqlite:///path, sqlite+aiosqlite:///path,
 * postgresql://..., postgresql+asyncpg://..., postgres://..., mysql://... and the other
 * spellings of myurl.h, memory://. Other schemes: ZBSO_EINVAL naming the supported ones.
 * Returns NULL in that case. */
const store_backend *store_backend_for_url(const char *url, zbso_err *err);

/* store_backend_for_url + open, then the schema check of opt (NULL: create_if_empty):
 * creates the schema in an empty database (create_if_empty), upgrades an older one
 * (migrate), opens any version as it is (any_schema); otherwise refuses with
 * ZBSO_ESCHEMA: an empty database or an older schema naming `zbso migrate`, a newer
 * schema, a database with tables but no zbso schema. Unless any_schema, then refuses a
 * database that cannot take writes (store_health). Returns 0 with *out set, or a
 * negative code with *out NULL. */
int store_open(const char *url, const store_options *opt, store **out, zbso_err *err);
/* store_open with backend b, whatever url's scheme: for a backend outside the URL table
 * (tests/netdb's fault-injecting driver). */
int store_open_backend(const store_backend *b, const char *url, const store_options *opt,
                       store **out, zbso_err *err);
void store_close(store *st);
int store_exec(store *st, store_work_fn fn, void *arg, zbso_err *err);
/* Runs fn as a read-only unit of work (store_backend.exec_read). */
int store_exec_read(store *st, store_work_fn fn, void *arg, zbso_err *err);

/* ---- curve points (docs/DESIGN.md "Curve points") ----
 * A report's point is not worth a unit of work of its own: store_report_add copies it into
 * st's buffer and returns at once; a flusher thread writes the buffer in one unit
 * (reports_put) when it holds STORE_CURVE_BATCH points or its oldest point is
 * STORE_CURVE_DELAY_S old, and store_close writes what is left. A crash loses at most the
 * buffered points, never a decision: the final report's values are the trial's result,
 * stored by the unit that ends it. A unit that fails for a storage outage (ZBSO_EUNAVAIL)
 * keeps its points for the next try, a second later; one that fails otherwise (a value the
 * database refuses) would fail again, so its points are dropped and counted. A full buffer
 * (STORE_CURVE_MAX points, a database that cannot take the writes) drops the new point and
 * counts it. */
#define STORE_CURVE_BATCH 16384
#define STORE_CURVE_DELAY_S 2.0
#define STORE_CURVE_MAX 65536
void store_report_add(store *st, const char *job_id, int64_t trial_number,
                      const zbso_curve_point *point);
/* Writes every buffered point now, in the calling thread; returns 0 or the unit's error
 * (the points stay buffered then). For tests and tools. */
int store_report_flush(store *st, zbso_err *err);
/* Counts since store_open, for /metrics: points written, dropped (buffer full or their
 * unit failed for good), and buffered now. Any pointer may be NULL. */
void store_curve_stats(store *st, uint64_t *written, uint64_t *dropped, uint64_t *buffered);

/* What the store did since store_open, for /metrics: how long units of work took as
 * their callers saw them (store_exec: write, queueing for the writer and the durable
 * commit included; store_exec_read: read), and how many times a unit ran again on a
 * networked database (PostgreSQL, MySQL/MariaDB: netdb.c) after a serialization failure,
 * a deadlock, a lock wait timeout or a concurrent insert (0 on SQLite and memory://). */
typedef struct store_stats {
    hist_snapshot write, read;
    uint64_t reruns;
} store_stats;
void store_stats_get(store *st, store_stats *out);

/* Whether st can take writes now (store_backend.health): 0, or ZBSO_EUNAVAIL with err
 * naming the cause. For /healthz; store_open checks it too. */
int store_health(store *st, zbso_err *err);

/* The schema version of st's database (0: empty). Returns 0 or a database error. */
int store_schema_version(store *st, int *out, zbso_err *err);
/* Takes st's database to schema version `to` (0: the latest). ZBSO_EINVAL when no such
 * version exists, ZBSO_ESCHEMA for a downgrade, a newer schema or a foreign database. */
int store_migrate(store *st, int to, zbso_err *err);
/* Writes to fn, line by line, the SQL that takes a database of backend b from schema
 * version `from` to `to` (0: the latest) in one transaction; touches no database.
 * ZBSO_EINVAL when the versions are out of range or reversed. */
int store_migrate_sql(const store_backend *b, int from, int to,
                      void (*fn)(void *ctx, const char *sql), void *ctx, zbso_err *err);

/* The answer of a write operation in a read-only unit: ZBSO_EINTERNAL with err saying
 * which operation it was. */
int store_write_refused(const char *op, zbso_err *err);
/* The answer to a request key longer than STORE_KEY_MAX: ZBSO_EINVAL naming the job. */
int store_key_refused(const char *job_id, zbso_err *err);

/* Short wrappers so callers write store_job_get(t, ...); the write operations refuse in a
 * read-only unit before reaching the backend. */
static inline int store_job_get(store_txn *t, const char *id, bool upd, zbso_job *o, zbso_err *e)
{ return t->ops->job_get(t, id, upd, o, e); }
static inline int store_job_insert(store_txn *t, const zbso_job *j, zbso_err *e)
{ return t->read_only ? store_write_refused("job_insert", e) : t->ops->job_insert(t, j, e); }
static inline int store_job_update(store_txn *t, const zbso_job *j, zbso_err *e)
{ return t->read_only ? store_write_refused("job_update", e) : t->ops->job_update(t, j, e); }
static inline int store_job_delete(store_txn *t, const char *id, zbso_err *e)
{ return t->read_only ? store_write_refused("job_delete", e) : t->ops->job_delete(t, id, e); }
/* A key longer than STORE_KEY_MAX is ZBSO_EINVAL on every backend (store_key_refused). */
static inline int store_trial_insert(store_txn *t, const char *id, const zbso_trial *tr,
                                     const char *key, zbso_err *e)
{
    if (t->read_only)
        return store_write_refused("trial_insert", e);
    if (key != NULL && strlen(key) > STORE_KEY_MAX)
        return store_key_refused(id, e);
    return t->ops->trial_insert(t, id, tr, key, e);
}
static inline int store_trial_get(store_txn *t, const char *id, int64_t n, zbso_trial *o,
                                  zbso_err *e)
{ return t->ops->trial_get(t, id, n, o, e); }
static inline int store_trial_by_key(store_txn *t, const char *id, const char *key,
                                     zbso_trial *o, zbso_err *e)
{
    if (strlen(key) > STORE_KEY_MAX)
        return store_key_refused(id, e);
    return t->ops->trial_by_key(t, id, key, o, e);
}
static inline int store_trial_update(store_txn *t, const char *id, const zbso_trial *tr,
                                     zbso_err *e)
{
    return t->read_only ? store_write_refused("trial_update", e)
                        : t->ops->trial_update(t, id, tr, e);
}
static inline int store_trials_list(store_txn *t, const char *id, const store_trial_query *q,
                                    store_trial_fn fn, void *ctx, zbso_err *e)
{ return t->ops->trials_list(t, id, q, fn, ctx, e); }
static inline int store_trials_fail_stale(store_txn *t, const char *id, double cutoff,
                                          double now, int64_t *n, zbso_err *e)
{
    if (t->read_only) {
        if (n != NULL)
            *n = 0;
        return store_write_refused("trials_fail_stale", e);
    }
    return t->ops->trials_fail_stale(t, id, cutoff, now, n, e);
}
static inline int store_arms_get(store_txn *t, const char *id, zbso_arm *o, size_t cap,
                                 size_t *n, zbso_err *e)
{ return t->ops->arms_get(t, id, o, cap, n, e); }
static inline int store_arm_put(store_txn *t, const char *id, const zbso_arm *a, zbso_err *e)
{ return t->read_only ? store_write_refused("arm_put", e) : t->ops->arm_put(t, id, a, e); }
static inline int store_jobs_list(store_txn *t, const store_job_query *q, store_job_fn fn,
                                  void *ctx, zbso_err *e)
{ return t->ops->jobs_list(t, q, fn, ctx, e); }
static inline int store_reports_put(store_txn *t, const char *id, int64_t n,
                                    const zbso_curve_point *p, size_t np, zbso_err *e)
{
    return t->read_only ? store_write_refused("reports_put", e)
                        : t->ops->reports_put(t, id, n, p, np, e);
}
static inline int store_reports_list(store_txn *t, const char *id, int64_t n,
                                     store_point_fn fn, void *ctx, zbso_err *e)
{ return t->ops->reports_list(t, id, n, fn, ctx, e); }
static inline int store_counts_get(store_txn *t, store_counts *o, zbso_err *e)
{ return t->ops->counts(t, o, e); }
static inline int store_profile_put(store_txn *t, const char *id, const zbso_power_profile *p,
                                    zbso_err *e)
{
    return t->read_only ? store_write_refused("profile_put", e)
                        : t->ops->profile_put(t, id, p, e);
}
static inline int store_profile_get(store_txn *t, const char *id, int64_t bs,
                                    zbso_power_profile *o, zbso_err *e)
{ return t->ops->profile_get(t, id, bs, o, e); }
static inline int store_profiles_list(store_txn *t, const char *id, store_profile_fn fn,
                                      void *ctx, zbso_err *e)
{ return t->ops->profiles_list(t, id, fn, ctx, e); }

#endif
