/* test_core_savings.c: opt_savings_compute (SPEC §5, "Savings") on scripted jobs whose
 * figures are worked out by hand below. Every cost is an integer and every mean divides
 * exactly, so the expected values are exact doubles and compared with ==. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "core/optimizer.h"
#include "core/spec.h"

/* Batch sizes {64, 32, 16, 8} (not sorted: the tie rule must not lean on the order),
 * default 32, eta 0.5, max_power 200 W: cost = 0.5 * E + (0.5 * 200) * T = E/2 + 100 T. */
static zbso_job_spec make_spec(void)
{
    static const int64_t bs[] = {64, 32, 16, 8};
    zbso_job_spec s;
    spec_defaults(&s);
    memcpy(s.batch_sizes, bs, sizeof bs);
    s.n_batch_sizes = 4;
    s.default_batch_size = 32;
    s.eta_knob = 0.5;
    s.max_power = 200.0;
    s.number_of_gpus = 1;
    return s;
}

/* Appends trial number *n + 1 with the given fields. */
static void add(zbso_trial *t, size_t *n, int64_t bs, zbso_trial_status status,
                bool converged, double energy_j, double time_s)
{
    zbso_trial x;
    memset(&x, 0, sizeof x);
    x.trial_number = (int64_t)*n + 1;
    x.batch_size = bs;
    x.type = *n < 4 ? ZBSO_TRIAL_EXPLORATION : ZBSO_TRIAL_MAB;
    x.status = status;
    x.converged = converged;
    x.energy = energy_j;
    x.time = time_s;
    t[(*n)++] = x;
}

#define S ZBSO_TRIAL_SUCCEEDED
#define F ZBSO_TRIAL_FAILED
#define D ZBSO_TRIAL_DISPATCHED

static void expect_totals(const opt_totals *t, double energy_j, double time_s, double cost)
{
    assert_true(t->energy == energy_j);
    assert_true(t->time == time_s);
    assert_true(t->cost == cost);
}

static void test_no_trials(void **unused)
{
    zbso_job_spec spec = make_spec();
    opt_savings s;
    memset(&s, 0x5a, sizeof s);
    opt_savings_compute(&spec, NULL, 0, &s);
    assert_int_equal(s.finished, 0);
    assert_int_equal(s.failed, 0);
    expect_totals(&s.spent, 0, 0, 0);
    assert_int_equal(s.default_batch_size, 32);
    assert_int_equal(s.default_runs, 0);
    assert_false(s.has_baseline);
    expect_totals(&s.default_mean, 0, 0, 0);
    expect_totals(&s.saved, 0, 0, 0);
    assert_int_equal(s.break_even, 0);
    assert_false(s.has_best);
    assert_int_equal(s.best_batch_size, 0);
    assert_true(s.best_mean_cost == 0);
    assert_true(s.regret == 0);
}

