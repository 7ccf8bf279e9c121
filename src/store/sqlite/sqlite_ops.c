/* sqlite_ops.c: the SQLite backend's schema history and domain operations: the SQL of
 * every step and statement, binding values and mapping rows to core structs, and the
 * store_txn_ops run inside units of work. Knows nothing of threads or of how units are
 * grouped and committed (sqlite_engine.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/spec.h"
#include "store/sqlite/sqliteInt.h"

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

/* Version 3: the job's revision (zbso_job.revision) in column "version" (the name the
 * released schema has); an existing job starts at 1, as if just registered: only the
 * order of later changes matters. */
static const char *const schema_v3[] = {
    "ALTER TABLE jobs ADD COLUMN version INTEGER NOT NULL DEFAULT 1;",
    "PRAGMA user_version = 3;",
    NULL,
};

/* Version 4: the idempotency key of the request that dispatched a trial (store.h
 * trial_insert), at most one trial per (job, key); NULL for a trial dispatched without
 * one and for every trial of an older version. */
static const char *const schema_v4[] = {
    "ALTER TABLE trials ADD COLUMN request_key TEXT;",
    "CREATE UNIQUE INDEX trials_by_request_key ON trials (job_id, request_key);",
    "PRAGMA user_version = 4;",
    NULL,
};

/* Version 5 (issue 11, inspection): the job's last change (zbso_job.updated_at), for an
 * existing job the latest of its creation and its trials' start, end and lease renewal;
 * and the curve points of trials (store.h reports_put). No foreign key: reports_put
 * checks its trial once per call where a key would check it per point (with the EXISTS
 * it needs anyway, 16,000 instructions a point against 9,500 without: callgrind), and
 * job_delete deletes the job's points; trials go only with their job. */
static const char *const schema_v5[] = {
    "ALTER TABLE jobs ADD COLUMN updated_at REAL NOT NULL DEFAULT 0;",
    "UPDATE jobs SET updated_at = max(created_at, coalesce((SELECT"
    " max(max(start_time, end_time, lease_renewed_at)) FROM trials"
    " WHERE trials.job_id = jobs.job_id), created_at));",
    "CREATE TABLE reports (\n"
    "  job_id TEXT NOT NULL,\n"
    "  trial_number INTEGER NOT NULL,\n"
    "  epoch INTEGER NOT NULL,\n"
    "  time REAL,\n"
    "  energy REAL,\n"
    "  metric REAL,\n"
    "  received_at REAL NOT NULL,\n"
    "  PRIMARY KEY (job_id, trial_number, epoch)\n"
    ") WITHOUT ROWID;",
    "PRAGMA user_version = 5;",
    NULL,
};

/* Version 6 (issue 15): power-limit profiles (store.h profile_put), one row per job and
 * batch size, the measurements as store_pl_format's text; they go with their job. */
static const char *const schema_v6[] = {
    "CREATE TABLE power_profiles (\n"
    "  job_id TEXT NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,\n"
    "  batch_size INTEGER NOT NULL,\n"
    "  trial_number INTEGER NOT NULL,\n"
    "  observer INTEGER NOT NULL,\n"
    "  profile_steps INTEGER NOT NULL,\n"
    "  created_at REAL NOT NULL,\n"
    "  measurements TEXT NOT NULL,\n"
    "  PRIMARY KEY (job_id, batch_size)\n"
    ") WITHOUT ROWID;",
    "PRAGMA user_version = 6;",
    NULL,
};

/* The policy step (issue 21): each job's batch size policy as its name, "zeus" for every
 * job of an older version (the only policy there was); whether it asked for a warm start;
 * its prior jobs as store_prior_format's text ("" for none). V_POLICY is its version, the
 * one number to change should the step move. */
#define V_POLICY 7
#define V_TEXT_(v) #v
#define V_TEXT(v) V_TEXT_(v)
static const char *const schema_policy[] = {
    "ALTER TABLE jobs ADD COLUMN policy TEXT NOT NULL DEFAULT 'zeus';",
    "ALTER TABLE jobs ADD COLUMN warm_start INTEGER NOT NULL DEFAULT 0;",
    "ALTER TABLE jobs ADD COLUMN prior_jobs TEXT NOT NULL DEFAULT '';",
    "PRAGMA user_version = " V_TEXT(V_POLICY) ";",
    NULL,
};

