/* conntrack.c: the connection tracker.
 *
 * Design note. libmicrohttpd 0.9.75 times out only idle connections, and a byte every few
 * seconds counts as activity, so a client that sends its request head one byte at a time
 * (slowloris) holds its connection for ever. zbso keeps its own table of connections,
 * indexed by file descriptor and filled from libmicrohttpd's callbacks: accepted, request
 * line parsed, head complete (the access handler's first call), request done, closed. A
 * request head is in progress from the first byte after the connection became idle until
 * the handler gets the head. libmicrohttpd does not say when that first byte arrives, so
 * the tracker reads the kernel's count of bytes received (TCP_INFO) when a request ends
 * and again on a periodic check (every second): a count that moved means a head began. A
 * head older than the header timeout is shut down (shutdown(2); libmicrohttpd then sees
 * the end of the stream and closes the connection, calling back here before it closes
 * the descriptor, so the table's descriptors are always still open while the lock is
 * held). A body is timed the same way, from the head's end (the access handler's first
 * call) to its last byte: a body not complete within the body timeout is answered 408 by
 * the server's callback, written straight to the socket (nothing else writes to it while
 * a body is read), and shut down; the request is then never run. The same check drains
 * the server: idle connections are shut down, busy ones
 * finish. It also recognises a request line libmicrohttpd dropped without an answer
 * (bytes came, no line was parsed, nothing was written) so the server can answer 400.
 * The decisions are the pure functions conntrack_judge and conntrack_owes_answer. */
#define _GNU_SOURCE /* pthread_setname_np */
#include "http/conntrack.h"

#include <errno.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "util/clock.h"
#include "util/log.h"

#define SWEEP_PERIOD_MS 1000
#define SWEEP_MIN_PERIOD_MS 100
#define DRAIN_PERIOD_MS 10
#define SWEEP_CHUNK 256           /* descriptors checked per hold of the lock */
/* TCP states in which the peer's FIN has arrived (the kernel's numbering, which
 * tcpi_state reports; no user-space header of linux/tcp.h's kind names them). */
enum { ST_TIME_WAIT = 6, ST_CLOSE_WAIT = 8, ST_LAST_ACK = 9, ST_CLOSING = 11 };

struct ct_entry {
    ct_state st;
    bool open;
};

struct conntrack {
    pthread_mutex_t mu;
    pthread_cond_t wake;          /* the periodic check: stop, or drain started */
    pthread_cond_t drained;       /* a connection closed while draining */
    pthread_t sweeper;
    bool quit;
    bool draining;
    atomic_bool stopping;
    atomic_uint open;             /* connections open, tracked or not */
    int hi_fd;                    /* highest descriptor ever tracked */
    int64_t header_timeout_ms;    /* <= 0: none */
    int64_t body_timeout_ms;      /* <= 0: none */
    ct_late_body_fn late_body;
    void *late_body_cls;
    log_limit slow_body_log;
    int64_t period_ms;
    log_limit slow_log;
    unsigned max_fd;
    ct_entry tab[];               /* indexed by descriptor */
};

enum ct_verdict conntrack_judge(const ct_state *s, uint64_t rx_now, int64_t now_ms,
                                int64_t header_timeout_ms, int64_t body_timeout_ms,
                                bool draining)
{
    if (s->shut || s->phase == CT_BUSY)
        return CT_KEEP;
    if (s->phase == CT_BODY)
        return body_timeout_ms > 0 && now_ms - s->since_ms >= body_timeout_ms
                   ? CT_SHUT_SLOW_BODY : CT_KEEP;
    if (s->phase == CT_IDLE) {
        if (rx_now != s->rx_base)
            return CT_HEAD_STARTED;
        if (draining && now_ms - s->since_ms >= CT_DRAIN_IDLE_MS)
            return CT_SHUT_IDLE;
        return CT_KEEP;
    }
    if (header_timeout_ms > 0 && now_ms - s->since_ms >= header_timeout_ms)
        return CT_SHUT_SLOW_HEAD;
    return CT_KEEP;
}

bool conntrack_owes_answer(const ct_state *s, uint64_t rx_now, uint64_t tx_now,
                           bool stopping)
{
    if (stopping || s->shut || s->phase >= CT_BODY || s->line_seen)
        return false;
    return rx_now > s->rx_base && tx_now == s->tx_base;
}

static int64_t now_ms(void)
{
    return clk_mono_ns() / 1000000;
}

/* The socket's byte counts from one TCP_INFO: received in all (request bytes only: the
 * peer's FIN takes a sequence number, which the kernel counts as a byte received), and
 * written by the server in all (sent once, plus still queued). Returns 0, or -1 when the
 * kernel would not say (not a TCP socket, or a kernel older than 4.19). */
