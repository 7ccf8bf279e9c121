/* optimizer.h: the pure decisions of the batch size optimizer (SPEC §3): cost, numpy-exact
 * statistics, pruning, Gaussian Thompson sampling arms and the report decision. No I/O,
 * clock or entropy: the caller passes in the job, its trials, the time and the generator. */
#ifndef ZBSO_CORE_OPTIMIZER_H
#define ZBSO_CORE_OPTIMIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"
#include "core/types.h"
#include "util/err.h"

/* ---- cost and statistics (stats.c) ---- */

/* Zeus's zeus_cost: eta * energy + (1 - eta) * max_power * time, evaluated left to right
 * exactly as Python does, so costs match Zeus bit for bit. */
double opt_cost(double energy_j, double time_s, double eta, double max_power_w);

/* The cost of a Succeeded trial under the job's eta and max_power. */
double opt_trial_cost(const zbso_job_spec *spec, const zbso_trial *trial);

/* The costs zbso accepts (beyond Zeus; docs/DESIGN.md, "Bad values"): 0, or OPT_COST_MIN
 * to OPT_COST_MAX joules; and the prior: |mab_prior_mean| and mab_prior_precision at most
 * OPT_PRIOR_MAX. With at most OPT_FIT_MAX_REWARDS rewards whose costs are accepted, every
 * sum, mean and variance of an arm fit and the fitted arm's mean are finite, and its
 * precision is positive, infinite only when the variance is 0 (Zeus's exact arm); stats.c
 * gives the derivation. A cost outside the range (NaN and infinities included) is refused
 * at the boundary (opt_report_decide) and skipped when fitting from stored trials
 * (opt_arm_fit_trials, opt_arm_refit). */
#define OPT_COST_MIN 1e-100
#define OPT_COST_MAX 1e150
#define OPT_PRIOR_MAX 1e150
#define OPT_FIT_MAX_REWARDS 1048576

/* True when cost is 0 or in [OPT_COST_MIN, OPT_COST_MAX]; false for NaN. */
bool opt_cost_accepted(double cost);

/* numpy's pairwise summation of a float64 array (np.sum); 0.0 for n = 0. */
double opt_sum(const double *a, size_t n);

/* np.mean: opt_sum / n. n must be >= 1. */
double opt_mean(const double *a, size_t n);

/* np.var (population variance, ddof 0) with numpy's summation. n must be >= 1. */
double opt_var(const double *a, size_t n);

/* Writes d as Python's repr() does (shortest text that reads back to d: "0.1", "800.0",
 * "1e+16", "1.5e-05", "inf", "nan") into buf, which holds at least OPT_FMT_DOUBLE_MAX
 * bytes; returns buf. For messages that name a value, as Zeus's do. */
#define OPT_FMT_DOUBLE_MAX 40
char *opt_fmt_double(char *buf, double d);

/* ---- pruning (prune.c) ---- */

typedef enum opt_prune_kind {
    OPT_PRUNE_EXPLORE = 0,    /* dispatch an Exploration trial with batch_size */
    OPT_PRUNE_CONCURRENT = 1, /* an exploration is outstanding: Concurrent trial with batch_size */
    OPT_PRUNE_TO_MAB = 2,     /* pruning is over: arms from survivors, then MAB */
} opt_prune_kind;

typedef struct opt_prune_decision {
    opt_prune_kind kind;
    int64_t batch_size;       /* EXPLORE, CONCURRENT: the batch size to dispatch */
    int64_t round_default;    /* the default of the round decided in (exp_default_batch_size) */
    int64_t round;            /* the round decided in; num_pruning_rounds for TO_MAB */
    int64_t survivors[ZBSO_MAX_BATCH_SIZES]; /* TO_MAB: ascending */
    size_t n_survivors;
} opt_prune_decision;

/* Decides the next pruning step (SPEC §3.1) from the job and its Exploration trials that
 * are not Failed, in trial-number order (explorations of batch sizes not in the spec are
 * ignored). Returns 0 with *out filled; ZBSO_ENOCONV when a round ends with no converged
 * batch size (message says to re-register with other batch sizes); ZBSO_EINTERNAL when a
 * trial passed in is Failed or not an Exploration. */
int opt_prune_next(const zbso_job *job, const zbso_trial *explorations, size_t n,
                   opt_prune_decision *out, zbso_err *err);

/* ---- bandit (bandit.c) ---- */