/* The stop-reason step (issue 25): why each trial ended (zbso_stop_reason: 1 target_reached,
 * 2 cost_bound, 3 max_epochs, 4 ended, 5 lease_expired); 0 while it runs and for every
 * trial of an older version, whose reason opt_trial_stop_reason derives where it can. */
#define V_STOP 8
_Static_assert(V_STOP == V_POLICY + 1, "the stop-reason step follows the policy step");
static const char *const schema_stop[] = {
    "ALTER TABLE trials ADD COLUMN stop_reason INTEGER NOT NULL DEFAULT 0;",
    "PRAGMA user_version = " V_TEXT(V_STOP) ";",
    NULL,
};

/* The intensity step (issue 25): the job's own carbon intensity (g CO2e per kWh), NULL
 * for none, the server's then, and for every job of an older version. */
#define V_INTENSITY 9
_Static_assert(V_INTENSITY == V_STOP + 1, "the intensity step follows the stop-reason step");
static const char *const schema_intensity[] = {
    "ALTER TABLE jobs ADD COLUMN carbon_intensity REAL;",
    "PRAGMA user_version = " V_TEXT(V_INTENSITY) ";",
    NULL,
};

const char *const *const sq_schema_steps[SQ_LATEST] = {schema_v1, schema_v2, schema_v3,
                                                        schema_v4, schema_v5, schema_v6,
                                                        [V_POLICY - 1] = schema_policy,
                                                        [V_STOP - 1] = schema_stop,
                                                        [V_INTENSITY - 1] = schema_intensity};

#define JOB_COLS                                                                          \
    "job_id, job_id_prefix, batch_sizes, default_batch_size, eta_knob, beta_knob, "        \
    "target_metric, higher_is_better_metric, max_epochs, num_pruning_rounds, window_size, " \
    "mab_prior_mean, mab_prior_precision, mab_num_explorations, mab_seed, max_power, "     \
    "number_of_gpus, gpu_model, stage, exp_default_batch_size, min_cost, "                 \
    "min_cost_batch_size, rng_state, num_trials, created_at, version, updated_at, policy, " \
    "warm_start, prior_jobs, carbon_intensity"
#define TRIAL_COLS                                                                        \
    "trial_number, batch_size, type, status, start_time, end_time, lease_renewed_at, "     \
    "time, energy, metric, epochs, converged, stop_reason"

/* Trials filters: masks arrive as ?2 (type) and ?3 (status), trial numbers above ?6 (the
 * page's cursor), LIMIT ?4 picks the newest rows, and the outer query puts them back in
 * ascending order and keeps the first ?7 (-1: all). Without last_n the page runs in
 * ascending order from the cursor, LIMIT ?7. */
#define TRIALS_WHERE(bs_cond)                                                             \
    " FROM trials WHERE job_id = ?1 AND ((?2 >> type) & 1) = 1"                            \
    " AND ((?3 >> status) & 1) = 1 AND trial_number > ?6" bs_cond
#define TRIALS_LIST_SQL(bs_cond)                                                          \
    "SELECT " TRIAL_COLS " FROM (SELECT " TRIAL_COLS TRIALS_WHERE(bs_cond)                 \
    " ORDER BY trial_number DESC LIMIT ?4) ORDER BY trial_number LIMIT ?7"
#define TRIALS_PAGE_SQL(bs_cond)                                                          \
    "SELECT " TRIAL_COLS TRIALS_WHERE(bs_cond) " ORDER BY trial_number LIMIT ?7"
/* Jobs from a lower bound in the PRIMARY KEY's order, BINARY collation (memcmp): the
 * caller stops at the first id without the prefix, so the scan is the prefix's range. */
