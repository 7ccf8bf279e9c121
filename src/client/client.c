/* client.c: the batch size optimizer client of SPEC §6, step for step seed 000's
 * BatchSizeOptimizer (register, get_batch_size, on_train_begin, on_evaluate) over the
 * transport and the energy monitor. Runs inside user processes: never aborts. */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/clientInt.h"
#include "codec/codec.h"
#include "core/types.h"
#include "monitor/monitor.h"
#include "transport/protocol.h"
#include "transport/transport.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/mem.h"
#include "zbso/zbso.h"

#define EXIT_RETRY_TIMEOUT_S 5.0       /* at exit, ending a trial may delay exit this long */
#define SPEC_JSON_MAX (1 << 20)

/* A trial to end with PATCH /trials when the process exits (Zeus's atexit report_end).
 * Entries belong to the list, not to a client, so freeing a client never leaves the exit
 * handler with a dangling pointer; a client only removes its entry when the trial ended. */
typedef struct pending_end {
    struct pending_end *next;
    pid_t pid;                            /* the process that dispatched the trial */
    char url[TRANSPORT_URL_MAX + 1];
    char token[TRANSPORT_TOKEN_MAX + 1];
    double retry_timeout_s;               /* the client's, cut to EXIT_RETRY_TIMEOUT_S */
    zbso_trial_id trial;
} pending_end;

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static pending_end *pending_head;
static bool exit_handler_installed;

struct zbso_client {
    zbso_monitor *mon;                    /* NULL when the caller's ops measure */
    bool owns_monitor;
    zbso_window_ops ops;                  /* the caller's (external), or mon's */
    bool external;
    unsigned max_limit_mw;                /* the GPU facts of the job spec */
    unsigned n_gpus;
    char gpu_model[ZBSO_GPU_MODEL_MAX + 1];
    transport *tp;
    int rank;
    zbso_job_spec job;                    /* CreatedJob as the server answered it */
    char *job_json;                       /* the same, as JSON */
    char *spec_json;                      /* JobSpecFromClient as sent, JSON */
    char warning[TRANSPORT_WARNING_MAX + 1];  /* the server's about the registration */
    int64_t batch_size;                   /* 0 until get_batch_size succeeded */
    int64_t trial_number;
    int64_t cur_epoch;
    double running_time_s;
    double consumed_energy_j;
    bool training_finished;
    bool window_open;
    char window[48];                      /* this client's monitor window name */
    pending_end *pending;                 /* this trial's entry in the exit list */
    zbso_err err;                         /* the last failed call's (zbso_client_errmsg) */
};

/* Turns err, a failed request's, into the client's public code and returns it: every
 * failure to get an answer from the server is ZBSO_ERUNTIME (include/zbso/zbso.h), whatever
 * the status; running out of memory stays ZBSO_ENOMEM. The message is kept. */
static int request_failed(zbso_err *err)
{
    if (err->code != ZBSO_ENOMEM)
        err->code = ZBSO_ERUNTIME;
    return err->code;
}

/* Keeps err, a failed call's, as c's last error (zbso_client_errmsg) and returns its
 * code. Callees write into an error of their own, so a call that succeeds leaves the last
 * failure's message in place. */
static int fail(zbso_client *c, const zbso_err *err)
{
    c->err = *err;
    return err->code;
}

/* Ends every trial this process dispatched and did not finish (PATCH /trials), spending at
 * most EXIT_RETRY_TIMEOUT_S on retries for all of them together, then frees the list.
 * Entries inherited through fork() from a parent are the parent's business and only
 * freed. */