/* Fits the arm of batch_size from rewards r[0..n-1] (reward = -cost) and the prior
 * (SPEC §3.3). n = 0 gives the prior with 0 observations. Cannot fail. */
void opt_arm_fit(int64_t batch_size, double prior_mean, double prior_precision,
                 const double *rewards, size_t n, zbso_arm *out);

/* The measurements an arm fit from stored trials left out because their cost is not
 * accepted (opt_cost_accepted): such rows can only have been written by an older zbso,
 * which took any finite time and energy. The caller logs them. */
typedef struct opt_fit_skips {
    size_t n;                 /* how many were left out */
    int64_t trial_number;     /* the first one left out (when n > 0) */
    double cost;              /* its cost */
} opt_fit_skips;

/* Fits the arm of batch_size from trials[0..n-1] in the order given (Succeeded trials of
 * that batch size), reward = -cost under the spec's eta and max_power, with the spec's
 * prior: how arms are created at the end of pruning, from every Succeeded Exploration of
 * the batch size in trial-number order (Zeus's construct_mab; window_size does not apply).
 * Trials whose cost is not accepted are left out and counted in *skips. rewards is scratch
 * space for n doubles and holds on return the rewards fitted, in order, in
 * rewards[0..out->num_observations-1]; n must be at most OPT_FIT_MAX_REWARDS. Cannot
 * fail. */
void opt_arm_fit_trials(const zbso_job_spec *spec, int64_t batch_size,
                        const zbso_trial *trials, size_t n, double *rewards, zbso_arm *out,
                        opt_fit_skips *skips);

/* Refits the arm of reported->batch_size after a report ended trial `reported`, exactly
 * as Zeus's GaussianTS.report does (SPEC §3.2): from others, the batch size's Succeeded
 * trials in any order (an entry with the reported trial's number is ignored, so the list
 * may be read before or after the reported trial is stored), take the newest window_size
 * by trial number (all of them when window_size is 0), newest first; when that gave
 * window_size of them, drop the oldest and turn the rest to ascending order; then append
 * the reported trial. The rewards, in that order, are fitted as opt_arm_fit_trials does
 * (unaccepted costs left out and counted in *skips). Reorders others. rewards is scratch
 * space for n + 1 doubles and holds on return the rewards fitted, in order; n must be below
 * OPT_FIT_MAX_REWARDS. Cannot fail. */
void opt_arm_refit(const zbso_job_spec *spec, const zbso_trial *reported, zbso_trial *others,
                   size_t n, double *rewards, zbso_arm *out, opt_fit_skips *skips);

/* The MAB choice (SPEC §3.1): a random permutation of the arms (ascending by batch size);
 * the first with num_observations < num_explorations wins; else one normal sample per arm
 * in ascending order, the largest (first on ties) wins. Advances rng. Returns 0 with
 * *batch_size set; ZBSO_EINTERNAL when n is 0 or over ZBSO_MAX_BATCH_SIZES. */
int opt_mab_choose(zbso_rng *rng, const zbso_arm *arms, size_t n, int64_t num_explorations,
                   int64_t *batch_size, zbso_err *err);

/* ---- report (report.c) ---- */

typedef enum opt_report_kind {
    OPT_REPORT_CONTINUE = 0, /* keep training; store only the lease when renew_lease */
    OPT_REPORT_END = 1,      /* the trial ends: store trial, maybe the min cost, refit arm */
    OPT_REPORT_REPEATED = 2, /* the trial already has a result: change nothing */
} opt_report_kind;

typedef struct opt_report_decision {
    opt_report_kind kind;
    bool renew_lease;         /* CONTINUE: trial.lease_renewed_at must be rewritten */
    bool update_min_cost;     /* END: min_cost/min_cost_batch_size become this trial's */
    double cost;              /* the reported cost (CONTINUE, END) */
    zbso_trial trial;         /* the trial as it must be stored (CONTINUE with renew, END) */
    zbso_report_response response;
} opt_report_decision;

/* Decides a report (SPEC §3.2) for trial, which the caller found by the result's job id
 * and trial number, at unix time now. Returns 0 with *out filled; ZBSO_ENOTFOUND when the
 * trial's batch size differs from the result's; ZBSO_ECONFLICT when the trial is Failed;
 * ZBSO_EINVAL at body.time or body.energy (whichever term of the cost is larger) when the
 * trial has no result yet and the result's cost is not accepted (opt_cost_accepted). */
int opt_report_decide(const zbso_job *job, const zbso_trial *trial,
                      const zbso_training_result *result, double now,
                      opt_report_decision *out, zbso_err *err);

