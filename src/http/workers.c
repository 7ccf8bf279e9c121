/* workers.c: the request worker pool.
 *
 * Design note. libmicrohttpd runs every connection on one event-loop thread (epoll), so
 * nothing may block there; but a service call blocks until its unit of work is durable
 * (the SQLite writer's group commit, or PostgreSQL round trips). The event loop therefore
 * suspends the connection, hands the request to this pool and goes on; a worker runs the
 * service call and resumes the connection, and the event loop sends the answer. The pool
 * is a FIFO of intrusive tasks (the request's own state holds the link, so submitting
 * allocates nothing and cannot fail) under one mutex, served by a fixed number of
 * threads. The count is fixed, not grown on demand: it is what lets a group commit gather
 * many writes (every worker waiting in one commit) while bounding threads and memory; a
 * request beyond it waits in the queue, not in a thread. Knows nothing of HTTP. */
#define _GNU_SOURCE /* pthread_setname_np */
#include "http/workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"

struct http_workers {
    pthread_mutex_t mu;
    pthread_cond_t cv;           /* a task was queued, or stop was asked */
    pthread_cond_t idle;         /* pending fell to 0 */
    http_task *head, *tail;      /* FIFO of queued tasks */
    unsigned pending;            /* queued + running */
    bool stop;
    int nice;                    /* steps below the event loop */
    const char *name;            /* the threads' name */
    unsigned n;
    pthread_t threads[];
};

static void *worker_main(void *arg)
{
    http_workers *w = arg;
    pthread_setname_np(pthread_self(), w->name);
    /* Workers yield to the event loop, which every request passes through twice: a worker
     * is one of many, the loop only one. Lowering one's own priority needs no privilege. */
    id_t tid = (id_t)syscall(SYS_gettid);
    errno = 0;
    int nice_now = getpriority(PRIO_PROCESS, tid);
    if (errno == 0)
        (void)setpriority(PRIO_PROCESS, tid, nice_now + w->nice);
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->head && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        http_task *t = w->head;
        if (!t)
            break; /* stop asked and nothing left */
        w->head = t->next;
        if (!w->head)
            w->tail = NULL;
        pthread_mutex_unlock(&w->mu);
        t->fn(t);
        pthread_mutex_lock(&w->mu);
        if (--w->pending == 0)
            pthread_cond_broadcast(&w->idle);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int http_workers_start(unsigned n, int nice, const char *name, http_workers **out,
                       zbso_err *err)
{
    *out = NULL;
    if (n == 0)
        n = 1;
    http_workers *w = calloc(1, sizeof *w + n * sizeof w->threads[0]);
    if (!w)
        return err_set(err, ZBSO_ENOMEM, "out of memory starting %u request workers", n);
    w->nice = nice;
    w->name = name;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    pthread_cond_init(&w->idle, &ca);
    pthread_condattr_destroy(&ca);
    for (unsigned i = 0; i < n; i++) {
        int e = pthread_create(&w->threads[i], NULL, worker_main, w);
        if (e != 0) {
            w->n = i;
            http_workers_stop(w);
            return err_set(err, ZBSO_EIO, "cannot start request worker %u of %u: %s", i + 1,
                           n, strerror(e));
        }
    }
    w->n = n;
    *out = w;
    return 0;
}

void http_workers_submit(http_workers *w, http_task *t)
{
    t->next = NULL;
    pthread_mutex_lock(&w->mu);
    if (w->tail)
        w->tail->next = t;
    else
        w->head = t;
    w->tail = t;
    w->pending++;
    pthread_mutex_unlock(&w->mu);
    pthread_cond_signal(&w->cv);
}

unsigned http_workers_wait(http_workers *w, double timeout_s)
{
    struct timespec until = clk_deadline(CLOCK_MONOTONIC, timeout_s);
    pthread_mutex_lock(&w->mu);
    while (w->pending > 0 && pthread_cond_timedwait(&w->idle, &w->mu, &until) == 0)
        ;
    unsigned n = w->pending;
    pthread_mutex_unlock(&w->mu);
    return n;
}

void http_workers_stop(http_workers *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_mutex_unlock(&w->mu);
    pthread_cond_broadcast(&w->cv);
    for (unsigned i = 0; i < w->n; i++)
        pthread_join(w->threads[i], NULL);
    pthread_cond_destroy(&w->idle);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
