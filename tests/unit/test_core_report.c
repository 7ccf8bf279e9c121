/* test_core_report.c: the report decision (SPEC §3.2, §3.5 lease renewal) with exact
 * messages and stored values. Pure: jobs and trials are built in memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/optimizer.h"
#include "core/spec.h"

/* eta 1 makes cost = energy, so the numbers below are easy to follow. */
static zbso_job make_job(void)
{
    zbso_job job;
    memset(&job, 0, sizeof job);
    spec_defaults(&job.spec);
    snprintf(job.spec.job_id, sizeof job.spec.job_id, "%s", "job-1");
    snprintf(job.spec.job_id_prefix, sizeof job.spec.job_id_prefix, "%s", "job");
    job.spec.batch_sizes[0] = 32;
    job.spec.batch_sizes[1] = 64;
    job.spec.n_batch_sizes = 2;
    job.spec.default_batch_size = 32;
    job.spec.eta_knob = 1.0;
    job.spec.beta_knob = 2.0;
    job.spec.target_metric = 0.9;
    job.spec.max_epochs = 10;
    job.spec.max_power = 300;
    job.spec.number_of_gpus = 1;
    snprintf(job.spec.gpu_model, sizeof job.spec.gpu_model, "%s", "H200");
    job.min_cost_batch_size = 32;
    return job;
}

static zbso_trial dispatched(void)
{
    zbso_trial t;
    memset(&t, 0, sizeof t);
    t.trial_number = 3;
    t.batch_size = 64;
    t.type = ZBSO_TRIAL_EXPLORATION;
    t.status = ZBSO_TRIAL_DISPATCHED;
    t.start_time = 1000;
    t.lease_renewed_at = 1000;
    return t;
}

static zbso_training_result result(double energy, double metric, int64_t epoch)
{
    zbso_training_result r;
    memset(&r, 0, sizeof r);
    snprintf(r.trial.job_id, sizeof r.trial.job_id, "%s", "job-1");
    r.trial.batch_size = 64;
    r.trial.trial_number = 3;
    r.time = 50;
    r.energy = energy;
    r.metric = metric;
    r.current_epoch = epoch;
    return r;
}

static opt_report_decision decide(const zbso_job *job, const zbso_trial *t,
                                  zbso_training_result r, double now)
{
    opt_report_decision d;
    zbso_err err;
    err_clear(&err);
    assert_int_equal(opt_report_decide(job, t, &r, now, &d, &err), 0);
    return d;
}

static void test_min_cost_only_from_converged(void **unused)
{
    zbso_job job = make_job();
    zbso_trial t = dispatched();
    /* Not converged at max_epochs: ends, but sets no min cost. */
    opt_report_decision d = decide(&job, &t, result(500, 0.5, 10), 1010);
    assert_int_equal(d.kind, OPT_REPORT_END);
    assert_false(d.update_min_cost);
    assert_false(d.response.converged);
    assert_true(d.response.stop_train);
    /* Converged with no min cost yet: becomes the min cost. */
    d = decide(&job, &t, result(700, 0.95, 4), 1010);
    assert_int_equal(d.kind, OPT_REPORT_END);
    assert_true(d.update_min_cost);
    assert_true(d.cost == 700.0);
    assert_true(d.response.converged);
    assert_string_equal(d.response.message, "Train succeeded");
    assert_int_equal(d.trial.status, ZBSO_TRIAL_SUCCEEDED);
    assert_true(d.trial.converged);
    assert_true(d.trial.energy == 700.0 && d.trial.time == 50.0 && d.trial.metric == 0.95);
    assert_int_equal(d.trial.epochs, 4);
    assert_true(d.trial.end_time == 1010.0);
    /* Converged but dearer than the current min cost: no change. */
    job.has_min_cost = true;
    job.min_cost = 600;
    d = decide(&job, &t, result(700, 0.95, 4), 1010);
    assert_true(d.response.converged);
    assert_false(d.update_min_cost);
    /* Converged and cheaper: update. */
    d = decide(&job, &t, result(599.5, 0.95, 4), 1010);
    assert_true(d.update_min_cost);
}

