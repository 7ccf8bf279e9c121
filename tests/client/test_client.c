/* test_client.c: the C client of libzbso.so against a real `zbso serve` process ($ZBSO_BIN)
 * and the fake NVML ($ZBSO_NVML_LIBRARY), plus a scripted HTTP server thread for answers
 * the real server never gives (fake_http.h). Each test uses its own job ids. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <sqlite3.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_http.h"
#include "serve.h"
#include "util/clock.h"
#include "zbso/zbso.h"

/* beta_knob null: costs come from wall-clock time on the fake NVML, so an early-stop bound
 * would make outcomes depend on timing. */
#define SPEC_FMT                                                                          \
    "{\"job_id\":\"%s\",\"job_id_prefix\":\"%s\",\"batch_sizes\":[64,32,128],"              \
    "\"default_batch_size\":64,\"max_epochs\":%d,\"target_metric\":0.5,\"mab_seed\":1,"     \
    "\"beta_knob\":null}"

static char tmpdir[64];
static char real_nvml[512];
static int shared_port;       /* the server most tests use */
static pid_t shared_pid;
static char shared_url[64];

/* ---- helpers --------------------------------------------------------------------- */

static void spec(char *buf, size_t cap, const char *job_id, const char *prefix, int epochs)
{
    snprintf(buf, cap, SPEC_FMT, job_id, prefix, epochs);
}

/* A client of the shared server with its own monitor; fails the test on error. */
static zbso_client *client_for(const char *url, const char *job_id, const char *prefix,
                               int epochs, int rank)
{
    char s[512], err[ZBSO_ERRBUF_MAX];
    zbso_client *c = NULL;
    spec(s, sizeof s, job_id, prefix, epochs);
    int rc = zbso_client_new(NULL, url, s, rank, &c, err, sizeof err);
    if (rc != 0)
        fail_msg("zbso_client_new: %d %s", rc, err);
    return c;
}

/* Runs epochs with the given metrics until training finishes; returns the last rc. */
static int train(zbso_client *c, const double *metrics, int n)
{
    int rc = zbso_client_on_train_begin(c);
    assert_int_equal(rc, 0);
    for (int i = 0; i < n && !zbso_client_training_finished(c); i++)
        if ((rc = zbso_client_on_evaluate(c, metrics[i])) != 0)
            return rc;
    return rc;
}

static const char *const FAKE_JOB =
    "{\"job_id\":\"fake-1\",\"job_id_prefix\":\"fake\",\"batch_sizes\":[32,64],"
    "\"default_batch_size\":32,\"max_power\":700,\"number_of_gpus\":1,"
    "\"gpu_model\":\"NVIDIA H200\"}";

/* ---- tests ------------------------------------------------------------------------ */

/* Seed 000's sequence end to end, with the GPU facts in the registered job. */
static void test_flow(void **state)
{
    char s[512], err[ZBSO_ERRBUF_MAX];
    zbso_monitor *mon = NULL;
    zbso_client *c = NULL;
    int64_t bs = 0;
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_MAX_LIMIT_MW", "700999", 1);
    assert_int_equal(zbso_monitor_new(NULL, 0, &mon, err, sizeof err), 0);
    /* server_url NULL: $ZEUS_BSO_SERVER_URL. */
    setenv("ZEUS_BSO_SERVER_URL", shared_url, 1);
    snprintf(s, sizeof s,
             "{\"job_id_prefix\":\"flow\",\"batch_sizes\":[64,32,128],"
             "\"default_batch_size\":64,\"max_epochs\":5,\"unknown_field\":1}");
    int rc = zbso_client_new(mon, NULL, s, 0, &c, err, sizeof err);
    unsetenv("ZEUS_BSO_SERVER_URL");
    if (rc != 0)
        fail_msg("new: %d %s", rc, err);
    assert_string_equal(err, "");
    assert_true(strncmp(zbso_client_job_id(c), "flow-", 5) == 0);

    json_t *job = json_loads(zbso_client_job_json(c), 0, NULL);
    assert_non_null(job);
    assert_true(json_number_value(json_object_get(job, "max_power")) == 1400.0);
    assert_int_equal(json_integer_value(json_object_get(job, "number_of_gpus")), 2);
    assert_string_equal(json_string_value(json_object_get(job, "gpu_model")), "NVIDIA H200");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(job, "batch_sizes"), 0)),
                     32);
    assert_string_equal(json_string_value(json_object_get(job, "job_id")),
                        zbso_client_job_id(c));
    json_decref(job);

    assert_int_equal(zbso_client_trial_number(c), 0);
    assert_int_equal(zbso_client_get_batch_size(c, &bs), 0);
    assert_int_equal(bs, 64);
    assert_int_equal(zbso_client_trial_number(c), 1);
    bs = 0;
    assert_int_equal(zbso_client_get_batch_size(c, &bs), 0); /* cached: same trial */
    assert_int_equal(bs, 64);
    assert_int_equal(zbso_client_trial_number(c), 1);

    assert_int_equal(zbso_client_on_evaluate(c, 0.9), ZBSO_EORDER); /* no train begin */
    assert_non_null(strstr(zbso_client_errmsg(c), "on_train_begin"));
    assert_int_equal(zbso_client_on_train_begin(c), 0);
    assert_int_equal(zbso_client_on_train_begin(c), ZBSO_EORDER);
    assert_int_equal(zbso_client_on_evaluate(c, NAN), ZBSO_EINVAL);
    assert_string_equal(zbso_client_errmsg(c), "metric nan is not a finite number");
    assert_int_equal(zbso_client_on_evaluate(c, 0.1), 0);
    /* A call that succeeds leaves the last failure's message. */
    assert_string_equal(zbso_client_errmsg(c), "metric nan is not a finite number");
    assert_int_equal(zbso_client_training_finished(c), 0);
    clk_sleep_s(0.020);
    assert_int_equal(zbso_client_on_evaluate(c, 0.2), 0);
    assert_int_equal(zbso_client_training_finished(c), 0);
    assert_int_equal(zbso_client_on_evaluate(c, 0.9), 0);
    assert_int_equal(zbso_client_training_finished(c), 1);
    assert_int_equal(zbso_client_on_evaluate(c, 0.1), 0); /* finished: a no-op */

    /* The server recorded the converged run: the next run explores below 64. */
    char id[320];
    snprintf(id, sizeof id, "%s", zbso_client_job_id(c));
    zbso_client_free(c);
    snprintf(s, sizeof s,
             "{\"job_id\":\"%s\",\"job_id_prefix\":\"flow\",\"batch_sizes\":[32,64,128],"
             "\"default_batch_size\":64,\"max_epochs\":5}",
             id);
    assert_int_equal(zbso_client_new(mon, shared_url, s, 0, &c, err, sizeof err), 0);
    assert_int_equal(zbso_client_get_batch_size(c, &bs), 0);
    assert_int_equal(bs, 32);
    assert_int_equal(zbso_client_trial_number(c), 2);
    const double metrics[] = {0.9};
    assert_int_equal(train(c, metrics, 1), 0);
    zbso_client_free(c);
    zbso_monitor_free(mon);
}

