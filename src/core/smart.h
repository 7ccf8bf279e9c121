/* smart.h: zbso's own batch size policy (issue 21, SPEC "The smart policy"): a walk from
 * the default that stops past the cost valley, one confirmation run per near-best size,
 * then Thompson sampling with stopped runs charged as retried. Pure, like the rest of the
 * core: the decision is a function of the job, its trials and (warm start) a prior the
 * caller builds from other jobs' trials. No I/O, clock or entropy. */
#ifndef ZBSO_CORE_SMART_H
#define ZBSO_CORE_SMART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/optimizer.h"
#include "core/types.h"
#include "util/err.h"

/* The policy's constants (SPEC "The smart policy" says why each). */
#define OPT_SMART_DELTA 1.2   /* past delta x the best cost: a bump (the second in a row
                               * ends a walk direction) */
#define OPT_SMART_HARD 1.25   /* past hard x the best: the direction ends at once */
#define OPT_SMART_SKIP 0.5    /* no walk up when the way down found < skip x the start */
#define OPT_SMART_GAMMA 1.2   /* sizes within gamma x the best get a confirmation run */
#define OPT_SMART_JUMP 0.97   /* warm start: jump when predicted < jump x the default */
#define OPT_SMART_PRUNE 1.5   /* warm start: the walk does not run a size predicted past
                               * prune x the best, */
#define OPT_SMART_TRUST 1.25  /* when the ratios to the prior on shared sizes are within
                               * trust of each other */

typedef enum opt_smart_kind {
    OPT_SMART_EXPLORE = 0,    /* an Exploration trial of batch_size (walk or confirm) */
    OPT_SMART_CONCURRENT = 1, /* an exploration is outstanding: Concurrent at batch_size */
    OPT_SMART_MAB = 2,        /* exploit: a MAB trial of batch_size, chosen by sampling */
} opt_smart_kind;

typedef enum opt_smart_phase {
    OPT_SMART_WALK = 0,       /* the default, the warm start's jump, the walk */
    OPT_SMART_CONFIRM = 1,    /* one more run of each size within gamma x the best */
    OPT_SMART_EXPLOIT = 2,    /* Thompson sampling over the survivors */
} opt_smart_phase;

/* What other jobs of the same training measured (the warm start's prior), per batch size
 * of this job: sums over those jobs' Succeeded trials with an accepted, non-zero cost and
 * at least one epoch, costs under this job's eta and max_power. Zero-initialize, then add
 * trials with opt_smart_prior_add. */
typedef struct opt_smart_prior {
    double epoch_cost_sum[ZBSO_MAX_BATCH_SIZES]; /* sum of cost / epochs */
    int64_t n_runs[ZBSO_MAX_BATCH_SIZES];        /* trials in epoch_cost_sum */
    double epochs_sum[ZBSO_MAX_BATCH_SIZES];     /* sum of epochs of converged trials */
    int64_t n_converged[ZBSO_MAX_BATCH_SIZES];   /* trials in epochs_sum */
} opt_smart_prior;

/* Adds another job's trials t[0..n-1] (any status; only Succeeded ones with a cost
 * opt_smart_prior_add accepts count) to the prior of the job with spec, by batch size
 * (sizes spec does not have are left out). Cannot fail. */
void opt_smart_prior_add(const zbso_job_spec *spec, const zbso_trial *t, size_t n,
                         opt_smart_prior *prior);

typedef struct opt_smart_decision {
    opt_smart_kind kind;
    opt_smart_phase phase;
    int64_t batch_size;       /* the batch size to dispatch */
    int64_t center;           /* the walk's start: the default, or the best of the default
                               * and the warm start's jump */
    /* true when the decision would read the prior and was given none: call again with
     * the prior (a warm job's jump after the default's first run, and its walk's steps to
     * sizes it has not run). */
    bool wants_prior;
    /* EXPLOIT: the survivors' arms (ascending), as fitted for this choice. */
    zbso_arm arms[ZBSO_MAX_BATCH_SIZES];
    size_t n_arms;
    /* EXPLOIT: the sizes a confirmation run dropped (none when every confirmation
     * failed: then all candidates stay arms): never dispatched again. Ascending. */
    int64_t dropped[ZBSO_MAX_BATCH_SIZES];
    size_t n_dropped;
} opt_smart_decision;

/* Decides the next trial of job under the smart policy (SPEC "The smart policy") from its
 * trials t[0..n-1] in ascending trial-number order (any type and status; Failed ones are
 * ignored), with prior (NULL: none; used only by a job with warm_start or prior_jobs). For
 * EXPLOIT it samples with rng, which it advances (the job's generator: store it back);
 * otherwise rng is untouched. Returns 0 with *out filled; ZBSO_ENOCONV when the walk ended
 * with no batch size converged (the message says to re-register); ZBSO_ENOMEM;
 * ZBSO_EINTERNAL when the job has more than ZBSO_MAX_BATCH_SIZES sizes. */
int opt_smart_next(const zbso_job *job, const zbso_trial *t, size_t n,
                   const opt_smart_prior *prior, zbso_rng *rng, opt_smart_decision *out,
                   zbso_err *err);

/* The reward a MAB arm of the smart policy learns from Succeeded trial t: -cost when it
 * converged; when it did not (the cost bound stopped it, and the recurrence will retry),
 * -(cost + min_cost), min_cost being the job's least converged cost (the cost alone when
 * the job has none). */
double opt_smart_reward(const zbso_job *job, const zbso_trial *t);

/* The smart policy's early-stopping base, stored as the job's min_cost (the bound is
 * beta x min_cost, SPEC §3.2): the least, over batch sizes, of the mean cost of the size's
 * converged Succeeded trials among t[0..n-1] (accepted costs only; a plain sum in trial
 * order over the count); the smaller size on ties. Zeus's least single cost falls with
 * every lucky run, so that under run-to-run noise ever more runs are stopped; a mean does
 * not. *has is false when no trial converged. Cannot fail. */
void opt_smart_min_cost(const zbso_job_spec *spec, const zbso_trial *t, size_t n, bool *has,
                        double *min_cost, int64_t *batch_size);

#endif
