/* pool.c: zjob_put on several threads (xfer.h, xfer_pool). Each job is still its own unit
 * of work; running several at once lets a backend commit them together (SQLite's writer
 * groups the units waiting for it into one durable commit), so an import or a copy waits
 * for one fsync per group rather than one per job. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "xfer/xfer.h"

#define POOL_MAX_THREADS 32

typedef struct slot {
    zjob *job;
    size_t seq;
} slot;

struct xfer_pool {
    store *st;
    bool replace, exact;
    xfer_done_fn done;
    void *ctx;
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full, idle;
    slot *q;
    size_t cap, head, n, busy;
    bool closing, stopped;
    pthread_t threads[POOL_MAX_THREADS];
    int n_threads;
};

static void *worker(void *arg)
{
    xfer_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->n == 0 && !p->closing)
            pthread_cond_wait(&p->not_empty, &p->mu);
        if (p->n == 0)
            break;
        slot s = p->q[p->head];
        p->head = (p->head + 1) % p->cap;
        p->n--;
        p->busy++;
        pthread_cond_signal(&p->not_full);
        bool skip = p->stopped;
        pthread_mutex_unlock(&p->mu);
        zbso_err err;
        zput_result res = ZPUT_WRITTEN;
        err_clear(&err);
        int rc = skip ? 0 : zjob_put(p->st, s.job, p->replace, p->exact, &res, &err);
        pthread_mutex_lock(&p->mu);
        if (!skip && p->done(p->ctx, s.seq, s.job, rc, res, &err) != 0)
            p->stopped = true;
        zjob_free(s.job);
        free(s.job);
        p->busy--;
        if (p->n == 0 && p->busy == 0)
            pthread_cond_broadcast(&p->idle);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int xfer_pool_new(store *st, int threads, bool replace, bool exact, xfer_done_fn done,
                  void *ctx, xfer_pool **out, zbso_err *err)
{
    xfer_pool *p = calloc(1, sizeof *p);
    *out = NULL;
    if (threads < 1)
        threads = 1;
    if (threads > POOL_MAX_THREADS)
        threads = POOL_MAX_THREADS;
    if (p == NULL || (p->q = calloc((size_t)threads * 4, sizeof *p->q)) == NULL) {
        free(p);
        return err_set(err, ZBSO_ENOMEM, "out of memory");
    }
    p->st = st;
    p->replace = replace;
    p->exact = exact;
    p->done = done;
    p->ctx = ctx;
    p->cap = (size_t)threads * 4;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->not_empty, NULL);
    pthread_cond_init(&p->not_full, NULL);
    pthread_cond_init(&p->idle, NULL);
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0)
            break;
        p->n_threads++;
    }
    if (p->n_threads == 0) {
        xfer_pool_finish(p);
        return err_set(err, ZBSO_EINTERNAL, "cannot start a writer thread");
    }
    *out = p;
    return 0;
}

int xfer_pool_put(xfer_pool *p, zjob *job, size_t seq, zbso_err *err)
{
    zjob *own = malloc(sizeof *own);
    if (own == NULL) {
        zjob_free(job);
        return err_set(err, ZBSO_ENOMEM, "out of memory");
    }
    *own = *job;
    memset(job, 0, sizeof *job);
    pthread_mutex_lock(&p->mu);
    while (p->n == p->cap && !p->stopped)
        pthread_cond_wait(&p->not_full, &p->mu);
    bool stopped = p->stopped;
    if (!stopped) {
        p->q[(p->head + p->n) % p->cap] = (slot){own, seq};
        p->n++;
        pthread_cond_signal(&p->not_empty);
    }
    pthread_mutex_unlock(&p->mu);
    if (stopped) {
        zjob_free(own);
        free(own);
        return err_set(err, ZBSO_ECONFLICT, "stopped after an error");
    }
    return 0;
}

bool xfer_pool_wait(xfer_pool *p)
{
    pthread_mutex_lock(&p->mu);
    while (p->n > 0 || p->busy > 0)
        pthread_cond_wait(&p->idle, &p->mu);
    bool stopped = p->stopped;
    pthread_mutex_unlock(&p->mu);
    return !stopped;
}

void xfer_pool_finish(xfer_pool *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    p->closing = true;
    pthread_cond_broadcast(&p->not_empty);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    for (size_t i = 0; i < p->n; i++) {
        zjob_free(p->q[(p->head + i) % p->cap].job);
        free(p->q[(p->head + i) % p->cap].job);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->not_empty);
    pthread_cond_destroy(&p->not_full);
    pthread_cond_destroy(&p->idle);
    free(p->q);
    free(p);
}