static void end_pending_trials(void)
{
    pending_end *e, *next;
    double deadline = clk_mono_s() + EXIT_RETRY_TIMEOUT_S;
    pthread_mutex_lock(&pending_lock);
    e = pending_head;
    pending_head = NULL;
    pthread_mutex_unlock(&pending_lock);
    for (; e; e = next) {
        next = e->next;
        if (e->pid == getpid()) {
            transport *tp = NULL;
            zbso_err err;
            double budget = fmax(0.0, fmin(e->retry_timeout_s, deadline - clk_mono_s()));
            if (transport_new(e->url, e->token, budget, &tp, &err) == 0)
                transport_set_request_timeout(tp, EXIT_RETRY_TIMEOUT_S);
            if (!tp || protocol_end_trial(tp, &e->trial, &err) < 0)
                log_warn("zbso client: could not end trial %lld of job %s at exit: %s",
                         (long long)e->trial.trial_number, e->trial.job_id, err.msg);
            transport_free(tp);
        }
        mem_free(e);
    }
}

/* Adds c's trial to the exit list (installing the exit handler once). Returns 0 or
 * ZBSO_ENOMEM. */
static int pending_add(zbso_client *c, const zbso_trial_id *tid)
{
    const char *token = getenv("ZEUS_BSO_API_TOKEN");
    pending_end *e = mem_calloc(1, sizeof *e);
    int rc = ZBSO_ENOMEM;
    if (!e)
        return rc;
    e->trial = *tid;
    e->pid = getpid();
    e->retry_timeout_s = fmin(EXIT_RETRY_TIMEOUT_S, transport_retry_timeout(c->tp));
    snprintf(e->url, sizeof e->url, "%s", transport_base_url(c->tp));
    snprintf(e->token, sizeof e->token, "%s", token ? token : "");
    pthread_mutex_lock(&pending_lock);
    if (!exit_handler_installed && atexit(end_pending_trials) == 0)
        exit_handler_installed = true;
    if (exit_handler_installed) {
        e->next = pending_head;
        pending_head = e;
        c->pending = e;
        e = NULL;
        rc = 0;
    }
    pthread_mutex_unlock(&pending_lock);
    mem_free(e);
    return rc;
}

/* Removes c's entry from the exit list: its trial ended on the server. */
static void pending_remove(zbso_client *c)
{
    pending_end **p;
    if (!c->pending)
        return;
    pthread_mutex_lock(&pending_lock);
    for (p = &pending_head; *p; p = &(*p)->next)
        if (*p == c->pending) {
            *p = c->pending->next;
            mem_free(c->pending);
            break;
        }
    pthread_mutex_unlock(&pending_lock);
    c->pending = NULL;
}

/* Reads a positive integer from the environment variable name. Returns 0, or
 * ZBSO_ECONFIG naming the value when it is unset, empty or not a positive integer. */
static int env_positive(const char *name, int64_t *out, zbso_err *err)
{
    const char *v = getenv(name);
    char *end;
    long long n;
    if (!v || !v[0])
        return err_set(err, ZBSO_ECONFIG, "%s is not set", name);
    n = strtoll(v, &end, 10);
    if (*end || n <= 0)
        return err_set(err, ZBSO_ECONFIG, "%s='%s' is not a positive integer", name, v);
    *out = n;
    return 0;
}

/* Builds JobSpecFromClient from the caller's JobSpec JSON and the GPU facts of the monitor
 * (seed 000: max_power = floor(max limit mW / 1000) * GPU count), checked as the server
 * checks it. The GPU fields are the library's to fill: a spec that sets them is refused.
 * $ZEUS_BSO_JOB_ID fills a missing job_id and must equal a given one. Returns 0, or
 * ZBSO_ECONFIG naming the value (or ZBSO_ENOMEM) in err. */
