/* test_clock.c: util/clock: timespec arithmetic exactly, the clocks against each other
 * and against time(), and sleeps (with margins that hold on a loaded machine). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
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

    /* glibc's time() reads the coarse clock, up to a tick (a few ms) behind
     * CLOCK_REALTIME: just past a second's boundary it may still say the second before,
     * so allow 50 ms on top of the second that time() truncates. */
    time_t before = time(NULL);
    double r = clk_real_s();
    time_t after = time(NULL);
    assert_true(r >= (double)before && r < (double)after + 1.05);
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

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

/* A sleep lasts its whole time although a signal handler runs every 5 ms meanwhile (no
 * SA_RESTART: each signal interrupts the sleeping call); no time or a time that is not a
 * number returns at once. */
static void test_sleep(void **state)
{
    struct sigaction sa;
    struct itimerval every = {{0, 5000}, {0, 5000}}, off;
    memset(&sa, 0, sizeof sa);
    memset(&off, 0, sizeof off);
    sa.sa_handler = on_alarm;
    assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
    assert_int_equal(setitimer(ITIMER_REAL, &every, NULL), 0);
    double t0 = clk_mono_s();
    clk_sleep_s(0.2);
    double took = clk_mono_s() - t0;
    assert_int_equal(setitimer(ITIMER_REAL, &off, NULL), 0);
    assert_true(alarms > 0);
    assert_true(took >= 0.2 && took < 5.0);

    t0 = clk_mono_s();
    clk_sleep_s(0);
    clk_sleep_s(-1);
    clk_sleep_s(NAN);
    assert_true(clk_mono_s() - t0 < 0.5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ts_add),
        cmocka_unit_test(test_clocks_agree),
        cmocka_unit_test(test_deadline),
        cmocka_unit_test(test_sleep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
