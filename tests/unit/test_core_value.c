/* test_core_value.c: stop reasons (the report decision and the derivation for trials
 * stored before them), savings percentages, the projection and the footprint (kWh, CO2e
 * with a static intensity and a series, the intensity CSV) of src/core/value.c, on
 * figures worked out by hand in the comments. Values are chosen to be exact doubles. */
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
#include "core/value.h"

/* {8, 16, 32}, default 16, eta 0.5, max_power 200 W: cost = E/2 + 100 T. Target 0.5,
 * higher is better, max_epochs 10, beta 2. */
static zbso_job make_job(void)
{
    zbso_job j;
    memset(&j, 0, sizeof j);
    spec_defaults(&j.spec);
    static const int64_t bs[] = {8, 16, 32};
    memcpy(j.spec.batch_sizes, bs, sizeof bs);
    j.spec.n_batch_sizes = 3;
    j.spec.default_batch_size = 16;
    j.spec.eta_knob = 0.5;
    j.spec.max_power = 200.0;
    j.spec.number_of_gpus = 1;
    j.spec.target_metric = 0.5;
    j.spec.max_epochs = 10;
    j.spec.has_beta_knob = true;
    j.spec.beta_knob = 2.0;
    snprintf(j.spec.job_id, sizeof j.spec.job_id, "v-1");
    return j;
}

static zbso_trial dispatched(int64_t n, int64_t bs)
{
    zbso_trial t;
    memset(&t, 0, sizeof t);
    t.trial_number = n;
    t.batch_size = bs;
    t.start_time = 100.0;
    t.lease_renewed_at = 100.0;
    return t;
}

static opt_report_decision decide(const zbso_job *j, const zbso_trial *t, double time_s,
                                  double energy_j, double metric, int64_t epoch)
{
    zbso_training_result r;
    opt_report_decision d;
    zbso_err err = {0};
    memset(&r, 0, sizeof r);
    r.trial.batch_size = t->batch_size;
    r.trial.trial_number = t->trial_number;
    r.time = time_s;
    r.energy = energy_j;
    r.metric = metric;
    r.current_epoch = epoch;
    assert_int_equal(opt_report_decide(j, t, &r, 110.0, &d, &err), 0);
    return d;
}

/* Every way the report decision ends a trial, and the one it does not. */
static void test_report_stop_reasons(void **unused)
{
    (void)unused;
    zbso_job j = make_job();
    zbso_trial t = dispatched(1, 16);
    /* no min cost yet: no bound */
    opt_report_decision d = decide(&j, &t, 1, 2, 0.4, 3);
    assert_int_equal(d.kind, OPT_REPORT_CONTINUE);
    assert_int_equal(d.trial.stop_reason, ZBSO_STOP_NONE);
    d = decide(&j, &t, 1, 2, 0.6, 3);
    assert_int_equal(d.trial.stop_reason, ZBSO_STOP_TARGET_REACHED);
    assert_true(d.response.converged);
    d = decide(&j, &t, 1, 2, 0.4, 10);
    assert_int_equal(d.trial.stop_reason, ZBSO_STOP_MAX_EPOCHS);
    /* min cost 100: the bound is 200; cost 1000/2 + 100*1 = 600 is over it */
    j.has_min_cost = true;
    j.min_cost = 100.0;
    d = decide(&j, &t, 1, 1000, 0.4, 3);
    assert_int_equal(d.trial.stop_reason, ZBSO_STOP_COST_BOUND);
    assert_false(d.response.converged);
    /* over the bound at the target or at max_epochs: the bound is the reason, as in the
     * message */
    d = decide(&j, &t, 1, 1000, 0.9, 3);
    assert_int_equal(d.trial.stop_reason, ZBSO_STOP_COST_BOUND);
    assert_non_null(strstr(d.response.message, "cost upper bound"));
    d = decide(&j, &t, 1, 1000, 0.1, 10);
    assert_int_equal(d.trial.stop_reason, ZBSO_STOP_COST_BOUND);
    /* a repeated report changes nothing */
    zbso_trial done = t;
    done.status = ZBSO_TRIAL_SUCCEEDED;
    done.stop_reason = ZBSO_STOP_MAX_EPOCHS;
    d = decide(&j, &done, 1, 2, 0.9, 3);
    assert_int_equal(d.kind, OPT_REPORT_REPEATED);
    assert_int_equal(d.trial.stop_reason, ZBSO_STOP_MAX_EPOCHS);
}

