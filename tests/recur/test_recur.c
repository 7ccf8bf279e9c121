/* test_recur.c: the retry policy shared by `zbso run` and `zbso simulate`: each verdict,
 * the default rule's limits, the 20-try limit and the cost bound, exactly. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "recur/recur.h"

static void test_reached_goes_on_and_lowers_the_bound(void **state)
{
    recur_policy p;
    recur_init(&p, 32, true, 2.0);
    assert_true(isinf(recur_cost_bound(&p)));
    assert_int_equal(recur_after_try(&p, 1, 1, 32, true, 100.0), RECUR_NEXT);
    assert_true(recur_cost_bound(&p) == 200.0);
    /* A dearer success leaves the bound; a cheaper one lowers it. */
    assert_int_equal(recur_after_try(&p, 2, 1, 64, true, 150.0), RECUR_NEXT);
    assert_true(recur_cost_bound(&p) == 200.0);
    assert_int_equal(recur_after_try(&p, 3, 2, 16, true, 40.0), RECUR_NEXT);
    assert_true(recur_cost_bound(&p) == 80.0);
    /* A try that did not reach the target never lowers it, however cheap. */
    assert_int_equal(recur_after_try(&p, 4, 1, 16, false, 1.0), RECUR_RETRY);
    assert_true(recur_cost_bound(&p) == 80.0);
}

static void test_no_beta_no_bound(void **state)
{
    recur_policy p;
    recur_init(&p, 32, false, 2.0);
    assert_int_equal(recur_after_try(&p, 1, 1, 32, true, 100.0), RECUR_NEXT);
    assert_true(p.has_min_cost && p.min_cost == 100.0);
    assert_true(isinf(recur_cost_bound(&p)));
}

static void test_default_must_reach_the_target_first(void **state)
{
    recur_policy p;
    recur_init(&p, 32, true, 2.0);
    assert_int_equal(recur_after_try(&p, 1, 1, 32, false, 10.0), RECUR_FAIL_DEFAULT);
    /* Only the first try of the first recurrence, and only with the default: a job that
     * already had trials may start with another batch size, retried like any other. */
    recur_init(&p, 32, true, 2.0);
    assert_int_equal(recur_after_try(&p, 1, 1, 16, false, 10.0), RECUR_RETRY);
    assert_int_equal(recur_after_try(&p, 1, 2, 32, false, 10.0), RECUR_RETRY);
    assert_int_equal(recur_after_try(&p, 2, 1, 32, false, 10.0), RECUR_RETRY);
}

static void test_max_tries_set_by_caller(void **state)
{
    recur_policy p;
    (void)state;
    recur_init(&p, 32, false, 0);
    assert_int_equal(p.max_tries, RECUR_MAX_TRIES);
    p.max_tries = 3;
    assert_int_equal(recur_after_try(&p, 2, 1, 64, false, 1.0), RECUR_RETRY);
    assert_int_equal(recur_after_try(&p, 2, 2, 64, false, 1.0), RECUR_RETRY);
    assert_int_equal(recur_after_try(&p, 2, 3, 64, false, 1.0), RECUR_FAIL_TRIES);
    p.max_tries = 1;
    assert_int_equal(recur_after_try(&p, 3, 1, 64, false, 1.0), RECUR_FAIL_TRIES);
}

static void test_twenty_tries(void **state)
{
    recur_policy p;
    recur_init(&p, 32, true, 2.0);
    assert_int_equal(RECUR_MAX_TRIES, 20);
    for (int t = 1; t < 20; t++)
        assert_int_equal(recur_after_try(&p, 2, t, 64, false, 1.0), RECUR_RETRY);
    assert_int_equal(recur_after_try(&p, 2, 20, 64, false, 1.0), RECUR_FAIL_TRIES);
    assert_int_equal(recur_after_try(&p, 3, 20, 64, true, 1.0), RECUR_NEXT);
    assert_int_equal(recur_after_try(&p, 1, 20, 16, false, 1.0), RECUR_FAIL_TRIES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reached_goes_on_and_lowers_the_bound),
        cmocka_unit_test(test_no_beta_no_bound),
        cmocka_unit_test(test_default_must_reach_the_target_first),
        cmocka_unit_test(test_twenty_tries),
        cmocka_unit_test(test_max_tries_set_by_caller),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
