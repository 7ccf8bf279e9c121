/* sampler.c: the background thread that integrates the power of GPUs without an energy
 * counter (trapezoid rule, one sample every MON_SAMPLE_PERIOD_S; the power call costs
 * under 1 us). A failed sample is counted, never guessed over: a window that spans one
 * fails. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "monitor/monitorInt.h"
#include "util/clock.h"

/* Takes one power sample of g at now_s and folds it into g->sample. Called with the
 * sampler's mutex held (the NVML call is about 1 us, so holding it is cheap). */
static void sample_one(struct zbso_monitor *mon, mon_gpu *g, double now_s)
{
    mon_sample_state *st = &g->sample;
    unsigned int mw = 0;
    nvmlReturn_t nrc = mon->nvml.device_get_power_usage(g->dev, &mw);
    if (nrc != NVML_SUCCESS) {
        st->valid = false;
        st->fail_seq++;
        snprintf(st->msg, sizeof st->msg,
                 "GPU %d (NVML index %u): reading the power failed: %s (NVML error %d)",
                 g->cuda_index, g->nvml_index, nvml_lib_strerror(&mon->nvml, nrc), nrc);
        return;
    }
    double w = (double)mw / 1000.0;
    /* After a failure the interval since the last good sample is unknown: start over
     * from this sample rather than bridge the gap (windows across it fail anyway). */
    if (st->valid)
        st->integral_j += 0.5 * (st->last_w + w) * (now_s - st->last_t_s);
    st->valid = true;
    st->last_t_s = now_s;
    st->last_w = w;
}

/* The thread: samples every sampled GPU each period until told to stop. Periods are
 * counted from a fixed start so the rate does not drift with the time a sample takes. */
static void *sampler_main(void *arg)
{
    struct zbso_monitor *mon = arg;
    mon_sampler *s = &mon->sampler;
    struct timespec next = clk_now(CLOCK_MONOTONIC);

    pthread_mutex_lock(&s->mu);
    for (;;) {
        next = clk_ts_add(next, MON_SAMPLE_PERIOD_S);
        int wrc = 0;
        while (!s->stop && wrc != ETIMEDOUT)
            wrc = pthread_cond_timedwait(&s->stop_cv, &s->mu, &next);
        if (s->stop)
            break;
        double now_s = clk_mono_s();
        for (unsigned i = 0; i < mon->n_gpus; i++)
            if (!mon->gpus[i].has_counter)
                sample_one(mon, &mon->gpus[i], now_s);
        /* A stalled thread (suspended process) must not try to catch up in a burst. */
        struct timespec cur = clk_now(CLOCK_MONOTONIC);
        if (cur.tv_sec > next.tv_sec + 1)
            next = cur;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int mon_sampler_start(struct zbso_monitor *mon, zbso_err *err)
{
    mon_sampler *s = &mon->sampler;
    int rc = 0;

    memset(s, 0, sizeof *s);
    if (mon->n_sampled == 0)
        return 0;
    pthread_mutex_init(&s->mu, NULL);
    clk_cond_init_mono(&s->stop_cv);
    s->started = true;

    double now_s = clk_mono_s();
    for (unsigned i = 0; i < mon->n_gpus; i++) {
        mon_gpu *g = &mon->gpus[i];
        if (g->has_counter)
            continue;
        sample_one(mon, g, now_s);
        if (!g->sample.valid) {
            rc = err_set(err, ZBSO_ERUNTIME,
                         "%s; this GPU has no energy counter, so its power must be readable",
                         g->sample.msg);
            goto out;
        }
    }
    int prc = pthread_create(&s->thread, NULL, sampler_main, mon);
    if (prc != 0) {
        rc = err_set(err, ZBSO_ERUNTIME, "cannot start the power-sampling thread: %s",
                     strerror(prc));
        goto out;
    }
out:
    if (rc < 0) {
        pthread_cond_destroy(&s->stop_cv);
        pthread_mutex_destroy(&s->mu);
        s->started = false;
    }
    return rc;
}

void mon_sampler_stop(mon_sampler *s)
{
    if (!s->started)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->stop_cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->stop_cv);
    pthread_mutex_destroy(&s->mu);
    s->started = false;
}

void mon_sampler_read(struct zbso_monitor *mon, mon_gpu *g, double now_s, mon_reading *out)
{
    mon_sampler *s = &mon->sampler;
    mon_sample_state *st = &g->sample;

    pthread_mutex_lock(&s->mu);
    out->fail_seq = st->fail_seq;
    snprintf(out->msg, sizeof out->msg, "%s", st->msg);
    out->rc = st->valid ? 0 : ZBSO_ERUNTIME;
    /* The last sample may postdate now_s by a hair (taken between the edge's clock read
     * and this lock): the extrapolation then runs backwards over the same power. */
    out->sampled_j = st->integral_j + st->last_w * (now_s - st->last_t_s);
    pthread_mutex_unlock(&s->mu);
}
