/* server.c: the libmicrohttpd lifecycle: bind, connection limits and timeouts, per-request
 * state, request framing, bearer auth, bodies up to a limit, Content-Type check, handing
 * service calls to the worker pool, queueing replies, the request log and the drain at
 * stop. Knows nothing of what a route means (routes.c) or of status policy (status.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http/conntrack.h"
#include "http/httpInt.h"
#include "http/metrics.h"
#include "http/workers.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"

#define DEFAULT_MAX_BODY ((size_t)1 << 20)
#define HOST_MAX 255
/* libmicrohttpd's memory per connection: the request head (line, headers, their index),
 * the read buffer that body chunks pass through (bodies are buffered by us, up to
 * max_body) and the reply's header block. libmicrohttpd zeroes all of it after every
 * request, so an idle keep-alive connection keeps it resident: 16 KiB holds a head of
 * about 8 KiB (the common limit of web servers) and keeps 10,000 idle connections near
 * 160 MB. */
#define CONN_MEMORY_BYTES ((size_t)16 * 1024)
/* Query arguments accepted in one request; more get 414 (the API takes one). */
#define MAX_QUERY_ARGS 32u
/* libmicrohttpd's own connection limit sits this far above ours: ours refuses (and says
 * so) first, and its listening socket never leaves the event loop, so connections beyond
 * the limit are refused at once rather than left waiting in the kernel's queue. */
#define MHD_LIMIT_SLACK 16u
#define MHD_LOG_KINDS 32
/* At the drain's end, how long workers may still take to return at least. */
#define WORKER_GRACE_S 0.1
/* Request workers run this many nice steps below the event loop, which every request
 * passes through twice: a worker is one of many, the loop only one. */
#define WORKER_NICE 5
/* Routes marked background (inspection, /metrics, /openapi.json) run on their own few
 * workers far below the protocol's: a dashboard or a script that reads a job of 20,000
 * trials in a loop takes only the CPU the training clients leave (docs/DESIGN.md,
 * "Inspection"). */
#define BACKGROUND_WORKERS 4u
#define BACKGROUND_NICE 15

/* The answer to a request line libmicrohttpd cannot parse and drops without one. */
static const char BAD_LINE_ANSWER[] =
    "HTTP/1.1 400 Bad Request\r\n"
    "Content-Type: application/json\r\n"
    "Content-Length: 83\r\n"
    "Connection: close\r\n"
    "\r\n"
    "{\"message\":\"malformed request line: expected METHOD SP request-target SP HTTP/1.x\"}";

/* The 408 written to a connection whose body the body timeout cut off (conntrack's
 * periodic check writes it; "%g" is the timeout). */
#define LATE_BODY_JSON "{\"message\":\"the request body was not complete within the body " \
                       "timeout of %g s\"}"

/* One rate limit per libmicrohttpd message format. */
typedef struct mhd_log_kind {
    _Atomic(const char *) fmt;
    log_limit limit;
} mhd_log_kind;

struct http_server {
    struct MHD_Daemon *daemon;
    http_ctx ctx;
    http_workers *workers;
    http_workers *background;    /* for routes marked background */
    conntrack *ct;
    char *token_copy[HTTP_TOKEN_CLASSES]; /* owned copies of the configured tokens */
    http_tokens tokens;          /* the same, for auth.c */
    bool auth;                   /* any token is configured: routes need theirs */
    size_t max_body;
    size_t body_memory_max;      /* bytes of request bodies held at once, at most */
    atomic_size_t body_memory;   /* bytes of request bodies held now (received, not freed) */
    char late_body_answer[384];  /* the 408 for a body the body timeout cut off */
    size_t late_body_len;
    unsigned capacity;           /* connections open at once */
    unsigned per_ip_limit;
    int port;
    atomic_bool draining;        /* answers carry "Connection: close" */
    atomic_bool starting;        /* while true, MHD's log lines are kept for the error */
    char start_error[256];
    log_limit refused_log, bad_line_log, other_mhd_log, body_memory_log;
    mhd_log_kind mhd_kinds[MHD_LOG_KINDS];
};

/* One request, from its request line to MHD_OPTION_NOTIFY_COMPLETED. */
typedef struct req_state {
    http_task task;              /* first: the worker pool hands this back */
    http_server *srv;
    struct MHD_Connection *conn;
    int64_t t0_ns;               /* CLOCK_MONOTONIC when the head arrived */
    const http_route *route;
    http_token_class token_class; /* who the Authorization header says the client is */
    bool begun;                  /* the handler got the head */
    bool decided;                /* reply already settled (an error found before the body) */
    bool close_after;            /* answer at once and close: the framing is not to trust */
    bool queued;                 /* a response is queued: ignore further calls */
    bool dispatched;             /* handed to a worker */
    bool body_done;              /* the tracker was told the body is complete */
    size_t body_charged;         /* bytes of body counted in srv->body_memory */
    atomic_bool ready;           /* the worker filled reply */
    http_reply reply;
    zbso_buf body;               /* accumulated request body, at most max_body bytes */
} req_state;

