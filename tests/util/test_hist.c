/* test_hist.c: util/hist: which bucket each duration lands in (bounds inclusive, as
 * Prometheus's le), the sum, and exact totals when many threads add at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>

#include <cmocka.h>

#include "util/hist.h"

static void test_buckets(void **state)
{
    zbso_hist *h = calloc(1, sizeof *h);
    hist_snapshot s;
    assert_non_null(h);
    hist_read(h, &s);
    assert_int_equal(s.count, 0);
    assert_true(s.sum_s == 0.0);
    /* 100 us is in the first bucket (le="0.0001"), 100 us + 1 ns in the second. */
    hist_observe_ns(h, 100000);
    hist_observe_ns(h, 100001);
    hist_observe_ns(h, -5);                 /* counts as 0: first bucket */
    hist_observe_ns(h, 10000000000);        /* 10 s: the last finite bucket */
    hist_observe_ns(h, 10000000001);        /* over it: +Inf only */
    hist_read(h, &s);
    assert_int_equal(s.count, 5);
    assert_int_equal(s.cumulative[0], 2);
    assert_int_equal(s.cumulative[1], 3);
    assert_int_equal(s.cumulative[HIST_BUCKETS - 2], 3);
    assert_int_equal(s.cumulative[HIST_BUCKETS - 1], 4);
    assert_int_equal(s.cumulative[HIST_BUCKETS], 5);
    assert_true(s.sum_s == (100000.0 + 100001.0 + 10000000000.0 + 10000000001.0) / 1e9);
    for (size_t b = 1; b < HIST_BUCKETS; b++)
        assert_true(hist_bounds_s[b] > hist_bounds_s[b - 1]);
    free(h);
}

#define THREADS 16
#define ADDS 20000

static void *adder(void *arg)
{
    zbso_hist *h = arg;
    for (int i = 0; i < ADDS; i++)
        hist_observe_ns(h, (int64_t)(i % 3) * 1000000);   /* 0, 1 ms, 2 ms */
    return NULL;
}

static void test_threads(void **state)
{
    zbso_hist *h = calloc(1, sizeof *h);
    pthread_t t[THREADS];
    hist_snapshot s;
    assert_non_null(h);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, adder, h), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    hist_read(h, &s);
    uint64_t n = (uint64_t)THREADS * ADDS;
    assert_int_equal(s.count, n);
    uint64_t zeros = (uint64_t)THREADS * ((ADDS + 2) / 3);
    uint64_t ones = (uint64_t)THREADS * ((ADDS + 1) / 3);
    assert_int_equal(s.cumulative[0], zeros);
    assert_int_equal(s.cumulative[3], zeros + ones);      /* le="0.001" */
    assert_int_equal(s.cumulative[4], n);                 /* le="0.002" */
    uint64_t twos = n - zeros - ones;
    assert_true(s.sum_s == (double)(ones * 1000000 + twos * 2000000) / 1e9);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buckets),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
