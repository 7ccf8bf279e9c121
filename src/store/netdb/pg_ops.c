/* pg_ops.c: the PostgreSQL backend's schema history and domain operations: the SQL of
 * every step and statement, values as libpq text parameters, rows mapped to core
 * structs, and the store_txn_ops run inside units of work. Knows nothing of connections,
 * pools or reruns (pg_engine.c). Never writes a password into a message or a log line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/spec.h"
#include "store/netdb/pgInt.h"
#include "util/log.h"

/* Schema history. The version lives in the one row of zbso_schema (no such table: an
 * empty database, version 0), written by the last statement of each step inside the
 * step's transaction. Append only: a released step never changes.
 * Encodings: stage 0 Pruning / 1 MAB; trial type 0 Exploration / 1 Concurrent / 2 MAB;
 * status 0 Dispatched / 1 Succeeded / 2 Failed; beta_knob and mab_seed NULL when absent;
 * mab_seed holds the uint64 seed's bits as a signed 64-bit integer; min_cost NULL until one
 * is known; a NULL time/energy/metric is NaN; rng_state is rng_format()'s text. */
static const char *const schema_v1[] = {
    "CREATE TABLE jobs (\n"
    "  job_id TEXT PRIMARY KEY,\n"
    "  job_id_prefix TEXT NOT NULL,\n"
    "  batch_sizes BIGINT[] NOT NULL,\n"
    "  default_batch_size BIGINT NOT NULL,\n"
    "  eta_knob DOUBLE PRECISION NOT NULL,\n"
    "  beta_knob DOUBLE PRECISION,\n"
    "  target_metric DOUBLE PRECISION NOT NULL,\n"
    "  higher_is_better_metric BOOLEAN NOT NULL,\n"
    "  max_epochs BIGINT NOT NULL,\n"
    "  num_pruning_rounds BIGINT NOT NULL,\n"
    "  window_size BIGINT NOT NULL,\n"
    "  mab_prior_mean DOUBLE PRECISION NOT NULL,\n"
    "  mab_prior_precision DOUBLE PRECISION NOT NULL,\n"
    "  mab_num_explorations BIGINT NOT NULL,\n"
    "  mab_seed BIGINT,\n"
    "  max_power DOUBLE PRECISION NOT NULL,\n"
    "  number_of_gpus BIGINT NOT NULL,\n"
    "  gpu_model TEXT NOT NULL,\n"
    "  stage INTEGER NOT NULL,\n"
    "  exp_default_batch_size BIGINT NOT NULL,\n"
    "  min_cost DOUBLE PRECISION,\n"
    "  min_cost_batch_size BIGINT NOT NULL,\n"
    "  rng_state TEXT NOT NULL,\n"
    "  num_trials BIGINT NOT NULL,\n"
    "  created_at DOUBLE PRECISION NOT NULL,\n"
    "  version BIGINT NOT NULL\n"
    ");",
    "CREATE TABLE trials (\n"
    "  job_id TEXT NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,\n"
    "  trial_number BIGINT NOT NULL,\n"
    "  batch_size BIGINT NOT NULL,\n"
    "  type INTEGER NOT NULL,\n"
    "  status INTEGER NOT NULL,\n"
    "  start_time DOUBLE PRECISION NOT NULL,\n"
    "  end_time DOUBLE PRECISION NOT NULL,\n"
    "  lease_renewed_at DOUBLE PRECISION NOT NULL,\n"
    "  time DOUBLE PRECISION,\n"
    "  energy DOUBLE PRECISION,\n"
    "  metric DOUBLE PRECISION,\n"
    "  epochs BIGINT NOT NULL,\n"
    "  converged BOOLEAN NOT NULL,\n"
    "  PRIMARY KEY (job_id, trial_number)\n"
    ");",
    "CREATE TABLE arms (\n"
    "  job_id TEXT NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,\n"
    "  batch_size BIGINT NOT NULL,\n"
    "  param_mean DOUBLE PRECISION NOT NULL,\n"
    "  param_precision DOUBLE PRECISION NOT NULL,\n"
    "  num_observations BIGINT NOT NULL,\n"
    "  PRIMARY KEY (job_id, batch_size)\n"
    ");",
    "CREATE TABLE zbso_schema (version INTEGER NOT NULL);",
    "INSERT INTO zbso_schema (version) VALUES (1);",
    NULL,
};

/* Version 2: the indexes behind trials_list(batch_size) and trials_fail_stale. */
static const char *const schema_v2[] = {
    "CREATE INDEX trials_by_batch_size ON trials (job_id, batch_size, trial_number);",
    "CREATE INDEX trials_by_status_lease ON trials (job_id, status, lease_renewed_at);",
    "UPDATE zbso_schema SET version = 2;",
    NULL,
};

/* Version 3: the idempotency key of the request that dispatched a trial (store.h
 * trial_insert), at most one trial per (job, key); NULL for a trial dispatched without
 * one and for every trial of an older version. */
static const char *const schema_v3[] = {
    "ALTER TABLE trials ADD COLUMN request_key TEXT;",
    "CREATE UNIQUE INDEX trials_by_request_key ON trials (job_id, request_key);",
    "UPDATE zbso_schema SET version = 3;",
    NULL,
};

/* Version 4 (issue 11, inspection): the job's last change (zbso_job.updated_at), for an
 * existing job the latest of its creation and its trials' start, end and lease renewal;
 * an index in byte order (COLLATE "C") for jobs_list, whatever the database's collation;
 * and the curve points of trials (store.h reports_put), which go with their trial and so
 * with their job. */
static const char *const schema_v4[] = {
    "ALTER TABLE jobs ADD COLUMN updated_at DOUBLE PRECISION NOT NULL DEFAULT 0;",
    "UPDATE jobs SET updated_at = GREATEST(created_at, (SELECT"
    " max(GREATEST(start_time, end_time, lease_renewed_at)) FROM trials"
    " WHERE trials.job_id = jobs.job_id));",
    "ALTER TABLE jobs ALTER COLUMN updated_at DROP DEFAULT;",
    "CREATE INDEX jobs_by_id_bytes ON jobs (job_id COLLATE \"C\");",
    "CREATE TABLE reports (\n"
    "  job_id TEXT NOT NULL,\n"
    "  trial_number BIGINT NOT NULL,\n"
    "  epoch BIGINT NOT NULL,\n"
    "  time DOUBLE PRECISION,\n"
    "  energy DOUBLE PRECISION,\n"
    "  metric DOUBLE PRECISION,\n"
    "  received_at DOUBLE PRECISION NOT NULL,\n"
    "  PRIMARY KEY (job_id, trial_number, epoch),\n"
    "  FOREIGN KEY (job_id, trial_number) REFERENCES trials (job_id, trial_number)"
    " ON DELETE CASCADE\n"
    ");",
    "UPDATE zbso_schema SET version = 4;",
    NULL,
};