/* Microseconds on CLOCK_MONOTONIC since t0_ns (a clk_mono_ns reading). */
static int64_t elapsed_us(int64_t t0_ns)
{
    return (clk_mono_ns() - t0_ns) / 1000;
}

static ct_entry *conn_entry(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static int conn_fd(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

/* The rate limit of libmicrohttpd's message format fmt (one per format; a shared one
 * when the table is full). */
static log_limit *mhd_kind(http_server *srv, const char *fmt)
{
    for (int i = 0; i < MHD_LOG_KINDS; i++) {
        mhd_log_kind *k = &srv->mhd_kinds[i];
        const char *have = atomic_load(&k->fmt);
        if (have == fmt)
            return &k->limit;
        if (!have) {
            const char *none = NULL;
            if (atomic_compare_exchange_strong(&k->fmt, &none, fmt) || none == fmt)
                return &k->limit;
        }
    }
    return &srv->other_mhd_log;
}

/* libmicrohttpd's error log goes to ours, each kind of message at most once a second (a
 * connection flood would otherwise write a line per connection). During start the last
 * line is kept so the error returned can say why listening failed. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    http_server *srv = cls;
    static const char at_limit[] = "Server reached connection limit";
    if (strncmp(fmt, at_limit, sizeof at_limit - 1) == 0) {
        /* Our accept policy refuses before libmicrohttpd's total limit, so this is the
         * per-address limit. */
        log_limited(mhd_kind(srv, fmt), ZLOG_WARN, "refused a connection: its client "
                    "address has %u connections open, the per-address limit",
                    srv->per_ip_limit);
        return;
    }
    /* Messages about what a client did (a malformed or oversized request, a connection
     * that ended early) are warnings; anything else from libmicrohttpd is an error. */
    static const char *const client_caused[] = {
        "Error processing request", "Not enough memory in pool",
        "Connection socket is closed", "Failed to parse", "Too large value of",
        "Received HTTP/1.1 request without",
    };
    int level = ZLOG_ERROR;
    for (size_t i = 0; i < sizeof client_caused / sizeof client_caused[0]; i++)
        if (strncmp(fmt, client_caused[i], strlen(client_caused[i])) == 0)
            level = ZLOG_WARN;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    if (atomic_load(&srv->starting)) {
        size_t k = n < sizeof srv->start_error - 1 ? n : sizeof srv->start_error - 1;
        memcpy(srv->start_error, line, k);
        srv->start_error[k] = '\0';
    }
    log_limited(mhd_kind(srv, fmt), level, "libmicrohttpd: %s", line);
}

/* MHD_OPTION_ACCEPT_POLICY: refuses a connection beyond the limit (closed at once, so the
 * client learns it now rather than waiting in the kernel's queue). */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    http_server *srv = cls;
    unsigned open = conntrack_open_count(srv->ct);
    if (open < srv->capacity)
        return MHD_YES;
    log_limited(&srv->refused_log, ZLOG_WARN, "refused a connection: %u connections are open, "
                "the limit", open);
    return MHD_NO;
}

/* MHD_OPTION_NOTIFY_CONNECTION: keeps the tracker's table. A connection closing with a
 * request line libmicrohttpd dropped unanswered gets its 400 here, where its socket is
 * still open (MHD_USE_TURBO: libmicrohttpd does not shut the socket before this). */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    http_server *srv = cls;
    int fd = conn_fd(c);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        *socket_context = conntrack_opened(srv->ct, fd);
        return;
    }
    if (conntrack_closed(srv->ct, *socket_context, fd)) {
        (void)!send(fd, BAD_LINE_ANSWER, sizeof BAD_LINE_ANSWER - 1,
                    MSG_NOSIGNAL | MSG_DONTWAIT);
        log_limited(&srv->bad_line_log, ZLOG_INFO,
                    "- - 400 job_id=- (a request line that is not HTTP; connection closed)");
    }
    *socket_context = NULL;
}

