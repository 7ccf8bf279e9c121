/* bso_http.c: `zbso run`'s optimizer behind a zbso (or Zeus) server: the requests of
 * SPEC §2 over HTTP with libcurl, bodies through src/codec. One connection, reused. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/codec.h"
#include "run/runInt.h"

#define URL_MAX 2048
#define BODY_MAX (1u << 20)        /* a larger answer is refused */
#define CONNECT_TRIES 5            /* a refused connection is retried, 1 s apart */

typedef struct http_bso {
    run_bso base;
    CURL *curl;
    struct curl_slist *headers;
    char url[URL_MAX];             /* base URL without a trailing '/' */
} http_bso;

typedef struct body {
    char *p;
    size_t n;
    bool too_big;
} body;

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    body *b = ud;
    size_t len = size * nmemb;
    if (b->n + len > BODY_MAX) {
        b->too_big = true;
        return 0;
    }
    char *grown = realloc(b->p, b->n + len + 1);
    if (grown == NULL)
        return 0;
    b->p = grown;
    memcpy(b->p + b->n, ptr, len);
    b->n += len;
    b->p[b->n] = '\0';
    return len;
}

/* The ZBSO_E* code of an HTTP error status. */
static int status_code(long status)
{
    switch (status) {
    case 401: return ZBSO_EAUTH;
    case 404: return ZBSO_ENOTFOUND;
    case 409: return ZBSO_ECONFLICT;
    case 413: return ZBSO_ETOOBIG;
    case 422: return ZBSO_EINVAL;
    default: return ZBSO_ERUNTIME;
    }
}

/* Sends method path (with its query) and the JSON text req (NULL: no body). On a 2xx
 * answer returns 0 and *resp (malloc'd, NUL-terminated, may be NULL when empty; the
 * caller frees it). Otherwise the code of the status (status_code) with the server's
 * message, or ZBSO_ERUNTIME naming the URL and curl's reason. */
static int call(http_bso *h, const char *method, const char *path, const char *req,
                body *resp, zbso_err *err)
{
    char url[URL_MAX + 512], cerr[CURL_ERROR_SIZE] = "";
    long status = 0;
    CURLcode cc = CURLE_OK;
    int rc = 0;

    memset(resp, 0, sizeof *resp);
    snprintf(url, sizeof url, "%s%s", h->url, path);
    for (int attempt = 1; attempt <= CONNECT_TRIES; attempt++) {
        curl_easy_setopt(h->curl, CURLOPT_URL, url);
        curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, h->headers);
        curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, cerr);
        curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, resp);
        curl_easy_setopt(h->curl, CURLOPT_TIMEOUT, 120L);
        curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
        if (req != NULL) {
            curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, req);
            curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(req));
        } else {
            curl_easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
            curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, method);
        }
        cc = curl_easy_perform(h->curl);
        /* Only a connection that was never made is retried: the request was not seen, so
         * retrying cannot dispatch a trial twice. */
        if (cc != CURLE_COULDNT_CONNECT || attempt == CONNECT_TRIES)
            break;
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
    }
    if (cc != CURLE_OK) {
        rc = err_set(err, ZBSO_ERUNTIME, "%s %s failed: %s", method, url,
                     resp->too_big ? "the answer is over 1 MiB"
                                   : cerr[0] ? cerr : curl_easy_strerror(cc));
        goto out;
    }
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status > 299) {
        char msg[ZBSO_ERR_MSG_MAX];
        if (resp->p == NULL || codec_error_message(resp->p, resp->n, msg, sizeof msg) < 0)
            snprintf(msg, sizeof msg, "%.200s", resp->p != NULL ? resp->p : "no body");
        rc = err_set(err, status_code(status), "%s %s answered %ld: %s", method, url, status,
                     msg);
    }
out:
    if (rc < 0) {
        free(resp->p);
        resp->p = NULL;
    }
    return rc;
}

/* Turns a parse failure (rc < 0) or an empty answer to request `what` into
 * ZBSO_ERUNTIME naming the request; returns rc otherwise. */
static int check_answer(int rc, const body *resp, const char *what, zbso_err *err)
{
    char msg[ZBSO_ERR_MSG_MAX];
    if (resp->p == NULL)
        return err_set(err, ZBSO_ERUNTIME, "the server's answer to %s is empty", what);
    if (rc == 0)
        return 0;
    snprintf(msg, sizeof msg, "%s", err->msg);
    return err_set(err, ZBSO_ERUNTIME, "the server's answer to %s is not valid: %s", what,
                   msg);
}

