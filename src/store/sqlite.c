/* sqlite.c: the default backend: one SQLite file in WAL mode, its schema and migrations,
 * one writer thread that runs every unit of work and commits them in groups, a pool of
 * read-only connections for read units run in their callers' threads, and a checkpointer
 * thread that keeps WAL checkpoints off the writer.
 * The only file that talks to libsqlite3; SQLite codes never leave it untranslated. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "store/storeInt.h"
#include "util/log.h"

#define SQ_GROUP_MAX 256         /* units of work per group commit */
#define SQ_BUSY_TIMEOUT_MS 5000  /* waiting for another process's write lock */
#define SQ_READERS_MAX 16        /* read-only connections; more callers wait for one */
/* WAL pages after a commit that make a checkpoint due: SQLite's own autocheckpoint
 * default, which the checkpointer thread takes over from the writer. */
#define SQ_CKPT_PAGES 1000
/* WAL pages after a commit that make the writer checkpoint itself, with RESTART: the WAL
 * starts over only when a writer finds it wholly checkpointed and no reader in it, which
 * a busy server may never give the checkpointer, so this bounds the file (64 MiB). */
#define SQ_WAL_MAX_PAGES 16384
/* How many nice steps the writer thread runs above the rest of the process (see
 * writer_raise_priority). */
#define SQ_WRITER_NICE_BOOST 10
#define SQ_LATEST 3

/* Schema history. The version lives in PRAGMA user_version (0: empty database), set by
 * the last statement of each step, inside the step's transaction. Append only: a
 * released step never changes.
 * Encodings: stage 0 Pruning / 1 MAB; trial type 0 Exploration / 1 Concurrent / 2 MAB;
 * status 0 Dispatched / 1 Succeeded / 2 Failed; booleans 0/1; batch_sizes as ascending
 * decimal text "16,32,64"; beta_knob and mab_seed NULL when absent; mab_seed holds the
 * uint64 seed's bits as a signed 64-bit integer; min_cost NULL until one is known; a NULL
 * time/energy/metric is NaN; rng_state is rng_format()'s text. */
static const char *const schema_v1[] = {
    "CREATE TABLE jobs (\n"
    "  job_id TEXT PRIMARY KEY NOT NULL,\n"
    "  job_id_prefix TEXT NOT NULL,\n"
    "  batch_sizes TEXT NOT NULL,\n"
    "  default_batch_size INTEGER NOT NULL,\n"
    "  eta_knob REAL NOT NULL,\n"
    "  beta_knob REAL,\n"
    "  target_metric REAL NOT NULL,\n"
    "  higher_is_better_metric INTEGER NOT NULL,\n"
    "  max_epochs INTEGER NOT NULL,\n"
    "  num_pruning_rounds INTEGER NOT NULL,\n"
    "  window_size INTEGER NOT NULL,\n"
    "  mab_prior_mean REAL NOT NULL,\n"
    "  mab_prior_precision REAL NOT NULL,\n"
    "  mab_num_explorations INTEGER NOT NULL,\n"
    "  mab_seed INTEGER,\n"
    "  max_power REAL NOT NULL,\n"
    "  number_of_gpus INTEGER NOT NULL,\n"
    "  gpu_model TEXT NOT NULL,\n"
    "  stage INTEGER NOT NULL,\n"
    "  exp_default_batch_size INTEGER NOT NULL,\n"
    "  min_cost REAL,\n"
    "  min_cost_batch_size INTEGER NOT NULL,\n"
    "  rng_state TEXT NOT NULL,\n"
    "  num_trials INTEGER NOT NULL,\n"
    "  created_at REAL NOT NULL\n"
    ");",
    "CREATE TABLE trials (\n"
    "  job_id TEXT NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,\n"
    "  trial_number INTEGER NOT NULL,\n"
    "  batch_size INTEGER NOT NULL,\n"
    "  type INTEGER NOT NULL,\n"
    "  status INTEGER NOT NULL,\n"
    "  start_time REAL NOT NULL,\n"
    "  end_time REAL NOT NULL,\n"
    "  lease_renewed_at REAL NOT NULL,\n"
    "  time REAL,\n"
    "  energy REAL,\n"
    "  metric REAL,\n"
    "  epochs INTEGER NOT NULL,\n"
    "  converged INTEGER NOT NULL,\n"
    "  PRIMARY KEY (job_id, trial_number)\n"
    ") WITHOUT ROWID;",
    "CREATE TABLE arms (\n"
    "  job_id TEXT NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,\n"
    "  batch_size INTEGER NOT NULL,\n"
    "  mean REAL NOT NULL,\n"
    "  precision REAL NOT NULL,\n"
    "  num_observations INTEGER NOT NULL,\n"
    "  PRIMARY KEY (job_id, batch_size)\n"
    ") WITHOUT ROWID;",
    "PRAGMA user_version = 1;",
    NULL,
};

/* Version 2: the indexes behind trials_list(batch_size) and trials_fail_stale. */
static const char *const schema_v2[] = {
    "CREATE INDEX trials_by_batch_size ON trials (job_id, batch_size, trial_number);",
    "CREATE INDEX trials_by_status_lease ON trials (job_id, status, lease_renewed_at);",
    "PRAGMA user_version = 2;",
    NULL,
};

/* Version 3: the job's version (zbso_job.version); an existing job starts at 1, as if
 * just registered: only the order of later changes matters. */
static const char *const schema_v3[] = {
    "ALTER TABLE jobs ADD COLUMN version INTEGER NOT NULL DEFAULT 1;",
    "PRAGMA user_version = 3;",
    NULL,
};

/* steps[v - 1] takes a database from version v - 1 to v. */
static const char *const *const steps[SQ_LATEST] = {schema_v1, schema_v2, schema_v3};

#define JOB_COLS                                                                          \
    "job_id, job_id_prefix, batch_sizes, default_batch_size, eta_knob, beta_knob, "        \
    "target_metric, higher_is_better_metric, max_epochs, num_pruning_rounds, window_size, " \
    "mab_prior_mean, mab_prior_precision, mab_num_explorations, mab_seed, max_power, "     \
    "number_of_gpus, gpu_model, stage, exp_default_batch_size, min_cost, "                 \
    "min_cost_batch_size, rng_state, num_trials, created_at, version"
#define TRIAL_COLS                                                                        \
    "trial_number, batch_size, type, status, start_time, end_time, lease_renewed_at, "     \
    "time, energy, metric, epochs, converged"

enum {
    S_BEGIN, S_BEGIN_READ, S_COMMIT, S_ROLLBACK, S_SAVEPOINT, S_ROLLBACK_TO, S_RELEASE,
    S_JOB_GET, S_JOB_INSERT, S_JOB_UPDATE, S_JOB_DELETE, S_JOB_IDS,
    S_TRIAL_INSERT, S_TRIAL_GET, S_TRIAL_UPDATE, S_TRIALS_LIST, S_TRIALS_LIST_BS,
    S_TRIALS_FAIL_STALE, S_ARMS_GET, S_ARM_PUT, S_USER_VERSION,
    S_COUNT
};