/* Version 5 (issue 15): power-limit profiles (store.h profile_put), one row per job and
 * batch size, the measurements as store_pl_format's text; they go with their job. */
static const char *const schema_v5[] = {
    "CREATE TABLE power_profiles (\n"
    "  job_id TEXT NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,\n"
    "  batch_size BIGINT NOT NULL,\n"
    "  trial_number BIGINT NOT NULL,\n"
    "  observer BOOLEAN NOT NULL,\n"
    "  profile_steps BIGINT NOT NULL,\n"
    "  created_at DOUBLE PRECISION NOT NULL,\n"
    "  measurements TEXT NOT NULL,\n"
    "  PRIMARY KEY (job_id, batch_size)\n"
    ");",
    "UPDATE zbso_schema SET version = 5;",
    NULL,
};

/* The policy step (issue 21): each job's batch size policy as its name, "zeus" for every
 * job of an older version (the only policy there was); whether it asked for a warm start;
 * its prior jobs as store_prior_format's text ("" for none). One ALTER TABLE, so the
 * table is rewritten at most once. V_POLICY is its version, the one number to change
 * should the step move. */
#define V_POLICY 6
#define V_TEXT_(v) #v
#define V_TEXT(v) V_TEXT_(v)
static const char *const schema_policy[] = {
    "ALTER TABLE jobs ADD COLUMN policy TEXT NOT NULL DEFAULT 'zeus',"
    " ADD COLUMN warm_start BOOLEAN NOT NULL DEFAULT false,"
    " ADD COLUMN prior_jobs TEXT NOT NULL DEFAULT '';",
    "UPDATE zbso_schema SET version = " V_TEXT(V_POLICY) ";",
    NULL,
};

/* The stop-reason step (issue 25): why each trial ended (zbso_stop_reason: 1 target_reached,
 * 2 cost_bound, 3 max_epochs, 4 ended, 5 lease_expired); 0 while it runs and for every
 * trial of an older version, whose reason opt_trial_stop_reason derives where it can. A
 * constant default: no table rewrite (PostgreSQL 11+). */
#define V_STOP 7
_Static_assert(V_STOP == V_POLICY + 1, "the stop-reason step follows the policy step");
static const char *const schema_stop[] = {
    "ALTER TABLE trials ADD COLUMN stop_reason INTEGER NOT NULL DEFAULT 0;",
    "UPDATE zbso_schema SET version = " V_TEXT(V_STOP) ";",
    NULL,
};

/* The intensity step (issue 25): the job's own carbon intensity (g CO2e per kWh), NULL
 * for none, the server's then, and for every job of an older version. No default: no
 * table rewrite. */
#define V_INTENSITY 8
_Static_assert(V_INTENSITY == V_STOP + 1, "the intensity step follows the stop-reason step");
static const char *const schema_intensity[] = {
    "ALTER TABLE jobs ADD COLUMN carbon_intensity DOUBLE PRECISION;",
    "UPDATE zbso_schema SET version = " V_TEXT(V_INTENSITY) ";",
    NULL,
};

