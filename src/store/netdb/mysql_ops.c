/* mysql_ops.c: the MySQL/MariaDB backend's schema history and domain operations: the SQL
 * of every step and statement, values as binary-protocol parameters, rows mapped to core
 * structs, and the store_txn_ops run inside units of work. Knows nothing of connections,
 * pools or reruns (mysql_engine.c). Never writes a password into a message or a log
 * line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/spec.h"
#include "store/netdb/myInt.h"
#include "util/log.h"

/* Schema history. The version lives in the one row of zbso_schema (no such table, or no
 * row: version 0), written by the last statement of each step. MySQL commits DDL
 * implicitly, so a step is not atomic: its statements are written to be run again
 * (IF NOT EXISTS) and zbso_schema is created first, so that a step cut short by a crash
 * leaves a database that my_schema_unit recognizes as zbso's at the older version and
 * finishes on the next start. Append only: a released step never changes.
 * Types: job ids, prefixes and request keys are VARBINARY, compared and ordered byte by
 * byte as on the other backends, whatever the character set; the other text is utf8mb4.
 * Encodings as on SQLite: stage 0 Pruning / 1 MAB; trial type 0 Exploration /
 * 1 Concurrent / 2 MAB; status 0 Dispatched / 1 Succeeded / 2 Failed; booleans 0/1;
 * batch_sizes as ascending decimal text "16,32,64"; beta_knob and mab_seed NULL when
 * absent; mab_seed holds the uint64 seed's bits as a signed 64-bit integer; min_cost NULL
 * until one is known; a NULL time/energy/metric is NaN; rng_state is rng_format()'s
 * text. DOUBLE holds no infinity on MySQL: an arm's param_precision is NULL when it is
 * infinite (one reward, or identical ones: opt_arm_fit), and the engine refuses any other
 * infinity (ZBSO_EINVAL), which the service never stores. */
#define MY_TABLE_OPTIONS " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;"

static const char *const schema_v1[] = {
    "CREATE TABLE IF NOT EXISTS zbso_schema (version INT NOT NULL)" MY_TABLE_OPTIONS,
    "CREATE TABLE IF NOT EXISTS jobs (\n"
    "  job_id VARBINARY(300) NOT NULL PRIMARY KEY,\n"
    "  job_id_prefix VARBINARY(300) NOT NULL,\n"
    "  batch_sizes TEXT NOT NULL,\n"
    "  default_batch_size BIGINT NOT NULL,\n"
    "  eta_knob DOUBLE NOT NULL,\n"
    "  beta_knob DOUBLE,\n"
    "  target_metric DOUBLE NOT NULL,\n"
    "  higher_is_better_metric BOOLEAN NOT NULL,\n"
    "  max_epochs BIGINT NOT NULL,\n"
    "  num_pruning_rounds BIGINT NOT NULL,\n"
    "  window_size BIGINT NOT NULL,\n"
    "  mab_prior_mean DOUBLE NOT NULL,\n"
    "  mab_prior_precision DOUBLE NOT NULL,\n"
    "  mab_num_explorations BIGINT NOT NULL,\n"
    "  mab_seed BIGINT,\n"
    "  max_power DOUBLE NOT NULL,\n"
    "  number_of_gpus BIGINT NOT NULL,\n"
    "  gpu_model VARCHAR(255) NOT NULL,\n"
    "  stage INT NOT NULL,\n"
    "  exp_default_batch_size BIGINT NOT NULL,\n"
    "  min_cost DOUBLE,\n"
    "  min_cost_batch_size BIGINT NOT NULL,\n"
    "  rng_state VARCHAR(96) NOT NULL,\n"
    "  num_trials BIGINT NOT NULL,\n"
    "  created_at DOUBLE NOT NULL,\n"
    "  version BIGINT NOT NULL,\n"
    "  updated_at DOUBLE NOT NULL\n"
    ")" MY_TABLE_OPTIONS,
    "CREATE TABLE IF NOT EXISTS trials (\n"
    "  job_id VARBINARY(300) NOT NULL,\n"
    "  trial_number BIGINT NOT NULL,\n"
    "  batch_size BIGINT NOT NULL,\n"
    "  type INT NOT NULL,\n"
    "  status INT NOT NULL,\n"
    "  start_time DOUBLE NOT NULL,\n"
    "  end_time DOUBLE NOT NULL,\n"
    "  lease_renewed_at DOUBLE NOT NULL,\n"
    "  time DOUBLE,\n"
    "  energy DOUBLE,\n"
    "  metric DOUBLE,\n"
    "  epochs BIGINT NOT NULL,\n"
    "  converged BOOLEAN NOT NULL,\n"
    "  request_key VARBINARY(255),\n"
    "  PRIMARY KEY (job_id, trial_number),\n"
    "  KEY trials_by_batch_size (job_id, batch_size, trial_number),\n"
    "  KEY trials_by_status_lease (job_id, status, lease_renewed_at),\n"
    "  UNIQUE KEY trials_by_request_key (job_id, request_key),\n"
    "  CONSTRAINT trials_job FOREIGN KEY (job_id) REFERENCES jobs (job_id)"
    " ON DELETE CASCADE\n"
    ")" MY_TABLE_OPTIONS,
    "CREATE TABLE IF NOT EXISTS arms (\n"
    "  job_id VARBINARY(300) NOT NULL,\n"
    "  batch_size BIGINT NOT NULL,\n"
    "  param_mean DOUBLE NOT NULL,\n"
    "  param_precision DOUBLE,\n"
    "  num_observations BIGINT NOT NULL,\n"
    "  PRIMARY KEY (job_id, batch_size),\n"
    "  CONSTRAINT arms_job FOREIGN KEY (job_id) REFERENCES jobs (job_id) ON DELETE CASCADE\n"
    ")" MY_TABLE_OPTIONS,
    "CREATE TABLE IF NOT EXISTS reports (\n"
    "  job_id VARBINARY(300) NOT NULL,\n"
    "  trial_number BIGINT NOT NULL,\n"
    "  epoch BIGINT NOT NULL,\n"
    "  time DOUBLE,\n"
    "  energy DOUBLE,\n"
    "  metric DOUBLE,\n"
    "  received_at DOUBLE NOT NULL,\n"
    "  PRIMARY KEY (job_id, trial_number, epoch),\n"
    "  CONSTRAINT reports_trial FOREIGN KEY (job_id, trial_number)"
    " REFERENCES trials (job_id, trial_number) ON DELETE CASCADE\n"
    ")" MY_TABLE_OPTIONS,
    "INSERT INTO zbso_schema (version) VALUES (1);",
    NULL,
};

/* Version 2 (issue 15): power-limit profiles (store.h profile_put), one row per job and
 * batch size, the measurements as store_pl_format's text (up to ~72 KB: MEDIUMTEXT);
 * they go with their job. Runs again as it is after a crash between its statements. */
