/* power.c: zbso_power_optimizer_*, Zeus's GlobalPowerLimitOptimizer (SPEC §6.1): the pure
 * state machine of core/powerlimit.h driven by the training loop's calls, its actions
 * carried out on the monitor (windows) and the actuator of src/power (limits), and the
 * job's profile per batch size read from and stored on the server. Runs inside user
 * processes: never aborts. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "client/clientInt.h"
#include "core/powerlimit.h"
#include "power/power.h"
#include "transport/protocol.h"
#include "util/log.h"
#include "util/mem.h"
#include "zbso/zbso.h"

#define WINDOW_PREFIX "__GlobalPowerLimitOptimizer_"
#define PROFILE_FILE_MAX (4 << 20)

struct zbso_power_optimizer {
    pw_gpus *gpus;
    zbso_power_window_ops ops;           /* the caller's, or over mon */
    zbso_monitor *mon;                   /* measuring when the caller gave no ops */
    bool owns_mon;
    opt_plo sm;
    opt_plo_config cfg;
    opt_pl_selector sel;
    int mode;
    bool fixed;                          /* ZBSO_PL_MAX: no state machine, Done at max */
    bool closed;                         /* zbso_power_optimizer_close: sets nothing more */
    int64_t limit_mw;                    /* the limit set last (observer: would be) */
    char window[64];                     /* the open profiling window, "" when none */
    const char *source;
    /* The job's profile on a server: the client's, or the environment's. */
    zbso_client *client;
    transport *tp;                       /* the environment's (owned); NULL with a client */
    char job_id[ZBSO_ID_MAX + 1];
    int64_t batch_size;                  /* 0: not known (yet) */
    int64_t trial_number;
    bool looked_up;                      /* the server was asked (or cannot be) */
    char *profile_path;                  /* NULL: none */
    bool path_existed;
    int64_t steps, profiling_steps, done_steps;
    zbso_err err;
};

/* ---- helpers ---- */

static int fail(zbso_power_optimizer *p, const zbso_err *err)
{
    p->err = *err;
    return err->code;
}

/* A callback's code: negative as it is, positive as ZBSO_ERUNTIME. */
static int cb_code(int rc)
{
    return rc > 0 ? ZBSO_ERUNTIME : rc;
}

/* The monitor as window ops. */
static int mon_begin(void *arg, const char *name, char *errbuf, size_t len)
{
    zbso_monitor *m = arg;
    int rc = zbso_monitor_begin_window(m, name);
    if (rc < 0)
        snprintf(errbuf, len, "%s", zbso_monitor_errmsg(m));
    return rc;
}

static int mon_end(void *arg, const char *name, int cancel, double *time_s, double *energy_j,
                   char *errbuf, size_t len)
{
    zbso_monitor *m = arg;
    zbso_measurement meas;
    int rc = zbso_monitor_end_window(m, name, &meas);
    if (cancel)
        return 0;
    if (rc < 0) {
        snprintf(errbuf, len, "%s", zbso_monitor_errmsg(m));
        return rc;
    }
    *time_s = meas.time_s;
    *energy_j = meas.total_energy_j;
    return 0;
}