static void test_order_and_rank(void **state)
{
    int64_t bs = 0;
    zbso_client *c = client_for(shared_url, "order-1", "order", 5, 0);
    assert_int_equal(zbso_client_on_evaluate(c, 0.9), ZBSO_EORDER);
    assert_string_equal(zbso_client_errmsg(c), "Call get_batch_size to set the batch size first");
    zbso_client_free(c);

    c = client_for(shared_url, "rank-1", "rank", 5, 1);
    assert_int_equal(zbso_client_get_batch_size(c, &bs), ZBSO_EBADOP);
    assert_non_null(strstr(zbso_client_errmsg(c), "Only rank 0"));
    assert_int_equal(zbso_client_on_evaluate(c, 0.9), ZBSO_EORDER);
    zbso_client_free(c);
}

/* max_epochs 2 and a metric under the target: the server stops the run unconverged. */
static void test_train_fail(void **state)
{
    int64_t bs = 0;
    zbso_client *c = client_for(shared_url, "tfail-1", "tfail", 2, 0);
    const double metrics[] = {0.1, 0.2, 0.3};
    assert_int_equal(zbso_client_get_batch_size(c, &bs), 0);
    assert_int_equal(train(c, metrics, 3), ZBSO_ETRAINFAIL);
    assert_int_equal(zbso_client_training_finished(c), 1);
    const char *m = zbso_client_errmsg(c);
    assert_true(strncmp(m, "Train failed: ", 14) == 0);
    assert_true(strlen(m) > 14 + 60); /* carries the server's reason */
    assert_non_null(strstr(m, " This batch size will not be selected again. Please "
                              "re-launch the training"));
    assert_int_equal(zbso_client_on_evaluate(c, 0.9), 0);
    zbso_client_free(c);
}

/* Re-registering an id with another config: the server's 409 and its message. */
static void test_server_error_message(void **state)
{
    char s[512], err[ZBSO_ERRBUF_MAX];
    zbso_client *c = client_for(shared_url, "conf-1", "conf", 5, 0);
    zbso_client_free(c);
    c = client_for(shared_url, "conf-1", "conf", 5, 0); /* identical: fine */
    zbso_client_free(c);
    spec(s, sizeof s, "conf-1", "conf", 7);
    assert_int_equal(zbso_client_new(NULL, shared_url, s, 0, &c, err, sizeof err),
                     ZBSO_ERUNTIME);
    assert_null(c);
    assert_true(strncmp(err, "the server returned status code 409: ", 37) == 0);
    assert_true(strlen(err) > 45);
    assert_null(strchr(err, '{')); /* the message, not the JSON body */

    /* Bad specs are the caller's configuration. */
    assert_int_equal(zbso_client_new(NULL, shared_url, "{\"job_id_prefix\":\"x\"}", 0, &c,
                                     err, sizeof err),
                     ZBSO_ECONFIG);
    assert_non_null(strstr(err, "batch_sizes"));
    assert_int_equal(zbso_client_new(NULL, shared_url, "[1", 0, &c, err, sizeof err),
                     ZBSO_ECONFIG);
    assert_int_equal(zbso_client_new(NULL, shared_url,
                                     "{\"job_id_prefix\":\"x\",\"batch_sizes\":[8],"
                                     "\"default_batch_size\":8,\"max_power\":1}",
                                     0, &c, err, sizeof err),
                     ZBSO_ECONFIG);
    assert_non_null(strstr(err, "max_power"));
    assert_int_equal(zbso_client_new(NULL, NULL, s, 0, &c, err, sizeof err), ZBSO_ECONFIG);
    assert_non_null(strstr(err, "ZEUS_BSO_SERVER_URL"));
    assert_int_equal(zbso_client_new(NULL, "ftp://x", s, 0, &c, err, sizeof err),
                     ZBSO_ECONFIG);
}