const char *const *const pg_schema_steps[PG_LATEST] = {schema_v1, schema_v2, schema_v3,
                                                        schema_v4, schema_v5,
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
#define N_JOB_COLS 31
#define TRIAL_COLS                                                                        \
    "trial_number, batch_size, type, status, start_time, end_time, lease_renewed_at, "     \
    "time, energy, metric, epochs, converged, stop_reason"
#define N_TRIAL_COLS 13

/* Trials filters: masks arrive as $2 (type) and $3 (status), trial numbers above the
 * cursor `after`; LIMIT $4 keeps the newest rows, and the outer query puts them back in
 * ascending order and keeps the first $6 (NULL: all). Without last_n the page runs in
 * ascending order from the cursor ($4), LIMIT $5. */
#define TRIALS_WHERE(after, bs_cond)                                                      \
    " FROM trials WHERE job_id = $1 AND (($2::bigint >> type) & 1) = 1"                    \
    " AND (($3::bigint >> status) & 1) = 1 AND trial_number > " after bs_cond
#define TRIALS_LIST_SQL(bs_cond)                                                          \
    "SELECT " TRIAL_COLS " FROM (SELECT " TRIAL_COLS TRIALS_WHERE("$5", bs_cond)           \
    " ORDER BY trial_number DESC LIMIT $4) AS newest ORDER BY trial_number LIMIT $6"
#define TRIALS_PAGE_SQL(bs_cond)                                                          \
    "SELECT " TRIAL_COLS TRIALS_WHERE("$4", bs_cond) " ORDER BY trial_number LIMIT $5"
/* Jobs in byte order (COLLATE "C", the index jobs_by_id_bytes) from a lower bound $1, below
 * an upper bound $2 when there is one, LIMIT $2 or $3 (NULL: all). */
#define JOBS_LIST_SQL(op, upper, limit)                                                   \
    "SELECT " JOB_COLS " FROM jobs WHERE job_id COLLATE \"C\" " op " $1" upper            \
    " ORDER BY job_id COLLATE \"C\" LIMIT " limit
#define JOBS_UPPER " AND job_id COLLATE \"C\" < $2"
#define PROFILE_COLS "batch_size, trial_number, observer, profile_steps, created_at, measurements"

const pg_stmt pg_stmts[S_COUNT] = {
    [S_JOB_GET] = {"SELECT " JOB_COLS " FROM jobs WHERE job_id = $1", 1},
    [S_JOB_GET_LOCK] = {"SELECT " JOB_COLS " FROM jobs WHERE job_id = $1 FOR UPDATE", 1},
    [S_JOB_INSERT] = {"INSERT INTO jobs (" JOB_COLS ") VALUES ($1, $2, $3, $4, $5, $6, $7,"
                      " $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21,"
                      " $22, $23, $24, $25, $26, $27, $28, $29, $30, $31)"
                      " ON CONFLICT (job_id) DO NOTHING",
                      N_JOB_COLS},
    [S_JOB_UPDATE] = {"UPDATE jobs SET stage = $2, exp_default_batch_size = $3, min_cost = $4,"
                      " min_cost_batch_size = $5, rng_state = $6, num_trials = $7,"
                      " version = $8, updated_at = $9 WHERE job_id = $1", 9},
    [S_JOB_DELETE] = {"DELETE FROM jobs WHERE job_id = $1", 1},
    /* Byte order, as sqlite's BINARY collation lists them, whatever the database's. */
    [S_JOB_IDS] = {"SELECT job_id FROM jobs ORDER BY job_id COLLATE \"C\"", 0},
    [S_TRIAL_INSERT] = {"INSERT INTO trials (job_id, " TRIAL_COLS ", request_key) VALUES ($1,"
                        " $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
                        " ON CONFLICT (job_id, trial_number) DO NOTHING", 2 + N_TRIAL_COLS},
    [S_TRIAL_GET] = {"SELECT " TRIAL_COLS " FROM trials WHERE job_id = $1 AND trial_number = $2",
                     2},
    [S_TRIAL_BY_KEY] = {"SELECT " TRIAL_COLS " FROM trials WHERE job_id = $1"
                        " AND request_key = $2", 2},
    [S_TRIAL_UNKEY] = {"UPDATE trials SET request_key = NULL WHERE job_id = $1"
                       " AND request_key = $2", 2},
    [S_TRIAL_UPDATE] = {"UPDATE trials SET batch_size = $3, type = $4, status = $5,"
                        " start_time = $6, end_time = $7, lease_renewed_at = $8, time = $9,"
                        " energy = $10, metric = $11, epochs = $12, converged = $13,"
                        " stop_reason = $14 WHERE job_id = $1 AND trial_number = $2",
                        1 + N_TRIAL_COLS},
    [S_TRIALS_LIST] = {TRIALS_LIST_SQL(""), 6},
    [S_TRIALS_LIST_BS] = {TRIALS_LIST_SQL(" AND batch_size = $7"), 7},
    [S_TRIALS_PAGE] = {TRIALS_PAGE_SQL(""), 5},
    [S_TRIALS_PAGE_BS] = {TRIALS_PAGE_SQL(" AND batch_size = $6"), 6},
    [S_TRIALS_FAIL_STALE] = {"UPDATE trials SET status = 2, end_time = $3, stop_reason = 5"
                             " WHERE job_id = $1"
                             " AND status = 0 AND lease_renewed_at < $2", 3},
    [S_ARMS_GET] = {"SELECT batch_size, param_mean, param_precision, num_observations"
                    " FROM arms WHERE job_id = $1 ORDER BY batch_size", 1},
    [S_ARM_PUT] = {"INSERT INTO arms (job_id, batch_size, param_mean, param_precision,"
                   " num_observations) VALUES ($1, $2, $3, $4, $5)"
                   " ON CONFLICT (job_id, batch_size) DO UPDATE"
                   " SET param_mean = excluded.param_mean,"
                   " param_precision = excluded.param_precision,"
                   " num_observations = excluded.num_observations", 5},
    [S_JOBS_FROM] = {JOBS_LIST_SQL(">=", "", "$2"), 2},
    [S_JOBS_FROM_TO] = {JOBS_LIST_SQL(">=", JOBS_UPPER, "$3"), 3},
    [S_JOBS_AFTER] = {JOBS_LIST_SQL(">", "", "$2"), 2},
    [S_JOBS_AFTER_TO] = {JOBS_LIST_SQL(">", JOBS_UPPER, "$3"), 3},
    /* Every point of one trial in one statement: the arrays $3..$7 side by side. Of the
     * points of one epoch the one received last (on a tie, the later in the arrays) is
     * kept, as ON CONFLICT may touch a row once per statement; the stored point stays
     * when it was received later. The trial's row is locked FOR KEY SHARE, so a
     * concurrent delete of its job either waits for this unit or, committed first,
     * leaves no trial to find: the points are then dropped, never a foreign key error. */
    [S_REPORTS_PUT] = {"INSERT INTO reports AS r (job_id, trial_number, epoch, time, energy,"
                       " metric, received_at) SELECT DISTINCT ON (p.epoch) $1::text,"
                       " $2::bigint, p.epoch, p.time, p.energy, p.metric, p.received_at"
                       " FROM unnest($3::bigint[], $4::float8[], $5::float8[], $6::float8[],"
                       " $7::float8[]) WITH ORDINALITY AS p (epoch, time, energy, metric,"
                       " received_at, ord) WHERE EXISTS (SELECT 1 FROM trials t"
                       " WHERE t.job_id = $1::text AND t.trial_number = $2::bigint"
                       " FOR KEY SHARE) ORDER BY p.epoch, p.received_at DESC, p.ord DESC"
                       " ON CONFLICT (job_id, trial_number, epoch) DO UPDATE SET"
                       " time = excluded.time, energy = excluded.energy,"
                       " metric = excluded.metric, received_at = excluded.received_at"
                       " WHERE r.received_at <= excluded.received_at", 7},
    [S_REPORTS_LIST] = {"SELECT epoch, time, energy, metric, received_at FROM reports"
                        " WHERE job_id = $1 AND trial_number = $2 ORDER BY epoch", 2},
    /* The jobs as type and status -1, then the trials by type and status. */
    [S_COUNTS] = {"SELECT -1, -1, count(*) FROM jobs UNION ALL"
                  " SELECT type, status, count(*) FROM trials GROUP BY type, status UNION ALL"
                  " SELECT -2, -2, floor(min(lease_renewed_at))::bigint FROM trials"
                  " WHERE status = 0", 0},
    /* From the job's row: no row is inserted for a job that does not exist. */
    [S_PROFILE_PUT] = {"INSERT INTO power_profiles (job_id, batch_size, trial_number, observer,"
                       " profile_steps, created_at, measurements) SELECT job_id, $2, $3, $4,"
                       " $5, $6, $7 FROM jobs WHERE job_id = $1"
                       " ON CONFLICT (job_id, batch_size) DO UPDATE SET"
                       " trial_number = excluded.trial_number, observer = excluded.observer,"
                       " profile_steps = excluded.profile_steps,"
                       " created_at = excluded.created_at,"
                       " measurements = excluded.measurements", 7},
    [S_PROFILE_GET] = {"SELECT " PROFILE_COLS " FROM power_profiles WHERE job_id = $1"
                       " AND batch_size = $2", 2},
    [S_PROFILES_LIST] = {"SELECT " PROFILE_COLS " FROM power_profiles WHERE job_id = $1"
                         " ORDER BY batch_size", 1},
};

/* ---- values ---- */

/* Text parameters of one statement: each slot is a value's text, or NULL for SQL NULL. */
typedef struct params {
    const char *v[N_JOB_COLS];
    char num[N_JOB_COLS][32];
} params;

static void p_i64(params *p, int i, int64_t x)
{
    snprintf(p->num[i], sizeof p->num[i], "%lld", (long long)x);
    p->v[i] = p->num[i];
}

/* NaN is SQL NULL; infinities are PostgreSQL's spellings; finite values round-trip
 * exactly with 17 significant digits. */
static void p_f64(params *p, int i, double x)
{
    if (isnan(x))
        p->v[i] = NULL;
    else if (isinf(x))
        p->v[i] = x > 0 ? "Infinity" : "-Infinity";
    else {
        snprintf(p->num[i], sizeof p->num[i], "%.17g", x);
        p->v[i] = p->num[i];
    }
}

static void p_bool(params *p, int i, bool x)
{
    p->v[i] = x ? "true" : "false";
}

static bool r_null(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) != 0;
}

