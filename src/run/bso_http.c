/* bso_http.c: `zbso run`'s optimizer behind a zbso (or Zeus) server: the requests of
 * SPEC §2 through src/transport's protocol, the same code and retries as libzbso's
 * client. One connection, reused. */
#include <stdio.h>
#include <stdlib.h>

#include "run/runInt.h"
#include "transport/protocol.h"
#include "transport/transport.h"

typedef struct http_bso {
    run_bso base;
    transport *tp;
} http_bso;

static int http_register(run_bso *b, const zbso_job_spec *spec, zbso_job_spec *out,
                         zbso_err *err)
{
    return protocol_register_job(((http_bso *)b)->tp, spec, out, err);
}

static int http_next(run_bso *b, const char *job_id, zbso_trial_id *out, zbso_err *err)
{
    return protocol_next_batch_size(((http_bso *)b)->tp, job_id, out, err);
}

static int http_report(run_bso *b, const zbso_training_result *r, zbso_report_response *out,
                       zbso_err *err)
{
    return protocol_report(((http_bso *)b)->tp, r, out, err);
}

static int http_end(run_bso *b, const zbso_trial_id *t, zbso_err *err)
{
    return protocol_end_trial(((http_bso *)b)->tp, t, err);
}

static int http_profile_get(run_bso *b, const char *job_id, int64_t bs,
                            zbso_power_profile *out, zbso_err *err)
{
    return protocol_profile_get(((http_bso *)b)->tp, job_id, bs, out, err);
}

static int http_profile_put(run_bso *b, const char *job_id, const zbso_power_profile *p,
                            zbso_err *err)
{
    zbso_power_profile *out = malloc(sizeof *out);
    int rc = out ? protocol_profile_put(((http_bso *)b)->tp, job_id, p, out, err)
                 : err_set(err, ZBSO_ENOMEM, "out of memory storing a power profile");
    free(out);
    return rc;
}

static void http_close(run_bso *b)
{
    http_bso *h = (http_bso *)b;
    transport_free(h->tp);
    free(h);
}

static const run_bso_ops http_ops = {http_register, http_next, http_report, http_end,
                                     http_profile_get, http_profile_put, http_close};

int run_bso_http_open(const char *url, run_bso **out, zbso_err *err)
{
    http_bso *h = NULL;
    double retry_s;
    int rc;

    *out = NULL;
    if ((rc = transport_retry_timeout_env(&retry_s, err)) < 0)
        return rc;
    if ((h = calloc(1, sizeof *h)) == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory opening a server connection");
    if ((rc = transport_new(url, getenv("ZEUS_BSO_API_TOKEN"), retry_s, &h->tp, err)) < 0) {
        if (rc == ZBSO_ECONFIG) {
            char msg[ZBSO_ERR_MSG_MAX];
            snprintf(msg, sizeof msg, "%s", err->msg);
            rc = err_set(err, ZBSO_EINVAL, "--server: %s", msg);
        }
        free(h);
        return rc;
    }
    h->base.ops = &http_ops;
    h->base.server_url = transport_base_url(h->tp);
    *out = &h->base;
    return 0;
}