static int sock_counts(int fd, uint64_t *rx, uint64_t *tx)
{
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_retrans) + sizeof ti.tcpi_bytes_retrans)
        return -1;
    bool fin_in = ti.tcpi_state == ST_CLOSE_WAIT || ti.tcpi_state == ST_LAST_ACK ||
                  ti.tcpi_state == ST_CLOSING || ti.tcpi_state == ST_TIME_WAIT;
    *rx = ti.tcpi_bytes_received - (fin_in && ti.tcpi_bytes_received > 0);
    if (tx)
        *tx = ti.tcpi_bytes_sent - ti.tcpi_bytes_retrans + ti.tcpi_notsent_bytes;
    return 0;
}

/* Runs the periodic check over every tracked descriptor, SWEEP_CHUNK at a time so the
 * event loop never waits long for the lock. Called and returns with ct->mu held. */
static void sweep(conntrack *ct)
{
    unsigned slow = 0, slow_bodies = 0;
    int64_t now = now_ms();
    for (int fd = 0; fd <= ct->hi_fd; fd++) {
        if (fd % SWEEP_CHUNK == SWEEP_CHUNK - 1) {
            pthread_mutex_unlock(&ct->mu);
            pthread_mutex_lock(&ct->mu);
        }
        ct_entry *e = &ct->tab[fd];
        uint64_t rx = 0;
        if (!e->open || e->st.shut || e->st.phase == CT_BUSY ||
            sock_counts(fd, &rx, NULL) != 0)
            continue;
        switch (conntrack_judge(&e->st, rx, now, ct->header_timeout_ms, ct->body_timeout_ms,
                                ct->draining)) {
        case CT_KEEP:
            break;
        case CT_HEAD_STARTED:
            e->st.phase = CT_HEAD;
            e->st.since_ms = now;
            break;
        case CT_SHUT_SLOW_BODY:
            slow_bodies++;
            if (ct->late_body)
                ct->late_body(ct->late_body_cls, fd);
            shutdown(fd, SHUT_RDWR);
            e->st.shut = true;
            break;
        case CT_SHUT_SLOW_HEAD:
            slow++;
            /* fall through */
        case CT_SHUT_IDLE:
            shutdown(fd, SHUT_RDWR);
            e->st.shut = true;
            break;
        }
    }
    if (slow)
        log_limited(&ct->slow_log, ZLOG_INFO, "closed %u connection%s whose request head was "
                    "not complete within the header timeout of %.3g s", slow,
                    slow == 1 ? "" : "s", (double)ct->header_timeout_ms / 1000.0);
    if (slow_bodies)
        log_limited(&ct->slow_body_log, ZLOG_INFO, "answered 408 and closed %u connection%s "
                    "whose request body was not complete within the body timeout of %.3g s",
                    slow_bodies, slow_bodies == 1 ? "" : "s",
                    (double)ct->body_timeout_ms / 1000.0);
}

static void *sweeper_main(void *arg)
{
    conntrack *ct = arg;
    pthread_setname_np(pthread_self(), "zbso-conncheck");
    pthread_mutex_lock(&ct->mu);
    while (!ct->quit) {
        int64_t period_ms = ct->draining ? DRAIN_PERIOD_MS : ct->period_ms;
        struct timespec until = clk_deadline(CLOCK_MONOTONIC, (double)period_ms / 1000.0);
        pthread_cond_timedwait(&ct->wake, &ct->mu, &until);
        if (!ct->quit)
            sweep(ct);
    }
    pthread_mutex_unlock(&ct->mu);
    return NULL;
}

int conntrack_start(unsigned max_fd, double header_timeout_s, double body_timeout_s,
                    ct_late_body_fn late_body, void *cls, conntrack **out, zbso_err *err)
{
    *out = NULL;
    conntrack *ct = calloc(1, sizeof *ct + (size_t)max_fd * sizeof ct->tab[0]);
    if (!ct)
        return err_set(err, ZBSO_ENOMEM, "out of memory tracking %u connections", max_fd);
    ct->max_fd = max_fd;
    ct->hi_fd = -1;
    ct->header_timeout_ms = (int64_t)(header_timeout_s * 1000.0 + 0.5);
    ct->body_timeout_ms = (int64_t)(body_timeout_s * 1000.0 + 0.5);
    ct->late_body = late_body;
    ct->late_body_cls = cls;
    ct->period_ms = SWEEP_PERIOD_MS;
    int64_t shortest = ct->header_timeout_ms;
    if (ct->body_timeout_ms > 0 && (shortest <= 0 || ct->body_timeout_ms < shortest))
        shortest = ct->body_timeout_ms;
    if (shortest > 0 && shortest / 4 < ct->period_ms)
        ct->period_ms = shortest / 4 > SWEEP_MIN_PERIOD_MS ? shortest / 4 : SWEEP_MIN_PERIOD_MS;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&ct->mu, NULL);
    pthread_cond_init(&ct->wake, &ca);
    pthread_cond_init(&ct->drained, &ca);
    pthread_condattr_destroy(&ca);
    int e = pthread_create(&ct->sweeper, NULL, sweeper_main, ct);
    if (e != 0) {
        pthread_cond_destroy(&ct->drained);
        pthread_cond_destroy(&ct->wake);
        pthread_mutex_destroy(&ct->mu);
        free(ct);
        return err_set(err, ZBSO_EIO, "cannot start the connection check thread: %s",
                       strerror(e));
    }
    *out = ct;
    return 0;
}

