/* recurrence.c: the recurrence driver of the simulator: one (workload, seed) simulation
 * drives the real optimizer through service.h on its own memory:// store with a fake
 * clock (sweep.c runs many of them on threads). Writes no files (output.c does). */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/optimizer.h"
#include "core/spec.h"
#include "recur/recur.h"
#include "service/service.h"
#include "sim/sim.h"
#include "util/buf.h"

/* The simulated environment: a clock that advances by each run's time, and an entropy
 * source that is never needed (the job has a seed and an id) but deterministic anyway. */
typedef struct sim_env_ctx {
    double now;
    uint64_t entropy_state;
} sim_env_ctx;

static double env_now(void *ctx)
{
    return ((sim_env_ctx *)ctx)->now;
}

static int env_entropy(void *ctx, uint32_t *words, size_t n)
{
    sim_env_ctx *c = ctx;
    for (size_t i = 0; i < n; i++) {
        /* splitmix64 */
        uint64_t z = (c->entropy_state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        words[i] = (uint32_t)(z ^ (z >> 31));
    }
    return 0;
}

int64_t sim_recurrences(const sim_workload *w, const sim_options *o)
{
    int64_t n = o->recurrences > 0 ? o->recurrences : 2 * (int64_t)w->n_bs * (int64_t)w->n_pl_all;
    if (o->arrivals.n_times > 0 && (int64_t)o->arrivals.n_times < n)
        n = (int64_t)o->arrivals.n_times;
    return n;
}

/* Appends a row to rows (at most SIM_MAX_RECURRENCES * RECUR_MAX_TRIES rows, the bound
 * rows was made with). Returns 0, ZBSO_EINTERNAL past the bound or ZBSO_ENOMEM. */
static int add_row(zbso_buf *rows, const sim_row *row, zbso_err *err)
{
    size_t n = buf_len(rows) / sizeof *row;
    int rc = buf_addn(rows, row, sizeof *row);
    if (rc == ZBSO_ETOOBIG)
        return err_set(err, ZBSO_EINTERNAL, "more than %zu simulated runs", n);
    if (rc < 0)
        return err_set(err, ZBSO_ENOMEM, "out of memory recording simulated runs");
    return 0;
}

/* Fills the job spec the simulated job registers with. */
static int make_spec(const sim_workload *w, const sim_options *o, uint64_t seed,
                     zbso_job_spec *spec, zbso_err *err)
{
    spec_defaults(spec);
    snprintf(spec->job_id_prefix, sizeof spec->job_id_prefix, "sim");
    snprintf(spec->job_id, sizeof spec->job_id, "sim-%s-%s-%llu", w->preset.name, w->gpu,
             (unsigned long long)seed);
    for (size_t i = 0; i < w->n_bs; i++)
        spec->batch_sizes[i] = w->bs[i].batch_size;
    spec->n_batch_sizes = w->n_bs;
    spec->default_batch_size = w->default_batch_size;
    spec->eta_knob = o->eta;
    spec->has_beta_knob = o->has_beta;
    spec->beta_knob = o->has_beta ? o->beta : 2.0;
    spec->target_metric = w->preset.target_metric;
    spec->higher_is_better_metric = w->preset.higher_is_better;
    spec->max_epochs = w->preset.max_epochs;
    spec->has_mab_seed = true;
    spec->mab_seed = seed;
    spec->max_power = w->max_power_w;
    spec->number_of_gpus = 1;
    snprintf(spec->gpu_model, sizeof spec->gpu_model, "%s", w->gpu);
    return spec_validate(spec, err);
}

/* One simulated job in progress: its store, clock, spec, streams and what it recorded. */
typedef struct job_run {
    store *st;
    sim_env_ctx ectx;
    svc_env env;
    svc_stats stats;
    const sim_workload *w;
    const sim_options *o;
    zbso_policy pol;
    uint64_t seed;
    zbso_job_spec spec;
    bool profiled[ZBSO_MAX_BATCH_SIZES];
    size_t jit_pl[ZBSO_MAX_BATCH_SIZES];
    recur_policy policy;
    zbso_rng paths, noise, arrivals;
    zbso_buf rows;
    sim_result *out;
    char last_msg[512];          /* the last answer's message, for the failure message */
} job_run;

/* One recurrence: when its next event is due, and the try in flight. */
typedef struct rec_state {
    double at;                   /* unix seconds of its next event */
    bool running;                /* a try is in flight: the event is its end */
    bool done;
    int64_t try_no;
    zbso_trial_id tid;
    const sim_bs *b;
    size_t pl;
    sim_run run;
} rec_state;

/* Starts a try of recurrence r at the job's clock: a trial from the service, its power
 * limit, path, noise and run under the bound in force now. *gave_up is set when the
 * optimizer found no batch size converged (with keep_stuck). Returns 0 or a negative
 * code. */
static int try_start(job_run *j, rec_state *r, bool *gave_up, zbso_err *err)
{
    const sim_workload *w = j->w;
    const sim_options *o = j->o;
    int rc = svc_next_batch_size(j->st, &j->env, j->spec.job_id, NULL, &r->tid, NULL, err);
    *gave_up = false;
    if (rc == ZBSO_ENOCONV && o->keep_stuck) {
        *gave_up = true;
        return 0;
    }
    if (rc < 0)
        return rc;
    const sim_bs *b = sim_workload_bs(w, r->tid.batch_size);
    if (b == NULL)
        return err_set(err, ZBSO_EINTERNAL, "the optimizer chose batch size %lld, which "
                       "workload %s does not have", (long long)r->tid.batch_size,
                       w->preset.name);
    size_t bi = (size_t)(b - w->bs);
    bool profile = false;
    if (!o->jit) {
        r->pl = sim_max_pl(b);
    } else if (j->profiled[bi]) {
        r->pl = j->jit_pl[bi];
    } else {
        profile = true;
        r->pl = sim_jit_pick(b, o->eta);
    }
    r->b = b;
    int64_t target_epoch = w->path_epochs[b->path_off + rng_next_u64(&j->paths) % b->n_paths];
    /* Zeus's bound is the client's (recur.h, as ZeusMaster's); the smart policy's is the
     * server's own (its min_cost is a mean, opt_smart_min_cost). */
    double bound = recur_cost_bound(&j->policy);
    if (j->pol == ZBSO_POLICY_SMART &&
        (rc = svc_cost_bound(j->st, &j->env, j->spec.job_id, &bound, NULL, err)) < 0)
        return rc;
    double factor = 1.0;
    if (o->noise > 0)
        factor = exp(rng_normal(&j->noise, 0.0, o->noise) - 0.5 * o->noise * o->noise);
    sim_run_compute_scaled(w, b, r->pl, target_epoch, profile, o->eta, bound, factor,
                           &r->run);
    if (profile && r->run.epochs > 0) {
        j->profiled[bi] = true;
        j->jit_pl[bi] = r->pl;
    }
    return 0;
}

/* Ends the try of recurrence rec (from 1) in r at the job's clock: a run allowed no epoch
 * is ended Failed (it never started); otherwise one report at its last epoch. Records the
 * run and sets *next. Returns 0 or a negative code. */
static int try_end(job_run *j, int64_t rec, rec_state *r, recur_next *next, zbso_err *err)
{
    const sim_workload *w = j->w;
    sim_result *out = j->out;
    zbso_report_response resp;
    int rc;
    if (r->run.epochs == 0) {
        /* Not even one epoch fits under the bound (never in the first recurrence, which
         * has no bound yet). */
        out->n_unrun++;
        if ((rc = svc_end_trial(j->st, &j->env, &r->tid, NULL, err)) < 0)
            return rc;
        snprintf(j->last_msg, sizeof j->last_msg, "not one epoch fits under the cost bound");
        *next = recur_after_try(&j->policy, rec, r->try_no, r->b->batch_size, false, 0);
        return 0;
    }
    /* A run that stopped without reaching the target says current_epoch = max_epochs: its
     * training is over, and that is how a report ends a trial under the cost bound. */
    const double hib_away = w->preset.higher_is_better ? -INFINITY : INFINITY;
    zbso_training_result res = {
        .trial = r->tid,
        .time = r->run.time_s,
        .energy = r->run.energy_j,
        .metric = r->run.reached ? w->preset.target_metric
                                 : nextafter(w->preset.target_metric, hib_away),
        .current_epoch = r->run.reached ? r->run.epochs : w->preset.max_epochs};
    if ((rc = svc_report(j->st, &j->env, &res, &resp, NULL, err)) < 0)
        return rc;
    snprintf(j->last_msg, sizeof j->last_msg, "%s", resp.message);
    if (!resp.stop_train)
        return err_set(err, ZBSO_EINTERNAL, "the optimizer did not end trial %lld: %s",
                       (long long)r->tid.trial_number, resp.message);
    sim_row row = {rec, r->try_no, r->b->batch_size, r->b->pl_w[r->pl], r->run.energy_j,
                   r->run.time_s, r->run.cost, resp.converged};
    if ((rc = add_row(&j->rows, &row, err)) < 0)
        return rc;
    out->rec_cost[rec - 1] += r->run.cost;
    out->energy_j += r->run.energy_j;
    out->time_s += r->run.time_s;
    out->cost += r->run.cost;
    out->n_stopped += !resp.converged;
    *next = recur_after_try(&j->policy, rec, r->try_no, r->b->batch_size, resp.converged,
                            r->run.cost);
    return 0;
}

/* The submit time of recurrence k (from 0) after prev (the one before's), with
 * o->arrivals: the file's times, or Poisson gaps from the job's own stream. */
static double arrival(job_run *j, size_t k, double prev)
{
    const sim_arrivals *a = &j->o->arrivals;
    if (a->n_times > 0)
        return j->ectx.now + a->times[k];
    if (k == 0)
        return j->ectx.now;
    /* 53 random bits in (0, 1]: the gap -mean * log(u) is finite. */
    double u = ((double)(rng_next_u64(&j->arrivals) >> 11) + 1.0) * 0x1p-53;
    return prev - a->mean_gap_s * log(u);
}

/* The index of the next event among rs[from..n-1]: the earliest; a try's end before a
 * try's start at the same time; then the lower recurrence. -1: none left. */
static ssize_t next_event(const rec_state *rs, size_t from, size_t n)
{
    ssize_t best = -1;
    for (size_t k = from; k < n; k++) {
        if (rs[k].done)
            continue;
        if (best >= 0 && rs[k].at > rs[best].at)
            break;  /* later recurrences arrive later still */
        if (best < 0 || rs[k].at < rs[best].at || (rs[k].running && !rs[best].running))
            best = (ssize_t)k;
    }
    return best;
}

/* Simulates w recurring with seed under policy pol as one job on st (see sim_simulate);
 * warm: the job's spec asks for a warm start from the other jobs of its prefix on st.
 * Recurrences run one after another, or with o->arrivals at their submit times, several
 * at once: each is a sequence of tries, events (a try's start, a try's end) taken in time
 * order on the fake clock. */
static int simulate_job(store *st, const sim_workload *w, const sim_options *o,
                        uint64_t seed, zbso_policy pol, bool warm, sim_result *out,
                        zbso_err *err)
{
    job_run *j = calloc(1, sizeof *j);
    rec_state *rs = NULL;
    zbso_job_spec stored;
    bool created = false, overlap = o->arrivals.n_times > 0 || o->arrivals.mean_gap_s > 0;
    int rc = 0;

    memset(out, 0, sizeof *out);
    out->seed = seed;
    out->n_recurrences = sim_recurrences(w, o);
    out->rec_cost = calloc((size_t)out->n_recurrences, sizeof *out->rec_cost);
    rs = calloc((size_t)out->n_recurrences, sizeof *rs);
    if (j == NULL || out->rec_cost == NULL || rs == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory simulating %s", w->preset.name);
        goto out;
    }
    buf_init(&j->rows, (size_t)SIM_MAX_RECURRENCES * RECUR_MAX_TRIES * sizeof(sim_row));
    j->st = st;
    j->ectx = (sim_env_ctx){1.7e9, seed};
    j->env = (svc_env){.now = env_now, .entropy = env_entropy, .ctx = &j->ectx,
                       .stats = &j->stats, .default_policy = ZBSO_POLICY_ZEUS};
    j->w = w;
    j->o = o;
    j->pol = pol;
    j->seed = seed;
    j->out = out;
    /* A stream of its own: the seed's integer plus a constant above 2^64, so path
     * sampling never replays the optimizer's default_rng(seed) draws. --noise and
     * --arrivals draw from streams of their own, so paths are those of the plain runs. */
    uint32_t words[3] = {(uint32_t)seed, (uint32_t)(seed >> 32), 0x73696d31u};
    rng_seed_words(&j->paths, words, 3);
    words[2] = 0x6e6f6973u;
    rng_seed_words(&j->noise, words, 3);
    words[2] = 0x61727276u;
    rng_seed_words(&j->arrivals, words, 3);

    if ((rc = make_spec(w, o, seed, &j->spec, err)) < 0)
        goto out;
    j->spec.policy = pol;
    j->spec.has_policy = true;
    j->spec.warm_start = warm;
    if ((rc = svc_register_job(st, &j->env, &j->spec, &stored, &created, NULL, err)) < 0)
        goto out;
    recur_init(&j->policy, j->spec.default_batch_size, o->has_beta, o->beta);

    size_t n = (size_t)out->n_recurrences, lo = 0;
    for (size_t k = 0; k < n; k++) {
        rs[k].try_no = 1;
        /* One after another: each recurrence is due when the one before it is done. */
        rs[k].at = overlap ? arrival(j, k, k > 0 ? rs[k - 1].at : 0) : INFINITY;
    }
    if (!overlap)
        rs[0].at = j->ectx.now;
    for (ssize_t e; (e = next_event(rs, lo, n)) >= 0;) {
        rec_state *r = &rs[e];
        int64_t rec = (int64_t)e + 1;
        recur_next next = RECUR_RETRY;
        if (r->at > j->ectx.now)
            j->ectx.now = r->at;
        if (!r->running) {
            bool gave_up;
            if ((rc = try_start(j, r, &gave_up, err)) < 0)
                goto out;
            if (gave_up) {
                next = RECUR_FAIL_TRIES;
                snprintf(j->last_msg, sizeof j->last_msg, "%s", err->msg);
            } else if (r->run.epochs > 0) {
                r->running = true;
                r->at = j->ectx.now + r->run.time_s;
                continue;
            } else if ((rc = try_end(j, rec, r, &next, err)) < 0) {
                goto out;
            }
        } else {
            r->running = false;
            if ((rc = try_end(j, rec, r, &next, err)) < 0)
                goto out;
        }
        if (next == RECUR_RETRY) {
            r->try_no++;
            continue;
        }
        r->done = true;
        if (!overlap && (size_t)e + 1 < n)
            rs[e + 1].at = j->ectx.now;
        while (lo < n && rs[lo].done)
            lo++;
        if (next == RECUR_NEXT)
            continue;
        if (o->keep_stuck) {
            out->stuck = true;
            out->stuck_at = rec;
            break;
        }
        if (next == RECUR_FAIL_DEFAULT)
            rc = err_set(err, ZBSO_ENOCONV,
                         "workload %s on %s, seed %llu: the default batch size %lld did not "
                         "reach the target %g in the first recurrence (%s)", w->preset.name,
                         w->gpu, (unsigned long long)seed,
                         (long long)j->spec.default_batch_size, w->preset.target_metric,
                         j->last_msg);
        else
            rc = err_set(err, ZBSO_ENOCONV,
                         "workload %s on %s, seed %llu: recurrence %lld did not reach the "
                         "target in %d tries", w->preset.name, w->gpu,
                         (unsigned long long)seed, (long long)rec, RECUR_MAX_TRIES);
        goto out;
    }
    out->n_concurrent = (int64_t)atomic_load(&j->stats.dispatched[ZBSO_TRIAL_CONCURRENT]);
    out->rows = (sim_row *)buf_take(&j->rows, &out->n_rows);
    out->n_rows /= sizeof(sim_row);
    rc = sim_savings(&j->spec, out, &out->savings, err);
out:
    if (j != NULL)
        buf_free(&j->rows);
    free(j);
    free(rs);
    /* Every failure names the simulation it happened in. */
    if (rc < 0 && err != NULL && strncmp(err->msg, "workload ", 9) != 0) {
        char msg[ZBSO_ERR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        err_set(err, rc, "workload %s on %s, seed %llu: %.400s", w->preset.name, w->gpu,
                (unsigned long long)seed, msg);
    }
    if (rc < 0)
        sim_result_free(out);
    return rc;
}

int sim_simulate(const sim_workload *w, const sim_options *o, uint64_t seed,
                 sim_result *out, zbso_err *err)
{
    store *st = NULL;
    /* Nobody reads the simulator's curve points: no buffer, no flusher thread. */
    store_options sopt = {.create_if_empty = true, .discard_curves = true};
    int rc = store_open("memory://", &sopt, &st, err);
    if (rc < 0) {
        memset(out, 0, sizeof *out);
        return rc;
    }
    if (w->warm_from != NULL) {
        /* The prior: the same training on the other GPU under Zeus's policy, as a server
         * would hold it from an earlier job of the prefix. */
        sim_result prior;
        sim_options po = *o;
        po.keep_stuck = true;
        rc = simulate_job(st, w->warm_from, &po, seed + SIM_WARM_SEED_OFFSET, ZBSO_POLICY_ZEUS,
                          false, &prior, err);
        sim_result_free(&prior);
        if (rc < 0) {
            memset(out, 0, sizeof *out);
            goto out;
        }
    }
    rc = simulate_job(st, w, o, seed, o->policy, w->warm_from != NULL, out, err);
out:
    store_close(st);
    return rc;
}

int sim_savings(const zbso_job_spec *spec, const sim_result *r, opt_savings *out,
                zbso_err *err)
{
    size_t n = r->n_rows + (size_t)r->n_unrun;
    zbso_trial *t = calloc(n > 0 ? n : 1, sizeof *t);
    if (t == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory for the savings of %zu trials", n);
    for (size_t i = 0; i < n; i++) {
        t[i].trial_number = (int64_t)i + 1;
        if (i >= r->n_rows) {
            t[i].status = ZBSO_TRIAL_FAILED;
            continue;
        }
        t[i].status = ZBSO_TRIAL_SUCCEEDED;
        t[i].batch_size = r->rows[i].batch_size;
        t[i].energy = r->rows[i].energy_j;
        t[i].time = r->rows[i].time_s;
        t[i].converged = r->rows[i].reached;
    }
    opt_savings_compute(spec, t, n, out);
    free(t);
    return 0;
}

void sim_result_free(sim_result *r)
{
    if (r == NULL)
        return;
    free(r->rows);
    free(r->rec_cost);
    r->rows = NULL;
    r->rec_cost = NULL;
    r->n_rows = 0;
}