static int build_spec(const zbso_client *c, const char *job_spec_json, zbso_job_spec *out,
                      zbso_err *err)
{
    const char *env_job = getenv("ZEUS_BSO_JOB_ID");
    const char *model = c->gpu_model;
    unsigned n_gpus = c->n_gpus;
    codec_spec_given given;
    zbso_err perr;
    int rc;
    if (!job_spec_json)
        return err_set(err, ZBSO_ECONFIG, "job spec JSON is NULL");
    rc = codec_job_spec_parse_partial(job_spec_json, strnlen(job_spec_json, SPEC_JSON_MAX + 1),
                                      out, &given, &perr);
    if (rc == ZBSO_ENOMEM)
        return err_set(err, rc, "out of memory reading the job spec");
    if (given.gpu_fact)
        return err_set(err, ZBSO_ECONFIG,
                       "job spec sets %s, which the client measures from the GPUs",
                       given.gpu_fact);
    if (rc < 0)
        goto invalid;
    if (n_gpus == 0)
        return err_set(err, ZBSO_ECONFIG, "No GPUs detected.");
    if (env_job && env_job[0]) {
        if (given.job_id && strcmp(out->job_id, env_job) != 0)
            return err_set(err, ZBSO_ECONFIG,
                           "job spec job_id '%.200s' differs from ZEUS_BSO_JOB_ID '%.200s'",
                           out->job_id, env_job);
        if (strlen(env_job) >= sizeof out->job_id)
            return err_set(err, ZBSO_ECONFIG,
                           "ZEUS_BSO_JOB_ID is %zu bytes long, over the maximum of %zu: "
                           "'%.40s...'",
                           strlen(env_job), sizeof out->job_id - 1, env_job);
        snprintf(out->job_id, sizeof out->job_id, "%s", env_job);
    }
    out->max_power = mon_job_max_power_w(c->max_limit_mw, n_gpus);
    out->number_of_gpus = n_gpus;
    snprintf(out->gpu_model, sizeof out->gpu_model, "%s", model ? model : "");
    if ((rc = codec_job_spec_check(out, given.job_id, &perr)) == 0)
        return 0;
invalid:
    return err_set(err, ZBSO_ECONFIG, "invalid job spec: %s%s%.400s", perr.loc,
                   perr.loc[0] ? ": " : "", perr.msg);
}

/* POST /jobs with spec and keeps the CreatedJob. Returns 0, ZBSO_ERUNTIME (server or
 * network failure, or an answer that is not a job), ZBSO_ENOMEM. */
static int register_job(zbso_client *c, const zbso_job_spec *spec, zbso_err *err)
{
    if (!(c->spec_json = codec_job_spec_dump(spec, NULL)))
        return err_set(err, ZBSO_ENOMEM, "out of memory keeping the job spec");
    if (protocol_register_job(c->tp, spec, &c->job, err) < 0)
        return request_failed(err);
    snprintf(c->warning, sizeof c->warning, "%s", transport_warning(c->tp));
    if (!(c->job_json = codec_job_spec_dump(&c->job, NULL)))
        return err_set(err, ZBSO_ENOMEM, "out of memory keeping the registered job");
    log_info("zbso client: job is registered with job_id %s", c->job.job_id);
    return 0;
}

/* The window ops over the client's own zbso_monitor. */
static int mon_begin(void *arg, const char *name, char *errbuf, size_t errbuf_len)
{
    zbso_monitor *mon = arg;
    int rc = zbso_monitor_begin_window(mon, name);
    if (rc < 0)
        snprintf(errbuf, errbuf_len, "%s", zbso_monitor_errmsg(mon));
    return rc;
}

static int mon_end(void *arg, const char *name, double *time_s, double *energy_j,
                   char *errbuf, size_t errbuf_len)
{
    zbso_monitor *mon = arg;
    zbso_measurement m;
    int rc = zbso_monitor_end_window(mon, name, &m);
    if (rc < 0) {
        snprintf(errbuf, errbuf_len, "%s", zbso_monitor_errmsg(mon));
        return rc;
    }
    *time_s = m.time_s;
    *energy_j = m.total_energy_j;
    return 0;
}

/* The part of creating a client common to both constructors, once c's measuring (mon or
 * ops) and GPU facts are set: checks the URL, builds the spec, connects and registers.
 * Returns 0 or the failing step's code with its message in err. */
