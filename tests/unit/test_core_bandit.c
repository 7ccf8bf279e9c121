/* test_core_bandit.c: arm fitting (SPEC §3.3), numpy-exact statistics and the MAB choice
 * (SPEC §3.1) against numpy's recorded draws in testdata/numpy_pcg64_vectors.json. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/optimizer.h"
#include "core/spec.h"

#define VECTORS ZBSO_TESTDATA "/numpy_pcg64_vectors.json"
#define INTERLEAVED_SEED 123456u  /* the interleaved cases continue one default_rng(123456) */
#define MAX_ARMS 16

static json_t *load_vectors(void)
{
    json_error_t jerr;
    json_t *root = json_load_file(VECTORS, 0, &jerr);
    if (root == NULL)
        fail_msg("cannot load %s: %s (line %d)", VECTORS, jerr.text, jerr.line);
    return root;
}

/* Reads interleaved_arms into arms (observations 0); returns how many. */
static size_t load_arms(json_t *root, zbso_arm *arms)
{
    json_t *list = json_object_get(root, "interleaved_arms"), *a;
    size_t i;
    assert_true(json_array_size(list) > 0 && json_array_size(list) <= MAX_ARMS);
    json_array_foreach(list, i, a) {
        const char *prec = json_string_value(json_object_get(a, "precision"));
        assert_non_null(prec);
        arms[i].batch_size = json_integer_value(json_object_get(a, "batch_size"));
        arms[i].param_mean = json_number_value(json_object_get(a, "mean"));
        arms[i].param_precision = strtod(prec, NULL);
        arms[i].num_observations = 0;
    }
    return json_array_size(list);
}

/* Parses "0x..." (up to 128 bits) into hi and lo words. */
static void parse_u128(const char *text, uint64_t *hi, uint64_t *lo)
{
    char buf[40];
    size_t len;
    assert_true(strncmp(text, "0x", 2) == 0);
    text += 2;
    len = strlen(text);
    assert_true(len <= 32);
    memset(buf, '0', 32 - len);
    memcpy(buf + 32 - len, text, len + 1);
    char hi_txt[17];
    memcpy(hi_txt, buf, 16);
    hi_txt[16] = '\0';
    *hi = strtoull(hi_txt, NULL, 16);
    *lo = strtoull(buf + 16, NULL, 16);
}

static void test_sum_is_pairwise(void **unused)
{
    double a[256];
    /* n < 8: sequential, so the 1 after the cancellation survives. */
    double small[7] = {1e100, 1, -1e100, 1, 0, 0, 0};
    assert_true(opt_sum(small, 7) == 1.0);
    /* n = 8: eight accumulators combined pairwise: (1e100+1)+(-1e100+1) = 0. */
    double eight[8] = {1e100, 1, -1e100, 1, 0, 0, 0, 0};
    assert_true(opt_sum(eight, 8) == 0.0);
    /* n = 16: r0 = 1e100-1e100 = 0, r1 = 1, r2 = -1e100+1e100 = 0, r3 = 1 -> 2
     * (sequential gives 0). */
    double sixteen[16] = {1e100, 1, -1e100, 1, 0, 0, 0, 0, -1e100, 0, 1e100, 0, 0, 0, 0, 0};
    assert_true(opt_sum(sixteen, 16) == 2.0);
    /* n = 256 splits into two halves of 128: 1e100 + 1 is lost in the first half, so the
     * total is 0 (blocks of 8 over all 256 would give 1). */
    memset(a, 0, sizeof a);
    a[0] = 1e100;
    a[1] = 1;
    a[128] = -1e100;
    assert_true(opt_sum(a, 256) == 0.0);
    assert_true(opt_sum(a, 0) == 0.0);
}

static void test_mean_var(void **unused)
{
    double a[4] = {1, 2, 3, 4};
    assert_true(opt_mean(a, 4) == 2.5);
    assert_true(opt_var(a, 4) == 1.25);
    double same[3] = {-7, -7, -7};
    assert_true(opt_var(same, 3) == 0.0);
}

