/* test_core_spec.c: job spec defaults, every validation rule of SPEC §2 (each rejects with
 * its field in err->loc), sorting, comparison, and the TrainingResult/TrialId checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/spec.h"

static zbso_job_spec valid(void)
{
    zbso_job_spec s;
    spec_defaults(&s);
    snprintf(s.job_id_prefix, sizeof s.job_id_prefix, "%s", "mnist");
    snprintf(s.job_id, sizeof s.job_id, "%s", "mnist-1");
    s.batch_sizes[0] = 64;
    s.batch_sizes[1] = 16;
    s.batch_sizes[2] = 32;
    s.n_batch_sizes = 3;
    s.default_batch_size = 32;
    s.max_power = 300;
    s.number_of_gpus = 1;
    snprintf(s.gpu_model, sizeof s.gpu_model, "%s", "H200");
    return s;
}

static void test_defaults(void **unused)
{
    zbso_job_spec s;
    spec_defaults(&s);
    assert_true(s.eta_knob == 0.5);
    assert_true(s.has_beta_knob && s.beta_knob == 2.0);
    assert_true(s.target_metric == 0.5);
    assert_true(s.higher_is_better_metric);
    assert_int_equal(s.max_epochs, 100);
    assert_int_equal(s.num_pruning_rounds, 2);
    assert_int_equal(s.window_size, 0);
    assert_true(s.mab_prior_mean == 0.0 && s.mab_prior_precision == 0.0);
    assert_int_equal(s.mab_num_explorations, 2);
    assert_false(s.has_mab_seed);
}

static void test_valid_is_sorted(void **unused)
{
    zbso_job_spec s = valid();
    zbso_err err;
    err_clear(&err);
    assert_int_equal(spec_validate(&s, &err), 0);
    assert_int_equal(s.batch_sizes[0], 16);
    assert_int_equal(s.batch_sizes[1], 32);
    assert_int_equal(s.batch_sizes[2], 64);
    /* Empty job id is allowed (the server generates one); beta null is allowed. */
    s.job_id[0] = '\0';
    s.has_beta_knob = false;
    s.beta_knob = -1;
    assert_int_equal(spec_validate(&s, &err), 0);
}

/* Applies one mutation by index to a valid spec; returns the field expected in err->loc. */
static const char *mutate(zbso_job_spec *s, int i)
{
    switch (i) {
    case 0: s->job_id_prefix[0] = '\0'; return "job_id_prefix";
    case 1: memset(s->job_id_prefix, 'a', sizeof s->job_id_prefix); return "job_id_prefix";
    case 2: snprintf(s->job_id, sizeof s->job_id, "%s", "other-1"); return "job_id";
    case 3: memset(s->job_id, 'm', sizeof s->job_id); return "job_id";
    case 4: s->n_batch_sizes = 0; return "batch_sizes";
    case 5: s->batch_sizes[1] = 64; return "batch_sizes";
    case 6: s->batch_sizes[0] = 0; return "batch_sizes";
    case 7: s->batch_sizes[0] = -64; return "batch_sizes";
    case 8: s->n_batch_sizes = ZBSO_MAX_BATCH_SIZES + 1; return "batch_sizes";
    case 9: s->default_batch_size = 48; return "default_batch_size";
    case 10: s->default_batch_size = 0; return "default_batch_size";
    case 11: s->eta_knob = -0.01; return "eta_knob";
    case 12: s->eta_knob = 1.01; return "eta_knob";
    case 13: s->eta_knob = NAN; return "eta_knob";
    case 14: s->beta_knob = 0; return "beta_knob";
    case 15: s->beta_knob = -2; return "beta_knob";
    case 16: s->beta_knob = INFINITY; return "beta_knob";
    case 17: s->max_epochs = 0; return "max_epochs";
    case 18: s->num_pruning_rounds = -1; return "num_pruning_rounds";
    case 19: s->mab_num_explorations = -1; return "mab_num_explorations";
    case 20: s->mab_prior_precision = -0.5; return "mab_prior_precision";
    case 21: s->window_size = -1; return "window_size";
    case 22: s->max_power = 0; return "max_power";
    case 23: s->max_power = -5; return "max_power";
    case 24: s->number_of_gpus = 0; return "number_of_gpus";
    case 25: s->gpu_model[0] = '\0'; return "gpu_model";
    case 26: s->target_metric = INFINITY; return "target_metric";
    case 27: s->mab_prior_mean = NAN; return "mab_prior_mean";
    case 28: s->max_power = INFINITY; return "max_power";
    case 29: s->mab_prior_mean = 1.5e150; return "mab_prior_mean";
    case 30: s->mab_prior_mean = -1.5e150; return "mab_prior_mean";
    case 31: s->mab_prior_precision = 1.5e150; return "mab_prior_precision";
    default: return NULL;
    }
}

