/* loadgen.c: zbso-loadgen plays K concurrent recurring training jobs against a running zbso
 * server (SPEC §2 wire protocol) and prints per-endpoint throughput and latency percentiles.
 * A client only: it talks HTTP (its own minimal HTTP/1.1 client, see "HTTP transport"), never
 * touches the server's database or links server code. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "util/clock.h"

#define MAX_JOBS 1024
#define MAX_THREADS 64
#define EVENTS_MAX 256           /* epoll events taken per round */
#define MAX_BATCH_SIZES 32
#define URL_MAX 1024
#define TEXT_MAX 256             /* job ids, gpu model, token */
#define REQ_MAX 4096             /* request body bytes */
#define RESP_MAX (64 * 1024)     /* response body bytes; more is an error */
#define HEAD_MAX (8 * 1024)      /* response status line and headers; more is an error */
#define REQ_HEAD_MAX (URL_MAX + 4 * TEXT_MAX + 256) /* request line and headers */
#define MAX_SERVERS 16           /* --url given this many times at most */
#define MAX_ADDRS 2              /* addresses tried per connect (localhost: IPv4, IPv6) */
#define CONNECT_TIMEOUT_MS 5000
#define IO_TIMEOUT_S 30          /* no byte sent or received for this long: error */
#define ERROR_MAX 512
#define SAMPLES_INIT 1024
#define SAMPLES_MAX (1u << 18)   /* latency samples kept per job and endpoint (reservoir) */
#define STATUS_MAX 600
#define TARGET_METRIC 0.5
#define EXTRA_EPOCHS 5           /* reports past max_epochs before the server is at fault */
#define ERRORS_SHOWN 10

enum endpoint { EP_REGISTER, EP_NEXT, EP_REPORT, EP_END, EP_COUNT };
static const char *const ep_names[EP_COUNT] = {
    "POST /jobs", "GET /jobs/batch_size", "POST /report", "PATCH /trials",
};

/* One server (--url): replicas of one database are several. */
struct server {
    char url[URL_MAX + 1];
    char authority[URL_MAX + 1];    /* HOST:PORT of url, for the Host header */
    struct sockaddr_storage addrs[MAX_ADDRS]; /* where HOST:PORT connects, tried in order */
    socklen_t addr_lens[MAX_ADDRS];
    size_t n_addrs;
};

struct options {
    struct server servers[MAX_SERVERS]; /* job k talks to servers[k % n_servers] */
    size_t n_servers;
    int url_given;                  /* a --url replaced the default */
    char auth_line[TEXT_MAX + 64];  /* "Authorization: Bearer T\r\n", or "" */
    long jobs;
    long threads;
    double duration_s;
    uint64_t seed;
    char token[TEXT_MAX + 1];
    int64_t batch_sizes[MAX_BATCH_SIZES];
    size_t n_batch_sizes;
    int64_t default_batch_size;
    int64_t max_epochs;
    int has_beta_knob;
    double beta_knob;
    double eta_knob;
    double max_power_w;
    int64_t number_of_gpus;
    char gpu_model[TEXT_MAX + 1];
    int64_t window_size;
};

/* Latencies in microseconds: all of them up to SAMPLES_MAX, then a uniform reservoir. */
struct samples {
    uint32_t *us;
    size_t n, cap;
    uint64_t seen;
};

struct ep_stats {
    struct samples lat;
    uint64_t count;                 /* requests that got an answer */
    uint64_t status[STATUS_MAX];    /* answers by HTTP status */
    uint64_t conn_errors;           /* requests that got no answer */
};

/* The synthetic training model of one batch size: seconds per epoch, watts, and the epoch
 * at which the metric reaches the target (0: never). Small batches converge in few epochs
 * but run slowly (16 exceeds beta * min_cost), 128..256 are cheapest, 512 and larger never
 * converge (they run to max_epochs or past beta * min_cost). */
struct bs_model {
    double epoch_s;
    double power_w;
    int epochs_to_target;
};

static struct bs_model model_of(int64_t bs, double job_scale, double max_power_w)
{
    struct bs_model m;
    double b = (double)bs;
    m.epoch_s = (2.0 + 256.0 / b) * job_scale;
    m.power_w = fmin(max_power_w, 120.0 + 180.0 * b / (b + 128.0));
    m.epochs_to_target = bs <= 64 ? 4 : bs <= 128 ? 5 : bs <= 256 ? 6 : 0;
    return m;
}

/* Returns the validation metric after epoch (1-based): rises to the target at
 * epochs_to_target, or levels off below it when the batch size never converges. */
static double model_metric(const struct bs_model *m, int64_t epoch)
{
    double e = (double)epoch;
    if (m->epochs_to_target == 0)
        return 0.9 * TARGET_METRIC * (1.0 - exp(-e / 3.0));
    if (epoch < m->epochs_to_target)
        return TARGET_METRIC * e / (double)m->epochs_to_target;
    return TARGET_METRIC + 0.01 * (e - (double)m->epochs_to_target + 1.0);
}

/* Where a job is: the request it has out (or PH_DONE once it stopped). */
enum phase { PH_REGISTER, PH_NEXT, PH_REPORT, PH_END, PH_DONE };

/* One simulated job: a state machine run by one event thread, its keep-alive connection,
 * the request in flight, the trial in progress, its statistics. */
struct worker {
    int k;
    const struct options *opt;
    const struct server *srv;       /* the server this job talks to */
    char job_id[TEXT_MAX + 1];
    char prefix[TEXT_MAX + 1];
    double job_scale;               /* this job's hardware speed factor */
    uint64_t rng;                   /* splitmix64 state for the synthetic model */
    enum phase phase;
    int epfd;                       /* its event thread's epoll set */
    int fd;                         /* keep-alive connection, -1 when none */
    int want_out;                   /* fd is in the epoll set for writability too */
    /* The request in flight. */
    int in_flight;
    enum endpoint cur;
    const char *method;
    char path[TEXT_MAX + 64];
    char out[REQ_HEAD_MAX + REQ_MAX]; /* request line, headers and body */
    size_t out_len, out_sent;
    int reused;                     /* sent on a connection that served an earlier request */
    int attempt;                    /* 1 once sent again on a new connection */
    double t0, t_done;              /* just before it was sent; when its answer completed */
    double last_io;                 /* last byte sent or received */
    /* Its answer. */
    char buf[HEAD_MAX + RESP_MAX + 1]; /* headers, body, NUL */
    size_t in_len;
    int got_any;                    /* a byte of the answer came */
    long status;
    int keep;                       /* the connection stays open after it */
    char *resp;                     /* the body in buf, NUL-terminated */
    size_t resp_len;
    /* The trial in progress. */
    int64_t bs, trial, epoch;
    double time_s, energy_j;
    struct bs_model m;
    struct ep_stats ep[EP_COUNT];
    uint64_t trials, converged, not_converged, cut;
    char error[ERROR_MAX];          /* the error that stopped this job, "" when none */
};