/* Breaks even at 1: the default runs first and everything after stays below its mean. */
static void test_scripted_job_breaks_even_at_1(void **unused)
{
    zbso_job_spec spec = make_spec();
    zbso_trial t[16];
    size_t n = 0;
    opt_savings s;
    add(t, &n, 32, S, true, 2000, 10);   /* 1: cost 1000 + 1000 = 2000 */
    add(t, &n, 16, S, true, 1600, 6);    /* 2: 800 + 600 = 1400 */
    add(t, &n, 8, S, false, 1200, 12);   /* 3: 600 + 1200 = 1800, not converged */
    add(t, &n, 64, S, true, 2400, 14);   /* 4: 1200 + 1400 = 2600 */
    add(t, &n, 32, F, true, 1e9, 1e9);   /* 5: Failed: counted, never summed */
    add(t, &n, 16, S, true, 1000, 5);    /* 6: 500 + 500 = 1000 */
    add(t, &n, 16, S, true, 1200, 6);    /* 7: 600 + 600 = 1200 */
    add(t, &n, 32, S, true, 2400, 14);   /* 8: 1200 + 1400 = 2600 */
    add(t, &n, 16, D, true, 1e9, 1e9);   /* 9: Dispatched: in nothing */
    opt_savings_compute(&spec, t, n, &s);

    assert_int_equal(s.finished, 7);     /* 1, 2, 3, 4, 6, 7, 8 */
    assert_int_equal(s.failed, 1);
    /* E 2000+1600+1200+2400+1000+1200+2400 = 11800; T 10+6+12+14+5+6+14 = 67;
     * cost 2000+1400+1800+2600+1000+1200+2600 = 12600 (= 11800/2 + 100*67). */
    expect_totals(&s.spent, 11800, 67, 12600);
    assert_int_equal(s.default_runs, 2); /* 1 and 8 */
    assert_true(s.has_baseline);
    /* E (2000+2400)/2 = 2200; T (10+14)/2 = 12; cost (2000+2600)/2 = 2300. */
    expect_totals(&s.default_mean, 2200, 12, 2300);
    /* 7*2200 - 11800 = 3600; 7*12 - 67 = 17; 7*2300 - 12600 = 3500. */
    expect_totals(&s.saved, 3600, 17, 3500);
    /* Cumulative cost against j*2300: 2000<=2300, 3400<=4600, 5200<=6900, 7800<=9200,
     * 8800<=11500, 10000<=13800, 12600<=16100: never above. */
    assert_int_equal(s.break_even, 1);
    /* Means of converged runs: 64: 2600; 32: 2300; 16: (1400+1000+1200)/3 = 1200;
     * 8: none. Regret 12600 - 7*1200 = 4200. */
    assert_true(s.has_best);
    assert_int_equal(s.best_batch_size, 16);
    assert_true(s.best_mean_cost == 1200);
    assert_true(s.regret == 4200);
}

/* The default is cheap, exploration dear: the job is behind until trial 9. The first 7
 * finished trials are one job at one moment (never broken even), all 10 the same job
 * later (broken even at 9, although it was even at 1 too). */
static void test_break_even_never_then_later(void **unused)
{
    zbso_job_spec spec = make_spec();
    zbso_trial t[16];
    size_t n = 0;
    opt_savings s;
    add(t, &n, 32, S, true, 1000, 5);    /* 1: 500 + 500 = 1000 */
    add(t, &n, 16, S, true, 2000, 20);   /* 2: 1000 + 2000 = 3000 */
    add(t, &n, 64, S, false, 1200, 10);  /* 3: 600 + 1000 = 1600, not converged */
    add(t, &n, 8, S, true, 400, 2);      /* 4: 200 + 200 = 400 */
    add(t, &n, 8, S, true, 400, 2);      /* 5: 400 */
    add(t, &n, 8, S, true, 400, 2);      /* 6: 400 */
    add(t, &n, 32, S, true, 1000, 5);    /* 7: 1000 */

    opt_savings_compute(&spec, t, n, &s);
    assert_int_equal(s.finished, 7);
    /* E 1000+2000+1200+3*400+1000 = 6400; T 5+20+10+3*2+5 = 46; cost 7800. */
    expect_totals(&s.spent, 6400, 46, 7800);
    assert_int_equal(s.default_runs, 2);
    expect_totals(&s.default_mean, 1000, 5, 1000);
    /* 7*1000 - 6400 = 600; 7*5 - 46 = -11; 7000 - 7800 = -800. */
    expect_totals(&s.saved, 600, -11, -800);
    /* Cumulative: 1000<=1000 (equal counts as even), then 4000>2000, 5600>3000,
     * 6000>4000, 6400>5000, 6800>6000, 7800>7000: above at the last one. */
    assert_int_equal(s.break_even, 0);
    /* 8: 400 (three runs), 16: 3000, 32: 1000. Regret 7800 - 7*400 = 5000. */
    assert_int_equal(s.best_batch_size, 8);
    assert_true(s.best_mean_cost == 400);
    assert_true(s.regret == 5000);

    add(t, &n, 8, S, true, 400, 2);      /* 8: 400 */
    add(t, &n, 8, S, true, 400, 2);      /* 9: 400 */
    add(t, &n, 8, S, true, 400, 2);      /* 10: 400 */
    opt_savings_compute(&spec, t, n, &s);
    assert_int_equal(s.finished, 10);
    /* E 6400 + 1200 = 7600; T 46 + 6 = 52; cost 7800 + 1200 = 9000. */
    expect_totals(&s.spent, 7600, 52, 9000);
    expect_totals(&s.default_mean, 1000, 5, 1000);
    /* 10000 - 7600 = 2400; 50 - 52 = -2; 10000 - 9000 = 1000. */
    expect_totals(&s.saved, 2400, -2, 1000);
    /* 8200>8000 at 8 (the last above), 8600<=9000, 9000<=10000. */
    assert_int_equal(s.break_even, 9);
    /* 8: six runs of 400. 9000 - 10*400 = 5000. */
    assert_int_equal(s.best_batch_size, 8);
    assert_true(s.regret == 5000);
}

