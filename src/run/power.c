/* power.c: `zbso run --power-limit` (SPEC §7.1): the GPUs' limits put back after every try,
 * the environment of a client-mode command, and zero-code mode's time-sliced profiling: the
 * state machine of core/powerlimit.h with one step per second, each limit's time and energy
 * divided by the progress the command printed, the profile stored on the job. */
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/powerlimit.h"
#include "power/power.h"
#include "run/run.h"
#include "run/runInt.h"
#include "util/clock.h"

#define SLICE_WINDOW "zbso-run-power-slice"

struct run_power {
    const run_options *o;
    pw_gpus *gpus;
    opt_plo_config cfg;
    opt_pl_selector sel;
    bool has_re;
    regex_t re;
    bool warned_no_progress;
    /* The try in progress. */
    run_bso *bso;
    run_meter *meter;
    zbso_trial_id tid;
    bool profiling;            /* time slices are being measured */
    opt_plo *sm;
    double next_tick_s;
    bool window_open;
    double progress;           /* the last counter value read */
    bool has_progress;
    double window_progress;    /* the counter when the window began */
    bool window_counted;       /* a counter value was read when the window began */
};

static const char *mode_name(int mode)
{
    return mode == RUN_PL_JIT ? "jit" : mode == RUN_PL_MAX ? "max" : "observe";
}

int run_power_open(const run_options *o, const zbso_job_spec *job, run_power **out,
                   zbso_err *err)
{
    run_power *p;
    int rc;
    *out = NULL;
    if (o->power_limit == RUN_PL_NONE)
        return 0;
    if (o->no_gpu)
        return err_set(err, ZBSO_EINVAL, "--power-limit %s needs the GPUs: drop --no-gpu",
                       mode_name(o->power_limit));
    if ((p = calloc(1, sizeof *p)) == NULL || (p->sm = malloc(sizeof *p->sm)) == NULL) {
        free(p);
        return err_set(err, ZBSO_ENOMEM, "out of memory starting --power-limit");
    }
    p->o = o;
    if (o->progress_regex != NULL) {
        int e = regcomp(&p->re, o->progress_regex, REG_EXTENDED);
        if (e != 0) {
            char why[128];
            regerror(e, &p->re, why, sizeof why);
            rc = err_set(err, ZBSO_EINVAL, "--progress-regex '%s' is not a valid extended "
                         "regular expression: %s", o->progress_regex, why);
            goto fail;
        }
        p->has_re = true;
    }
    if ((rc = pw_open(NULL, 0, o->power_limit == RUN_PL_OBSERVE ? PW_OBSERVER : 0, &p->gpus,
                      err)) < 0 ||
        (rc = pw_constraints(p->gpus, &p->cfg.min_limit_mw, &p->cfg.max_limit_mw, err)) < 0)
        goto fail;
    p->cfg.wait_steps = 0;
    p->cfg.warmup_steps = o->pl_warmup_s;
    p->cfg.profile_steps = o->pl_hold_s;
    p->cfg.pl_step_w = o->pl_step_w;
    p->sel = (opt_pl_selector){OPT_PL_ZEUS_COST, job->eta_knob, (int64_t)pw_count(p->gpus), 1};
    opt_plo_action unused;
    if ((rc = opt_plo_init(p->sm, &p->cfg, &unused, err)) < 0)
        goto fail;
    *out = p;
    return 0;
fail:
    run_power_close(p);
    return rc;
}

void run_power_close(run_power *p)
{
    if (p == NULL)
        return;
    pw_close(p->gpus);
    if (p->has_re)
        regfree(&p->re);
    free(p->sm);
    free(p);
}

void run_power_env(const run_power *p, char *mode, char *params, size_t cap)
{
    mode[0] = params[0] = '\0';
    if (p == NULL)
        return;
    snprintf(mode, cap, "ZBSO_POWER_LIMIT=%s", mode_name(p->o->power_limit));
    snprintf(params, cap, "ZEUS_PROFILE_PARAMS=%lld,%lld", (long long)p->o->profile_warmup,
             (long long)p->o->profile_measure);
}