static const char *const schema_v2[] = {
    "CREATE TABLE IF NOT EXISTS power_profiles (\n"
    "  job_id VARBINARY(300) NOT NULL,\n"
    "  batch_size BIGINT NOT NULL,\n"
    "  trial_number BIGINT NOT NULL,\n"
    "  observer BOOLEAN NOT NULL,\n"
    "  profile_steps BIGINT NOT NULL,\n"
    "  created_at DOUBLE NOT NULL,\n"
    "  measurements MEDIUMTEXT NOT NULL,\n"
    "  PRIMARY KEY (job_id, batch_size),\n"
    "  CONSTRAINT power_profiles_job FOREIGN KEY (job_id) REFERENCES jobs (job_id)"
    " ON DELETE CASCADE\n"
    ")" MY_TABLE_OPTIONS,
    "UPDATE zbso_schema SET version = 2;",
    NULL,
};

/* The policy step (issue 21): each job's batch size policy as its name, "zeus" for every
 * job of an older version (the only policy there was); whether it asked for a warm start;
 * its prior jobs as store_prior_format's text ("" for none; ids are bytes, as job_id).
 * One ALTER TABLE; MySQL has no ADD COLUMN IF NOT EXISTS (MariaDB has), so the step runs
 * it only while jobs has no policy column, which lets it run again after a crash before
 * the version was written. V_POLICY is its version, the one number to change should the
 * step move. */
#define V_POLICY 3
#define V_TEXT_(v) #v
#define V_TEXT(v) V_TEXT_(v)
#define PRIOR_JOBS_BYTES 4808
_Static_assert(PRIOR_JOBS_BYTES == STORE_PRIOR_TEXT_MAX - 1, "jobs.prior_jobs fits the text");
static const char *const schema_policy[] = {
    "SET @zbso_step = IF((SELECT COUNT(*) FROM information_schema.columns"
    " WHERE table_schema = DATABASE() AND table_name = 'jobs' AND column_name = 'policy')"
    " = 0, 'ALTER TABLE jobs ADD COLUMN policy VARCHAR(16) NOT NULL DEFAULT ''zeus'','"
    " ' ADD COLUMN warm_start BOOLEAN NOT NULL DEFAULT 0,'"
    " ' ADD COLUMN prior_jobs VARBINARY(" V_TEXT(PRIOR_JOBS_BYTES) ") NOT NULL DEFAULT ''''',"
    " 'DO 0');",
    "PREPARE zbso_step FROM @zbso_step;",
    "EXECUTE zbso_step;",
    "DEALLOCATE PREPARE zbso_step;",
    "UPDATE zbso_schema SET version = " V_TEXT(V_POLICY) ";",
    NULL,
};

/* The stop-reason step (issue 25): why each trial ended (zbso_stop_reason: 1 target_reached,
 * 2 cost_bound, 3 max_epochs, 4 ended, 5 lease_expired); 0 while it runs and for every
 * trial of an older version, whose reason opt_trial_stop_reason derives where it can.
 * MySQL has no ADD COLUMN IF NOT EXISTS (MariaDB has): the column is added only when
 * information_schema lacks it, so the step runs again as it is after a crash between
 * its statements (DDL commits on its own). */
#define V_STOP 4
_Static_assert(V_STOP == V_POLICY + 1, "the stop-reason step follows the policy step");
static const char *const schema_stop[] = {
    "SET @zbso_ddl = IF((SELECT COUNT(*) FROM information_schema.columns"
    " WHERE table_schema = DATABASE() AND table_name = 'trials'"
    " AND column_name = 'stop_reason') = 0,"
    " 'ALTER TABLE trials ADD COLUMN stop_reason INT NOT NULL DEFAULT 0', 'DO 0');",
    "PREPARE zbso_ddl FROM @zbso_ddl;",
    "EXECUTE zbso_ddl;",
    "DEALLOCATE PREPARE zbso_ddl;",
    "UPDATE zbso_schema SET version = " V_TEXT(V_STOP) ";",
    NULL,
};

/* The intensity step (issue 25): the job's own carbon intensity (g CO2e per kWh), NULL
 * for none, the server's then, and for every job of an older version. Added only while
 * information_schema lacks it, as the stop-reason step does, so it runs again after a
 * crash. */
#define V_INTENSITY 5
_Static_assert(V_INTENSITY == V_STOP + 1, "the intensity step follows the stop-reason step");
static const char *const schema_intensity[] = {
    "SET @zbso_ddl = IF((SELECT COUNT(*) FROM information_schema.columns"
    " WHERE table_schema = DATABASE() AND table_name = 'jobs'"
    " AND column_name = 'carbon_intensity') = 0,"
    " 'ALTER TABLE jobs ADD COLUMN carbon_intensity DOUBLE', 'DO 0');",
    "PREPARE zbso_ddl FROM @zbso_ddl;",
    "EXECUTE zbso_ddl;",
    "DEALLOCATE PREPARE zbso_ddl;",
    "UPDATE zbso_schema SET version = " V_TEXT(V_INTENSITY) ";",
    NULL,
};

const char *const *const my_schema_steps[MY_LATEST] = {schema_v1, schema_v2,
                                                        [V_POLICY - 1] = schema_policy,
                                                        [V_STOP - 1] = schema_stop,
                                                        [V_INTENSITY - 1] = schema_intensity};

/* The tables of the newest schema: any other table makes a database foreign. */
#define MY_TABLES "'zbso_schema', 'jobs', 'trials', 'arms', 'reports', 'power_profiles'"
#define PROFILE_COLS "batch_size, trial_number, observer, profile_steps, created_at, measurements"

#define JOB_COLS                                                                          \
    "job_id, job_id_prefix, batch_sizes, default_batch_size, eta_knob, beta_knob, "        \
    "target_metric, higher_is_better_metric, max_epochs, num_pruning_rounds, window_size, " \
    "mab_prior_mean, mab_prior_precision, mab_num_explorations, mab_seed, max_power, "     \
    "number_of_gpus, gpu_model, stage, exp_default_batch_size, min_cost, "                 \
    "min_cost_batch_size, rng_state, num_trials, created_at, version, updated_at, policy, " \
    "warm_start, prior_jobs, carbon_intensity"
#define N_JOB_COLS 31
#define Q10 "?, ?, ?, ?, ?, ?, ?, ?, ?, ?"
#define Q31 Q10 ", " Q10 ", " Q10 ", ?"
#define TRIAL_COLS                                                                        \
    "trial_number, batch_size, type, status, start_time, end_time, lease_renewed_at, "     \
    "time, energy, metric, epochs, converged, stop_reason"
#define N_TRIAL_COLS 13

/* Trials filters: job, type mask, status mask, trials above the cursor, [batch size].
 * With last_n the inner query keeps the newest rows (LIMIT last_n) and the outer one puts
 * them back in ascending order (LIMIT limit); else one page in ascending order. MySQL
 * takes no NULL LIMIT: "no limit" is INT64_MAX. */
#define TRIALS_WHERE(bs_cond)                                                             \
    " FROM trials WHERE job_id = ? AND ((? >> type) & 1) = 1"                              \
    " AND ((? >> status) & 1) = 1 AND trial_number > ?" bs_cond
#define TRIALS_LIST_SQL(bs_cond)                                                          \
    "SELECT " TRIAL_COLS " FROM (SELECT " TRIAL_COLS TRIALS_WHERE(bs_cond)                 \
    " ORDER BY trial_number DESC LIMIT ?) AS newest ORDER BY trial_number LIMIT ?"