/* The message of a continuing report, as Zeus words it. */
#define OPT_MSG_CONTINUE "Stop condition not met, keep training"

/* ---- inspection (rounds.c, savings.c): what the optimizer learned and saved (SPEC §5) ---- */

/* One pruning round as it happened, replayed from the job's explorations with the rules
 * of opt_prune_next (the same walk: pruneInt.h). Batch size lists are in the order of the
 * round's walk (down from the round's default, then up). */
typedef struct opt_prune_round {
    int64_t round;                                /* 0, 1, ... */
    int64_t default_batch_size;                   /* the round's default */
    int64_t explored[ZBSO_MAX_BATCH_SIZES];       /* reached by the walk with a result
                                                   * stored (a Dispatched one is not) */
    size_t n_explored;
    int64_t converged[ZBSO_MAX_BATCH_SIZES];      /* of those, converged */
    size_t n_converged;
    int64_t pruned[ZBSO_MAX_BATCH_SIZES];         /* complete: the round's list less the
                                                   * converged; else the explored less the
                                                   * converged (decided so far) */
    size_t n_pruned;
    bool complete;                                /* the walk of this round has ended */
} opt_prune_round;

/* Replays pruning for job from its Exploration trials that are not Failed, in trial-number
 * order (as opt_prune_next takes them), into out[0..*n_out-1], at most cap rounds: round 0
 * up to the round pruning is in, which is the last one listed and incomplete (possibly
 * with nothing explored yet, right after the round before completed); when every round is
 * complete, all num_pruning_rounds of them. A complete round with nothing converged ends
 * the list (pruning fails there: opt_prune_next answers ZBSO_ENOCONV) and shows its whole
 * list pruned. Returns 0 (*n_out may be 0 when cap or num_pruning_rounds is 0), or what
 * opt_prune_next returns for these trials other than ZBSO_ENOCONV (ZBSO_EINTERNAL). */
int opt_prune_rounds(const zbso_job *job, const zbso_trial *explorations, size_t n,
                     opt_prune_round *out, size_t cap, size_t *n_out, zbso_err *err);

/* Energy, time and cost of a job against always training at its default batch size
 * (SPEC §5, "Savings", defines each figure). Money-free: cost is Zeus's cost (J). Every sum
 * is a plain left-to-right sum in trial-number order starting from 0.0 (not opt_sum's
 * pairwise one), every mean that sum divided by the count, so a script recomputes the
 * figures bit for bit from the trials. */
typedef struct opt_totals {
    double energy;                                /* J */
    double time;                                  /* s */
    double cost;                                  /* sum or mean of opt_trial_cost */
} opt_totals;

typedef struct opt_savings {
    /* Trials with a result: Succeeded (converged or not) with an accepted cost
     * (opt_cost_accepted). */
    int64_t finished;
    /* Failed trials, and Succeeded ones whose cost is not accepted (rows an older zbso
     * stored, docs/DESIGN.md "Bad values"): no measurement, not in any figure below. */
    int64_t failed;
    opt_totals spent;          /* summed over the finished trials */
    int64_t default_batch_size;
    int64_t default_runs;      /* converged finished trials of the default batch size */
    bool has_baseline;         /* default_runs > 0; the fields below it are 0 otherwise,
                                * except has_best, best_batch_size, best_mean_cost, regret */
    opt_totals default_mean;   /* mean of those runs: the expected cost of one recurrence */
    opt_totals saved;          /* finished * default_mean - spent, per component */
    /* The smallest k (1-based, among the finished trials in trial-number order) such that
     * for every j from k to finished the cumulative cost of the first j finished trials is
     * at most j * default_mean.cost; 0 when the last one (j = finished) is above it: not
     * broken even (yet). */
    int64_t break_even;
    bool has_best;             /* some batch size of the spec has a converged finished
                                * trial */
    int64_t best_batch_size;   /* the lowest mean cost of its converged finished trials
                                * (smallest batch size on ties) */
    double best_mean_cost;
    double regret;             /* spent.cost - finished * best_mean_cost; negative when
                                * early-stopped trials cost less than the best's runs */
} opt_savings;

/* Computes the savings of a job with spec from its trials, in ascending trial-number order
 * (any status: Dispatched ones count in no figure). Pure; cannot fail. */
void opt_savings_compute(const zbso_job_spec *spec, const zbso_trial *trials, size_t n,
                         opt_savings *out);

#endif