void conntrack_stop(conntrack *ct)
{
    if (!ct)
        return;
    pthread_mutex_lock(&ct->mu);
    ct->quit = true;
    pthread_mutex_unlock(&ct->mu);
    pthread_cond_signal(&ct->wake);
    pthread_join(ct->sweeper, NULL);
    pthread_cond_destroy(&ct->drained);
    pthread_cond_destroy(&ct->wake);
    pthread_mutex_destroy(&ct->mu);
    free(ct);
}

ct_entry *conntrack_opened(conntrack *ct, int fd)
{
    atomic_fetch_add(&ct->open, 1);
    if (fd < 0 || (unsigned)fd >= ct->max_fd)
        return NULL;
    ct_entry *e = &ct->tab[fd];
    pthread_mutex_lock(&ct->mu);
    memset(e, 0, sizeof *e);
    e->open = true;
    e->st.phase = CT_IDLE;
    e->st.since_ms = now_ms();
    if (fd > ct->hi_fd)
        ct->hi_fd = fd;
    pthread_mutex_unlock(&ct->mu);
    return e;
}

bool conntrack_closed(conntrack *ct, ct_entry *e, int fd)
{
    uint64_t rx = 0, tx = 0;
    bool counted = e && sock_counts(fd, &rx, &tx) == 0;
    bool owed = false;
    pthread_mutex_lock(&ct->mu);
    if (e) {
        owed = counted && conntrack_owes_answer(&e->st, rx, tx, atomic_load(&ct->stopping));
        e->open = false;
    }
    atomic_fetch_sub(&ct->open, 1);
    if (ct->draining)
        pthread_cond_broadcast(&ct->drained);
    pthread_mutex_unlock(&ct->mu);
    return owed;
}

void conntrack_line_parsed(conntrack *ct, ct_entry *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&ct->mu);
    e->st.line_seen = true;
    if (e->st.phase == CT_IDLE) {
        e->st.phase = CT_HEAD;
        e->st.since_ms = now_ms();
    }
    pthread_mutex_unlock(&ct->mu);
}

bool conntrack_head_done(conntrack *ct, ct_entry *e)
{
    if (!e)
        return true;
    int64_t now = now_ms();
    pthread_mutex_lock(&ct->mu);
    e->st.phase = CT_BODY;
    e->st.since_ms = now;
    bool usable = !e->st.shut;
    pthread_mutex_unlock(&ct->mu);
    return usable;
}

bool conntrack_body_done(conntrack *ct, ct_entry *e)
{
    if (!e)
        return true;
    pthread_mutex_lock(&ct->mu);
    e->st.phase = CT_BUSY;
    bool usable = !e->st.shut;
    pthread_mutex_unlock(&ct->mu);
    return usable;
}

void conntrack_request_done(conntrack *ct, ct_entry *e, int fd)
{
    if (!e)
        return;
    uint64_t rx = 0, tx = 0;
    int rc = sock_counts(fd, &rx, &tx);
    int64_t now = now_ms();
    pthread_mutex_lock(&ct->mu);
    e->st.phase = CT_IDLE;
    e->st.line_seen = false;
    e->st.since_ms = now;
    if (rc == 0) {
        e->st.rx_base = rx;
        e->st.tx_base = tx;
    }
    pthread_mutex_unlock(&ct->mu);
}

unsigned conntrack_open_count(conntrack *ct)
{
    return atomic_load(&ct->open);
}

unsigned conntrack_drain(conntrack *ct, double timeout_s)
{
    struct timespec until = clk_deadline(CLOCK_MONOTONIC, timeout_s);
    pthread_mutex_lock(&ct->mu);
    ct->draining = true;
    pthread_cond_signal(&ct->wake);
    while (atomic_load(&ct->open) > 0 &&
           pthread_cond_timedwait(&ct->drained, &ct->mu, &until) != ETIMEDOUT)
        ;
    unsigned left = atomic_load(&ct->open);
    pthread_mutex_unlock(&ct->mu);
    return left;
}

void conntrack_stopping(conntrack *ct)
{
    atomic_store(&ct->stopping, true);
}