/* Reads a yes/no variable: 1 for true, 0 for false, -1 unset; ZBSO_ECONFIG otherwise. */
static int env_bool(const char *name, zbso_err *err)
{
    const char *v = getenv(name);
    if (!v || !v[0])
        return -1;
    if (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes"))
        return 1;
    if (!strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no"))
        return 0;
    return err_set(err, ZBSO_ECONFIG, "%s='%.40s' is not true or false", name, v);
}

/* Applies $ZBSO_POWER_LIMIT, $ZEUS_USE_OPTIMAL_PL and $ZEUS_PROFILE_PARAMS to o. */
static int apply_env(zbso_power_options *o, zbso_err *err)
{
    const char *mode = getenv("ZBSO_POWER_LIMIT");
    const char *params = getenv("ZEUS_PROFILE_PARAMS");
    int b;
    if (mode && mode[0]) {
        if (!strcmp(mode, "jit"))
            o->mode = ZBSO_PL_JIT;
        else if (!strcmp(mode, "max"))
            o->mode = ZBSO_PL_MAX;
        else if (!strcmp(mode, "observe"))
            o->mode = ZBSO_PL_OBSERVE;
        else
            return err_set(err, ZBSO_ECONFIG, "ZBSO_POWER_LIMIT='%.40s' is not jit, max or "
                           "observe", mode);
    }
    if ((b = env_bool("ZEUS_USE_OPTIMAL_PL", err)) < -1)
        return b;
    if (b == 0)
        o->mode = ZBSO_PL_OBSERVE;
    if (params && params[0]) {
        char *end;
        long long w = strtoll(params, &end, 10), m = 0;
        bool ok = end != params && *end == ',';
        if (ok) {
            const char *q = end + 1;
            m = strtoll(q, &end, 10);
            ok = end != q && *end == '\0' && w >= 0 && m > 0;
        }
        if (!ok)
            return err_set(err, ZBSO_ECONFIG, "ZEUS_PROFILE_PARAMS='%.40s' is not WARMUP,"
                           "MEASURE (steps: an integer >= 0, then one > 0)", params);
        o->warmup_steps = w;
        o->profile_steps = m;
    }
    return 0;
}

/* Finds the job and batch size whose profile the server keeps: the client's once it has
 * a batch size, else (use_env) the environment `zbso run` sets. Sets p->batch_size (0:
 * not known yet) and, for the environment, opens p->tp. Returns 0 or ZBSO_ECONFIG for a
 * bad environment value. */
static int resolve_job(zbso_power_optimizer *p, bool use_env, zbso_err *err)
{
    if (p->client) {
        p->batch_size = client_batch_size(p->client);
        p->trial_number = zbso_client_trial_number(p->client);
        snprintf(p->job_id, sizeof p->job_id, "%s", zbso_client_job_id(p->client));
        return 0;
    }
    const char *url = getenv("ZEUS_BSO_SERVER_URL"), *job = getenv("ZEUS_BSO_JOB_ID");
    const char *bs = getenv("ZEUS_BATCH_SIZE"), *tn = getenv("ZEUS_BSO_TRIAL_NUMBER");
    double retry;
    char *end;
    if (!use_env || !url || !url[0] || !job || !job[0] || !bs || !bs[0])
        return 0;
    long long b = strtoll(bs, &end, 10);
    if (*end || b <= 0)
        return err_set(err, ZBSO_ECONFIG, "ZEUS_BATCH_SIZE='%.40s' is not a positive integer",
                       bs);
    if (strlen(job) > ZBSO_ID_MAX)
        return err_set(err, ZBSO_ECONFIG, "ZEUS_BSO_JOB_ID is %zu bytes long, over %d",
                       strlen(job), ZBSO_ID_MAX);
    int rc = transport_retry_timeout_env(&retry, err);
    if (rc == 0)
        rc = transport_new(url, getenv("ZEUS_BSO_API_TOKEN"), retry, &p->tp, err);
    if (rc < 0)
        return rc;
    snprintf(p->job_id, sizeof p->job_id, "%s", job);
    p->batch_size = b;
    p->trial_number = tn && tn[0] ? strtoll(tn, NULL, 10) : 0;
    return 0;
}

static transport *server(zbso_power_optimizer *p)
{
    return p->client ? client_transport(p->client) : p->tp;
}

/* ---- carrying out actions ---- */

/* Sets every GPU to mw (observer mode: notes it only). */
static int set_limit(zbso_power_optimizer *p, int64_t mw, zbso_err *err)
{
    int rc = 0;
    if (p->closed)
        return 0;
    if (p->mode != ZBSO_PL_OBSERVE)
        rc = pw_set(p->gpus, mw, err);
    if (rc == 0)
        p->limit_mw = mw;
    return rc;
}

static int window_begin(zbso_power_optimizer *p, zbso_err *err)
{
    char msg[ZBSO_ERRBUF_MAX] = "";
    snprintf(p->window, sizeof p->window, WINDOW_PREFIX "%lld",
             (long long)(opt_plo_current_mw(&p->sm) / 1000));
    int rc = cb_code(p->ops.begin(p->ops.arg, p->window, msg, sizeof msg));
    if (rc < 0) {
        p->window[0] = '\0';
        return err_set(err, rc, "cannot begin the profiling window: %s", msg);
    }
    return 0;
}

/* Closes the open window; with time_s NULL cancels it. */
static int window_end(zbso_power_optimizer *p, double *time_s, double *energy_j,
                      zbso_err *err)
{
    char msg[ZBSO_ERRBUF_MAX] = "";
    double t = 0, e = 0;
    if (!p->window[0])
        return 0;
    int rc = cb_code(p->ops.end(p->ops.arg, p->window, time_s == NULL, &t, &e, msg,
                                sizeof msg));
    p->window[0] = '\0';
    if (rc < 0)
        return err_set(err, rc, "cannot end the profiling window: %s", msg);
    if (time_s) {
        *time_s = t;
        *energy_j = e;
    }
    return 0;
}

static int store_profile(zbso_power_optimizer *p);

/* Carries out act and what follows from it (a measured window's next action). */
static int apply(zbso_power_optimizer *p, const opt_plo_action *act, zbso_err *err)
{
    opt_plo_action next;
    int rc;
    if (act->cancel_window && (rc = window_end(p, NULL, NULL, err)) < 0)
        return rc;
    if (act->end_window) {
        double t = 0, e = 0;   /* set when rc is 0; gcc -O3 cannot tell */
        if ((rc = window_end(p, &t, &e, err)) < 0)
            return rc;
        double n = (double)p->sm.profile_steps;
        if ((rc = opt_plo_measured(&p->sm, &p->sel, t / n, e / n, &next, err)) < 0)
            return rc;
        return apply(p, &next, err);
    }
    if (act->set_limit_mw > 0 && (rc = set_limit(p, act->set_limit_mw, err)) < 0)
        return rc;
    if (act->begin_window && (rc = window_begin(p, err)) < 0)
        return rc;
    if (act->done) {
        log_info("zbso power: optimal power limit %lld W (%s)",
                 (long long)(p->sm.optimal_mw / 1000), p->source);
        if (!strcmp(p->source, "profiling"))
            store_profile(p);
    }
    return 0;
}

/* ---- profiles: the server's and Zeus's file ---- */

/* Makes p Done from profile m[0..n-1] when the GPUs can take its limits, and sets its
 * optimum. Returns 1 when it did, 0 when the profile does not suit (a warning says why),
 * or the error of setting the limit. */
static int adopt(zbso_power_optimizer *p, const opt_pl_measurement *m, size_t n,
                 const char *source, zbso_err *err)
{
    opt_plo_action act;
    zbso_err why;
    opt_plo *tmp = malloc(sizeof *tmp);
    if (!tmp)
        return err_set(err, ZBSO_ENOMEM, "out of memory reading a power profile");
    int rc = opt_plo_init_done(tmp, &p->cfg, &p->sel, m, n, &act, &why);
    if (rc < 0) {
        log_warn("zbso power: not using the %s profile: %s; profiling anew", source, why.msg);
        free(tmp);
        return 0;
    }
    p->sm = *tmp;
    free(tmp);
    p->source = source;
    p->profiling_steps = 0;
    rc = apply(p, &act, err);
    return rc < 0 ? rc : 1;
}

/* Asks the server for the profile of the trial's batch size once it is known, and uses
 * it when it suits. Returns 0, or the error of setting its optimum. */
static int lookup(zbso_power_optimizer *p, zbso_err *err)
{
    zbso_err e;
    int rc;
    if (p->looked_up || !server(p) || p->batch_size <= 0 || p->sm.state != OPT_PLO_READY)
        return 0;
    p->looked_up = true;
    zbso_power_profile *pp = malloc(sizeof *pp);
    if (!pp)
        return err_set(err, ZBSO_ENOMEM, "out of memory reading a power profile");
    rc = protocol_profile_get(server(p), p->job_id, p->batch_size, pp, &e);
    if (rc == ZBSO_ENOTFOUND) {
        log_info("zbso power: job %s has no power profile of batch size %lld: profiling",
                 p->job_id, (long long)p->batch_size);
        rc = 0;
    } else if (rc < 0) {
        log_warn("zbso power: could not read the power profile of job %s: %s; profiling",
                 p->job_id, e.msg);
        rc = 0;
    } else if (pp->observer && p->mode != ZBSO_PL_OBSERVE) {
        log_info("zbso power: the stored profile of batch size %lld was measured in observer "
                 "mode: profiling", (long long)p->batch_size);
    } else if ((rc = adopt(p, pp->m, pp->n, "server", err)) > 0) {
        log_info("zbso power: using job %s's power profile of batch size %lld (no "
                 "profiling)", p->job_id, (long long)p->batch_size);
        rc = 0;
    }
    free(pp);
    return rc;
}

/* Reads Zeus's profile file (totals over profile_steps steps) into per-step figures;
 * returns the count, 0 when unusable (a warning says why). */
static size_t read_profile_file(zbso_power_optimizer *p, opt_pl_measurement *m)
{
    json_error_t je;
    json_t *root = json_load_file(p->profile_path, 0, &je), *list, *e;
    size_t n = 0, i;
    double steps = (double)p->sm.profile_steps;
    list = json_object_get(root, "measurements");
    json_array_foreach(list, i, e) {
        json_t *pl = json_object_get(e, "power_limit");
        json_t *t = json_object_get(e, "time"), *en = json_object_get(e, "energy");
        if (n == OPT_PL_MAX || !json_is_integer(pl) || !json_is_number(t) ||
            !json_is_number(en)) {
            n = 0;
            break;
        }
        m[n++] = (opt_pl_measurement){json_integer_value(pl), json_number_value(t) / steps,
                                      json_number_value(en) / steps};
    }
    if (n == 0)
        log_warn("zbso power: %s is not a power profile (%s): profiling anew",
                 p->profile_path, root ? "no measurements" : je.text);
    json_decref(root);
    return n;
}

/* Writes Zeus's profile file: per-step figures times profile_steps. */
static void write_profile_file(zbso_power_optimizer *p)
{
    json_t *root = json_object(), *list = json_array();
    bool ok = root && list && json_object_set(root, "measurements", list) == 0;
    double steps = (double)p->sm.profile_steps;
    for (size_t i = 0; ok && i < p->sm.n_meas; i++) {
        json_t *e = json_pack("{sI sf sf}", "power_limit", (json_int_t)p->sm.meas[i].power_limit_w,
                              "energy", p->sm.meas[i].energy_j * steps, "time",
                              p->sm.meas[i].time_s * steps);
        ok = e && json_array_append_new(list, e) == 0;
    }
    if (!ok || json_dump_file(root, p->profile_path, JSON_INDENT(4) | JSON_REAL_PRECISION(17)))
        log_warn("zbso power: could not write the power profile to %s: %s", p->profile_path,
                 strerror(errno));
    json_decref(list);
    json_decref(root);
}

/* After profiling: the server's copy (when the job is known) and Zeus's file. Failures
 * are warnings: training goes on at the chosen limit. */
static int store_profile(zbso_power_optimizer *p)
{
    zbso_err err;
    if (p->profile_path && !p->path_existed)
        write_profile_file(p);
    if (!server(p) || p->batch_size <= 0)
        return 0;
    zbso_power_profile *pp = malloc(sizeof *pp), *out = malloc(sizeof *out);
    int rc = ZBSO_ENOMEM;
    if (pp && out) {
        memset(pp, 0, sizeof *pp);
        pp->batch_size = p->batch_size;
        pp->trial_number = p->trial_number > 0 ? p->trial_number : 0;
        pp->observer = p->mode == ZBSO_PL_OBSERVE;
        pp->profile_steps = p->sm.profile_steps;
        pp->n = p->sm.n_meas;
        memcpy(pp->m, p->sm.meas, pp->n * sizeof pp->m[0]);
        rc = protocol_profile_put(server(p), p->job_id, pp, out, &err);
    } else {
        err_set(&err, rc, "out of memory");
    }
    if (rc < 0)
        log_warn("zbso power: could not store the power profile of job %s, batch size %lld: "
                 "%s", p->job_id, (long long)p->batch_size, err.msg);
    free(pp);
    free(out);
    return rc;
}

/* ---- the API ---- */

void zbso_power_options_init(zbso_power_options *o)
{
    memset(o, 0, sizeof *o);
    o->selector = ZBSO_PL_ZEUS_COST;
    o->eta_knob = 0.5;
    o->max_slowdown_factor = 1.0;
    o->wait_steps = 1;
    o->warmup_steps = 10;
    o->profile_steps = 40;
    o->pl_step_w = 25;
    o->mode = ZBSO_PL_JIT;
    o->use_env = 1;
}

/* Everything of zbso_power_optimizer_new after allocation; p is freed by the caller on
 * failure. */
static int setup(zbso_power_optimizer *p, const zbso_power_options *given, zbso_err *err)
{
    zbso_power_options o = *given;
    opt_plo_action act;
    int rc;
    if (o.use_env && (rc = apply_env(&o, err)) < 0)
        return rc;
    if (o.mode < ZBSO_PL_JIT || o.mode > ZBSO_PL_OBSERVE)
        return err_set(err, ZBSO_EINVAL, "mode %d is not ZBSO_PL_JIT, ZBSO_PL_MAX or "
                       "ZBSO_PL_OBSERVE", o.mode);
    p->mode = o.mode;
    p->client = o.client;
    p->source = "profiling";
    if ((rc = pw_open(o.gpu_indices, o.n_gpus,
                      PW_GUARD_SIGNALS | (o.mode == ZBSO_PL_OBSERVE ? PW_OBSERVER : 0),
                      &p->gpus, err)) < 0 ||
        (rc = pw_constraints(p->gpus, &p->cfg.min_limit_mw, &p->cfg.max_limit_mw, err)) < 0)
        return rc;
    p->cfg.wait_steps = o.wait_steps;
    p->cfg.warmup_steps = o.warmup_steps;
    p->cfg.profile_steps = o.profile_steps;
    p->cfg.pl_step_w = o.pl_step_w;
    p->sel = (opt_pl_selector){(opt_pl_selector_kind)o.selector, o.eta_knob,
                               o.world_size ? o.world_size : (int64_t)pw_count(p->gpus),
                               o.max_slowdown_factor};
    if ((rc = opt_pl_selector_check(&p->sel, err)) < 0)
        return rc;
    if (o.ops) {
        if (!o.ops->begin || !o.ops->end)
            return err_set(err, ZBSO_EINVAL, "window ops without begin or end");
        p->ops = *o.ops;
    } else {
        if (!o.monitor) {
            char msg[ZBSO_ERRBUF_MAX];
            int idx[ZBSO_MAX_GPUS];
            for (unsigned i = 0; i < pw_count(p->gpus); i++)
                idx[i] = pw_cuda_index(p->gpus, i);
            if ((rc = zbso_monitor_new(idx, pw_count(p->gpus), &o.monitor, msg,
                                       sizeof msg)) < 0)
                return err_set(err, rc, "%s", msg);
            p->owns_mon = true;
        }
        p->mon = o.monitor;
        p->ops = (zbso_power_window_ops){o.monitor, mon_begin, mon_end};
    }
    if ((rc = opt_plo_init(&p->sm, &p->cfg, &act, err)) < 0)
        return rc;
    if (o.mode == ZBSO_PL_MAX) {
        p->fixed = true;
        p->source = "max";
        p->sm.state = OPT_PLO_DONE;
        p->sm.optimal_mw = p->cfg.max_limit_mw;
        return set_limit(p, p->cfg.max_limit_mw, err);
    }
    if (o.profile_path && o.profile_path[0]) {
        FILE *f = fopen(o.profile_path, "r");
        if ((p->profile_path = strdup(o.profile_path)) == NULL) {
            if (f)
                fclose(f);
            return err_set(err, ZBSO_ENOMEM, "out of memory");
        }
        p->path_existed = f != NULL;
        if (f)
            fclose(f);
    }
    if ((rc = resolve_job(p, o.use_env, err)) < 0 || (rc = lookup(p, err)) < 0)
        return rc;
    if (p->sm.state == OPT_PLO_DONE)
        return 0;
    if (p->path_existed) {
        opt_pl_measurement *m = malloc(OPT_PL_MAX * sizeof *m);
        size_t n = m ? read_profile_file(p, m) : 0;
        rc = n > 0 ? adopt(p, m, n, "file", err) : 0;
        free(m);
        if (rc != 0)
            return rc < 0 ? rc : 0;
        p->path_existed = false;
    }
    /* Zeus sets the highest limit before starting. */
    return apply(p, &act, err);
}

int zbso_power_optimizer_new(const zbso_power_options *o, zbso_power_optimizer **out,
                             char *errbuf, size_t errbuf_len)
{
    zbso_err err;
    int rc;
    if (out)
        *out = NULL;
    if (!o || !out) {
        if (errbuf && errbuf_len)
            snprintf(errbuf, errbuf_len, "zbso_power_optimizer_new: NULL argument");
        return ZBSO_EINVAL;
    }
    zbso_power_optimizer *p = calloc(1, sizeof *p);
    if (!p)
        rc = err_set(&err, ZBSO_ENOMEM, "out of memory creating the power-limit optimizer");
    else
        rc = setup(p, o, &err);
    if (rc < 0) {
        if (errbuf && errbuf_len)
            snprintf(errbuf, errbuf_len, "%s", err.msg);
        zbso_power_optimizer_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

int zbso_power_optimizer_set_client(zbso_power_optimizer *p, zbso_client *client)
{
    if (!p || !client)
        return ZBSO_EINVAL;
    transport_free(p->tp);
    p->tp = NULL;
    p->client = client;
    p->batch_size = 0;
    p->looked_up = false;
    return 0;
}

int zbso_power_optimizer_close(zbso_power_optimizer *p)
{
    zbso_err err;
    if (!p)
        return ZBSO_EINVAL;
    if (p->window[0])
        window_end(p, NULL, NULL, &err);
    p->closed = true;
    if (p->gpus && pw_restore(p->gpus, &err) < 0)
        return fail(p, &err);
    return 0;
}

void zbso_power_optimizer_free(zbso_power_optimizer *p)
{
    if (!p)
        return;
    if (p->window[0] && p->ops.end) {
        zbso_err err;
        window_end(p, NULL, NULL, &err);
    }
    pw_close(p->gpus);
    if (p->owns_mon)
        zbso_monitor_free(p->mon);
    transport_free(p->tp);
    free(p->profile_path);
    free(p);
}

const char *zbso_power_optimizer_errmsg(const zbso_power_optimizer *p)
{
    return p ? p->err.msg : "";
}

int zbso_power_optimizer_on_step_begin(zbso_power_optimizer *p)
{
    opt_plo_action act;
    zbso_err err;
    int rc;
    if (!p)
        return ZBSO_EINVAL;
    p->steps++;
    if (p->closed || p->fixed)
        return 0;
    if (p->sm.state == OPT_PLO_DONE) {
        p->done_steps++;
        return 0;
    }
    if (p->client && !p->looked_up && p->batch_size <= 0 &&
        (rc = resolve_job(p, false, &err)) < 0)
        return fail(p, &err);
    if ((rc = lookup(p, &err)) < 0)
        return fail(p, &err);
    if (p->sm.state == OPT_PLO_DONE) {
        p->done_steps++;
        return 0;
    }
    p->profiling_steps++;
    opt_plo_step_begin(&p->sm, &act);
    if ((rc = apply(p, &act, &err)) < 0)
        return fail(p, &err);
    return 0;
}

int zbso_power_optimizer_on_epoch_end(zbso_power_optimizer *p)
{
    opt_plo_action act;
    zbso_err err;
    int rc;
    if (!p)
        return ZBSO_EINVAL;
    if (p->closed || p->fixed)
        return 0;
    opt_plo_epoch_end(&p->sm, &act);
    if ((rc = apply(p, &act, &err)) < 0)
        return fail(p, &err);
    return 0;
}

int zbso_power_optimizer_state(const zbso_power_optimizer *p)
{
    return p ? (int)p->sm.state : 0;
}

int64_t zbso_power_optimizer_limit_mw(const zbso_power_optimizer *p)
{
    return p ? p->limit_mw : 0;
}

int64_t zbso_power_optimizer_optimal_mw(const zbso_power_optimizer *p)
{
    return p && p->sm.state == OPT_PLO_DONE ? p->sm.optimal_mw : 0;
}

const char *zbso_power_optimizer_source(const zbso_power_optimizer *p)
{
    return p ? p->source : "";
}

size_t zbso_power_optimizer_measurements(const zbso_power_optimizer *p, int64_t *power_limit_w,
                                         double *time_s, double *energy_j, size_t cap)
{
    if (!p)
        return 0;
    for (size_t i = 0; i < p->sm.n_meas && i < cap; i++) {
        power_limit_w[i] = p->sm.meas[i].power_limit_w;
        time_s[i] = p->sm.meas[i].time_s;
        energy_j[i] = p->sm.meas[i].energy_j;
    }
    return p->sm.n_meas;
}

int64_t zbso_power_optimizer_steps(const zbso_power_optimizer *p)
{
    return p ? p->steps : 0;
}

int64_t zbso_power_optimizer_profiling_steps(const zbso_power_optimizer *p)
{
    return p ? p->profiling_steps : 0;
}

void zbso_power_optimizer_accounted(const zbso_power_optimizer *p, int64_t *steps,
                                    double *time_s, double *energy_j)
{
    double t = 0, e = 0;
    int64_t n = p ? p->done_steps : 0;
    if (p && p->sm.state == OPT_PLO_DONE)
        for (size_t i = 0; i < p->sm.n_meas; i++)
            if (p->sm.meas[i].power_limit_w == p->sm.optimal_mw / 1000) {
                t = (double)n * p->sm.meas[i].time_s;
                e = (double)n * p->sm.meas[i].energy_j;
            }
    if (steps)
        *steps = n;
    if (time_s)
        *time_s = t;
    if (energy_j)
        *energy_j = e;
}

const char *zbso_power_optimizer_actuator(const zbso_power_optimizer *p)
{
    return p && p->gpus ? pw_actuator_name(p->gpus) : "";
}

unsigned long zbso_power_optimizer_set_count(const zbso_power_optimizer *p)
{
    return p && p->gpus ? pw_set_count(p->gpus) : 0;
}
