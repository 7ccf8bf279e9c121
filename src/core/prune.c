/* prune.c: the pruning stage's next step (SPEC §3.1, seed 002's PruningExploreManager) as a
 * pure function of the job and its explorations, and the walk of a round it is made of
 * (pruneInt.h, shared with rounds.c). Dispatches nothing itself. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/optimizer.h"
#include "core/pruneInt.h"

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

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Sets w's list to list[0..nb-1] (any order; sorted here, in place) around default d. */
static void set_list(prune_walk *w, int64_t *list, size_t nb, int64_t d)
{
    qsort(list, nb, sizeof list[0], cmp_i64);
    w->default_bs = d;
    w->n_order = 0;
    for (size_t i = nb; i-- > 0;) {
        if (list[i] <= d)
            w->order[w->n_order++] = list[i];
    }
    w->n_down = w->n_order;
    for (size_t i = 0; i < nb; i++) {
        if (list[i] > d)
            w->order[w->n_order++] = list[i];
    }
}

int prune_walk_start(const zbso_job *job, const zbso_trial *e, size_t n, prune_walk *w,
                     zbso_err *err)
{
    int64_t b[ZBSO_MAX_BATCH_SIZES];
    size_t nb = job->spec.n_batch_sizes;

    memset(w, 0, sizeof *w);
    for (size_t i = 0; i < n; i++) {
        if (e[i].type != ZBSO_TRIAL_EXPLORATION || e[i].status == ZBSO_TRIAL_FAILED)
            return err_set(err, ZBSO_EINTERNAL,
                           "trial %lld passed to pruning is a %s %s trial, not a live "
                           "exploration", (long long)e[i].trial_number,
                           zbso_trial_status_name(e[i].status),
                           zbso_trial_type_name(e[i].type));
    }
    if (nb > ZBSO_MAX_BATCH_SIZES)
        return err_set(err, ZBSO_EINTERNAL, "job %s has %zu batch sizes, over the maximum %d",
                       job->spec.job_id, nb, ZBSO_MAX_BATCH_SIZES);
    memcpy(b, job->spec.batch_sizes, nb * sizeof b[0]);
    set_list(w, b, nb, job->spec.default_batch_size);
    return 0;
}

/* Walks order[from..to-1]: stops at the first batch size with no round-r exploration or a
 * Dispatched one (returns false: the whole walk stops) or a non-converged one (returns
 * true: this part ends). Converged ones are appended to conv and the cheapest tracked
 * (first on ties, like Zeus's strict `<`). */
static bool walk_part(const zbso_job *job, const zbso_trial *e, size_t n, prune_walk *w,
                      size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        int64_t bs = w->order[i];
        const zbso_trial *t = exploration_of_round(e, n, bs, w->round);
        if (t == NULL || t->status == ZBSO_TRIAL_DISPATCHED) {
            w->stop = t == NULL ? PRUNE_STOP_UNEXPLORED : PRUNE_STOP_DISPATCHED;
            w->stop_bs = bs;
            return false;
        }
        w->explored[w->n_explored++] = bs;
        if (!t->converged)
            break;
        w->conv[w->n_conv++] = bs;
        double cost = opt_trial_cost(&job->spec, t);
        if (cost < w->min_cost) {
            w->min_cost = cost;
            w->min_bs = bs;
        }
    }
    return true;
}

void prune_walk_round(const zbso_job *job, const zbso_trial *e, size_t n, prune_walk *w)
{
    w->n_explored = 0;
    w->n_conv = 0;
    w->stop = PRUNE_STOP_END;
    w->stop_bs = 0;
    w->min_cost = INFINITY;
    w->min_bs = 0;
    if (walk_part(job, e, n, w, 0, w->n_down))
        walk_part(job, e, n, w, w->n_down, w->n_order);
}

void prune_walk_next(prune_walk *w)
{
    int64_t b[ZBSO_MAX_BATCH_SIZES];
    memcpy(b, w->conv, w->n_conv * sizeof b[0]);
    set_list(w, b, w->n_conv, w->min_bs);
    w->round++;
}

int opt_prune_next(const zbso_job *job, const zbso_trial *explorations, size_t n,
                   opt_prune_decision *out, zbso_err *err)
{
    prune_walk w;
    int rc;

    memset(out, 0, sizeof *out);
    if ((rc = prune_walk_start(job, explorations, n, &w, err)) < 0)
        return rc;
    for (; w.round < job->spec.num_pruning_rounds; prune_walk_next(&w)) {
        prune_walk_round(job, explorations, n, &w);
        out->round = w.round;
        out->round_default = w.default_bs;
        if (w.stop == PRUNE_STOP_UNEXPLORED) {
            out->kind = OPT_PRUNE_EXPLORE;
            out->batch_size = w.stop_bs;
            return 0;
        }
        if (w.stop == PRUNE_STOP_DISPATCHED) {
            out->kind = OPT_PRUNE_CONCURRENT;
            out->batch_size = job->min_cost_batch_size;
            return 0;
        }
        if (w.n_conv == 0)
            return err_set(err, ZBSO_ENOCONV,
                           "No batch size of job %s converged in pruning round %lld. "
                           "Re-register the job with other batch_sizes (delete it first, or "
                           "use a new job_id).",
                           job->spec.job_id, (long long)w.round);
    }

    /* The survivors: the last round's list, ascending (order holds it down then up). */
    out->kind = OPT_PRUNE_TO_MAB;
    out->round = job->spec.num_pruning_rounds;
    out->round_default = w.default_bs;
    for (size_t i = 0; i < w.n_down; i++)
        out->survivors[i] = w.order[w.n_down - 1 - i];
    memcpy(out->survivors + w.n_down, w.order + w.n_down,
           (w.n_order - w.n_down) * sizeof w.order[0]);
    out->n_survivors = w.n_order;
    return 0;
}