/* Trials filters: masks arrive as ?2 (type) and ?3 (status), LIMIT ?4 picks the newest
 * rows (-1: all), and the outer query puts them back in ascending order. */
#define TRIALS_LIST_SQL(bs_cond)                                                          \
    "SELECT " TRIAL_COLS " FROM (SELECT " TRIAL_COLS " FROM trials WHERE job_id = ?1"      \
    " AND ((?2 >> type) & 1) = 1 AND ((?3 >> status) & 1) = 1" bs_cond                    \
    " ORDER BY trial_number DESC LIMIT ?4) ORDER BY trial_number"

static const char *const stmt_sql[S_COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_BEGIN_READ] = "BEGIN",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_SAVEPOINT] = "SAVEPOINT u",
    [S_ROLLBACK_TO] = "ROLLBACK TO u",
    [S_RELEASE] = "RELEASE u",
    [S_JOB_GET] = "SELECT " JOB_COLS " FROM jobs WHERE job_id = ?1",
    [S_JOB_INSERT] = "INSERT INTO jobs (" JOB_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
                     " ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22,"
                     " ?23, ?24, ?25, ?26)",
    [S_JOB_UPDATE] = "UPDATE jobs SET stage = ?19, exp_default_batch_size = ?20,"
                     " min_cost = ?21, min_cost_batch_size = ?22, rng_state = ?23,"
                     " num_trials = ?24, version = ?26 WHERE job_id = ?1",
    [S_JOB_DELETE] = "DELETE FROM jobs WHERE job_id = ?1",
    [S_JOB_IDS] = "SELECT job_id FROM jobs ORDER BY job_id",
    [S_TRIAL_INSERT] = "INSERT INTO trials (job_id, " TRIAL_COLS ") VALUES (?1, ?2, ?3, ?4,"
                       " ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    [S_TRIAL_GET] = "SELECT " TRIAL_COLS " FROM trials WHERE job_id = ?1 AND trial_number = ?2",
    [S_TRIAL_UPDATE] = "UPDATE trials SET batch_size = ?3, type = ?4, status = ?5,"
                       " start_time = ?6, end_time = ?7, lease_renewed_at = ?8, time = ?9,"
                       " energy = ?10, metric = ?11, epochs = ?12, converged = ?13"
                       " WHERE job_id = ?1 AND trial_number = ?2",
    [S_TRIALS_LIST] = TRIALS_LIST_SQL(""),
    [S_TRIALS_LIST_BS] = TRIALS_LIST_SQL(" AND batch_size = ?5"),
    [S_TRIALS_FAIL_STALE] = "UPDATE trials SET status = 2, end_time = ?3 WHERE job_id = ?1"
                            " AND status = 0 AND lease_renewed_at < ?2",
    [S_ARMS_GET] = "SELECT batch_size, mean, precision, num_observations FROM arms"
                   " WHERE job_id = ?1 ORDER BY batch_size",
    [S_ARM_PUT] = "INSERT INTO arms (job_id, batch_size, mean, precision, num_observations)"
                  " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (job_id, batch_size) DO UPDATE"
                  " SET mean = excluded.mean, precision = excluded.precision,"
                  " num_observations = excluded.num_observations",
    [S_USER_VERSION] = "PRAGMA user_version",
};

/* A caller blocked in sq_exec; lives on the caller's stack until done is set. */
typedef struct sq_unit {
    store_work_fn fn;
    void *arg;
    zbso_err *err;
    int rc;
    bool done;
    pthread_cond_t cv;
    struct sq_unit *next;
    zbso_err own_err;            /* err when the caller passed NULL */
} sq_unit;

/* A connection with its statements, each prepared on first use. */
typedef struct sq_conn {
    sqlite3 *db;
    sqlite3_stmt *stmts[S_COUNT];
    const char *path;            /* the store's, for messages */
    struct sq_conn *next_free;   /* a reader in the pool's free list */
} sq_conn;

typedef struct sq_store {
    store base;
    sq_conn w;                   /* used only by the writer thread once it runs */
    pthread_t writer;
    bool writer_started;
    pthread_mutex_t mu;          /* guards head, tail, stopping, every unit's done */
    pthread_cond_t cv_work;
    sq_unit *head, *tail;
    bool stopping;

    /* Readers: opened on demand, at most SQ_READERS_MAX, kept until close. */
    pthread_mutex_t rmu;         /* guards the four fields below */
    pthread_cond_t rcv;          /* a reader came back to the pool */
    sq_conn *free_readers;
    int n_readers;               /* open or being opened */
    int n_free;
    store_txn_ops read_ops;      /* sq_ops with writes refused */
    bool echo_sql;

    /* The checkpointer: its own connection, woken by the writer's WAL hook. */
    sqlite3 *ckpt_db;
    pthread_t ckpt;
    bool ckpt_started;
    pthread_mutex_t cmu;         /* guards ckpt_due, ckpt_stop and ckpt_frames */
    pthread_cond_t ccv;
    bool ckpt_due, ckpt_stop;
    int ckpt_frames;             /* WAL frames the last checkpoint left checkpointed */

    char path[1024];
} sq_store;

typedef struct sq_txn {
    store_txn base;
    sq_conn *c;
} sq_txn;

/* The store whose read unit this thread is running, to refuse a nested unit. */
static _Thread_local const sq_store *read_unit;

/* Fills err from the connection's last error. SQLITE_BUSY/LOCKED (another process holds
 * the database) is ZBSO_EUNAVAIL, everything else ZBSO_ESTORE. Returns the code. */
static int sq_fail(sq_conn *c, int rc, const char *what, const char *job_id, zbso_err *err)
{
    int prim = rc & 0xff;
    int code = prim == SQLITE_BUSY || prim == SQLITE_LOCKED ? ZBSO_EUNAVAIL : ZBSO_ESTORE;
    if (job_id == NULL)
        return err_set(err, code, "sqlite: %s failed on %s: %s (code %d)", what, c->path,
                       sqlite3_errmsg(c->db), rc);
    return err_set(err, code, "sqlite: %s for job \"%.300s\" failed: %s (code %d)", what,
                   job_id, sqlite3_errmsg(c->db), rc);
}

/* Returns the cached statement id, prepared on first use (the schema exists by then), or
 * NULL with err set. The caller resets it after use. */
static sqlite3_stmt *sq_stmt(sq_conn *c, int id, zbso_err *err)
{
    if (c->stmts[id] == NULL) {
        int rc = sqlite3_prepare_v3(c->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
                                    &c->stmts[id], NULL);
        if (rc != SQLITE_OK) {
            err_set(err, ZBSO_ESTORE, "sqlite: preparing \"%.200s\" failed: %s", stmt_sql[id],
                    sqlite3_errmsg(c->db));
            return NULL;
        }
    }
    return c->stmts[id];
}

