/* prune.c: the pruning stage's next step (SPEC §3.1, seed 002's PruningExploreManager) as a
 * pure function of the job and its explorations. Dispatches nothing itself. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/optimizer.h"

/* Returns the round-r exploration of batch size bs among e[0..n-1], or NULL. Linear in n:
 * n is at most rounds * batch sizes, and this runs once per request. */
static const zbso_trial *exploration_of_round(const zbso_trial *e, size_t n, int64_t bs,
                                              int64_t round)
{
    int64_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].batch_size != bs)
            continue;
        if (seen == round)
            return &e[i];
        seen++;
    }
    return NULL;
}

typedef enum walk_result { WALK_DONE = 0, WALK_DISPATCH = 1 } walk_result;

/* Walks list[0..len-1] for round `round`: stops at the first batch size with no round-r
 * exploration (EXPLORE), a Dispatched one (CONCURRENT) or a non-converged one (end of walk).
 * Converged ones are appended to conv and the cheapest tracked in *min_cost and *min_bs (first
 * on ties, like Zeus's strict `<`). Returns WALK_DISPATCH when *out is decided. */
static walk_result walk(const zbso_job *job, const zbso_trial *e, size_t n, int64_t round,
                        const int64_t *list, size_t len, int64_t *conv, size_t *n_conv,
                        double *min_cost, int64_t *min_bs, opt_prune_decision *out)
{
    for (size_t i = 0; i < len; i++) {
        const zbso_trial *t = exploration_of_round(e, n, list[i], round);
        if (t == NULL) {
            out->kind = OPT_PRUNE_EXPLORE;
            out->batch_size = list[i];
            return WALK_DISPATCH;
        }
        if (t->status == ZBSO_TRIAL_DISPATCHED) {
            out->kind = OPT_PRUNE_CONCURRENT;
            out->batch_size = job->min_cost_batch_size;
            return WALK_DISPATCH;
        }
        if (!t->converged)
            break;
        conv[(*n_conv)++] = list[i];
        double cost = opt_trial_cost(&job->spec, t);
        if (cost < *min_cost) {
            *min_cost = cost;
            *min_bs = list[i];
        }
    }
    return WALK_DONE;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int opt_prune_next(const zbso_job *job, const zbso_trial *explorations, size_t n,
                   opt_prune_decision *out, zbso_err *err)
{
    int64_t b[ZBSO_MAX_BATCH_SIZES];      /* the round's list, ascending */
    int64_t conv[ZBSO_MAX_BATCH_SIZES];   /* converged this round, in walk order */
    int64_t down[ZBSO_MAX_BATCH_SIZES], up[ZBSO_MAX_BATCH_SIZES];
    size_t nb = job->spec.n_batch_sizes;
    int64_t d = job->spec.default_batch_size;
    int rc = 0;

    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        if (explorations[i].type != ZBSO_TRIAL_EXPLORATION ||
            explorations[i].status == ZBSO_TRIAL_FAILED) {
            rc = err_set(err, ZBSO_EINTERNAL,
                         "trial %lld passed to pruning is a %s %s trial, not a live exploration",
                         (long long)explorations[i].trial_number,
                         zbso_trial_status_name(explorations[i].status),
                         zbso_trial_type_name(explorations[i].type));
            goto out;
        }
    }
    if (nb > ZBSO_MAX_BATCH_SIZES) {
        rc = err_set(err, ZBSO_EINTERNAL, "job %s has %zu batch sizes, over the maximum %d",
                     job->spec.job_id, nb, ZBSO_MAX_BATCH_SIZES);
        goto out;
    }
    memcpy(b, job->spec.batch_sizes, nb * sizeof b[0]);
    qsort(b, nb, sizeof b[0], cmp_i64);

    for (int64_t round = 0; round < job->spec.num_pruning_rounds; round++) {
        size_t n_down = 0, n_up = 0, n_conv = 0;
        double min_cost = INFINITY;
        int64_t min_bs = 0;

        for (size_t i = nb; i-- > 0;) {
            if (b[i] <= d)
                down[n_down++] = b[i];
        }
        for (size_t i = 0; i < nb; i++) {
            if (b[i] > d)
                up[n_up++] = b[i];
        }
        out->round = round;
        out->round_default = d;
        if (walk(job, explorations, n, round, down, n_down, conv, &n_conv, &min_cost, &min_bs,
                 out) == WALK_DISPATCH)
            goto out;
        if (walk(job, explorations, n, round, up, n_up, conv, &n_conv, &min_cost, &min_bs,
                 out) == WALK_DISPATCH)
            goto out;
        if (n_conv == 0) {
            rc = err_set(err, ZBSO_ENOCONV,
                         "No batch size of job %s converged in pruning round %lld. "
                         "Re-register the job with other batch_sizes (delete it first, or use "
                         "a new job_id).",
                         job->spec.job_id, (long long)round);
            goto out;
        }
        memcpy(b, conv, n_conv * sizeof b[0]);
        nb = n_conv;
        qsort(b, nb, sizeof b[0], cmp_i64);
        d = min_bs;
    }

    out->kind = OPT_PRUNE_TO_MAB;
    out->round = job->spec.num_pruning_rounds;
    out->round_default = d;
    memcpy(out->survivors, b, nb * sizeof b[0]);
    out->n_survivors = nb;
out:
    return rc;
}