static int64_t r_i64(const PGresult *r, int row, int col)
{
    return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* NULL reads as NaN. */
static double r_f64(const PGresult *r, int row, int col)
{
    return r_null(r, row, col) ? NAN : strtod(PQgetvalue(r, row, col), NULL);
}

static bool r_bool(const PGresult *r, int row, int col)
{
    return PQgetvalue(r, row, col)[0] == 't';
}

static void r_text(const PGresult *r, int row, int col, char *out, size_t cap)
{
    snprintf(out, cap, "%s", PQgetvalue(r, row, col));
}

/* Rows a write changed (PQcmdTuples). */
static int64_t changed(const PGresult *r)
{
    return strtoll(PQcmdTuples((PGresult *)r), NULL, 10);
}

static pg_txn *txn_of(store_txn *t)
{
    return (pg_txn *)t;
}

/* ---- jobs ---- */

/* Fills p with the job's columns in JOB_COLS order ($1..$30); bs, rng and prior hold the
 * batch_sizes array literal, the rng text and store_prior_format's text. */
static void job_params(params *p, const zbso_job *job, char *bs, size_t bs_cap, char rng[96],
                       char prior[STORE_PRIOR_TEXT_MAX])
{
    const zbso_job_spec *sp = &job->spec;
    size_t len = (size_t)snprintf(bs, bs_cap, "{");
    for (size_t i = 0; i < sp->n_batch_sizes && i < ZBSO_MAX_BATCH_SIZES && len < bs_cap; i++)
        len += (size_t)snprintf(bs + len, bs_cap - len, "%s%lld", i ? "," : "",
                                (long long)sp->batch_sizes[i]);
    if (len < bs_cap)
        snprintf(bs + len, bs_cap - len, "}");
    rng_format(&job->rng, rng);
    p->v[0] = sp->job_id;
    p->v[1] = sp->job_id_prefix;
    p->v[2] = bs;
    p_i64(p, 3, sp->default_batch_size);
    p_f64(p, 4, sp->eta_knob);
    if (sp->has_beta_knob)
        p_f64(p, 5, sp->beta_knob);
    else
        p->v[5] = NULL;
    p_f64(p, 6, sp->target_metric);
    p_bool(p, 7, sp->higher_is_better_metric);
    p_i64(p, 8, sp->max_epochs);
    p_i64(p, 9, sp->num_pruning_rounds);
    p_i64(p, 10, sp->window_size);
    p_f64(p, 11, sp->mab_prior_mean);
    p_f64(p, 12, sp->mab_prior_precision);
    p_i64(p, 13, sp->mab_num_explorations);
    if (sp->has_mab_seed) {
        int64_t seed;
        memcpy(&seed, &sp->mab_seed, sizeof seed);
        p_i64(p, 14, seed);
    } else {
        p->v[14] = NULL;
    }
    p_f64(p, 15, sp->max_power);
    p_i64(p, 16, sp->number_of_gpus);
    p->v[17] = sp->gpu_model;
    p_i64(p, 18, (int64_t)job->stage);
    p_i64(p, 19, job->exp_default_batch_size);
    if (job->has_min_cost)
        p_f64(p, 20, job->min_cost);
    else
        p->v[20] = NULL;
    p_i64(p, 21, job->min_cost_batch_size);
    p->v[22] = rng;
    p_i64(p, 23, job->num_trials);
    p_f64(p, 24, job->created_at);
    p_i64(p, 25, job->revision);
    p_f64(p, 26, job->updated_at);
    p->v[27] = spec_policy_name(sp->policy);
    p_bool(p, 28, sp->warm_start);
    store_prior_format(sp, prior);
    p->v[29] = prior;
    if (sp->has_carbon_intensity)
        p_f64(p, 30, sp->carbon_intensity_g_per_kwh);
    else
        p->v[30] = NULL;
}

/* Reads row `row` of a jobs result (JOB_COLS order). Returns 0, or ZBSO_ESTORE when
 * batch_sizes or rng_state do not parse (the row was not written by this code). */
static int r_job(const PGresult *r, int row, zbso_job *job, zbso_err *err)
{
    zbso_job_spec *sp = &job->spec;
    memset(job, 0, sizeof *job);
    r_text(r, row, 0, sp->job_id, sizeof sp->job_id);
    r_text(r, row, 1, sp->job_id_prefix, sizeof sp->job_id_prefix);
    const char *bs = PQgetvalue(r, row, 2), *p = bs;
    if (*p == '{')
        p++;
    while (*p != '}' && *p != '\0') {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || (*end != ',' && *end != '}') || sp->n_batch_sizes == ZBSO_MAX_BATCH_SIZES)
            return err_set(err, ZBSO_ESTORE, "postgresql: job \"%.300s\" has malformed"
                           " batch_sizes \"%.100s\"", sp->job_id, bs);
        sp->batch_sizes[sp->n_batch_sizes++] = v;
        p = *end == ',' ? end + 1 : end;
    }
    sp->default_batch_size = r_i64(r, row, 3);
    sp->eta_knob = r_f64(r, row, 4);
    sp->has_beta_knob = !r_null(r, row, 5);
    sp->beta_knob = sp->has_beta_knob ? r_f64(r, row, 5) : 0.0;
    sp->target_metric = r_f64(r, row, 6);
    sp->higher_is_better_metric = r_bool(r, row, 7);
    sp->max_epochs = r_i64(r, row, 8);
    sp->num_pruning_rounds = r_i64(r, row, 9);
    sp->window_size = r_i64(r, row, 10);
    sp->mab_prior_mean = r_f64(r, row, 11);
    sp->mab_prior_precision = r_f64(r, row, 12);
    sp->mab_num_explorations = r_i64(r, row, 13);
    sp->has_mab_seed = !r_null(r, row, 14);
    if (sp->has_mab_seed) {
        int64_t seed = r_i64(r, row, 14);
        memcpy(&sp->mab_seed, &seed, sizeof seed);
    }
    sp->max_power = r_f64(r, row, 15);
    sp->number_of_gpus = r_i64(r, row, 16);
    r_text(r, row, 17, sp->gpu_model, sizeof sp->gpu_model);
    job->stage = r_i64(r, row, 18) == ZBSO_STAGE_MAB ? ZBSO_STAGE_MAB : ZBSO_STAGE_PRUNING;
    job->exp_default_batch_size = r_i64(r, row, 19);
    job->has_min_cost = !r_null(r, row, 20);
    job->min_cost = job->has_min_cost ? r_f64(r, row, 20) : 0.0;
    job->min_cost_batch_size = r_i64(r, row, 21);
    const char *rng = PQgetvalue(r, row, 22);
    if (rng_parse(&job->rng, rng) != 0)
        return err_set(err, ZBSO_ESTORE, "postgresql: job \"%.300s\" has malformed rng_state"
                       " \"%.100s\"", sp->job_id, rng);
    job->num_trials = r_i64(r, row, 23);
    job->created_at = r_f64(r, row, 24);
    job->revision = r_i64(r, row, 25);
    job->updated_at = r_f64(r, row, 26);
    bool has_ci = !r_null(r, row, 30);
    return store_extras_read(PQgetvalue(r, row, 27), r_bool(r, row, 28),
                             PQgetvalue(r, row, 29), has_ci, has_ci ? r_f64(r, row, 30) : 0.0,
                             sp, err);
}

