/* routes.c: the route table of SPEC §2 and its thin handlers: decode with the codec, call
 * the service, encode the answer. No sockets, no auth, no logging: server.c does those. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "core/spec.h"
#include "dashboard/dashboard.h"
#include "http/httpInt.h"
#include "inspect/inspect.h"
#include "util/log.h"
#include "util/utf8.h"
#include "http/metrics.h"

/* A body that cannot be encoded is a memory failure: say so rather than send nothing. */
static void reply_json(http_reply *r, unsigned status, char *body, size_t len)
{
    if (!body) {
        err_set(&r->err, ZBSO_ENOMEM, "out of memory while encoding the reply");
        http_reply_error(r, ZBSO_ENOMEM);
        return;
    }
    r->status = (int)status;
    r->body = body;
    r->len = len;
    r->body_static = false;
}

int http_query_job_id(const char *v, size_t len, char *job_id, zbso_err *err)
{
    if (!v)
        return err_set_field(err, ZBSO_EINVAL, "query", "job_id", "field required");
    if (len == 0)
        return err_set_field(err, ZBSO_EINVAL, "query", "job_id",
                             "job_id must not be empty");
    /* A decoded %00 would cut the id short and name another job (h-b%00x is not h-b);
     * no stored job id holds a NUL (JSON bodies refuse it, PostgreSQL text cannot). */
    const char *nul = memchr(v, '\0', len);
    if (nul)
        return err_set_field(err, ZBSO_EINVAL, "query", "job_id",
                             "job_id contains a NUL character (%%00) at byte %zu; a job id "
                             "cannot contain NUL",
                             (size_t)(nul - v));
    /* Every stored job id came in a JSON body, which is UTF-8; PostgreSQL refuses any
     * other bytes in text, so say so here alike for both stores. */
    size_t bad = utf8_bad_at((const unsigned char *)v, len);
    if (bad < len)
        return err_set_field(err, ZBSO_EINVAL, "query", "job_id",
                             "job_id is not valid UTF-8: byte 0x%02x at %zu",
                             (unsigned char)v[bad], bad);
    if (len > ZBSO_ID_MAX)
        return err_set_field(err, ZBSO_EINVAL, "query", "job_id",
                             "job_id is %zu bytes long, over the maximum of %d", len,
                             ZBSO_ID_MAX);
    memcpy(job_id, v, len);
    job_id[len] = '\0';
    return 0;
}

/* The value of hex digit c, or -1. */
static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int http_path_check(const char *target, zbso_err *err)
{
    size_t n = strcspn(target, "?");
    unsigned char *path = calloc(n + 1, 1);
    size_t len = 0;
    int rc = 0;
    if (!path)
        return err_set(err, ZBSO_ENOMEM, "out of memory reading the request's path");
    /* Decoded as libmicrohttpd decodes it: %XX with two hex digits, anything else as is. */
    for (size_t i = 0; i < n; i++) {
        if (target[i] == '%' && i + 2 < n && hex_value(target[i + 1]) >= 0 &&
            hex_value(target[i + 2]) >= 0) {
            path[len++] = (unsigned char)(hex_value(target[i + 1]) * 16 +
                                          hex_value(target[i + 2]));
            i += 2;
        } else {
            path[len++] = (unsigned char)target[i];
        }
    }
    const unsigned char *nul = memchr(path, '\0', len);
    size_t bad = utf8_bad_at(path, len);
    if (nul)
        rc = err_set(err, ZBSO_EINVAL, "the path holds a NUL character (%%00) at byte %zu "
                     "of its decoded form; no path or job id can hold NUL",
                     (size_t)(nul - path));
    else if (bad < len)
        rc = err_set(err, ZBSO_EINVAL, "the path is not valid UTF-8: byte 0x%02x at %zu of "
                     "its decoded form", path[bad], bad);
    free(path);
    return rc;
}