#define TRIALS_PAGE_SQL(bs_cond)                                                          \
    "SELECT " TRIAL_COLS TRIALS_WHERE(bs_cond) " ORDER BY trial_number LIMIT ?"
/* Jobs in byte order (VARBINARY) from a lower bound, below an upper bound when there is
 * one: an index range of the primary key. */
#define JOBS_LIST_SQL(op, upper)                                                          \
    "SELECT " JOB_COLS " FROM jobs WHERE job_id " op " ?" upper " ORDER BY job_id LIMIT ?"

const my_stmt_sql my_stmts[MS_COUNT] = {
    [MS_JOB_GET] = {"SELECT " JOB_COLS " FROM jobs WHERE job_id = ?", 1},
    [MS_JOB_GET_LOCK] = {"SELECT " JOB_COLS " FROM jobs WHERE job_id = ? FOR UPDATE", 1},
    [MS_JOB_INSERT] = {"INSERT INTO jobs (" JOB_COLS ") VALUES (" Q31 ")", N_JOB_COLS},
    [MS_JOB_UPDATE] = {"UPDATE jobs SET stage = ?, exp_default_batch_size = ?, min_cost = ?,"
                       " min_cost_batch_size = ?, rng_state = ?, num_trials = ?, version = ?,"
                       " updated_at = ? WHERE job_id = ?", 9},
    [MS_JOB_DELETE] = {"DELETE FROM jobs WHERE job_id = ?", 1},
    [MS_JOB_IDS] = {"SELECT job_id FROM jobs ORDER BY job_id", 0},
    [MS_TRIAL_INSERT] = {"INSERT INTO trials (job_id, " TRIAL_COLS ", request_key) VALUES"
                         " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", 2 + N_TRIAL_COLS},
    [MS_TRIAL_GET] = {"SELECT " TRIAL_COLS " FROM trials WHERE job_id = ? AND trial_number = ?",
                      2},
    [MS_TRIAL_BY_KEY] = {"SELECT " TRIAL_COLS " FROM trials WHERE job_id = ?"
                         " AND request_key = ?", 2},
    [MS_TRIAL_UNKEY] = {"UPDATE trials SET request_key = NULL WHERE job_id = ?"
                        " AND request_key = ?", 2},
    [MS_TRIAL_UPDATE] = {"UPDATE trials SET batch_size = ?, type = ?, status = ?,"
                         " start_time = ?, end_time = ?, lease_renewed_at = ?, time = ?,"
                         " energy = ?, metric = ?, epochs = ?, converged = ?,"
                         " stop_reason = ? WHERE job_id = ? AND trial_number = ?",
                         1 + N_TRIAL_COLS},
    [MS_TRIALS_LIST] = {TRIALS_LIST_SQL(""), 6},
    [MS_TRIALS_LIST_BS] = {TRIALS_LIST_SQL(" AND batch_size = ?"), 7},
    [MS_TRIALS_PAGE] = {TRIALS_PAGE_SQL(""), 5},
    [MS_TRIALS_PAGE_BS] = {TRIALS_PAGE_SQL(" AND batch_size = ?"), 6},
    [MS_TRIALS_FAIL_STALE] = {"UPDATE trials SET status = 2, end_time = ?, stop_reason = 5"
                              " WHERE job_id = ?"
                              " AND status = 0 AND lease_renewed_at < ?", 3},
    [MS_ARMS_GET] = {"SELECT batch_size, param_mean, param_precision, num_observations"
                     " FROM arms WHERE job_id = ? ORDER BY batch_size", 1},
    /* VALUES(col) is the row that met the duplicate (MariaDB; MySQL 8 still takes it). */
    [MS_ARM_PUT] = {"INSERT INTO arms (job_id, batch_size, param_mean, param_precision,"
                    " num_observations) VALUES (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE"
                    " param_mean = VALUES(param_mean),"
                    " param_precision = VALUES(param_precision),"
                    " num_observations = VALUES(num_observations)", 5},
    [MS_JOBS_FROM] = {JOBS_LIST_SQL(">=", ""), 2},
    [MS_JOBS_FROM_TO] = {JOBS_LIST_SQL(">=", " AND job_id < ?"), 3},
    [MS_JOBS_AFTER] = {JOBS_LIST_SQL(">", ""), 2},
    [MS_JOBS_AFTER_TO] = {JOBS_LIST_SQL(">", " AND job_id < ?"), 3},
    /* reports_put locks the trial's row in share mode: a concurrent delete of its job
     * either waits for this unit or, committed first, leaves no row to find. */
    [MS_TRIAL_SHARE] = {"SELECT 1 FROM trials WHERE job_id = ? AND trial_number = ?"
                        " LOCK IN SHARE MODE", 2},
    [MS_REPORTS_LIST] = {"SELECT epoch, time, energy, metric, received_at FROM reports"
                         " WHERE job_id = ? AND trial_number = ? ORDER BY epoch", 2},
    /* The jobs as type and status -1, then the trials by type and status. */
    [MS_COUNTS] = {"SELECT -1, -1, COUNT(*) FROM jobs UNION ALL"
                   " SELECT type, status, COUNT(*) FROM trials GROUP BY type, status UNION ALL"
                   " SELECT -2, -2, CAST(FLOOR(MIN(lease_renewed_at)) AS SIGNED) FROM trials"
                   " WHERE status = 0", 0},
    /* profile_put finds the job (and keeps a concurrent delete of it waiting), then
     * upserts: MySQL's affected rows cannot tell an unchanged row from no job. */
    [MS_JOB_SHARE] = {"SELECT 1 FROM jobs WHERE job_id = ? LOCK IN SHARE MODE", 1},
    [MS_PROFILE_PUT] = {"INSERT INTO power_profiles (job_id, " PROFILE_COLS ") VALUES"
                        " (?, ?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE"
                        " trial_number = VALUES(trial_number), observer = VALUES(observer),"
                        " profile_steps = VALUES(profile_steps),"
                        " created_at = VALUES(created_at),"
                        " measurements = VALUES(measurements)", 7},
    [MS_PROFILE_GET] = {"SELECT " PROFILE_COLS " FROM power_profiles WHERE job_id = ?"
                        " AND batch_size = ?", 2},
    [MS_PROFILES_LIST] = {"SELECT " PROFILE_COLS " FROM power_profiles WHERE job_id = ?"
                          " ORDER BY batch_size", 1},
};

/* ---- values ---- */

/* NaN is SQL NULL. */
static my_value v_f64(double x)
{
    return isnan(x) ? my_null() : my_f64(x);
}

static my_value v_bool(bool x)
{
    return my_i64(x ? 1 : 0);
}

static bool c_null(const my_rows *r, size_t row, size_t col)
{
    return my_cell(r, row, col)->type == MV_NULL;
}

static int64_t c_i64(const my_rows *r, size_t row, size_t col)
{
    const my_value *c = my_cell(r, row, col);
    return c->type == MV_I64 ? c->i : c->type == MV_F64 ? (int64_t)c->f
         : c->type == MV_BYTES ? strtoll(c->s, NULL, 10) : 0;
}

