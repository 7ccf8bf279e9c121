/* workers.h: private to src/http. A fixed pool of threads that run the blocking part of a
 * request (the service call, which waits for the store) off libmicrohttpd's event loop. */
#ifndef ZBSO_HTTP_WORKERS_H
#define ZBSO_HTTP_WORKERS_H

#include "util/err.h"

/* One unit of work, embedded in the caller's own state (no allocation per task). fn runs
 * once on a pool thread; the task must stay valid until fn has returned. */
typedef struct http_task {
    struct http_task *next;
    void (*fn)(struct http_task *t);
} http_task;

typedef struct http_workers http_workers;

/* Starts n threads (n >= 1) named `name` (at most 15 bytes, for ps and /proc), each `nice`
 * steps below the event loop's priority (lowering one's own priority needs no privilege).
 * Returns 0, or ZBSO_ENOMEM / ZBSO_EIO with err set (then no thread is left running). */
int http_workers_start(unsigned n, int nice, const char *name, http_workers **out,
                       zbso_err *err);

/* Queues t; the first idle thread runs it, in submission order. Never fails. */
void http_workers_submit(http_workers *w, http_task *t);

/* Waits until every task submitted has returned from fn, or timeout_s has passed.
 * Returns the number of tasks still queued or running. */
unsigned http_workers_wait(http_workers *w, double timeout_s);

/* Runs every queued task, joins the threads and frees the pool. NULL is a no-op. */
void http_workers_stop(http_workers *w);

#endif
