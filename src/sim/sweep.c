/* sweep.c: many (workload, seed) simulations on a pool of threads, each its own
 * sim_simulate with its own store, so the results do not depend on the thread count.
 * Progress is reported from the calling thread only. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "sim/sim.h"
#include "util/clock.h"

typedef struct sweep {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    sim_workload *const *ws;
    size_t n_seeds, total, next, done;
    uint64_t seed_lo;
    const sim_options *o;
    sim_result *results;
    int rc;
    zbso_err err;
} sweep;

static void *sweep_worker(void *arg)
{
    sweep *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        if (s->next >= s->total || s->rc < 0) {
            pthread_mutex_unlock(&s->mu);
            break;
        }
        size_t i = s->next++;
        pthread_mutex_unlock(&s->mu);

        zbso_err err;
        err_clear(&err);
        int rc = sim_simulate(s->ws[i / s->n_seeds], s->o, s->seed_lo + i % s->n_seeds,
                              &s->results[i], &err);
        pthread_mutex_lock(&s->mu);
        s->done++;
        if (rc < 0 && s->rc == 0) {
            s->rc = rc;
            s->err = err;
        }
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->mu);
    }
    return NULL;
}

int sim_sweep(sim_workload *const *ws, size_t n_ws, uint64_t seed_lo, uint64_t seed_hi,
              const sim_options *o, int n_threads, sim_result *results,
              void (*progress)(void *ctx, size_t done, size_t total), void *progress_ctx,
              zbso_err *err)
{
    sweep s = {.ws = ws, .n_seeds = (size_t)(seed_hi - seed_lo + 1), .seed_lo = seed_lo,
               .o = o, .results = results};
    pthread_t threads[256];
    int n_started = 0;
    s.total = n_ws * s.n_seeds;
    memset(results, 0, s.total * sizeof *results);
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cond, NULL);
    if (n_threads < 1)
        n_threads = 1;
    if ((size_t)n_threads > s.total)
        n_threads = (int)s.total;
    if (n_threads > (int)(sizeof threads / sizeof threads[0]))
        n_threads = (int)(sizeof threads / sizeof threads[0]);
    for (int t = 0; t < n_threads; t++) {
        if (pthread_create(&threads[t], NULL, sweep_worker, &s) != 0)
            break;
        n_started++;
    }
    if (n_started == 0) {
        sweep_worker(&s);
    } else {
        pthread_mutex_lock(&s.mu);
        while (s.done < s.total && !(s.rc < 0 && s.done == s.next)) {
            struct timespec until = clk_deadline(CLOCK_REALTIME, 0.25);
            pthread_cond_timedwait(&s.cond, &s.mu, &until);
            if (progress != NULL) {
                size_t done = s.done;
                pthread_mutex_unlock(&s.mu);
                progress(progress_ctx, done, s.total);
                pthread_mutex_lock(&s.mu);
            }
        }
        pthread_mutex_unlock(&s.mu);
        for (int t = 0; t < n_started; t++)
            pthread_join(threads[t], NULL);
    }
    if (progress != NULL && s.rc == 0)
        progress(progress_ctx, s.done, s.total);
    pthread_cond_destroy(&s.cond);
    pthread_mutex_destroy(&s.mu);
    if (s.rc < 0) {
        for (size_t i = 0; i < s.total; i++)
            sim_result_free(&results[i]);
        if (err != NULL)
            *err = s.err;
    }
    return s.rc;
}