/* NULL reads as NaN. */
static double c_f64(const my_rows *r, size_t row, size_t col)
{
    const my_value *c = my_cell(r, row, col);
    return c->type == MV_F64 ? c->f : c->type == MV_I64 ? (double)c->i
         : c->type == MV_BYTES ? strtod(c->s, NULL) : NAN;
}

/* The cell's bytes ("" for NULL or a number). */
static const char *c_str(const my_rows *r, size_t row, size_t col)
{
    const my_value *c = my_cell(r, row, col);
    return c->type == MV_BYTES ? c->s : "";
}

/* Copies a text cell into out; ZBSO_ESTORE when it does not fit (a row this code did not
 * write: the columns are sized to the core's limits). */
static int c_text(const my_rows *r, size_t row, size_t col, char *out, size_t cap,
                  const char *name, zbso_err *err)
{
    const my_value *c = my_cell(r, row, col);
    size_t len = c->type == MV_BYTES ? c->len : 0;
    if (len >= cap)
        return err_set(err, ZBSO_ESTORE, "mysql: a stored %s of %zu bytes exceeds %zu", name,
                       len, cap - 1);
    if (len > 0)
        memcpy(out, c->s, len);
    out[len] = '\0';
    return 0;
}

static my_txn *txn_of(store_txn *t)
{
    return (my_txn *)t;
}

/* ---- jobs ---- */

/* Fills v with the job's columns in JOB_COLS order; bs, rng and prior hold the batch_sizes
 * text, the rng text and store_prior_format's text. */
static void job_values(my_value *v, const zbso_job *job, char *bs, size_t bs_cap, char rng[96],
                       char prior[STORE_PRIOR_TEXT_MAX])
{
    const zbso_job_spec *sp = &job->spec;
    size_t len = 0;
    bs[0] = '\0';
    for (size_t i = 0; i < sp->n_batch_sizes && i < ZBSO_MAX_BATCH_SIZES && len < bs_cap; i++)
        len += (size_t)snprintf(bs + len, bs_cap - len, "%s%lld", i ? "," : "",
                                (long long)sp->batch_sizes[i]);
    rng_format(&job->rng, rng);
    int64_t seed = 0;
    memcpy(&seed, &sp->mab_seed, sizeof seed);
    v[0] = my_text(sp->job_id);
    v[1] = my_text(sp->job_id_prefix);
    v[2] = my_text(bs);
    v[3] = my_i64(sp->default_batch_size);
    v[4] = v_f64(sp->eta_knob);
    v[5] = sp->has_beta_knob ? v_f64(sp->beta_knob) : my_null();
    v[6] = v_f64(sp->target_metric);
    v[7] = v_bool(sp->higher_is_better_metric);
    v[8] = my_i64(sp->max_epochs);
    v[9] = my_i64(sp->num_pruning_rounds);
    v[10] = my_i64(sp->window_size);
    v[11] = v_f64(sp->mab_prior_mean);
    v[12] = v_f64(sp->mab_prior_precision);
    v[13] = my_i64(sp->mab_num_explorations);
    v[14] = sp->has_mab_seed ? my_i64(seed) : my_null();
    v[15] = v_f64(sp->max_power);
    v[16] = my_i64(sp->number_of_gpus);
    v[17] = my_text(sp->gpu_model);
    v[18] = my_i64((int64_t)job->stage);
    v[19] = my_i64(job->exp_default_batch_size);
    v[20] = job->has_min_cost ? v_f64(job->min_cost) : my_null();
    v[21] = my_i64(job->min_cost_batch_size);
    v[22] = my_text(rng);
    v[23] = my_i64(job->num_trials);
    v[24] = v_f64(job->created_at);
    v[25] = my_i64(job->revision);
    v[26] = v_f64(job->updated_at);
    v[27] = my_text(spec_policy_name(sp->policy));
    v[28] = v_bool(sp->warm_start);
    store_prior_format(sp, prior);
    v[29] = my_text(prior);
    v[30] = sp->has_carbon_intensity ? v_f64(sp->carbon_intensity_g_per_kwh) : my_null();
}

/* Reads row `row` of a jobs result (JOB_COLS order). Returns 0, or ZBSO_ESTORE when
 * batch_sizes or rng_state do not parse (the row was not written by this code). */
static int r_job(const my_rows *r, size_t row, zbso_job *job, zbso_err *err)
{
    zbso_job_spec *sp = &job->spec;
    int rc;
    memset(job, 0, sizeof *job);
    if ((rc = c_text(r, row, 0, sp->job_id, sizeof sp->job_id, "job id", err)) < 0 ||
        (rc = c_text(r, row, 1, sp->job_id_prefix, sizeof sp->job_id_prefix, "job id prefix",
                     err)) < 0 ||
        (rc = c_text(r, row, 17, sp->gpu_model, sizeof sp->gpu_model, "gpu_model", err)) < 0)
        return rc;
    const char *bs = c_str(r, row, 2), *p = bs;
    while (*p != '\0') {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || (*end != ',' && *end != '\0') ||
            sp->n_batch_sizes == ZBSO_MAX_BATCH_SIZES)
            return err_set(err, ZBSO_ESTORE, "mysql: job \"%.300s\" has malformed batch_sizes"
                           " \"%.100s\"", sp->job_id, bs);
        sp->batch_sizes[sp->n_batch_sizes++] = v;
        p = *end == ',' ? end + 1 : end;
    }
    sp->default_batch_size = c_i64(r, row, 3);
    sp->eta_knob = c_f64(r, row, 4);
    sp->has_beta_knob = !c_null(r, row, 5);
    sp->beta_knob = sp->has_beta_knob ? c_f64(r, row, 5) : 0.0;
    sp->target_metric = c_f64(r, row, 6);
    sp->higher_is_better_metric = c_i64(r, row, 7) != 0;
    sp->max_epochs = c_i64(r, row, 8);
    sp->num_pruning_rounds = c_i64(r, row, 9);
    sp->window_size = c_i64(r, row, 10);
    sp->mab_prior_mean = c_f64(r, row, 11);
    sp->mab_prior_precision = c_f64(r, row, 12);
    sp->mab_num_explorations = c_i64(r, row, 13);
    sp->has_mab_seed = !c_null(r, row, 14);
    if (sp->has_mab_seed) {
        int64_t seed = c_i64(r, row, 14);
        memcpy(&sp->mab_seed, &seed, sizeof seed);
    }
    sp->max_power = c_f64(r, row, 15);
    sp->number_of_gpus = c_i64(r, row, 16);
    job->stage = c_i64(r, row, 18) == ZBSO_STAGE_MAB ? ZBSO_STAGE_MAB : ZBSO_STAGE_PRUNING;
    job->exp_default_batch_size = c_i64(r, row, 19);
    job->has_min_cost = !c_null(r, row, 20);
    job->min_cost = job->has_min_cost ? c_f64(r, row, 20) : 0.0;
    job->min_cost_batch_size = c_i64(r, row, 21);
    const char *rng = c_str(r, row, 22);
    if (rng_parse(&job->rng, rng) != 0)
        return err_set(err, ZBSO_ESTORE, "mysql: job \"%.300s\" has malformed rng_state"
                       " \"%.100s\"", sp->job_id, rng);
    job->num_trials = c_i64(r, row, 23);
    job->created_at = c_f64(r, row, 24);
    job->revision = c_i64(r, row, 25);
    job->updated_at = c_f64(r, row, 26);
    char policy[16], prior[STORE_PRIOR_TEXT_MAX];
    if ((rc = c_text(r, row, 27, policy, sizeof policy, "policy", err)) < 0 ||
        (rc = c_text(r, row, 29, prior, sizeof prior, "prior_jobs", err)) < 0)
        return rc;
    bool has_ci = !c_null(r, row, 30);
    return store_extras_read(policy, c_i64(r, row, 28) != 0, prior, has_ci,
                             has_ci ? c_f64(r, row, 30) : 0.0, sp, err);
}