static void test_cost_formula(void **unused)
{
    /* 0.5 * 1000 + (0.5 * 300) * 10 = 500 + 1500 */
    assert_true(opt_cost(1000.0, 10.0, 0.5, 300.0) == 2000.0);
    /* eta 1: energy only; eta 0: max_power * time only. */
    assert_true(opt_cost(1234.0, 10.0, 1.0, 300.0) == 1234.0);
    assert_true(opt_cost(1234.0, 10.0, 0.0, 300.0) == 3000.0);
    /* Left-to-right order as Python: 0.3 * 3 + ((1 - 0.3) * 700) * 7 is 3430.8999999999996
     * in Python; (1 - 0.3) * (700 * 7) would give 3430.9. */
    assert_true(opt_cost(3.0, 7.0, 0.3, 700.0) == 3430.8999999999996);
    assert_true(opt_cost(3.0, 11.7, 0.1, 700.0) == 7371.3);
}

/* The texts are Python's repr() of the same doubles. */
static void test_fmt_double_like_python(void **unused)
{
    static const struct { double d; const char *text; } cases[] = {
        {0.1, "0.1"}, {800.0, "800.0"}, {-3.25, "-3.25"}, {2000.5, "2000.5"},
        {1e16, "1e+16"}, {1.5e-05, "1.5e-05"}, {0.0001, "0.0001"}, {0.0, "0.0"},
        {-0.0, "-0.0"}, {1234567.0, "1234567.0"}, {123456789012345678.0, "1.2345678901234568e+17"},
        {9999999999999998.0, "9999999999999998.0"}, {1.0 / 3.0, "0.3333333333333333"},
        {INFINITY, "inf"}, {-INFINITY, "-inf"}, {5e-324, "5e-324"},
    };
    char buf[OPT_FMT_DOUBLE_MAX];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_string_equal(opt_fmt_double(buf, cases[i].d), cases[i].text);
}

static void test_arm_fit_formulas(void **unused)
{
    zbso_arm arm;
    /* rewards -10, -14: mean -12, variance 4, q = 0.25; prior (m0 -8, p0 1):
     * precision = 1 + 2 * 0.25 = 1.5, mean = (1 * -8 + 0.25 * -24) / 1.5 = -14 / 1.5. */
    double r[2] = {-10, -14};
    opt_arm_fit(64, -8.0, 1.0, r, 2, &arm);
    assert_int_equal(arm.batch_size, 64);
    assert_int_equal(arm.num_observations, 2);
    assert_true(arm.param_precision == 1.5);
    assert_true(arm.param_mean == -14.0 / 1.5);
    /* Prior precision 0: the mean is the rewards' mean, precision n/v = 0.5. */
    opt_arm_fit(64, -8.0, 0.0, r, 2, &arm);
    assert_true(arm.param_precision == 0.5);
    assert_true(arm.param_mean == -12.0);
}

static void test_arm_fit_infinite_and_empty(void **unused)
{
    zbso_arm arm;
    double one[1] = {-300.5};
    opt_arm_fit(32, -1.0, 2.0, one, 1, &arm);
    assert_true(isinf(arm.param_precision) && arm.param_precision > 0);
    assert_true(arm.param_mean == -300.5);
    assert_int_equal(arm.num_observations, 1);
    double same[3] = {-5, -5, -5};
    opt_arm_fit(32, -1.0, 2.0, same, 3, &arm);
    assert_true(isinf(arm.param_precision));
    assert_true(arm.param_mean == -5.0);
    assert_int_equal(arm.num_observations, 3);
    opt_arm_fit(32, -1.0, 2.0, NULL, 0, &arm);
    assert_true(arm.param_precision == 2.0);
    assert_true(arm.param_mean == -1.0);
    assert_int_equal(arm.num_observations, 0);
}

static zbso_trial succeeded(int64_t number, int64_t bs, double energy)
{
    zbso_trial t;
    memset(&t, 0, sizeof t);
    t.trial_number = number;
    t.batch_size = bs;
    t.type = ZBSO_TRIAL_MAB;
    t.status = ZBSO_TRIAL_SUCCEEDED;
    t.energy = energy;
    t.converged = true;
    return t;
}

/* eta 1: cost = energy, reward = -energy; no prior. */
static zbso_job_spec window_spec(int64_t window_size)
{
    zbso_job_spec spec;
    spec_defaults(&spec);
    spec.eta_knob = 1.0;
    spec.max_power = 300;
    spec.window_size = window_size;
    return spec;
}

/* Arms created at the end of pruning: every Succeeded exploration in the order given,
 * whatever window_size says (Zeus's construct_mab). */