#define JOBS_LIST_SQL(op) "SELECT " JOB_COLS " FROM jobs WHERE job_id " op " ?1"            \
    " ORDER BY job_id LIMIT ?2"

#define PROFILE_COLS "batch_size, trial_number, observer, profile_steps, created_at, measurements"

const char *const sq_stmt_sql[S_COUNT] = {
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
                     " ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31)",
    [S_JOB_UPDATE] = "UPDATE jobs SET stage = ?19, exp_default_batch_size = ?20,"
                     " min_cost = ?21, min_cost_batch_size = ?22, rng_state = ?23,"
                     " num_trials = ?24, version = ?26, updated_at = ?27 WHERE job_id = ?1",
    [S_JOB_DELETE] = "DELETE FROM jobs WHERE job_id = ?1",
    [S_JOB_IDS] = "SELECT job_id FROM jobs ORDER BY job_id",
    [S_TRIAL_INSERT] = "INSERT INTO trials (job_id, " TRIAL_COLS ", request_key) VALUES (?1,"
                       " ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    [S_TRIAL_GET] = "SELECT " TRIAL_COLS " FROM trials WHERE job_id = ?1 AND trial_number = ?2",
    [S_TRIAL_BY_KEY] = "SELECT " TRIAL_COLS " FROM trials WHERE job_id = ?1 AND request_key = ?2",
    [S_TRIAL_UNKEY] = "UPDATE trials SET request_key = NULL WHERE job_id = ?1"
                      " AND request_key = ?2",
    [S_TRIAL_UPDATE] = "UPDATE trials SET batch_size = ?3, type = ?4, status = ?5,"
                       " start_time = ?6, end_time = ?7, lease_renewed_at = ?8, time = ?9,"
                       " energy = ?10, metric = ?11, epochs = ?12, converged = ?13,"
                       " stop_reason = ?14 WHERE job_id = ?1 AND trial_number = ?2",
    [S_TRIALS_LIST] = TRIALS_LIST_SQL(""),
    [S_TRIALS_LIST_BS] = TRIALS_LIST_SQL(" AND batch_size = ?5"),
    [S_TRIALS_PAGE] = TRIALS_PAGE_SQL(""),
    [S_TRIALS_PAGE_BS] = TRIALS_PAGE_SQL(" AND batch_size = ?5"),
    [S_TRIALS_FAIL_STALE] = "UPDATE trials SET status = 2, end_time = ?3, stop_reason = 5"
                            " WHERE job_id = ?1 AND status = 0 AND lease_renewed_at < ?2",
    [S_ARMS_GET] = "SELECT batch_size, mean, precision, num_observations FROM arms"
                   " WHERE job_id = ?1 ORDER BY batch_size",
    [S_ARM_PUT] = "INSERT INTO arms (job_id, batch_size, mean, precision, num_observations)"
                  " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (job_id, batch_size) DO UPDATE"
                  " SET mean = excluded.mean, precision = excluded.precision,"
                  " num_observations = excluded.num_observations",
    [S_USER_VERSION] = "PRAGMA user_version",
    [S_JOBS_FROM] = JOBS_LIST_SQL(">="),
    [S_JOBS_AFTER] = JOBS_LIST_SQL(">"),
    [S_TRIAL_EXISTS] = "SELECT 1 FROM trials WHERE job_id = ?1 AND trial_number = ?2",
    /* Of two points of one epoch the one received later stays. */
    [S_REPORT_PUT] = "INSERT INTO reports (job_id, trial_number, epoch, time, energy, metric,"
                     " received_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                     " ON CONFLICT (job_id, trial_number, epoch) DO UPDATE SET"
                     " time = excluded.time, energy = excluded.energy, metric = excluded.metric,"
                     " received_at = excluded.received_at"
                     " WHERE excluded.received_at >= reports.received_at",
    [S_REPORTS_LIST] = "SELECT epoch, time, energy, metric, received_at FROM reports"
                       " WHERE job_id = ?1 AND trial_number = ?2 ORDER BY epoch",
    [S_REPORTS_DELETE] = "DELETE FROM reports WHERE job_id = ?1",
    [S_COUNT_JOBS] = "SELECT count(*) FROM jobs",
    [S_COUNT_TRIALS] = "SELECT type, status, count(*) FROM trials GROUP BY type, status",
    [S_OLDEST_LEASE] = "SELECT CAST(min(lease_renewed_at) AS INTEGER) FROM trials"
                       " WHERE status = 0",
    /* From the job's row: no row is inserted for a job that does not exist. */
    [S_PROFILE_PUT] = "INSERT INTO power_profiles (job_id, batch_size, trial_number, observer,"
                      " profile_steps, created_at, measurements) SELECT job_id, ?2, ?3, ?4,"
                      " ?5, ?6, ?7 FROM jobs WHERE job_id = ?1"
                      " ON CONFLICT (job_id, batch_size) DO UPDATE SET"
                      " trial_number = excluded.trial_number, observer = excluded.observer,"
                      " profile_steps = excluded.profile_steps,"
                      " created_at = excluded.created_at, measurements = excluded.measurements",
    [S_PROFILE_GET] = "SELECT " PROFILE_COLS " FROM power_profiles WHERE job_id = ?1"
                      " AND batch_size = ?2",
    [S_PROFILES_LIST] = "SELECT " PROFILE_COLS " FROM power_profiles WHERE job_id = ?1"
                        " ORDER BY batch_size",
};

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