/* Loads a job; with for_update, SELECT ... FOR UPDATE: the row stays locked until the
 * unit ends, and a unit that waited for the lock reads the row as its holder left it
 * (a locking read sees the newest committed row). A read unit reads its snapshot. */
static int q_job_get(store_txn *tb, const char *id, bool for_update, zbso_job *out,
                     zbso_err *err)
{
    my_txn *t = txn_of(tb);
    my_value v[1] = {my_text(id)};
    my_rows *r = NULL;
    int rc = my_run(t, for_update && !t->base.read_only ? MS_JOB_GET_LOCK : MS_JOB_GET, v, &r,
                    "job_get", id, err);
    if (rc < 0)
        return rc;
    if (r->n_rows == 0) {
        snprintf(t->missing_job, sizeof t->missing_job, "%s", id);
        rc = err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id);
    } else {
        rc = r_job(r, 0, out, err);
    }
    my_rows_free(r);
    return rc;
}

/* ZBSO_ECONFLICT when the id exists (a duplicate key, after which the unit carries on).
 * An existing row that this unit's job_get found missing was committed by another
 * transaction meanwhile (two replicas registering one job at once): the unit is marked to
 * run again, and then sees that row. */
static int q_job_insert(store_txn *tb, const zbso_job *job, zbso_err *err)
{
    my_txn *t = txn_of(tb);
    my_value v[N_JOB_COLS];
    my_rows *r = NULL;
    char bs[ZBSO_MAX_BATCH_SIZES * 21 + 3], rng[96], prior[STORE_PRIOR_TEXT_MAX];
    job_values(v, job, bs, sizeof bs, rng, prior);
    int rc = my_run(t, MS_JOB_INSERT, v, &r, "job_insert", job->spec.job_id, err);
    my_rows_free(r);
    if (rc == ZBSO_ECONFLICT) {
        if (strcmp(t->missing_job, job->spec.job_id) == 0)
            t->retry = true;
        return err_set(err, ZBSO_ECONFLICT, "job \"%.300s\" already exists", job->spec.job_id);
    }
    return rc;
}

/* Writes the mutable columns; ZBSO_ENOTFOUND when no row has the id (rows matched, not
 * rows changed: the engine connects with CLIENT_FOUND_ROWS). */
static int q_job_update(store_txn *tb, const zbso_job *job, zbso_err *err)
{
    my_txn *t = txn_of(tb);
    my_rows *r = NULL;
    char rng[96];
    rng_format(&job->rng, rng);
    my_value v[9] = {
        my_i64((int64_t)job->stage), my_i64(job->exp_default_batch_size),
        job->has_min_cost ? v_f64(job->min_cost) : my_null(), my_i64(job->min_cost_batch_size),
        my_text(rng), my_i64(job->num_trials), my_i64(job->revision), v_f64(job->updated_at),
        my_text(job->spec.job_id),
    };
    int rc = my_run(t, MS_JOB_UPDATE, v, &r, "job_update", job->spec.job_id, err);
    if (rc < 0)
        return rc;
    int64_t n = r->affected;
    my_rows_free(r);
    return n == 0 ? err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", job->spec.job_id)
                  : 0;
}

/* Deletes the job; its trials, arms and points go with it (ON DELETE CASCADE). */
static int q_job_delete(store_txn *tb, const char *id, zbso_err *err)
{
    my_txn *t = txn_of(tb);
    my_value v[1] = {my_text(id)};
    my_rows *r = NULL;
    int rc = my_run(t, MS_JOB_DELETE, v, &r, "job_delete", id, err);
    if (rc < 0)
        return rc;
    int64_t n = r->affected;
    my_rows_free(r);
    return n == 0 ? err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id) : 0;
}

static int q_job_ids(store_txn *tb, int (*fn)(void *ctx, const char *job_id), void *ctx,
                     zbso_err *err)
{
    my_txn *t = txn_of(tb);
    my_rows *r = NULL;
    int rc = my_run(t, MS_JOB_IDS, NULL, &r, "job_ids", NULL, err);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < r->n_rows && rc == 0; i++)
        rc = fn(ctx, c_str(r, i, 0));
    my_rows_free(r);
    return rc;
}

/* ---- trials ---- */

/* Fills v[0..12] with the trial's columns in TRIAL_COLS order. */
static void trial_values(my_value *v, const zbso_trial *tr)
{
    v[0] = my_i64(tr->trial_number);
    v[1] = my_i64(tr->batch_size);
    v[2] = my_i64((int64_t)tr->type);
    v[3] = my_i64((int64_t)tr->status);
    v[4] = v_f64(tr->start_time);
    v[5] = v_f64(tr->end_time);
    v[6] = v_f64(tr->lease_renewed_at);
    v[7] = v_f64(tr->time);
    v[8] = v_f64(tr->energy);
    v[9] = v_f64(tr->metric);
    v[10] = my_i64(tr->epochs);
    v[11] = v_bool(tr->converged);
    v[12] = my_i64((int64_t)tr->stop_reason);
}

static void r_trial(const my_rows *r, size_t row, zbso_trial *tr)
{
    tr->trial_number = c_i64(r, row, 0);
    tr->batch_size = c_i64(r, row, 1);
    tr->type = (zbso_trial_type)c_i64(r, row, 2);
    tr->status = (zbso_trial_status)c_i64(r, row, 3);
    tr->start_time = c_f64(r, row, 4);
    tr->end_time = c_f64(r, row, 5);
    tr->lease_renewed_at = c_f64(r, row, 6);
    tr->time = c_f64(r, row, 7);
    tr->energy = c_f64(r, row, 8);
    tr->metric = c_f64(r, row, 9);
    tr->epochs = c_i64(r, row, 10);
    tr->converged = c_i64(r, row, 11) != 0;
    tr->stop_reason = zbso_stop_reason_of_code(c_i64(r, row, 12));
}

/* ZBSO_ECONFLICT when the trial number is taken, ZBSO_ENOTFOUND without the job. A key
 * first leaves the trial that held it (the unique index allows one), then goes with the
 * new row; the job's row lock orders units that dispatch for one job. */