static void test_fit_trials_uses_all(void **unused)
{
    zbso_trial t[3] = {succeeded(1, 64, 100), succeeded(4, 64, 20), succeeded(9, 64, 28)};
    double scratch[3];
    zbso_arm arm;
    opt_fit_skips skips;
    for (int64_t w = 0; w <= 2; w++) {
        zbso_job_spec spec = window_spec(w);
        opt_arm_fit_trials(&spec, 64, t, 3, scratch, &arm, &skips);
        assert_int_equal(arm.num_observations, 3);
        assert_int_equal(skips.n, 0);
        assert_true(scratch[0] == -100.0 && scratch[1] == -20.0 && scratch[2] == -28.0);
        /* sum -148, mean -148/3, population variance 1312.888..., q = 1/variance;
         * mean = q * -148 / (3 * q) (prior precision 0). */
        assert_true(arm.param_mean == -49.333333333333336);
        assert_true(arm.param_precision == 0.002317994505494505);
    }
}

/* One refit by Zeus's report rule: the rewards fitted, in order, and the arm. */
static void check_refit(int64_t window_size, const int64_t *others, size_t n_others,
                        const int64_t *want_order, size_t n_want, double want_mean,
                        double want_precision)
{
    /* Costs (eta 1: energy) by trial number; trial 6 is the reported one. */
    static const double energy[10] = {0, 0, 300.4, 300.9, 0, 300.3, 300.1, 300.6, 300.8,
                                      300.2};
    zbso_job_spec spec = window_spec(window_size);
    zbso_trial list[8], reported = succeeded(6, 64, energy[6]);
    double scratch[9];
    zbso_arm arm;
    opt_fit_skips skips;
    for (size_t i = 0; i < n_others; i++)
        list[i] = succeeded(others[i], 64, energy[others[i]]);
    opt_arm_refit(&spec, &reported, list, n_others, scratch, &arm, &skips);
    assert_int_equal(skips.n, 0);
    assert_int_equal(arm.batch_size, 64);
    assert_int_equal(arm.num_observations, (int64_t)n_want);
    for (size_t i = 0; i < n_want; i++) {
        if (scratch[i] != -energy[want_order[i]])
            fail_msg("window %lld: reward %zu is %.17g, want trial %lld's %.17g",
                     (long long)window_size, i, scratch[i], (long long)want_order[i],
                     -energy[want_order[i]]);
    }
    if (arm.param_mean != want_mean || arm.param_precision != want_precision)
        fail_msg("window %lld: arm (%.17g, %.17g), want (%.17g, %.17g)",
                 (long long)window_size, arm.param_mean, arm.param_precision, want_mean,
                 want_precision);
}

/* Trials of batch size 64 finished out of trial-number order: trial 6 reports after 7, 8
 * and 9 have succeeded. Zeus (mab.py report, repository.py get_trial_results_of_bs) reads
 * the other Succeeded trials newest first, at most window_size of them (all for 0); a full
 * window drops its oldest and turns ascending, one not full stays newest first; trial 6
 * comes last. The costs (300.1 .. 300.9) were picked so that every order below sums to a
 * different double than ascending trial order does. Expected arms: numpy's sum of 7 or
 * fewer values is sequential from 0.0; mean = sum / n; variance = sequential sum of squared
 * deviations / n; q = 1 / variance; precision = n * q; mean = q * sum / precision. */