static void test_early_stop_at_beta_min_cost(void **unused)
{
    zbso_job job = make_job();
    zbso_trial t = dispatched();
    job.has_min_cost = true;
    job.min_cost = 1000;
    /* cost == beta * min_cost is still within: keep training. */
    opt_report_decision d = decide(&job, &t, result(2000, 0.5, 3), 1010);
    assert_int_equal(d.kind, OPT_REPORT_CONTINUE);
    assert_false(d.response.stop_train);
    assert_string_equal(d.response.message, "Stop condition not met, keep training");
    /* Over it: stop, not converged, the message names the numbers. */
    d = decide(&job, &t, result(2000.5, 0.5, 3), 1010);
    assert_int_equal(d.kind, OPT_REPORT_END);
    assert_true(d.response.stop_train);
    assert_false(d.response.converged);
    assert_false(d.trial.converged);
    assert_false(d.update_min_cost);
    assert_string_equal(d.response.message,
                        "Batch Size(64) exceeded the cost upper bound: current cost(2000.5) > "
                        "beta_knob(2.0)*min_cost(1000.0)");
    /* Even a run that reached the target is not converged when over the bound. */
    d = decide(&job, &t, result(2000.5, 0.95, 3), 1010);
    assert_false(d.response.converged);
    /* beta_knob null: no early stop at all. */
    job.spec.has_beta_knob = false;
    d = decide(&job, &t, result(1e9, 0.5, 3), 1010);
    assert_int_equal(d.kind, OPT_REPORT_CONTINUE);
}

static void test_max_epochs(void **unused)
{
    zbso_job job = make_job();
    zbso_trial t = dispatched();
    opt_report_decision d = decide(&job, &t, result(100, 0.5, 9), 1010);
    assert_int_equal(d.kind, OPT_REPORT_CONTINUE);
    d = decide(&job, &t, result(100, 0.5, 10), 1010);
    assert_int_equal(d.kind, OPT_REPORT_END);
    assert_string_equal(d.response.message, "Train failed to converge within max_epoch(10)");
    assert_false(d.trial.converged);
    /* Lower is better: 0.5 <= 0.9 has converged. */
    job.spec.higher_is_better_metric = false;
    d = decide(&job, &t, result(100, 0.5, 2), 1010);
    assert_int_equal(d.kind, OPT_REPORT_END);
    assert_true(d.response.converged);
}

static void test_repeated_report(void **unused)
{
    zbso_job job = make_job();
    zbso_trial t = dispatched();
    t.status = ZBSO_TRIAL_SUCCEEDED;
    t.converged = true;
    opt_report_decision d = decide(&job, &t, result(5, 0.1, 1), 1010);
    assert_int_equal(d.kind, OPT_REPORT_REPEATED);
    assert_true(d.response.stop_train);
    assert_true(d.response.converged);
    assert_string_equal(d.response.message, "Result for this trial(3) is already reported.");
    t.converged = false;
    d = decide(&job, &t, result(5, 0.95, 1), 1010);
    assert_false(d.response.converged);
}

static void test_failed_and_mismatch(void **unused)
{
    zbso_job job = make_job();
    zbso_trial t = dispatched();
    zbso_training_result r = result(5, 0.1, 1);
    opt_report_decision d;
    zbso_err err;
    t.status = ZBSO_TRIAL_FAILED;
    assert_int_equal(opt_report_decide(&job, &t, &r, 1010, &d, &err), ZBSO_ECONFLICT);
    assert_non_null(strstr(err.msg, "Trial 3 of job job-1"));
    t.status = ZBSO_TRIAL_DISPATCHED;
    r.trial.batch_size = 32;
    assert_int_equal(opt_report_decide(&job, &t, &r, 1010, &d, &err), ZBSO_ENOTFOUND);
    assert_non_null(strstr(err.msg, "batch size 64, not 32"));
}

/* Returns the field of the refusal of r (ZBSO_EINVAL) and leaves its message in msg. */
static const char *refused(const zbso_job *job, const zbso_trial *t, zbso_training_result r,
                           char *msg)
{
    static zbso_err err;
    opt_report_decision d;
    err_clear(&err);
    assert_int_equal(opt_report_decide(job, t, &r, 1010, &d, &err), ZBSO_EINVAL);
    assert_string_equal(err.where, "body");
    snprintf(msg, ZBSO_ERR_MSG_MAX, "%s", err.msg); /* msg holds ZBSO_ERR_MSG_MAX bytes */
    return err.loc;
}

