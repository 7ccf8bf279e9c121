/* protocol.c: SPEC §2's requests over the transport (see protocol.h). */
#include "transport/protocol.h"

#include <stdio.h>
#include <stdlib.h>

#include "codec/codec.h"
#include "util/log.h"
#include "util/mem.h"

/* Checks the answer to what: rc is the codec's verdict on a non-empty body. Returns 0,
 * ZBSO_ENOMEM when memory ran out reading it, or ZBSO_ERUNTIME naming the request and what
 * was wrong with the answer. */
static int check_answer(int rc, const transport_resp *resp, const char *what,
                        const char *expected, zbso_err *err)
{
    char msg[ZBSO_ERR_MSG_MAX];
    if (resp->len == 0)
        return err_set(err, ZBSO_ERUNTIME, "the server answered %s with an empty body", what);
    if (rc == 0)
        return 0;
    if (rc == ZBSO_ENOMEM)
        return err_set(err, rc, "out of memory reading the answer to %s", what);
    snprintf(msg, sizeof msg, "%s", err->msg);
    return err_set(err, ZBSO_ERUNTIME, "the server answered %s with an invalid %s: %.400s",
                   what, expected, msg);
}

/* Sends method path with body, a codec text that send_body frees (NULL: the codec ran
 * out of memory encoding what). Returns transport_request's result, or ZBSO_ENOMEM. */
static int send_body(transport *t, const char *method, const char *path, char *body,
                     transport_retry retry, const char *what, transport_resp *resp,
                     zbso_err *err)
{
    transport_req req = {method, path, body, retry, NULL};
    if (!body)
        return err_set(err, ZBSO_ENOMEM, "out of memory encoding %s", what);
    int rc = transport_request(t, &req, resp, err);
    free(body);
    return rc;
}

int protocol_register_job(transport *t, const zbso_job_spec *spec, zbso_job_spec *out,
                          zbso_err *err)
{
    transport_resp resp;
    int rc = send_body(t, "POST", "/jobs", codec_job_spec_dump(spec, NULL),
                       spec->job_id[0] ? TRANSPORT_IDEMPOTENT : TRANSPORT_RETRY_IF_UNSENT,
                       "the job spec", &resp, err);
    if (rc < 0)
        return rc;
    rc = resp.len ? codec_job_spec_parse(resp.body, resp.len, out, err) : 0;
    if (rc == 0 && resp.len && !out->job_id[0])
        rc = err_set(err, ZBSO_EINVAL, "no job_id");
    if (rc == 0 && resp.warning[0] != '\0')
        log_warn("zbso client: the server warns: %s", resp.warning);
    return check_answer(rc, &resp, "POST /jobs", "job", err);
}

int protocol_next_batch_size(transport *t, const char *job_id, zbso_trial_id *out,
                             zbso_err *err)
{
    char path[ZBSO_ID_MAX * 3 + 64], key[TRANSPORT_KEY_HEX + 1];
    transport_resp resp;
    transport_req req = {"GET", path, NULL, TRANSPORT_IDEMPOTENT, key};
    char *id = transport_escape(job_id);
    int rc;
    if (!id)
        return err_set(err, ZBSO_ENOMEM, "out of memory escaping job id %.300s", job_id);
    snprintf(path, sizeof path, "/jobs/batch_size?job_id=%s", id);
    mem_free(id);
    if ((rc = transport_key_new(key, err)) < 0 ||
        (rc = transport_request(t, &req, &resp, err)) < 0)
        return rc;
    rc = resp.len ? codec_trial_id_parse(resp.body, resp.len, out, err) : 0;
    return check_answer(rc, &resp, "GET /jobs/batch_size", "TrialId", err);
}

int protocol_report(transport *t, const zbso_training_result *r, zbso_report_response *out,
                    zbso_err *err)
{
    transport_resp resp;
    int rc = send_body(t, "POST", "/report", codec_training_result_dump(r, NULL),
                       TRANSPORT_IDEMPOTENT, "the training result", &resp, err);
    if (rc < 0)
        return rc;
    rc = resp.len ? codec_report_response_parse(resp.body, resp.len, out, err) : 0;
    return check_answer(rc, &resp, "POST /report", "ReportResponse", err);
}

int protocol_end_trial(transport *t, const zbso_trial_id *trial, zbso_err *err)
{
    transport_resp resp;
    return send_body(t, "PATCH", "/trials", codec_trial_id_dump(trial, NULL),
                     TRANSPORT_IDEMPOTENT, "the trial id", &resp, err);
}

int protocol_profile_put(transport *t, const char *job_id, const zbso_power_profile *p,
                         zbso_power_profile *out, zbso_err *err)
{
    transport_resp resp;
    int rc = send_body(t, "PUT", "/power_profiles", codec_power_profile_dump(job_id, p, NULL),
                       TRANSPORT_IDEMPOTENT, "the power profile", &resp, err);
    if (rc < 0)
        return rc;
    rc = resp.len ? codec_power_profile_read(resp.body, resp.len, out, err) : 0;
    return check_answer(rc, &resp, "PUT /power_profiles", "power profile", err);
}

int protocol_profile_get(transport *t, const char *job_id, int64_t batch_size,
                         zbso_power_profile *out, zbso_err *err)
{
    char path[ZBSO_ID_MAX * 3 + 96];
    transport_resp resp;
    transport_req req = {"GET", path, NULL, TRANSPORT_IDEMPOTENT, NULL};
    char *id = transport_escape(job_id);
    int rc;
    if (!id)
        return err_set(err, ZBSO_ENOMEM, "out of memory escaping job id %.300s", job_id);
    snprintf(path, sizeof path, "/power_profiles?job_id=%s&batch_size=%lld", id,
             (long long)batch_size);
    mem_free(id);
    if ((rc = transport_request(t, &req, &resp, err)) < 0)
        return rc;
    rc = resp.len ? codec_power_profile_read(resp.body, resp.len, out, err) : 0;
    return check_answer(rc, &resp, "GET /power_profiles", "power profile", err);
}