/* Loads a job; with for_update, SELECT ... FOR UPDATE: the row stays locked until the
 * unit ends, and a unit that waited for the lock reads the row as its holder left it.
 * A read unit reads its snapshot, which no lock would change (and a READ ONLY transaction
 * may not take one). */
static int q_job_get(store_txn *tb, const char *id, bool for_update, zbso_job *out,
                     zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    const char *v[1] = {id};
    PGresult *r = pg_run(t, for_update && !t->base.read_only ? S_JOB_GET_LOCK : S_JOB_GET, v,
                      "job_get", id, err);
    int rc;
    if (r == NULL)
        return t->first.code;
    if (PQntuples(r) == 0) {
        snprintf(t->missing_job, sizeof t->missing_job, "%s", id);
        rc = err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id);
    } else {
        rc = r_job(r, 0, out, err);
    }
    PQclear(r);
    return rc;
}

/* ZBSO_ECONFLICT when the id exists. An existing row that this unit's job_get found
 * missing was committed by another transaction meanwhile (two replicas registering one
 * job at once): the unit is marked to run again, and then sees that row. */
static int q_job_insert(store_txn *tb, const zbso_job *job, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    char bs[ZBSO_MAX_BATCH_SIZES * 21 + 3], rng[96], prior[STORE_PRIOR_TEXT_MAX];
    job_params(&p, job, bs, sizeof bs, rng, prior);
    PGresult *r = pg_run(t, S_JOB_INSERT, p.v, "job_insert", job->spec.job_id, err);
    if (r == NULL)
        return t->first.code;
    int64_t n = changed(r);
    PQclear(r);
    if (n == 1)
        return 0;
    if (strcmp(t->missing_job, job->spec.job_id) == 0)
        t->retry = true;
    return err_set(err, ZBSO_ECONFLICT, "job \"%.300s\" already exists", job->spec.job_id);
}

/* Writes the mutable columns; ZBSO_ENOTFOUND when no row has the id. */
static int q_job_update(store_txn *tb, const zbso_job *job, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    char rng[96];
    rng_format(&job->rng, rng);
    p.v[0] = job->spec.job_id;
    p_i64(&p, 1, (int64_t)job->stage);
    p_i64(&p, 2, job->exp_default_batch_size);
    if (job->has_min_cost)
        p_f64(&p, 3, job->min_cost);
    else
        p.v[3] = NULL;
    p_i64(&p, 4, job->min_cost_batch_size);
    p.v[5] = rng;
    p_i64(&p, 6, job->num_trials);
    p_i64(&p, 7, job->revision);
    p_f64(&p, 8, job->updated_at);
    PGresult *r = pg_run(t, S_JOB_UPDATE, p.v, "job_update", job->spec.job_id, err);
    if (r == NULL)
        return t->first.code;
    int64_t n = changed(r);
    PQclear(r);
    return n == 0 ? err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", job->spec.job_id)
                  : 0;
}

/* Deletes the job; its trials and arms go with it (ON DELETE CASCADE). */
static int q_job_delete(store_txn *tb, const char *id, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    const char *v[1] = {id};
    PGresult *r = pg_run(t, S_JOB_DELETE, v, "job_delete", id, err);
    if (r == NULL)
        return t->first.code;
    int64_t n = changed(r);
    PQclear(r);
    return n == 0 ? err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id) : 0;
}

static int q_job_ids(store_txn *tb, int (*fn)(void *ctx, const char *job_id), void *ctx,
                     zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    PGresult *r = pg_run(t, S_JOB_IDS, NULL, "job_ids", NULL, err);
    int rc = 0;
    if (r == NULL)
        return t->first.code;
    for (int i = 0, n = PQntuples(r); i < n && rc == 0; i++)
        rc = fn(ctx, PQgetvalue(r, i, 0));
    PQclear(r);
    return rc;
}

/* ---- trials ---- */

/* Fills p with job_id as $1 and the trial's columns as $2..$14 in TRIAL_COLS order. */
static void trial_params(params *p, const char *job_id, const zbso_trial *tr)
{
    p->v[0] = job_id;
    p_i64(p, 1, tr->trial_number);
    p_i64(p, 2, tr->batch_size);
    p_i64(p, 3, (int64_t)tr->type);
    p_i64(p, 4, (int64_t)tr->status);
    p_f64(p, 5, tr->start_time);
    p_f64(p, 6, tr->end_time);
    p_f64(p, 7, tr->lease_renewed_at);
    p_f64(p, 8, tr->time);
    p_f64(p, 9, tr->energy);
    p_f64(p, 10, tr->metric);
    p_i64(p, 11, tr->epochs);
    p_bool(p, 12, tr->converged);
    p_i64(p, 13, (int64_t)tr->stop_reason);
}

static void r_trial(const PGresult *r, int row, zbso_trial *tr)
{
    tr->trial_number = r_i64(r, row, 0);
    tr->batch_size = r_i64(r, row, 1);
    tr->type = (zbso_trial_type)r_i64(r, row, 2);
    tr->status = (zbso_trial_status)r_i64(r, row, 3);
    tr->start_time = r_f64(r, row, 4);
    tr->end_time = r_f64(r, row, 5);
    tr->lease_renewed_at = r_f64(r, row, 6);
    tr->time = r_f64(r, row, 7);
    tr->energy = r_f64(r, row, 8);
    tr->metric = r_f64(r, row, 9);
    tr->epochs = r_i64(r, row, 10);
    tr->converged = r_bool(r, row, 11);
    tr->stop_reason = zbso_stop_reason_of_code(r_i64(r, row, 12));
}

/* ZBSO_ECONFLICT when the trial number is taken, ZBSO_ENOTFOUND without the job. A key
 * first leaves the trial that held it (the unique index allows one), then goes with the
 * new row; the job's row lock orders units that dispatch for one job. */
static int q_trial_insert(store_txn *tb, const char *id, const zbso_trial *trial,
                          const char *key, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    PGresult *r;
    if (key != NULL) {
        const char *v[2] = {id, key};
        if ((r = pg_run(t, S_TRIAL_UNKEY, v, "trial_insert", id, err)) == NULL)
            return t->first.code;
        PQclear(r);
    }
    trial_params(&p, id, trial);
    p.v[N_TRIAL_COLS + 1] = key;
    r = pg_run(t, S_TRIAL_INSERT, p.v, "trial_insert", id, err);
    if (r == NULL) {
        if (t->first.code == ZBSO_ENOTFOUND)
            return err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id);
        return t->first.code;
    }
    int64_t n = changed(r);
    PQclear(r);
    return n == 1 ? 0 : err_set(err, ZBSO_ECONFLICT, "trial %lld of job \"%.300s\" already"
                                " exists", (long long)trial->trial_number, id);
}