/* Steps a statement that returns no rows, then resets it. Returns 0 or a code. */
static int sq_run(sq_conn *c, int id, const char *what, const char *job_id, zbso_err *err)
{
    sqlite3_stmt *s = sq_stmt(c, id, err);
    if (s == NULL)
        return ZBSO_ESTORE;
    int rc = sqlite3_step(s);
    int out = rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : sq_fail(c, rc, what, job_id, err);
    sqlite3_reset(s);
    return out;
}

static void bind_double(sqlite3_stmt *s, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(s, i);
    else
        sqlite3_bind_double(s, i, v);
}

static double col_double(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

static void col_text(sqlite3_stmt *s, int i, char *out, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    snprintf(out, cap, "%s", t != NULL ? (const char *)t : "");
}

static sq_conn *txn_conn(store_txn *t)
{
    return ((sq_txn *)t)->c;
}

/* Binds the job's columns as ?1..?26 in JOB_COLS order. */
static void bind_job(sqlite3_stmt *s, const zbso_job *job)
{
    const zbso_job_spec *sp = &job->spec;
    char bs[ZBSO_MAX_BATCH_SIZES * 21 + 1];
    char rng[96];
    size_t len = 0;
    bs[0] = '\0';
    for (size_t i = 0; i < sp->n_batch_sizes && i < ZBSO_MAX_BATCH_SIZES; i++)
        len += (size_t)snprintf(bs + len, sizeof bs - len, "%s%lld", i ? "," : "",
                                (long long)sp->batch_sizes[i]);
    rng_format(&job->rng, rng);
    sqlite3_bind_text(s, 1, sp->job_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, sp->job_id_prefix, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, bs, (int)len, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 4, sp->default_batch_size);
    bind_double(s, 5, sp->eta_knob);
    if (sp->has_beta_knob)
        bind_double(s, 6, sp->beta_knob);
    else
        sqlite3_bind_null(s, 6);
    bind_double(s, 7, sp->target_metric);
    sqlite3_bind_int(s, 8, sp->higher_is_better_metric);
    sqlite3_bind_int64(s, 9, sp->max_epochs);
    sqlite3_bind_int64(s, 10, sp->num_pruning_rounds);
    sqlite3_bind_int64(s, 11, sp->window_size);
    bind_double(s, 12, sp->mab_prior_mean);
    bind_double(s, 13, sp->mab_prior_precision);
    sqlite3_bind_int64(s, 14, sp->mab_num_explorations);
    if (sp->has_mab_seed) {
        int64_t seed;
        memcpy(&seed, &sp->mab_seed, sizeof seed);
        sqlite3_bind_int64(s, 15, seed);
    } else {
        sqlite3_bind_null(s, 15);
    }
    bind_double(s, 16, sp->max_power);
    sqlite3_bind_int64(s, 17, sp->number_of_gpus);
    sqlite3_bind_text(s, 18, sp->gpu_model, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 19, (int)job->stage);
    sqlite3_bind_int64(s, 20, job->exp_default_batch_size);
    if (job->has_min_cost)
        bind_double(s, 21, job->min_cost);
    else
        sqlite3_bind_null(s, 21);
    sqlite3_bind_int64(s, 22, job->min_cost_batch_size);
    sqlite3_bind_text(s, 23, rng, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 24, job->num_trials);
    bind_double(s, 25, job->created_at);
    sqlite3_bind_int64(s, 26, job->version);
}

/* Reads a jobs row (JOB_COLS order). Returns 0, or ZBSO_ESTORE when batch_sizes or
 * rng_state do not parse (the row was not written by this code). */
static int col_job(sqlite3_stmt *s, zbso_job *job, zbso_err *err)
{
    zbso_job_spec *sp = &job->spec;
    memset(job, 0, sizeof *job);
    col_text(s, 0, sp->job_id, sizeof sp->job_id);
    col_text(s, 1, sp->job_id_prefix, sizeof sp->job_id_prefix);
    const char *p = (const char *)sqlite3_column_text(s, 2);
    while (p != NULL && *p != '\0') {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || (*end != ',' && *end != '\0') || sp->n_batch_sizes == ZBSO_MAX_BATCH_SIZES)
            return err_set(err, ZBSO_ESTORE, "sqlite: job \"%.300s\" has malformed batch_sizes \"%.200s\"",
                           sp->job_id, (const char *)sqlite3_column_text(s, 2));
        sp->batch_sizes[sp->n_batch_sizes++] = v;
        p = *end == ',' ? end + 1 : end;
    }
    sp->default_batch_size = sqlite3_column_int64(s, 3);
    sp->eta_knob = col_double(s, 4);
    sp->has_beta_knob = sqlite3_column_type(s, 5) != SQLITE_NULL;
    sp->beta_knob = sp->has_beta_knob ? sqlite3_column_double(s, 5) : 0.0;
    sp->target_metric = col_double(s, 6);
    sp->higher_is_better_metric = sqlite3_column_int(s, 7) != 0;
    sp->max_epochs = sqlite3_column_int64(s, 8);
    sp->num_pruning_rounds = sqlite3_column_int64(s, 9);
    sp->window_size = sqlite3_column_int64(s, 10);
    sp->mab_prior_mean = col_double(s, 11);
    sp->mab_prior_precision = col_double(s, 12);
    sp->mab_num_explorations = sqlite3_column_int64(s, 13);
    sp->has_mab_seed = sqlite3_column_type(s, 14) != SQLITE_NULL;
    if (sp->has_mab_seed) {
        int64_t seed = sqlite3_column_int64(s, 14);
        memcpy(&sp->mab_seed, &seed, sizeof seed);
    }
    sp->max_power = col_double(s, 15);
    sp->number_of_gpus = sqlite3_column_int64(s, 16);
    col_text(s, 17, sp->gpu_model, sizeof sp->gpu_model);
    job->stage = sqlite3_column_int(s, 18) == ZBSO_STAGE_MAB ? ZBSO_STAGE_MAB : ZBSO_STAGE_PRUNING;
    job->exp_default_batch_size = sqlite3_column_int64(s, 19);
    job->has_min_cost = sqlite3_column_type(s, 20) != SQLITE_NULL;
    job->min_cost = job->has_min_cost ? sqlite3_column_double(s, 20) : 0.0;
    job->min_cost_batch_size = sqlite3_column_int64(s, 21);
    const char *rng = (const char *)sqlite3_column_text(s, 22);
    if (rng == NULL || rng_parse(&job->rng, rng) != 0)
        return err_set(err, ZBSO_ESTORE, "sqlite: job \"%.300s\" has malformed rng_state \"%.100s\"",
                       sp->job_id, rng != NULL ? rng : "NULL");
    job->num_trials = sqlite3_column_int64(s, 23);
    job->created_at = col_double(s, 24);
    job->version = sqlite3_column_int64(s, 25);
    return 0;
}

