/* savings.c: what a job spent against always training at its default batch size (SPEC §5,
 * "Savings"), from its trials. Pure; every sum runs left to right in trial-number order so
 * that anyone can recompute the figures exactly from the trials. */
#include <string.h>

#include "core/optimizer.h"

/* A trial with a usable result: Succeeded with an accepted cost. A Succeeded row whose cost
 * is not accepted can only come from an older zbso (docs/DESIGN.md, "Bad values"); like a
 * Failed trial it has no figure to add. */
static bool finished(const zbso_job_spec *spec, const zbso_trial *t)
{
    return t->status == ZBSO_TRIAL_SUCCEEDED && opt_cost_accepted(opt_trial_cost(spec, t));
}

static void totals_add(opt_totals *sum, const zbso_job_spec *spec, const zbso_trial *t)
{
    sum->energy += t->energy;
    sum->time += t->time;
    sum->cost += opt_trial_cost(spec, t);
}

void opt_savings_compute(const zbso_job_spec *spec, const zbso_trial *trials, size_t n,
                         opt_savings *out)
{
    double bs_cost[ZBSO_MAX_BATCH_SIZES] = {0};    /* by index into spec->batch_sizes */
    int64_t bs_runs[ZBSO_MAX_BATCH_SIZES] = {0};
    size_t nb = spec->n_batch_sizes < ZBSO_MAX_BATCH_SIZES ? spec->n_batch_sizes
                                                           : ZBSO_MAX_BATCH_SIZES;
    opt_totals dflt = {0, 0, 0};

    memset(out, 0, sizeof *out);
    out->default_batch_size = spec->default_batch_size;
    for (size_t i = 0; i < n; i++) {
        const zbso_trial *t = &trials[i];
        if (t->status == ZBSO_TRIAL_DISPATCHED)
            continue;
        if (!finished(spec, t)) {
            out->failed++;
            continue;
        }
        out->finished++;
        totals_add(&out->spent, spec, t);
        if (!t->converged)
            continue;
        if (t->batch_size == spec->default_batch_size) {
            out->default_runs++;
            totals_add(&dflt, spec, t);
        }
        for (size_t k = 0; k < nb; k++) {
            if (spec->batch_sizes[k] == t->batch_size) {
                bs_cost[k] += opt_trial_cost(spec, t);
                bs_runs[k]++;
                break;
            }
        }
    }
    double f = (double)out->finished;

    for (size_t k = 0; k < nb; k++) {
        if (bs_runs[k] == 0)
            continue;
        double mean = bs_cost[k] / (double)bs_runs[k];
        if (!out->has_best || mean < out->best_mean_cost ||
            (mean == out->best_mean_cost && spec->batch_sizes[k] < out->best_batch_size)) {
            out->has_best = true;
            out->best_batch_size = spec->batch_sizes[k];
            out->best_mean_cost = mean;
        }
    }
    if (out->has_best)
        out->regret = out->spent.cost - f * out->best_mean_cost;

    if (out->default_runs == 0)
        return;
    double runs = (double)out->default_runs;
    out->has_baseline = true;
    out->default_mean.energy = dflt.energy / runs;
    out->default_mean.time = dflt.time / runs;
    out->default_mean.cost = dflt.cost / runs;
    out->saved.energy = f * out->default_mean.energy - out->spent.energy;
    out->saved.time = f * out->default_mean.time - out->spent.time;
    out->saved.cost = f * out->default_mean.cost - out->spent.cost;

    /* break_even is one past the last finished trial j at which the cumulative cost was
     * above j default runs' (1 when there is none; 0 when it is the last one). */
    int64_t j = 0, last_above = 0;
    double cum = 0;
    for (size_t i = 0; i < n; i++) {
        if (!finished(spec, &trials[i]))
            continue;
        j++;
        cum += opt_trial_cost(spec, &trials[i]);
        if (cum > (double)j * out->default_mean.cost)
            last_above = j;
    }
    out->break_even = last_above == out->finished ? 0 : last_above + 1;
}