/* MHD_OPTION_URI_LOG_CALLBACK: called once the request line is parsed, before its path and
 * query arguments are decoded. Allocates the request's state. A path that decodes to a
 * NUL or to bytes that are not UTF-8 is settled as 400 here (http_path_check): decoded, it
 * would reach the route table cut short at the NUL. libmicrohttpd 0.9.75 stores every query
 * argument in the connection's fixed memory and, when that runs out, drops the connection
 * without an answer; so more than MAX_QUERY_ARGS arguments are cut off here (the query
 * text is ended after its '?', in libmicrohttpd's own buffer, which this callback may
 * write) and the request is answered 414. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *c)
{
    http_server *srv = cls;
    conntrack_line_parsed(srv->ct, conn_entry(c));
    req_state *rs = calloc(1, sizeof *rs);
    if (rs) {
        int rc = http_path_check(uri, &rs->reply.err);
        if (rc == ZBSO_EINVAL) {
            http_reply_status(&rs->reply, 400);
            rs->decided = true;
        } else if (rc < 0) {
            http_reply_error(&rs->reply, rc);
            rs->decided = true;
        }
    }
    char *q = strchr(uri, '?');
    if (!q || !q[1])
        return rs;
    unsigned args = 1;
    for (const char *p = q + 1; *p; p++)
        args += *p == '&';
    if (args <= MAX_QUERY_ARGS)
        return rs;
    q[1] = '\0';
    if (rs) {
        err_clear(&rs->reply.err);
        err_set(&rs->reply.err, ZBSO_EINVAL, "the query string has %u arguments; at most %u "
                "are accepted", args, MAX_QUERY_ARGS);
        http_reply_status(&rs->reply, 414);
        rs->decided = rs->close_after = true;
    }
    return rs;
}

/* Returns 0 when the request carries one of the server's tokens (http_auth_identify),
 * with its class in *cls, else ZBSO_EAUTH with the reason. */
static int check_auth(const http_server *srv, struct MHD_Connection *c, http_token_class *cls,
                      zbso_err *err)
{
    return http_auth_identify(&srv->tokens,
                              MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                          MHD_HTTP_HEADER_AUTHORIZATION),
                              cls, err);
}

/* The ZBSO_EFORBIDDEN of a valid token whose class may not use route. */
static int forbidden(const http_route *route, http_token_class cls, zbso_err *err)
{
    static const char *const need[] = {
        [HTTP_SCOPE_PUBLIC] = "no token", [HTTP_SCOPE_READ] = "the read token or the API token",
        [HTTP_SCOPE_CLIENT] = "the client token or the API token",
        [HTTP_SCOPE_ADMIN] = "the API token (ZEUS_BSO_API_TOKEN)"};
    return err_set(err, ZBSO_EFORBIDDEN, "the %s token may not use %s %s: it needs %s",
                   http_token_class_name(cls), route->method, route->path, need[route->scope]);
}

/* Returns 0 when Content-Type is absent, empty or application/json (any parameters, any
 * case): the Zeus client sends bodies without one. Else ZBSO_EINVAL naming the type. */
static int check_content_type(struct MHD_Connection *c, zbso_err *err)
{
    static const char json_type[] = "application/json";
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!v)
        return 0;
    const char *p = v;
    while (*p == ' ' || *p == '\t')
        p++;
    size_t n = strcspn(p, ";");
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    if (n == 0 || (n == sizeof json_type - 1 && strncasecmp(p, json_type, n) == 0))
        return 0;
    return err_set_field(err, ZBSO_EINVAL, "body", NULL,
                         "Content-Type must be application/json, got \"%.100s\"", v);
}

/* The headers that say where a request's body ends. */
typedef struct framing {
    unsigned content_length, transfer_encoding;
    const char *te;               /* the first Transfer-Encoding value */
} framing;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    framing *f = cls;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        f->content_length++;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        if (f->transfer_encoding++ == 0)
            f->te = value;
    }
    return MHD_YES;
}

/* Returns 0 when the request's length is unambiguous: at most one Content-Length and no
 * Transfer-Encoding, or a single "Transfer-Encoding: chunked" alone. Otherwise (RFC 9112
 * section 6.3: a server cannot know where such a request ends, and a second request hidden in
 * its body must never be served) ZBSO_EINVAL saying which headers clash. libmicrohttpd
 * 0.9.75 uses the first Content-Length and lets Transfer-Encoding win silently. */
static int check_framing(struct MHD_Connection *c, zbso_err *err)
{
    framing f = {0, 0, NULL};
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_framing, &f);
    if (f.content_length > 1)
        return err_set(err, ZBSO_EINVAL, "the request has %u Content-Length headers; its "
                       "length is ambiguous", f.content_length);
    if (f.transfer_encoding && f.content_length)
        return err_set(err, ZBSO_EINVAL, "the request has both Transfer-Encoding and "
                       "Content-Length; its length is ambiguous");
    if (f.transfer_encoding > 1)
        return err_set(err, ZBSO_EINVAL, "the request has %u Transfer-Encoding headers; "
                       "only one \"Transfer-Encoding: chunked\" is accepted",
                       f.transfer_encoding);
    if (f.transfer_encoding) {
        const char *p = f.te;
        while (*p == ' ' || *p == '\t')
            p++;
        size_t n = strlen(p);
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if (n != 7 || strncasecmp(p, "chunked", 7) != 0)
            return err_set(err, ZBSO_EINVAL, "Transfer-Encoding \"%.60s\" is not supported: "
                           "send a Content-Length or \"Transfer-Encoding: chunked\"", f.te);
    }
    return 0;
}