/* zbso_client_new on the shared server with the spec {base, extra} must fail with
 * ZBSO_ECONFIG and a message that starts with want. */
static void refused(const char *extra, const char *want)
{
    char s[512], err[ZBSO_ERRBUF_MAX];
    zbso_client *c = NULL;
    snprintf(s, sizeof s,
             "{\"job_id_prefix\":\"chk\",\"batch_sizes\":[8],\"default_batch_size\":8%s}",
             extra);
    assert_int_equal(zbso_client_new(NULL, shared_url, s, 0, &c, err, sizeof err),
                     ZBSO_ECONFIG);
    assert_null(c);
    if (strncmp(err, want, strlen(want)) != 0)
        fail_msg("spec %s: got \"%s\", want \"%s\"", s, err, want);
}

/* The client's own checks of a spec, before anything is sent: GPU facts are the client's
 * to measure (set at all, even to a wrong type, is refused), a given job_id "" must start
 * with the prefix as in Zeus, and $ZEUS_BSO_JOB_ID must equal a given job_id and fit. */
static void test_spec_checks(void **state)
{
    char err[ZBSO_ERRBUF_MAX], long_id[400];
    zbso_client *c = NULL;
    refused(",\"number_of_gpus\":\"two\"",
            "job spec sets number_of_gpus, which the client measures from the GPUs");
    refused(",\"gpu_model\":null,\"max_epochs\":\"x\"",
            "job spec sets gpu_model, which the client measures from the GPUs");
    refused(",\"job_id\":\"\"", "invalid job spec: job_id: Job_id() does not start with "
                                "prefix(chk).");
    refused(",\"eta_knob\":2", "invalid job spec: eta_knob: eta_knob should be in range "
                               "[0,1], got 2.0");

    setenv("ZEUS_BSO_JOB_ID", "chk-env", 1);
    refused(",\"eta_knob\":2", "invalid job spec: eta_knob: ");
    refused(",\"job_id\":\"\"", "job spec job_id '' differs from ZEUS_BSO_JOB_ID 'chk-env'");
    setenv("ZEUS_BSO_JOB_ID", "other-1", 1);
    refused("", "invalid job spec: job_id: Job_id(other-1) does not start with prefix(chk).");
    memset(long_id, 'k', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    memcpy(long_id, "chk", 3);
    setenv("ZEUS_BSO_JOB_ID", long_id, 1);
    refused("", "ZEUS_BSO_JOB_ID is 399 bytes long, over the maximum of 300");
    /* null is no job_id: the environment's fills it. */
    setenv("ZEUS_BSO_JOB_ID", "chk-env", 1);
    assert_int_equal(zbso_client_new(NULL, shared_url,
                                     "{\"job_id\":null,\"job_id_prefix\":\"chk\","
                                     "\"batch_sizes\":[8],\"default_batch_size\":8}",
                                     0, &c, err, sizeof err),
                     0);
    assert_string_equal(zbso_client_job_id(c), "chk-env");
    zbso_client_free(c);
    unsetenv("ZEUS_BSO_JOB_ID");
}

/* Issue 21: the spec's policy, warm_start and prior_jobs reach the server and come back in
 * the registered job; checked before sending like the other fields; a spec without them
 * is sent exactly as before (no such keys), and the server's default decides. */
static void test_policy_fields(void **state)
{
    char err[ZBSO_ERRBUF_MAX];
    zbso_client *c = NULL;
    refused(",\"policy\":\"fast\"",
            "invalid job spec: policy: policy must be \"zeus\" or \"smart\", got \"fast\"");
    refused(",\"policy\":\"zeus\",\"warm_start\":true",
            "invalid job spec: policy: a warm start (warm_start or prior_jobs) needs policy");
    refused(",\"prior_jobs\":[1]", "invalid job spec: prior_jobs: prior_jobs[0] must be a "
                                   "job id");
    assert_int_equal(zbso_client_new(NULL, shared_url,
                                     "{\"job_id\":\"cpol-1\",\"job_id_prefix\":\"cpol\","
                                     "\"batch_sizes\":[8,16],\"default_batch_size\":8,"
                                     "\"policy\":\"smart\",\"prior_jobs\":[\"cpol-0\"]}",
                                     0, &c, err, sizeof err),
                     0);
    static const char *const want =
        "\"policy\":\"smart\",\"warm_start\":true,\"prior_jobs\":[\"cpol-0\"]}";
    const char *sent = zbso_client_spec_json(c), *job = zbso_client_job_json(c);
    assert_string_equal(sent + strlen(sent) - strlen(want), want);
    assert_string_equal(job + strlen(job) - strlen(want), want);
    zbso_client_free(c);
    assert_int_equal(zbso_client_new(NULL, shared_url,
                                     "{\"job_id\":\"cpol-2\",\"job_id_prefix\":\"cpol\","
                                     "\"batch_sizes\":[8,16],\"default_batch_size\":8}",
                                     0, &c, err, sizeof err),
                     0);
    assert_null(strstr(zbso_client_spec_json(c), "policy"));
    assert_null(strstr(zbso_client_spec_json(c), "warm_start"));
    assert_null(strstr(zbso_client_job_json(c), "policy")); /* a zeus job, Zeus's answer */
    zbso_client_free(c);
}

/* A server answer with a batch size the job does not have. */
static void test_strange_batch_size(void **state)
{
    const fake_reply replies[] = {
        {200, NULL, FAKE_JOB, 0, 0},
        {200, NULL, "{\"job_id\":\"fake-1\",\"batch_size\":48,\"trial_number\":1}", 0, 0},
    };
    static fake_server fs; /* outlives a failed assertion that skips fake_stop */
    char url[64];
    int64_t bs = 0;
    fake_start(&fs, replies, 2);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", fs.port);
    zbso_client *c = client_for(url, "fake-1", "fake", 5, 0);
    assert_int_equal(zbso_client_get_batch_size(c, &bs), ZBSO_ERUNTIME);
    assert_string_equal(zbso_client_errmsg(c), "the server returned a strange batch_size: 48");
    assert_int_equal(zbso_client_trial_number(c), 0);
    zbso_client_free(c);
    fake_stop(&fs);
}

/* 503 with Retry-After is retried after the wait; a 4xx is final at once. */
static void test_retry_after_and_4xx(void **state)
{
    const fake_reply busy[] = {
        {503, "Retry-After: 1\r\n", "{\"message\":\"database unavailable\"}", 0, 0},
        {200, NULL, FAKE_JOB, 0, 0},
    };
    const fake_reply bad[] = {{400, NULL, "{\"message\":\"no such thing as 7\"}", 0, 0}};
    static fake_server fs; /* outlives a failed assertion that skips fake_stop */
    char url[64], s[512], err[ZBSO_ERRBUF_MAX];
    zbso_client *c = NULL;
    spec(s, sizeof s, "fake-1", "fake", 5);

    fake_start(&fs, busy, 2);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", fs.port);
    double t0 = clk_mono_s();
    assert_int_equal(zbso_client_new(NULL, url, s, 0, &c, err, sizeof err), 0);
    double took = clk_mono_s() - t0;
    assert_int_equal(atomic_load(&fs.n_requests), 2);
    assert_true(took >= 0.95 && took < 3.0);
    zbso_client_free(c);
    fake_stop(&fs);

    fake_start(&fs, bad, 1);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", fs.port);
    assert_int_equal(zbso_client_new(NULL, url, s, 0, &c, err, sizeof err), ZBSO_ERUNTIME);
    assert_string_equal(err, "the server returned status code 400: no such thing as 7");
    assert_int_equal(atomic_load(&fs.n_requests), 1);
    fake_stop(&fs);
}

/* A registration without a job_id is not repeated after an answer that says the server
 * saw it (the server would register a second job under a new id); with a job_id it is. */
static void test_generated_id_registration_not_repeated(void **state)
{
    const fake_reply busy[] = {
        {503, NULL, "{\"message\":\"database unavailable\"}", 0, 0},
        {200, NULL, FAKE_JOB, 0, 0},
    };
    static fake_server fs; /* outlives a failed assertion that skips fake_stop */
    char url[64], err[ZBSO_ERRBUF_MAX];
    zbso_client *c = NULL;
    fake_start(&fs, busy, 2);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", fs.port);
    assert_int_equal(zbso_client_new(NULL, url,
                                     "{\"job_id_prefix\":\"fake\",\"batch_sizes\":[32,64],"
                                     "\"default_batch_size\":32}",
                                     0, &c, err, sizeof err),
                     ZBSO_ERUNTIME);
    assert_string_equal(err, "the server returned status code 503: database unavailable");
    assert_int_equal(atomic_load(&fs.n_requests), 1);
    fake_stop(&fs);
}

/* GPU facts that make a configuration error, and a missing NVML. */
static void test_gpu_config(void **state)
{
    char s[512], err[ZBSO_ERRBUF_MAX];
    zbso_client *c = NULL;
    spec(s, sizeof s, "gpus-1", "gpus", 5);

    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_MODELS", "NVIDIA H200,NVIDIA A100-SXM4-40GB", 1);
    assert_int_equal(zbso_client_new(NULL, shared_url, s, 0, &c, err, sizeof err),
                     ZBSO_ECONFIG);
    assert_null(c);
    assert_non_null(strstr(err, "A100"));
    unsetenv("FAKE_NVML_MODELS");

    setenv("FAKE_NVML_GPUS", "0", 1);
    assert_int_equal(zbso_client_new(NULL, shared_url, s, 0, &c, err, sizeof err),
                     ZBSO_ECONFIG);
    assert_true(strlen(err) > 0);
    setenv("FAKE_NVML_GPUS", "1", 1);

    setenv("ZBSO_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    assert_int_equal(zbso_client_new(NULL, shared_url, s, 0, &c, err, sizeof err),
                     ZBSO_ECONFIG);
    assert_non_null(strstr(err, "/nonexistent/libnvidia-ml.so.1"));
    setenv("ZBSO_NVML_LIBRARY", real_nvml, 1);

    /* One GPU, 700 W: the job carries 700 W and 1 GPU; a second one ran 2 GPUs. */
    setenv("FAKE_NVML_MAX_LIMIT_MW", "700000", 1);
    assert_int_equal(zbso_client_new(NULL, shared_url, s, 0, &c, err, sizeof err), 0);
    assert_non_null(strstr(zbso_client_job_json(c), "\"number_of_gpus\":1"));
    zbso_client_free(c);
    setenv("FAKE_NVML_GPUS", "2", 1);
    assert_int_equal(zbso_client_new(NULL, shared_url, s, 0, &c, err, sizeof err),
                     ZBSO_ERUNTIME);
    assert_non_null(strstr(err, "409"));
    setenv("FAKE_NVML_GPUS", "1", 1);
}

/* The launching driver already dispatched the trial: the client uses it. */
static void test_trial_from_env(void **state)
{
    char s[512], err[ZBSO_ERRBUF_MAX], num[32];
    int64_t bs = 0;
    zbso_client *driver = client_for(shared_url, "envj-1", "envj", 5, 0), *c = NULL;
    /* Its trial ends below; at exit one attempt to end it again is enough. */
    assert_int_equal(zbso_client_set_retry_timeout(driver, 0), 0);
    assert_int_equal(zbso_client_get_batch_size(driver, &bs), 0);
    snprintf(num, sizeof num, "%lld", (long long)zbso_client_trial_number(driver));
    setenv("ZEUS_BSO_JOB_ID", "envj-1", 1);
    setenv("ZEUS_BSO_TRIAL_NUMBER", num, 1);
    setenv("ZEUS_BATCH_SIZE", "64", 1);

    spec(s, sizeof s, "envj-2", "envj", 5); /* contradicts ZEUS_BSO_JOB_ID */
    assert_int_equal(zbso_client_new(NULL, shared_url, s, 0, &c, err, sizeof err),
                     ZBSO_ECONFIG);
    assert_non_null(strstr(err, "ZEUS_BSO_JOB_ID"));
    snprintf(s, sizeof s,
             "{\"job_id_prefix\":\"envj\",\"batch_sizes\":[32,64,128],"
             "\"default_batch_size\":64,\"max_epochs\":5,\"target_metric\":0.5,"
             "\"mab_seed\":1,\"beta_knob\":null}");
    assert_int_equal(zbso_client_new(NULL, shared_url, s, 0, &c, err, sizeof err), 0);
    assert_string_equal(zbso_client_job_id(c), "envj-1");
    bs = 0;
    assert_int_equal(zbso_client_get_batch_size(c, &bs), 0);
    assert_int_equal(bs, 64);
    assert_int_equal(zbso_client_trial_number(c), zbso_client_trial_number(driver));
    const double metrics[] = {0.9};
    assert_int_equal(train(c, metrics, 1), 0); /* the server knows that trial */
    zbso_client_free(c);

    setenv("ZEUS_BATCH_SIZE", "48", 1);
    assert_int_equal(zbso_client_new(NULL, shared_url, s, 0, &c, err, sizeof err), 0);
    assert_int_equal(zbso_client_get_batch_size(c, &bs), ZBSO_ECONFIG);
    assert_non_null(strstr(zbso_client_errmsg(c), "ZEUS_BATCH_SIZE=48"));
    zbso_client_free(c);
    unsetenv("ZEUS_BSO_JOB_ID");
    unsetenv("ZEUS_BSO_TRIAL_NUMBER");
    unsetenv("ZEUS_BATCH_SIZE");
    zbso_client_free(driver);
}

/* SIGKILL the server mid-run and restart it on the same database a second later: the
 * client's next report waits for it and carries on. */
static void test_server_restart(void **state)
{
    pid_t pid, helper;
    char url[64];
    int64_t bs = 0;
    int port = serve_start(tmpdir, "restart.db", 0, &pid);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    zbso_client *c = client_for(url, "restart-1", "restart", 5, 0);
    assert_int_equal(zbso_client_get_batch_size(c, &bs), 0);
    assert_int_equal(zbso_client_on_train_begin(c), 0);
    assert_int_equal(zbso_client_on_evaluate(c, 0.1), 0);
    serve_stop(pid, SIGKILL);
    helper = fork();
    assert_true(helper >= 0);
    if (helper == 0) {
        char log[128];
        snprintf(log, sizeof log, "%s/restart.db.again.log", tmpdir);
        clk_sleep_s(1.0);
        serve_exec(tmpdir, "restart.db", port, log);
    }
    double t0 = clk_mono_s();
    int rc = zbso_client_on_evaluate(c, 0.9);
    double took = clk_mono_s() - t0;
    if (rc != 0)
        fail_msg("on_evaluate across the restart: %d %s", rc, zbso_client_errmsg(c));
    assert_int_equal(zbso_client_training_finished(c), 1);
    assert_true(took >= 0.9);
    zbso_client_free(c);
    serve_stop(helper, SIGTERM);
}

/* The server gone for good: ZBSO_ERUNTIME once the retry timeout is spent. */
static void test_server_gone(void **state)
{
    pid_t pid;
    char url[64], s[512], err[ZBSO_ERRBUF_MAX];
    int64_t bs = 0;
    int port = serve_start(tmpdir, "gone.db", 0, &pid);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    zbso_client *c = client_for(url, "gone-1", "gone", 5, 0);
    assert_int_equal(zbso_client_set_retry_timeout(c, -1), ZBSO_EINVAL);
    assert_int_equal(zbso_client_set_retry_timeout(c, 2), 0);
    assert_int_equal(zbso_client_get_batch_size(c, &bs), 0);
    assert_int_equal(zbso_client_on_train_begin(c), 0);
    serve_stop(pid, SIGKILL);
    double t0 = clk_mono_s();
    assert_int_equal(zbso_client_on_evaluate(c, 0.1), ZBSO_ERUNTIME);
    double took = clk_mono_s() - t0;
    assert_true(took >= 1.8 && took < 3.5);
    assert_non_null(strstr(zbso_client_errmsg(c), "gave up after 2."));
    assert_non_null(strstr(zbso_client_errmsg(c), "retry timeout 2 s"));
    /* The failed report left the window open: the client can report again later. */
    assert_int_equal(zbso_client_on_evaluate(c, 0.1), ZBSO_ERUNTIME);
    assert_int_equal(zbso_client_set_retry_timeout(c, 0), 0); /* exit: one attempt */
    zbso_client_free(c);

    /* $ZBSO_CLIENT_RETRY_TIMEOUT bounds the registration too. */
    setenv("ZBSO_CLIENT_RETRY_TIMEOUT", "1", 1);
    spec(s, sizeof s, "gone-2", "gone", 5);
    t0 = clk_mono_s();
    assert_int_equal(zbso_client_new(NULL, url, s, 0, &c, err, sizeof err), ZBSO_ERUNTIME);
    took = clk_mono_s() - t0;
    assert_true(took >= 0.8 && took < 2.5);
    assert_non_null(strstr(err, "Connection refused") ? err : strstr(err, "connect"));
    setenv("ZBSO_CLIENT_RETRY_TIMEOUT", "x", 1);
    assert_int_equal(zbso_client_new(NULL, url, s, 0, &c, err, sizeof err), ZBSO_ECONFIG);
    assert_non_null(strstr(err, "ZBSO_CLIENT_RETRY_TIMEOUT='x'"));
    unsetenv("ZBSO_CLIENT_RETRY_TIMEOUT");
}

/* A process that got a batch size and exits ends its trial: the trial is Failed, so the
 * same batch size is explored again, and once that run converges the next one explores a
 * smaller batch size (a still-Dispatched first exploration would block that). */
static void test_trial_ended_at_exit(void **state)
{
    int64_t bs = 0;
    int status = 0;
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        zbso_client *c = client_for(shared_url, "exit-1", "exit", 5, 0);
        int rc = zbso_client_get_batch_size(c, &bs);
        zbso_client_free(c); /* does not end the trial: exit does */
        exit(rc == 0 && bs == 64 ? 0 : 3);
    }
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    zbso_client *c = client_for(shared_url, "exit-1", "exit", 5, 0);
    assert_int_equal(zbso_client_get_batch_size(c, &bs), 0);
    assert_int_equal(bs, 64);
    assert_int_equal(zbso_client_trial_number(c), 2);
    const double metrics[] = {0.9};
    assert_int_equal(train(c, metrics, 1), 0);
    zbso_client_free(c);
    c = client_for(shared_url, "exit-1", "exit", 5, 0);
    assert_int_equal(zbso_client_get_batch_size(c, &bs), 0);
    assert_int_equal(bs, 32);
    assert_int_equal(train(c, metrics, 1), 0);
    zbso_client_free(c);
}