/* An event thread and the jobs it drives. */
struct ev_thread {
    pthread_t tid;
    int started;
    int epfd;
    struct worker **jobs;
    size_t n;
};

static atomic_int stop_requested;
static double deadline_s;

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&stop_requested, 1);
}

/* splitmix64: returns the next 64 random bits of *state. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Returns a uniform double in [0, 1). */
static double uniform(uint64_t *state)
{
    return (double)(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* Records one latency. Grows the array up to SAMPLES_MAX (a failed growth keeps the current
 * size), then replaces a uniformly chosen sample (Algorithm R). */
static void samples_add(struct samples *s, uint32_t us, uint64_t *rng)
{
    s->seen++;
    if (s->n == s->cap && s->cap < SAMPLES_MAX) {
        size_t cap = s->cap ? s->cap * 2 : SAMPLES_INIT;
        uint32_t *grown = realloc(s->us, cap * sizeof *grown);
        if (grown != NULL) {
            s->us = grown;
            s->cap = cap;
        }
    }
    if (s->n < s->cap) {
        s->us[s->n++] = us;
        return;
    }
    if (s->n == 0)
        return;
    uint64_t j = splitmix64(rng) % s->seen;
    if (j < s->n)
        s->us[j] = us;
}


/* Records the first error of w; the job stops after it and the run exits 1. */
static void worker_fail(struct worker *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void worker_fail(struct worker *w, const char *fmt, ...)
{
    w->phase = PH_DONE;
    if (w->error[0] != '\0')
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->error, sizeof w->error, fmt, ap);
    va_end(ap);
}

/* HTTP transport. It is hand-written on purpose, not libcurl: a load generator must spend as
 * little CPU as possible beside the server it measures, and libcurl's per-request overhead
 * (about 46 us of CPU per request with one easy handle per thread) is comparable to the
 * server's own, so with both on a small machine the closed-loop latency measured the client
 * as much as the server. For the same reason the jobs are not one thread each but state
 * machines on a few event threads (--threads, one by default), as wrk does: with 32 blocking
 * threads every answer woke a sleeping thread (a context switch, often a cross-CPU wake-up),
 * while an event thread that is busy takes the next answer without sleeping. It speaks only
 * what zbso-loadgen needs: HTTP/1.1 keep-alive over one non-blocking TCP socket per job
 * (TCP_NODELAY), connected once and again when the server closes it; each request goes out
 * in one send; the answer is a status line, headers up to CRLFCRLF and a Content-Length body
 * (or a body up to EOF under "Connection: close") read into the job's fixed buffer, RESP_MAX
 * bytes of body at most. */

/* Closes w's connection, if any (which also takes it out of its epoll set). */
static void conn_close(struct worker *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
}

/* Connects fd to addr within CONNECT_TIMEOUT_MS, leaving it non-blocking. Returns 0, or an
 * errno value. A connect on loopback completes at once, so waiting here, with the rest of
 * the thread's jobs waiting too, happens only once per connection. */
static int connect_timed(int fd, const struct sockaddr *addr, socklen_t len)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
        return errno;
    if (connect(fd, addr, len) != 0) {
        if (errno != EINPROGRESS)
            return errno;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        double end = clk_mono_s() + CONNECT_TIMEOUT_MS / 1000.0;
        for (;;) {
            int left = (int)((end - clk_mono_s()) * 1000.0) + 1;
            int n = left > 0 ? poll(&p, 1, left) : 0;
            if (n > 0)
                break;
            if (n == 0)
                return ETIMEDOUT;
            if (errno != EINTR)
                return errno;
        }
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
            return errno;
        if (soerr != 0)
            return soerr;
    }
    return 0;
}

/* Opens w's connection, trying the server's addresses in order, and adds it to the event
 * thread's epoll set. Returns 0, or -1 with the reason in err. */
static int conn_open(struct worker *w, char *err, size_t errcap)
{
    const struct server *o = w->srv;
    int e = EADDRNOTAVAIL;
    for (size_t i = 0; i < o->n_addrs; i++) {
        const struct sockaddr *a = (const struct sockaddr *)&o->addrs[i];
        int fd = socket(a->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            e = errno;
            continue;
        }
        e = connect_timed(fd, a, o->addr_lens[i]);
        if (e == 0) {
            int one = 1;
            struct epoll_event ev = {.events = EPOLLIN, .data.ptr = w};
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) == 0) {
                w->fd = fd;
                w->want_out = 0;
                return 0;
            }
            e = errno;
        }
        close(fd);
    }
    snprintf(err, errcap, "cannot connect to %.200s: %s", o->authority, strerror(e));
    return -1;
}

/* Asks the epoll set for writability of w's connection too (on), or only readability. */
static void want_out(struct worker *w, int on)
{
    if (w->want_out == on)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = w};
    epoll_ctl(w->epfd, EPOLL_CTL_MOD, w->fd, &ev);
    w->want_out = on;
}

/* Sends what is left of the request in w->out. Returns 0 when all of it is out or the rest
 * waits for the socket to become writable, or -1 with the reason in err. */
static int send_some(struct worker *w, char *err, size_t errcap)
{
    while (w->out_sent < w->out_len) {
        ssize_t n = send(w->fd, w->out + w->out_sent, w->out_len - w->out_sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                want_out(w, 1);
                return 0;
            }
            snprintf(err, errcap, "send failed: %s", strerror(errno));
            return -1;
        }
        w->out_sent += (size_t)n;
        w->last_io = clk_mono_s();
    }
    want_out(w, 0);
    return 0;
}

/* Returns the offset just past the first CRLFCRLF of buf[0, len) searched from from, or 0
 * when there is none. */
static size_t find_head_end(const char *buf, size_t len, size_t from)
{
    for (size_t i = from; i + 4 <= len; i++)
        if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
            return i + 4;
    return 0;
}

/* Returns whether the comma-separated header value [v, end) holds token (any case). */
static int has_token(const char *v, const char *end, const char *token)
{
    size_t tl = strlen(token);
    while (v < end) {
        while (v < end && (*v == ' ' || *v == '\t' || *v == ','))
            v++;
        const char *t = v;
        while (v < end && *v != ',')
            v++;
        const char *te = v;
        while (te > t && (te[-1] == ' ' || te[-1] == '\t'))
            te--;
        if ((size_t)(te - t) == tl && strncasecmp(t, token, tl) == 0)
            return 1;
    }
    return 0;
}

/* What parse_response found, or found wrong. */
enum resp_state { RESP_MORE, RESP_DONE, RESP_PROTOCOL, RESP_OVERFLOW };