int http_idempotency_key(const char *v, char *key, zbso_err *err)
{
    size_t n = 0;
    key[0] = '\0';
    if (!v)
        return 0;
    /* RFC 8941: surrounding spaces are not part of the field; the value is an sf-string:
     * printable ASCII in double quotes, with \" and \\ as the only escapes. */
    while (*v == ' ')
        v++;
    if (*v != '"')
        return err_set_field(err, ZBSO_EINVAL, "header", "idempotency-key",
                             "Idempotency-Key '%.80s' is not a quoted string (RFC 8941 "
                             "sf-string, e.g. \"8e03978e\")", v);
    for (v++; *v != '"'; v++) {
        if (!*v)
            return err_set_field(err, ZBSO_EINVAL, "header", "idempotency-key",
                                 "Idempotency-Key has no closing quote");
        if (*v == '\\' && (v[1] == '"' || v[1] == '\\'))
            v++;
        else if (*v < 0x20 || *v > 0x7e || *v == '\\')
            return err_set_field(err, ZBSO_EINVAL, "header", "idempotency-key",
                                 "Idempotency-Key has byte 0x%02x, which a quoted string "
                                 "may not hold, at character %zu", (unsigned char)*v, n + 1);
        if (n == SVC_KEY_MAX)
            return err_set_field(err, ZBSO_EINVAL, "header", "idempotency-key",
                                 "Idempotency-Key is longer than %d characters", SVC_KEY_MAX);
        key[n++] = *v;
    }
    for (v++; *v == ' '; v++)
        ;
    if (*v)
        return err_set_field(err, ZBSO_EINVAL, "header", "idempotency-key",
                             "Idempotency-Key has '%.40s' after its closing quote", v);
    if (n == 0)
        return err_set_field(err, ZBSO_EINVAL, "header", "idempotency-key",
                             "Idempotency-Key must not be empty");
    key[n] = '\0';
    return 0;
}

/* Reads the job_id query argument, as MHD decoded it with its decoded length (a %00 stays
 * in the value, so the length tells it from a shorter id), into r->job_id (see
 * http_query_job_id). */
static int query_job_id(struct MHD_Connection *c, http_reply *r)
{
    const char *v = NULL;
    size_t len = 0;
    if (MHD_lookup_connection_value_n(c, MHD_GET_ARGUMENT_KIND, "job_id", strlen("job_id"), &v,
                                      &len) != MHD_YES)
        v = NULL;
    return http_query_job_id(v, len, r->job_id, &r->err);
}

/* Handlers: each fills r (status, body, job id for the log); failures become error
 * replies through the status table. */

/* A job registered under a new random id (no job_id given) while a job of the same spec
 * exists under its prefix: seed 003's example with ZEUS_JOB_ID unset learns nothing across
 * runs. Says so in the log (at most once a second) and to the client, in X-Zbso-Warning,
 * which libzbso and the Python binding show. The registration stands either way. */
static void warn_if_similar(const http_ctx *ctx, const zbso_job_spec *stored, http_reply *r)
{
    static log_limit limit = LOG_LIMIT_INIT;
    char similar[ZBSO_ID_MAX + 1], id_esc[100], other_esc[100], prefix_esc[100];
    zbso_err err;
    if (svc_similar_job(ctx->st, stored, similar, &err) != 1)
        return;
    log_escape(stored->job_id, strlen(stored->job_id), id_esc, sizeof id_esc);
    log_escape(similar, strlen(similar), other_esc, sizeof other_esc);
    log_escape(stored->job_id_prefix, strlen(stored->job_id_prefix), prefix_esc,
               sizeof prefix_esc);
    snprintf(r->warning, sizeof r->warning, "job %s was registered with a new random id "
             "under prefix %s, which already has job %s with the same spec: did you mean to "
             "set job_id? (each new id starts learning from scratch)", id_esc, prefix_esc,
             other_esc);
    r->warning_headers[0] = HTTP_HEADER_WARNING;
    r->warning_headers[1] = r->warning;
    r->warning_headers[2] = NULL;
    r->headers = r->warning_headers;
    log_limited(&limit, ZLOG_WARN, "%s", r->warning);
}

/* POST /jobs: 201 for a new job, 200 for an identical re-registration. */
static void jobs_post(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                      size_t len, http_reply *r)
{
    zbso_job_spec spec, stored;
    bool created = false;
    int rc = codec_job_spec_parse(body, len, &spec, &r->err);
    if (rc == 0) {
        memcpy(r->job_id, spec.job_id, sizeof r->job_id);
        rc = svc_register_job(ctx->st, ctx->env, &spec, &stored, &created,
                              &r->job_revision, &r->err);
    }
    if (rc < 0) {
        http_reply_error(r, rc);
        return;
    }
    memcpy(r->job_id, stored.job_id, sizeof r->job_id);
    if (created && spec.job_id[0] == '\0')
        warn_if_similar(ctx, &stored, r);
    size_t n = 0;
    char *text = codec_created_job_dump(&stored, &n);
    reply_json(r, created ? 201 : 200, text, n);
}