/* Binds the job's columns as ?1..?30 in JOB_COLS order. */
static void bind_job(sqlite3_stmt *s, const zbso_job *job)
{
    const zbso_job_spec *sp = &job->spec;
    char bs[ZBSO_MAX_BATCH_SIZES * 21 + 1], prior[STORE_PRIOR_TEXT_MAX];
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
    sqlite3_bind_int64(s, 26, job->revision);
    bind_double(s, 27, job->updated_at);
    sqlite3_bind_text(s, 28, spec_policy_name(sp->policy), -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 29, sp->warm_start);
    store_prior_format(sp, prior);
    sqlite3_bind_text(s, 30, prior, -1, SQLITE_TRANSIENT);
    if (sp->has_carbon_intensity)
        bind_double(s, 31, sp->carbon_intensity_g_per_kwh);
    else
        sqlite3_bind_null(s, 31);
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
            return err_set(err, ZBSO_ESTORE,
                           "sqlite: job \"%.300s\" has malformed batch_sizes \"%.200s\"",
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
        return err_set(err, ZBSO_ESTORE,
                       "sqlite: job \"%.300s\" has malformed rng_state \"%.100s\"",
                       sp->job_id, rng != NULL ? rng : "NULL");
    job->num_trials = sqlite3_column_int64(s, 23);
    job->created_at = col_double(s, 24);
    job->revision = sqlite3_column_int64(s, 25);
    job->updated_at = col_double(s, 26);
    const char *policy = (const char *)sqlite3_column_text(s, 27);
    const char *prior = (const char *)sqlite3_column_text(s, 29);
    bool has_ci = sqlite3_column_type(s, 30) != SQLITE_NULL;
    return store_extras_read(policy ? policy : "", sqlite3_column_int(s, 28) != 0,
                             prior ? prior : "", has_ci,
                             has_ci ? sqlite3_column_double(s, 30) : 0.0, sp, err);
}

/* Binds job_id as ?1 and the trial's columns as ?2..?14 in TRIAL_COLS order. */
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
    sqlite3_bind_int(s, 14, (int)tr->stop_reason);
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
    tr->stop_reason = zbso_stop_reason_of_code(sqlite3_column_int(s, 12));
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
        return sq_code(c);
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
        return sq_code(c);
    bind_job(s, job);
    int rc = sq_write(c, s, "job_insert", job->spec.job_id, NULL, err);
    if (rc == ZBSO_ECONFLICT)
        rc = err_set(err, ZBSO_ECONFLICT, "job \"%.300s\" already exists", job->spec.job_id);
    return rc;
}