static int q_trial_get(store_txn *tb, const char *id, int64_t n, zbso_trial *out,
                       zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    p.v[0] = id;
    p_i64(&p, 1, n);
    PGresult *r = pg_run(t, S_TRIAL_GET, p.v, "trial_get", id, err);
    int rc = 0;
    if (r == NULL)
        return t->first.code;
    if (PQntuples(r) == 0)
        rc = err_set(err, ZBSO_ENOTFOUND, "trial %lld of job \"%.300s\" not found",
                     (long long)n, id);
    else
        r_trial(r, 0, out);
    PQclear(r);
    return rc;
}

static int q_trial_by_key(store_txn *tb, const char *id, const char *key, zbso_trial *out,
                          zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    const char *v[2] = {id, key};
    PGresult *r = pg_run(t, S_TRIAL_BY_KEY, v, "trial_by_key", id, err);
    int rc = 0;
    if (r == NULL)
        return t->first.code;
    if (PQntuples(r) == 0)
        rc = err_set(err, ZBSO_ENOTFOUND, "the trial of a request key of job \"%.300s\" not"
                     " found", id);
    else
        r_trial(r, 0, out);
    PQclear(r);
    return rc;
}

static int q_trial_update(store_txn *tb, const char *id, const zbso_trial *trial,
                          zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    trial_params(&p, id, trial);
    PGresult *r = pg_run(t, S_TRIAL_UPDATE, p.v, "trial_update", id, err);
    if (r == NULL)
        return t->first.code;
    int64_t n = changed(r);
    PQclear(r);
    return n == 0 ? err_set(err, ZBSO_ENOTFOUND, "trial %lld of job \"%.300s\" not found",
                            (long long)trial->trial_number, id)
                  : 0;
}

/* The rows are all fetched before fn runs, so fn may use any operation of the unit. */
static int q_trials_list(store_txn *tb, const char *id, const store_trial_query *q,
                         store_trial_fn fn, void *ctx, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    zbso_trial tr;
    int rc = 0;
    p.v[0] = id;
    p_i64(&p, 1, q->type_mask ? (int64_t)q->type_mask : (int64_t)UINT32_MAX);
    p_i64(&p, 2, q->status_mask ? (int64_t)q->status_mask : (int64_t)UINT32_MAX);
    /* The parameters after the masks: [last_n,] after, limit [, batch_size]. */
    int i = 3, id_stmt;
    if (q->last_n > 0) {
        p_i64(&p, i++, q->last_n);
        id_stmt = q->batch_size != 0 ? S_TRIALS_LIST_BS : S_TRIALS_LIST;
    } else {
        id_stmt = q->batch_size != 0 ? S_TRIALS_PAGE_BS : S_TRIALS_PAGE;
    }
    p_i64(&p, i++, q->after > 0 ? q->after : INT64_MIN);
    if (q->limit > 0)
        p_i64(&p, i++, q->limit);
    else
        p.v[i++] = NULL;
    if (q->batch_size != 0)
        p_i64(&p, i, q->batch_size);
    PGresult *r = pg_run(t, id_stmt, p.v, "trials_list", id, err);
    if (r == NULL)
        return t->first.code;
    for (int row = 0, n = PQntuples(r); row < n && rc == 0; row++) {
        r_trial(r, row, &tr);
        rc = fn(ctx, &tr);
    }
    PQclear(r);
    return rc;
}

static int q_trials_fail_stale(store_txn *tb, const char *id, double cutoff, double now,
                               int64_t *n_failed, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    int64_t n = 0;
    int rc = 0;
    p.v[0] = id;
    p_f64(&p, 1, cutoff);
    p_f64(&p, 2, now);
    PGresult *r = pg_run(t, S_TRIALS_FAIL_STALE, p.v, "trials_fail_stale", id, err);
    if (r == NULL) {
        rc = t->first.code;
    } else {
        n = changed(r);
        PQclear(r);
    }
    if (n_failed != NULL)
        *n_failed = n;
    return rc;
}

/* ---- arms ---- */

static int q_arms_get(store_txn *tb, const char *id, zbso_arm *out, size_t cap,
                      size_t *n_out, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    const char *v[1] = {id};
    int rc = 0;
    *n_out = 0;
    PGresult *r = pg_run(t, S_ARMS_GET, v, "arms_get", id, err);
    if (r == NULL)
        return t->first.code;
    size_t n = (size_t)PQntuples(r);
    if (n > cap) {
        rc = err_set(err, ZBSO_EINVAL, "job \"%.300s\" has more than the %zu arms asked for",
                     id, cap);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        out[i].batch_size = r_i64(r, (int)i, 0);
        out[i].param_mean = r_f64(r, (int)i, 1);
        out[i].param_precision = r_f64(r, (int)i, 2);
        out[i].num_observations = r_i64(r, (int)i, 3);
    }
    *n_out = n;
out:
    PQclear(r);
    return rc;
}

static int q_arm_put(store_txn *tb, const char *id, const zbso_arm *arm, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    p.v[0] = id;
    p_i64(&p, 1, arm->batch_size);
    p_f64(&p, 2, arm->param_mean);
    p_f64(&p, 3, arm->param_precision);
    p_i64(&p, 4, arm->num_observations);
    PGresult *r = pg_run(t, S_ARM_PUT, p.v, "arm_put", id, err);
    if (r == NULL) {
        if (t->first.code == ZBSO_ENOTFOUND)
            return err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id);
        return t->first.code;
    }
    PQclear(r);
    return 0;
}

/* ---- inspection ---- */

/* The length of the longest head of s (n bytes) made of whole, valid UTF-8 characters:
 * PostgreSQL refuses any other text as a parameter. */
