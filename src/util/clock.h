/* clock.h: the clocks in the units the code uses: CLOCK_MONOTONIC for intervals,
 * deadlines and sleeps, CLOCK_REALTIME for timestamps, and timespec arithmetic for
 * pthread_cond_timedwait. The prefix is clk_ because POSIX reserves clock_ in <time.h>.
 * clock_gettime cannot fail for these clocks on Linux, so nothing here returns an error. */
#ifndef ZBSO_UTIL_CLOCK_H
#define ZBSO_UTIL_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in seconds (for intervals: differences of two readings). */
double clk_mono_s(void);

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t clk_mono_ns(void);

/* CLOCK_REALTIME in seconds since the Unix epoch. */
double clk_real_s(void);

/* The time on clock id (CLOCK_MONOTONIC or CLOCK_REALTIME) as a timespec. */
struct timespec clk_now(clockid_t id);

/* ts plus seconds (>= 0), with tv_nsec brought back into [0, 1e9). */
struct timespec clk_ts_add(struct timespec ts, double seconds);

/* The absolute time seconds (>= 0) from now on clock id: the deadline to hand to
 * pthread_cond_timedwait for a condition variable on that clock. */
struct timespec clk_deadline(clockid_t id, double seconds);

/* Initializes cv to time its waits on CLOCK_MONOTONIC (deadlines from
 * clk_deadline(CLOCK_MONOTONIC, ...)), so that a change of the wall clock moves no wait.
 * Returns pthread_cond_init's result. */
int clk_cond_init_mono(pthread_cond_t *cv);

/* Sleeps for seconds on CLOCK_MONOTONIC (nothing when seconds <= 0 or not a number). A
 * signal handler that runs meanwhile does not cut the sleep short: it ends at the deadline
 * taken on entry. */
void clk_sleep_s(double seconds);

#endif
