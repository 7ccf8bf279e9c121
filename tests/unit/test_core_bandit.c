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

static void test_window_size(void **unused)
{
    zbso_job_spec spec;
    zbso_trial t[3] = {succeeded(1, 64, 100), succeeded(4, 64, 20), succeeded(9, 64, 28)};
    double scratch[3];
    zbso_arm arm;
    spec_defaults(&spec);
    spec.eta_knob = 1.0;  /* cost = energy, reward = -energy */
    spec.max_power = 300;
    spec.window_size = 2;
    /* Last two: rewards -20, -28: mean -24, variance 16, precision 2/16 = 0.125. */
    opt_arm_fit_trials(&spec, 64, t, 3, scratch, &arm);
    assert_int_equal(arm.num_observations, 2);
    assert_true(arm.param_precision == 0.125);
    assert_true(arm.param_mean == -24.0);
    /* window 0: all three: mean -148/3, var = mean of squared deviations. */
    spec.window_size = 0;
    opt_arm_fit_trials(&spec, 64, t, 3, scratch, &arm);
    assert_int_equal(arm.num_observations, 3);
    double r[3] = {-100, -20, -28};
    assert_true(arm.param_precision == 3.0 * (1.0 / opt_var(r, 3)));
    /* window larger than the history: all of it. */
    spec.window_size = 10;
    opt_arm_fit_trials(&spec, 64, t, 3, scratch, &arm);
    assert_int_equal(arm.num_observations, 3);
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
        cmocka_unit_test(test_window_size),
        cmocka_unit_test(test_mab_exploration_order),
        cmocka_unit_test(test_thompson_sampling),
        cmocka_unit_test(test_thompson_tie_first_wins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
