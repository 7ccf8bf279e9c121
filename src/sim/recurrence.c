/* recurrence.c: the recurrence driver of the simulator: one (workload, seed) simulation
 * drives the real optimizer through service.h on its own memory:// store with a fake
 * clock (sweep.c runs many of them on threads). Writes no files (output.c does). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (o->recurrences > 0)
        return o->recurrences;
    return 2 * (int64_t)w->n_bs * (int64_t)w->n_pl_all;
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

int sim_simulate(const sim_workload *w, const sim_options *o, uint64_t seed,
                 sim_result *out, zbso_err *err)
{
    store *st = NULL;
    /* Nobody reads the simulator's curve points: no buffer, no flusher thread. */
    store_options sopt = {.create_if_empty = true, .discard_curves = true};
    sim_env_ctx ectx = {1.7e9, seed};
    svc_env env = {.now = env_now, .entropy = env_entropy, .ctx = &ectx};
    zbso_job_spec spec, stored;
    bool created = false;
    bool profiled[ZBSO_MAX_BATCH_SIZES] = {false};
    size_t jit_pl[ZBSO_MAX_BATCH_SIZES] = {0};
    recur_policy policy;
    zbso_report_response resp;
    zbso_rng paths;
    zbso_buf rows;
    int rc = 0;

    buf_init(&rows, (size_t)SIM_MAX_RECURRENCES * RECUR_MAX_TRIES * sizeof(sim_row));
    memset(out, 0, sizeof *out);
    out->seed = seed;
    out->n_recurrences = sim_recurrences(w, o);
    out->rec_cost = calloc((size_t)out->n_recurrences, sizeof *out->rec_cost);
    if (out->rec_cost == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory simulating %s", w->preset.name);
        goto out;
    }
    /* A stream of its own: the seed's integer plus a constant above 2^64, so path
     * sampling never replays the optimizer's default_rng(seed) draws. */
    uint32_t words[3] = {(uint32_t)seed, (uint32_t)(seed >> 32), 0x73696d31u};
    rng_seed_words(&paths, words, 3);

    if ((rc = make_spec(w, o, seed, &spec, err)) < 0 ||
        (rc = store_open("memory://", &sopt, &st, err)) < 0 ||
        (rc = svc_register_job(st, &env, &spec, &stored, &created, NULL, err)) < 0)
        goto out;
    recur_init(&policy, spec.default_batch_size, o->has_beta, o->beta);

    const double hib_away = w->preset.higher_is_better ? -INFINITY : INFINITY;
    for (int64_t rec = 1; rec <= out->n_recurrences; rec++) {
        recur_next next = RECUR_RETRY;
        for (int64_t try_no = 1; next == RECUR_RETRY; try_no++) {
            zbso_trial_id tid;
            if ((rc = svc_next_batch_size(st, &env, spec.job_id, NULL, &tid, NULL, err)) < 0)
                goto out;
            const sim_bs *b = sim_workload_bs(w, tid.batch_size);
            if (b == NULL) {
                rc = err_set(err, ZBSO_EINTERNAL, "the optimizer chose batch size %lld, "
                             "which workload %s does not have", (long long)tid.batch_size,
                             w->preset.name);
                goto out;
            }
            size_t bi = (size_t)(b - w->bs);
            bool profile = false;
            size_t pl;
            if (!o->jit) {
                pl = sim_max_pl(b);
            } else if (profiled[bi]) {
                pl = jit_pl[bi];
            } else {
                profile = true;
                pl = sim_jit_pick(b, o->eta);
            }
            int64_t target_epoch =
                w->path_epochs[b->path_off + rng_next_u64(&paths) % b->n_paths];
            sim_run run;
            sim_run_compute(w, b, pl, target_epoch, profile, o->eta,
                            recur_cost_bound(&policy), &run);
            if (run.epochs == 0) {
                /* Not even one epoch fits under the bound: the run never starts (never in
                 * the first recurrence, which has no bound yet). */
                out->n_unrun++;
                if ((rc = svc_end_trial(st, &env, &tid, NULL, err)) < 0)
                    goto out;
                snprintf(resp.message, sizeof resp.message, "not one epoch fits under the "
                         "cost bound");
                next = recur_after_try(&policy, rec, try_no, b->batch_size, false, 0);
                continue;
            }
            if (profile) {
                profiled[bi] = true;
                jit_pl[bi] = pl;
            }
            /* One report at the run's last epoch. A run that stopped without reaching
             * the target says current_epoch = max_epochs: its training is over, and that
             * is how a report ends a trial that stayed under the cost bound. */
            zbso_training_result res = {.trial = tid,
                                        .time = run.time_s,
                                        .energy = run.energy_j,
                                        .metric = run.reached
                                                      ? w->preset.target_metric
                                                      : nextafter(w->preset.target_metric,
                                                                  hib_away),
                                        .current_epoch =
                                            run.reached ? run.epochs : w->preset.max_epochs};
            if ((rc = svc_report(st, &env, &res, &resp, NULL, err)) < 0)
                goto out;
            if (!resp.stop_train) {
                rc = err_set(err, ZBSO_EINTERNAL, "the optimizer did not end trial %lld: %s",
                             (long long)tid.trial_number, resp.message);
                goto out;
            }
            ectx.now += run.time_s;
            sim_row row = {rec, try_no, b->batch_size, b->pl_w[pl], run.energy_j,
                           run.time_s, run.cost, resp.converged};
            if ((rc = add_row(&rows, &row, err)) < 0)
                goto out;
            out->rec_cost[rec - 1] += run.cost;
            out->energy_j += run.energy_j;
            out->time_s += run.time_s;
            out->cost += run.cost;
            next = recur_after_try(&policy, rec, try_no, b->batch_size, resp.converged,
                                   run.cost);
        }
        if (next == RECUR_FAIL_DEFAULT) {
            rc = err_set(err, ZBSO_ENOCONV,
                         "workload %s on %s, seed %llu: the default batch size %lld did "
                         "not reach the target %g in the first recurrence (%s)",
                         w->preset.name, w->gpu, (unsigned long long)seed,
                         (long long)spec.default_batch_size, w->preset.target_metric,
                         resp.message);
            goto out;
        }
        if (next == RECUR_FAIL_TRIES) {
            rc = err_set(err, ZBSO_ENOCONV,
                         "workload %s on %s, seed %llu: recurrence %lld did not reach the "
                         "target in %d tries", w->preset.name, w->gpu,
                         (unsigned long long)seed, (long long)rec, RECUR_MAX_TRIES);
            goto out;
        }
    }
    out->rows = (sim_row *)buf_take(&rows, &out->n_rows);
    out->n_rows /= sizeof(sim_row);
    rc = sim_savings(&spec, out, &out->savings, err);
out:
    buf_free(&rows);
    /* Every failure names the simulation it happened in. */
    if (rc < 0 && err != NULL && strncmp(err->msg, "workload ", 9) != 0) {
        char msg[ZBSO_ERR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        err_set(err, rc, "workload %s on %s, seed %llu: %.400s", w->preset.name, w->gpu,
                (unsigned long long)seed, msg);
    }
    if (st != NULL)
        store_close(st);
    if (rc < 0)
        sim_result_free(out);
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