/* No converged run of the default: no baseline (saved and break-even 0), but another
 * batch size converged, so best and regret exist. Failed and Dispatched trials count in
 * no figure, even with values and converged set. */
static void test_default_not_converged_other_converged(void **unused)
{
    zbso_job_spec spec = make_spec();
    zbso_trial t[16];
    size_t n = 0;
    opt_savings s;
    add(t, &n, 32, S, false, 3000, 10);  /* 1: 1500 + 1000 = 2500, not converged */
    add(t, &n, 32, F, true, 1e6, 1e6);   /* 2: Failed, converged flag ignored */
    add(t, &n, 16, S, true, 1000, 4);    /* 3: 500 + 400 = 900 */
    add(t, &n, 32, D, true, 10, 1);      /* 4: Dispatched */
    add(t, &n, 8, S, false, 200, 1);     /* 5: 100 + 100 = 200, not converged */
    opt_savings_compute(&spec, t, n, &s);
    assert_int_equal(s.finished, 3);
    assert_int_equal(s.failed, 1);
    /* E 3000+1000+200 = 4200; T 10+4+1 = 15; cost 2500+900+200 = 3600. */
    expect_totals(&s.spent, 4200, 15, 3600);
    assert_int_equal(s.default_runs, 0);
    assert_false(s.has_baseline);
    expect_totals(&s.default_mean, 0, 0, 0);
    expect_totals(&s.saved, 0, 0, 0);
    assert_int_equal(s.break_even, 0);
    /* Only 16 converged: 900. Regret 3600 - 3*900 = 900. */
    assert_true(s.has_best);
    assert_int_equal(s.best_batch_size, 16);
    assert_true(s.best_mean_cost == 900);
    assert_true(s.regret == 900);
}

/* Nothing converged at all: neither a baseline nor a best. */
static void test_nothing_converged(void **unused)
{
    zbso_job_spec spec = make_spec();
    zbso_trial t[4];
    size_t n = 0;
    opt_savings s;
    add(t, &n, 32, S, false, 400, 2);    /* 200 + 200 = 400 */
    add(t, &n, 64, S, false, 600, 1);    /* 300 + 100 = 400 */
    opt_savings_compute(&spec, t, n, &s);
    assert_int_equal(s.finished, 2);
    expect_totals(&s.spent, 1000, 3, 800);
    assert_false(s.has_baseline);
    assert_int_equal(s.break_even, 0);
    assert_false(s.has_best);
    assert_int_equal(s.best_batch_size, 0);
    assert_true(s.regret == 0);
}

/* A Succeeded trial whose cost is not accepted (an older zbso stored 1e308 s: infinite
 * cost; or NaN energy) has no usable measurement: counted as failed, summed nowhere. */