/* GET /jobs/batch_size, with an optional Idempotency-Key that names the logical request:
 * a retry that repeats it gets the trial the first one dispatched (service.h). */
static void batch_size_get(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                           size_t len, http_reply *r)
{
    zbso_trial_id trial;
    char key[SVC_KEY_MAX + 1];
    int rc = query_job_id(c, r);
    if (rc == 0)
        rc = http_idempotency_key(
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, HTTP_HEADER_IDEMPOTENCY_KEY), key,
            &r->err);
    if (rc == 0)
        rc = svc_next_batch_size(ctx->st, ctx->env, r->job_id, key, &trial, &r->job_revision,
                                 &r->err);
    if (rc < 0) {
        http_reply_error(r, rc);
        return;
    }
    size_t n = 0;
    char *text = codec_trial_id_dump(&trial, &n);
    reply_json(r, 200, text, n);
}

static void report_post(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                        size_t len, http_reply *r)
{
    zbso_training_result result;
    zbso_report_response resp;
    int rc = codec_training_result_parse(body, len, &result, &r->err);
    if (rc == 0) {
        memcpy(r->job_id, result.trial.job_id, sizeof r->job_id);
        memset(&resp, 0, sizeof resp);
        rc = svc_report(ctx->st, ctx->env, &result, &resp, &r->job_revision, &r->err);
    }
    if (rc < 0) {
        http_reply_error(r, rc);
        return;
    }
    size_t n = 0;
    char *text = codec_report_response_dump(&resp, &n);
    reply_json(r, 200, text, n);
}

/* PATCH /trials and DELETE /jobs answer JSON null, as Zeus's handlers returning None do. */
static const char NULL_BODY[] = "null";

/* Answers 200 with the constant text when rc is 0, else the error reply for rc. */
static void reply_static_or_error(http_reply *r, int rc, const char *text)
{
    if (rc < 0)
        http_reply_error(r, rc);
    else
        http_reply_static(r, 200, text);
}

static void trials_patch(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                         size_t len, http_reply *r)
{
    zbso_trial_id trial;
    int rc = codec_trial_id_parse(body, len, &trial, &r->err);
    if (rc == 0) {
        memcpy(r->job_id, trial.job_id, sizeof r->job_id);
        rc = svc_end_trial(ctx->st, ctx->env, &trial, &r->job_revision, &r->err);
    }
    reply_static_or_error(r, rc, NULL_BODY);
}

static void jobs_delete(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                        size_t len, http_reply *r)
{
    int rc = query_job_id(c, r);
    if (rc == 0)
        rc = svc_delete_job(ctx->st, ctx->env, r->job_id, &r->err);
    reply_static_or_error(r, rc, NULL_BODY);
}

/* ---- power-limit profiles (SPEC §6.1) ---- */

/* PUT /power_profiles: stores the profile of a job's batch size, 200 with it. */
static void profiles_put(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                         size_t len, http_reply *r)
{
    zbso_power_profile *in = malloc(sizeof *in), *out = malloc(sizeof *out);
    int rc = in && out ? 0 : err_set(&r->err, ZBSO_ENOMEM, "out of memory reading a profile");
    if (rc == 0)
        rc = codec_power_profile_parse(body, len, r->job_id, in, &r->err);
    if (rc == 0)
        rc = svc_profile_put(ctx->st, ctx->env, r->job_id, in, out, &r->job_revision,
                             &r->err);
    if (rc < 0) {
        http_reply_error(r, rc);
    } else {
        size_t n = 0;
        char *text = codec_power_profile_dump(r->job_id, out, &n);
        reply_json(r, 200, text, n);
    }
    free(in);
    free(out);
}

/* Reads the batch_size query argument: a positive integer, else 422 naming it. */
static int query_batch_size(struct MHD_Connection *c, http_reply *r, int64_t *out)
{
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "batch_size");
    char *end = NULL;
    if (!v)
        return err_set_field(&r->err, ZBSO_EINVAL, "query", "batch_size", "field required");
    long long bs = strtoll(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || *end != '\0' || bs <= 0 || strlen(v) > 18)
        return err_set_field(&r->err, ZBSO_EINVAL, "query", "batch_size",
                             "batch_size must be a positive integer, got '%.40s'", v);
    *out = bs;
    return 0;
}

