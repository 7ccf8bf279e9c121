/* bandit.c: Gaussian Thompson sampling arms (SPEC §3.1 MAB, §3.3) as Zeus's mab.py fits
 * and samples them, with numpy-exact arithmetic. Randomness only through core/rng.h. */
#include <math.h>

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

void opt_arm_fit_trials(const zbso_job_spec *spec, int64_t batch_size,
                        const zbso_trial *trials, size_t n, double *rewards, zbso_arm *out)
{
    size_t first = 0;
    if (spec->window_size > 0 && n > (size_t)spec->window_size)
        first = n - (size_t)spec->window_size;
    for (size_t i = first; i < n; i++)
        rewards[i - first] = -opt_trial_cost(spec, &trials[i]);
    opt_arm_fit(batch_size, spec->mab_prior_mean, spec->mab_prior_precision, rewards,
                n - first, out);
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