static int q_trial_insert(store_txn *tb, const char *id, const zbso_trial *trial,
                          const char *key, zbso_err *err)
{
    my_txn *t = txn_of(tb);
    my_value v[2 + N_TRIAL_COLS];
    my_rows *r = NULL;
    int rc;
    if (key != NULL) {
        my_value k[2] = {my_text(id), my_text(key)};
        if ((rc = my_run(t, MS_TRIAL_UNKEY, k, &r, "trial_insert", id, err)) < 0)
            return rc;
        my_rows_free(r);
        r = NULL;
    }
    v[0] = my_text(id);
    trial_values(v + 1, trial);
    v[1 + N_TRIAL_COLS] = key != NULL ? my_text(key) : my_null();
    rc = my_run(t, MS_TRIAL_INSERT, v, &r, "trial_insert", id, err);
    my_rows_free(r);
    if (rc == ZBSO_ENOTFOUND)
        return err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id);
    if (rc == ZBSO_ECONFLICT)
        return err_set(err, ZBSO_ECONFLICT, "trial %lld of job \"%.300s\" already exists",
                       (long long)trial->trial_number, id);
    return rc;
}

/* Runs a statement that reads at most one trial into *out; ZBSO_ENOTFOUND (with the
 * message `missing`) when it reads none. */
static int one_trial(my_txn *t, int id_stmt, const my_value *v, const char *job_id,
                     zbso_trial *out, const char *what, const char *missing, zbso_err *err)
{
    my_rows *r = NULL;
    int rc = my_run(t, id_stmt, v, &r, what, job_id, err);
    if (rc < 0)
        return rc;
    if (r->n_rows == 0)
        rc = err_set(err, ZBSO_ENOTFOUND, "%s", missing);
    else
        r_trial(r, 0, out);
    my_rows_free(r);
    return rc;
}

static int q_trial_get(store_txn *tb, const char *id, int64_t n, zbso_trial *out,
                       zbso_err *err)
{
    char missing[400];
    my_value v[2] = {my_text(id), my_i64(n)};
    snprintf(missing, sizeof missing, "trial %lld of job \"%.300s\" not found", (long long)n,
             id);
    return one_trial(txn_of(tb), MS_TRIAL_GET, v, id, out, "trial_get", missing, err);
}

static int q_trial_by_key(store_txn *tb, const char *id, const char *key, zbso_trial *out,
                          zbso_err *err)
{
    char missing[400];
    my_value v[2] = {my_text(id), my_text(key)};
    snprintf(missing, sizeof missing, "the trial of a request key of job \"%.300s\" not found",
             id);
    return one_trial(txn_of(tb), MS_TRIAL_BY_KEY, v, id, out, "trial_by_key", missing, err);
}

static int q_trial_update(store_txn *tb, const char *id, const zbso_trial *trial,
                          zbso_err *err)
{
    my_txn *t = txn_of(tb);
    my_value v[1 + N_TRIAL_COLS], all[N_TRIAL_COLS];
    my_rows *r = NULL;
    trial_values(all, trial);
    /* SET batch_size .. stop_reason, then WHERE job_id, trial_number. */
    memcpy(v, all + 1, (N_TRIAL_COLS - 1) * sizeof v[0]);
    v[N_TRIAL_COLS - 1] = my_text(id);
    v[N_TRIAL_COLS] = all[0];
    int rc = my_run(t, MS_TRIAL_UPDATE, v, &r, "trial_update", id, err);
    if (rc < 0)
        return rc;
    int64_t n = r->affected;
    my_rows_free(r);
    return n == 0 ? err_set(err, ZBSO_ENOTFOUND, "trial %lld of job \"%.300s\" not found",
                            (long long)trial->trial_number, id)
                  : 0;
}

/* The rows are all fetched before fn runs, so fn may use any operation of the unit. */
static int q_trials_list(store_txn *tb, const char *id, const store_trial_query *q,
                         store_trial_fn fn, void *ctx, zbso_err *err)
{
    my_txn *t = txn_of(tb);
    my_value v[7];
    my_rows *r = NULL;
    zbso_trial tr;
    int i = 0, id_stmt, rc;
    v[i++] = my_text(id);
    v[i++] = my_i64(q->type_mask ? (int64_t)q->type_mask : (int64_t)UINT32_MAX);
    v[i++] = my_i64(q->status_mask ? (int64_t)q->status_mask : (int64_t)UINT32_MAX);
    v[i++] = my_i64(q->after > 0 ? q->after : INT64_MIN);
    if (q->batch_size != 0)
        v[i++] = my_i64(q->batch_size);
    if (q->last_n > 0) {
        v[i++] = my_i64(q->last_n);
        id_stmt = q->batch_size != 0 ? MS_TRIALS_LIST_BS : MS_TRIALS_LIST;
    } else {
        id_stmt = q->batch_size != 0 ? MS_TRIALS_PAGE_BS : MS_TRIALS_PAGE;
    }
    v[i] = my_i64(q->limit > 0 ? q->limit : INT64_MAX);
    if ((rc = my_run(t, id_stmt, v, &r, "trials_list", id, err)) < 0)
        return rc;
    for (size_t row = 0; row < r->n_rows && rc == 0; row++) {
        r_trial(r, row, &tr);
        rc = fn(ctx, &tr);
    }
    my_rows_free(r);
    return rc;
}

static int q_trials_fail_stale(store_txn *tb, const char *id, double cutoff, double now,
                               int64_t *n_failed, zbso_err *err)
{
    my_txn *t = txn_of(tb);
    my_value v[3] = {v_f64(now), my_text(id), v_f64(cutoff)};
    my_rows *r = NULL;
    int rc = my_run(t, MS_TRIALS_FAIL_STALE, v, &r, "trials_fail_stale", id, err);
    if (n_failed != NULL)
        *n_failed = rc == 0 ? r->affected : 0;
    my_rows_free(r);
    return rc;
}

/* ---- arms ---- */

static int q_arms_get(store_txn *tb, const char *id, zbso_arm *out, size_t cap,
                      size_t *n_out, zbso_err *err)
{
    my_txn *t = txn_of(tb);
    my_value v[1] = {my_text(id)};
    my_rows *r = NULL;
    int rc;
    *n_out = 0;
    if ((rc = my_run(t, MS_ARMS_GET, v, &r, "arms_get", id, err)) < 0)
        return rc;
    if (r->n_rows > cap) {
        rc = err_set(err, ZBSO_EINVAL, "job \"%.300s\" has more than the %zu arms asked for",
                     id, cap);
    } else {
        for (size_t i = 0; i < r->n_rows; i++) {
            out[i].batch_size = c_i64(r, i, 0);
            out[i].param_mean = c_f64(r, i, 1);
            out[i].param_precision = c_null(r, i, 2) ? INFINITY : c_f64(r, i, 2);
            out[i].num_observations = c_i64(r, i, 3);
        }
        *n_out = r->n_rows;
    }
    my_rows_free(r);
    return rc;
}

static int q_arm_put(store_txn *tb, const char *id, const zbso_arm *arm, zbso_err *err)
{
    my_txn *t = txn_of(tb);
    /* An infinite precision is NULL (the schema's note). */
    my_value prec = isinf(arm->param_precision) && arm->param_precision > 0
                        ? my_null() : v_f64(arm->param_precision);
    my_value v[5] = {my_text(id), my_i64(arm->batch_size), v_f64(arm->param_mean), prec,
                     my_i64(arm->num_observations)};
    my_rows *r = NULL;
    int rc = my_run(t, MS_ARM_PUT, v, &r, "arm_put", id, err);
    my_rows_free(r);
    if (rc == ZBSO_ENOTFOUND)
        return err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id);
    return rc;
}

