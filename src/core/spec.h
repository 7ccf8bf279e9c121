/* spec.h: job spec defaults, validation and comparison (SPEC §2), and the value checks of
 * TrainingResult and TrialId. Pure. The JSON codec checks types and presence; this checks
 * values, so every entry point (HTTP, `zbso run`, the simulator) validates the same way. */
#ifndef ZBSO_CORE_SPEC_H
#define ZBSO_CORE_SPEC_H

#include <stdbool.h>

#include "core/types.h"
#include "util/err.h"

/* Fills s with seed 001's defaults: eta 0.5, beta 2.0, target 0.5, higher is better,
 * max_epochs 100, num_pruning_rounds 2, window_size 0, prior mean 0, prior precision 0,
 * mab_num_explorations 2, no seed; everything else zero/empty. */
void spec_defaults(zbso_job_spec *s);

/* Checks every value rule of SPEC §2 (and the prior's bounds, OPT_PRIOR_MAX in
 * core/optimizer.h) and sorts batch_sizes ascending; the warm start's rules: at most
 * ZBSO_MAX_PRIOR_JOBS prior_jobs, each a non-empty id of at most ZBSO_ID_MAX bytes, none
 * twice and none the job itself, sorted into byte order; prior_jobs given makes warm_start
 * true (the codec refuses an explicit false beside them); a warm start with an explicit
 * (has_policy) "zeus" policy is refused, as that policy never reads it; a carbon
 * intensity, when given, finite and within 0..ZBSO_INTENSITY_MAX. On failure returns
 * ZBSO_EINVAL with err->where = "body", err->loc = the field, and a message naming the
 * value. s is left sorted or unchanged. */
int spec_validate(zbso_job_spec *s, zbso_err *err);

/* Zeus's JobSpec._check_job_id: a job_id the client gave, even "", must start with
 * prefix. Returns 0, or ZBSO_EINVAL at body.job_id with Zeus's message "Job_id(<id>) does
 * not start with prefix(<prefix>).". spec_validate applies it to a non-empty job_id; the
 * codec to a "job_id": "" (which the spec cannot tell from no job_id). */
int spec_check_job_id(const char *job_id, const char *prefix, zbso_err *err);

/* True when two validated specs are identical in every field (job ids included), the
 * policy, warm_start, prior_jobs and the carbon intensity (given or not, and its value)
 * among them; has_policy is not compared (a stored spec
 * holds its resolved policy, see svc_register_job). */
bool spec_equal(const zbso_job_spec *a, const zbso_job_spec *b);

/* A policy's name as the API spells it: "zeus" or "smart" ("?" for a value outside the
 * enum, which no parser produces). */
const char *spec_policy_name(zbso_policy p);

/* Reads a policy name (exactly "zeus" or "smart", lowercase) into *out. Returns 0, or
 * ZBSO_EINVAL (nothing else set: callers name the value and where it came from). */
int spec_policy_parse(const char *name, zbso_policy *out);

/* Value checks of a TrainingResult (time >= 0, energy >= 0, finite metric, epoch >= 1,
 * batch size and trial number > 0, job id non-empty). ZBSO_EINVAL with field on failure. */
int result_validate(const zbso_training_result *r, zbso_err *err);

/* Value checks of a TrialId (job id non-empty, batch size and trial number > 0). */
int trial_id_validate(const zbso_trial_id *t, zbso_err *err);

#endif
