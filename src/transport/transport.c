/* transport.c: libcurl requests with a retry class per request (see transport.h). Runs
 * inside the caller's process (often Python): never aborts, never installs signal
 * handlers, sleeps only between retries. */
#include "transport/transport.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "codec/codec.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/mem.h"

#define BACKOFF_FIRST_S 0.1
#define BACKOFF_MAX_S 5.0
#define CONNECT_TIMEOUT_MAX_S 5.0
#define CONNECT_TIMEOUT_MIN_S 0.5
#define MSG_MAX 512

struct transport {
    CURL *curl;
    struct curl_slist *headers;   /* sent with every request */
    char base[TRANSPORT_URL_MAX + 1];
    char shown[TRANSPORT_URL_MAX + 4];  /* base with its password masked, for messages */
    double retry_timeout_s;
    double request_timeout_s;
    uint64_t rng;                 /* xorshift state for the backoff jitter */
    zbso_buf body;                /* the response body, at most TRANSPORT_BODY_MAX bytes */
    int body_rc;                  /* ZBSO_ETOOBIG or ZBSO_ENOMEM: the body was refused */
    char warning[TRANSPORT_WARNING_MAX + 1];   /* the last answer's X-Zbso-Warning */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* A uniform double in [0, 1) from the handle's xorshift64* generator. */
static double jitter01(transport *t)
{
    t->rng ^= t->rng >> 12;
    t->rng ^= t->rng << 25;
    t->rng ^= t->rng >> 27;
    return (double)((t->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* curl write callback: appends to t->body. A body over TRANSPORT_BODY_MAX, or one memory
 * cannot hold, is refused (t->body_rc says why; curl then fails the transfer with
 * CURLE_WRITE_ERROR). */
static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    transport *t = arg;
    int rc = buf_addn(&t->body, data, size * nmemb);
    if (rc < 0) {
        t->body_rc = rc;
        return 0;
    }
    return size * nmemb;
}

void transport_mask_url(const char *url, char *out, size_t cap)
{
    if (cap == 0)
        return;
    const char *sep = strstr(url, "://");
    const char *auth = sep ? sep + 3 : url;
    size_t host_len = strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *p = auth; p < auth + host_len; p++)
        if (*p == '@')
            at = p; /* the last one: a password may hold an unescaped '@' */
    const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    if (!colon) {
        snprintf(out, cap, "%s", url);
        return;
    }
    snprintf(out, cap, "%.*s***%s", (int)(colon + 1 - url), url, at);
}

int transport_new(const char *base_url, const char *token, double retry_timeout_s,
                  transport **out, zbso_err *err)
{
    char shown[TRANSPORT_URL_MAX + 4];
    transport *t = NULL;
    char auth[TRANSPORT_TOKEN_MAX + 32];
    struct curl_slist *h;
    size_t n;
    int rc;
    *out = NULL;
    transport_mask_url(base_url ? base_url : "(null)", shown, sizeof shown);
    if (!base_url || (strncmp(base_url, "http://", 7) != 0 &&
                      strncmp(base_url, "https://", 8) != 0))
        return err_set(err, ZBSO_ECONFIG, "server URL '%.300s' must start with http:// or "
                       "https://", shown);
    n = strlen(base_url);
    while (n > 0 && base_url[n - 1] == '/')
        n--;
    if (n > TRANSPORT_URL_MAX)
        return err_set(err, ZBSO_ECONFIG, "server URL is %zu bytes, more than the %d allowed",
                       n, TRANSPORT_URL_MAX);
    if (token && strlen(token) > TRANSPORT_TOKEN_MAX)
        return err_set(err, ZBSO_ECONFIG, "API token is %zu bytes, more than the %d allowed",
                       strlen(token), TRANSPORT_TOKEN_MAX);
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return err_set(err, ZBSO_ERUNTIME, "libcurl failed to initialize: %s",
                       curl_easy_strerror(curl_init_rc));
    rc = err_set(err, ZBSO_ENOMEM, "out of memory opening a connection to %.300s", shown);
    if (!(t = mem_calloc(1, sizeof *t)) || !(t->curl = curl_easy_init()))
        goto out;
    memcpy(t->base, base_url, n);
    t->base[n] = '\0';
    transport_mask_url(t->base, t->shown, sizeof t->shown);
    buf_init(&t->body, TRANSPORT_BODY_MAX);
    t->retry_timeout_s = retry_timeout_s;
    t->request_timeout_s = TRANSPORT_REQUEST_TIMEOUT_S;
    t->rng = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^ (uint64_t)(uintptr_t)t;
    if (!t->rng)
        t->rng = 88172645463325252ULL;
    if (!(h = curl_slist_append(NULL, "Content-Type: application/json")))
        goto out;
    t->headers = h;
    /* "Expect:" drops the 100-continue round trip curl adds to larger bodies. */
    if (!curl_slist_append(t->headers, "Accept: application/json") ||
        !curl_slist_append(t->headers, "Expect:"))
        goto out;
    if (token && token[0]) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        if (!curl_slist_append(t->headers, auth))
            goto out;
    }
    curl_easy_setopt(t->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(t->curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(t->curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(t->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(t->curl, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(t->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    *out = t;
    t = NULL;
    rc = 0;
    err_clear(err);
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
    buf_free(&t->body);
    mem_free(t);
}

void transport_set_retry_timeout(transport *t, double seconds) { t->retry_timeout_s = seconds; }

double transport_retry_timeout(const transport *t) { return t->retry_timeout_s; }

void transport_set_request_timeout(transport *t, double seconds)
{
    t->request_timeout_s = seconds;
}

const char *transport_base_url(const transport *t) { return t->base; }

int transport_retry_timeout_env(double *out, zbso_err *err)
{
    const char *v = getenv(TRANSPORT_RETRY_ENV);
    char *end;
    double d;
    if (!v || !v[0]) {
        *out = TRANSPORT_RETRY_TIMEOUT_S;
        return 0;
    }
    d = strtod(v, &end);
    if (*end || !isfinite(d) || d < 0)
        return err_set(err, ZBSO_ECONFIG, "%s='%.200s' is not a number of seconds >= 0",
                       TRANSPORT_RETRY_ENV, v);
    *out = d;
    return 0;
}

int transport_key_new(char *key, zbso_err *err)
{
    unsigned char raw[TRANSPORT_KEY_HEX / 2];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t r = getrandom(raw + got, sizeof raw - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return err_set(err, ZBSO_EIO, "cannot read entropy for an idempotency key: %s",
                           strerror(errno));
        got += (size_t)r;
    }
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(key + 2 * i, 3, "%02x", raw[i]);
    return 0;
}

char *transport_escape(const char *s)
{
    char *e = curl_easy_escape(NULL, s, 0);
    char *copy = e ? mem_strdup(e) : NULL;
    curl_free(e);
    return copy;
}

int transport_code_of_status(long status)
{
    static const struct {
        long status;
        int code;
    } table[] = {
        {401, ZBSO_EAUTH},    {404, ZBSO_ENOTFOUND}, {405, ZBSO_EMETHOD},
        {409, ZBSO_ECONFLICT}, {413, ZBSO_ETOOBIG},  {422, ZBSO_EINVAL},
        {503, ZBSO_EUNAVAIL}, {403, ZBSO_EFORBIDDEN},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].status == status)
            return table[i].code;
    return ZBSO_ERUNTIME;
}

/* True when the failed attempt provably never reached the server: no connection was
 * made, or not one byte of the request was sent on it. */
static bool unsent(transport *t, CURLcode cc)
{
    long sent = -1;
    switch (cc) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
        return true;
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
        return curl_easy_getinfo(t->curl, CURLINFO_REQUEST_SIZE, &sent) == CURLE_OK &&
               sent == 0;
    default:
        return false;
    }
}

/* True for failures after which the server may or may not have seen the request: it is
 * slow, restarting or dropped the connection. Everything else (bad URL, TLS setup, a
 * body too large) is final for every request. */
static bool lost(CURLcode cc)
{
    switch (cc) {
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

/* One attempt: sets the method, body, headers and timeouts and performs the transfer.
 * The connect timeout is cut to the retry time left (but at least CONNECT_TIMEOUT_MIN_S)
 * so a host that drops packets does not hold the caller far past its retry budget. curl
 * copies the URL and a custom method, so setting them can fail for want of memory: the
 * attempt then ends there (CURLE_OUT_OF_MEMORY), since curl would send the request
 * without a URL or with its default method. */
static CURLcode attempt(transport *t, const transport_req *req, const char *url,
                        struct curl_slist *headers, double left_s, char *curl_msg)
{
    double connect_s = fmax(CONNECT_TIMEOUT_MIN_S, fmin(CONNECT_TIMEOUT_MAX_S, left_s));
    bool get = strcmp(req->method, "GET") == 0;
    buf_reset(&t->body);
    t->body_rc = 0;
    curl_msg[0] = '\0';
    curl_easy_setopt(t->curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(t->curl, CURLOPT_ERRORBUFFER, curl_msg);
    curl_easy_setopt(t->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)(connect_s * 1000));
    curl_easy_setopt(t->curl, CURLOPT_TIMEOUT_MS, (long)(t->request_timeout_s * 1000));
    if (!get) {
        curl_easy_setopt(t->curl, CURLOPT_POSTFIELDS, req->body ? req->body : "");
        curl_easy_setopt(t->curl, CURLOPT_POSTFIELDSIZE,
                         (long)(req->body ? strlen(req->body) : 0));
    } else {
        curl_easy_setopt(t->curl, CURLOPT_HTTPGET, 1L);
    }
    CURLcode cc = curl_easy_setopt(t->curl, CURLOPT_URL, url);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(t->curl, CURLOPT_CUSTOMREQUEST,
                              get || strcmp(req->method, "POST") == 0 ? NULL : req->method);
    if (cc == CURLE_OK)
        cc = curl_easy_perform(t->curl);
    curl_easy_setopt(t->curl, CURLOPT_ERRORBUFFER, NULL);
    return cc;
}

const char *transport_warning(const transport *t)
{
    return t->warning;
}

int transport_request(transport *t, const transport_req *req, transport_resp *resp,
                      zbso_err *err)
{
    char url[TRANSPORT_URL_MAX * 2 + 2];
    char shown[TRANSPORT_URL_MAX * 2 + 6]; /* url with its password masked */
    char curl_msg[CURL_ERROR_SIZE];
    char key_line[sizeof TRANSPORT_KEY_HEADER + TRANSPORT_KEY_HEX + 4];
    char last[MSG_MAX] = "";
    struct curl_slist key_node = {key_line, NULL}, *headers = t->headers;
    double start = clk_mono_s(), left;
    int attempts = 0, code;
    if ((size_t)snprintf(url, sizeof url, "%s%s", t->base, req->path) >= sizeof url)
        return err_set(err, ZBSO_ERUNTIME, "request URL %.200s%.40s... is longer than %zu "
                       "bytes", t->shown, req->path, sizeof url - 1);
    snprintf(shown, sizeof shown, "%s%s", t->shown, req->path);
    if (req->idempotency_key) {
        /* A list node of our own in front of the shared headers: curl only reads it. */
        if (strlen(req->idempotency_key) > TRANSPORT_KEY_HEX)
            return err_set(err, ZBSO_ERUNTIME, "idempotency key '%.80s' is longer than %d "
                           "characters", req->idempotency_key, TRANSPORT_KEY_HEX);
        snprintf(key_line, sizeof key_line, "%s: \"%s\"", TRANSPORT_KEY_HEADER,
                 req->idempotency_key);
        key_node.next = t->headers;
        headers = &key_node;
    }
    for (;;) {
        long status = 0;
        curl_off_t retry_after = -1;
        bool again;
        left = t->retry_timeout_s - (clk_mono_s() - start);
        CURLcode cc = attempt(t, req, url, headers, left, curl_msg);
        attempts++;
        if (cc == CURLE_OK) {
            curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
            if (status >= 200 && status < 300) {
                curl_easy_setopt(t->curl, CURLOPT_HTTPHEADER, t->headers);
                resp->status = status;
                resp->body = buf_ptr(&t->body);
                resp->len = buf_len(&t->body);
                struct curl_header *h = NULL;
                t->warning[0] = '\0';
                if (curl_easy_header(t->curl, TRANSPORT_HEADER_WARNING, 0, CURLH_HEADER, -1,
                                     &h) == CURLHE_OK && h != NULL && h->value != NULL)
                    snprintf(t->warning, sizeof t->warning, "%s", h->value);
                resp->warning = t->warning;
                return 0;
            }
            char server_msg[MSG_MAX];
            if (codec_error_message(buf_ptr(&t->body), buf_len(&t->body), server_msg,
                                    sizeof server_msg) < 0)
                snprintf(server_msg, sizeof server_msg, "%.300s", buf_ptr(&t->body));
            snprintf(last, sizeof last, "the server returned status code %ld: %.440s", status,
                     server_msg);
            code = transport_code_of_status(status);
            again = req->retry == TRANSPORT_IDEMPOTENT &&
                    (status == 502 || status == 503 || status == 504);
            curl_easy_getinfo(t->curl, CURLINFO_RETRY_AFTER, &retry_after);
        } else if (cc == CURLE_OUT_OF_MEMORY || t->body_rc == ZBSO_ENOMEM) {
            snprintf(last, sizeof last, "%s %.200s: out of memory", req->method, shown);
            code = ZBSO_ENOMEM;
            again = false;
        } else if (t->body_rc == ZBSO_ETOOBIG) {
            snprintf(last, sizeof last, "%s %.200s: the response body is over the %d byte "
                     "limit", req->method, shown, TRANSPORT_BODY_MAX);
            code = ZBSO_ERUNTIME;
            again = false;

        } else {
            snprintf(last, sizeof last, "%s %.200s: %.250s", req->method, shown,
                     curl_msg[0] ? curl_msg : curl_easy_strerror(cc));
            code = ZBSO_ERUNTIME;
            again = unsent(t, cc) || (req->retry == TRANSPORT_IDEMPOTENT && lost(cc));
        }
        /* The stack node must not outlive this call inside the handle. */
        curl_easy_setopt(t->curl, CURLOPT_HTTPHEADER, t->headers);
        if (!again)
            return err_set(err, code, "%s", last);
        /* Full backoff doubles from BACKOFF_FIRST_S up to BACKOFF_MAX_S; the jitter picks
         * a point in its upper half so many clients of a restarting server spread out. */
        double backoff = fmin(BACKOFF_MAX_S, BACKOFF_FIRST_S * ldexp(1.0, attempts - 1));
        double wait = backoff * (0.5 + 0.5 * jitter01(t));
        if (retry_after > 0 && (double)retry_after > wait)
            wait = (double)retry_after;
        left = t->retry_timeout_s - (clk_mono_s() - start);
        if (left <= 0)
            return err_set(err, code,
                           "gave up after %.1f s and %d attempts (retry timeout %.0f s); "
                           "last error: %s",
                           clk_mono_s() - start, attempts, t->retry_timeout_s, last);
        if (attempts == 1)
            log_warn("zbso client: %s; retrying for up to %.0f s", last, t->retry_timeout_s);
        clk_sleep_s(fmin(wait, left));
    }
}