/* Binds job_id as ?1 and the trial's columns as ?2..?13 in TRIAL_COLS order. */
static void bind_trial(sqlite3_stmt *s, const char *job_id, const zbso_trial *tr)
{
    sqlite3_bind_text(s, 1, job_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, tr->trial_number);
    sqlite3_bind_int64(s, 3, tr->batch_size);
    sqlite3_bind_int(s, 4, (int)tr->type);
    sqlite3_bind_int(s, 5, (int)tr->status);
    bind_double(s, 6, tr->start_time);
    bind_double(s, 7, tr->end_time);
    bind_double(s, 8, tr->lease_renewed_at);
    bind_double(s, 9, tr->time);
    bind_double(s, 10, tr->energy);
    bind_double(s, 11, tr->metric);
    sqlite3_bind_int64(s, 12, tr->epochs);
    sqlite3_bind_int(s, 13, tr->converged);
}

static void col_trial(sqlite3_stmt *s, zbso_trial *tr)
{
    tr->trial_number = sqlite3_column_int64(s, 0);
    tr->batch_size = sqlite3_column_int64(s, 1);
    tr->type = (zbso_trial_type)sqlite3_column_int(s, 2);
    tr->status = (zbso_trial_status)sqlite3_column_int(s, 3);
    tr->start_time = col_double(s, 4);
    tr->end_time = col_double(s, 5);
    tr->lease_renewed_at = col_double(s, 6);
    tr->time = col_double(s, 7);
    tr->energy = col_double(s, 8);
    tr->metric = col_double(s, 9);
    tr->epochs = sqlite3_column_int64(s, 10);
    tr->converged = sqlite3_column_int(s, 11) != 0;
}

/* Steps a write statement; maps constraint failures to domain codes: a taken key is
 * ZBSO_ECONFLICT, a missing parent job ZBSO_ENOTFOUND. 0 on success; n_changed
 * (may be NULL) receives the rows changed. Resets s. */
static int sq_write(sq_conn *c, sqlite3_stmt *s, const char *what, const char *job_id,
                    int64_t *n_changed, zbso_err *err)
{
    int rc = sqlite3_step(s);
    int out = 0;
    if (rc == SQLITE_DONE) {
        if (n_changed != NULL)
            *n_changed = sqlite3_changes64(c->db);
    } else if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE) {
        out = err_set(err, ZBSO_ECONFLICT, "%s: job \"%.300s\" already has that key", what, job_id);
    } else if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) {
        out = err_set(err, ZBSO_ENOTFOUND, "%s: job \"%.300s\" not found", what, job_id);
    } else {
        out = sq_fail(c, rc, what, job_id, err);
    }
    sqlite3_reset(s);
    return out;
}

/* Loads a job; ZBSO_ENOTFOUND when absent. for_update needs nothing more: the writer
 * thread runs one unit at a time. */
static int q_job_get(store_txn *t, const char *id, bool for_update, zbso_job *out,
                     zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_JOB_GET, err);
    if (s == NULL)
        return ZBSO_ESTORE;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s), out_rc;
    if (rc == SQLITE_ROW)
        out_rc = col_job(s, out, err);
    else if (rc == SQLITE_DONE)
        out_rc = err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id);
    else
        out_rc = sq_fail(c, rc, "job_get", id, err);
    sqlite3_reset(s);
    return out_rc;
}

static int q_job_insert(store_txn *t, const zbso_job *job, zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_JOB_INSERT, err);
    if (s == NULL)
        return ZBSO_ESTORE;
    bind_job(s, job);
    int rc = sq_write(c, s, "job_insert", job->spec.job_id, NULL, err);
    if (rc == ZBSO_ECONFLICT)
        rc = err_set(err, ZBSO_ECONFLICT, "job \"%.300s\" already exists", job->spec.job_id);
    return rc;
}

/* Writes the mutable columns; ZBSO_ENOTFOUND when no row has the id. bind_job serves both
 * insert and update: the UPDATE names ?1 and ?19..?24, so ?2..?18 are unused slots and
 * binding ?25 returns SQLITE_RANGE, which is harmless and ignored. */
static int q_job_update(store_txn *t, const zbso_job *job, zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_JOB_UPDATE, err);
    int64_t n = 0;
    if (s == NULL)
        return ZBSO_ESTORE;
    bind_job(s, job);
    int rc = sq_write(c, s, "job_update", job->spec.job_id, &n, err);
    if (rc == 0 && n == 0)
        rc = err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", job->spec.job_id);
    return rc;
}

/* Deletes the job; its trials and arms go with it (ON DELETE CASCADE). */
static int q_job_delete(store_txn *t, const char *id, zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_JOB_DELETE, err);
    int64_t n = 0;
    if (s == NULL)
        return ZBSO_ESTORE;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    int rc = sq_write(c, s, "job_delete", id, &n, err);
    if (rc == 0 && n == 0)
        rc = err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id);
    return rc;
}

static int q_job_ids(store_txn *t, int (*fn)(void *ctx, const char *job_id), void *ctx,
                     zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_JOB_IDS, err);
    char id[ZBSO_ID_MAX + 1];
    int rc, out = 0;
    if (s == NULL)
        return ZBSO_ESTORE;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        col_text(s, 0, id, sizeof id);
        out = fn(ctx, id);
        if (out != 0)
            goto out;
    }
    if (rc != SQLITE_DONE)
        out = sq_fail(c, rc, "job_ids", NULL, err);
out:
    sqlite3_reset(s);
    return out;
}

static int q_trial_insert(store_txn *t, const char *id, const zbso_trial *trial,
                          zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_TRIAL_INSERT, err);
    if (s == NULL)
        return ZBSO_ESTORE;
    bind_trial(s, id, trial);
    int rc = sq_write(c, s, "trial_insert", id, NULL, err);
    if (rc == ZBSO_ECONFLICT)
        rc = err_set(err, ZBSO_ECONFLICT, "trial %lld of job \"%.300s\" already exists",
                     (long long)trial->trial_number, id);
    return rc;
}

static int q_trial_get(store_txn *t, const char *id, int64_t n, zbso_trial *out,
                       zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_TRIAL_GET, err);
    if (s == NULL)
        return ZBSO_ESTORE;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, n);
    int rc = sqlite3_step(s), out_rc = 0;
    if (rc == SQLITE_ROW)
        col_trial(s, out);
    else if (rc == SQLITE_DONE)
        out_rc = err_set(err, ZBSO_ENOTFOUND, "trial %lld of job \"%.300s\" not found",
                         (long long)n, id);
    else
        out_rc = sq_fail(c, rc, "trial_get", id, err);
    sqlite3_reset(s);
    return out_rc;
}

