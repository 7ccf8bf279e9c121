/* spec.c: job spec defaults, value validation and comparison, and the value checks of
 * TrainingResult and TrialId (SPEC §2). Pure: reports problems through zbso_err only. */
#include "core/spec.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/optimizer.h"

void spec_defaults(zbso_job_spec *s)
{
    memset(s, 0, sizeof *s);
    s->eta_knob = 0.5;
    s->has_beta_knob = true;
    s->beta_knob = 2.0;
    s->target_metric = 0.5;
    s->higher_is_better_metric = true;
    s->max_epochs = 100;
    s->num_pruning_rounds = 2;
    s->window_size = 0;
    s->mab_prior_mean = 0.0;
    s->mab_prior_precision = 0.0;
    s->mab_num_explorations = 2;
    s->has_mab_seed = false;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Returns 0 when d is finite, else ZBSO_EINVAL naming field and value. */
static int check_finite(double d, const char *field, zbso_err *err)
{
    char buf[OPT_FMT_DOUBLE_MAX];
    if (isfinite(d))
        return 0;
    return err_set_field(err, ZBSO_EINVAL, "body", field, "%s must be a finite number, got %s",
                         field, opt_fmt_double(buf, d));
}

/* Returns 0 when the NUL-terminated string in an array of cap bytes fits (len < cap) and,
 * if required, is non-empty; else ZBSO_EINVAL naming the field. */
static int check_string(const char *s, size_t cap, bool required, const char *field,
                        zbso_err *err)
{
    size_t len = strnlen(s, cap);
    if (len == cap)
        return err_set_field(err, ZBSO_EINVAL, "body", field,
                             "%s is longer than %zu bytes", field, cap - 1);
    if (required && len == 0)
        return err_set_field(err, ZBSO_EINVAL, "body", field, "%s must not be empty", field);
    return 0;
}

/* Checks the batch size list and writes the sorted list to sorted. */
static int check_batch_sizes(const zbso_job_spec *s, int64_t *sorted, zbso_err *err)
{
    if (s->n_batch_sizes == 0)
        return err_set_field(err, ZBSO_EINVAL, "body", "batch_sizes",
                             "Batch Sizes = [] is empty");
    if (s->n_batch_sizes > ZBSO_MAX_BATCH_SIZES)
        return err_set_field(err, ZBSO_EINVAL, "body", "batch_sizes",
                             "batch_sizes has %zu entries, more than the maximum %d",
                             s->n_batch_sizes, ZBSO_MAX_BATCH_SIZES);
    for (size_t i = 0; i < s->n_batch_sizes; i++) {
        if (s->batch_sizes[i] <= 0)
            return err_set_field(err, ZBSO_EINVAL, "body", "batch_sizes",
                                 "batch size %lld in batch_sizes is not positive",
                                 (long long)s->batch_sizes[i]);
    }
    memcpy(sorted, s->batch_sizes, s->n_batch_sizes * sizeof *sorted);
    qsort(sorted, s->n_batch_sizes, sizeof *sorted, cmp_i64);
    for (size_t i = 1; i < s->n_batch_sizes; i++) {
        if (sorted[i] == sorted[i - 1])
            return err_set_field(err, ZBSO_EINVAL, "body", "batch_sizes",
                                 "batch size %lld appears more than once in batch_sizes",
                                 (long long)sorted[i]);
    }
    return 0;
}

static int check_default(const zbso_job_spec *s, const int64_t *sorted, zbso_err *err)
{
    if (s->default_batch_size <= 0)
        return err_set_field(err, ZBSO_EINVAL, "body", "default_batch_size",
                             "default_batch_size must be greater than 0, got %lld",
                             (long long)s->default_batch_size);
    for (size_t i = 0; i < s->n_batch_sizes; i++) {
        if (sorted[i] == s->default_batch_size)
            return 0;
    }
    return err_set_field(err, ZBSO_EINVAL, "body", "default_batch_size",
                         "Default BS(%lld) not in batch_sizes",
                         (long long)s->default_batch_size);
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* The warm start's rules (spec.h, spec_validate); sorts prior_jobs into byte order. */
static int check_warm_start(zbso_job_spec *s, zbso_err *err)
{
    char ids[ZBSO_MAX_PRIOR_JOBS][ZBSO_ID_MAX + 1];
    int rc;
    if (s->n_prior_jobs > ZBSO_MAX_PRIOR_JOBS)
        return err_set_field(err, ZBSO_EINVAL, "body", "prior_jobs",
                             "prior_jobs has %zu entries, over the maximum of %d",
                             s->n_prior_jobs, ZBSO_MAX_PRIOR_JOBS);
    for (size_t i = 0; i < s->n_prior_jobs; i++) {
        if ((rc = check_string(s->prior_jobs[i], sizeof s->prior_jobs[i], true, "prior_jobs",
                               err)) < 0)
            return rc;
        if (s->job_id[0] != '\0' && strcmp(s->prior_jobs[i], s->job_id) == 0)
            return err_set_field(err, ZBSO_EINVAL, "body", "prior_jobs",
                                 "prior_jobs names the job itself (%s): a job cannot be its "
                                 "own prior", s->job_id);
    }
    memcpy(ids, s->prior_jobs, s->n_prior_jobs * sizeof ids[0]);
    qsort(ids, s->n_prior_jobs, sizeof ids[0], cmp_id);
    for (size_t i = 1; i < s->n_prior_jobs; i++)
        if (strcmp(ids[i], ids[i - 1]) == 0)
            return err_set_field(err, ZBSO_EINVAL, "body", "prior_jobs",
                                 "job %s appears more than once in prior_jobs", ids[i]);
    bool warm = s->warm_start || s->n_prior_jobs > 0;
    if (warm && s->has_policy && s->policy != ZBSO_POLICY_SMART)
        return err_set_field(err, ZBSO_EINVAL, "body", "policy",
                             "a warm start (warm_start or prior_jobs) needs policy \"smart\", "
                             "got policy \"%s\"", spec_policy_name(s->policy));
    s->warm_start = warm;
    memcpy(s->prior_jobs, ids, s->n_prior_jobs * sizeof ids[0]);
    return 0;
}

/* The per-job carbon intensity (issue 25): finite, 0..ZBSO_INTENSITY_MAX g CO2e per kWh. */
static int check_intensity(const zbso_job_spec *s, zbso_err *err)
{
    char buf[OPT_FMT_DOUBLE_MAX];
    int rc;
    if (!s->has_carbon_intensity)
        return 0;
    if ((rc = check_finite(s->carbon_intensity_g_per_kwh, "carbon_intensity_g_per_kwh",
                           err)) < 0)
        return rc;
    if (s->carbon_intensity_g_per_kwh < 0.0 ||
        s->carbon_intensity_g_per_kwh > ZBSO_INTENSITY_MAX)
        return err_set_field(err, ZBSO_EINVAL, "body", "carbon_intensity_g_per_kwh",
                             "carbon_intensity_g_per_kwh must be between 0 and %g g CO2e "
                             "per kWh, got %s", ZBSO_INTENSITY_MAX,
                             opt_fmt_double(buf, s->carbon_intensity_g_per_kwh));
    return 0;
}

/* The knob and count rules of SPEC §2 on fields other than ids and batch sizes. */
static int check_knobs(const zbso_job_spec *s, zbso_err *err)
{
    char buf[OPT_FMT_DOUBLE_MAX];
    int rc;
    if ((rc = check_finite(s->eta_knob, "eta_knob", err)) < 0)
        return rc;
    if (s->eta_knob < 0.0 || s->eta_knob > 1.0)
        return err_set_field(err, ZBSO_EINVAL, "body", "eta_knob",
                             "eta_knob should be in range [0,1], got %s",
                             opt_fmt_double(buf, s->eta_knob));
    if (s->has_beta_knob) {
        if ((rc = check_finite(s->beta_knob, "beta_knob", err)) < 0)
            return rc;
        if (s->beta_knob <= 0.0)
            return err_set_field(err, ZBSO_EINVAL, "body", "beta_knob",
                                 "Invalid beta_knob(%s). To disable early stop, set "
                                 "beta_knob = None to disable or positive value.",
                                 opt_fmt_double(buf, s->beta_knob));
    }
    if ((rc = check_finite(s->target_metric, "target_metric", err)) < 0)
        return rc;
    if (s->max_epochs <= 0)
        return err_set_field(err, ZBSO_EINVAL, "body", "max_epochs",
                             "max_epochs must be greater than 0, got %lld",
                             (long long)s->max_epochs);
    if (s->num_pruning_rounds < 0)
        return err_set_field(err, ZBSO_EINVAL, "body", "num_pruning_rounds",
                             "num_pruning_rounds must be at least 0, got %lld",
                             (long long)s->num_pruning_rounds);
    if (s->window_size < 0)
        return err_set_field(err, ZBSO_EINVAL, "body", "window_size",
                             "window_size must be at least 0, got %lld",
                             (long long)s->window_size);
    if ((rc = check_finite(s->mab_prior_mean, "mab_prior_mean", err)) < 0)
        return rc;
    if (fabs(s->mab_prior_mean) > OPT_PRIOR_MAX)
        return err_set_field(err, ZBSO_EINVAL, "body", "mab_prior_mean",
                             "mab_prior_mean must be between -%g and %g, got %s (a larger "
                             "prior makes the arms' means non-finite)",
                             OPT_PRIOR_MAX, OPT_PRIOR_MAX,
                             opt_fmt_double(buf, s->mab_prior_mean));
    if ((rc = check_finite(s->mab_prior_precision, "mab_prior_precision", err)) < 0)
        return rc;
    if (s->mab_prior_precision < 0.0)
        return err_set_field(err, ZBSO_EINVAL, "body", "mab_prior_precision",
                             "mab_prior_precision must be at least 0, got %s",
                             opt_fmt_double(buf, s->mab_prior_precision));
    if (s->mab_prior_precision > OPT_PRIOR_MAX)
        return err_set_field(err, ZBSO_EINVAL, "body", "mab_prior_precision",
                             "mab_prior_precision must be at most %g, got %s (a larger "
                             "prior makes the arms' means non-finite)",
                             OPT_PRIOR_MAX, opt_fmt_double(buf, s->mab_prior_precision));
    if (s->mab_num_explorations < 0)
        return err_set_field(err, ZBSO_EINVAL, "body", "mab_num_explorations",
                             "mab_num_explorations must be at least 0, got %lld",
                             (long long)s->mab_num_explorations);
    if ((rc = check_finite(s->max_power, "max_power", err)) < 0)
        return rc;
    if (s->max_power <= 0.0)
        return err_set_field(err, ZBSO_EINVAL, "body", "max_power",
                             "max_power must be greater than 0, got %s",
                             opt_fmt_double(buf, s->max_power));
    if (s->number_of_gpus <= 0)
        return err_set_field(err, ZBSO_EINVAL, "body", "number_of_gpus",
                             "number_of_gpus must be greater than 0, got %lld",
                             (long long)s->number_of_gpus);
    return 0;
}

int spec_check_job_id(const char *job_id, const char *prefix, zbso_err *err)
{
    if (strncmp(job_id, prefix, strlen(prefix)) == 0)
        return 0;
    return err_set_field(err, ZBSO_EINVAL, "body", "job_id",
                         "Job_id(%s) does not start with prefix(%s).", job_id, prefix);
}

int spec_validate(zbso_job_spec *s, zbso_err *err)
{
    int64_t sorted[ZBSO_MAX_BATCH_SIZES];
    int rc;

    if ((rc = check_string(s->job_id_prefix, sizeof s->job_id_prefix, true, "job_id_prefix",
                           err)) < 0)
        goto out;
    if ((rc = check_string(s->job_id, sizeof s->job_id, false, "job_id", err)) < 0)
        goto out;
    if (s->job_id[0] != '\0' && (rc = spec_check_job_id(s->job_id, s->job_id_prefix, err)) < 0)
        goto out;
    if ((rc = check_batch_sizes(s, sorted, err)) < 0)
        goto out;
    if ((rc = check_default(s, sorted, err)) < 0)
        goto out;
    if ((rc = check_knobs(s, err)) < 0)
        goto out;
    if ((rc = check_string(s->gpu_model, sizeof s->gpu_model, true, "gpu_model", err)) < 0)
        goto out;
    if (s->policy != ZBSO_POLICY_ZEUS && s->policy != ZBSO_POLICY_SMART) {
        rc = err_set_field(err, ZBSO_EINVAL, "body", "policy",
                           "policy must be \"zeus\" or \"smart\", got policy number %d",
                           (int)s->policy);
        goto out;
    }
    if ((rc = check_warm_start(s, err)) < 0)
        goto out;
    if ((rc = check_intensity(s, err)) < 0)
        goto out;
    memcpy(s->batch_sizes, sorted, s->n_batch_sizes * sizeof *sorted);
    rc = 0;
out:
    return rc;
}

/* prior_jobs of two validated specs (sorted) name the same jobs. */
static bool prior_jobs_equal(const zbso_job_spec *a, const zbso_job_spec *b)
{
    if (a->n_prior_jobs != b->n_prior_jobs)
        return false;
    for (size_t i = 0; i < a->n_prior_jobs; i++)
        if (strcmp(a->prior_jobs[i], b->prior_jobs[i]) != 0)
            return false;
    return true;
}

bool spec_equal(const zbso_job_spec *a, const zbso_job_spec *b)
{
    if (strcmp(a->job_id, b->job_id) != 0 || strcmp(a->job_id_prefix, b->job_id_prefix) != 0)
        return false;
    if (a->n_batch_sizes != b->n_batch_sizes ||
        memcmp(a->batch_sizes, b->batch_sizes, a->n_batch_sizes * sizeof a->batch_sizes[0]))
        return false;
    if (a->has_beta_knob != b->has_beta_knob ||
        (a->has_beta_knob && a->beta_knob != b->beta_knob))
        return false;
    if (a->has_mab_seed != b->has_mab_seed || (a->has_mab_seed && a->mab_seed != b->mab_seed))
        return false;
    return a->default_batch_size == b->default_batch_size && a->eta_knob == b->eta_knob &&
           a->target_metric == b->target_metric &&
           a->higher_is_better_metric == b->higher_is_better_metric &&
           a->max_epochs == b->max_epochs && a->num_pruning_rounds == b->num_pruning_rounds &&
           a->window_size == b->window_size && a->mab_prior_mean == b->mab_prior_mean &&
           a->mab_prior_precision == b->mab_prior_precision &&
           a->mab_num_explorations == b->mab_num_explorations &&
           a->max_power == b->max_power && a->number_of_gpus == b->number_of_gpus &&
           strcmp(a->gpu_model, b->gpu_model) == 0 && a->policy == b->policy &&
           a->warm_start == b->warm_start && prior_jobs_equal(a, b) &&
           a->has_carbon_intensity == b->has_carbon_intensity &&
           (!a->has_carbon_intensity ||
            a->carbon_intensity_g_per_kwh == b->carbon_intensity_g_per_kwh);
}

const char *spec_policy_name(zbso_policy p)
{
    switch (p) {
    case ZBSO_POLICY_ZEUS:
        return "zeus";
    case ZBSO_POLICY_SMART:
        return "smart";
    }
    return "?";
}

int spec_policy_parse(const char *name, zbso_policy *out)
{
    if (strcmp(name, "zeus") == 0)
        *out = ZBSO_POLICY_ZEUS;
    else if (strcmp(name, "smart") == 0)
        *out = ZBSO_POLICY_SMART;
    else
        return ZBSO_EINVAL;
    return 0;
}

int trial_id_validate(const zbso_trial_id *t, zbso_err *err)
{
    int rc = check_string(t->job_id, sizeof t->job_id, true, "job_id", err);
    if (rc < 0)
        return rc;
    if (t->batch_size <= 0)
        return err_set_field(err, ZBSO_EINVAL, "body", "batch_size",
                             "batch_size must be greater than 0, got %lld",
                             (long long)t->batch_size);
    if (t->trial_number <= 0)
        return err_set_field(err, ZBSO_EINVAL, "body", "trial_number",
                             "trial_number must be greater than 0, got %lld",
                             (long long)t->trial_number);
    return 0;
}

int result_validate(const zbso_training_result *r, zbso_err *err)
{
    char buf[OPT_FMT_DOUBLE_MAX];
    int rc = trial_id_validate(&r->trial, err);
    if (rc < 0)
        return rc;
    if ((rc = check_finite(r->time, "time", err)) < 0)
        return rc;
    if (r->time < 0.0)
        return err_set_field(err, ZBSO_EINVAL, "body", "time",
                             "time must be at least 0, got %s", opt_fmt_double(buf, r->time));
    if ((rc = check_finite(r->energy, "energy", err)) < 0)
        return rc;
    if (r->energy < 0.0)
        return err_set_field(err, ZBSO_EINVAL, "body", "energy",
                             "energy must be at least 0, got %s",
                             opt_fmt_double(buf, r->energy));
    if ((rc = check_finite(r->metric, "metric", err)) < 0)
        return rc;
    if (r->current_epoch < 1)
        return err_set_field(err, ZBSO_EINVAL, "body", "current_epoch",
                             "current_epoch must be at least 1, got %lld",
                             (long long)r->current_epoch);
    return 0;
}