/* Trials stored before reasons were (stop_reason NONE): derived where the row proves it. */
static void test_derived_stop_reasons(void **unused)
{
    (void)unused;
    zbso_job j = make_job();
    zbso_trial t = dispatched(1, 16);
    assert_int_equal(opt_trial_stop_reason(&j.spec, &t), ZBSO_STOP_NONE);
    t.status = ZBSO_TRIAL_SUCCEEDED;
    t.converged = true;
    t.metric = 0.7;
    t.epochs = 4;
    assert_int_equal(opt_trial_stop_reason(&j.spec, &t), ZBSO_STOP_TARGET_REACHED);
    t.converged = false;      /* at the target, yet not converged: only the bound does it */
    assert_int_equal(opt_trial_stop_reason(&j.spec, &t), ZBSO_STOP_COST_BOUND);
    t.metric = 0.2;           /* below the target before max_epochs: the bound */
    assert_int_equal(opt_trial_stop_reason(&j.spec, &t), ZBSO_STOP_COST_BOUND);
    t.epochs = 10;            /* at max_epochs with a beta: either */
    assert_int_equal(opt_trial_stop_reason(&j.spec, &t), ZBSO_STOP_UNKNOWN);
    j.spec.has_beta_knob = false;
    assert_int_equal(opt_trial_stop_reason(&j.spec, &t), ZBSO_STOP_MAX_EPOCHS);
    j.spec.higher_is_better_metric = false;   /* 0.2 <= 0.5 is the target now */
    assert_int_equal(opt_trial_stop_reason(&j.spec, &t), ZBSO_STOP_COST_BOUND);
    t.status = ZBSO_TRIAL_FAILED;
    assert_int_equal(opt_trial_stop_reason(&j.spec, &t), ZBSO_STOP_UNKNOWN);
    /* a stored reason wins */
    t.stop_reason = ZBSO_STOP_LEASE_EXPIRED;
    assert_int_equal(opt_trial_stop_reason(&j.spec, &t), ZBSO_STOP_LEASE_EXPIRED);
    assert_string_equal(zbso_stop_reason_name(ZBSO_STOP_LEASE_EXPIRED), "lease_expired");
    assert_null(zbso_stop_reason_name(ZBSO_STOP_NONE));
    assert_int_equal(zbso_stop_reason_of_code(0), ZBSO_STOP_NONE);
    assert_int_equal(zbso_stop_reason_of_code(2), ZBSO_STOP_COST_BOUND);
    assert_int_equal(zbso_stop_reason_of_code(6), ZBSO_STOP_UNKNOWN);
    assert_int_equal(zbso_stop_reason_of_code(-1), ZBSO_STOP_UNKNOWN);
}

static zbso_trial finished(int64_t n, int64_t bs, bool converged, double energy_j,
                           double time_s, double start, double end)
{
    zbso_trial t = dispatched(n, bs);
    t.status = ZBSO_TRIAL_SUCCEEDED;
    t.converged = converged;
    t.energy = energy_j;
    t.time = time_s;
    t.start_time = start;
    t.end_time = end;
    return t;
}

/* Trials (cost = E/2 + 100 T):
 *   1 bs16 conv  E 7200000 T 100: cost 3600000 + 10000 = 3610000
 *   2 bs8  no    E 3600000 T 50 : cost 1800000 +  5000 = 1805000
 *   3 bs32 conv  E 3600000 T 20 : cost 1800000 +  2000 = 1802000
 *   4 bs32 conv  E 1800000 T 20 : cost  900000 +  2000 =  902000
 * default mean (bs16): E 7200000, T 100, cost 3610000; 4 finished: 4x = 28800000 J,
 * 400 s, 14440000. spent: E 16200000, T 190, cost 8119000. saved: E 12600000 (43.75 %),
 * T 210 (52.5 %), cost 6321000 (6321000 / 14440000 = 43.774238... %). */
static void jobs_trials(zbso_trial *t)
{
    t[0] = finished(1, 16, true, 7200000, 100, 0, 100);
    t[1] = finished(2, 8, false, 3600000, 50, 100, 150);
    t[2] = finished(3, 32, true, 3600000, 20, 150, 170);
    t[3] = finished(4, 32, true, 1800000, 20, 170, 190);
}