/* GET /power_profiles?job_id=J&batch_size=B: 200 with the profile, 404 without one. */
static void profiles_get(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                         size_t len, http_reply *r)
{
    zbso_power_profile *p = malloc(sizeof *p);
    int64_t bs = 0;
    int rc = p ? 0 : err_set(&r->err, ZBSO_ENOMEM, "out of memory reading a profile");
    if (rc == 0)
        rc = query_job_id(c, r);
    if (rc == 0)
        rc = query_batch_size(c, r, &bs);
    if (rc == 0)
        rc = svc_profile_get(ctx->st, ctx->env, r->job_id, bs, p, &r->job_revision, &r->err);
    if (rc < 0) {
        http_reply_error(r, rc);
    } else {
        size_t n = 0;
        char *text = codec_power_profile_dump(r->job_id, p, &n);
        reply_json(r, 200, text, n);
    }
    free(p);
}

const char *http_health_reason(const char *msg)
{
    static const struct {
        const char *reason, *words[4];
    } classes[] = {
        {"disk_full", {"disk is full", "is full", "No space left", NULL}},
        {"read_only", {"read-only", "cannot be written", "read only", NULL}},
        {"locked", {"locked", NULL}},
        {"io_error", {"I/O error", "Input/output error", NULL}},
        {"database_gone", {"was deleted", "was moved away", "replaced by another file",
                           NULL}},
        {"unreachable", {"cannot connect", "connection", "Lost connection", NULL}},
    };
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        for (const char *const *w = classes[i].words; *w; w++)
            if (strstr(msg, *w))
                return classes[i].reason;
    return "storage_error";
}

/* 200 only while the store can take writes (store_health); else 503 (500 for a failure
 * that is not a storage fault) with {"status":"unavailable","reason":CLASS}. The cause's
 * message names the database's file, URL or host: it goes to the log (the request log's
 * ERROR line of every 5xx) and, as "message", to a caller with the API token only. */
static void healthz_get(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                        size_t len, http_reply *r)
{
    int rc = store_health(ctx->st, &r->err);
    if (rc == 0) {
        http_reply_static(r, 200, "{\"status\":\"ok\"}");
        return;
    }
    r->err.code = rc;
    char head[96];
    int n = snprintf(head, sizeof head, "{\"status\":\"unavailable\",\"reason\":\"%s\"",
                     http_health_reason(r->err.msg));
    size_t msg_len = 0;
    /* codec_error_dump escapes the message: its {"message":...} joins the object. */
    char *msg = r->authorized ? codec_error_dump(&r->err, false, &msg_len) : NULL;
    size_t total = (size_t)n + (msg ? msg_len : 1) + 1;
    char *text = malloc(total + 1);
    if (text) {
        if (msg)
            snprintf(text, total + 1, "%s,%s", head, msg + 1);
        else
            snprintf(text, total + 1, "%s}", head);
    }
    free(msg);
    reply_json(r, http_status_of(rc), text, text ? strlen(text) : 0);
}

/* ---- inspection (SPEC §5): GET /jobs, /jobs/{job_id}, .../trials, .../trials/{n} ---- */

#define PAT_JOB "/jobs/{job_id}"
#define PAT_TRIALS "/jobs/{job_id}/trials"
#define PAT_TRIAL "/jobs/{job_id}/trials/{trial_number}"
#define TRIALS_SUFFIX "/trials"

/* Splits an inspection path (http_path_pattern gave it PAT_*) into the job id and, for a
 * trial, the trial number's text. */
static void split_path(const char *url, insp_kind kind, const char **id, size_t *id_len,
                       const char **num)
{
    const char *rest = url + strlen("/jobs/");
    size_t n = strlen(rest);
    *id = rest;
    *num = NULL;
    if (kind == INSP_TRIAL) {
        const char *slash = strrchr(rest, '/');
        *num = slash + 1;
        n = (size_t)(slash - rest);
    }
    if (kind == INSP_TRIAL || kind == INSP_TRIALS)
        n -= strlen(TRIALS_SUFFIX);
    *id_len = n;
}

