/* test_clock.c: util/clock: timespec arithmetic exactly, and the clocks against each
 * other and against time() (with margins that hold on a loaded machine). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "util/clock.h"

static void check_ts(struct timespec ts, time_t sec, long nsec)
{
    assert_int_equal(ts.tv_sec, sec);
    assert_int_equal(ts.tv_nsec, nsec);
}

static void test_ts_add(void **state)
{
    struct timespec t = {5, 999999999};
    check_ts(clk_ts_add(t, 0), 5, 999999999);
    check_ts(clk_ts_add(t, 0.000000002), 6, 1);
    check_ts(clk_ts_add(t, 0.010), 6, 9999999);
    t.tv_nsec = 500000000;
    check_ts(clk_ts_add(t, 2.75), 8, 250000000);
    check_ts(clk_ts_add(t, 0.25), 5, 750000000);
    check_ts(clk_ts_add(t, 0.5), 6, 0);
    t.tv_nsec = 0;
    check_ts(clk_ts_add(t, 86400.0), 86405, 0);
}

static double ts_s(struct timespec ts)
{
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_clocks_agree(void **state)
{
    double a = clk_mono_s();
    int64_t ns = clk_mono_ns();
    double b = clk_mono_s();
    assert_true(a <= b);
    assert_true((double)ns / 1e9 >= a - 1e-6 && (double)ns / 1e9 <= b + 1e-6);
    double m = ts_s(clk_now(CLOCK_MONOTONIC));
    assert_true(m >= b && m - b < 5.0);

    time_t before = time(NULL);
    double r = clk_real_s();
    time_t after = time(NULL);
    assert_true(r >= (double)before && r < (double)after + 1.0);
    double rt = ts_s(clk_now(CLOCK_REALTIME));
    assert_true(rt >= r && rt - r < 5.0);
}

static void test_deadline(void **state)
{
    double now = clk_mono_s();
    double d = ts_s(clk_deadline(CLOCK_MONOTONIC, 1.5));
    assert_true(d - now >= 1.5 - 1e-6 && d - now < 1.5 + 5.0);
    double rnow = clk_real_s();
    double rd = ts_s(clk_deadline(CLOCK_REALTIME, 0.25));
    assert_true(rd - rnow >= 0.25 - 1e-6 && rd - rnow < 0.25 + 5.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ts_add),
        cmocka_unit_test(test_clocks_agree),
        cmocka_unit_test(test_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