static int client_start(zbso_client *c, const char *server_url, const char *job_spec_json,
                        zbso_err *err)
{
    zbso_job_spec spec;
    double retry_s;
    const char *url = server_url ? server_url : getenv("ZEUS_BSO_SERVER_URL");
    int rc;
    snprintf(c->window, sizeof c->window, "zbso.client.%p", (void *)c);
    if (!url || !url[0])
        return err_set(err, ZBSO_ECONFIG, "no server URL: pass one or set ZEUS_BSO_SERVER_URL");
    if ((rc = transport_retry_timeout_env(&retry_s, err)) < 0 ||
        (rc = build_spec(c, job_spec_json, &spec, err)) < 0 ||
        (rc = transport_new(url, getenv("ZEUS_BSO_API_TOKEN"), retry_s, &c->tp, err)) < 0)
        return rc;
    return register_job(c, &spec, err);
}

/* The end of both constructors: unless rc (the set-up's code) already failed, registers
 * the job (client_start) and hands c over in *out; otherwise frees c. Writes the message
 * (or "") into errbuf when given. Returns the code. */
static int client_finish(zbso_client *c, int rc, const char *server_url,
                         const char *job_spec_json, zbso_err *err, zbso_client **out,
                         char *errbuf, size_t errbuf_len)
{
    if (rc == 0 && (rc = client_start(c, server_url, job_spec_json, err)) == 0) {
        *out = c;
        c = NULL;
    }
    if (errbuf && errbuf_len)
        snprintf(errbuf, errbuf_len, "%s", rc < 0 ? err->msg : "");
    zbso_client_free(c);
    return rc;
}

int zbso_client_new(zbso_monitor *mon, const char *server_url, const char *job_spec_json,
                    int rank, zbso_client **out, char *errbuf, size_t errbuf_len)
{
    zbso_client *c = mem_calloc(1, sizeof *c);
    zbso_err err;
    int rc;
    err_clear(&err);
    if (out)
        *out = NULL;
    if (!out) {
        rc = err_set(&err, ZBSO_EINVAL, "zbso_client_new: out is NULL");
        goto out;
    }
    if (!c) {
        rc = err_set(&err, ZBSO_ENOMEM, "out of memory allocating a client");
        goto out;
    }
    c->rank = rank;
    if (!mon) {
        if ((rc = zbso_monitor_new(NULL, 0, &c->mon, err.msg, sizeof err.msg)) < 0)
            goto out;
        c->owns_monitor = true;
    } else {
        c->mon = mon;
    }
    c->ops = (zbso_window_ops){.arg = c->mon, .begin = mon_begin, .end = mon_end};
    c->max_limit_mw = zbso_monitor_max_power_limit_mw(c->mon);
    c->n_gpus = zbso_monitor_gpu_count(c->mon);
    snprintf(c->gpu_model, sizeof c->gpu_model, "%s", zbso_monitor_gpu_model(c->mon));
    rc = 0;
out:
    return client_finish(c, rc, server_url, job_spec_json, &err, out, errbuf, errbuf_len);
}

int zbso_client_new_ops(const zbso_window_ops *ops, unsigned max_power_limit_mw,
                        unsigned n_gpus, const char *gpu_model, const char *server_url,
                        const char *job_spec_json, int rank, zbso_client **out,
                        char *errbuf, size_t errbuf_len)
{
    zbso_client *c = NULL;
    zbso_err err;
    int rc;
    err_clear(&err);
    if (out)
        *out = NULL;
    if (!out || !ops || !ops->begin || !ops->end) {
        rc = err_set(&err, ZBSO_EINVAL, "zbso_client_new_ops: %s is NULL",
                     !out ? "out" : !ops ? "ops" : "a window function");
        goto out;
    }
    if (!gpu_model || strlen(gpu_model) > ZBSO_GPU_MODEL_MAX) {
        rc = err_set(&err, ZBSO_ECONFIG, "gpu_model is %s (at most %d bytes)",
                     gpu_model ? "too long" : "NULL", ZBSO_GPU_MODEL_MAX);
        goto out;
    }
    if (!(c = mem_calloc(1, sizeof *c))) {
        rc = err_set(&err, ZBSO_ENOMEM, "out of memory allocating a client");
        goto out;
    }
    c->rank = rank;
    c->ops = *ops;
    c->external = true;
    c->max_limit_mw = max_power_limit_mw;
    c->n_gpus = n_gpus;
    snprintf(c->gpu_model, sizeof c->gpu_model, "%s", gpu_model);
    rc = 0;
out:
    return client_finish(c, rc, server_url, job_spec_json, &err, out, errbuf, errbuf_len);
}