/* ---- inspection ---- */

/* Writes into out (cap >= n + 1) the least byte string above every string that begins
 * with p (n bytes): p with its last byte below 0xff raised by one and what follows it
 * dropped. Returns false when there is none (p empty, or all 0xff). */
static bool prefix_end(const char *p, size_t n, char *out)
{
    while (n > 0 && (unsigned char)p[n - 1] == 0xff)
        n--;
    if (n == 0)
        return false;
    memcpy(out, p, n);
    out[n - 1] = (char)((unsigned char)p[n - 1] + 1);
    out[n] = '\0';
    return true;
}

/* The prefix is a range of the primary key, compared byte by byte: [prefix, its end). */
static int q_jobs_list(store_txn *tb, const store_job_query *q, store_job_fn fn, void *ctx,
                       zbso_err *err)
{
    my_txn *t = txn_of(tb);
    const char *prefix = q->prefix != NULL ? q->prefix : "";
    const char *after = q->after != NULL && q->after[0] != '\0' ? q->after : NULL;
    bool use_after = after != NULL && strcmp(after, prefix) >= 0;
    size_t plen = strlen(prefix);
    char *hi = malloc(plen + 1);
    my_value v[3];
    my_rows *r = NULL;
    zbso_job job;
    int rc = 0, i = 0;
    if (hi == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory listing jobs");
    bool has_hi = prefix_end(prefix, plen, hi);
    v[i++] = my_text(use_after ? after : prefix);
    if (has_hi)
        v[i++] = my_text(hi);
    v[i] = my_i64(q->limit > 0 ? q->limit : INT64_MAX);
    int id = use_after ? (has_hi ? MS_JOBS_AFTER_TO : MS_JOBS_AFTER)
                       : (has_hi ? MS_JOBS_FROM_TO : MS_JOBS_FROM);
    if ((rc = my_run(t, id, v, &r, "jobs_list", NULL, err)) == 0) {
        for (size_t row = 0; row < r->n_rows && rc == 0; row++)
            if ((rc = r_job(r, row, &job, err)) == 0)
                rc = fn(ctx, &job);
        my_rows_free(r);
    }
    free(hi);
    return rc;
}

/* Points per INSERT statement: 7 placeholders each, far below MySQL's 65,535. */
#define REPORTS_PER_STMT 512
#define REPORT_ROW "(?, ?, ?, ?, ?, ?, ?)"
/* Of the points of one epoch the one received last wins, on a tie the later one: a row
 * that meets the stored point replaces it unless that one was received later.
 * MySQL applies the assignments left to right, so received_at, assigned last, is still
 * the stored value in the three comparisons before it. */
#define REPORTS_UPSERT                                                                    \
    " ON DUPLICATE KEY UPDATE"                                                             \
    " time = IF(received_at <= VALUES(received_at), VALUES(time), time),"                  \
    " energy = IF(received_at <= VALUES(received_at), VALUES(energy), energy),"            \
    " metric = IF(received_at <= VALUES(received_at), VALUES(metric), metric),"            \
    " received_at = GREATEST(received_at, VALUES(received_at))"

/* Locks the trial's row in share mode (none: the points are dropped, the trial or its
 * job is gone), then inserts the points REPORTS_PER_STMT at a time, in order, so that the
 * later of two points of one epoch meets the earlier as a stored row. */
static int q_reports_put(store_txn *tb, const char *id, int64_t n, const zbso_curve_point *pts,
                         size_t np, zbso_err *err)
{
    my_txn *t = txn_of(tb);
    static const char head[] = "INSERT INTO reports (job_id, trial_number, epoch, time,"
                               " energy, metric, received_at) VALUES ";
    my_value key[2] = {my_text(id), my_i64(n)};
    my_rows *r = NULL;
    int rc;
    if (np == 0)
        return 0;
    if ((rc = my_run(t, MS_TRIAL_SHARE, key, &r, "reports_put", id, err)) < 0)
        return rc;
    size_t found = r->n_rows;
    my_rows_free(r);
    if (found == 0)
        return 0;
    size_t cap = sizeof head + REPORTS_PER_STMT * (sizeof REPORT_ROW + 1) + sizeof REPORTS_UPSERT;
    char *sql = malloc(cap);
    my_value *v = malloc(REPORTS_PER_STMT * 7 * sizeof *v);
    if (sql == NULL || v == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory storing %zu curve points of job"
                     " \"%.300s\"", np, id);
        goto out;
    }
    for (size_t done = 0; done < np && rc == 0;) {
        size_t k = np - done < REPORTS_PER_STMT ? np - done : REPORTS_PER_STMT;
        size_t len = (size_t)snprintf(sql, cap, "%s", head);
        for (size_t j = 0; j < k; j++) {
            const zbso_curve_point *p = &pts[done + j];
            len += (size_t)snprintf(sql + len, cap - len, "%s" REPORT_ROW, j ? "," : "");
            v[j * 7] = my_text(id);
            v[j * 7 + 1] = my_i64(n);
            v[j * 7 + 2] = my_i64(p->epoch);
            v[j * 7 + 3] = v_f64(p->time);
            v[j * 7 + 4] = v_f64(p->energy);
            v[j * 7 + 5] = v_f64(p->metric);
            v[j * 7 + 6] = v_f64(p->received_at);
        }
        snprintf(sql + len, cap - len, "%s", REPORTS_UPSERT);
        rc = my_run_sql(t, sql, v, (int)(k * 7), &r, "reports_put", id, err);
        my_rows_free(r);
        r = NULL;
        done += k;
    }
out:
    free(sql);
    free(v);
    return rc;
}

static int q_reports_list(store_txn *tb, const char *id, int64_t n, store_point_fn fn,
                          void *ctx, zbso_err *err)
{
    my_txn *t = txn_of(tb);
    my_value v[2] = {my_text(id), my_i64(n)};
    my_rows *r = NULL;
    int rc = my_run(t, MS_REPORTS_LIST, v, &r, "reports_list", id, err);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < r->n_rows && rc == 0; i++) {
        zbso_curve_point pt = {c_i64(r, i, 0), c_f64(r, i, 1), c_f64(r, i, 2), c_f64(r, i, 3),
                               c_f64(r, i, 4)};
        rc = fn(ctx, &pt);
    }
    my_rows_free(r);
    return rc;
}

static int q_counts(store_txn *tb, store_counts *out, zbso_err *err)
{
    my_txn *t = txn_of(tb);
    my_rows *r = NULL;
    memset(out, 0, sizeof *out);
    int rc = my_run(t, MS_COUNTS, NULL, &r, "counts", NULL, err);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < r->n_rows; i++) {
        int64_t ty = c_i64(r, i, 0), st = c_i64(r, i, 1);
        if (ty == -1)
            out->jobs = c_i64(r, i, 2);
        else if (ty == -2) {
            out->has_oldest_lease = !c_null(r, i, 2);
            out->oldest_lease_renewed_at = out->has_oldest_lease ? c_i64(r, i, 2) : 0;
        } else if (ty >= 0 && ty < 3 && st >= 0 && st < 3)
            out->trials[ty][st] = c_i64(r, i, 2);
    }
    my_rows_free(r);
    return 0;
}