static void test_refit_out_of_order_like_zeus(void **unused)
{
    const int64_t others[6] = {8, 2, 9, 5, 3, 7};  /* any order */
    /* window 0: all, newest first: 9 8 7 5 3 2, then 6. Sum -2103.3 (ascending order gives
     * -2103.2999999999997), mean -300.4714285714286, variance 0.07918367346938525,
     * q 12.628865979381843, precision 7q. The old rule fitted 2 3 5 6 7 8 9: mean
     * -300.47142857142853. */
    const int64_t w0[7] = {9, 8, 7, 5, 3, 2, 6};
    check_refit(0, others, 6, w0, 7, -300.4714285714286, 88.4020618556729);
    /* window 1: newest other (9) is a full window; dropping it leaves trial 6 alone: mean
     * -300.1, exact (variance 0). The old rule kept trial 9's -300.2 and dropped 6. */
    const int64_t w1[1] = {6};
    check_refit(1, others, 6, w1, 1, -300.1, INFINITY);
    /* window 2: 9 8, full: drop 8, then 6: rewards -300.2 -300.1, mean -300.15, variance
     * 0.0024999999999982944, precision 2q. The old rule fitted 8 9: mean -300.5. */
    const int64_t w2[2] = {9, 6};
    check_refit(2, others, 6, w2, 2, -300.15, 800.0000000005458);
    /* window 5: 9 8 7 5 3, full: drop 3, ascending 5 7 8 9, then 6. Sum -1502.0 (ascending
     * 5 6 7 8 9, the old rule's, gives -1502.0000000000002), mean -300.4, variance
     * 0.06800000000000136, precision 5q. */
    const int64_t w5[5] = {5, 7, 8, 9, 6};
    check_refit(5, others, 6, w5, 5, -300.4, 73.5294117647044);
    /* window 5 not full (only 3 and 9 succeeded): newest first 9 3, then 6. Sum -901.1999999999999
     * (3 6 9 gives -901.2), mean -300.4, variance 0.12666666666665607, precision 3q. Window
     * 0 reads the same trials the same way. */
    const int64_t few[2] = {3, 9};
    const int64_t w5_few[3] = {9, 3, 6};
    check_refit(5, few, 2, w5_few, 3, -300.4, 23.68421052631777);
    check_refit(0, few, 2, w5_few, 3, -300.4, 23.68421052631777);
    /* No other trial: the reported one alone, whatever the window. */
    const int64_t alone[1] = {6};
    check_refit(0, NULL, 0, alone, 1, -300.1, INFINITY);
    check_refit(2, NULL, 0, alone, 1, -300.1, INFINITY);
    /* The reported trial in the list (read after it was stored) is not counted twice. */
    const int64_t with_self[3] = {9, 6, 3};
    check_refit(2, with_self, 3, w2, 2, -300.15, 800.0000000005458);
    check_refit(0, with_self, 3, w5_few, 3, -300.4, 23.68421052631777);
}

/* Stored measurements whose cost is not accepted (written by an older zbso) are left out
 * and reported; the arm is fitted from the rest. */
static void test_fit_skips_unaccepted_costs(void **unused)
{
    zbso_job_spec spec = window_spec(0);
    spec.eta_knob = 0.5;   /* cost = 0.5 * energy + 150 * time */
    const double over = nextafter(OPT_COST_MAX, INFINITY);
    zbso_trial t[4] = {succeeded(1, 64, 100), succeeded(2, 64, 1e308), succeeded(3, 64, 300),
                       succeeded(4, 64, 2 * over)};
    t[1].time = 1e308;     /* 0.5e308 + inf: inf */
    zbso_trial bad = t[1];
    double scratch[5];
    zbso_arm arm;
    opt_fit_skips skips;
    opt_arm_fit_trials(&spec, 64, t, 4, scratch, &arm, &skips);
    assert_int_equal(arm.num_observations, 2);
    assert_true(scratch[0] == -50.0 && scratch[1] == -150.0);
    assert_int_equal(skips.n, 2);
    assert_int_equal(skips.trial_number, 2);
    assert_true(isinf(skips.cost));
    /* rewards -50 -150: mean -100, variance 2500, precision 2/2500. */
    assert_true(arm.param_mean == -100.0 && arm.param_precision == 0.0008);

    /* A refit: trial 5 reported; 4 (cost just over the bound) is skipped too. */
    zbso_trial reported = succeeded(5, 64, 200);
    opt_arm_refit(&spec, &reported, t, 4, scratch, &arm, &skips);
    assert_int_equal(arm.num_observations, 3);
    assert_true(scratch[0] == -150.0 && scratch[1] == -50.0 && scratch[2] == -100.0);
    assert_int_equal(skips.n, 2);
    assert_int_equal(skips.trial_number, 4);   /* newest first */
    assert_true(skips.cost == over);
    /* Only unaccepted ones: all skipped gives the prior with 0 observations. */
    spec.mab_prior_mean = -7;
    spec.mab_prior_precision = 0.5;
    opt_arm_fit_trials(&spec, 64, &bad, 1, scratch, &arm, &skips);
    assert_int_equal(arm.num_observations, 0);
    assert_true(arm.param_mean == -7.0 && arm.param_precision == 0.5);
    assert_int_equal(skips.n, 1);
}