void zbso_client_free(zbso_client *c)
{
    zbso_measurement m;
    if (!c)
        return;
    /* The caller's ops are not called back here: the caller may be tearing down. */
    if (c->window_open && !c->external)
        zbso_monitor_end_window(c->mon, c->window, &m);
    if (c->owns_monitor)
        zbso_monitor_free(c->mon);
    transport_free(c->tp);
    free(c->job_json);
    free(c->spec_json);
    mem_free(c);
}

const char *zbso_client_errmsg(const zbso_client *c) { return c ? c->err.msg : ""; }

int zbso_client_set_retry_timeout(zbso_client *c, double seconds)
{
    if (!c)
        return ZBSO_EINVAL;
    if (!isfinite(seconds) || seconds < 0)
        return err_set(&c->err, ZBSO_EINVAL,
                       "retry timeout %g s is not a number of seconds >= 0", seconds);
    transport_set_retry_timeout(c->tp, seconds);
    pthread_mutex_lock(&pending_lock);
    if (c->pending)
        c->pending->retry_timeout_s = fmin(EXIT_RETRY_TIMEOUT_S, seconds);
    pthread_mutex_unlock(&pending_lock);
    return 0;
}

const char *zbso_client_job_id(const zbso_client *c) { return c ? c->job.job_id : ""; }

const char *zbso_client_job_json(const zbso_client *c) { return c ? c->job_json : ""; }

const char *zbso_client_warning(const zbso_client *c) { return c ? c->warning : ""; }

/* True when bs is one of the registered job's batch sizes. */
static bool job_has_batch_size(const zbso_client *c, int64_t bs)
{
    for (size_t i = 0; i < c->job.n_batch_sizes; i++)
        if (c->job.batch_sizes[i] == bs)
            return true;
    return false;
}

/* The trial the launching driver (`zbso run`) dispatched for this process, from
 * $ZEUS_BSO_JOB_ID (must name this job), $ZEUS_BSO_TRIAL_NUMBER and $ZEUS_BATCH_SIZE.
 * Returns 0, or ZBSO_ECONFIG naming the value. */
static int trial_from_env(const zbso_client *c, zbso_trial_id *tid, zbso_err *err)
{
    const char *env_job = getenv("ZEUS_BSO_JOB_ID");
    int rc;
    if (!env_job || strcmp(env_job, c->job.job_id) != 0)
        return err_set(err, ZBSO_ECONFIG,
                       "ZEUS_BSO_TRIAL_NUMBER is set but ZEUS_BSO_JOB_ID '%.200s' does not "
                       "name this job (%s)",
                       env_job ? env_job : "(unset)", c->job.job_id);
    snprintf(tid->job_id, sizeof tid->job_id, "%s", c->job.job_id);
    if ((rc = env_positive("ZEUS_BSO_TRIAL_NUMBER", &tid->trial_number, err)) < 0 ||
        (rc = env_positive("ZEUS_BATCH_SIZE", &tid->batch_size, err)) < 0)
        return rc;
    if (!job_has_batch_size(c, tid->batch_size))
        return err_set(err, ZBSO_ECONFIG,
                       "ZEUS_BATCH_SIZE=%lld is not one of job %s's batch sizes",
                       (long long)tid->batch_size, c->job.job_id);
    return 0;
}