/* Writes the mutable columns; ZBSO_ENOTFOUND when no row has the id. bind_job serves both
 * insert and update: the UPDATE names ?1, ?19..?24, ?26 and ?27, so ?2..?18 and ?25 are
 * unused slots, bound harmlessly. */
static int q_job_update(store_txn *t, const zbso_job *job, zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_JOB_UPDATE, err);
    int64_t n = 0;
    if (s == NULL)
        return sq_code(c);
    bind_job(s, job);
    int rc = sq_write(c, s, "job_update", job->spec.job_id, &n, err);
    if (rc == 0 && n == 0)
        rc = err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", job->spec.job_id);
    return rc;
}

/* Deletes the job; its trials and arms go with it (ON DELETE CASCADE), its curve points
 * by a statement of their own (reports has no foreign key). */
static int q_job_delete(store_txn *t, const char *id, zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_REPORTS_DELETE, err);
    int64_t n = 0;
    if (s == NULL)
        return sq_code(c);
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    int rc = sq_write(c, s, "job_delete", id, NULL, err);
    if (rc < 0)
        return rc;
    if ((s = sq_stmt(c, S_JOB_DELETE, err)) == NULL)
        return sq_code(c);
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    rc = sq_write(c, s, "job_delete", id, &n, err);
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
        return sq_code(c);
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

/* A key first leaves the trial that held it (the unique index allows one), then goes
 * with the new row. */
static int q_trial_insert(store_txn *t, const char *id, const zbso_trial *trial,
                          const char *key, zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s;
    int rc;
    if (key != NULL) {
        if ((s = sq_stmt(c, S_TRIAL_UNKEY, err)) == NULL)
            return sq_code(c);
        sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, key, -1, SQLITE_STATIC);
        if ((rc = sq_write(c, s, "trial_insert", id, NULL, err)) < 0)
            return rc;
    }
    if ((s = sq_stmt(c, S_TRIAL_INSERT, err)) == NULL)
        return sq_code(c);
    bind_trial(s, id, trial);
    if (key != NULL)
        sqlite3_bind_text(s, 15, key, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 15);
    rc = sq_write(c, s, "trial_insert", id, NULL, err);
    if (rc == ZBSO_ECONFLICT)
        rc = err_set(err, ZBSO_ECONFLICT, "trial %lld of job \"%.300s\" already exists",
                     (long long)trial->trial_number, id);
    return rc;
}

/* Steps s, bound to select one trial, into *out; ZBSO_ENOTFOUND (err says `which`) when
 * it has no row. Resets s. */
static int one_trial(sq_conn *c, sqlite3_stmt *s, const char *what, const char *id,
                     const char *which, zbso_trial *out, zbso_err *err)
{
    int rc = sqlite3_step(s), out_rc = 0;
    if (rc == SQLITE_ROW)
        col_trial(s, out);
    else if (rc == SQLITE_DONE)
        out_rc = err_set(err, ZBSO_ENOTFOUND, "%s of job \"%.300s\" not found", which, id);
    else
        out_rc = sq_fail(c, rc, what, id, err);
    sqlite3_reset(s);
    return out_rc;
}

static int q_trial_get(store_txn *t, const char *id, int64_t n, zbso_trial *out,
                       zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_TRIAL_GET, err);
    char which[48];
    if (s == NULL)
        return sq_code(c);
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, n);
    snprintf(which, sizeof which, "trial %lld", (long long)n);
    return one_trial(c, s, "trial_get", id, which, out, err);
}

static int q_trial_by_key(store_txn *t, const char *id, const char *key, zbso_trial *out,
                          zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_TRIAL_BY_KEY, err);
    if (s == NULL)
        return sq_code(c);
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, key, -1, SQLITE_STATIC);
    return one_trial(c, s, "trial_by_key", id, "the trial of a request key", out, err);
}

