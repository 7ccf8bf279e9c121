/* bandit.c: Gaussian Thompson sampling arms (SPEC §3.1 MAB, §3.3) as Zeus's mab.py fits
 * and samples them, with numpy-exact arithmetic. Randomness only through core/rng.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/optimizer.h"

void opt_arm_fit(int64_t batch_size, double prior_mean, double prior_precision,
                 const double *rewards, size_t n, zbso_arm *out)
{
    out->batch_size = batch_size;
    out->num_observations = (int64_t)n;
    if (n == 0) {
        out->param_mean = prior_mean;
        out->param_precision = prior_precision;
        return;
    }
    double variance = opt_var(rewards, n);
    /* One observation or identical ones: variance 0, and Zeus takes the reward as exact. */
    if (variance == 0.0) {
        out->param_precision = INFINITY;
        out->param_mean = opt_mean(rewards, n);
        return;
    }
    double reward_precision = 1.0 / variance;
    double precision = prior_precision + (double)n * reward_precision;
    out->param_precision = precision;
    out->param_mean =
        (prior_precision * prior_mean + reward_precision * opt_sum(rewards, n)) / precision;
}

/* Appends -cost of trial t to rewards[*n] when its cost is accepted, else counts it in
 * skips. */
static void add_reward(const zbso_job_spec *spec, const zbso_trial *t, double *rewards,
                       size_t *n, opt_fit_skips *skips)
{
    double cost = opt_trial_cost(spec, t);
    if (opt_cost_accepted(cost)) {
        rewards[(*n)++] = -cost;
        return;
    }
    if (skips->n++ == 0) {
        skips->trial_number = t->trial_number;
        skips->cost = cost;
    }
}

void opt_arm_fit_trials(const zbso_job_spec *spec, int64_t batch_size,
                        const zbso_trial *trials, size_t n, double *rewards, zbso_arm *out,
                        opt_fit_skips *skips)
{
    size_t used = 0;
    memset(skips, 0, sizeof *skips);
    for (size_t i = 0; i < n; i++)
        add_reward(spec, &trials[i], rewards, &used, skips);
    opt_arm_fit(batch_size, spec->mab_prior_mean, spec->mab_prior_precision, rewards, used,
                out);
}

/* qsort order: descending trial number. */
static int newest_first(const void *a, const void *b)
{
    int64_t x = ((const zbso_trial *)a)->trial_number;
    int64_t y = ((const zbso_trial *)b)->trial_number;
    return (x < y) - (x > y);
}

void opt_arm_refit(const zbso_job_spec *spec, const zbso_trial *reported, zbso_trial *others,
                   size_t n, double *rewards, zbso_arm *out, opt_fit_skips *skips)
{
    size_t used = 0, kept = 0;
    memset(skips, 0, sizeof *skips);
    for (size_t i = 0; i < n; i++) {
        if (others[i].trial_number == reported->trial_number)
            continue;
        if (kept != i)
            others[kept] = others[i];
        kept++;
    }
    /* Zeus's get_trial_results_of_bs: newest first, at most window_size of them. */
    if (kept > 1)              /* others may be NULL when n is 0 */
        qsort(others, kept, sizeof *others, newest_first);
    size_t window = (size_t)spec->window_size;
    if (window > 0 && kept > window)
        kept = window;
    /* Zeus's report: a full window gives up its oldest to make room for the reported
     * trial and turns ascending; a window not yet full stays newest first. */
    if (window > 0 && kept == window) {
        for (size_t i = kept - 1; i-- > 0;)
            add_reward(spec, &others[i], rewards, &used, skips);
    } else {
        for (size_t i = 0; i < kept; i++)
            add_reward(spec, &others[i], rewards, &used, skips);
    }
    add_reward(spec, reported, rewards, &used, skips);
    opt_arm_fit(reported->batch_size, spec->mab_prior_mean, spec->mab_prior_precision,
                rewards, used, out);
}

int opt_mab_choose(zbso_rng *rng, const zbso_arm *arms, size_t n, int64_t num_explorations,
                   int64_t *batch_size, zbso_err *err)
{
    size_t perm[ZBSO_MAX_BATCH_SIZES];
    int rc = 0;

    if (n == 0 || n > ZBSO_MAX_BATCH_SIZES) {
        rc = err_set(err, ZBSO_EINTERNAL, "MAB choice over %zu arms (must be 1..%d)", n,
                     ZBSO_MAX_BATCH_SIZES);
        goto out;
    }
    /* The permutation is drawn even when no arm needs exploring, as Zeus draws it. */
    rng_permutation(rng, n, perm);
    for (size_t i = 0; i < n; i++) {
        if (arms[perm[i]].num_observations < num_explorations) {
            *batch_size = arms[perm[i]].batch_size;
            goto out;
        }
    }
    size_t best = 0;
    double best_sample = 0.0;
    for (size_t i = 0; i < n; i++) {
        double scale = 1.0 / sqrt(arms[i].param_precision);
        double sample = rng_normal(rng, arms[i].param_mean, scale);
        /* Python's max(): the first arm keeps the lead unless a later one is greater. */
        if (i == 0 || sample > best_sample) {
            best = i;
            best_sample = sample;
        }
    }
    *batch_size = arms[best].batch_size;
out:
    return rc;
}