static int http_register(run_bso *b, const zbso_job_spec *spec, zbso_job_spec *out,
                         zbso_err *err)
{
    body resp;
    char *req = codec_job_spec_dump(spec, NULL);
    if (req == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory writing the job spec");
    int rc = call((http_bso *)b, "POST", "/jobs", req, &resp, err);
    free(req);
    if (rc == 0)
        rc = check_answer(resp.p != NULL ? codec_job_spec_parse(resp.p, resp.n, out, err) : 0,
                          &resp, "POST /jobs", err);
    free(resp.p);
    return rc;
}

static int http_next(run_bso *b, const char *job_id, zbso_trial_id *out, zbso_err *err)
{
    http_bso *h = (http_bso *)b;
    char path[URL_MAX];
    body resp;
    char *esc = curl_easy_escape(h->curl, job_id, 0);
    if (esc == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory writing a request");
    snprintf(path, sizeof path, "/jobs/batch_size?job_id=%s", esc);
    curl_free(esc);
    int rc = call(h, "GET", path, NULL, &resp, err);
    if (rc == 0)
        rc = check_answer(resp.p != NULL ? codec_trial_id_parse(resp.p, resp.n, out, err) : 0,
                          &resp, "GET /jobs/batch_size", err);
    free(resp.p);
    return rc;
}

static int http_report(run_bso *b, const zbso_training_result *r, zbso_report_response *out,
                       zbso_err *err)
{
    body resp;
    char *req = codec_training_result_dump(r, NULL);
    if (req == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory writing a report");
    int rc = call((http_bso *)b, "POST", "/report", req, &resp, err);
    free(req);
    if (rc == 0)
        rc = check_answer(
            resp.p != NULL ? codec_report_response_parse(resp.p, resp.n, out, err) : 0,
            &resp, "POST /report", err);
    free(resp.p);
    return rc;
}

static int http_end(run_bso *b, const zbso_trial_id *t, zbso_err *err)
{
    body resp;
    char *req = codec_trial_id_dump(t, NULL);
    if (req == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory writing a request");
    int rc = call((http_bso *)b, "PATCH", "/trials", req, &resp, err);
    free(req);
    free(resp.p);
    return rc;
}

static void http_close(run_bso *b)
{
    http_bso *h = (http_bso *)b;
    curl_slist_free_all(h->headers);
    if (h->curl != NULL)
        curl_easy_cleanup(h->curl);
    free(h);
}

static const run_bso_ops http_ops = {http_register, http_next, http_report, http_end,
                                     http_close};

int run_bso_http_open(const char *url, run_bso **out, zbso_err *err)
{
    char auth[1100];
    const char *token = getenv("ZEUS_BSO_API_TOKEN");
    size_t len = strlen(url);
    http_bso *h = NULL;
    int rc = 0;

    *out = NULL;
    if ((strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) ||
        len >= URL_MAX)
        return err_set(err, ZBSO_EINVAL,
                       "--server '%.200s' is not an http:// or https:// URL of at most %d "
                       "bytes", url, URL_MAX - 1);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return err_set(err, ZBSO_ERUNTIME, "cannot initialise libcurl");
    if ((h = calloc(1, sizeof *h)) == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory opening %s", url);
        goto out;
    }
    memcpy(h->url, url, len + 1);
    while (len > 0 && h->url[len - 1] == '/')
        h->url[--len] = '\0';
    h->base.ops = &http_ops;
    h->base.server_url = h->url;
    if ((h->curl = curl_easy_init()) == NULL ||
        (h->headers = curl_slist_append(NULL, "Content-Type: application/json")) == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory opening %s", url);
        goto out;
    }
    if (token != NULL && token[0] != '\0') {
        struct curl_slist *more;
        snprintf(auth, sizeof auth, "Authorization: Bearer %.1000s", token);
        if ((more = curl_slist_append(h->headers, auth)) == NULL) {
            rc = err_set(err, ZBSO_ENOMEM, "out of memory opening %s", url);
            goto out;
        }
        h->headers = more;
    }
    *out = &h->base;
out:
    if (rc < 0 && h != NULL)
        http_close(&h->base);
    return rc;
}