static int q_trial_update(store_txn *t, const char *id, const zbso_trial *trial,
                          zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_TRIAL_UPDATE, err);
    int64_t n = 0;
    if (s == NULL)
        return sq_code(c);
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
    int id_stmt = q->last_n > 0 ? (q->batch_size != 0 ? S_TRIALS_LIST_BS : S_TRIALS_LIST)
                                : (q->batch_size != 0 ? S_TRIALS_PAGE_BS : S_TRIALS_PAGE);
    sqlite3_stmt *s = sq_stmt(c, id_stmt, err);
    zbso_trial tr;
    int rc, out = 0;
    if (s == NULL)
        return sq_code(c);
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, q->type_mask ? (int64_t)q->type_mask : (int64_t)UINT32_MAX);
    sqlite3_bind_int64(s, 3, q->status_mask ? (int64_t)q->status_mask : (int64_t)UINT32_MAX);
    if (q->last_n > 0)
        sqlite3_bind_int64(s, 4, q->last_n);
    if (q->batch_size != 0)
        sqlite3_bind_int64(s, 5, q->batch_size);
    sqlite3_bind_int64(s, 6, q->after > 0 ? q->after : INT64_MIN);
    sqlite3_bind_int64(s, 7, q->limit > 0 ? q->limit : -1);
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
    int rc = sq_code(c);
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
        return sq_code(c);
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (n == cap) {
            out_rc = err_set(err, ZBSO_EINVAL,
                             "job \"%.300s\" has more than the %zu arms asked for",
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
        return sq_code(c);
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, arm->batch_size);
    bind_double(s, 3, arm->param_mean);
    bind_double(s, 4, arm->param_precision);
    sqlite3_bind_int64(s, 5, arm->num_observations);
    return sq_write(c, s, "arm_put", id, NULL, err);
}

/* Lists jobs from the larger of the prefix and the cursor; the rows come in index order,
 * so the first id without the prefix ends the listing (and the scan). fn runs while the
 * statement is open: it may use other operations, but not jobs_list itself. */
static int q_jobs_list(store_txn *t, const store_job_query *q, store_job_fn fn, void *ctx,
                       zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    const char *prefix = q->prefix != NULL ? q->prefix : "";
    size_t plen = strlen(prefix);
    bool use_after = q->after != NULL && q->after[0] != '\0' && strcmp(q->after, prefix) >= 0;
    sqlite3_stmt *s = sq_stmt(c, use_after ? S_JOBS_AFTER : S_JOBS_FROM, err);
    zbso_job job;
    int rc, out = 0;
    if (s == NULL)
        return sq_code(c);
    const char *from = use_after ? q->after : prefix;
    sqlite3_bind_text(s, 1, from, (int)strlen(from), SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, q->limit > 0 ? q->limit : -1);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(s, 0);
        if (id == NULL || strncmp(id, prefix, plen) != 0) {
            rc = SQLITE_DONE;
            break;
        }
        if ((out = col_job(s, &job, err)) != 0 || (out = fn(ctx, &job)) != 0)
            goto out;
    }
    if (rc != SQLITE_DONE)
        out = sq_fail(c, rc, "jobs_list", NULL, err);
out:
    sqlite3_reset(s);
    return out;
}

/* The trial is looked up once; then one statement per point, run by the writer inside
 * its group, which no other unit can come between: a point is one B-tree insert (or
 * update). Points of a missing trial are dropped. */
static int q_reports_put(store_txn *t, const char *id, int64_t n, const zbso_curve_point *p,
                         size_t np, zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s;
    int rc = 0;
    if (np == 0)
        return 0;
    if ((s = sq_stmt(c, S_TRIAL_EXISTS, err)) == NULL)
        return sq_code(c);
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, n);
    rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc == SQLITE_DONE)
        return 0;
    if (rc != SQLITE_ROW)
        return sq_fail(c, rc, "reports_put", id, err);
    rc = 0;
    if ((s = sq_stmt(c, S_REPORT_PUT, err)) == NULL)
        return sq_code(c);
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, n);
    /* sqlite3_reset keeps the bindings: only the point's own change. */
    for (size_t i = 0; i < np && rc == 0; i++) {
        sqlite3_bind_int64(s, 3, p[i].epoch);
        bind_double(s, 4, p[i].time);
        bind_double(s, 5, p[i].energy);
        bind_double(s, 6, p[i].metric);
        bind_double(s, 7, p[i].received_at);
        rc = sq_write(c, s, "reports_put", id, NULL, err);
    }
    return rc;
}