static int q_trial_update(store_txn *t, const char *id, const zbso_trial *trial,
                          zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_TRIAL_UPDATE, err);
    int64_t n = 0;
    if (s == NULL)
        return ZBSO_ESTORE;
    bind_trial(s, id, trial);
    int rc = sq_write(c, s, "trial_update", id, &n, err);
    if (rc == 0 && n == 0)
        rc = err_set(err, ZBSO_ENOTFOUND, "trial %lld of job \"%.300s\" not found",
                     (long long)trial->trial_number, id);
    return rc;
}

/* fn runs while the listing statement is open: it may use other operations, but not
 * trials_list itself (that would reset this statement). */
static int q_trials_list(store_txn *t, const char *id, const store_trial_query *q,
                         store_trial_fn fn, void *ctx, zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, q->batch_size != 0 ? S_TRIALS_LIST_BS : S_TRIALS_LIST, err);
    zbso_trial tr;
    int rc, out = 0;
    if (s == NULL)
        return ZBSO_ESTORE;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, q->type_mask ? (int64_t)q->type_mask : (int64_t)UINT32_MAX);
    sqlite3_bind_int64(s, 3, q->status_mask ? (int64_t)q->status_mask : (int64_t)UINT32_MAX);
    sqlite3_bind_int64(s, 4, q->last_n > 0 ? q->last_n : -1);
    if (q->batch_size != 0)
        sqlite3_bind_int64(s, 5, q->batch_size);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        col_trial(s, &tr);
        out = fn(ctx, &tr);
        if (out != 0)
            goto out;
    }
    if (rc != SQLITE_DONE)
        out = sq_fail(c, rc, "trials_list", id, err);
out:
    sqlite3_reset(s);
    return out;
}

static int q_trials_fail_stale(store_txn *t, const char *id, double cutoff, double now,
                               int64_t *n_failed, zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_TRIALS_FAIL_STALE, err);
    int64_t n = 0;
    int rc = ZBSO_ESTORE;
    if (s != NULL) {
        sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
        bind_double(s, 2, cutoff);
        bind_double(s, 3, now);
        rc = sq_write(c, s, "trials_fail_stale", id, &n, err);
    }
    if (n_failed != NULL)
        *n_failed = n;
    return rc;
}

static int q_arms_get(store_txn *t, const char *id, zbso_arm *out, size_t cap,
                      size_t *n_out, zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_ARMS_GET, err);
    size_t n = 0;
    int rc, out_rc = 0;
    *n_out = 0;
    if (s == NULL)
        return ZBSO_ESTORE;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (n == cap) {
            out_rc = err_set(err, ZBSO_EINVAL, "job \"%.300s\" has more than the %zu arms asked for",
                             id, cap);
            goto out;
        }
        out[n].batch_size = sqlite3_column_int64(s, 0);
        out[n].param_mean = col_double(s, 1);
        out[n].param_precision = col_double(s, 2);
        out[n].num_observations = sqlite3_column_int64(s, 3);
        n++;
    }
    if (rc != SQLITE_DONE) {
        out_rc = sq_fail(c, rc, "arms_get", id, err);
        goto out;
    }
    *n_out = n;
out:
    sqlite3_reset(s);
    return out_rc;
}

static int q_arm_put(store_txn *t, const char *id, const zbso_arm *arm, zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_ARM_PUT, err);
    if (s == NULL)
        return ZBSO_ESTORE;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, arm->batch_size);
    bind_double(s, 3, arm->param_mean);
    bind_double(s, 4, arm->param_precision);
    sqlite3_bind_int64(s, 5, arm->num_observations);
    return sq_write(c, s, "arm_put", id, NULL, err);
}

static const store_txn_ops sq_ops = {
    .job_get = q_job_get,
    .job_insert = q_job_insert,
    .job_update = q_job_update,
    .job_delete = q_job_delete,
    .job_ids = q_job_ids,
    .trial_insert = q_trial_insert,
    .trial_get = q_trial_get,
    .trial_update = q_trial_update,
    .trials_list = q_trials_list,
    .trials_fail_stale = q_trials_fail_stale,
    .arms_get = q_arms_get,
    .arm_put = q_arm_put,
};

/* Fails every unit of a group with the same database error. */
static void group_fail(sq_unit *g, int code, const char *why)
{
    for (sq_unit *u = g; u != NULL; u = u->next)
        u->rc = err_set(u->err, code, "%s", why);
}

/* Runs a group of units in one transaction, each in its own savepoint, and commits once.
 * Sets every unit's rc (and err on failure). */
static void run_group(sq_conn *c, sq_unit *g)
{
    sq_txn txn = {.base = {.ops = &sq_ops}, .c = c};
    zbso_err e;
    char why[ZBSO_ERR_MSG_MAX];
    int rc = sq_run(c, S_BEGIN, "BEGIN IMMEDIATE", NULL, &e);
    if (rc < 0) {
        group_fail(g, rc, e.msg);
        return;
    }
    for (sq_unit *u = g; u != NULL; u = u->next) {
        rc = sq_run(c, S_SAVEPOINT, "SAVEPOINT", NULL, &e);
        if (rc < 0)
            goto broken;
        u->rc = u->fn(&txn.base, u->arg, u->err);
        if (sqlite3_get_autocommit(c->db)) {
            /* SQLite rolled the whole transaction back (I/O error, disk full): the
             * group's earlier work is gone too. */
            rc = err_set(&e, ZBSO_ESTORE, "sqlite: the transaction was rolled back: %s",
                         sqlite3_errmsg(c->db));
            goto broken;
        }
        if (u->rc < 0) {
            rc = sq_run(c, S_ROLLBACK_TO, "ROLLBACK TO", NULL, &e);
            if (rc < 0)
                goto broken;
        }
        rc = sq_run(c, S_RELEASE, "RELEASE", NULL, &e);
        if (rc < 0)
            goto broken;
    }
    rc = sq_run(c, S_COMMIT, "COMMIT", NULL, &e);
    if (rc == 0)
        return;
broken:
    snprintf(why, sizeof why, "%s", e.msg);
    if (!sqlite3_get_autocommit(c->db))
        sq_run(c, S_ROLLBACK, "ROLLBACK", NULL, &e);
    group_fail(g, ZBSO_ESTORE, why);
}

/* Every caller of exec waits for a commit, and a commit waits for the writer thread, so on
 * a CPU kept busy by request threads the writer must not queue behind them: it asks for
 * SQ_WRITER_NICE_BOOST nice steps above the process (a larger share of the CPU, and to run
 * sooner when woken). Raising a priority needs CAP_SYS_NICE or RLIMIT_NICE; without them
 * the writer keeps the process's priority, which is only slower, and says so at DEBUG.
 * Linux applies setpriority(PRIO_PROCESS, tid) to that one thread. */