static void test_each_rule_rejects(void **unused)
{
    int checked = 0;
    for (int i = 0;; i++) {
        zbso_job_spec s = valid(), before;
        zbso_err err;
        const char *field = mutate(&s, i);
        if (field == NULL)
            break;
        before = s;
        err_clear(&err);
        int rc = spec_validate(&s, &err);
        if (rc != ZBSO_EINVAL || strcmp(err.loc, field) != 0)
            fail_msg("mutation %d: rc %d loc \"%s\" (want %s): %s", i, rc, err.loc, field,
                     err.msg);
        assert_string_equal(err.where, "body");
        assert_true(err.msg[0] != '\0');
        /* Nothing is half-applied: a rejected spec is left as it was. */
        assert_memory_equal(&s, &before, sizeof s);
        checked++;
    }
    assert_int_equal(checked, 32);
}

static void test_messages_name_values(void **unused)
{
    zbso_job_spec s = valid();
    zbso_err err;
    s.eta_knob = 1.5;
    assert_int_equal(spec_validate(&s, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "1.5"));
    s = valid();
    s.default_batch_size = 48;
    assert_int_equal(spec_validate(&s, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "48"));
    s = valid();
    s.batch_sizes[2] = 16;
    assert_int_equal(spec_validate(&s, &err), ZBSO_EINVAL);
    assert_string_equal(err.msg, "batch size 16 appears more than once in batch_sizes");
    s = valid();
    snprintf(s.job_id, sizeof s.job_id, "%s", "other-1");
    assert_int_equal(spec_validate(&s, &err), ZBSO_EINVAL);
    assert_string_equal(err.msg, "Job_id(other-1) does not start with prefix(mnist).");
    /* Zeus's rule on a given "" (the codec's case: the spec cannot hold it). */
    assert_int_equal(spec_check_job_id("", "mnist", &err), ZBSO_EINVAL);
    assert_string_equal(err.loc, "job_id");
    assert_string_equal(err.msg, "Job_id() does not start with prefix(mnist).");
    assert_int_equal(spec_check_job_id("mnist-1", "mnist", &err), 0);
    s = valid();
    s.mab_prior_precision = 2e150;
    assert_int_equal(spec_validate(&s, &err), ZBSO_EINVAL);
    assert_string_equal(err.msg, "mab_prior_precision must be at most 1e+150, got 2e+150 (a "
                                 "larger prior makes the arms' means non-finite)");
    /* The bounds themselves are valid. */
    s = valid();
    s.mab_prior_mean = -1e150;
    s.mab_prior_precision = 1e150;
    assert_int_equal(spec_validate(&s, &err), 0);
}

static void test_equal(void **unused)
{
    zbso_job_spec a = valid(), b;
    zbso_err err;
    assert_int_equal(spec_validate(&a, &err), 0);
    b = a;
    assert_true(spec_equal(&a, &b));
    b.eta_knob = 0.6;
    assert_false(spec_equal(&a, &b));
    b = a;
    b.has_beta_knob = false;
    assert_false(spec_equal(&a, &b));
    b = a;
    b.batch_sizes[2] = 128;
    assert_false(spec_equal(&a, &b));
    b = a;
    snprintf(b.gpu_model, sizeof b.gpu_model, "%s", "A100");
    assert_false(spec_equal(&a, &b));
    b = a;
    b.has_mab_seed = true;
    assert_false(spec_equal(&a, &b));
    /* beta_knob's value does not matter when it is null on both sides. */
    a.has_beta_knob = false;
    b = a;
    b.beta_knob = 9;
    assert_true(spec_equal(&a, &b));
}

static void test_result_and_trial_id(void **unused)
{
    zbso_training_result r;
    zbso_err err;
    memset(&r, 0, sizeof r);
    snprintf(r.trial.job_id, sizeof r.trial.job_id, "%s", "j-1");
    r.trial.batch_size = 32;
    r.trial.trial_number = 1;
    r.current_epoch = 1;
    assert_int_equal(result_validate(&r, &err), 0);
    assert_int_equal(trial_id_validate(&r.trial, &err), 0);

    static const char *fields[] = {"job_id", "batch_size", "trial_number", "time",
                                   "energy", "metric", "current_epoch", "time"};
    for (int i = 0; i < 8; i++) {
        zbso_training_result b = r;
        switch (i) {
        case 0: b.trial.job_id[0] = '\0'; break;
        case 1: b.trial.batch_size = 0; break;
        case 2: b.trial.trial_number = -1; break;
        case 3: b.time = -1; break;
        case 4: b.energy = -0.5; break;
        case 5: b.metric = NAN; break;
        case 6: b.current_epoch = 0; break;
        case 7: b.time = INFINITY; break;
        }
        err_clear(&err);
        assert_int_equal(result_validate(&b, &err), ZBSO_EINVAL);
        assert_string_equal(err.loc, fields[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_valid_is_sorted),
        cmocka_unit_test(test_each_rule_rejects),
        cmocka_unit_test(test_messages_name_values),
        cmocka_unit_test(test_equal),
        cmocka_unit_test(test_result_and_trial_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