/* GET /jobs/batch_size for the job (its retries cannot dispatch a second trial:
 * protocol.h). Returns 0 with *tid, ZBSO_ERUNTIME (server or network failure, a malformed
 * answer, a batch size the job does not have), ZBSO_ENOMEM. */
static int trial_from_server(const zbso_client *c, zbso_trial_id *tid, zbso_err *err)
{
    if (protocol_next_batch_size(c->tp, c->job.job_id, tid, err) < 0)
        return request_failed(err);
    if (!job_has_batch_size(c, tid->batch_size))
        return err_set(err, ZBSO_ERUNTIME, "the server returned a strange batch_size: %lld",
                       (long long)tid->batch_size);
    return 0;
}

int zbso_client_get_batch_size(zbso_client *c, int64_t *out)
{
    const char *env_trial = getenv("ZEUS_BSO_TRIAL_NUMBER");
    zbso_trial_id tid;
    zbso_err err;
    int rc;
    if (!c || !out)
        return ZBSO_EINVAL;
    if (c->rank != 0)
        return err_set(&c->err, ZBSO_EBADOP,
                       "Only rank 0 gpu can ask for a batch size (this client has rank %d).",
                       c->rank);
    if (c->batch_size != 0) {
        *out = c->batch_size;
        return 0;
    }
    c->cur_epoch = 0;
    if (env_trial && env_trial[0])
        rc = trial_from_env(c, &tid, &err);
    else
        rc = trial_from_server(c, &tid, &err);
    if (rc < 0)
        return fail(c, &err);
    if (pending_add(c, &tid) < 0)
        return err_set(&c->err, ZBSO_ENOMEM,
                       "out of memory arranging for trial %lld to end at exit",
                       (long long)tid.trial_number);
    c->batch_size = tid.batch_size;
    c->trial_number = tid.trial_number;
    log_info("zbso client: chosen batch size %lld (trial %lld)", (long long)c->batch_size,
             (long long)c->trial_number);
    *out = c->batch_size;
    return 0;
}

int64_t zbso_client_trial_number(const zbso_client *c) { return c ? c->trial_number : 0; }

int64_t zbso_client_batch_size(const zbso_client *c) { return c ? c->batch_size : 0; }

int64_t zbso_client_cur_epoch(const zbso_client *c) { return c ? c->cur_epoch : 0; }

double zbso_client_running_time_s(const zbso_client *c) { return c ? c->running_time_s : 0; }

double zbso_client_consumed_energy_j(const zbso_client *c)
{
    return c ? c->consumed_energy_j : 0;
}

const char *zbso_client_spec_json(const zbso_client *c) { return c ? c->spec_json : ""; }

int zbso_client_set_batch_size(zbso_client *c, int64_t batch_size)
{
    if (!c)
        return ZBSO_EINVAL;
    if (batch_size != 0 && !job_has_batch_size(c, batch_size))
        return err_set(&c->err, ZBSO_EINVAL,
                       "batch size %lld is not one of job %s's batch sizes",
                       (long long)batch_size, c->job.job_id);
    c->batch_size = batch_size;
    return 0;
}

int zbso_client_set_trial_number(zbso_client *c, int64_t trial_number)
{
    if (!c)
        return ZBSO_EINVAL;
    if (trial_number < 0)
        return err_set(&c->err, ZBSO_EINVAL, "trial number %lld is negative",
                       (long long)trial_number);
    c->trial_number = trial_number;
    return 0;
}

/* Opens c's measurement window through its ops. Returns 0 or the ops' code, with their
 * message (or the code's name) in err. */
static int window_begin(zbso_client *c, zbso_err *err)
{
    char msg[ZBSO_ERRBUF_MAX] = "";
    int rc = c->ops.begin(c->ops.arg, c->window, msg, sizeof msg);
    if (rc == 0) {
        c->window_open = true;
        return 0;
    }
    if (rc > 0)
        rc = ZBSO_ERUNTIME;
    return err_set(err, rc, "%s", msg[0] ? msg : zbso_strerror(rc));
}