/* Settles the reply before the body arrives for requests that will fail anyway:
 * ambiguous framing (400, and the connection closes), auth (401: before routing, so
 * that without the token no path, method or route is revealed), unknown path (404),
 * wrong method (405), Content-Type (422). */
static void request_begin(const http_server *srv, struct MHD_Connection *c, const char *url,
                          const char *method, req_state *rs)
{
    http_reply *r = &rs->reply;
    const char *allow = NULL;
    int rc;
    r->url = url;
    if (check_framing(c, &r->err) < 0) {
        http_reply_status(r, 400);
        rs->decided = rs->close_after = true;
        return;
    }
    rs->route = http_route_find(method, url, &allow);
    rc = 0;
    if (srv->auth && !(rs->route && rs->route->scope == HTTP_SCOPE_PUBLIC)) {
        rc = check_auth(srv, c, &rs->token_class, &r->err);
        if (rc == 0 && rs->route && !http_scope_allows(rs->route->scope, rs->token_class))
            rc = forbidden(rs->route, rs->token_class, &r->err);
    } else if (srv->auth) {
        /* A public route is served either way; whether a token came decides only how much
         * it says (GET /healthz's cause, for the operators' tokens). */
        zbso_err ignored;
        err_clear(&ignored);
        if (check_auth(srv, c, &rs->token_class, &ignored) < 0)
            rs->token_class = HTTP_TOKEN_NONE;
    }
    r->authorized = rs->token_class == HTTP_TOKEN_API || rs->token_class == HTTP_TOKEN_READ;
    if (rc == 0 && !rs->route && allow) {
        rc = err_set(&r->err, ZBSO_EMETHOD,
                     "method %.16s is not allowed on %.200s (allowed: %s)", method, url, allow);
        r->allow = allow;
    } else if (rc == 0 && !rs->route) {
        rc = err_set(&r->err, ZBSO_ENOTFOUND, "no such path: %.200s", url);
    }
    if (rc == 0 && rs->route->has_body)
        rc = check_content_type(c, &r->err);
    if (rc < 0) {
        http_reply_error(r, rc);
        rs->decided = true;
    }
}

/* The declared body length, or 0 when none was declared (chunked or no body). */
static size_t content_length(struct MHD_Connection *c)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                MHD_HTTP_HEADER_CONTENT_LENGTH);
    return v ? (size_t)strtoull(v, NULL, 10) : 0;
}

/* Settles a 413 naming the declared length when there was one. */
static void reply_too_big(const http_server *srv, req_state *rs, size_t declared)
{
    http_reply *r = &rs->reply;
    if (declared)
        err_set(&r->err, ZBSO_ETOOBIG, "request body of %zu bytes is over the limit of %zu "
                "bytes", declared, srv->max_body);
    else
        err_set(&r->err, ZBSO_ETOOBIG, "request body is over the limit of %zu bytes",
                srv->max_body);
    http_reply_error(r, ZBSO_ETOOBIG);
    rs->decided = true;
}

/* conntrack's callback for a connection whose body the body timeout cut off: writes the
 * 408 (the socket is open, and nothing else writes to it while a body is read). */
