/* fake_http.c: the scripted server and the answer-losing proxy of fake_http.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fake_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/clock.h"

#define REQ_MAX 65536
#define RESP_MAX 65536

/* Reads one request (head and Content-Length body) from conn into buf (NUL-terminated).
 * Returns its length, or 0 when the peer closed or sent something too large. */
static size_t read_request(int conn, char *buf, size_t cap)
{
    size_t got = 0, need = 0;
    char *end = NULL;
    while (got < cap - 1 && (!end || got < need)) {
        ssize_t n = read(conn, buf + got, cap - 1 - got);
        if (n <= 0)
            return 0;
        got += (size_t)n;
        buf[got] = '\0';
        if (!end && (end = strstr(buf, "\r\n\r\n"))) {
            char *cl = strstr(buf, "Content-Length:");
            need = (size_t)(end + 4 - buf) + (cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0);
        }
    }
    return end && got >= need ? got : 0;
}

/* Writes all of buf, ignoring a peer that went away (no SIGPIPE). */
static void send_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

/* A listening socket on a free loopback port; *port receives it. */
static int listen_loopback(int *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 16), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static void answer(int conn, const fake_reply *r)
{
    char head[4096];
    size_t body_len = r->body_bytes ? r->body_bytes : strlen(r->body);
    if (r->delay_ms)
        clk_sleep_s(r->delay_ms / 1000.0);
    if (r->status == 0)
        return;
    int len = snprintf(head, sizeof head,
                       "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                       "Content-Length: %zu\r\nConnection: close\r\n%s\r\n",
                       r->status, body_len, r->headers ? r->headers : "");
    send_all(conn, head, (size_t)len);
    if (!r->body_bytes) {
        send_all(conn, r->body, body_len);
        return;
    }
    char chunk[8192];
    memset(chunk, 'x', sizeof chunk);
    for (size_t sent = 0; sent < body_len; sent += sizeof chunk)
        send_all(conn, chunk, body_len - sent < sizeof chunk ? body_len - sent : sizeof chunk);
}

static void *fake_run(void *arg)
{
    fake_server *fs = arg;
    char *req = malloc(REQ_MAX);
    assert_non_null(req);
    for (;;) {
        int conn = accept(fs->fd, NULL, NULL);
        if (conn < 0)
            break;
        if (read_request(conn, req, REQ_MAX) > 0) {
            int i = atomic_fetch_add(&fs->n_requests, 1);
            if (i < FAKE_REQ_KEEP)
                snprintf(fs->requests[i], FAKE_REQ_HEAD, "%s", req);
            answer(conn, &fs->replies[i < fs->n_replies ? i : fs->n_replies - 1]);
        }
        close(conn);
    }
    free(req);
    return NULL;
}

void fake_start(fake_server *fs, const fake_reply *replies, int n)
{
    memset(fs, 0, sizeof *fs);
    fs->replies = replies;
    fs->n_replies = n;
    fs->fd = listen_loopback(&fs->port);
    assert_int_equal(pthread_create(&fs->thread, NULL, fake_run, fs), 0);
}

/* Stops a server or proxy thread blocked in accept() on fd and closes fd. */
static void listener_stop(int fd, pthread_t thread)
{
    shutdown(fd, SHUT_RDWR);
    pthread_join(thread, NULL);
    close(fd);
}

void fake_stop(fake_server *fs) { listener_stop(fs->fd, fs->thread); }

/* Forwards req (len bytes) to the upstream with "Connection: close" and, when strip, no
 * Idempotency-Key line; reads the whole answer into resp. Returns its length (0: none). */
static size_t forward(const fake_proxy *p, const char *req, size_t len, bool strip,
                      char *resp, size_t cap)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->upstream_port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    const char *head_end = strstr(req, "\r\n\r\n") + 2, *line = req;
    char *out = malloc(len + 64);
    size_t n = 0, got = 0;
    int up = socket(AF_INET, SOCK_STREAM, 0);
    assert_non_null(out);
    assert_true(up >= 0);
    while (line < head_end) {
        const char *eol = strstr(line, "\r\n") + 2;
        if (!(strip && strncmp(line, "Idempotency-Key:", 16) == 0)) {
            memcpy(out + n, line, (size_t)(eol - line));
            n += (size_t)(eol - line);
        }
        line = eol;
    }
    memcpy(out + n, "Connection: close\r\n", 19);
    n += 19;
    memcpy(out + n, head_end, len - (size_t)(head_end - req));
    n += len - (size_t)(head_end - req);
    if (connect(up, (struct sockaddr *)&a, sizeof a) == 0) {
        send_all(up, out, n);
        ssize_t r;
        while (got < cap && (r = read(up, resp + got, cap - got)) > 0)
            got += (size_t)r;
    }
    close(up);
    free(out);
    return got;
}

static void *proxy_run(void *arg)
{
    fake_proxy *p = arg;
    char *req = malloc(REQ_MAX), *resp = malloc(RESP_MAX);
    assert_true(req && resp);
    for (;;) {
        int conn = accept(p->fd, NULL, NULL);
        if (conn < 0)
            break;
        size_t len = read_request(conn, req, REQ_MAX);
        if (len > 0) {
            bool batch_size = strncmp(req, "GET /jobs/batch_size", 20) == 0;
            size_t got = forward(p, req, len, atomic_load(&p->strip_key), resp, RESP_MAX);
            if (batch_size)
                atomic_fetch_add(&p->n_batch_size, 1);
            /* The server has answered (and so dispatched); the client never hears it. */
            if (!(batch_size && atomic_load(&p->drop_batch_size) > 0 &&
                  atomic_fetch_sub(&p->drop_batch_size, 1) > 0))
                send_all(conn, resp, got);
        }
        close(conn);
    }
    free(req);
    free(resp);
    return NULL;
}

void fake_proxy_start(fake_proxy *p, int upstream_port)
{
    memset(p, 0, sizeof *p);
    p->upstream_port = upstream_port;
    p->fd = listen_loopback(&p->port);
    assert_int_equal(pthread_create(&p->thread, NULL, proxy_run, p), 0);
}

void fake_proxy_stop(fake_proxy *p) { listener_stop(p->fd, p->thread); }