/* One query argument into the request; stops at the first error (kept in the reply). */
typedef struct query_walk {
    insp_request *req;
    http_reply *r;
    int rc;
} query_walk;

static enum MHD_Result query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                 size_t key_len, const char *value, size_t value_len)
{
    query_walk *q = cls;
    (void)kind;
    (void)key_len;
    if (q->rc < 0)
        return MHD_NO;
    q->rc = insp_request_query(q->req, key, value ? value : "", value ? value_len : 0,
                               &q->r->err);
    return q->rc < 0 ? MHD_NO : MHD_YES;
}

/* Builds the request of kind from the path and the query; 0, 404 or 422. */
static int inspect_request(struct MHD_Connection *c, insp_kind kind, http_reply *r,
                           insp_request *req)
{
    insp_request_init(req, kind);
    if (kind != INSP_JOBS) {
        const char *id, *num;
        size_t len;
        split_path(r->url, kind, &id, &len, &num);
        /* No job id is longer, holds a NUL or is not UTF-8: such a path names no job. */
        zbso_err ignored = {0};
        if (http_query_job_id(id, len, req->job_id, &ignored) < 0)
            return err_set(&r->err, ZBSO_ENOTFOUND, "Unknown job_id: %.*s",
                           (int)(len < 200 ? len : 200), id);
        memcpy(r->job_id, req->job_id, sizeof r->job_id);
        if (kind == INSP_TRIAL) {
            size_t k = strlen(num);
            bool ok = k > 0 && k <= 18;
            for (size_t i = 0; i < k && ok; i++)
                ok = num[i] >= '0' && num[i] <= '9';
            if (!ok)
                return err_set_field(&r->err, ZBSO_EINVAL, "path", "trial_number",
                                     "trial_number must be a positive integer, got '%.40s'",
                                     num);
            req->trial_number = (int64_t)strtoll(num, NULL, 10);
        }
    }
    query_walk q = {req, r, 0};
    MHD_get_connection_values_n(c, MHD_GET_ARGUMENT_KIND, query_arg, &q);
    return q.rc;
}

static void inspect_reply(const http_ctx *ctx, struct MHD_Connection *c, insp_kind kind,
                          http_reply *r)
{
    insp_request req;
    char *text = NULL;
    size_t n = 0;
    int rc = inspect_request(c, kind, r, &req);
    req.footprint = ctx->env->footprint;
    if (rc == 0)
        rc = insp_answer(ctx->st, &req, &text, &n, &r->err);
    if (rc < 0) {
        http_reply_error(r, rc);
        return;
    }
    reply_json(r, 200, text, n);
}

static void jobs_get(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                     size_t len, http_reply *r)
{
    inspect_reply(ctx, c, INSP_JOBS, r);
}

static void job_get(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                    size_t len, http_reply *r)
{
    inspect_reply(ctx, c, INSP_JOB, r);
}

static void trials_get(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                       size_t len, http_reply *r)
{
    inspect_reply(ctx, c, INSP_TRIALS, r);
}

static void trial_get(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                      size_t len, http_reply *r)
{
    inspect_reply(ctx, c, INSP_TRIAL, r);
}

/* GET /openapi.json: the document of every route (openapi.json beside this file, compiled
 * in by CMake). */
static void openapi_get(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                        size_t len, http_reply *r)
{
    r->status = 200;
    r->body = (char *)http_openapi_json;
    r->len = http_openapi_json_len;
    r->body_static = true;
}

/* GET /, /app.js, /app.css, /docs and its files: the dashboard's and the API docs' files
 * (src/dashboard), public: they hold no job data, which the pages fetch with the token. */
static void dashboard_get(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                          size_t len, http_reply *r)
{
    dash_asset a;
    if (dash_asset_find(r->url, &a) < 0) {
        err_set(&r->err, ZBSO_ENOTFOUND, "no such path: %.200s", r->url);
        http_reply_error(r, ZBSO_ENOTFOUND);
        return;
    }
    r->status = 200;
    r->body = (char *)a.body;
    r->len = a.len;
    r->body_static = true;
    r->content_type = a.content_type;
    r->headers = a.headers;
}

/* Every route; a path listed twice serves two methods and shares one Allow value. Paths
 * with parameters are http_path_pattern's patterns. */