static void answer_late_body(void *cls, int fd)
{
    http_server *srv = cls;
    (void)!send(fd, srv->late_body_answer, srv->late_body_len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Gives back the bytes rs's body counted in the server's body memory. */
static void body_release(http_server *srv, req_state *rs)
{
    if (rs->body_charged) {
        atomic_fetch_sub(&srv->body_memory, rs->body_charged);
        rs->body_charged = 0;
    }
}

/* Settles a 503 for a body the cap on body memory refuses (held bytes are held by the
 * bodies being received); the connection closes after the answer. */
static void reply_body_memory(http_server *srv, req_state *rs, size_t held)
{
    err_set(&rs->reply.err, ZBSO_EUNAVAIL, "the server is receiving %zu bytes of request "
            "bodies, its limit of %zu allows no more now; try again", held,
            srv->body_memory_max);
    http_reply_error(&rs->reply, ZBSO_EUNAVAIL);
    rs->decided = rs->close_after = true;
    log_limited(&srv->body_memory_log, ZLOG_WARN, "answered 503 to a request body: %zu bytes "
                "of request bodies are held, the limit is %zu", held, srv->body_memory_max);
}

/* Appends a chunk of body. Past max_body the body is dropped and the reply becomes 413;
 * the rest of the body is still read so the connection can be kept alive. Every byte is
 * counted in the server's body memory first: past its cap the body is dropped and the
 * reply becomes 503, and the connection closes after it. */
static void body_append(http_server *srv, req_state *rs, const char *data, size_t n)
{
    size_t held = atomic_fetch_add(&srv->body_memory, n) + n;
    rs->body_charged += n;
    if (held > srv->body_memory_max) {
        body_release(srv, rs);
        buf_free(&rs->body);
        reply_body_memory(srv, rs, held - n);
        return;
    }
    size_t want = buf_len(&rs->body) + n;
    int rc = buf_addn(&rs->body, data, n);
    if (rc < 0)
        body_release(srv, rs);  /* buf_addn freed the body */
    if (rc == ZBSO_ETOOBIG) {
        reply_too_big(srv, rs, 0);
    } else if (rc < 0) {
        err_set(&rs->reply.err, ZBSO_ENOMEM, "out of memory reading a %zu-byte body", want);
        http_reply_error(&rs->reply, ZBSO_ENOMEM);
        rs->decided = true;
    }
}

/* The request log: one INFO line per request (skipped, formatting included, above INFO)
 * and an ERROR line with the message for every 5xx. The method, path and job id are the
 * client's text: escaped (log_escape), so they cannot forge or break a line. */
static void log_request(const char *method, const char *url, const req_state *rs)
{
    const http_reply *r = &rs->reply;
    if (r->status < 500 && log_get_level() > ZLOG_INFO)
        return;
    char m[64], u[1024], j[4 * ZBSO_ID_MAX + 8];
    log_escape(method, strlen(method), m, sizeof m);
    log_escape(url, strlen(url), u, sizeof u);
    if (r->status >= 500) {
        char e[4 * ZBSO_ERR_MSG_MAX + 8];
        log_error("%s %s %d: %s", m, u, r->status,
                  log_escape(r->err.msg, strlen(r->err.msg), e, sizeof e));
    }
    if (log_get_level() > ZLOG_INFO)
        return;
    log_info("%s %s %d job_id=%s %lldus", m, u, r->status,
             r->job_id[0] ? log_escape(r->job_id, strlen(r->job_id), j, sizeof j) : "-",
             (long long)elapsed_us(rs->t0_ns));
}

/* The audit log (issue 26): one WARN line, so it is kept at the usual production levels,
 * for every request to a route only the API token may use (DELETE /jobs, PUT
 * /power_profiles), answered or refused: who (the token's class, never the token; the
 * client's address), what (method, path, job id, status), when (the log's timestamp). */
static void log_audit(struct MHD_Connection *c, const char *method, const char *url,
                      const req_state *rs)
{
    const http_reply *r = &rs->reply;
    if (!rs->route || rs->route->scope != HTTP_SCOPE_ADMIN)
        return;
    char m[64], u[1024], j[4 * ZBSO_ID_MAX + 8], addr[INET6_ADDRSTRLEN] = "-";
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci && ci->client_addr) {
        const struct sockaddr *sa = ci->client_addr;
        if (sa->sa_family == AF_INET)
            inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, addr,
                      sizeof addr);
        else if (sa->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
                      addr, sizeof addr);
    }
    /* The job the request named: as the handler parsed it, or from the query when the
     * request was refused before that (401, 403). */
    const char *job = r->job_id[0] ? r->job_id
                                   : MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
                                                                 "job_id");
    log_warn("audit: %s %s job_id=%s status=%d token=%s client=%s",
             log_escape(method, strlen(method), m, sizeof m),
             log_escape(url, strlen(url), u, sizeof u),
             job && job[0] ? log_escape(job, strnlen(job, ZBSO_ID_MAX), j, sizeof j) : "-",
             r->status, rs->token_class != HTTP_TOKEN_NONE
                            ? http_token_class_name(rs->token_class)
                            : (rs->srv && rs->srv->auth ? "none" : "auth-off"),
             addr);
}

/* Queues rs->reply. The body is handed to MHD (freed by it). Returns MHD's verdict;
 * MHD_NO makes MHD close the connection. */
