/* fake_http.h: loopback HTTP helpers for the client and transport tests: a scripted
 * server thread for answers (and failures) the real server never gives, and a proxy
 * thread in front of a real `zbso serve` that loses chosen answers. One connection at a
 * time, each answered with "Connection: close". Test code: asserts through cmocka. */
#ifndef ZBSO_TESTS_FAKE_HTTP_H
#define ZBSO_TESTS_FAKE_HTTP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define FAKE_REQ_KEEP 8          /* requests whose head is kept */
#define FAKE_REQ_HEAD 2048       /* bytes kept of each */

typedef struct fake_reply {
    int status;                  /* 0: close the connection without answering */
    const char *headers;         /* extra header lines, each ending in \r\n */
    const char *body;
    int delay_ms;                /* waits this long before answering */
    size_t body_bytes;           /* > 0: the body is this many 'x' instead of body */
} fake_reply;

typedef struct fake_server {
    int fd, port;
    pthread_t thread;
    const fake_reply *replies;   /* request i gets replies[min(i, n - 1)] */
    int n_replies;
    atomic_int n_requests;
    char requests[FAKE_REQ_KEEP][FAKE_REQ_HEAD]; /* heads of the first requests */
} fake_server;

/* Starts fs on a free loopback port answering with replies (which must outlive it). */
void fake_start(fake_server *fs, const fake_reply *replies, int n);
/* Stops the thread and closes the socket. */
void fake_stop(fake_server *fs);

/* A proxy to a server on 127.0.0.1:upstream_port. Each request is forwarded on a new
 * upstream connection, whose whole answer is read before the proxy answers or drops it. */
typedef struct fake_proxy {
    int fd, port, upstream_port;
    pthread_t thread;
    atomic_int drop_batch_size;  /* lose the answers to the next n GET /jobs/batch_size */
    atomic_bool strip_key;       /* forward without the Idempotency-Key header */
    atomic_int n_batch_size;     /* GET /jobs/batch_size requests forwarded */
} fake_proxy;

void fake_proxy_start(fake_proxy *p, int upstream_port);
void fake_proxy_stop(fake_proxy *p);

#endif