static int q_reports_list(store_txn *t, const char *id, int64_t n, store_point_fn fn,
                          void *ctx, zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_REPORTS_LIST, err);
    int rc, out = 0;
    if (s == NULL)
        return sq_code(c);
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, n);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        zbso_curve_point pt = {sqlite3_column_int64(s, 0), col_double(s, 1), col_double(s, 2),
                               col_double(s, 3), col_double(s, 4)};
        if ((out = fn(ctx, &pt)) != 0)
            goto out;
    }
    if (rc != SQLITE_DONE)
        out = sq_fail(c, rc, "reports_list", id, err);
out:
    sqlite3_reset(s);
    return out;
}

static int q_counts(store_txn *t, store_counts *out, zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_COUNT_JOBS, err);
    int rc, out_rc = 0;
    memset(out, 0, sizeof *out);
    if (s == NULL)
        return sq_code(c);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        out->jobs = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    if (rc != SQLITE_ROW)
        return sq_fail(c, rc, "counts", NULL, err);
    if ((s = sq_stmt(c, S_COUNT_TRIALS, err)) == NULL)
        return sq_code(c);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t ty = sqlite3_column_int64(s, 0), st = sqlite3_column_int64(s, 1);
        if (ty >= 0 && ty < 3 && st >= 0 && st < 3)
            out->trials[ty][st] = sqlite3_column_int64(s, 2);
    }
    if (rc != SQLITE_DONE)
        out_rc = sq_fail(c, rc, "counts", NULL, err);
    sqlite3_reset(s);
    if (out_rc < 0)
        return out_rc;
    if ((s = sq_stmt(c, S_OLDEST_LEASE, err)) == NULL)
        return sq_code(c);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
        out->has_oldest_lease = true;
        out->oldest_lease_renewed_at = sqlite3_column_int64(s, 0);
    }
    if (rc != SQLITE_ROW)
        out_rc = sq_fail(c, rc, "counts", NULL, err);
    sqlite3_reset(s);
    return out_rc;
}

static int q_profile_put(store_txn *t, const char *id, const zbso_power_profile *p,
                         zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_PROFILE_PUT, err);
    int64_t n = 0;
    if (s == NULL)
        return sq_code(c);
    char *text = malloc(STORE_PL_TEXT_MAX);
    if (text == NULL) {
        sqlite3_reset(s);
        return err_set(err, ZBSO_ENOMEM, "out of memory storing a power profile of job "
                       "\"%.300s\"", id);
    }
    store_pl_format(p, text);
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, p->batch_size);
    sqlite3_bind_int64(s, 3, p->trial_number);
    sqlite3_bind_int64(s, 4, p->observer ? 1 : 0);
    sqlite3_bind_int64(s, 5, p->profile_steps);
    sqlite3_bind_double(s, 6, p->created_at);
    sqlite3_bind_text(s, 7, text, -1, SQLITE_STATIC);
    int rc = sq_write(c, s, "profile_put", id, &n, err);
    free(text);
    if (rc == 0 && n == 0)
        rc = err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id);
    return rc;
}

/* Reads a power_profiles row (PROFILE_COLS order). */
static int col_profile(sqlite3_stmt *s, const char *id, zbso_power_profile *p, zbso_err *err)
{
    const char *text = (const char *)sqlite3_column_text(s, 5);
    p->batch_size = sqlite3_column_int64(s, 0);
    p->trial_number = sqlite3_column_int64(s, 1);
    p->observer = sqlite3_column_int64(s, 2) != 0;
    p->profile_steps = sqlite3_column_int64(s, 3);
    p->created_at = sqlite3_column_double(s, 4);
    return store_pl_parse(text ? text : "", id, p, err);
}