static void test_unaccepted_cost_counts_as_failed(void **unused)
{
    zbso_job_spec spec = make_spec();
    zbso_trial t[4];
    size_t n = 0;
    opt_savings s;
    add(t, &n, 32, S, true, 2000, 10);   /* 1: 2000 */
    add(t, &n, 32, S, true, 1e308, 1e308); /* 2: cost inf */
    add(t, &n, 16, S, true, NAN, 1);     /* 3: cost NaN */
    opt_savings_compute(&spec, t, n, &s);
    assert_int_equal(s.finished, 1);
    assert_int_equal(s.failed, 2);
    expect_totals(&s.spent, 2000, 10, 2000);
    assert_int_equal(s.default_runs, 1);
    expect_totals(&s.default_mean, 2000, 10, 2000);
    expect_totals(&s.saved, 0, 0, 0);
    assert_int_equal(s.break_even, 1);
    assert_int_equal(s.best_batch_size, 32);
    assert_true(s.regret == 0);
}

/* Ties: 64 and 16 both have mean cost 1000 (64 listed and run first): the smaller batch
 * size is best. A cumulative cost equal to j default runs is even. */
static void test_ties(void **unused)
{
    zbso_job_spec spec = make_spec();
    zbso_trial t[8];
    size_t n = 0;
    opt_savings s;
    add(t, &n, 32, S, true, 2000, 10);   /* 1: 1000 + 1000 = 2000 */
    add(t, &n, 64, S, true, 1000, 5);    /* 2: 500 + 500 = 1000 */
    add(t, &n, 16, S, true, 800, 4);     /* 3: 400 + 400 = 800 */
    add(t, &n, 16, S, true, 1200, 6);    /* 4: 600 + 600 = 1200 */
    opt_savings_compute(&spec, t, n, &s);
    /* E 2000+1000+800+1200 = 5000; T 10+5+4+6 = 25; cost 2000+1000+800+1200 = 5000. */
    expect_totals(&s.spent, 5000, 25, 5000);
    expect_totals(&s.default_mean, 2000, 10, 2000);
    /* 4*2000 - 5000 = 3000; 40 - 25 = 15; 8000 - 5000 = 3000. */
    expect_totals(&s.saved, 3000, 15, 3000);
    /* 2000<=2000 (equal), 3000<=4000, 3800<=6000, 5000<=8000. */
    assert_int_equal(s.break_even, 1);
    /* 64: 1000; 16: (800+1200)/2 = 1000; 32: 2000. Tie: 16. 5000 - 4*1000 = 1000. */
    assert_int_equal(s.best_batch_size, 16);
    assert_true(s.best_mean_cost == 1000);
    assert_true(s.regret == 1000);
}

/* Sums run left to right in trial-number order (the documented order a script repeats):
 * with 2e16 J first (ulp 4), each following 1 J is lost to rounding one at a time, where
 * an exact or compensated sum of the nine would keep 2e16 + 8. T = 0: cost = E/2. */
static void test_left_to_right_sums(void **unused)
{
    zbso_job_spec spec = make_spec();
    zbso_trial t[16];
    size_t n = 0;
    opt_savings s;
    add(t, &n, 32, S, true, 2e16, 0);    /* cost 1e16 (ulp 2) */
    for (int i = 0; i < 8; i++)
        add(t, &n, 16, S, false, 1, 0);  /* cost 0.5: 1e16 + 0.5 rounds back to 1e16 */
    opt_savings_compute(&spec, t, n, &s);
    assert_int_equal(s.finished, 9);
    assert_true(s.spent.energy == 2e16);
    assert_true(s.spent.cost == 1e16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_trials),
        cmocka_unit_test(test_scripted_job_breaks_even_at_1),
        cmocka_unit_test(test_break_even_never_then_later),
        cmocka_unit_test(test_default_not_converged_other_converged),
        cmocka_unit_test(test_nothing_converged),
        cmocka_unit_test(test_unaccepted_cost_counts_as_failed),
        cmocka_unit_test(test_ties),
        cmocka_unit_test(test_left_to_right_sums),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