/* A cost that is not 0 or in [1e-100, 1e150] is refused, naming the field whose term of
 * the cost is the larger, whatever the report would have decided. */
static void test_cost_out_of_range_refused(void **unused)
{
    zbso_job job = make_job();   /* eta 1: cost = energy */
    zbso_trial t = dispatched();
    char msg[ZBSO_ERR_MSG_MAX];
    assert_string_equal(refused(&job, &t, result(2e150, 0.95, 1), msg), "energy");
    assert_string_equal(msg, "time 50.0 s and energy 2e+150 J give cost 2e+150 (eta_knob "
                             "1.0, max_power 300.0 W); a cost must be 0 or between 1e-100 "
                             "and 1e+150 so that the arm's sums, means and variances stay "
                             "finite");
    /* Keep training would have been the answer: refused all the same. */
    assert_string_equal(refused(&job, &t, result(2e150, 0.1, 1), msg), "energy");
    /* A cost too small for the variance's reciprocal. */
    assert_string_equal(refused(&job, &t, result(1e-101, 0.95, 1), msg), "energy");
    assert_non_null(strstr(msg, "energy 1e-101 J give cost 1e-101"));
    /* The report: 0.5 * 1e308 + (0.5 * 300) * 1e308 is inf, the time term's. */
    job.spec.eta_knob = 0.5;
    zbso_training_result r = result(1e308, 0.95, 1);
    r.time = 1e308;
    assert_string_equal(refused(&job, &t, r, msg), "time");
    assert_non_null(strstr(msg, "time 1e+308 s and energy 1e+308 J give cost inf (eta_knob "
                                "0.5, max_power 300.0 W)"));
    /* eta 0: only the time term counts. */
    job.spec.eta_knob = 0.0;
    r = result(5, 0.95, 1);
    r.time = 1e-120;
    assert_string_equal(refused(&job, &t, r, msg), "time");
    /* The bounds themselves and a zero cost are accepted. */
    job.spec.eta_knob = 1.0;
    opt_report_decision d = decide(&job, &t, result(1e150, 0.95, 1), 1010);
    assert_true(d.kind == OPT_REPORT_END && d.cost == 1e150);
    d = decide(&job, &t, result(1e-100, 0.95, 1), 1010);
    assert_true(d.cost == 1e-100);
    r = result(0, 0.95, 1);
    r.time = 0;
    d = decide(&job, &t, r, 1010);
    assert_true(d.kind == OPT_REPORT_END && d.cost == 0.0);
    /* A trial that already has its result answers as before: nothing is stored. */
    t.status = ZBSO_TRIAL_SUCCEEDED;
    d = decide(&job, &t, result(2e150, 0.95, 1), 1010);
    assert_int_equal(d.kind, OPT_REPORT_REPEATED);
}

static void test_lease_renewal(void **unused)
{
    zbso_job job = make_job();
    zbso_trial t = dispatched();
    opt_report_decision d = decide(&job, &t, result(5, 0.1, 1), 1059.5);
    assert_int_equal(d.kind, OPT_REPORT_CONTINUE);
    assert_false(d.renew_lease);
    assert_true(d.trial.lease_renewed_at == 1000.0);
    d = decide(&job, &t, result(5, 0.1, 1), 1060.0);
    assert_true(d.renew_lease);
    assert_true(d.trial.lease_renewed_at == 1060.0);
    assert_int_equal(d.trial.status, ZBSO_TRIAL_DISPATCHED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_min_cost_only_from_converged),
        cmocka_unit_test(test_early_stop_at_beta_min_cost),
        cmocka_unit_test(test_max_epochs),
        cmocka_unit_test(test_repeated_report),
        cmocka_unit_test(test_failed_and_mismatch),
        cmocka_unit_test(test_lease_renewal),
        cmocka_unit_test(test_cost_out_of_range_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