static size_t utf8_head(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = u[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
                   : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (len == 0 || i + len > n)
            break;
        uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
        size_t k = 1;
        for (; k < len && (u[i + k] & 0xC0) == 0x80; k++)
            cp = cp << 6 | (u[i + k] & 0x3F);
        static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (k < len || cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            break;
        i += len;
    }
    return i;
}

/* Writes into out (cap >= n + 5) the least text above every text that begins with p
 * (n bytes of valid UTF-8). Byte order is code point order in UTF-8, so that is p with
 * its last character below U+10FFFF raised by one (U+D7FF to U+E000, past the
 * surrogates) and what follows it dropped. Returns false when there is none (p empty, or
 * only U+10FFFF). */
static bool utf8_prefix_end(const char *p, size_t n, char *out)
{
    size_t end = n;
    while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && ((unsigned char)p[start] & 0xC0) == 0x80)
            start--;
        const unsigned char *u = (const unsigned char *)p + start;
        size_t len = end - start;
        uint32_t cp = len == 1 ? u[0] : len == 2 ? u[0] & 0x1Fu : len == 3 ? u[0] & 0x0Fu
                    : u[0] & 0x07u;
        for (size_t k = 1; k < len; k++)
            cp = cp << 6 | (u[k] & 0x3Fu);
        if (cp < 0x10FFFF) {
            cp = cp == 0xD7FF ? 0xE000 : cp + 1;
            memcpy(out, p, start);
            char *o = out + start;
            if (cp < 0x80) {
                *o++ = (char)cp;
            } else if (cp < 0x800) {
                *o++ = (char)(0xC0 | cp >> 6);
                *o++ = (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                *o++ = (char)(0xE0 | cp >> 12);
                *o++ = (char)(0x80 | (cp >> 6 & 0x3F));
                *o++ = (char)(0x80 | (cp & 0x3F));
            } else {
                *o++ = (char)(0xF0 | cp >> 18);
                *o++ = (char)(0x80 | (cp >> 12 & 0x3F));
                *o++ = (char)(0x80 | (cp >> 6 & 0x3F));
                *o++ = (char)(0x80 | (cp & 0x3F));
            }
            *o = '\0';
            return true;
        }
        end = start;
    }
    return false;
}

/* The prefix is a range of the byte-order index: [prefix, its end). Only valid UTF-8 can
 * be sent, and a stored id is valid UTF-8, so a prefix or cursor that is not (a character
 * cut short) is sent as its valid head, which widens the range: then the rows are also
 * checked here, and the limit counted here. */
static int q_jobs_list(store_txn *tb, const store_job_query *q, store_job_fn fn, void *ctx,
                       zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    const char *prefix = q->prefix != NULL ? q->prefix : "";
    const char *after = q->after != NULL && q->after[0] != '\0' ? q->after : NULL;
    size_t plen = strlen(prefix), phead = utf8_head(prefix, plen);
    bool use_after = after != NULL && strcmp(after, prefix) >= 0;
    const char *from = use_after ? after : prefix;
    size_t flen = strlen(from), fhead = use_after ? utf8_head(from, flen) : phead;
    bool exact = phead == plen && fhead == flen;
    char *lo = malloc(flen + 1), *hi = malloc(phead + 5);
    params p;
    int rc = 0, i = 0;
    int64_t sent = 0;
    zbso_job job;
    if (lo == NULL || hi == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory listing jobs");
        goto out;
    }
    memcpy(lo, from, fhead);
    lo[fhead] = '\0';
    bool has_hi = utf8_prefix_end(prefix, phead, hi);
    p.v[i++] = lo;
    if (has_hi)
        p.v[i++] = hi;
    if (exact && q->limit > 0)
        p_i64(&p, i, q->limit);
    else
        p.v[i] = NULL;
    int id = use_after && fhead == flen ? (has_hi ? S_JOBS_AFTER_TO : S_JOBS_AFTER)
                                        : (has_hi ? S_JOBS_FROM_TO : S_JOBS_FROM);
    PGresult *r = pg_run(t, id, p.v, "jobs_list", NULL, err);
    if (r == NULL) {
        rc = t->first.code;
        goto out;
    }
    for (int row = 0, n = PQntuples(r); row < n && rc == 0; row++) {
        const char *jid = PQgetvalue(r, row, 0);
        if (strncmp(jid, prefix, plen) != 0 || (after != NULL && strcmp(jid, after) <= 0))
            continue;
        if (q->limit > 0 && sent == q->limit)
            break;
        sent++;
        if ((rc = r_job(r, row, &job, err)) == 0)
            rc = fn(ctx, &job);
    }
    PQclear(r);
out:
    free(lo);
    free(hi);
    return rc;
}

/* Appends x to the array literal in b (capacity cap, room left for 32 bytes): NULL for
 * NaN, as p_f64 spells the rest. */
static void arr_f64(char *b, size_t cap, size_t *len, double x)
{
    const char *sep = b[*len - 1] == '{' ? "" : ",";
    if (isnan(x))
        *len += (size_t)snprintf(b + *len, cap - *len, "%sNULL", sep);
    else if (isinf(x))
        *len += (size_t)snprintf(b + *len, cap - *len, "%s%s", sep,
                                 x > 0 ? "Infinity" : "-Infinity");
    else
        *len += (size_t)snprintf(b + *len, cap - *len, "%s%.17g", sep, x);
}

/* One statement for all the points: each column an array literal. */
static int q_reports_put(store_txn *tb, const char *id, int64_t n, const zbso_curve_point *pts,
                         size_t np, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    /* 32 bytes hold ",%.17g" of any double, ",-Infinity", ",NULL" and ",%lld". */
    size_t cap = np * 32 + 3;
    char *arr[5] = {NULL, NULL, NULL, NULL, NULL};
    size_t len[5];
    params p;
    int rc = 0;
    if (np == 0)
        return 0;
    for (int k = 0; k < 5; k++) {
        if ((arr[k] = malloc(cap)) == NULL) {
            rc = err_set(err, ZBSO_ENOMEM, "out of memory storing %zu curve points of job"
                         " \"%.300s\"", np, id);
            goto out;
        }
        arr[k][0] = '{';
        len[k] = 1;
    }
    for (size_t i = 0; i < np; i++) {
        len[0] += (size_t)snprintf(arr[0] + len[0], cap - len[0], "%s%lld", i ? "," : "",
                                   (long long)pts[i].epoch);
        arr_f64(arr[1], cap, &len[1], pts[i].time);
        arr_f64(arr[2], cap, &len[2], pts[i].energy);
        arr_f64(arr[3], cap, &len[3], pts[i].metric);
        arr_f64(arr[4], cap, &len[4], pts[i].received_at);
    }
    p.v[0] = id;
    p_i64(&p, 1, n);
    for (int k = 0; k < 5; k++) {
        arr[k][len[k]] = '}';
        arr[k][len[k] + 1] = '\0';
        p.v[2 + k] = arr[k];
    }
    PGresult *r = pg_run(t, S_REPORTS_PUT, p.v, "reports_put", id, err);
    if (r == NULL)
        rc = t->first.code;
    PQclear(r);
out:
    for (int k = 0; k < 5; k++)
        free(arr[k]);
    return rc;
}

static int q_reports_list(store_txn *tb, const char *id, int64_t n, store_point_fn fn,
                          void *ctx, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    int rc = 0;
    p.v[0] = id;
    p_i64(&p, 1, n);
    PGresult *r = pg_run(t, S_REPORTS_LIST, p.v, "reports_list", id, err);
    if (r == NULL)
        return t->first.code;
    for (int i = 0, rows = PQntuples(r); i < rows && rc == 0; i++) {
        zbso_curve_point pt = {r_i64(r, i, 0), r_f64(r, i, 1), r_f64(r, i, 2), r_f64(r, i, 3),
                               r_f64(r, i, 4)};
        rc = fn(ctx, &pt);
    }
    PQclear(r);
    return rc;
}