static void test_saved_pct(void **unused)
{
    (void)unused;
    zbso_job j = make_job();
    zbso_trial t[4];
    jobs_trials(t);
    opt_savings s;
    opt_pct p;
    opt_savings_compute(&j.spec, t, 4, &s);
    opt_savings_pct(&s, &p);
    assert_true(p.has_energy && p.has_time && p.has_cost);
    assert_true(p.pct.energy == 43.75);
    assert_true(p.pct.time == 52.5);
    assert_true(p.pct.cost == 6321000.0 / 14440000.0 * 100.0);
    /* no baseline: no percentage */
    opt_savings_compute(&j.spec, t + 1, 3, &s);
    opt_savings_pct(&s, &p);
    assert_false(p.has_energy || p.has_time || p.has_cost);
}

/* The projection from arms: bs32's arm has the highest mean (-1352000: the mean of its two
 * costs), sd 1/sqrt(precision 2^-36) = 2^18 = 262144; its runs: E mean 2700000, T 20.
 * saving per run: E 7200000 - 2700000 = 4500000 (62.5 %), T 80 (80 %), cost 3610000 -
 * 1352000 = 2258000. */
static void test_projection(void **unused)
{
    (void)unused;
    zbso_job j = make_job();
    zbso_trial t[4];
    jobs_trials(t);
    opt_savings s;
    opt_savings_compute(&j.spec, t, 4, &s);
    zbso_arm arms[3] = {{8, -1805000, INFINITY, 1},
                        {16, -3610000, INFINITY, 1},
                        {32, -1352000, 1.0 / 68719476736.0, 2}};
    opt_projection p;
    opt_projection_compute(&j.spec, ZBSO_STAGE_PRUNING, NULL, 0, t, 4, &s, &p);
    assert_false(p.available);
    assert_non_null(strstr(p.why, "pruning"));
    opt_projection_compute(&j.spec, ZBSO_STAGE_MAB, NULL, 0, t, 4, &s, &p);
    assert_false(p.available);
    assert_non_null(strstr(p.why, "keeps no arms"));
    opt_projection_compute(&j.spec, ZBSO_STAGE_MAB, arms, 3, t, 4, &s, &p);
    assert_true(p.available);
    assert_int_equal(p.batch_size, 32);
    assert_int_equal(p.observations, 2);
    assert_int_equal(p.runs, 2);
    assert_true(p.cost == 1352000.0);
    assert_true(p.cost_sd == 262144.0);
    assert_true(p.energy == 2700000.0);
    assert_true(p.time == 20.0);
    assert_true(p.saving.energy == 4500000.0);
    assert_true(p.saving.time == 80.0);
    assert_true(p.saving.cost == 2258000.0);
    assert_true(p.saving_pct.pct.energy == 62.5);
    assert_true(p.saving_pct.pct.time == 80.0);
    assert_true(p.saving_pct.pct.cost == 2258000.0 / 3610000.0 * 100.0);
    /* a window of 1: only the last run of bs32 (E 1800000) */
    j.spec.window_size = 1;
    opt_projection_compute(&j.spec, ZBSO_STAGE_MAB, arms, 3, t, 4, &s, &p);
    assert_int_equal(p.runs, 1);
    assert_true(p.energy == 1800000.0);
    /* the best arm without an observation; no baseline */
    arms[2].num_observations = 0;
    opt_projection_compute(&j.spec, ZBSO_STAGE_MAB, arms, 3, t, 4, &s, &p);
    assert_false(p.available);
    assert_non_null(strstr(p.why, "no observation"));
    arms[2].num_observations = 2;
    opt_savings_compute(&j.spec, t + 1, 3, &s);
    opt_projection_compute(&j.spec, ZBSO_STAGE_MAB, arms, 3, t + 1, 3, &s, &p);
    assert_false(p.available);
    assert_non_null(strstr(p.why, "default batch size"));
}

/* 3.6e6 J is 1 kWh. Static 400 g/kWh: 400 g per kWh whatever the interval. Series: 100
 * g/kWh from t=0, 300 from t=50, 200 from t=150. Over [0, 100]: (100*50 + 300*50)/100 =
 * 200; over [100, 150]: 300; over [140, 190]: (300*10 + 200*40)/50 = 220; before the
 * first point its value; a zero-length interval the value in force. */