/* ---- power profiles ---- */

static int q_profile_put(store_txn *tb, const char *id, const zbso_power_profile *pp,
                         zbso_err *err)
{
    my_txn *t = txn_of(tb);
    my_value key[1] = {my_text(id)};
    my_rows *r = NULL;
    int rc = my_run(t, MS_JOB_SHARE, key, &r, "profile_put", id, err);
    if (rc < 0)
        return rc;
    size_t found = r->n_rows;
    my_rows_free(r);
    r = NULL;
    if (found == 0)
        return err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" not found", id);
    char *text = malloc(STORE_PL_TEXT_MAX);
    if (text == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory storing a power profile of job "
                       "\"%.300s\"", id);
    store_pl_format(pp, text);
    my_value v[7] = {my_text(id), my_i64(pp->batch_size), my_i64(pp->trial_number),
                     v_bool(pp->observer), my_i64(pp->profile_steps), v_f64(pp->created_at),
                     my_text(text)};
    rc = my_run(t, MS_PROFILE_PUT, v, &r, "profile_put", id, err);
    my_rows_free(r);
    free(text);
    return rc;
}

/* Reads row i of a power_profiles result (PROFILE_COLS order). */
static int r_profile(const my_rows *r, size_t i, const char *id, zbso_power_profile *pp,
                     zbso_err *err)
{
    pp->batch_size = c_i64(r, i, 0);
    pp->trial_number = c_i64(r, i, 1);
    pp->observer = c_i64(r, i, 2) != 0;
    pp->profile_steps = c_i64(r, i, 3);
    pp->created_at = c_f64(r, i, 4);
    return store_pl_parse(c_str(r, i, 5), id, pp, err);
}

static int q_profile_get(store_txn *tb, const char *id, int64_t bs, zbso_power_profile *out,
                         zbso_err *err)
{
    my_txn *t = txn_of(tb);
    my_value v[2] = {my_text(id), my_i64(bs)};
    my_rows *r = NULL;
    int rc = my_run(t, MS_PROFILE_GET, v, &r, "profile_get", id, err);
    if (rc < 0)
        return rc;
    rc = r->n_rows == 0 ? err_set(err, ZBSO_ENOTFOUND, "job \"%.300s\" has no power profile "
                                  "of batch size %lld", id, (long long)bs)
                        : r_profile(r, 0, id, out, err);
    my_rows_free(r);
    return rc;
}

static int q_profiles_list(store_txn *tb, const char *id, store_profile_fn fn, void *ctx,
                           zbso_err *err)
{
    my_txn *t = txn_of(tb);
    my_value v[1] = {my_text(id)};
    my_rows *r = NULL;
    int rc = my_run(t, MS_PROFILES_LIST, v, &r, "profiles_list", id, err);
    if (rc < 0)
        return rc;
    zbso_power_profile *pp = malloc(sizeof *pp);
    if (pp == NULL)
        rc = err_set(err, ZBSO_ENOMEM, "out of memory listing power profiles");
    for (size_t i = 0; i < r->n_rows && rc == 0; i++)
        if ((rc = r_profile(r, i, id, pp, err)) == 0)
            rc = fn(ctx, pp);
    free(pp);
    my_rows_free(r);
    return rc;
}

const store_txn_ops my_ops = {
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

/* Reads the schema version (0 when zbso_schema is missing or empty) and whether the
 * database holds tables that are not zbso's: any table outside the newest schema's, or
 * any table at all without zbso_schema (which a step creates first). Returns 0 or the
 * translated failure. */
static int read_version(my_txn *t, int *version, bool *foreign, zbso_err *err)
{
    my_rows *r = NULL;
    int rc = my_run_simple(t, "SELECT COUNT(*), SUM(table_name = 'zbso_schema'),"
                              " SUM(table_name NOT IN (" MY_TABLES "))"
                              " FROM information_schema.tables"
                              " WHERE table_schema = DATABASE()", &r,
                           "reading the schema version", err);
    if (rc < 0)
        return rc;
    int64_t n_tables = r->n_rows == 1 ? c_i64(r, 0, 0) : 0;
    bool has_schema = r->n_rows == 1 && c_i64(r, 0, 1) > 0;
    bool others = r->n_rows == 1 && c_i64(r, 0, 2) > 0;
    my_rows_free(r);
    *version = 0;
    *foreign = others || (!has_schema && n_tables > 0);
    if (!has_schema)
        return 0;
    if ((rc = my_run_simple(t, "SELECT MAX(version) FROM zbso_schema", &r,
                            "reading the schema version", err)) < 0)
        return rc;
    *version = r->n_rows == 1 && !c_null(r, 0, 0) ? (int)c_i64(r, 0, 0) : 0;
    my_rows_free(r);
    return 0;
}

/* Under the schema lock, replicas starting together on an empty database create the
 * schema once: the others then find it made. */
int my_schema_unit(store_txn *tb, void *argp, zbso_err *err)
{
    my_txn *t = txn_of(tb);
    my_schema_arg *a = argp;
    my_rows *r = NULL;
    bool foreign = false;
    int version = 0, to = 0, rc;
    if ((rc = my_run_simple(t, MY_SCHEMA_LOCK_SQL, &r, "taking the schema lock", err)) < 0)
        return rc;
    bool got = r->n_rows == 1 && !c_null(r, 0, 0) && c_i64(r, 0, 0) == 1;
    my_rows_free(r);
    if (!got)
        return err_set(err, ZBSO_EUNAVAIL, "mysql: the schema lock of %s was not granted"
                       " within 60 s (another process is changing the schema)", t->st->shown);
    t->schema_locked = true;
    if ((rc = read_version(t, &version, &foreign, err)) < 0)
        return rc;
    if ((rc = a->plan(a->ctx, version, foreign, &to, err)) < 0)
        return rc;
    if (to != version && (to < version || to > MY_LATEST))
        return err_set(err, ZBSO_EINTERNAL, "%s: no way from schema version %d to %d",
                       t->st->shown, version, to);
    for (int v = version + 1; v <= to; v++) {
        for (const char *const *sql = my_schema_steps[v - 1]; *sql != NULL; sql++) {
            char what[64];
            snprintf(what, sizeof what, "migration to schema version %d", v);
            if ((rc = my_run_simple(t, *sql, NULL, what, err)) < 0)
                return rc;
        }
    }
    return 0;
}

/* A write statement that changes nothing: MySQL still refuses it on a read-only server
 * (read_only, for users without the privilege to write there), and running it needs a
 * live connection. */
int my_write_probe_unit(store_txn *tb, void *arg, zbso_err *err)
{
    (void)arg;
    return my_run_simple(txn_of(tb), "UPDATE zbso_schema SET version = version WHERE 1 = 0",
                         NULL, "the write probe", err);
}