/* ---- power profiles ---- */

static int q_profile_put(store_txn *tb, const char *id, const zbso_power_profile *pp,
                         zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    char *text = malloc(STORE_PL_TEXT_MAX);
    if (text == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory storing a power profile of job "
                       "\"%.300s\"", id);
    store_pl_format(pp, text);
    p.v[0] = id;
    p_i64(&p, 1, pp->batch_size);
    p_i64(&p, 2, pp->trial_number);
    p_bool(&p, 3, pp->observer);
    p_i64(&p, 4, pp->profile_steps);
    p_f64(&p, 5, pp->created_at);
    p.v[6] = text;
    PGresult *r = pg_run(t, S_PROFILE_PUT, p.v, "profile_put", id, err);
    free(text);
    if (r == NULL)
        return t->first.code;
    int64_t n = changed(r);
    PQclear(r);
    return n == 0 ? err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id) : 0;
}

/* Reads row i of a power_profiles result (PROFILE_COLS order). */
static int r_profile(const PGresult *r, int i, const char *id, zbso_power_profile *pp,
                     zbso_err *err)
{
    pp->batch_size = r_i64(r, i, 0);
    pp->trial_number = r_i64(r, i, 1);
    pp->observer = r_bool(r, i, 2);
    pp->profile_steps = r_i64(r, i, 3);
    pp->created_at = r_f64(r, i, 4);
    return store_pl_parse(PQgetvalue(r, i, 5), id, pp, err);
}

static int q_profile_get(store_txn *tb, const char *id, int64_t bs, zbso_power_profile *out,
                         zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    p.v[0] = id;
    p_i64(&p, 1, bs);
    PGresult *r = pg_run(t, S_PROFILE_GET, p.v, "profile_get", id, err);
    if (r == NULL)
        return t->first.code;
    int rc = PQntuples(r) == 0
                 ? err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" has no power profile of "
                           "batch size %lld", id, (long long)bs)
                 : r_profile(r, 0, id, out, err);
    PQclear(r);
    return rc;
}

static int q_profiles_list(store_txn *tb, const char *id, store_profile_fn fn, void *ctx,
                           zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    params p;
    int rc = 0;
    p.v[0] = id;
    PGresult *r = pg_run(t, S_PROFILES_LIST, p.v, "profiles_list", id, err);
    if (r == NULL)
        return t->first.code;
    zbso_power_profile *pp = malloc(sizeof *pp);
    if (pp == NULL)
        rc = err_set(err, ZBSO_ENOMEM, "out of memory listing power profiles");
    for (int i = 0, rows = PQntuples(r); i < rows && rc == 0; i++)
        if ((rc = r_profile(r, i, id, pp, err)) == 0)
            rc = fn(ctx, pp);
    free(pp);
    PQclear(r);
    return rc;
}

static int q_counts(store_txn *tb, store_counts *out, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    memset(out, 0, sizeof *out);
    PGresult *r = pg_run(t, S_COUNTS, NULL, "counts", NULL, err);
    if (r == NULL)
        return t->first.code;
    for (int i = 0, rows = PQntuples(r); i < rows; i++) {
        int64_t ty = r_i64(r, i, 0), st = r_i64(r, i, 1);
        if (ty == -1)
            out->jobs = r_i64(r, i, 2);
        else if (ty == -2) {
            out->has_oldest_lease = !r_null(r, i, 2);
            out->oldest_lease_renewed_at = out->has_oldest_lease ? r_i64(r, i, 2) : 0;
        } else if (ty >= 0 && ty < 3 && st >= 0 && st < 3)
            out->trials[ty][st] = r_i64(r, i, 2);
    }
    PQclear(r);
    return 0;
}

const store_txn_ops pg_ops = {
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

/* ---- schema ---- */

/* Reads the schema version (0 when there is no zbso_schema table) and how many tables the
 * current schema holds. Returns 0 or the translated failure. */
static int read_version(pg_txn *t, int *version, int64_t *n_tables, zbso_err *err)
{
    PGresult *r;
    const char *probe = "SELECT to_regclass('zbso_schema') IS NOT NULL, (SELECT count(*)"
                        " FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n"
                        " ON n.oid = c.relnamespace WHERE n.nspname = current_schema()"
                        " AND c.relkind IN ('r', 'p', 'v', 'm', 'f'))";
    if (t->st->echo_sql)
        log_info("sql: %s", probe);
    r = PQexec(pg_db(t), probe);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        int rc = pg_txn_fail(t, r, "reading the schema version", NULL, err);
        PQclear(r);
        return rc;
    }
    bool has_table = r_bool(r, 0, 0);
    *n_tables = r_i64(r, 0, 1);
    *version = 0;
    PQclear(r);
    if (!has_table)
        return 0;
    const char *sql = "SELECT max(version) FROM zbso_schema";
    if (t->st->echo_sql)
        log_info("sql: %s", sql);
    r = PQexec(pg_db(t), sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        int rc = pg_txn_fail(t, r, "reading the schema version", NULL, err);
        PQclear(r);
        return rc;
    }
    *version = r_null(r, 0, 0) ? 0 : (int)r_i64(r, 0, 0);
    PQclear(r);
    return 0;
}

/* Under the schema lock, replicas starting together on an empty database create the
 * schema once: the others then find it made. */
int pg_schema_unit(store_txn *tb, void *argp, zbso_err *err)
{
    pg_txn *t = txn_of(tb);
    pg_schema_arg *a = argp;
    int64_t n_tables = 0;
    int version = 0, to = 0, rc;
    if ((rc = pg_run_simple(t, PG_SCHEMA_LOCK_SQL, "taking the schema lock", err)) < 0)
        return rc;
    if ((rc = read_version(t, &version, &n_tables, err)) < 0)
        return rc;
    if ((rc = a->plan(a->ctx, version, n_tables > 0, &to, err)) < 0)
        return rc;
    if (to != version && (to < version || to > PG_LATEST))
        return err_set(err, ZBSO_EINTERNAL, "%s: no way from schema version %d to %d",
                       t->st->shown, version, to);
    for (int v = version + 1; v <= to; v++) {
        for (const char *const *sql = pg_schema_steps[v - 1]; *sql != NULL; sql++) {
            char what[64];
            snprintf(what, sizeof what, "migration to schema version %d", v);
            if ((rc = pg_run_simple(t, *sql, what, err)) < 0)
                return rc;
        }
    }
    return 0;
}

/* A write statement that changes nothing: PostgreSQL still refuses it in a read-only
 * transaction (a hot standby, default_transaction_read_only), and running it needs a
 * live connection. */
int pg_write_probe_unit(store_txn *tb, void *arg, zbso_err *err)
{
    return pg_run_simple(txn_of(tb), "UPDATE zbso_schema SET version = version WHERE false",
                         "the write probe", err);
}