static int q_profile_get(store_txn *t, const char *id, int64_t bs, zbso_power_profile *out,
                         zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_PROFILE_GET, err);
    int rc, out_rc;
    if (s == NULL)
        return sq_code(c);
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, bs);
    if ((rc = sqlite3_step(s)) == SQLITE_ROW)
        out_rc = col_profile(s, id, out, err);
    else if (rc == SQLITE_DONE)
        out_rc = err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" has no power profile of batch "
                         "size %lld", id, (long long)bs);
    else
        out_rc = sq_fail(c, rc, "profile_get", id, err);
    sqlite3_reset(s);
    return out_rc;
}

static int q_profiles_list(store_txn *t, const char *id, store_profile_fn fn, void *ctx,
                           zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sqlite3_stmt *s = sq_stmt(c, S_PROFILES_LIST, err);
    zbso_power_profile *p = NULL;
    int rc, out = 0;
    if (s == NULL)
        return sq_code(c);
    if ((p = malloc(sizeof *p)) == NULL) {
        out = err_set(err, ZBSO_ENOMEM, "out of memory listing power profiles");
        goto out;
    }
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        if ((out = col_profile(s, id, p, err)) != 0 || (out = fn(ctx, p)) != 0)
            goto out;
    if (rc != SQLITE_DONE)
        out = sq_fail(c, rc, "profiles_list", id, err);
out:
    sqlite3_reset(s);
    free(p);
    return out;
}

const store_txn_ops sq_ops = {
    .job_get = q_job_get,
    .job_insert = q_job_insert,
    .job_update = q_job_update,
    .job_delete = q_job_delete,
    .job_ids = q_job_ids,
    .trial_insert = q_trial_insert,
    .trial_get = q_trial_get,
    .trial_by_key = q_trial_by_key,
    .trial_update = q_trial_update,
    .trials_list = q_trials_list,
    .trials_fail_stale = q_trials_fail_stale,
    .arms_get = q_arms_get,
    .arm_put = q_arm_put,
    .jobs_list = q_jobs_list,
    .reports_put = q_reports_put,
    .reports_list = q_reports_list,
    .counts = q_counts,
    .profile_put = q_profile_put,
    .profile_get = q_profile_get,
    .profiles_list = q_profiles_list,
};

static int read_version(sq_conn *c, int *out, zbso_err *err);

/* Runs the steps that take the database from version `from` to `to`, in the caller's
 * transaction. Returns 0 or sq_fault's code naming the statement that failed. */
static int apply_steps(sq_conn *c, int from, int to, zbso_err *err)
{
    for (int v = from + 1; v <= to; v++) {
        for (const char *const *sql = sq_schema_steps[v - 1]; *sql != NULL; sql++) {
            char *msg = NULL, cause[160];
            int rc = sqlite3_exec(c->db, *sql, NULL, NULL, &msg);
            if (rc != SQLITE_OK) {
                int code = sq_fault(c->db, rc, cause, sizeof cause);
                rc = err_set(err, code, "%s: migration to schema version %d failed: %s%s%s",
                             c->path, v, msg != NULL ? msg : sqlite3_errmsg(c->db),
                             cause[0] ? "; " : "", cause);
                sqlite3_free(msg);
                return rc;
            }
        }
    }
    return 0;
}

/* A write that changes nothing visible: user_version set to what it is. Committed, it
 * proves that the database can be written now. */
int sq_write_probe_unit(store_txn *t, void *arg, zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    char sql[64];
    int version = 0, rc;
    if ((rc = read_version(c, &version, err)) < 0)
        return rc;
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", version);
    rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : sq_fail(c, rc, "the write probe", NULL, err);
}

/* Reads PRAGMA user_version. Returns 0 or a translated error. */
static int read_version(sq_conn *c, int *out, zbso_err *err)
{
    sqlite3_stmt *s = sq_stmt(c, S_USER_VERSION, err);
    if (s == NULL)
        return sq_code(c);
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

/* Run by the writer, whose BEGIN IMMEDIATE keeps other processes out until it commits. */
int sq_schema_unit(store_txn *t, void *argp, zbso_err *err)
{
    sq_conn *c = txn_conn(t);
    sq_schema_arg *a = argp;
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