static void test_footprint(void **unused)
{
    (void)unused;
    opt_footprint fp;
    memset(&fp, 0, sizeof fp);
    fp.has_intensity = true;
    fp.intensity_g_per_kwh = 400;
    assert_true(opt_co2e_g(&fp, 3.6e6, 0, 100) == 400.0);
    assert_true(opt_co2e_g(&fp, 1.8e6, 0, 100) == 200.0);
    opt_intensity_point pts[3] = {{0, 100}, {50, 300}, {150, 200}};
    fp.series = pts;
    fp.n_series = 3;
    assert_true(opt_intensity_mean(&fp, 0, 100) == 200.0);
    assert_true(opt_intensity_mean(&fp, 100, 150) == 300.0);
    assert_true(opt_intensity_mean(&fp, 140, 190) == 220.0);
    assert_true(opt_intensity_mean(&fp, -100, -50) == 100.0);
    assert_true(opt_intensity_mean(&fp, 500, 600) == 200.0);
    assert_true(opt_intensity_mean(&fp, 60, 60) == 300.0);
    assert_true(opt_intensity_mean(&fp, -50, 50) == 100.0);

    /* The savings' CO2e with that series (trials of jobs_trials, E in kWh 2, 1, 1, 0.5):
     * 1 [0,100] 2 kWh * 200 = 400; 2 [100,150] 1 * 300 = 300; 3 [150,170] 1 * 200 = 200;
     * 4 [170,190] 0.5 * 200 = 100. spent 1000; default mean 400; saved 4*400 - 1000 =
     * 600. */
    zbso_job j = make_job();
    zbso_trial t[4];
    jobs_trials(t);
    opt_co2e_savings c;
    opt_co2e_savings_compute(&j.spec, t, 4, &fp, &c);
    assert_true(c.has_baseline);
    assert_true(c.spent_g == 1000.0);
    assert_true(c.default_mean_g == 400.0);
    assert_true(c.saved_g == 600.0);
}

static void test_intensity_csv(void **unused)
{
    (void)unused;
    opt_intensity_point p[8];
    size_t n = 0;
    zbso_err err = {0};
    const char *ok = "timestamp,g_per_kwh\r\n2026-11-27T00:00:00Z,120.5\r\n\n"
                     "1764201600, 80\n 2026-11-27T01:00:00.5+00:00 , 60 \n";
    assert_int_equal(opt_intensity_parse(ok, strlen(ok), p, 8, &n, &err), 0);
    assert_int_equal(n, 3);
    /* 2025-11-27 = 1764201600 (20419 days); 2026-11-27 = 20784 days = 1795737600 */
    assert_true(p[0].t == 1764201600.0 && p[0].g_per_kwh == 80.0);
    assert_true(p[1].t == 1795737600.0 && p[1].g_per_kwh == 120.5);
    assert_true(p[2].t == 1795741200.5 && p[2].g_per_kwh == 60.0);
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"", "no timestamp"},
        {"t,g\n", "no timestamp"},
        {"1,-5\n", "intensity \"-5\""},
        {"1,abc\n", "intensity \"abc\""},
        {"1,nan\n", "intensity \"nan\""},
        {"1,inf\n", "intensity \"inf\""},
        {"1,5\nyesterday,4\n", "line 2: timestamp \"yesterday\""},
        {"2026-02-30T00:00:00Z,1\n", "timestamp \"2026-02-30T00:00:00Z\""},
        {"2026-11-27T00:00:00+01:00,1\n", "timestamp"},
        {"1,5\n1,6\n", "two points at timestamp 1"},
        {"1;5\n", "line 1"},
        {"1,1\n2,2\n3,3\n4,4\n5,5\n6,6\n7,7\n8,8\n9,9\n", "more than 8 points"},
    };
    /* a NUL inside a field is no number (strtod would stop at it and read "5") */
    static const char nul[] = "1,5\0x\n";
    assert_int_equal(opt_intensity_parse(nul, sizeof nul - 1, p, 8, &n, &err), ZBSO_EINVAL);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = (zbso_err){0};
        assert_int_equal(opt_intensity_parse(bad[i].text, strlen(bad[i].text), p, 8, &n, &err),
                         ZBSO_EINVAL);
        if (strstr(err.msg, bad[i].needle) == NULL)
            fail_msg("%s: message \"%s\" lacks \"%s\"", bad[i].text, err.msg, bad[i].needle);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_stop_reasons),
        cmocka_unit_test(test_derived_stop_reasons),
        cmocka_unit_test(test_saved_pct),
        cmocka_unit_test(test_projection),
        cmocka_unit_test(test_footprint),
        cmocka_unit_test(test_intensity_csv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
