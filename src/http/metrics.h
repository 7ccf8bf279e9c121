/* metrics.h: private to src/http. GET /metrics (SPEC §5): the server's registry of
 * request counts and durations, and the Prometheus text exposition (format 0.0.4) of it
 * together with the store's, the service's and the process's figures. Counting a request
 * allocates nothing and takes no lock; only a scrape reads the database. */
#ifndef ZBSO_HTTP_METRICS_H
#define ZBSO_HTTP_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/httpInt.h"

/* Per-job series cover at most this many jobs (the first in job id order); the rest are
 * counted in zbso_metrics_jobs_omitted. */
#define METRICS_JOBS_MAX 10000
/* The largest exposition a scrape may build; a larger one fails the scrape with 500. */
#define METRICS_TEXT_MAX ((size_t)64 << 20)

typedef struct http_metrics http_metrics;

/* Creates the registry for the route table routes[0..n_routes-1] (http_route_at(0),
 * http_route_count()), which must outlive it. version is the build's (zbso_build_info),
 * copied; per_job turns on the per-job series (--metrics-per-job). Returns 0, or
 * ZBSO_ENOMEM with err set. */
int http_metrics_new(const http_route *routes, size_t n_routes, const char *version,
                     bool per_job, http_metrics **out, zbso_err *err);

/* NULL is a no-op. */
void http_metrics_free(http_metrics *m);

/* Counts one answered request: route is the table entry that served it (NULL: no route
 * matched, counted as route "other" under its method, or "other" for a method outside
 * GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS), status the answer's, duration_ns from
 * the complete request head to the answer queued. Any thread; relaxed atomic adds only:
 * no allocation, no lock, no failure. */
void http_metrics_request(http_metrics *m, const http_route *route, const char *method,
                          unsigned status, int64_t duration_ns);

/* Builds the exposition: *text (malloc'd, NUL-terminated, the caller frees) of *len bytes.
 * Reads the job and trial counts (and the per-job series) in one read unit of st; when
 * that fails the rest is still built and zbso_store_readable says 0. env gives the lease
 * timeout and the service's counters (env->stats); env or env->stats may be NULL (the
 * service's series are then left out). Returns 0, or ZBSO_ENOMEM / ZBSO_ETOOBIG (past
 * METRICS_TEXT_MAX) with err set. */
int http_metrics_render(http_metrics *m, store *st, const svc_env *env, char **text,
                        size_t *len, zbso_err *err);

/* The GET /metrics handler (routes.c's table): 200 with the exposition as
 * METRICS_CONTENT_TYPE, or an error reply. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
void http_metrics_get(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                      size_t len, http_reply *r);

#endif