/* The trials of job_id in the shared server's database: "number:status" joined by ' '
 * (status 0 Dispatched, 1 Succeeded, 2 Failed), into out. */
static void trials_of(const char *job_id, char *out, size_t cap)
{
    char path[128];
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    size_t n = 0;
    snprintf(path, sizeof path, "%s/shared.db", tmpdir);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT trial_number, status FROM trials WHERE "
                                        "job_id = ? ORDER BY trial_number",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, job_id, -1, SQLITE_STATIC);
    out[0] = '\0';
    while (sqlite3_step(st) == SQLITE_ROW)
        n += (size_t)snprintf(out + n, cap - n, "%s%lld:%d", n ? " " : "",
                              (long long)sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* The answer to GET /jobs/batch_size is lost after the server dispatched the trial (a
 * proxy forwards the request, reads the answer and closes the client's connection). The
 * client retries with the same Idempotency-Key and gets that trial: the job holds one
 * trial for the call, and training finishes it. With the key stripped by the proxy (a
 * client without keys, as before) the retry dispatches a second trial and the first is
 * left Dispatched. */
static void test_lost_answer_dispatches_once(void **state)
{
    static fake_proxy px; /* outlives a failed assertion that skips fake_proxy_stop */
    const double metrics[] = {0.9};
    char url[64], got[256];
    fake_proxy_start(&px, shared_port);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", px.port);
    for (int strip = 0; strip < 2; strip++) {
        const char *job_id = strip ? "lost-2" : "lost-1";
        int64_t bs = 0;
        zbso_client *c = client_for(url, job_id, "lost", 5, 0);
        atomic_store(&px.strip_key, strip != 0);
        atomic_store(&px.drop_batch_size, 1);
        int before = atomic_load(&px.n_batch_size);
        int rc = zbso_client_get_batch_size(c, &bs);
        if (rc != 0)
            fail_msg("get_batch_size through the proxy: %d %s", rc, zbso_client_errmsg(c));
        assert_int_equal(atomic_load(&px.n_batch_size) - before, 2); /* lost, then retried */
        assert_int_equal(atomic_load(&px.drop_batch_size), 0);
        assert_int_equal(bs, 64);
        assert_int_equal(zbso_client_trial_number(c), strip ? 2 : 1);
        assert_int_equal(train(c, metrics, 1), 0);
        assert_int_equal(zbso_client_training_finished(c), 1);
        zbso_client_free(c);
        trials_of(job_id, got, sizeof got);
        assert_string_equal(got, strip ? "1:0 2:1" : "1:1");
    }
    fake_proxy_stop(&px);
}

/* The window ops of test_ops_and_ranks: a scripted monitor that counts its calls, gives
 * 2 s and 10 J per window, and fails when told to. */
typedef struct fake_ops {
    int begins, ends;
    int begin_rc, end_rc;       /* what the next call returns (0: success) */
    double energy_j;
} fake_ops;

static int fake_begin(void *arg, const char *name, char *errbuf, size_t len)
{
    fake_ops *f = arg;
    f->begins++;
    if (f->begin_rc)
        snprintf(errbuf, len, "Measurement window '%s' already exists", name);
    return f->begin_rc;
}

static int fake_end(void *arg, const char *name, double *time_s, double *energy_j,
                    char *errbuf, size_t len)
{
    fake_ops *f = arg;
    f->ends++;
    if (f->end_rc)
        return f->end_rc; /* no message: the code's name stands in */
    (void)name;
    (void)errbuf;
    (void)len;
    *time_s = 2.0;
    *energy_j = f->energy_j;
    return 0;
}

static zbso_client *ops_client(fake_ops *f, const char *job_id, int epochs, int rank)
{
    char s[512], err[ZBSO_ERRBUF_MAX];
    zbso_client *c = NULL;
    zbso_window_ops ops = {.arg = f, .begin = fake_begin, .end = fake_end};
    spec(s, sizeof s, job_id, "ops", epochs);
    int rc = zbso_client_new_ops(&ops, 300500, 4, "Tesla V100", shared_url, s, rank, &c, err,
                                 sizeof err);
    if (rc != 0)
        fail_msg("zbso_client_new_ops: %d %s", rc, err);
    return c;
}

/* A client measured by the caller's ops (the Python binding's way), Zeus's data-parallel
 * pattern (rank 1 told the batch size and trial, reporting the same trial), the order
 * checks left to the ops, and their failures passed on. */
static void test_ops_and_ranks(void **state)
{
    fake_ops f0 = {.energy_j = 10.0}, f1 = {.energy_j = 10.0};
    char err[ZBSO_ERRBUF_MAX];
    zbso_client *c = NULL;
    int64_t bs = 0;
    zbso_client *r0 = ops_client(&f0, "ops-1", 3, 0);
    zbso_client *r1 = ops_client(&f1, "ops-1", 3, 1);

    json_t *sp = json_loads(zbso_client_spec_json(r0), 0, NULL);
    assert_non_null(sp);
    assert_true(json_number_value(json_object_get(sp, "max_power")) == 1200.0);
    assert_int_equal(json_integer_value(json_object_get(sp, "number_of_gpus")), 4);
    assert_string_equal(json_string_value(json_object_get(sp, "gpu_model")), "Tesla V100");
    assert_string_equal(json_string_value(json_object_get(sp, "job_id")), "ops-1");
    json_decref(sp);

    assert_int_equal(zbso_client_get_batch_size(r0, &bs), 0);
    assert_int_equal(zbso_client_get_batch_size(r1, &bs), ZBSO_EBADOP);
    assert_int_equal(zbso_client_batch_size(r1), 0);
    assert_int_equal(zbso_client_set_batch_size(r1, 48), ZBSO_EINVAL);
    assert_non_null(strstr(zbso_client_errmsg(r1), "batch size 48"));
    assert_int_equal(zbso_client_set_trial_number(r1, -2), ZBSO_EINVAL);
    assert_non_null(strstr(zbso_client_errmsg(r1), "-2"));
    assert_int_equal(zbso_client_set_batch_size(r1, zbso_client_batch_size(r0)), 0);
    assert_int_equal(zbso_client_set_trial_number(r1, zbso_client_trial_number(r0)), 0);
    assert_int_equal(zbso_client_batch_size(r1), 64);
    assert_int_equal(zbso_client_trial_number(r1), 1);

    /* Rank 0 as Zeus's loop; rank 1 evaluates without on_train_begin: its ops allow it. */
    assert_int_equal(zbso_client_on_train_begin(r0), 0);
    assert_int_equal(f0.begins, 1);
    assert_int_equal(zbso_client_on_evaluate(r0, 0.1), 0);
    assert_int_equal(zbso_client_on_evaluate(r1, 0.1), 0);
    assert_int_equal(f1.ends, 1);
    assert_int_equal(f1.begins, 1); /* reopened */
    assert_int_equal(zbso_client_cur_epoch(r0), 1);
    assert_true(zbso_client_running_time_s(r0) == 2.0);
    assert_true(zbso_client_consumed_energy_j(r0) == 10.0);
    assert_int_equal(zbso_client_on_evaluate(r0, 0.2), 0);
    assert_int_equal(zbso_client_on_evaluate(r0, 0.3), ZBSO_ETRAINFAIL); /* max_epochs */
    assert_int_equal(zbso_client_cur_epoch(r0), 3);
    assert_true(zbso_client_consumed_energy_j(r0) == 30.0);
    /* Rank 1's next report: the trial is over, reported already, not converged. */
    assert_int_equal(zbso_client_on_evaluate(r1, 0.2), ZBSO_ETRAINFAIL);
    assert_non_null(strstr(zbso_client_errmsg(r1), "is already reported."));
    assert_int_equal(zbso_client_training_finished(r1), 1);

    /* The ops' failures are the calls' (a positive code reads as ZBSO_ERUNTIME). */
    f0.begin_rc = ZBSO_EBADOP;
    assert_int_equal(zbso_client_on_train_begin(r0), ZBSO_EBADOP);
    assert_non_null(strstr(zbso_client_errmsg(r0), "already exists"));
    f1.end_rc = 7;
    assert_int_equal(zbso_client_set_batch_size(r1, 0), 0);
    assert_int_equal(zbso_client_on_evaluate(r1, 0.2), ZBSO_EORDER);
    zbso_client_free(r0);
    zbso_client_free(r1);

    r1 = ops_client(&f1, "ops-2", 3, 0);
    assert_int_equal(zbso_client_get_batch_size(r1, &bs), 0);
    assert_int_equal(zbso_client_on_evaluate(r1, 0.2), ZBSO_ERUNTIME);
    assert_string_equal(zbso_client_errmsg(r1), zbso_strerror(ZBSO_ERUNTIME));
    assert_int_equal(zbso_client_cur_epoch(r1), 0);
    f1.end_rc = 0;
    f1.energy_j = NAN;
    assert_int_equal(zbso_client_on_evaluate(r1, 0.2), ZBSO_ERUNTIME);
    assert_non_null(strstr(zbso_client_errmsg(r1), "not a measurement"));
    f1.energy_j = 1.0;
    assert_int_equal(zbso_client_on_evaluate(r1, 0.9), 0);
    assert_int_equal(zbso_client_training_finished(r1), 1);
    zbso_client_free(r1);

    zbso_window_ops bad = {.arg = NULL, .begin = fake_begin, .end = NULL};
    assert_int_equal(zbso_client_new_ops(&bad, 1, 1, "x", shared_url, "{}", 0, &c, err,
                                         sizeof err),
                     ZBSO_EINVAL);
    assert_null(c);
}

static void test_strerror(void **state)
{
    assert_string_equal(zbso_strerror(ZBSO_ETRAINFAIL), zbso_strerror(ZBSO_ETRAINFAIL));
    assert_true(strcmp(zbso_strerror(ZBSO_ECONFIG), zbso_strerror(ZBSO_ERUNTIME)) != 0);
    assert_true(strcmp(zbso_strerror(ZBSO_EORDER), zbso_strerror(ZBSO_EBADOP)) != 0);
}

static int setup(void **state)
{
    const char *nvml = getenv("ZBSO_NVML_LIBRARY");
    if (!getenv("ZBSO_BIN") || !nvml) {
        fprintf(stderr, "ZBSO_BIN and ZBSO_NVML_LIBRARY must be set\n");
        return -1;
    }
    snprintf(real_nvml, sizeof real_nvml, "%s", nvml);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zbso-client-XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    serve_clean_env();
    setenv("FAKE_NVML_GPUS", "1", 1);
    shared_port = serve_start(tmpdir, "shared.db", 0, &shared_pid);
    snprintf(shared_url, sizeof shared_url, "http://127.0.0.1:%d", shared_port);
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    serve_stop(shared_pid, SIGTERM);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_flow),
        cmocka_unit_test(test_order_and_rank),
        cmocka_unit_test(test_ops_and_ranks),
        cmocka_unit_test(test_train_fail),
        cmocka_unit_test(test_server_error_message),
        cmocka_unit_test(test_spec_checks),
        cmocka_unit_test(test_policy_fields),
        cmocka_unit_test(test_strange_batch_size),
        cmocka_unit_test(test_retry_after_and_4xx),
        cmocka_unit_test(test_generated_id_registration_not_repeated),
        cmocka_unit_test(test_gpu_config),
        cmocka_unit_test(test_trial_from_env),
        cmocka_unit_test(test_trial_ended_at_exit),
        cmocka_unit_test(test_server_restart),
        cmocka_unit_test(test_server_gone),
        cmocka_unit_test(test_lost_answer_dispatches_once),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