static void test_cost_accepted_bounds(void **unused)
{
    assert_true(opt_cost_accepted(0.0));
    assert_true(opt_cost_accepted(-0.0));
    assert_true(opt_cost_accepted(OPT_COST_MIN));
    assert_true(opt_cost_accepted(OPT_COST_MAX));
    assert_true(opt_cost_accepted(2000.0));
    assert_false(opt_cost_accepted(nextafter(OPT_COST_MIN, 0.0)));
    assert_false(opt_cost_accepted(nextafter(OPT_COST_MAX, INFINITY)));
    assert_false(opt_cost_accepted(5e-324));
    assert_false(opt_cost_accepted(-1.0));
    assert_false(opt_cost_accepted(INFINITY));
    assert_false(opt_cost_accepted(NAN));
}

/* The derivation in stats.c, tried at its corners: rewards at the cost bounds, zeros among
 * them, nearly equal ones (tiny variance), OPT_FIT_MAX_REWARDS of them, priors at their
 * bounds. Every fitted arm has a finite mean and a positive precision, infinite only with
 * variance 0. */
static void test_fit_finite_at_the_bounds(void **unused)
{
    const double c = OPT_COST_MIN, C = OPT_COST_MAX;
    const double c_next = nextafter(c, 1.0), C_prev = nextafter(C, 0.0);
    const size_t big = OPT_FIT_MAX_REWARDS;
    double *r = malloc(big * sizeof *r);
    assert_non_null(r);
    const double priors[][2] = {{0, 0}, {-OPT_PRIOR_MAX, OPT_PRIOR_MAX},
                                {OPT_PRIOR_MAX, OPT_PRIOR_MAX}, {OPT_PRIOR_MAX, 5e-324},
                                {-1, 1e-300}, {OPT_PRIOR_MAX, 0}};
    for (int shape = 0; shape < 9; shape++) {
        size_t n;
        switch (shape) {
        case 0: n = 2; r[0] = -c; r[1] = -c_next; break;
        case 1: n = 2; r[0] = 0; r[1] = -c; break;
        case 2: n = 2; r[0] = -C; r[1] = -C_prev; break;
        case 3: n = 2; r[0] = -C; r[1] = -c; break;
        case 4: n = 3; r[0] = -C; r[1] = 0; r[2] = -c; break;
        case 5: n = big; for (size_t i = 0; i < n; i++) r[i] = -C; r[7] = 0; break;
        case 6: n = big; for (size_t i = 0; i < n; i++) r[i] = -c; r[n - 1] = 0; break;
        case 7: n = big; for (size_t i = 0; i < n; i++) r[i] = i % 2 ? -c : -c_next; break;
        default: n = big; for (size_t i = 0; i < n; i++) r[i] = i % 3 ? -C : -C_prev; break;
        }
        for (size_t p = 0; p < sizeof priors / sizeof priors[0]; p++) {
            zbso_arm arm;
            opt_arm_fit(8, priors[p][0], priors[p][1], r, n, &arm);
            double v = opt_var(r, n);
            if (!isfinite(opt_sum(r, n)) || !isfinite(v) || !isfinite(arm.param_mean) ||
                !(arm.param_precision > 0) || (isinf(arm.param_precision) && v != 0.0))
                fail_msg("shape %d prior %zu: sum %g var %g -> arm (%g, %g)", shape, p,
                         opt_sum(r, n), v, arm.param_mean, arm.param_precision);
        }
    }
    free(r);
}

/* Exploration phase: the answer is the first arm of numpy's permutation that has fewer
 * than mab_num_explorations observations. */
