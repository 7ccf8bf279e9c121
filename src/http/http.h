/* http.h: the HTTP/JSON server (SPEC §2, §5) on libmicrohttpd. Routes requests to the
 * service, maps error codes to statuses, checks the bearer token, logs one line per
 * request. Owns no database: the store and the service environment are passed in. */
#ifndef ZBSO_HTTP_HTTP_H
#define ZBSO_HTTP_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "service/service.h"
#include "store/store.h"
#include "util/err.h"

/* File descriptors kept out of the connection limit when it is derived from the process's
 * limit: the database (SQLite opens two per connection, up to 16 readers, the writer and
 * the checkpointer; PostgreSQL a pool of 16 sockets), the log, the listening socket,
 * libmicrohttpd's epoll and wake-up descriptors, and room to accept a connection only to
 * refuse it. */
#define HTTP_FD_RESERVE 128u

typedef struct http_config {
    const char *host;         /* address to bind, "127.0.0.1" by default */
    int port;                 /* 0: an ephemeral port (see http_server_port) */
    const char *api_token;    /* NULL or "": no auth; else `Authorization: Bearer <token>` */
    const char *read_token;   /* NULL or "": none; else it may GET the inspection API,
                                 /metrics and /openapi.json (ZBSO_READ_TOKEN) */
    const char *client_token; /* NULL or "": none; else it may use the Zeus protocol's
                                 routes (ZBSO_CLIENT_TOKEN) */
    size_t max_body_bytes;    /* larger bodies get 413; 0 means 1 MiB */
    unsigned connection_limit;/* connections open at once, more are refused; 0: the soft
                                 RLIMIT_NOFILE less HTTP_FD_RESERVE */
    unsigned per_ip_limit;    /* connections from one client address; 0: no limit */
    double idle_timeout_s;    /* an idle connection is closed after this; 0: never */
    double header_timeout_s;  /* a request head must be complete this long after its first
                                 byte, else the connection is closed; 0: no limit */
    double body_timeout_s;    /* a request body must be complete this long after its head,
                                 else it is answered 408 and closed; 0: no limit */
    size_t body_memory_bytes; /* bytes of request bodies held at once (all connections);
                                 a body that would pass it gets 503; 0: HTTP_BODY_MEMORY */
    unsigned workers;         /* threads running service calls; 0: HTTP_DEFAULT_WORKERS */
    const char *version;      /* the build's version, for /metrics' zbso_build_info */
    bool metrics_per_job;     /* /metrics has per-job series (--metrics-per-job) */
} http_config;

#define HTTP_DEFAULT_WORKERS 64u
/* The default cap on the bytes of request bodies held at once: 32 MiB, 32 bodies of the
 * largest size accepted or some 100,000 reports (their buffers take at most twice that). */
#define HTTP_BODY_MEMORY ((size_t)32 << 20)

typedef struct http_server http_server;

/* Starts serving in background threads. st and env must outlive the server. Logs the
 * connection limits once at INFO. */
int http_server_start(const http_config *cfg, store *st, const svc_env *env,
                      http_server **out, zbso_err *err);

/* The port actually bound (useful with port 0). */
int http_server_port(const http_server *srv);

/* Drains and stops: closes the listening socket (new connections are refused), answers
 * every request already received or arriving on an open connection within
 * drain_timeout_s (with "Connection: close"), closes idle connections, then stops and
 * frees the server and returns 0. When requests are still running in the service at the
 * deadline it returns their number instead and leaves the server allocated with them:
 * the caller must not close the store then (exit the process). NULL is a no-op (0). */
unsigned http_server_stop(http_server *srv, double drain_timeout_s);

#endif