/* Sets every GPU to mw (observer mode: nothing). */
static int set_limit(run_power *p, int64_t mw, zbso_err *err)
{
    return p->o->power_limit == RUN_PL_OBSERVE ? 0 : pw_set(p->gpus, mw, err);
}

/* Ends the profiling of this try; the limits go back to the highest (Zeus's Ready). */
static void stop_profiling(run_power *p, const char *why)
{
    zbso_err err;
    double t, e;
    if (p->window_open)
        run_meter_window_end(p->meter, SLICE_WINDOW, true, &t, &e, &err);
    p->window_open = false;
    p->profiling = false;
    fprintf(stderr, "zbso run: power-limit profiling of batch size %lld stopped: %s\n",
            (long long)p->tid.batch_size, why);
    if (set_limit(p, p->cfg.max_limit_mw, &err) < 0)
        fprintf(stderr, "zbso run: %s\n", err.msg);
}

/* Stores the finished profile on the job and says what was chosen. */
static void store_profile(run_power *p)
{
    zbso_err err;
    zbso_power_profile *pp = malloc(sizeof *pp);
    if (pp == NULL)
        return;
    memset(pp, 0, sizeof *pp);
    pp->batch_size = p->tid.batch_size;
    pp->trial_number = p->tid.trial_number;
    pp->observer = p->o->power_limit == RUN_PL_OBSERVE;
    pp->n = p->sm->n_meas;
    memcpy(pp->m, p->sm->meas, pp->n * sizeof pp->m[0]);
    printf("zbso run: power limit of batch size %lld: %lld W (profiled %zu limits)\n",
           (long long)pp->batch_size, (long long)(p->sm->optimal_mw / 1000), pp->n);
    fflush(stdout);
    if (p->bso->ops->profile_put(p->bso, p->tid.job_id, pp, &err) < 0)
        fprintf(stderr, "zbso run: could not store the power profile of batch size %lld: "
                "%s\n", (long long)pp->batch_size, err.msg);
    free(pp);
}

/* Carries out a state machine action; returns 0 or an error that stops profiling. */
static int apply(run_power *p, const opt_plo_action *a, zbso_err *err)
{
    double t = 0, e = 0;
    int rc;
    if (a->cancel_window && p->window_open) {
        run_meter_window_end(p->meter, SLICE_WINDOW, true, &t, &e, err);
        p->window_open = false;
    }
    if (a->end_window) {
        opt_plo_action next;
        if ((rc = run_meter_window_end(p->meter, SLICE_WINDOW, false, &t, &e, err)) < 0)
            return rc;
        p->window_open = false;
        double progress = p->has_progress && p->window_counted
                              ? p->progress - p->window_progress : 0;
        if (!(progress > 0))
            return err_set(err, ZBSO_ERUNTIME, "--progress-regex counted no progress in the "
                           "%lld s at %lld W", (long long)p->cfg.profile_steps,
                           (long long)(opt_plo_current_mw(p->sm) / 1000));
        if ((rc = opt_plo_measured(p->sm, &p->sel, t / progress, e / progress, &next,
                                   err)) < 0)
            return rc;
        return apply(p, &next, err);
    }
    if (a->set_limit_mw > 0 && (rc = set_limit(p, a->set_limit_mw, err)) < 0)
        return rc;
    if (a->begin_window) {
        if ((rc = run_meter_window_begin(p->meter, SLICE_WINDOW, err)) < 0)
            return rc;
        p->window_open = true;
        p->window_progress = p->progress;
        p->window_counted = p->has_progress;
    }
    if (a->done) {
        p->profiling = false;
        store_profile(p);
    }
    return 0;
}