/* Parses the answer received so far, w->buf[0, w->in_len); eof says the server has closed
 * the connection after it. Drops 1xx interim answers. RESP_DONE sets w->status, w->keep,
 * w->resp and w->resp_len (the body, NUL-terminated); RESP_MORE means more bytes are
 * needed; RESP_PROTOCOL and RESP_OVERFLOW put the reason in err. */
static enum resp_state parse_response(struct worker *w, int eof, char *err, size_t errcap)
{
    const size_t cap = HEAD_MAX + RESP_MAX;
    for (;;) { /* until a final (non-1xx) answer's headers */
        size_t len = w->in_len;
        size_t head_len = find_head_end(w->buf, len, 0);
        if (head_len == 0 || head_len > HEAD_MAX) {
            if (len < HEAD_MAX && head_len == 0)
                return RESP_MORE;
            snprintf(err, errcap, "answer headers over %d bytes", HEAD_MAX);
            return RESP_PROTOCOL;
        }
        /* Status line: HTTP/1.x SSS reason */
        const char *p = w->buf;
        if (head_len < 14 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1')
            || p[8] != ' ' || p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9'
            || p[11] < '0' || p[11] > '9' || (p[12] != ' ' && p[12] != '\r')) {
            snprintf(err, errcap, "not an HTTP/1.x answer: %.40s", p);
            return RESP_PROTOCOL;
        }
        long status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
        int keep = p[7] == '1';
        long long content_length = -1;
        const char *line = (const char *)memchr(p, '\n', head_len) + 1;
        const char *end = w->buf + head_len - 2; /* the final CRLF */
        while (line < end) {
            const char *eol = memchr(line, '\n', (size_t)(end - line));
            eol = eol == NULL ? end : eol + 1;
            const char *vend = eol - (eol > line && eol[-1] == '\n' ? 1 : 0);
            if (vend > line && vend[-1] == '\r')
                vend--;
            const char *colon = memchr(line, ':', (size_t)(vend - line));
            if (colon != NULL) {
                size_t nl = (size_t)(colon - line);
                const char *v = colon + 1;
                while (v < vend && (*v == ' ' || *v == '\t'))
                    v++;
                if (nl == 14 && strncasecmp(line, "Content-Length", 14) == 0) {
                    long long cl = 0;
                    const char *d = v;
                    while (d < vend && *d >= '0' && *d <= '9' && cl <= (long long)cap)
                        cl = cl * 10 + (*d++ - '0');
                    while (d < vend && (*d == ' ' || *d == '\t'))
                        d++;
                    if (d == v || d != vend || (content_length >= 0 && content_length != cl)) {
                        snprintf(err, errcap, "bad Content-Length: %.*s",
                                 (int)(vend - v < 40 ? vend - v : 40), v);
                        return RESP_PROTOCOL;
                    }
                    content_length = cl;
                } else if (nl == 10 && strncasecmp(line, "Connection", 10) == 0) {
                    if (has_token(v, vend, "close"))
                        keep = 0;
                    else if (has_token(v, vend, "keep-alive"))
                        keep = 1;
                } else if (nl == 17 && strncasecmp(line, "Transfer-Encoding", 17) == 0) {
                    snprintf(err, errcap, "Transfer-Encoding is not supported");
                    return RESP_PROTOCOL;
                }
            }
            line = eol;
        }
        if (status < 200) {
            /* 1xx interim answer (no body): drop it and parse on. */
            memmove(w->buf, w->buf + head_len, len - head_len);
            w->in_len -= head_len;
            continue;
        }
        /* Final answer: the body follows. */
        size_t body_len;
        if (status == 204 || status == 304) {
            content_length = 0;
        } else if (content_length < 0 && keep) {
            snprintf(err, errcap, "answer %ld without Content-Length", status);
            return RESP_PROTOCOL;
        }
        if (content_length > RESP_MAX) {
            snprintf(err, errcap, "response body over %d bytes", RESP_MAX);
            return RESP_OVERFLOW;
        }
        if (content_length >= 0) {
            size_t need = head_len + (size_t)content_length;
            if (len < need)
                return RESP_MORE;
            if (len > need) {
                snprintf(err, errcap, "%zu unexpected bytes after the answer", len - need);
                return RESP_PROTOCOL;
            }
            body_len = (size_t)content_length;
        } else { /* Connection: close without Content-Length: the body ends at EOF */
            if (len - head_len > RESP_MAX) {
                snprintf(err, errcap, "response body over %d bytes", RESP_MAX);
                return RESP_OVERFLOW;
            }
            if (!eof)
                return RESP_MORE;
            body_len = len - head_len;
        }
        w->status = status;
        w->keep = keep;
        w->resp = w->buf + head_len;
        w->resp_len = body_len;
        w->resp[body_len] = '\0';
        return RESP_DONE;
    }
}

/* Records a request that got no answer and stops the job. */
static void conn_error(struct worker *w, const char *err)
{
    w->ep[w->cur].conn_errors++;
    worker_fail(w, "%s %s%s: %s", w->method, w->srv->url, w->path, err);
    w->in_flight = 0;
}

/* Sends the request in w->out from its start, on w's connection or a new one. Returns 0,
 * or -1 (job stopped, error recorded). */
static int send_request(struct worker *w)
{
    char err[ERROR_MAX / 2];
    for (;;) {
        w->reused = w->fd >= 0;
        w->out_sent = 0;
        w->in_len = 0;
        w->got_any = 0;
        if (!w->reused && conn_open(w, err, sizeof err) != 0)
            break;
        if (send_some(w, err, sizeof err) == 0)
            return 0;
        conn_close(w);
        /* A reused connection may have been closed by the server since: once more. */
        if (!w->reused || w->attempt++ > 0)
            break;
    }
    conn_error(w, err);
    return -1;
}

/* Starts a request (body NULL for none): w->out gets the request line, headers and body,
 * t0 is taken just before it is sent. Returns 0, or -1 (job stopped, error recorded). */
static int request(struct worker *w, enum endpoint ep, const char *method, const char *body)
{
    const struct options *o = w->opt;
    size_t body_len = body == NULL ? 0 : strlen(body);
    int hn;
    w->cur = ep;
    w->method = method;
    if (body == NULL)
        hn = snprintf(w->out, REQ_HEAD_MAX, "%s %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", method,
                      w->path, w->srv->authority, o->auth_line);
    else
        hn = snprintf(w->out, REQ_HEAD_MAX,
                      "%s %s HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\n\r\n", method, w->path, w->srv->authority,
                      o->auth_line, body_len);
    if (hn < 0 || (size_t)hn >= REQ_HEAD_MAX) {
        worker_fail(w, "%s %s%s: request headers over %d bytes", method, w->srv->url, w->path,
                    REQ_HEAD_MAX);
        return -1;
    }
    if (body_len > 0)
        memcpy(w->out + hn, body, body_len);
    w->out_len = (size_t)hn + body_len;
    w->attempt = 0;
    w->in_flight = 1;
    w->t0 = clk_mono_s();
    w->last_io = w->t0;
    return send_request(w);
}

