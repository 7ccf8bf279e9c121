/* conntrack.h: private to src/http. Tracks every open client connection by file
 * descriptor: where it is in its request (idle, receiving a request head or body, in a
 * request), closes connections whose request head or body is too slow (the header and
 * body timeouts libmicrohttpd 0.9.75 lacks) and, when the server drains, idle ones. Knows
 * sockets, not HTTP: what a late body is answered is the server's callback. */
#ifndef ZBSO_HTTP_CONNTRACK_H
#define ZBSO_HTTP_CONNTRACK_H

#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"

/* Where a connection is. */
enum ct_phase {
    CT_IDLE = 0,  /* between requests (or new): no byte of a next request seen yet */
    CT_HEAD,      /* bytes of a request head arrived; the head is not complete yet */
    CT_BODY,      /* the head is complete, the body is being read */
    CT_BUSY,      /* the request is complete: it is being run or answered */
};

/* One connection's state, as the decisions below read it. Times are monotonic ms;
 * byte counts are the socket's totals since it was accepted. */
typedef struct ct_state {
    uint8_t phase;           /* enum ct_phase */
    bool line_seen;          /* the current request's line was parsed */
    bool shut;               /* zbso shut the socket down (header timeout or drain) */
    int64_t since_ms;        /* when the phase began (CT_HEAD: when its bytes were seen;
                              * CT_BODY: when the head was complete) */
    uint64_t rx_base;        /* bytes received when the connection last became idle */
    uint64_t tx_base;        /* bytes written when the connection last became idle */
} ct_state;

/* What the periodic check does with a connection. */
enum ct_verdict {
    CT_KEEP,           /* nothing */
    CT_HEAD_STARTED,   /* new bytes on an idle connection: a request head began */
    CT_SHUT_SLOW_HEAD, /* its head took header_timeout_ms or more: shut it down */
    CT_SHUT_SLOW_BODY, /* its body took body_timeout_ms or more: answer 408, shut it down */
    CT_SHUT_IDLE,      /* draining, idle for a while and no new byte: shut it down */
};

/* Milliseconds a connection must have been idle before a drain closes it: a request the
 * client sent right after its previous answer (pipelined, or already in libmicrohttpd's
 * buffer) reaches the handler well within this. */
#define CT_DRAIN_IDLE_MS 50

/* The periodic check's decision for a connection in state s, whose socket has received
 * rx_now bytes in all, at now_ms. header_timeout_ms <= 0 disables the header timeout,
 * body_timeout_ms <= 0 the body timeout. Pure. */
enum ct_verdict conntrack_judge(const ct_state *s, uint64_t rx_now, int64_t now_ms,
                                int64_t header_timeout_ms, int64_t body_timeout_ms,
                                bool draining);

/* Whether a connection that libmicrohttpd is closing is owed an answer it never got: bytes
 * of a request arrived since it was last idle (rx_now > rx_base), no request line was
 * parsed from them, nothing was written since (tx_now == tx_base: libmicrohttpd sent no
 * error of its own), and neither zbso (shut) nor a server stop closed it. That is a
 * request line libmicrohttpd 0.9.75 drops without a word ("HELLO"). Pure. */
bool conntrack_owes_answer(const ct_state *s, uint64_t rx_now, uint64_t tx_now,
                           bool stopping);

typedef struct conntrack conntrack;
typedef struct ct_entry ct_entry;

/* Called by the periodic check, with the tracker's lock held, for a connection whose body
 * is late, just before it is shut down: fd is open and nothing else writes to it then, so
 * the callback may write an answer (a 408) to it without blocking. */
typedef void (*ct_late_body_fn)(void *cls, int fd);

/* Creates the tracker for descriptors below max_fd and starts its periodic check (every
 * second, or a quarter of the shorter timeout when that is shorter). header_timeout_s 0
 * disables the header timeout, body_timeout_s 0 the body timeout; late_body (may be NULL)
 * is called for each connection closed by the body timeout. Returns 0, or ZBSO_ENOMEM /
 * ZBSO_EIO with err set. */
int conntrack_start(unsigned max_fd, double header_timeout_s, double body_timeout_s,
                    ct_late_body_fn late_body, void *cls, conntrack **out, zbso_err *err);

/* Stops the periodic check and frees the tracker. Call after libmicrohttpd has stopped.
 * NULL is a no-op. */
void conntrack_stop(conntrack *ct);

/* A connection on fd was accepted. Returns its entry, or NULL when fd is out of the
 * table (it is counted but not timed). */
ct_entry *conntrack_opened(conntrack *ct, int fd);

/* The connection is being closed (its fd is still open). Returns true when it is owed an
 * answer to a request line that could not be parsed (conntrack_owes_answer); the caller
 * may then write one to fd before it is closed. e may be NULL. */
bool conntrack_closed(conntrack *ct, ct_entry *e, int fd);

/* The current request's line was parsed. */
void conntrack_line_parsed(conntrack *ct, ct_entry *e);

/* The current request's head is complete (the handler got it); its body is read next.
 * Returns false when the connection was already shut down (a drain or the header timeout
 * got there first): the request must then not be run, since its answer could not be
 * sent. */
bool conntrack_head_done(conntrack *ct, ct_entry *e);

/* The current request's body is complete (or its answer is queued without it). Returns
 * false when the body timeout shut the connection down first: the request must then not
 * be run (it was answered 408). */
bool conntrack_body_done(conntrack *ct, ct_entry *e);

/* The current request ended (answered, or aborted); the connection is idle again. */
void conntrack_request_done(conntrack *ct, ct_entry *e, int fd);

/* The number of connections open now. */
unsigned conntrack_open_count(conntrack *ct);

/* Starts draining: from now on idle connections are shut down (CT_SHUT_IDLE), those with
 * a request go on. Waits until no connection is open or timeout_s has passed. Returns the
 * number of connections still open. */
unsigned conntrack_drain(conntrack *ct, double timeout_s);

/* The server is stopping and closes what is left: no more owed answers. */
void conntrack_stopping(conntrack *ct);

#endif
