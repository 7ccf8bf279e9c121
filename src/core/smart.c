/* smart.c: the smart batch size policy (smart.h, SPEC "The smart policy") as a replay of
 * the job's trials: every call rebuilds the walk, the confirmation set and the arms from
 * the trials alone, so the policy keeps no state of its own and no table is needed. */
#include "core/smart.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The replay of one job: its sizes (ascending, as validated) and, per size, the first two
 * explorations that did not fail (the walk's run and the confirmation run). */
typedef struct smart_ctx {
    const zbso_job *job;
    size_t nb;
    const opt_smart_prior *prior;  /* NULL: none given */
    bool warm;                     /* the job reads a prior (warm_start, prior_jobs) */
    bool wants_prior;              /* a decision needed the prior and had none */
    int64_t last_taken;            /* the newest trial number the replay has passed */
    int64_t last_decided;          /* the newest Exploration or MAB trial not Failed */
    const zbso_trial *first[ZBSO_MAX_BATCH_SIZES];
    const zbso_trial *second[ZBSO_MAX_BATCH_SIZES];
    bool seen[ZBSO_MAX_BATCH_SIZES];     /* the walk has passed it: counts for the best */
    bool dropped[ZBSO_MAX_BATCH_SIZES];  /* its confirmation run did not converge */
} smart_ctx;

/* The index of bs among spec's sizes (ascending, as validated), or -1. */
static int spec_index(const zbso_job_spec *spec, int64_t bs)
{
    size_t nb = spec->n_batch_sizes < ZBSO_MAX_BATCH_SIZES ? spec->n_batch_sizes
                                                           : ZBSO_MAX_BATCH_SIZES;
    size_t lo = 0, hi = nb;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (spec->batch_sizes[mid] < bs)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < nb && spec->batch_sizes[lo] == bs ? (int)lo : -1;
}

static int index_of(const smart_ctx *c, int64_t bs)
{
    return spec_index(&c->job->spec, bs);
}

static bool done(const zbso_trial *t)
{
    return t != NULL && t->status == ZBSO_TRIAL_SUCCEEDED;
}

/* The walk's run of size i ended converged. */
static bool walk_ok(const smart_ctx *c, int i)
{
    return done(c->first[i]) && c->first[i]->converged;
}

static double cost_of(const smart_ctx *c, const zbso_trial *t)
{
    return opt_trial_cost(&c->job->spec, t);
}

/* Cost per epoch of trial t (its cost when it ran no epoch). */
static double epoch_cost(const smart_ctx *c, const zbso_trial *t)
{
    double cost = cost_of(c, t);
    return t->epochs > 0 ? cost / (double)t->epochs : cost;
}

/* The cheapest size whose walk run converged, among those seen (all when all_arms), not
 * dropped; the smaller on ties. -1: none. */
static int best_arm(const smart_ctx *c, bool all_arms)
{
    int best = -1;
    double best_cost = INFINITY;
    for (size_t i = 0; i < c->nb; i++) {
        if ((!all_arms && !c->seen[i]) || c->dropped[i] || !walk_ok(c, (int)i))
            continue;
        double cost = cost_of(c, c->first[i]);
        if (best < 0 || cost < best_cost) {
            best = (int)i;
            best_cost = cost;
        }
    }
    return best;
}

/* The estimate that damps one slow run: the size's cost per epoch times the mean of its
 * epochs and its neighbours' (those in nbr[0..n_nbr-1] whose walk run converged). With no
 * such neighbour, its own cost. */
static double damped(const smart_ctx *c, int i, const int *nbr, size_t n_nbr)
{
    double sum = 0;
    size_t k = 0;
    for (size_t j = 0; j < n_nbr; j++) {
        if (nbr[j] < 0 || nbr[j] >= (int)c->nb || !walk_ok(c, nbr[j]))
            continue;
        sum += (double)c->first[nbr[j]]->epochs;
        k++;
    }
    if (k == 0 || c->first[i]->epochs <= 0)
        return cost_of(c, c->first[i]);
    return epoch_cost(c, c->first[i]) * 0.5 * ((double)c->first[i]->epochs + sum / (double)k);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median ratio of this job's cost per epoch to the prior's on sizes both have run, in
 * *r, and the largest of those ratios over the least in *spread (infinite with fewer than
 * two). Returns false when they share none. */
static bool prior_ratio(const smart_ctx *c, const opt_smart_prior *p, double *r,
                        double *spread)
{
    double ratios[ZBSO_MAX_BATCH_SIZES];
    size_t n_ratios = 0;
    for (size_t i = 0; i < c->nb; i++) {
        if (!done(c->first[i]) || c->first[i]->epochs <= 0 || p->n_runs[i] == 0)
            continue;
        double src = p->epoch_cost_sum[i] / (double)p->n_runs[i];
        if (src > 0)
            ratios[n_ratios++] = epoch_cost(c, c->first[i]) / src;
    }
    if (n_ratios == 0)
        return false;
    qsort(ratios, n_ratios, sizeof ratios[0], cmp_double);
    *spread = n_ratios >= 2 ? ratios[n_ratios - 1] / ratios[0] : INFINITY;
    *r = n_ratios % 2 ? ratios[n_ratios / 2]
                      : 0.5 * (ratios[n_ratios / 2 - 1] + ratios[n_ratios / 2]);
    return true;
}

/* The prior's cost of size i (its cost per epoch times its epochs to the target) times r,
 * in *pred. Returns false when the prior has no converged run of i. */
static bool prior_pred(const opt_smart_prior *p, int i, double r, double *pred)
{
    if (p->n_runs[i] == 0 || p->n_converged[i] == 0)
        return false;
    *pred = r * (p->epoch_cost_sum[i] / (double)p->n_runs[i]) *
            (p->epochs_sum[i] / (double)p->n_converged[i]);
    return true;
}

/* The warm start's jump: the unexplored size with the least predicted cost (prior_pred
 * scaled by prior_ratio), when that is below OPT_SMART_JUMP x the default's cost. -1:
 * none. */
static int jump_pick(const smart_ctx *c, int d, const opt_smart_prior *p)
{
    double r, spread;
    if (!walk_ok(c, d) || !prior_ratio(c, p, &r, &spread))
        return -1;
    double bar = OPT_SMART_JUMP * cost_of(c, c->first[d]);
    int best = -1;
    double best_pred = INFINITY;
    for (size_t i = 0; i < c->nb; i++) {
        double pred;
        if (c->first[i] != NULL || !prior_pred(p, (int)i, r, &pred))
            continue;
        if (pred < bar && pred < best_pred) {
            best = (int)i;
            best_pred = pred;
        }
    }
    return best;
}

/* Sets out to dispatch size i as kind in phase. A Concurrent trial goes to the best size
 * that is not dropped (the default before any converged). Returns 0. */
static int answer(const smart_ctx *c, opt_smart_kind kind, opt_smart_phase phase, int i,
                  opt_smart_decision *out)
{
    out->kind = kind;
    out->phase = phase;
    if (kind == OPT_SMART_CONCURRENT) {
        int b = best_arm(c, true);
        for (size_t k = 0; b < 0 && k < c->nb; k++)  /* every one failed its confirmation */
            if (walk_ok(c, (int)k) && (b < 0 || cost_of(c, c->first[k]) <
                                                    cost_of(c, c->first[b])))
                b = (int)k;
        out->batch_size = b >= 0 ? c->job->spec.batch_sizes[b] : c->job->spec.default_batch_size;
    } else {
        out->batch_size = c->job->spec.batch_sizes[i];
    }
    return 0;
}

/* Answers for the walk's step at size i: explore it when it has no run, a Concurrent
 * trial while its run is out. Returns true when it answered. */
static bool step(smart_ctx *c, int i, opt_smart_phase phase, const zbso_trial *t,
                 opt_smart_decision *out)
{
    if (t == NULL) {
        answer(c, OPT_SMART_EXPLORE, phase, i, out);
        return true;
    }
    if (t->status == ZBSO_TRIAL_DISPATCHED) {
        answer(c, OPT_SMART_CONCURRENT, phase, i, out);
        return true;
    }
    if (t->trial_number > c->last_taken)
        c->last_taken = t->trial_number;
    return false;
}

/* A warm job's walk does not run size i (not run yet) when the prior predicts it past
 * OPT_SMART_PRUNE x the best so far, b, and the prior's shape has held on this job: two or
 * more sizes run by both, their ratios within OPT_SMART_TRUST of each other (another GPU
 * may saturate at another batch size). Replayed later, the walk finds i still unrun and
 * the prior may have changed: it was pruned exactly when the job has an Exploration or MAB
 * trial newer than any the walk has passed (the walk went on without it), and the prior
 * is read only when it has none (the live decision). Returns true to prune. */
static bool prune(smart_ctx *c, int i, int b)
{
    double r, spread, pred;
    if (!c->warm || b < 0)
        return false;
    if (c->last_decided > c->last_taken)
        return true;
    if (c->prior == NULL) {
        c->wants_prior = true;
        return false;
    }
    return prior_ratio(c, c->prior, &r, &spread) && spread <= OPT_SMART_TRUST &&
           prior_pred(c->prior, i, r, &pred) && pred > OPT_SMART_PRUNE * cost_of(c, c->first[b]);
}

/* The estimate of size i on the walk (prev: the size before it), its walk run converged:
 * the lesser of its cost and the damped estimate. When that is past OPT_SMART_HARD x the
 * best cost best_cost but one outlier epoch count could explain it (its cost per epoch
 * times the fewer epochs of i's and prev's runs is within OPT_SMART_DELTA x the best),
 * i is run once more (its second exploration) and the estimate is then the mean of both
 * runs' cost per epoch times the median of the three epoch counts. Returns true when it
 * answered (that run, or a Concurrent trial while it is out); *est is then unset.
 * *converged is false when the second run did not converge. */
static bool estimate(smart_ctx *c, int i, int prev, double best_cost, opt_smart_decision *out,
                     double *est, bool *converged)
{
    const zbso_trial *a = c->first[i];
    double d = damped(c, i, &prev, 1);
    *est = cost_of(c, a) < d ? cost_of(c, a) : d;
    *converged = true;
    if (*est <= OPT_SMART_HARD * best_cost || !walk_ok(c, prev) || a->epochs <= 0)
        return false;
    int64_t e1 = a->epochs, ep = c->first[prev]->epochs;
    if (epoch_cost(c, a) * (double)(e1 < ep ? e1 : ep) > OPT_SMART_DELTA * best_cost)
        return false;
    if (step(c, i, OPT_SMART_WALK, c->second[i], out))
        return true;
    const zbso_trial *z = c->second[i];
    if (!z->converged) {
        *converged = false;
        return false;
    }
    int64_t lo = e1 < z->epochs ? e1 : z->epochs, hi = e1 < z->epochs ? z->epochs : e1;
    int64_t med = ep < lo ? lo : ep > hi ? hi : ep;
    *est = 0.5 * (epoch_cost(c, a) + epoch_cost(c, z)) * (double)med;
    return false;
}

/* Walks one direction from the center (dir -1: down, +1: up). A direction ends at a size
 * that did not converge, one past OPT_SMART_HARD x the best, the second in a row past
 * OPT_SMART_DELTA x the best (one bump, from a size's own slow kernel or slow path, does
 * not end it), or a size a warm job's prior prunes. Returns true when it answered (a size
 * to explore, or a Concurrent trial). */
static bool walk_dir(smart_ctx *c, int center, int dir, opt_smart_decision *out)
{
    int prev = center, bumps = 0;
    for (int i = center + dir; i >= 0 && i < (int)c->nb; i += dir) {
        if (c->first[i] == NULL && prune(c, i, best_arm(c, false)))
            return false;
        if (step(c, i, OPT_SMART_WALK, c->first[i], out))
            return true;
        c->seen[i] = true;
        if (!c->first[i]->converged)
            return false;
        int b = best_arm(c, false);
        if (b == i) {
            bumps = 0;
            prev = i;
            continue;
        }
        double best_cost = cost_of(c, c->first[b]), est;
        bool converged;
        if (estimate(c, i, prev, best_cost, out, &est, &converged))
            return true;
        if (!converged || est > OPT_SMART_HARD * best_cost)
            return false;
        bumps = est > OPT_SMART_DELTA * best_cost ? bumps + 1 : 0;
        if (bumps >= 2)
            return false;
        prev = i;
    }
    return false;
}

double opt_smart_reward(const zbso_job *job, const zbso_trial *t)
{
    double cost = opt_trial_cost(&job->spec, t);
    if (t->converged)
        return -cost;
    return -(cost + (job->has_min_cost ? job->min_cost : cost));
}

/* The window of arm i's rewards: rewards[*from .. *from + *k - 1]. */
static void arm_window(const zbso_job_spec *spec, const size_t *start, size_t i,
                       size_t *from, size_t *k)
{
    *from = start[i];
    *k = start[i + 1] - start[i];
    if (spec->window_size > 0 && *k > (size_t)spec->window_size) {
        *from += *k - (size_t)spec->window_size;
        *k = (size_t)spec->window_size;
    }
}

/* Exploit: Gaussian Thompson sampling over the survivors, one sample per arm in ascending
 * order (the generator's draws as Zeus's), the largest wins (the first on ties). An arm's
 * rewards are those of the job's Succeeded trials of its size (any type) in trial order,
 * the newest window_size when that is set, by opt_smart_reward (unaccepted costs left out):
 * two passes over the trials, whatever the number of arms. The relative variance
 * (variance / mean^2) pooled over the arms with two or more rewards, weighted by their
 * count less one, bounds each arm's own from above and stands in for it when it is 0: an
 * arm of n rewards of sum s and mean m, own relative variance v, has q = 1 / (u x m^2)
 * with u = v when 0 < v < pooled, else pooled; precision p0 + n q and mean
 * (p0 m0 + q s) / precision (the spec's prior p0, m0). Zeus's per-arm variance from two or
 * three runs calls an arm exact when two runs took the same path and wildly uncertain when
 * they did not. With no pooled variance (every arm's rewards equal) or a zero mean, §3.3's
 * fit. */
static int exploit(smart_ctx *c, const zbso_trial *t, size_t n, const bool *survivor,
                   zbso_rng *rng, opt_smart_decision *out, zbso_err *err)
{
    const zbso_job_spec *spec = &c->job->spec;
    size_t start[ZBSO_MAX_BATCH_SIZES + 1] = {0}, fill[ZBSO_MAX_BATCH_SIZES];
    double *rewards = malloc((n > 0 ? n : 1) * sizeof *rewards);
    int *arm_of = malloc((n > 0 ? n : 1) * sizeof *arm_of);
    if (rewards == NULL || arm_of == NULL) {
        free(rewards);
        free(arm_of);
        return err_set(err, ZBSO_ENOMEM, "out of memory fitting the arms of job %s",
                       spec->job_id);
    }
    for (size_t j = 0; j < n; j++) {
        int i = t[j].status == ZBSO_TRIAL_SUCCEEDED ? index_of(c, t[j].batch_size) : -1;
        if (i >= 0 && (!survivor[i] || !opt_cost_accepted(opt_trial_cost(spec, &t[j]))))
            i = -1;
        arm_of[j] = i;
        if (i >= 0)
            start[i + 1]++;
    }
    for (size_t i = 0; i < c->nb; i++) {
        start[i + 1] += start[i];
        fill[i] = start[i];
    }
    for (size_t j = 0; j < n; j++)
        if (arm_of[j] >= 0)
            rewards[fill[arm_of[j]]++] = opt_smart_reward(c->job, &t[j]);
    double rel_sum = 0, rel_w = 0;
    for (size_t i = 0; i < c->nb; i++) {
        size_t from, k;
        arm_window(spec, start, i, &from, &k);
        double m = k >= 2 ? opt_mean(rewards + from, k) : 0;
        if (!survivor[i] || m == 0)
            continue;
        rel_sum += (double)(k - 1) * opt_var(rewards + from, k) / (m * m);
        rel_w += (double)(k - 1);
    }
    double rel = rel_w > 0 ? rel_sum / rel_w : 0;
    out->n_arms = 0;
    for (size_t i = 0; i < c->nb; i++) {
        if (!survivor[i])
            continue;
        size_t from, k;
        arm_window(spec, start, i, &from, &k);
        zbso_arm *a = &out->arms[out->n_arms++];
        double sum = k > 0 ? opt_sum(rewards + from, k) : 0, m = k > 0 ? sum / (double)k : 0;
        if (rel > 0 && m != 0) {
            double own = k >= 2 ? opt_var(rewards + from, k) / (m * m) : 0;
            double q = 1.0 / ((own > 0 && own < rel ? own : rel) * m * m);
            a->batch_size = spec->batch_sizes[i];
            a->num_observations = (int64_t)k;
            a->param_precision = spec->mab_prior_precision + (double)k * q;
            a->param_mean = (spec->mab_prior_precision * spec->mab_prior_mean + q * sum) /
                            a->param_precision;
        } else {
            opt_arm_fit(spec->batch_sizes[i], spec->mab_prior_mean, spec->mab_prior_precision,
                        rewards + from, k, a);
        }
    }
    free(rewards);
    free(arm_of);
    size_t best = 0;
    double best_sample = 0;
    for (size_t i = 0; i < out->n_arms; i++) {
        double sample = rng_normal(rng, out->arms[i].param_mean,
                                   1.0 / sqrt(out->arms[i].param_precision));
        if (i == 0 || sample > best_sample) {
            best = i;
            best_sample = sample;
        }
    }
    out->kind = OPT_SMART_MAB;
    out->phase = OPT_SMART_EXPLOIT;
    out->batch_size = out->arms[best].batch_size;
    return 0;
}

void opt_smart_prior_add(const zbso_job_spec *spec, const zbso_trial *t, size_t n,
                         opt_smart_prior *prior)
{
    for (size_t j = 0; j < n; j++) {
        if (t[j].status != ZBSO_TRIAL_SUCCEEDED || t[j].epochs <= 0)
            continue;
        double cost = opt_trial_cost(spec, &t[j]);
        if (!opt_cost_accepted(cost) || cost == 0)
            continue;
        int i = spec_index(spec, t[j].batch_size);
        if (i < 0)
            continue;
        prior->epoch_cost_sum[i] += cost / (double)t[j].epochs;
        prior->n_runs[i]++;
        if (t[j].converged) {
            prior->epochs_sum[i] += (double)t[j].epochs;
            prior->n_converged[i]++;
        }
    }
}

int opt_smart_next(const zbso_job *job, const zbso_trial *t, size_t n,
                   const opt_smart_prior *prior, zbso_rng *rng, opt_smart_decision *out,
                   zbso_err *err)
{
    smart_ctx *c;
    bool survivor[ZBSO_MAX_BATCH_SIZES] = {false};
    const zbso_trial *jump = NULL;
    int rc = 0;

    memset(out, 0, sizeof *out);
    if (job->spec.n_batch_sizes == 0 || job->spec.n_batch_sizes > ZBSO_MAX_BATCH_SIZES)
        return err_set(err, ZBSO_EINTERNAL, "job %s has %zu batch sizes (must be 1..%d)",
                       job->spec.job_id, job->spec.n_batch_sizes, ZBSO_MAX_BATCH_SIZES);
    if ((c = calloc(1, sizeof *c)) == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory deciding for job %s",
                       job->spec.job_id);
    c->job = job;
    c->nb = job->spec.n_batch_sizes;
    c->prior = prior;
    c->warm = job->spec.warm_start || job->spec.n_prior_jobs > 0;
    for (size_t j = 0; j < n; j++) {
        if (t[j].type != ZBSO_TRIAL_CONCURRENT && t[j].status != ZBSO_TRIAL_FAILED &&
            t[j].trial_number > c->last_decided)
            c->last_decided = t[j].trial_number;
        if (t[j].type != ZBSO_TRIAL_EXPLORATION || t[j].status == ZBSO_TRIAL_FAILED)
            continue;
        int i = index_of(c, t[j].batch_size);
        if (i < 0)
            continue;
        if (c->first[i] == NULL)
            c->first[i] = &t[j];
        else if (c->second[i] == NULL)
            c->second[i] = &t[j];
        if (jump == NULL && t[j].batch_size != job->spec.default_batch_size)
            jump = &t[j];
    }

    int d = index_of(c, job->spec.default_batch_size);
    if (d < 0) {
        rc = err_set(err, ZBSO_EINTERNAL, "job %s's default batch size %lld is not one of "
                     "its batch sizes", job->spec.job_id,
                     (long long)job->spec.default_batch_size);
        goto out;
    }
    out->center = job->spec.default_batch_size;
    if (step(c, d, OPT_SMART_WALK, c->first[d], out))
        goto out;
    c->seen[d] = true;

    /* The warm start: after the default's first run, the predicted best; the walk then
     * starts from the better of the two. */
    int center = d;
    if (job->spec.warm_start || job->spec.n_prior_jobs > 0) {
        if (jump == NULL && prior == NULL) {
            out->wants_prior = true;
        } else if (jump == NULL) {
            int j = jump_pick(c, d, prior);
            if (j >= 0) {
                answer(c, OPT_SMART_EXPLORE, OPT_SMART_WALK, j, out);
                goto out;
            }
        } else {
            int j = index_of(c, jump->batch_size);
            if (step(c, j, OPT_SMART_WALK, jump, out))
                goto out;
            c->seen[j] = true;
            int b = best_arm(c, false);
            if (b >= 0)
                center = b;
        }
    }
    out->center = job->spec.batch_sizes[center];

    if (walk_dir(c, center, -1, out))
        goto out;
    /* The way up is skipped only when the way down found a size at less than half the
     * start's cost: a cost curve may have two valleys (a synthetic GPU had one), and a
     * tighter rule hid the far one. */
    int bd = best_arm(c, false);
    bool skip_up = bd >= 0 && bd < center && walk_ok(c, center) &&
                   cost_of(c, c->first[bd]) < OPT_SMART_SKIP * cost_of(c, c->first[center]);
    if (!skip_up && walk_dir(c, center, +1, out))
        goto out;

    /* Confirm: one more run of every size within gamma x the best (by its cost or by the
     * damped estimate with both neighbours); one that does not converge is dropped. */
    int b = best_arm(c, true);
    if (b < 0) {
        rc = err_set(err, ZBSO_ENOCONV,
                     "No batch size of job %s converged in the smart policy's walk. "
                     "Re-register the job with other batch_sizes (delete it first, or use a "
                     "new job_id).", job->spec.job_id);
        goto out;
    }
    double bar = OPT_SMART_GAMMA * cost_of(c, c->first[b]);
    bool cand[ZBSO_MAX_BATCH_SIZES] = {false}, any = false;
    for (int i = 0; i < (int)c->nb; i++) {
        if (!walk_ok(c, i))
            continue;
        int nbr[2] = {i - 1, i + 1};
        if (cost_of(c, c->first[i]) > bar && damped(c, i, nbr, 2) > bar)
            continue;
        cand[i] = true;
        if (step(c, i, OPT_SMART_CONFIRM, c->second[i], out))
            goto out;
        /* Failed so far: a Concurrent trial avoids it; dropped once the phase ends. */
        c->dropped[i] = !c->second[i]->converged;
        any = any || c->second[i]->converged;
    }
    for (size_t i = 0; i < c->nb; i++) {
        /* When every confirmation failed, none is dropped: all stay arms. */
        if (!any)
            c->dropped[i] = false;
        survivor[i] = cand[i] && !c->dropped[i];
        if (c->dropped[i])
            out->dropped[out->n_dropped++] = job->spec.batch_sizes[i];
    }
    rc = exploit(c, t, n, survivor, rng, out, err);
out:
    if (rc == 0 && c->wants_prior)
        out->wants_prior = true;
    free(c);
    return rc;
}

void opt_smart_min_cost(const zbso_job_spec *spec, const zbso_trial *t, size_t n, bool *has,
                        double *min_cost, int64_t *batch_size)
{
    double sum[ZBSO_MAX_BATCH_SIZES] = {0};
    int64_t cnt[ZBSO_MAX_BATCH_SIZES] = {0};
    size_t nb = spec->n_batch_sizes < ZBSO_MAX_BATCH_SIZES ? spec->n_batch_sizes
                                                           : ZBSO_MAX_BATCH_SIZES;
    *has = false;
    for (size_t j = 0; j < n; j++) {
        if (t[j].status != ZBSO_TRIAL_SUCCEEDED || !t[j].converged)
            continue;
        double cost = opt_trial_cost(spec, &t[j]);
        if (!opt_cost_accepted(cost))
            continue;
        int i = spec_index(spec, t[j].batch_size);
        if (i >= 0) {
            sum[i] += cost;
            cnt[i]++;
        }
    }
    for (size_t i = 0; i < nb; i++) {
        if (cnt[i] == 0)
            continue;
        double mean = sum[i] / (double)cnt[i];
        if (!*has || mean < *min_cost) {
            *has = true;
            *min_cost = mean;
            *batch_size = spec->batch_sizes[i];
        }
    }
}