/* Reads what w's connection has (readable, or closed). When that completes the answer,
 * takes the time (w->t_done) and returns 1; the answer is then processed by on_answer,
 * after every connection of this round of events has been read, so that no answer's
 * latency includes the processing of another. Returns 0 when more is to come or the
 * request was sent again on a new connection, -1 when the job stopped on an error. */
static int on_readable(struct worker *w)
{
    const size_t cap = HEAD_MAX + RESP_MAX;
    char err[ERROR_MAX / 2];
    int eof = 0;
    ssize_t n;
    do
        n = recv(w->fd, w->buf + w->in_len, cap - w->in_len, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    if (n > 0) {
        w->in_len += (size_t)n;
        w->got_any = 1;
        w->last_io = clk_mono_s();
    } else {
        eof = 1;
    }
    if (!w->in_flight) {
        /* Bytes or a close while no request is out: nothing to answer. */
        conn_close(w);
        return 0;
    }
    /* The epoll set is level-triggered: what a short read left comes as another event. */
    enum resp_state s = parse_response(w, eof, err, sizeof err);
    if (s == RESP_DONE) {
        w->t_done = clk_mono_s();
        return 1;
    }
    if (s == RESP_MORE && !eof && w->in_len < cap)
        return 0;
    if (s == RESP_MORE && !eof)
        snprintf(err, sizeof err, "response over %zu bytes", cap);
    else if (s == RESP_MORE && n < 0)
        snprintf(err, sizeof err, "receive failed: %s", strerror(errno));
    else if (s == RESP_MORE)
        snprintf(err, sizeof err, "the server closed the connection %s",
                 w->got_any ? "mid-answer" : "without answering");
    conn_close(w);
    /* A reused connection that was closed before any byte of the answer came: the server
     * dropped it idle; send the request once more on a new one. */
    if (s == RESP_MORE && eof && w->reused && w->attempt++ == 0 && !w->got_any)
        return send_request(w) == 0 ? 0 : -1;
    conn_error(w, err);
    return -1;
}

/* Serializes j (taking its reference) into out. Returns 0, or -1 when j is NULL or the text
 * does not fit in REQ_MAX bytes. */
static int dump_json(json_t *j, char out[REQ_MAX])
{
    if (j == NULL)
        return -1;
    size_t n = json_dumpb(j, out, REQ_MAX - 1, JSON_COMPACT);
    json_decref(j);
    if (n == 0 || n >= REQ_MAX - 1)
        return -1;
    out[n] = '\0';
    return 0;
}

/* Starts method path with the JSON body j (consumed) as phase ph on endpoint ep, or fails
 * the worker naming what when the body cannot be written. */
static void send_json(struct worker *w, enum phase ph, enum endpoint ep, const char *method,
                      const char *path, json_t *j, const char *what)
{
    char body[REQ_MAX];
    if (dump_json(j, body) != 0) {
        worker_fail(w, "cannot build %s (out of memory or over %d bytes)", what, REQ_MAX);
        return;
    }
    snprintf(w->path, sizeof w->path, "%s", path);
    w->phase = ph;
    request(w, ep, method, body);
}

/* Starts POST /jobs for w. */
static void register_job(struct worker *w)
{
    const struct options *o = w->opt;
    json_t *bs = json_array();
    for (size_t i = 0; bs != NULL && i < o->n_batch_sizes; i++)
        json_array_append_new(bs, json_integer(o->batch_sizes[i]));
    json_t *spec = bs == NULL ? NULL : json_pack(
        "{s:s, s:s, s:o, s:I, s:f, s:o, s:f, s:b, s:I, s:I, s:I, s:f, s:I, s:s}",
        "job_id", w->job_id, "job_id_prefix", w->prefix, "batch_sizes", bs,
        "default_batch_size", (json_int_t)o->default_batch_size, "eta_knob", o->eta_knob,
        "beta_knob", o->has_beta_knob ? json_real(o->beta_knob) : json_null(),
        "target_metric", TARGET_METRIC, "higher_is_better_metric", 1,
        "max_epochs", (json_int_t)o->max_epochs, "window_size", (json_int_t)o->window_size,
        "mab_seed", (json_int_t)w->k, "max_power", o->max_power_w,
        "number_of_gpus", (json_int_t)o->number_of_gpus, "gpu_model", o->gpu_model);
    send_json(w, PH_REGISTER, EP_REGISTER, "POST", "/jobs", spec, "the job spec body");
}

/* Starts the next trial with GET /jobs/batch_size, or ends the job once the run is over. */
static void next_trial(struct worker *w)
{
    if (atomic_load(&stop_requested) || clk_mono_s() >= deadline_s) {
        w->phase = PH_DONE;
        return;
    }
    snprintf(w->path, sizeof w->path, "/jobs/batch_size?job_id=%s", w->job_id);
    w->phase = PH_NEXT;
    request(w, EP_NEXT, "GET", NULL);
}

/* Starts PATCH /trials for the current trial. */
static void end_trial(struct worker *w)
{
    json_t *j = json_pack("{s:s, s:I, s:I}", "job_id", w->job_id, "batch_size",
                          (json_int_t)w->bs, "trial_number", (json_int_t)w->trial);
    send_json(w, PH_END, EP_END, "PATCH", "/trials", j, "a trial id body");
}

/* Trains one more epoch of the current trial and starts its POST /report; on SIGINT it ends
 * the trial early instead (the server marks it Failed). */
static void next_epoch(struct worker *w)
{
    const struct options *o = w->opt;
    if (atomic_load(&stop_requested)) {
        w->cut++;
        end_trial(w);
        return;
    }
    w->epoch++;
    if (w->epoch > o->max_epochs + EXTRA_EPOCHS) {
        worker_fail(w, "trial %" PRId64 " of %s: no stop_train after %" PRId64
                    " epochs (max_epochs %" PRId64 ")", w->trial, w->job_id, w->epoch - 1,
                    o->max_epochs);
        return;
    }
    double epoch_s = w->m.epoch_s * (0.95 + 0.1 * uniform(&w->rng));
    w->time_s += epoch_s;
    w->energy_j += epoch_s * w->m.power_w * (double)o->number_of_gpus;
    json_t *j = json_pack("{s:s, s:I, s:I, s:f, s:f, s:f, s:I}", "job_id", w->job_id,
                          "batch_size", (json_int_t)w->bs, "trial_number",
                          (json_int_t)w->trial, "time", w->time_s, "energy", w->energy_j,
                          "metric", model_metric(&w->m, w->epoch), "current_epoch",
                          (json_int_t)w->epoch);
    send_json(w, PH_REPORT, EP_REPORT, "POST", "/report", j, "a report body");
}

/* Records the answer that on_readable completed and moves the job on: a job registers,
 * then per trial gets a batch size, reports one epoch at a time until told to stop, and
 * ends the trial; it starts no new trial once the run's time is up. */
static void on_answer(struct worker *w)
{
    struct ep_stats *st = &w->ep[w->cur];
    json_error_t jerr;
    json_t *root = NULL;
    w->in_flight = 0;
    if (!w->keep)
        conn_close(w);
    st->count++;
    if (w->status >= 0 && w->status < STATUS_MAX)
        st->status[w->status]++;
    double us = (w->t_done - w->t0) * 1e6;
    samples_add(&st->lat, us >= 4294967295.0 ? UINT32_MAX : (uint32_t)us, &w->rng);
    if (w->status < 200 || w->status > 299) {
        worker_fail(w, "%s %s%s answered %ld: %.300s", w->method, w->srv->url, w->path,
                    w->status, w->resp);
        return;
    }
    switch (w->phase) {
    case PH_REGISTER:
    case PH_END:
        next_trial(w);
        break;
    case PH_NEXT: {
        json_int_t b = 0, t = 0;
        root = json_loadb(w->resp, w->resp_len, 0, &jerr);
        if (root == NULL || json_unpack_ex(root, &jerr, 0, "{s:I, s:I}", "batch_size", &b,
                                           "trial_number", &t) != 0) {
            worker_fail(w, "GET /jobs/batch_size: unexpected answer (%s): %.200s", jerr.text,
                        w->resp);
            break;
        }
        w->bs = b;
        w->trial = t;
        w->m = model_of(b, w->job_scale, w->opt->max_power_w);
        w->epoch = 0;
        w->time_s = w->energy_j = 0.0;
        next_epoch(w);
        break;
    }
    case PH_REPORT: {
        int stop = 0, converged = 0;
        root = json_loadb(w->resp, w->resp_len, 0, &jerr);
        if (root == NULL || json_unpack_ex(root, &jerr, 0, "{s:b, s:b}", "stop_train", &stop,
                                           "converged", &converged) != 0) {
            worker_fail(w, "POST /report: unexpected answer (%s): %.200s", jerr.text,
                        w->resp);
            break;
        }
        if (!stop) {
            next_epoch(w);
            break;
        }
        w->trials++;
        if (converged)
            w->converged++;
        else
            w->not_converged++;
        end_trial(w);
        break;
    }
    case PH_DONE:
        break;
    }
    json_decref(root);
}

/* Fails the jobs of a thread whose request has seen no byte go out or come in for
 * IO_TIMEOUT_S. */
static void check_timeouts(struct worker **jobs, size_t n, double now)
{
    char err[64];
    for (size_t i = 0; i < n; i++) {
        struct worker *w = jobs[i];
        if (w->phase == PH_DONE || !w->in_flight || now - w->last_io < IO_TIMEOUT_S)
            continue;
        snprintf(err, sizeof err, "no answer within %d s", IO_TIMEOUT_S);
        conn_close(w);
        conn_error(w, err);
    }
}

/* An event thread: drives its jobs (every T-th of them) until each is done. Each round
 * reads every ready connection first, taking each answer's time as it completes, then
 * processes the answers and sends the next requests. */
static void *thread_main(void *arg)
{
    struct ev_thread *th = arg;
    struct epoll_event evs[EVENTS_MAX];
    struct worker *ready[EVENTS_MAX];
    double last_check = clk_mono_s();
    for (size_t i = 0; i < th->n; i++)
        register_job(th->jobs[i]);
    for (;;) {
        size_t active = 0;
        for (size_t i = 0; i < th->n; i++)
            active += th->jobs[i]->phase != PH_DONE;
        if (active == 0)
            break;
        int n = epoll_wait(th->epfd, evs, EVENTS_MAX, 1000);
        if (n < 0 && errno != EINTR) {
            for (size_t i = 0; i < th->n; i++) {
                conn_close(th->jobs[i]);
                worker_fail(th->jobs[i], "epoll_wait failed: %s", strerror(errno));
            }
            break;
        }
        size_t n_ready = 0;
        for (int i = 0; i < n; i++) {
            struct worker *w = evs[i].data.ptr;
            if (w->phase == PH_DONE || w->fd < 0)
                continue;
            if ((evs[i].events & EPOLLOUT) && w->in_flight && w->out_sent < w->out_len) {
                char err[ERROR_MAX / 2];
                if (send_some(w, err, sizeof err) != 0) {
                    conn_close(w);
                    if (w->reused && w->attempt++ == 0)
                        send_request(w);
                    else
                        conn_error(w, err);
                    continue;
                }
            }
            if ((evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && on_readable(w) == 1)
                ready[n_ready++] = w;
        }
        for (size_t i = 0; i < n_ready; i++)
            on_answer(ready[i]);
        double now = clk_mono_s();
        if (now - last_check >= 1.0) {
            check_timeouts(th->jobs, th->n, now);
            last_check = now;
        }
    }
    return NULL;
}

static void worker_close(struct worker *w)
{
    conn_close(w);
    for (size_t e = 0; e < EP_COUNT; e++)
        free(w->ep[e].lat.us);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Returns the nearest-rank q-quantile (0 < q <= 1) of n sorted values in milliseconds. */
static double quantile_ms(const uint32_t *sorted, size_t n, double q)
{
    size_t rank = (size_t)ceil(q * (double)n);
    if (rank < 1)
        rank = 1;
    return (double)sorted[rank - 1] / 1000.0;
}

/* Merges the workers' statistics and prints the table. Returns 0, or -1 when out of
 * memory. */
static int print_report(struct worker *ws, long n_workers, double elapsed_s)
{
    uint64_t total = 0, total_conn = 0, total_non2xx = 0;
    uint64_t trials = 0, conv = 0, nconv = 0, cut = 0;
    int ret = -1;
    uint32_t *merged = NULL;
    printf("%-22s %10s %11s %9s %9s %9s %8s %9s\n", "endpoint", "count", "requests/s",
           "p50 ms", "p90 ms", "p99 ms", "non-2xx", "conn-err");
    for (size_t e = 0; e < EP_COUNT; e++) {
        uint64_t count = 0, conn = 0, non2xx = 0;
        size_t n = 0;
        for (long k = 0; k < n_workers; k++) {
            count += ws[k].ep[e].count;
            conn += ws[k].ep[e].conn_errors;
            n += ws[k].ep[e].lat.n;
            for (size_t s = 0; s < STATUS_MAX; s++)
                if (s < 200 || s > 299)
                    non2xx += ws[k].ep[e].status[s];
        }
        free(merged);
        merged = malloc((n ? n : 1) * sizeof *merged);
        if (merged == NULL)
            goto out;
        n = 0;
        for (long k = 0; k < n_workers; k++) {
            if (ws[k].ep[e].lat.n > 0)
                memcpy(merged + n, ws[k].ep[e].lat.us, ws[k].ep[e].lat.n * sizeof *merged);
            n += ws[k].ep[e].lat.n;
        }
        qsort(merged, n, sizeof *merged, cmp_u32);
        printf("%-22s %10" PRIu64 " %11.1f", ep_names[e], count, (double)count / elapsed_s);
        if (n > 0)
            printf(" %9.3f %9.3f %9.3f", quantile_ms(merged, n, 0.50),
                   quantile_ms(merged, n, 0.90), quantile_ms(merged, n, 0.99));
        else
            printf(" %9s %9s %9s", "-", "-", "-");
        printf(" %8" PRIu64 " %9" PRIu64 "\n", non2xx, conn);
        if (n < count)
            printf("%-22s (percentiles from a uniform sample of %zu)\n", "", n);
        total += count;
        total_conn += conn;
        total_non2xx += non2xx;
    }
    printf("%-22s %10" PRIu64 " %11.1f %9s %9s %9s %8" PRIu64 " %9" PRIu64 "\n", "total", total,
           (double)total / elapsed_s, "", "", "", total_non2xx, total_conn);
    /* "all": the percentiles over every request, all endpoints' samples merged. */
    size_t n_all = 0;
    for (long k = 0; k < n_workers; k++)
        for (size_t e = 0; e < EP_COUNT; e++)
            n_all += ws[k].ep[e].lat.n;
    free(merged);
    merged = malloc((n_all ? n_all : 1) * sizeof *merged);
    if (merged == NULL)
        goto out;
    n_all = 0;
    for (long k = 0; k < n_workers; k++)
        for (size_t e = 0; e < EP_COUNT; e++) {
            if (ws[k].ep[e].lat.n > 0)
                memcpy(merged + n_all, ws[k].ep[e].lat.us, ws[k].ep[e].lat.n * sizeof *merged);
            n_all += ws[k].ep[e].lat.n;
        }
    qsort(merged, n_all, sizeof *merged, cmp_u32);
    printf("%-22s %10" PRIu64 " %11.1f", "all", total, (double)total / elapsed_s);
    if (n_all > 0)
        printf(" %9.3f %9.3f %9.3f", quantile_ms(merged, n_all, 0.50),
               quantile_ms(merged, n_all, 0.90), quantile_ms(merged, n_all, 0.99));
    else
        printf(" %9s %9s %9s", "-", "-", "-");
    printf(" %8" PRIu64 " %9" PRIu64 "\n", total_non2xx, total_conn);
    if (n_all < total)
        printf("%-22s (percentiles from the merged samples, %zu of them)\n", "", n_all);
    for (long k = 0; k < n_workers; k++) {
        trials += ws[k].trials;
        conv += ws[k].converged;
        nconv += ws[k].not_converged;
        cut += ws[k].cut;
    }
    printf("trials: %" PRIu64 " finished (%" PRIu64 " converged, %" PRIu64
           " stopped without converging), %" PRIu64 " cut short by a signal\n",
           trials, conv, nconv, cut);
    if (total_non2xx > 0) {
        printf("non-2xx answers:");
        for (size_t e = 0; e < EP_COUNT; e++)
            for (size_t s = 0; s < STATUS_MAX; s++) {
                uint64_t c = 0;
                if (s >= 200 && s <= 299)
                    continue;
                for (long k = 0; k < n_workers; k++)
                    c += ws[k].ep[e].status[s];
                if (c > 0)
                    printf(" %s %zu x%" PRIu64 ";", ep_names[e], s, c);
            }
        printf("\n");
    }
    ret = 0;
out:
    free(merged);
    return ret;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: zbso-loadgen [options]\n"
            "Plays K concurrent recurring jobs against a running zbso server and prints\n"
            "requests/s and latency percentiles per endpoint. A job stops at its first\n"
            "non-2xx answer, connection error or protocol error, and the run then exits 1\n"
            "(2 on a usage error).\n"
            "  --url URL               server, http://HOST:PORT with HOST an IPv4 address,\n"
            "                          localhost or [IPv6 address] (http://127.0.0.1:8000);\n"
            "                          give it up to %d times for replicas: job k talks to\n"
            "                          the (k mod n)-th\n"
            "  --jobs K                concurrent jobs (4; at most %d)\n"
            "  --threads T             event threads driving the jobs, each job on one of\n"
            "                          them (1; at most %d, and at most K)\n"
            "  --duration S            seconds to start new trials for (10)\n"
            "  --seed N                seed of the synthetic training model (1)\n"
            "  --token T               bearer token (default: $ZEUS_BSO_API_TOKEN)\n"
            "  --batch-sizes LIST      comma-separated (16,32,64,128,256,512,1024)\n"
            "  --default-batch-size B  (128)\n"
            "  --max-epochs N          (10)\n"
            "  --beta-knob X|none      (2.0)\n"
            "  --eta-knob X            (0.5)\n"
            "  --max-power W           (300)\n"
            "  --number-of-gpus N      (1)\n"
            "  --gpu-model NAME        (sim)\n"
            "  --window-size N         (10)\n"
            "Job k registers job_id load<k>-<run nonce> with job_id_prefix load<k> and\n"
            "mab_seed k.\n",
            MAX_SERVERS, MAX_JOBS, MAX_THREADS);
}

/* Parses a whole decimal integer in [lo, hi]. Returns 0, or -1 when text is not one. */
static int parse_int(const char *text, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Parses a whole finite number in [lo, hi]. Returns 0, or -1 when text is not one. */
static int parse_num(const char *text, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Parses "16,32,64" into o->batch_sizes. Returns 0, or -1 when malformed or too many. */
static int parse_batch_sizes(const char *text, struct options *o)
{
    char buf[URL_MAX + 1];
    char *save = NULL;
    long long v;
    if (strlen(text) > URL_MAX)
        return -1;
    memcpy(buf, text, strlen(text) + 1);
    o->n_batch_sizes = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (o->n_batch_sizes == MAX_BATCH_SIZES || parse_int(tok, 1, INT32_MAX, &v) != 0)
            return -1;
        o->batch_sizes[o->n_batch_sizes++] = v;
    }
    return o->n_batch_sizes > 0 ? 0 : -1;
}

/* Copies text into a buffer of TEXT_MAX + 1 (or URL_MAX + 1) bytes. Returns 0, or -1 when
 * it does not fit. */
static int copy_text(char *dst, size_t size, const char *text)
{
    if (strlen(text) >= size)
        return -1;
    memcpy(dst, text, strlen(text) + 1);
    return 0;
}

/* Parses o->url, "http://HOST:PORT" with HOST an IPv4 literal, localhost (127.0.0.1, then
 * ::1) or a bracketed IPv6 literal, into o->authority and o->addrs. Returns 0, or -1 when
 * the URL is anything else (another scheme, a name, a path, no port). */
static int parse_url(struct server *o)
{
    char host[URL_MAX + 1];
    const char *a = o->url + 7, *port_text;
    long long port;
    if (strncmp(o->url, "http://", 7) != 0)
        return -1;
    if (a[0] == '[') {
        const char *close_br = strchr(a, ']');
        if (close_br == NULL || close_br[1] != ':')
            return -1;
        size_t n = (size_t)(close_br - a - 1);
        memcpy(host, a + 1, n);
        host[n] = '\0';
        port_text = close_br + 2;
    } else {
        const char *colon = strchr(a, ':');
        if (colon == NULL)
            return -1;
        size_t n = (size_t)(colon - a);
        memcpy(host, a, n);
        host[n] = '\0';
        port_text = colon + 1;
    }
    if (port_text[0] < '0' || port_text[0] > '9' || parse_int(port_text, 1, 65535, &port) != 0)
        return -1;
    struct sockaddr_in v4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in6 v6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    o->n_addrs = 0;
    if (a[0] == '[') {
        if (inet_pton(AF_INET6, host, &v6.sin6_addr) != 1)
            return -1;
    } else if (strcasecmp(host, "localhost") == 0) {
        inet_pton(AF_INET, "127.0.0.1", &v4.sin_addr);
        inet_pton(AF_INET6, "::1", &v6.sin6_addr);
    } else if (inet_pton(AF_INET, host, &v4.sin_addr) != 1) {
        return -1;
    }
    if (a[0] != '[') {
        memcpy(&o->addrs[o->n_addrs], &v4, sizeof v4);
        o->addr_lens[o->n_addrs++] = sizeof v4;
    }
    if (a[0] == '[' || strcasecmp(host, "localhost") == 0) {
        memcpy(&o->addrs[o->n_addrs], &v6, sizeof v6);
        o->addr_lens[o->n_addrs++] = sizeof v6;
    }
    return copy_text(o->authority, sizeof o->authority, a);
}

/* Fills o from argv. Returns 0 to run, 1 after --help, or -1 after printing a usage error. */
static int parse_options(int argc, char **argv, struct options *o)
{
    enum { O_URL = 256, O_JOBS, O_THREADS, O_DURATION, O_SEED, O_TOKEN, O_BS, O_DEFAULT, O_EPOCHS,
           O_BETA, O_ETA, O_POWER, O_GPUS, O_MODEL, O_WINDOW, O_HELP };
    static const struct option longopts[] = {
        {"url", required_argument, NULL, O_URL},
        {"jobs", required_argument, NULL, O_JOBS},
        {"threads", required_argument, NULL, O_THREADS},
        {"duration", required_argument, NULL, O_DURATION},
        {"seed", required_argument, NULL, O_SEED},
        {"token", required_argument, NULL, O_TOKEN},
        {"batch-sizes", required_argument, NULL, O_BS},
        {"default-batch-size", required_argument, NULL, O_DEFAULT},
        {"max-epochs", required_argument, NULL, O_EPOCHS},
        {"beta-knob", required_argument, NULL, O_BETA},
        {"eta-knob", required_argument, NULL, O_ETA},
        {"max-power", required_argument, NULL, O_POWER},
        {"number-of-gpus", required_argument, NULL, O_GPUS},
        {"gpu-model", required_argument, NULL, O_MODEL},
        {"window-size", required_argument, NULL, O_WINDOW},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    static const int64_t default_bs[] = {16, 32, 64, 128, 256, 512, 1024};
    const char *env_token = getenv("ZEUS_BSO_API_TOKEN");
    long long v;
    int c, bad = 0;

    memset(o, 0, sizeof *o);
    snprintf(o->servers[0].url, sizeof o->servers[0].url, "%s", "http://127.0.0.1:8000");
    o->n_servers = 1;
    o->jobs = 4;
    o->threads = 1;
    o->duration_s = 10.0;
    o->seed = 1;
    memcpy(o->batch_sizes, default_bs, sizeof default_bs);
    o->n_batch_sizes = sizeof default_bs / sizeof default_bs[0];
    o->default_batch_size = 128;
    o->max_epochs = 10;
    o->has_beta_knob = 1;
    o->beta_knob = 2.0;
    o->eta_knob = 0.5;
    o->max_power_w = 300.0;
    o->number_of_gpus = 1;
    snprintf(o->gpu_model, sizeof o->gpu_model, "%s", "sim");
    o->window_size = 10;
    if (env_token != NULL && copy_text(o->token, sizeof o->token, env_token) != 0) {
        fprintf(stderr, "zbso-loadgen: ZEUS_BSO_API_TOKEN is longer than %d bytes\n", TEXT_MAX);
        return -1;
    }
    while (!bad && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case O_URL:
            if (o->url_given && o->n_servers == MAX_SERVERS) {
                fprintf(stderr, "zbso-loadgen: --url given more than %d times\n", MAX_SERVERS);
                bad = 1;
                break;
            }
            if (!o->url_given)
                o->n_servers = 0;
            o->url_given = 1;
            bad = copy_text(o->servers[o->n_servers].url, sizeof o->servers[0].url, optarg) != 0;
            o->n_servers++;
            break;
        case O_JOBS:
            bad = parse_int(optarg, 1, MAX_JOBS, &v) != 0;
            o->jobs = (long)v;
            break;
        case O_THREADS:
            bad = parse_int(optarg, 1, MAX_THREADS, &v) != 0;
            o->threads = (long)v;
            break;
        case O_DURATION:
            bad = parse_num(optarg, 0.001, 86400.0, &o->duration_s) != 0;
            break;
        case O_SEED: {
            char *end;
            errno = 0;
            o->seed = strtoull(optarg, &end, 10);
            bad = end == optarg || *end != '\0' || errno != 0 || optarg[0] == '-';
            break;
        }
        case O_TOKEN:
            bad = copy_text(o->token, sizeof o->token, optarg) != 0;
            break;
        case O_BS:
            bad = parse_batch_sizes(optarg, o) != 0;
            break;
        case O_DEFAULT:
            bad = parse_int(optarg, 1, INT32_MAX, &v) != 0;
            o->default_batch_size = v;
            break;
        case O_EPOCHS:
            bad = parse_int(optarg, 1, 100000, &v) != 0;
            o->max_epochs = v;
            break;
        case O_BETA:
            o->has_beta_knob = strcmp(optarg, "none") != 0;
            bad = o->has_beta_knob && (parse_num(optarg, 0.0, 1e9, &o->beta_knob) != 0
                                       || o->beta_knob <= 0.0);
            break;
        case O_ETA:
            bad = parse_num(optarg, 0.0, 1.0, &o->eta_knob) != 0;
            break;
        case O_POWER:
            bad = parse_num(optarg, 1e-3, 1e7, &o->max_power_w) != 0;
            break;
        case O_GPUS:
            bad = parse_int(optarg, 1, 1024, &v) != 0;
            o->number_of_gpus = v;
            break;
        case O_MODEL:
            bad = copy_text(o->gpu_model, sizeof o->gpu_model, optarg) != 0 || optarg[0] == '\0';
            break;
        case O_WINDOW:
            bad = parse_int(optarg, 0, 1000000, &v) != 0;
            o->window_size = v;
            break;
        case O_HELP:
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return -1;
        }
        if (bad)
            fprintf(stderr, "zbso-loadgen: invalid value \"%s\" for --%s\n", optarg,
                    longopts[c - O_URL].name);
    }
    if (!bad && optind < argc) {
        fprintf(stderr, "zbso-loadgen: unexpected argument \"%s\"\n", argv[optind]);
        bad = 1;
    }
    if (bad)
        return -1;
    if (o->threads > o->jobs)
        o->threads = o->jobs;
    for (size_t i = 0; i < o->n_servers; i++) {
        struct server *sv = &o->servers[i];
        size_t len = strlen(sv->url);
        while (len > 7 && sv->url[len - 1] == '/')
            sv->url[--len] = '\0';
        if (parse_url(sv) != 0) {
            fprintf(stderr, "zbso-loadgen: invalid value \"%s\" for --url: expected "
                    "http://HOST:PORT with HOST an IPv4 address, localhost or [IPv6 address] "
                    "and PORT 1..65535, nothing after it\n", sv->url);
            return -1;
        }
    }
    for (const char *t = o->token; *t != '\0'; t++)
        if ((unsigned char)*t < 0x20 || *t == 0x7f) {
            fprintf(stderr, "zbso-loadgen: the bearer token holds a control character\n");
            return -1;
        }
    if (o->token[0] != '\0')
        snprintf(o->auth_line, sizeof o->auth_line, "Authorization: Bearer %s\r\n", o->token);
    return 0;
}

int main(int argc, char **argv)
{
    struct options opt;
    struct worker *ws = NULL, **jobs = NULL;
    struct ev_thread *ths = NULL;
    struct sigaction sa;
    char nonce[16];
    int ret = 1, fatal = 0, shown = 0;
    long k, t;
    int parsed = parse_options(argc, argv, &opt);
    if (parsed != 0)
        return parsed > 0 ? 0 : 2;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    ws = calloc((size_t)opt.jobs, sizeof *ws);
    jobs = calloc((size_t)opt.jobs, sizeof *jobs);
    ths = calloc((size_t)opt.threads, sizeof *ths);
    if (ws == NULL || jobs == NULL || ths == NULL) {
        fprintf(stderr, "zbso-loadgen: out of memory for %ld jobs\n", opt.jobs);
        goto out;
    }
    for (k = 0; k < opt.jobs; k++)
        ws[k].fd = -1;
    for (t = 0; t < opt.threads; t++)
        ths[t].epfd = -1;
    struct timespec rt = clk_now(CLOCK_REALTIME);
    uint64_t nonce_state = (uint64_t)rt.tv_sec * 1000000000ULL + (uint64_t)rt.tv_nsec
                           + ((uint64_t)getpid() << 32);
    snprintf(nonce, sizeof nonce, "%08" PRIx32, (uint32_t)splitmix64(&nonce_state));
    printf("zbso-loadgen: %ld jobs on %ld event thread%s for %.1f s against", opt.jobs,
           opt.threads, opt.threads == 1 ? "" : "s", opt.duration_s);
    for (size_t i = 0; i < opt.n_servers; i++)
        printf(" %s", opt.servers[i].url);
    printf(" (seed %" PRIu64 ", run %s)\n", opt.seed, nonce);
    fflush(stdout);

    /* Thread t drives jobs t, t + T, t + 2T, ...: jobs[] holds them thread by thread. */
    size_t next = 0;
    for (t = 0; t < opt.threads; t++) {
        ths[t].jobs = jobs + next;
        for (k = t; k < opt.jobs; k += opt.threads)
            ths[t].jobs[ths[t].n++] = &ws[k];
        next += ths[t].n;
        ths[t].epfd = epoll_create1(EPOLL_CLOEXEC);
        if (ths[t].epfd < 0) {
            fprintf(stderr, "zbso-loadgen: epoll_create1 failed: %s\n", strerror(errno));
            goto out;
        }
    }
    double start = clk_mono_s();
    deadline_s = start + opt.duration_s;
    for (k = 0; k < opt.jobs; k++) {
        struct worker *w = &ws[k];
        w->k = (int)k;
        w->opt = &opt;
        w->srv = &opt.servers[(size_t)k % opt.n_servers];
        w->epfd = ths[k % opt.threads].epfd;
        snprintf(w->prefix, sizeof w->prefix, "load%ld", k);
        snprintf(w->job_id, sizeof w->job_id, "load%ld-%s", k, nonce);
        w->rng = opt.seed * 0x9e3779b97f4a7c15ULL + (uint64_t)k;
        w->job_scale = 0.8 + 0.4 * uniform(&w->rng);
    }
    for (t = 0; t < opt.threads; t++) {
        if (pthread_create(&ths[t].tid, NULL, thread_main, &ths[t]) != 0) {
            fprintf(stderr, "zbso-loadgen: cannot start thread %ld; stopping\n", t);
            atomic_store(&stop_requested, 1);
            fatal = 1;
            break;
        }
        ths[t].started = 1;
    }
    for (t = 0; t < opt.threads; t++)
        if (ths[t].started)
            pthread_join(ths[t].tid, NULL);
    double elapsed = clk_mono_s() - start;

    printf("elapsed %.3f s\n", elapsed);
    if (print_report(ws, opt.jobs, elapsed) != 0) {
        fprintf(stderr, "zbso-loadgen: out of memory merging latencies\n");
        fatal = 1;
    }
    for (k = 0; k < opt.jobs; k++) {
        if (ws[k].error[0] == '\0')
            continue;
        fatal = 1;
        if (shown++ < ERRORS_SHOWN)
            fprintf(stderr, "zbso-loadgen: job %ld stopped: %s\n", k, ws[k].error);
    }
    if (shown > ERRORS_SHOWN)
        fprintf(stderr, "zbso-loadgen: ... and %d more jobs stopped on errors\n",
                shown - ERRORS_SHOWN);
    ret = fatal ? 1 : 0;
out:
    if (ws != NULL)
        for (k = 0; k < opt.jobs; k++)
            worker_close(&ws[k]);
    if (ths != NULL)
        for (t = 0; t < opt.threads; t++)
            if (ths[t].epfd >= 0)
                close(ths[t].epfd);
    free(ths);
    free(jobs);
    free(ws);
    return ret;
}