static enum MHD_Result queue_reply(http_server *srv, struct MHD_Connection *c,
                                   const char *method, const char *url, req_state *rs)
{
    http_reply *r = &rs->reply;
    enum MHD_Result ret = MHD_NO;
    if (!rs->body_done) {
        /* Answered without (the rest of) its body: the body timeout no longer applies. */
        rs->body_done = true;
        conntrack_body_done(srv->ct, conn_entry(c));
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        r->len, r->body, r->body_static ? MHD_RESPMEM_PERSISTENT : MHD_RESPMEM_MUST_FREE);
    if (!resp)
        goto out;
    r->body = NULL; /* MHD owns it now */
    if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                r->content_type ? r->content_type : "application/json") !=
            MHD_YES ||
        (r->status == 401 &&
         MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer") !=
             MHD_YES) ||
        (r->status == 405 && r->allow &&
         MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow) != MHD_YES) ||
        (r->status == 503 &&
         MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1") != MHD_YES) ||
        ((rs->close_after || atomic_load(&srv->draining)) &&
         MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") != MHD_YES))
        goto out;
    bool cache_set = false;
    for (const char *const *h = r->headers; h && h[0]; h += 2) {
        cache_set |= strcasecmp(h[0], MHD_HTTP_HEADER_CACHE_CONTROL) == 0;
        if (MHD_add_response_header(resp, h[0], h[1]) != MHD_YES)
            goto out;
    }
    /* Answers hold job data (or say what is wrong with a request): no cache, shared or
     * the browser's, may keep them. The dashboard's files set their own. */
    if (!cache_set &&
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store") != MHD_YES)
        goto out;
    if (r->job_revision > 0) {
        char v[24];
        snprintf(v, sizeof v, "%lld", (long long)r->job_revision);
        if (MHD_add_response_header(resp, HTTP_HEADER_JOB_VERSION, v) != MHD_YES)
            goto out;
    }
    http_metrics_request(srv->ctx.metrics, rs->route, method, (unsigned)r->status,
                         clk_mono_ns() - rs->t0_ns);
    ret = MHD_queue_response(c, (unsigned)r->status, resp);
    rs->queued = true;
    log_request(method, url, rs);
    log_audit(c, method, url, rs);
out:
    if (resp)
        MHD_destroy_response(resp);
    return ret;
}

/* A worker runs the route's handler (the blocking service call), then wakes the
 * connection; the event loop's next handler call queues the reply. */
static void run_request(http_task *t)
{
    req_state *rs = (req_state *)t;
    rs->route->fn(&rs->srv->ctx, rs->conn, buf_ptr(&rs->body), buf_len(&rs->body),
                  &rs->reply);
    atomic_store(&rs->ready, true);
    MHD_resume_connection(rs->conn);
}

/* MHD calls this once with the headers, once per body chunk, and once more at the end
 * (again after each resume). Queueing on the first call would make MHD 0.9.75 close the
 * connection, so replies are queued on the last call, except where closing is the point:
 * ambiguous framing and too many query arguments (the rest of the request is not to be
 * read), and a declared body over the limit (not worth reading). On the last call the
 * service call goes to a worker while the connection is suspended. GET /healthz goes
 * there too: it asks the store (store_health), which may commit a probe write, and nothing
 * that can block runs on the event loop. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    http_server *srv = cls;
    req_state *rs = *con_cls;
    if (!rs) {
        rs = calloc(1, sizeof *rs);
        if (!rs)
            return MHD_NO;
        *con_cls = rs;
    }
    if (!rs->begun) {
        rs->begun = true;
        rs->t0_ns = clk_mono_ns();
        buf_init(&rs->body, srv->max_body);
        if (!conntrack_head_done(srv->ct, conn_entry(c)))
            return MHD_NO;
        if (!rs->decided)
            request_begin(srv, c, url, method, rs);
        if (rs->close_after)
            return queue_reply(srv, c, method, url, rs);
        size_t declared = content_length(c);
        if (declared > srv->max_body) {
            if (!rs->decided)
                reply_too_big(srv, rs, declared);
            return queue_reply(srv, c, method, url, rs);
        }
        /* A body that would take the bodies being received past their cap is refused at
         * once (a chunked one counts as it comes, in body_append). */
        size_t held = atomic_load(&srv->body_memory);
        if (!rs->decided && declared > 0 && held + declared > srv->body_memory_max) {
            reply_body_memory(srv, rs, held);
            return queue_reply(srv, c, method, url, rs);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (!rs->decided && !rs->queued)
            body_append(srv, rs, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (rs->queued)
        return MHD_YES;
    if (!rs->body_done) {
        rs->body_done = true;
        if (!conntrack_body_done(srv->ct, conn_entry(c)))
            return MHD_NO;  /* the body timeout answered 408 first */
    }
    if (!rs->decided && !rs->dispatched) {
        rs->dispatched = true;
        rs->srv = srv;
        rs->conn = c;
        rs->task.fn = run_request;
        MHD_suspend_connection(c);
        http_workers_submit(rs->route->background ? srv->background : srv->workers,
                            &rs->task);
        return MHD_YES;
    }
    if (rs->dispatched && !atomic_load(&rs->ready))
        return MHD_YES;
    return queue_reply(srv, c, method, url, rs);
}

/* MHD_OPTION_NOTIFY_COMPLETED: frees what the request still owns, whatever its end, and
 * marks the connection idle. A dispatched request is never completed while its worker
 * runs: its connection is suspended, and MHD completes suspended connections only in
 * MHD_stop_daemon, which http_server_stop calls once no worker is busy. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    http_server *srv = cls;
    req_state *rs = *con_cls;
    conntrack_request_done(srv->ct, conn_entry(c), conn_fd(c));
    if (!rs)
        return;
    if (!rs->reply.body_static)
        free(rs->reply.body);
    body_release(srv, rs);
    buf_free(&rs->body);
    free(rs);
    *con_cls = NULL;
}

/* Resolves host (an IPv4 or IPv6 literal, "[v6]" or a name) and port into ss. Returns 0,
 * or ZBSO_EINVAL naming the host or port. */
static int resolve(const char *host, int port, struct sockaddr_storage *ss, bool *ipv6,
                   zbso_err *err)
{
    char name[HOST_MAX + 1];
    struct addrinfo hints, *res = NULL;
    size_t n = strlen(host);
    int rc;
    if (port < 0 || port > 65535)
        return err_set(err, ZBSO_EINVAL, "port %d is out of range 0..65535", port);
    if (n > HOST_MAX)
        return err_set(err, ZBSO_EINVAL, "host \"%.40s...\" is longer than %d bytes", host,
                       HOST_MAX);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']')
        snprintf(name, sizeof name, "%.*s", (int)(n - 2), host + 1);
    else
        snprintf(name, sizeof name, "%s", host);
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    if ((rc = getaddrinfo(name, NULL, &hints, &res)) != 0)
        return err_set(err, ZBSO_EINVAL, "cannot use host \"%s\" to listen on: %s", host,
                       gai_strerror(rc));
    memset(ss, 0, sizeof *ss);
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *ipv6 = res->ai_family == AF_INET6;
    if (*ipv6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
    freeaddrinfo(res);
    return 0;
}

/* The descriptor limit (the soft RLIMIT_NOFILE), capped to what an unsigned count and
 * the tracker's table sensibly hold. */
static unsigned fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur > (1u << 20))
        return 1u << 20;
    return (unsigned)rl.rlim_cur;
}

/* Frees what http_server_start built; the daemon must be stopped. */
static void server_free(http_server *srv)
{
    http_workers_stop(srv->workers);
    http_workers_stop(srv->background);
    conntrack_stop(srv->ct);
    http_metrics_free(srv->ctx.metrics);
    for (size_t i = 0; i < HTTP_TOKEN_CLASSES; i++)
        free(srv->token_copy[i]);
    free(srv);
}

int http_server_start(const http_config *cfg, store *st, const svc_env *env,
                      http_server **out, zbso_err *err)
{
    const char *host = cfg->host && cfg->host[0] ? cfg->host : "127.0.0.1";
    struct sockaddr_storage addr;
    bool ipv6 = false;
    int rc;
    http_server *srv = calloc(1, sizeof *srv);
    *out = NULL;
    if (!srv)
        return err_set(err, ZBSO_ENOMEM, "out of memory starting the HTTP server");
    srv->ctx.st = st;
    srv->ctx.env = env;
    srv->max_body = cfg->max_body_bytes ? cfg->max_body_bytes : DEFAULT_MAX_BODY;
    srv->body_memory_max = cfg->body_memory_bytes ? cfg->body_memory_bytes : HTTP_BODY_MEMORY;
    char late_json[160];
    int late_json_len = snprintf(late_json, sizeof late_json, LATE_BODY_JSON,
                                 cfg->body_timeout_s);
    int late_len = snprintf(srv->late_body_answer, sizeof srv->late_body_answer,
                            "HTTP/1.1 408 Request Timeout\r\n"
                            "Content-Type: application/json\r\n"
                            "Cache-Control: no-store\r\n"
                            "Content-Length: %d\r\n"
                            "Connection: close\r\n"
                            "\r\n%s", late_json_len, late_json);
    srv->late_body_len = late_len > 0 && (size_t)late_len < sizeof srv->late_body_answer
                             ? (size_t)late_len : 0;
    srv->per_ip_limit = cfg->per_ip_limit;
    unsigned nofile = fd_limit();
    srv->capacity = cfg->connection_limit;
    if (!srv->capacity)
        srv->capacity = nofile > 2 * HTTP_FD_RESERVE ? nofile - HTTP_FD_RESERVE : nofile / 2;
    const char *tokens[HTTP_TOKEN_CLASSES] = {cfg->api_token, cfg->read_token,
                                              cfg->client_token};
    for (size_t i = 0; i < HTTP_TOKEN_CLASSES; i++) {
        if (!tokens[i] || !tokens[i][0])
            continue;
        if ((srv->token_copy[i] = strdup(tokens[i])) == NULL) {
            rc = err_set(err, ZBSO_ENOMEM, "out of memory starting the HTTP server");
            goto out;
        }
        srv->tokens.t[i] = srv->token_copy[i];
        srv->tokens.len[i] = strlen(tokens[i]);
        srv->auth = true;
    }
    if ((rc = resolve(host, cfg->port, &addr, &ipv6, err)) < 0)
        goto out;
    if ((rc = http_metrics_new(http_route_at(0), http_route_count(), cfg->version,
                               cfg->metrics_per_job, &srv->ctx.metrics, err)) < 0)
        goto out;
    if ((rc = conntrack_start(nofile, cfg->header_timeout_s, cfg->body_timeout_s,
                              answer_late_body, srv, &srv->ct, err)) < 0 ||
        (rc = http_workers_start(cfg->workers ? cfg->workers : HTTP_DEFAULT_WORKERS,
                                 WORKER_NICE, "zbso-worker", &srv->workers, err)) < 0 ||
        (rc = http_workers_start(BACKGROUND_WORKERS, BACKGROUND_NICE, "zbso-background",
                                 &srv->background, err)) < 0)
        goto out;
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_TURBO | MHD_USE_ERROR_LOG | (ipv6 ? MHD_USE_IPv6 : 0);
    atomic_store(&srv->starting, true);
    srv->daemon = MHD_start_daemon(
        flags, (uint16_t)cfg->port, on_accept, srv, on_request, srv,
        /* The logger goes first: MHD logs the options that follow through it. */
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_CONNECTION_LIMIT, srv->capacity + MHD_LIMIT_SLACK,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg->per_ip_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(cfg->idle_timeout_s + 0.5),
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONN_MEMORY_BYTES,
        MHD_OPTION_URI_LOG_CALLBACK, on_request_line, srv,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        MHD_OPTION_END);
    atomic_store(&srv->starting, false);
    if (!srv->daemon) {
        rc = err_set(err, ZBSO_EIO, "cannot listen on %s port %d: %s", host, cfg->port,
                     srv->start_error[0] ? srv->start_error : "libmicrohttpd refused to start");
        goto out;
    }
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? (int)info->port : cfg->port;
    char per_ip[48];
    if (cfg->per_ip_limit)
        snprintf(per_ip, sizeof per_ip, "at most %u per client address", cfg->per_ip_limit);
    else
        snprintf(per_ip, sizeof per_ip, "no limit per client address");
    log_info("accepting up to %u connections (file descriptor limit %u, %u kept for the "
             "database and logs), %s; idle timeout %g s, header timeout %g s, body timeout "
             "%g s, request bodies held at once at most %zu bytes, %u workers",
             srv->capacity, nofile, nofile > srv->capacity ? nofile - srv->capacity : 0,
             per_ip, cfg->idle_timeout_s, cfg->header_timeout_s, cfg->body_timeout_s,
             srv->body_memory_max,
             cfg->workers ? cfg->workers : HTTP_DEFAULT_WORKERS);
    *out = srv;
    srv = NULL;
    rc = 0;
out:
    if (srv)
        server_free(srv);
    return rc;
}

int http_server_port(const http_server *srv)
{
    return srv ? srv->port : 0;
}

unsigned http_server_stop(http_server *srv, double drain_timeout_s)
{
    if (!srv)
        return 0;
    atomic_store(&srv->draining, true);
    MHD_socket ls = MHD_quiesce_daemon(srv->daemon);
    if (ls != MHD_INVALID_SOCKET)
        close(ls);
    int64_t t0_ns = clk_mono_ns();
    unsigned left = conntrack_drain(srv->ct, drain_timeout_s);
    /* A worker resumes its connection before it returns from the task, so the last answer
     * can be sent and its connection closed while the worker is still on its way out:
     * give workers what is left of the drain timeout, and at least a moment. */
    double rest = drain_timeout_s - (double)elapsed_us(t0_ns) / 1e6;
    unsigned running = http_workers_wait(srv->workers, rest > WORKER_GRACE_S ? rest
                                                                           : WORKER_GRACE_S);
    rest = drain_timeout_s - (double)elapsed_us(t0_ns) / 1e6;
    running += http_workers_wait(srv->background, rest > WORKER_GRACE_S ? rest
                                                                        : WORKER_GRACE_S);
    if (running) {
        log_error("drain timeout of %g s: %u request%s still running in the service, %u "
                  "connection%s open; exiting without their answers", drain_timeout_s,
                  running, running == 1 ? "" : "s", left, left == 1 ? "" : "s");
        return running;
    }
    if (left)
        log_warn("drain timeout of %g s: closing %u connection%s that did not finish a "
                 "request", drain_timeout_s, left, left == 1 ? "" : "s");
    conntrack_stopping(srv->ct);
    MHD_stop_daemon(srv->daemon);
    server_free(srv);
    return 0;
}