static void writer_raise_priority(const sq_store *st)
{
    id_t tid = (id_t)syscall(SYS_gettid);
    errno = 0;
    int nice_now = getpriority(PRIO_PROCESS, tid);
    if (errno != 0)
        return;
    int want = nice_now - SQ_WRITER_NICE_BOOST < -20 ? -20 : nice_now - SQ_WRITER_NICE_BOOST;
    if (want < nice_now && setpriority(PRIO_PROCESS, tid, want) != 0)
        log_debug("database %s: the writer thread stays at nice %d (%d needs CAP_SYS_NICE):"
                  " commits may wait behind request threads on a busy CPU", st->path,
                  nice_now, want);
}

/* The writer thread: takes up to SQ_GROUP_MAX queued units at a time, runs them as one
 * group, and wakes their callers. Leaves once stopping is set and the queue is empty. */
static void *writer_main(void *arg)
{
    sq_store *st = arg;
    writer_raise_priority(st);
    pthread_mutex_lock(&st->mu);
    for (;;) {
        while (st->head == NULL && !st->stopping)
            pthread_cond_wait(&st->cv_work, &st->mu);
        if (st->head == NULL)
            break;
        sq_unit *g = st->head, *last = g;
        for (int n = 1; n < SQ_GROUP_MAX && last->next != NULL; n++)
            last = last->next;
        st->head = last->next;
        if (st->head == NULL)
            st->tail = NULL;
        last->next = NULL;
        pthread_mutex_unlock(&st->mu);
        run_group(&st->w, g);
        pthread_mutex_lock(&st->mu);
        while (g != NULL) {
            /* Read next first: once done is set the unit's owner may return. */
            sq_unit *next = g->next;
            g->done = true;
            pthread_cond_signal(&g->cv);
            g = next;
        }
    }
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

/* Queues fn for the writer and waits. Returns fn's code, ZBSO_ESTORE/EUNAVAIL when the
 * group's transaction failed (then nothing of fn's work is stored), or ZBSO_EINTERNAL
 * when called from inside a unit of work (it would wait on itself forever, or for a read
 * unit, hold a snapshot that the write cannot see through). */
static int sq_exec(store *base, store_work_fn fn, void *arg, zbso_err *err)
{
    sq_store *st = (sq_store *)base;
    if (pthread_equal(pthread_self(), st->writer) || read_unit == st)
        return err_set(err, ZBSO_EINTERNAL, "store_exec called inside a unit of work on %s",
                       st->path);
    sq_unit u = {.fn = fn, .arg = arg, .rc = 0};
    u.err = err != NULL ? err : &u.own_err;
    pthread_cond_init(&u.cv, NULL);
    pthread_mutex_lock(&st->mu);
    if (st->tail != NULL)
        st->tail->next = &u;
    else
        st->head = &u;
    st->tail = &u;
    pthread_cond_signal(&st->cv_work);
    while (!u.done)
        pthread_cond_wait(&u.cv, &st->mu);
    pthread_mutex_unlock(&st->mu);
    pthread_cond_destroy(&u.cv);
    return u.rc;
}

/* Finalizes c's statements and closes its connection (a NULL db is a no-op). */
static void conn_close(sq_conn *c)
{
    for (int i = 0; i < S_COUNT; i++) {
        sqlite3_finalize(c->stmts[i]);
        c->stmts[i] = NULL;
    }
    if (sqlite3_close(c->db) != SQLITE_OK)
        log_error("closing database %s: %s", c->path, sqlite3_errmsg(c->db));
    c->db = NULL;
}

static int trace_cb(unsigned type, void *ctx, void *p, void *x);

/* Opens a read-only connection to st's file. Returns 0 with *out (the caller's, freed
 * with conn_close and free) or ZBSO_ENOMEM / ZBSO_ESTORE with err naming the path. */
static int reader_open(sq_store *st, sq_conn **out, zbso_err *err)
{
    int rc = 0;
    sq_conn *c = calloc(1, sizeof *c);
    if (c == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory opening a reader of %s", st->path);
        goto out;
    }
    c->path = st->path;
    /* NOMUTEX: a reader belongs to one caller at a time, handed over under st->rmu. */
    rc = sqlite3_open_v2(st->path, &c->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        rc = err_set(err, ZBSO_ESTORE, "cannot open a reader of database file %s: %s",
                     st->path, c->db != NULL ? sqlite3_errmsg(c->db) : "out of memory");
        goto out;
    }
    sqlite3_extended_result_codes(c->db, 1);
    sqlite3_busy_timeout(c->db, SQ_BUSY_TIMEOUT_MS);
    if (st->echo_sql)
        sqlite3_trace_v2(c->db, SQLITE_TRACE_STMT, trace_cb, NULL);
    *out = c;
    c = NULL;
out:
    if (c != NULL) {
        conn_close(c);
        free(c);
    }
    return rc;
}

/* Takes a reader from the pool, opening one while fewer than SQ_READERS_MAX exist, else
 * waiting for one to come back. Returns 0 with *out, or reader_open's failure. */
static int reader_get(sq_store *st, sq_conn **out, zbso_err *err)
{
    int rc = 0;
    pthread_mutex_lock(&st->rmu);
    while (st->free_readers == NULL && st->n_readers == SQ_READERS_MAX)
        pthread_cond_wait(&st->rcv, &st->rmu);
    sq_conn *c = st->free_readers;
    if (c != NULL) {
        st->free_readers = c->next_free;
        st->n_free--;
        pthread_mutex_unlock(&st->rmu);
        *out = c;
        goto out;
    }
    /* Count the new reader now, so that opening it needs no lock held. */
    st->n_readers++;
    pthread_mutex_unlock(&st->rmu);
    rc = reader_open(st, out, err);
    if (rc < 0) {
        pthread_mutex_lock(&st->rmu);
        st->n_readers--;
        pthread_cond_signal(&st->rcv);
        pthread_mutex_unlock(&st->rmu);
    }
out:
    return rc;
}

/* Gives c back to the pool; a broken reader (still inside a transaction it could not
 * end) is closed instead, so the next caller opens a fresh one. */
static void reader_put(sq_store *st, sq_conn *c, bool broken)
{
    if (broken) {
        conn_close(c);
        free(c);
    }
    pthread_mutex_lock(&st->rmu);
    if (broken) {
        st->n_readers--;
    } else {
        c->next_free = st->free_readers;
        st->free_readers = c;
        st->n_free++;
    }
    pthread_cond_signal(&st->rcv);
    pthread_mutex_unlock(&st->rmu);
}

/* Runs fn on a pooled reader inside BEGIN ... ROLLBACK: one snapshot, taken at the first
 * read, of what the writer has committed, and WAL readers see only committed frames,
 * which synchronous=FULL has synced before the writer's callers are answered. Returns
 * fn's code, a database error, or ZBSO_EINTERNAL inside a unit of work of st. */
static int sq_exec_read(store *base, store_work_fn fn, void *arg, zbso_err *err)
{
    sq_store *st = (sq_store *)base;
    sq_conn *c = NULL;
    int rc;
    if (pthread_equal(pthread_self(), st->writer) || read_unit == st)
        return err_set(err, ZBSO_EINTERNAL,
                       "store_exec_read called inside a unit of work on %s", st->path);
    if ((rc = reader_get(st, &c, err)) < 0)
        return rc;
    sq_txn txn = {.base = {.ops = &st->read_ops}, .c = c};
    rc = sq_run(c, S_BEGIN_READ, "BEGIN", NULL, err);
    if (rc == 0) {
        read_unit = st;
        rc = fn(&txn.base, arg, err);
        read_unit = NULL;
    }
    /* A read unit keeps nothing: ending it only releases the snapshot. */
    if (!sqlite3_get_autocommit(c->db))
        sq_run(c, S_ROLLBACK, "ROLLBACK", NULL, NULL);
    reader_put(st, c, !sqlite3_get_autocommit(c->db));
    return rc;
}

/* The checkpointer thread: runs a PASSIVE checkpoint each time the WAL hook says one is
 * due. PASSIVE never takes the write lock, so the writer keeps committing while the
 * database file is written and synced here. Leaves once ckpt_stop is set; the last
 * connection's close checkpoints what is left. */
static void *ckpt_main(void *arg)
{
    sq_store *st = arg;
    pthread_mutex_lock(&st->cmu);
    for (;;) {
        while (!st->ckpt_due && !st->ckpt_stop)
            pthread_cond_wait(&st->ccv, &st->cmu);
        if (st->ckpt_stop)
            break;
        st->ckpt_due = false;
        pthread_mutex_unlock(&st->cmu);
        int n_done = 0;
        int rc = sqlite3_wal_checkpoint_v2(st->ckpt_db, NULL, SQLITE_CHECKPOINT_PASSIVE,
                                           NULL, &n_done);
        if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
            log_warn("database %s: checkpoint failed: %s (code %d)", st->path,
                     sqlite3_errmsg(st->ckpt_db), rc);
        pthread_mutex_lock(&st->cmu);
        st->ckpt_frames = n_done > 0 ? n_done : 0;
    }
    pthread_mutex_unlock(&st->cmu);
    return NULL;
}

/* The writer connection's WAL hook, called after each commit (its locks released) with
 * the WAL's size in pages: once SQ_CKPT_PAGES of them are past the last checkpoint,
 * wakes the checkpointer instead of checkpointing here; past SQ_WAL_MAX_PAGES,
 * checkpoints here and waits for the readers to leave the WAL so that the next commit
 * starts it over. */
static int wal_hook(void *ctx, sqlite3 *db, const char *name, int n_pages)
{
    sq_store *st = ctx;
    if (n_pages >= SQ_WAL_MAX_PAGES) {
        int rc = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_RESTART, NULL, NULL);
        if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
            log_warn("database %s: checkpoint failed: %s (code %d)", st->path,
                     sqlite3_errmsg(db), rc);
        return SQLITE_OK;
    }
    pthread_mutex_lock(&st->cmu);
    /* Fewer pages than the last checkpoint reached: the WAL has started over since. */
    int backlog = n_pages >= st->ckpt_frames ? n_pages - st->ckpt_frames : n_pages;
    if (backlog >= SQ_CKPT_PAGES && !st->ckpt_due) {
        st->ckpt_due = true;
        pthread_cond_signal(&st->ccv);
    }
    pthread_mutex_unlock(&st->cmu);
    return SQLITE_OK;
}

