/* routes.c: the route table of SPEC §2 and its thin handlers: decode with the codec, call
 * the service, encode the answer. No sockets, no auth, no logging: server.c does those. */
#include <stdio.h>
#include <string.h>

#include "codec/codec.h"
#include "core/spec.h"
#include "http/httpInt.h"

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

int http_query_job_id(const char *v, char *job_id, zbso_err *err)
{
    if (!v)
        return err_set_field(err, ZBSO_EINVAL, "query", "job_id", "field required");
    size_t n = strlen(v);
    if (n == 0)
        return err_set_field(err, ZBSO_EINVAL, "query", "job_id",
                             "job_id must not be empty");
    if (n > ZBSO_ID_MAX)
        return err_set_field(err, ZBSO_EINVAL, "query", "job_id",
                             "job_id is %zu bytes long, over the maximum of %d", n,
                             ZBSO_ID_MAX);
    memcpy(job_id, v, n + 1);
    return 0;
}

/* Reads the job_id query argument, as MHD decoded it, into r->job_id (see
 * http_query_job_id). */
static int query_job_id(struct MHD_Connection *c, http_reply *r)
{
    return http_query_job_id(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "job_id"),
                             r->job_id, &r->err);
}

/* Handlers: each fills r (status, body, job id for the log); failures become error
 * replies through the status table. */

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
    size_t n = 0;
    char *text = codec_job_spec_dump(&stored, &n);
    reply_json(r, created ? 201 : 200, text, n);
}

static void batch_size_get(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                           size_t len, http_reply *r)
{
    zbso_trial_id trial;
    int rc = query_job_id(c, r);
    if (rc == 0)
        rc = svc_next_batch_size(ctx->st, ctx->env, r->job_id, &trial, &r->job_revision,
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

static void trials_patch(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                         size_t len, http_reply *r)
{
    zbso_trial_id trial;
    int rc = codec_trial_id_parse(body, len, &trial, &r->err);
    if (rc == 0) {
        memcpy(r->job_id, trial.job_id, sizeof r->job_id);
        rc = svc_end_trial(ctx->st, ctx->env, &trial, &r->job_revision, &r->err);
    }
    if (rc < 0)
        http_reply_error(r, rc);
    else
        http_reply_static(r, 200, NULL_BODY);
}

static void jobs_delete(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                        size_t len, http_reply *r)
{
    int rc = query_job_id(c, r);
    if (rc == 0)
        rc = svc_delete_job(ctx->st, ctx->env, r->job_id, &r->err);
    if (rc < 0)
        http_reply_error(r, rc);
    else
        http_reply_static(r, 200, NULL_BODY);
}

/* 200 only while the store can take writes (store_health); else 503 naming the cause. */
static void healthz_get(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                        size_t len, http_reply *r)
{
    int rc = store_health(ctx->st, &r->err);
    if (rc < 0)
        http_reply_error(r, rc);
    else
        http_reply_static(r, 200, "{\"status\":\"ok\"}");
}

/* Every route; a path listed twice serves two methods and shares one Allow value. */
static const http_route routes[] = {
    {"POST", "/jobs", "POST, DELETE", true, false, jobs_post},
    {"DELETE", "/jobs", "POST, DELETE", false, false, jobs_delete},
    {"GET", "/jobs/batch_size", "GET", false, false, batch_size_get},
    {"POST", "/report", "POST", true, false, report_post},
    {"PATCH", "/trials", "PATCH", true, false, trials_patch},
    {"GET", "/healthz", "GET", false, true, healthz_get},
};

const http_route *http_route_find(const char *method, const char *path, const char **allow)
{
    *allow = NULL;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (strcmp(routes[i].path, path) != 0)
            continue;
        if (strcmp(routes[i].method, method) == 0)
            return &routes[i];
        *allow = routes[i].allow;
    }
    return NULL;
}
