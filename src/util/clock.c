/* clock.c: the clock helpers of clock.h, over clock_gettime. */
#include "util/clock.h"

#include <errno.h>

#define NS_PER_S 1000000000L

double clk_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t clk_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

double clk_real_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct timespec clk_now(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts;
}

struct timespec clk_ts_add(struct timespec ts, double seconds)
{
    time_t whole = (time_t)seconds;
    long ns = ts.tv_nsec + (long)((seconds - (double)whole) * 1e9);
    ts.tv_sec += whole + ns / NS_PER_S;
    ts.tv_nsec = ns % NS_PER_S;
    return ts;
}

struct timespec clk_deadline(clockid_t id, double seconds)
{
    return clk_ts_add(clk_now(id), seconds);
}

int clk_cond_init_mono(pthread_cond_t *cv)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}

void clk_sleep_s(double seconds)
{
    if (!(seconds > 0))
        return;
    struct timespec until = clk_deadline(CLOCK_MONOTONIC, seconds);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
        ;
}