static const http_route routes[] = {
    {"GET", "/jobs", "GET, POST, DELETE", false, HTTP_SCOPE_READ, jobs_get, true},
    {"POST", "/jobs", "GET, POST, DELETE", true, HTTP_SCOPE_CLIENT, jobs_post, false},
    {"DELETE", "/jobs", "GET, POST, DELETE", false, HTTP_SCOPE_ADMIN, jobs_delete, false},
    {"GET", "/jobs/batch_size", "GET", false, HTTP_SCOPE_CLIENT, batch_size_get, false},
    {"POST", "/report", "POST", true, HTTP_SCOPE_CLIENT, report_post, false},
    {"PATCH", "/trials", "PATCH", true, HTTP_SCOPE_CLIENT, trials_patch, false},
    {"GET", "/power_profiles", "GET, PUT", false, HTTP_SCOPE_READ, profiles_get, false},
    {"PUT", "/power_profiles", "GET, PUT", true, HTTP_SCOPE_ADMIN, profiles_put, false},
    {"GET", "/healthz", "GET", false, HTTP_SCOPE_PUBLIC, healthz_get, false},
    {"GET", PAT_JOB, "GET", false, HTTP_SCOPE_READ, job_get, true},
    {"GET", PAT_TRIALS, "GET", false, HTTP_SCOPE_READ, trials_get, true},
    {"GET", PAT_TRIAL, "GET", false, HTTP_SCOPE_READ, trial_get, true},
    {"GET", "/openapi.json", "GET", false, HTTP_SCOPE_READ, openapi_get, true},
    {"GET", "/metrics", "GET", false, HTTP_SCOPE_READ, http_metrics_get, true},
    /* The dashboard's static files: answered at once, ahead of the views they call. */
    {"GET", DASH_PATH_INDEX, "GET", false, HTTP_SCOPE_PUBLIC, dashboard_get, false},
    {"GET", DASH_PATH_JS, "GET", false, HTTP_SCOPE_PUBLIC, dashboard_get, false},
    {"GET", DASH_PATH_CSS, "GET", false, HTTP_SCOPE_PUBLIC, dashboard_get, false},
    /* The interactive API docs (Swagger UI), public like the dashboard's files. */
    {"GET", DASH_PATH_DOCS, "GET", false, HTTP_SCOPE_PUBLIC, dashboard_get, false},
    {"GET", DASH_PATH_DOCS_JS, "GET", false, HTTP_SCOPE_PUBLIC, dashboard_get, false},
    {"GET", DASH_PATH_SWAGGER_JS, "GET", false, HTTP_SCOPE_PUBLIC, dashboard_get, false},
    {"GET", DASH_PATH_SWAGGER_CSS, "GET", false, HTTP_SCOPE_PUBLIC, dashboard_get, false},
};

/* Whether s ends with the n bytes of suffix, with something before them. */
static bool ends_with(const char *s, size_t len, const char *suffix, size_t n)
{
    return len > n && memcmp(s + len - n, suffix, n) == 0;
}

const char *http_path_pattern(const char *path)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!strchr(routes[i].path, '{') && strcmp(routes[i].path, path) == 0)
            return routes[i].path;
    if (strncmp(path, "/jobs/", 6) != 0 || path[6] == '\0')
        return NULL;
    const char *rest = path + 6;
    size_t n = strlen(rest);
    size_t k = strlen(TRIALS_SUFFIX);
    if (ends_with(rest, n, TRIALS_SUFFIX, k))
        return PAT_TRIALS;
    const char *slash = strrchr(rest, '/');
    if (slash && ends_with(rest, (size_t)(slash - rest), TRIALS_SUFFIX, k) && slash[1])
        return PAT_TRIAL;
    return PAT_JOB;
}

size_t http_route_count(void)
{
    return sizeof routes / sizeof routes[0];
}

const http_route *http_route_at(size_t i)
{
    return i < http_route_count() ? &routes[i] : NULL;
}

const http_route *http_route_find(const char *method, const char *path, const char **allow)
{
    *allow = NULL;
    const char *pattern = http_path_pattern(path);
    if (!pattern)
        return NULL;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (strcmp(routes[i].path, pattern) != 0)
            continue;
        if (strcmp(routes[i].method, method) == 0)
            return &routes[i];
        *allow = routes[i].allow;
    }
    return NULL;
}