int run_power_try_begin(run_power *p, run_bso *b, run_meter *m, const zbso_trial_id *tid,
                        bool zero_code, zbso_err *err)
{
    opt_plo_action a;
    zbso_err why;
    int rc;
    if (p == NULL)
        return 0;
    p->bso = b;
    p->meter = m;
    p->tid = *tid;
    p->profiling = p->window_open = p->has_progress = false;
    /* Client mode: the command's optimizer sets them (zbso run only puts them back). */
    if (!zero_code)
        return 0;
    if (p->o->power_limit == RUN_PL_MAX)
        return set_limit(p, p->cfg.max_limit_mw, err);
    zbso_power_profile *pp = malloc(sizeof *pp);
    if (pp == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory reading a power profile");
    rc = b->ops->profile_get(b, tid->job_id, tid->batch_size, pp, &why);
    if (rc == 0 && (!pp->observer || p->o->power_limit == RUN_PL_OBSERVE) &&
        opt_plo_init_done(p->sm, &p->cfg, &p->sel, pp->m, pp->n, &a, &why) == 0) {
        printf("zbso run: power limit of batch size %lld: %lld W (the job's profile, no "
               "profiling)\n", (long long)tid->batch_size, (long long)(a.set_limit_mw / 1000));
        fflush(stdout);
        free(pp);
        return set_limit(p, a.set_limit_mw, err);
    }
    if (rc < 0 && rc != ZBSO_ENOTFOUND)
        fprintf(stderr, "zbso run: could not read the power profile of batch size %lld: %s\n",
                (long long)tid->batch_size, why.msg);
    free(pp);
    if (!p->has_re) {
        if (!p->warned_no_progress)
            fprintf(stderr, "zbso run: --power-limit %s without --progress-regex: nothing "
                    "counts the command's progress, so no power limit is profiled (the "
                    "limits are left as they are)\n", mode_name(p->o->power_limit));
        p->warned_no_progress = true;
        return 0;
    }
    if ((rc = opt_plo_init(p->sm, &p->cfg, &a, err)) < 0)
        return rc;
    p->profiling = true;
    p->next_tick_s = clk_mono_s();
    return apply(p, &a, err);
}

void run_power_line(run_power *p, const char *line, bool epoch_end)
{
    regmatch_t m[2];
    char num[64], *end;
    if (p == NULL || !p->profiling)
        return;
    if (p->has_re && regexec(&p->re, line, 2, m, 0) == 0) {
        regmatch_t g = p->re.re_nsub >= 1 && m[1].rm_so >= 0 ? m[1] : m[0];
        size_t n = (size_t)(g.rm_eo - g.rm_so);
        snprintf(num, sizeof num, "%.*s", (int)(n < sizeof num - 1 ? n : sizeof num - 1),
                 line + g.rm_so);
        double v = strtod(num, &end);
        if (num[0] != '\0' && *end == '\0' && isfinite(v)) {
            p->progress = v;
            p->has_progress = true;
            /* A window begun before any counter was printed counts from the first. */
            if (p->window_open && !p->window_counted) {
                p->window_progress = v;
                p->window_counted = true;
            }
        }
    }
    if (epoch_end) {
        opt_plo_action a;
        zbso_err err;
        opt_plo_epoch_end(p->sm, &a);
        if (apply(p, &a, &err) < 0)
            stop_profiling(p, err.msg);
    }
}

void run_power_tick(run_power *p)
{
    if (p == NULL)
        return;
    while (p->profiling && clk_mono_s() >= p->next_tick_s) {
        opt_plo_action a;
        zbso_err err;
        p->next_tick_s += 1.0;
        opt_plo_step_begin(p->sm, &a);
        if (apply(p, &a, &err) < 0)
            stop_profiling(p, err.msg);
    }
}

void run_power_try_end(run_power *p)
{
    unsigned before[ZBSO_MAX_GPUS];
    zbso_err err;
    if (p == NULL)
        return;
    if (p->window_open) {
        double t, e;
        run_meter_window_end(p->meter, SLICE_WINDOW, true, &t, &e, &err);
        p->window_open = false;
    }
    p->profiling = false;
    if (pw_actuator(p->gpus) == PW_OBSERVE || pw_limits(p->gpus, before, &err) < 0)
        return;
    unsigned long sets = pw_set_count(p->gpus);
    if (pw_restore(p->gpus, &err) < 0) {
        fprintf(stderr, "zbso run: could not put the GPU power limits back: %s\n", err.msg);
        return;
    }
    if (pw_set_count(p->gpus) != sets) {
        printf("zbso run: GPU power limits put back to %u W (the try left GPU 0 at %u W)\n",
               pw_original(p->gpus)[0] / 1000, before[0] / 1000);
        fflush(stdout);
    }
}