static void test_mab_exploration_order(void **unused)
{
    json_t *root = load_vectors();
    zbso_arm arms[MAX_ARMS];
    size_t n = load_arms(root, arms);
    json_t *order = json_object_get(json_array_get(json_object_get(root, "interleaved"), 0),
                                    "choice_order");
    int64_t first = json_integer_value(json_array_get(order, 0));
    int64_t second = json_integer_value(json_array_get(order, 1));
    int64_t last = json_integer_value(json_array_get(order, n - 1));
    zbso_rng rng;
    int64_t bs = 0;
    zbso_err err;

    rng_seed_u64(&rng, INTERLEAVED_SEED);
    assert_int_equal(opt_mab_choose(&rng, arms, n, 2, &bs, &err), 0);
    assert_int_equal(bs, first);

    /* The first arm of the order has its explorations: the second one is next. */
    for (size_t i = 0; i < n; i++)
        arms[i].num_observations = arms[i].batch_size == first ? 2 : 1;
    rng_seed_u64(&rng, INTERLEAVED_SEED);
    assert_int_equal(opt_mab_choose(&rng, arms, n, 2, &bs, &err), 0);
    assert_int_equal(bs, second);

    /* Only the last arm of the order lacks observations. */
    for (size_t i = 0; i < n; i++)
        arms[i].num_observations = arms[i].batch_size == last ? 0 : 5;
    rng_seed_u64(&rng, INTERLEAVED_SEED);
    assert_int_equal(opt_mab_choose(&rng, arms, n, 2, &bs, &err), 0);
    assert_int_equal(bs, last);
    json_decref(root);
}

/* Thompson sampling: every interleaved case is one choice (permutation + one normal per
 * arm, the infinite-precision arm included); the winner is the largest recorded normal,
 * and the generator ends exactly where numpy's did. */
static void test_thompson_sampling(void **unused)
{
    json_t *root = load_vectors();
    json_t *cases = json_object_get(root, "interleaved"), *c;
    zbso_arm arms[MAX_ARMS];
    size_t n = load_arms(root, arms), i;
    zbso_rng rng;
    zbso_err err;
    size_t winners_not_first = 0;

    for (size_t k = 0; k < n; k++)
        arms[k].num_observations = 3;
    assert_true(json_array_size(cases) > 0);
    rng_seed_u64(&rng, INTERLEAVED_SEED);
    json_array_foreach(cases, i, c) {
        json_t *normals = json_object_get(c, "normals_in_arm_order");
        size_t best = 0;
        double best_v = 0;
        int64_t bs = 0;
        for (size_t k = 0; k < n; k++) {
            double v = strtod(json_string_value(json_array_get(normals, k)), NULL);
            if (k == 0 || v > best_v) {
                best = k;
                best_v = v;
            }
        }
        assert_int_equal(opt_mab_choose(&rng, arms, n, 2, &bs, &err), 0);
        assert_int_equal(bs, arms[best].batch_size);
        if (best != 0)
            winners_not_first++;
    }
    assert_true(winners_not_first > 0);
    json_t *after = json_object_get(json_array_get(cases, json_array_size(cases) - 1),
                                    "state_after");
    uint64_t hi, lo;
    parse_u128(json_string_value(json_object_get(after, "state")), &hi, &lo);
    assert_true(rng.state_hi == hi && rng.state_lo == lo);
    parse_u128(json_string_value(json_object_get(after, "uinteger")), &hi, &lo);
    assert_int_equal(rng.has_uint32, json_integer_value(json_object_get(after, "has_uint32")));
    assert_int_equal(rng.uinteger, lo);
    json_decref(root);
}

/* Equal samples (two exact arms with the same mean): the smaller batch size wins. */
static void test_thompson_tie_first_wins(void **unused)
{
    zbso_arm arms[2] = {{16, -50.0, INFINITY, 4}, {32, -50.0, INFINITY, 4}};
    zbso_rng rng;
    zbso_err err;
    int64_t bs = 0;
    rng_seed_u64(&rng, 7);
    assert_int_equal(opt_mab_choose(&rng, arms, 2, 2, &bs, &err), 0);
    assert_int_equal(bs, 16);
    assert_int_equal(opt_mab_choose(&rng, arms, 0, 2, &bs, &err), ZBSO_EINTERNAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sum_is_pairwise),
        cmocka_unit_test(test_mean_var),
        cmocka_unit_test(test_cost_formula),
        cmocka_unit_test(test_fmt_double_like_python),
        cmocka_unit_test(test_arm_fit_formulas),
        cmocka_unit_test(test_arm_fit_infinite_and_empty),
        cmocka_unit_test(test_fit_trials_uses_all),
        cmocka_unit_test(test_refit_out_of_order_like_zeus),
        cmocka_unit_test(test_fit_skips_unaccepted_costs),
        cmocka_unit_test(test_cost_accepted_bounds),
        cmocka_unit_test(test_fit_finite_at_the_bounds),
        cmocka_unit_test(test_mab_exploration_order),
        cmocka_unit_test(test_thompson_sampling),
        cmocka_unit_test(test_thompson_tie_first_wins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
