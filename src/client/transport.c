/* transport.c: libcurl requests with bounded retries (see transport.h). Runs inside the
 * caller's process (often Python): never aborts, never installs signal handlers. */
#include "client/transport.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codec/codec.h"
#include "util/log.h"
#include "zbso/zbso.h"

#define BACKOFF_FIRST_S 0.1
#define BACKOFF_MAX_S 5.0
#define CONNECT_TIMEOUT_MAX_S 5.0
#define CONNECT_TIMEOUT_MIN_S 0.5

struct transport {
    CURL *curl;
    struct curl_slist *headers;
    char base[TRANSPORT_URL_MAX + 1];
    double retry_timeout_s;
    double request_timeout_s;
    uint64_t rng;                 /* xorshift state for the backoff jitter */
    char *buf;                    /* response body, grows up to TRANSPORT_BODY_MAX */
    size_t len, cap;
    bool too_big;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* Seconds on the monotonic clock. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleeps for seconds, resuming after signals. */
static void sleep_s(double seconds)
{
    struct timespec ts = {.tv_sec = (time_t)seconds,
                          .tv_nsec = (long)((seconds - floor(seconds)) * 1e9)};
    while (seconds > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* A uniform double in [0, 1) from the handle's xorshift64* generator. */
static double jitter01(transport *t)
{
    t->rng ^= t->rng >> 12;
    t->rng ^= t->rng << 25;
    t->rng ^= t->rng >> 27;
    return (double)((t->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* curl write callback: appends to t->buf, refusing bodies over TRANSPORT_BODY_MAX (curl
 * then fails the transfer with CURLE_WRITE_ERROR). */
static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    transport *t = arg;
    size_t n = size * nmemb;
    if (n > TRANSPORT_BODY_MAX - t->len) {
        t->too_big = true;
        return 0;
    }
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *p = realloc(t->buf, cap);
        if (!p)
            return 0;
        t->buf = p;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, data, n);
    t->len += n;
    t->buf[t->len] = '\0';
    return n;
}

int transport_new(const char *base_url, const char *token, double retry_timeout_s,
                  double request_timeout_s, transport **out, char *msg, size_t cap)
{
    transport *t = NULL;
    char auth[TRANSPORT_TOKEN_MAX + 32];
    size_t n;
    int rc;
    *out = NULL;
    if (!base_url || (strncmp(base_url, "http://", 7) != 0 &&
                      strncmp(base_url, "https://", 8) != 0)) {
        snprintf(msg, cap, "server URL '%s' must start with http:// or https://",
                 base_url ? base_url : "(null)");
        return ZBSO_ECONFIG;
    }
    n = strlen(base_url);
    while (n > 0 && base_url[n - 1] == '/')
        n--;
    if (n > TRANSPORT_URL_MAX) {
        snprintf(msg, cap, "server URL is %zu bytes, more than the %d allowed", n,
                 TRANSPORT_URL_MAX);
        return ZBSO_ECONFIG;
    }
    if (token && strlen(token) > TRANSPORT_TOKEN_MAX) {
        snprintf(msg, cap, "API token is %zu bytes, more than the %d allowed", strlen(token),
                 TRANSPORT_TOKEN_MAX);
        return ZBSO_ECONFIG;
    }
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK) {
        snprintf(msg, cap, "libcurl failed to initialize: %s",
                 curl_easy_strerror(curl_init_rc));
        return ZBSO_ERUNTIME;
    }
    rc = ZBSO_ENOMEM;
    snprintf(msg, cap, "out of memory opening a connection to %.*s", (int)n, base_url);
    if (!(t = calloc(1, sizeof *t)) || !(t->curl = curl_easy_init()))
        goto out;
    memcpy(t->base, base_url, n);
    t->base[n] = '\0';
    t->retry_timeout_s = retry_timeout_s;
    t->request_timeout_s = request_timeout_s;
    t->rng = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^ (uint64_t)(uintptr_t)t;
    if (!t->rng)
        t->rng = 88172645463325252ULL;
    struct curl_slist *h;
    if (!(h = curl_slist_append(NULL, "Content-Type: application/json")))
        goto out;
    t->headers = h;
    /* "Expect:" drops the 100-continue round trip curl adds to larger bodies. */
    if (!(h = curl_slist_append(t->headers, "Accept: application/json")) ||
        !(h = curl_slist_append(t->headers, "Expect:")))
        goto out;
    if (token && token[0]) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        if (!(h = curl_slist_append(t->headers, auth)))
            goto out;
    }
    curl_easy_setopt(t->curl, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(t->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(t->curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(t->curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(t->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(t->curl, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(t->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    *out = t;
    t = NULL;
    rc = 0;
    if (cap)
        msg[0] = '\0';
out:
    transport_free(t);
    return rc;
}

void transport_free(transport *t)
{
    if (!t)
        return;
    if (t->curl)
        curl_easy_cleanup(t->curl);
    curl_slist_free_all(t->headers);
    free(t->buf);
    free(t);
}

void transport_set_retry_timeout(transport *t, double seconds) { t->retry_timeout_s = seconds; }

double transport_retry_timeout(const transport *t) { return t->retry_timeout_s; }

const char *transport_base_url(const transport *t) { return t->base; }

char *transport_escape(transport *t, const char *s)
{
    char *e = curl_easy_escape(t->curl, s, 0);
    char *copy = e ? strdup(e) : NULL;
    curl_free(e);
    return copy;
}

/* True for curl failures worth another attempt: the server is down, restarting, slow or
 * dropped the connection. Everything else (bad URL, TLS setup, a body too large) is not. */
static bool curl_retryable(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
        return true;
    default:
        return false;
    }
}

/* One attempt: sets the method, body and timeouts and performs the transfer. The connect
 * timeout is cut to the retry time left (but at least CONNECT_TIMEOUT_MIN_S) so a host that
 * drops packets does not hold the caller far past its retry budget. */
static CURLcode attempt(transport *t, const char *method, const char *url, const char *body,
                        double left_s, char *curl_msg)
{
    double connect_s = fmax(CONNECT_TIMEOUT_MIN_S, fmin(CONNECT_TIMEOUT_MAX_S, left_s));
    t->len = 0;
    t->too_big = false;
    if (t->buf)
        t->buf[0] = '\0';
    curl_msg[0] = '\0';
    curl_easy_setopt(t->curl, CURLOPT_URL, url);
    curl_easy_setopt(t->curl, CURLOPT_ERRORBUFFER, curl_msg);
    curl_easy_setopt(t->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)(connect_s * 1000));
    curl_easy_setopt(t->curl, CURLOPT_TIMEOUT_MS, (long)(t->request_timeout_s * 1000));
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(t->curl, CURLOPT_CUSTOMREQUEST, NULL);
        curl_easy_setopt(t->curl, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(t->curl, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(t->curl, CURLOPT_POSTFIELDSIZE, (long)(body ? strlen(body) : 0));
        curl_easy_setopt(t->curl, CURLOPT_CUSTOMREQUEST,
                         strcmp(method, "POST") == 0 ? NULL : method);
    }
    CURLcode cc = curl_easy_perform(t->curl);
    curl_easy_setopt(t->curl, CURLOPT_ERRORBUFFER, NULL);
    return cc;
}

int transport_request(transport *t, const char *method, const char *path, const char *body,
                      transport_resp *resp, char *msg, size_t cap)
{
    char url[TRANSPORT_URL_MAX * 2 + 2];
    char curl_msg[CURL_ERROR_SIZE];
    char last[TRANSPORT_MSG_MAX] = "";
    double start = now_s(), left;
    int attempts = 0;
    if ((size_t)snprintf(url, sizeof url, "%s%s", t->base, path) >= sizeof url) {
        snprintf(msg, cap, "request URL %s%.40s... is longer than %zu bytes", t->base, path,
                 sizeof url - 1);
        return ZBSO_ERUNTIME;
    }
    for (;;) {
        long status = 0;
        curl_off_t retry_after = -1;
        left = t->retry_timeout_s - (now_s() - start);
        CURLcode cc = attempt(t, method, url, body, left, curl_msg);
        attempts++;
        if (cc == CURLE_OK) {
            curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
            if (status >= 200 && status < 300) {
                resp->status = status;
                resp->body = t->buf ? t->buf : "";
                resp->len = t->len;
                return 0;
            }
            char server_msg[TRANSPORT_MSG_MAX];
            if (codec_error_message(t->buf, t->len, server_msg, sizeof server_msg) < 0)
                snprintf(server_msg, sizeof server_msg, "%.300s", t->buf ? t->buf : "");
            snprintf(last, sizeof last, "Zeus server returned status code %ld: %.440s", status,
                     server_msg);
            if (status != 502 && status != 503 && status != 504) {
                snprintf(msg, cap, "%s", last);
                return ZBSO_ERUNTIME;
            }
            curl_easy_getinfo(t->curl, CURLINFO_RETRY_AFTER, &retry_after);
        } else if (t->too_big) {
            snprintf(msg, cap, "%s %s: the response body is over the %d byte limit", method,
                     url, TRANSPORT_BODY_MAX);
            return ZBSO_ERUNTIME;
        } else {
            snprintf(last, sizeof last, "%s %.200s: %.250s", method, url,
                     curl_msg[0] ? curl_msg : curl_easy_strerror(cc));
            if (!curl_retryable(cc)) {
                snprintf(msg, cap, "%s", last);
                return ZBSO_ERUNTIME;
            }
        }
        /* Full backoff doubles from BACKOFF_FIRST_S up to BACKOFF_MAX_S; the jitter picks
         * a point in its upper half so many clients of a restarting server spread out. */
        double backoff = fmin(BACKOFF_MAX_S, BACKOFF_FIRST_S * ldexp(1.0, attempts - 1));
        double wait = backoff * (0.5 + 0.5 * jitter01(t));
        if (retry_after > 0 && (double)retry_after > wait)
            wait = (double)retry_after;
        left = t->retry_timeout_s - (now_s() - start);
        if (left <= 0) {
            snprintf(msg, cap,
                     "gave up after %.1f s and %d attempts (retry timeout %.0f s); last "
                     "error: %s",
                     now_s() - start, attempts, t->retry_timeout_s, last);
            return ZBSO_ERUNTIME;
        }
        if (attempts == 1)
            log_warn("zbso client: %s; retrying for up to %.0f s", last, t->retry_timeout_s);
        sleep_s(fmin(wait, left));
    }
}