int zbso_client_on_train_begin(zbso_client *c)
{
    zbso_err err;
    if (!c)
        return ZBSO_EINVAL;
    c->training_finished = false;
    /* With the caller's ops their monitor decides (Zeus's raises for a window open
     * twice); this client's own monitor would say the same less plainly. */
    if (c->window_open && !c->external)
        return err_set(&c->err, ZBSO_EORDER,
                       "training already began: call zbso_client_on_evaluate");
    if (window_begin(c, &err) < 0)
        return fail(c, &err);
    return 0;
}

/* POST /report with the cumulative totals. Returns 0 with *rr, ZBSO_ERUNTIME,
 * ZBSO_ENOMEM. */
static int report(const zbso_client *c, double metric, zbso_report_response *rr,
                  zbso_err *err)
{
    zbso_training_result r = {.time = c->running_time_s, .energy = c->consumed_energy_j,
                              .metric = metric, .current_epoch = c->cur_epoch};
    snprintf(r.trial.job_id, sizeof r.trial.job_id, "%s", c->job.job_id);
    r.trial.batch_size = c->batch_size;
    r.trial.trial_number = c->trial_number;
    if (protocol_report(c->tp, &r, rr, err) < 0)
        return request_failed(err);
    return 0;
}

int zbso_client_on_evaluate(zbso_client *c, double metric)
{
    zbso_report_response rr;
    zbso_err err;
    char msg[ZBSO_ERRBUF_MAX] = "";
    double time_s = 0, energy_j = 0;
    int rc;
    if (!c)
        return ZBSO_EINVAL;
    if (c->batch_size == 0)
        return err_set(&c->err, ZBSO_EORDER, "Call get_batch_size to set the batch size first");
    if (c->training_finished)
        return 0;
    if (!isfinite(metric))
        return err_set(&c->err, ZBSO_EINVAL, "metric %g is not a finite number", metric);
    if (!c->window_open && !c->external)
        return err_set(&c->err, ZBSO_EORDER, "Call on_train_begin before on_evaluate");
    c->window_open = false;
    if ((rc = c->ops.end(c->ops.arg, c->window, &time_s, &energy_j, msg, sizeof msg)) != 0) {
        rc = rc < 0 ? rc : ZBSO_ERUNTIME;
        return err_set(&c->err, rc, "%s", msg[0] ? msg : zbso_strerror(rc));
    }
    if (!isfinite(time_s) || !isfinite(energy_j) || time_s < 0 || energy_j < 0)
        return err_set(&c->err, ZBSO_ERUNTIME,
                       "the monitor measured time %g s and energy %g J: not a measurement",
                       time_s, energy_j);
    c->cur_epoch++;
    c->running_time_s += time_s;
    c->consumed_energy_j += energy_j;
    if ((rc = report(c, metric, &rr, &err)) < 0)
        fail(c, &err);
    if (rc < 0 || !rr.stop_train) {
        /* Keep measuring: after a failed report the epoch stays counted and the next
         * report carries it in its cumulative totals. */
        int brc = window_begin(c, &err);
        if (brc < 0 && rc == 0)
            return fail(c, &err);
        return rc;
    }
    c->training_finished = true;
    pending_remove(c);
    if (!rr.converged)
        return err_set(&c->err, ZBSO_ETRAINFAIL,
                       "Train failed: %s This batch size will not be selected again. Please "
                       "re-launch the training",
                       rr.message);
    return 0;
}

int zbso_client_training_finished(const zbso_client *c) { return c && c->training_finished; }

/* ---- for the power-limit optimizer (clientInt.h) ---- */

transport *client_transport(zbso_client *c)
{
    return c ? c->tp : NULL;
}

int64_t client_batch_size(const zbso_client *c)
{
    return c ? c->batch_size : 0;
}