/* Opens the checkpointer's connection, hands the writer's automatic checkpoints over to
 * it and starts its thread. Returns 0 or ZBSO_ESTORE with err naming the path. */
static int ckpt_start(sq_store *st, zbso_err *err)
{
    int rc = sqlite3_open_v2(st->path, &st->ckpt_db, SQLITE_OPEN_READWRITE |
                             SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK)
        return err_set(err, ZBSO_ESTORE, "cannot open the checkpointer's connection to %s: %s",
                       st->path, st->ckpt_db != NULL ? sqlite3_errmsg(st->ckpt_db)
                                                     : "out of memory");
    sqlite3_extended_result_codes(st->ckpt_db, 1);
    /* A connection finds the WAL only when it first reads; until then SQLite 3.40 takes
     * a checkpoint request for a no-op and reports success. */
    rc = sqlite3_exec(st->ckpt_db, "PRAGMA user_version", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return err_set(err, ZBSO_ESTORE, "cannot read %s from the checkpointer's connection:"
                       " %s", st->path, sqlite3_errmsg(st->ckpt_db));
    if (pthread_create(&st->ckpt, NULL, ckpt_main, st) != 0)
        return err_set(err, ZBSO_ESTORE, "cannot start the checkpointer thread for %s",
                       st->path);
    st->ckpt_started = true;
    /* The hook replaces SQLite's autocheckpoint, which would run on the writer thread
     * and stall every queued unit for the checkpoint's fsync of the database file. */
    sqlite3_wal_autocheckpoint(st->w.db, 0);
    sqlite3_wal_hook(st->w.db, wal_hook, st);
    return 0;
}

/* Runs the steps that take the database from version `from` to `to`, in the caller's
 * transaction. Returns 0 or ZBSO_ESTORE naming the statement that failed. */
static int apply_steps(sq_conn *c, int from, int to, zbso_err *err)
{
    for (int v = from + 1; v <= to; v++) {
        for (const char *const *sql = steps[v - 1]; *sql != NULL; sql++) {
            char *msg = NULL;
            if (sqlite3_exec(c->db, *sql, NULL, NULL, &msg) != SQLITE_OK) {
                int rc = err_set(err, ZBSO_ESTORE, "%s: migration to schema version %d failed: %s",
                                 c->path, v, msg != NULL ? msg : sqlite3_errmsg(c->db));
                sqlite3_free(msg);
                return rc;
            }
        }
    }
    return 0;
}

/* Reads PRAGMA user_version. Returns 0 or a translated error. */
static int read_version(sq_conn *c, int *out, zbso_err *err)
{
    sqlite3_stmt *s = sq_stmt(c, S_USER_VERSION, err);
    if (s == NULL)
        return ZBSO_ESTORE;
    int rc = sqlite3_step(s), out_rc = 0;
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int(s, 0);
    else
        out_rc = sq_fail(c, rc, "reading the schema version", NULL, err);
    sqlite3_reset(s);
    return out_rc;
}

/* Sets *foreign when the database holds tables of its own (not SQLite's). Returns 0 or
 * a translated error. */
static int read_foreign(sq_conn *c, bool *foreign, zbso_err *err)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(c->db, "SELECT count(*) FROM sqlite_schema WHERE name NOT"
                                " LIKE 'sqlite_%'", -1, &s, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        *foreign = sqlite3_column_int(s, 0) > 0;
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    return rc == SQLITE_OK ? 0 : sq_fail(c, rc, "listing the tables", NULL, err);
}

typedef struct schema_arg {
    store_schema_plan_fn plan;
    void *ctx;
} schema_arg;

/* Unit of work of sq_schema_run; the writer's BEGIN IMMEDIATE keeps other processes out
 * until it commits. */
static int schema_unit(store_txn *t, void *argp, zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    schema_arg *a = argp;
    int version = 0, to = 0, rc;
    bool foreign = false;
    if ((rc = read_version(c, &version, err)) < 0)
        return rc;
    if (version == 0 && (rc = read_foreign(c, &foreign, err)) < 0)
        return rc;
    if ((rc = a->plan(a->ctx, version, foreign, &to, err)) < 0)
        return rc;
    if (to != version && (to < version || to > SQ_LATEST))
        return err_set(err, ZBSO_EINTERNAL, "%s: no way from schema version %d to %d",
                       c->path, version, to);
    return apply_steps(c, version, to, err);
}

static int sq_schema_run(store *base, store_schema_plan_fn plan, void *ctx, zbso_err *err)
{
    schema_arg a = {plan, ctx};
    return sq_exec(base, schema_unit, &a, err);
}

/* Logs each statement as it starts, with bound values (ZEUS_BSO_ECHO_SQL). */
static int trace_cb(unsigned type, void *ctx, void *p, void *x)
{
    char *sql = sqlite3_expanded_sql(p);
    log_info("sql: %s", sql != NULL ? sql : (const char *)x);
    sqlite3_free(sql);
    return 0;
}

/* Sets the connection up: WAL, synchronous=FULL, foreign keys. Returns 0, or
 * ZBSO_ESTORE (ZBSO_EUNAVAIL when another process holds the file) with err naming the
 * path: a file that is not a database fails here. */
static int prepare_db(sq_conn *c, zbso_err *err)
{
    char *msg = NULL;
    int rc = sqlite3_exec(c->db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
                          " PRAGMA foreign_keys = ON;", NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        rc = err_set(err, (rc & 0xff) == SQLITE_BUSY ? ZBSO_EUNAVAIL : ZBSO_ESTORE,
                     "cannot use database file %s: %s", c->path,
                     msg != NULL ? msg : sqlite3_errmsg(c->db));
    sqlite3_free(msg);
    return rc;
}

static void sq_close(store *base);

/* Opens sqlite:///path (relative) or sqlite:////path (absolute), also spelt
 * sqlite+aiosqlite://, creating an empty file where none is, and starts the writer and
 * the checkpointer; store.c then checks the schema. Returns 0 with *out set, or
 * ZBSO_EINVAL (no path), ZBSO_ESTORE (cannot open / not a database). */
static int sq_open(const char *url, const store_options *opt, store **out, zbso_err *err)
{
    int rc = 0;
    sq_store *st = NULL;
    const char *sep = strstr(url, ":///");
    const char *path = sep != NULL ? sep + 4 : "";
    *out = NULL;
    if (path[0] == '\0' || strlen(path) >= sizeof st->path) {
        rc = err_set(err, ZBSO_EINVAL, "database URL \"%.200s\" has no usable file path"
                     " (write sqlite:///relative/path or sqlite:////absolute/path)", url);
        goto out;
    }
    st = calloc(1, sizeof *st);
    if (st == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory opening %s", path);
        goto out;
    }
    st->base.backend = &store_sqlite_backend;
    st->base.shown = st->path;
    snprintf(st->path, sizeof st->path, "%s", path);
    st->w.path = st->path;
    st->echo_sql = opt->echo_sql;
    store_ops_read_only(&sq_ops, &st->read_ops);
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv_work, NULL);
    pthread_mutex_init(&st->rmu, NULL);
    pthread_cond_init(&st->rcv, NULL);
    pthread_mutex_init(&st->cmu, NULL);
    pthread_cond_init(&st->ccv, NULL);
    /* NOMUTEX: after this function only the writer thread touches the connection. */
    rc = sqlite3_open_v2(path, &st->w.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                         SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        rc = err_set(err, ZBSO_ESTORE, "cannot open database file %s: %s", path,
                     st->w.db != NULL ? sqlite3_errmsg(st->w.db) : "out of memory");
        goto out;
    }
    sqlite3_extended_result_codes(st->w.db, 1);
    sqlite3_busy_timeout(st->w.db, SQ_BUSY_TIMEOUT_MS);
    if (opt->echo_sql)
        sqlite3_trace_v2(st->w.db, SQLITE_TRACE_STMT, trace_cb, NULL);
    rc = prepare_db(&st->w, err);
    if (rc < 0)
        goto out;
    if ((rc = ckpt_start(st, err)) < 0)
        goto out;
    if (pthread_create(&st->writer, NULL, writer_main, st) != 0) {
        rc = err_set(err, ZBSO_ESTORE, "cannot start the writer thread for %s", path);
        goto out;
    }
    st->writer_started = true;
    *out = &st->base;
    st = NULL;
out:
    if (st != NULL)
        sq_close(&st->base);
    return rc;
}

/* Lets queued units and running read units finish, stops the writer and the
 * checkpointer, and closes every connection, the writer's last: closing the last
 * connection checkpoints the whole WAL into the database file and removes it. */
static void sq_close(store *base)
{
    sq_store *st = (sq_store *)base;
    if (st == NULL)
        return;
    if (st->writer_started) {
        pthread_mutex_lock(&st->mu);
        st->stopping = true;
        pthread_cond_signal(&st->cv_work);
        pthread_mutex_unlock(&st->mu);
        pthread_join(st->writer, NULL);
    }
    if (st->ckpt_started) {
        pthread_mutex_lock(&st->cmu);
        st->ckpt_stop = true;
        pthread_cond_signal(&st->ccv);
        pthread_mutex_unlock(&st->cmu);
        pthread_join(st->ckpt, NULL);
    }
    pthread_mutex_lock(&st->rmu);
    while (st->n_free < st->n_readers)
        pthread_cond_wait(&st->rcv, &st->rmu);
    pthread_mutex_unlock(&st->rmu);
    while (st->free_readers != NULL) {
        sq_conn *c = st->free_readers;
        st->free_readers = c->next_free;
        conn_close(c);
        free(c);
    }
    if (sqlite3_close(st->ckpt_db) != SQLITE_OK)
        log_error("closing database %s: %s", st->path, sqlite3_errmsg(st->ckpt_db));
    conn_close(&st->w);
    pthread_cond_destroy(&st->ccv);
    pthread_mutex_destroy(&st->cmu);
    pthread_cond_destroy(&st->rcv);
    pthread_mutex_destroy(&st->rmu);
    pthread_cond_destroy(&st->cv_work);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

const store_backend store_sqlite_backend = {
    .version = 2,
    .name = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .exec = sq_exec,
    .latest_schema_version = SQ_LATEST,
    .schema_steps = steps,
    .schema_run = sq_schema_run,
    .exec_read = sq_exec_read,
};
