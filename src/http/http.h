/* http.h: the HTTP/JSON server (SPEC §2, §5) on libmicrohttpd. Routes requests to the
 * service, maps error codes to statuses, checks the bearer token, logs one line per
 * request. Owns no database: the store and the service environment are passed in. */
#ifndef ZBSO_HTTP_HTTP_H
#define ZBSO_HTTP_HTTP_H

#include <stddef.h>

#include "service/service.h"
#include "store/store.h"
#include "util/err.h"

typedef struct http_config {
    const char *host;         /* address to bind, "127.0.0.1" by default */
    int port;                 /* 0: an ephemeral port (see http_server_port) */
    const char *api_token;    /* NULL or "": no auth; else `Authorization: Bearer <token>` */
    size_t max_body_bytes;    /* larger bodies get 413; 0 means 1 MiB */
    unsigned connection_limit;/* 0 means 1024 */
} http_config;

typedef struct http_server http_server;

/* Starts serving in background threads. st and env must outlive the server. */
int http_server_start(const http_config *cfg, store *st, const svc_env *env,
                      http_server **out, zbso_err *err);

/* The port actually bound (useful with port 0). */
int http_server_port(const http_server *srv);

/* Stops accepting, lets in-flight requests finish, frees the server. NULL is a no-op. */
void http_server_stop(http_server *srv);

#endif
