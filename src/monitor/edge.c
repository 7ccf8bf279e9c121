/* edge.c: reading all monitored GPUs at a window edge, the energy counters in parallel on
 * a pool of threads created once per monitor (one NVML energy read costs ~4-6 ms on an
 * H200, so 8 GPUs read one after another would cost 8x). Never reads in a loop. */
#include <stdio.h>
#include <string.h>

#include "monitor/monitorInt.h"

/* Reads g's energy counter into g->edge (rc 0, or ZBSO_ERUNTIME with the reason). */
static void read_counter(const nvml_lib *nvml, mon_gpu *g)
{
    mon_reading *r = &g->edge;
    nvmlReturn_t nrc = nvml->device_get_total_energy_consumption(g->dev, &r->counter_mj);
    if (nrc == NVML_SUCCESS) {
        r->rc = 0;
        r->msg[0] = '\0';
        return;
    }
    r->rc = ZBSO_ERUNTIME;
    snprintf(r->msg, sizeof r->msg,
             "GPU %d (NVML index %u): reading the energy counter failed: %s (NVML error %d)",
             g->cuda_index, g->nvml_index, nvml_lib_strerror(nvml, nrc), nrc);
}

/* A pool thread: sleeps until the edge generation changes, reads its GPU, and the last
 * one to finish wakes the caller. Exits when the pool stops. */
static void *worker_main(void *arg)
{
    mon_worker *w = arg;
    mon_edge_pool *pool = w->pool;

    /* Generation 0 is the pool's at creation; reading pool->gen here instead would miss
     * an edge that started before this thread first ran, and the caller would wait. */
    unsigned long seen = 0;
    pthread_mutex_lock(&pool->mu);
    for (;;) {
        while (pool->gen == seen && !pool->stop)
            pthread_cond_wait(&pool->go_cv, &pool->mu);
        if (pool->stop)
            break;
        seen = pool->gen;
        pthread_mutex_unlock(&pool->mu);
        read_counter(w->nvml, w->gpu);
        pthread_mutex_lock(&pool->mu);
        if (--pool->pending == 0)
            pthread_cond_signal(&pool->done_cv);
    }
    pthread_mutex_unlock(&pool->mu);
    return NULL;
}

int mon_edge_pool_start(struct zbso_monitor *mon, zbso_err *err)
{
    mon_edge_pool *pool = &mon->pool;
    bool caller_has_one = false;
    int rc = 0;

    memset(pool, 0, sizeof *pool);
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->go_cv, NULL);
    pthread_cond_init(&pool->done_cv, NULL);
    pool->started = true;
    for (unsigned i = 0; i < mon->n_gpus; i++) {
        mon_gpu *g = &mon->gpus[i];
        g->pooled = false;
        if (!g->has_counter)
            continue;
        if (!caller_has_one) {
            caller_has_one = true;
            continue;
        }
        mon_worker *w = &pool->workers[pool->n_threads];
        w->pool = pool;
        w->gpu = g;
        w->nvml = &mon->nvml;
        int prc = pthread_create(&pool->threads[pool->n_threads], NULL, worker_main, w);
        if (prc != 0) {
            rc = err_set(err, ZBSO_ERUNTIME,
                         "cannot start the energy reader thread for GPU %d: %s",
                         g->cuda_index, strerror(prc));
            goto out;
        }
        g->pooled = true;
        pool->n_threads++;
    }
out:
    if (rc < 0)
        mon_edge_pool_stop(pool);
    return rc;
}

void mon_edge_pool_stop(mon_edge_pool *pool)
{
    if (!pool->started)
        return;
    pthread_mutex_lock(&pool->mu);
    pool->stop = true;
    pthread_cond_broadcast(&pool->go_cv);
    pthread_mutex_unlock(&pool->mu);
    for (unsigned i = 0; i < pool->n_threads; i++)
        pthread_join(pool->threads[i], NULL);
    pthread_cond_destroy(&pool->done_cv);
    pthread_cond_destroy(&pool->go_cv);
    pthread_mutex_destroy(&pool->mu);
    pool->n_threads = 0;
    pool->started = false;
}

void mon_edge_read(struct zbso_monitor *mon, double now_s)
{
    mon_edge_pool *pool = &mon->pool;

    if (pool->n_threads > 0) {
        pthread_mutex_lock(&pool->mu);
        pool->gen++;
        pool->pending = pool->n_threads;
        pthread_cond_broadcast(&pool->go_cv);
        pthread_mutex_unlock(&pool->mu);
    }
    /* The caller's share (one counter GPU and the sampled ones) overlaps the workers'. */
    for (unsigned i = 0; i < mon->n_gpus; i++) {
        mon_gpu *g = &mon->gpus[i];
        if (!g->has_counter)
            mon_sampler_read(mon, g, now_s, &g->edge);
        else if (!g->pooled)
            read_counter(&mon->nvml, g);
    }
    if (pool->n_threads > 0) {
        pthread_mutex_lock(&pool->mu);
        while (pool->pending > 0)
            pthread_cond_wait(&pool->done_cv, &pool->mu);
        pthread_mutex_unlock(&pool->mu);
    }
}
