/* sim.h: trace-driven simulation of recurring jobs (SPEC §8): the Zeus trace readers,
 * workloads, the arithmetic of one simulated run, the recurrence driver over the real
 * optimizer (service.h on a memory:// store), the thread sweep and the output files. No
 * command-line parsing here and no global state: src/cli/cmd_simulate.c owns the process. */
#ifndef ZBSO_SIM_SIM_H
#define ZBSO_SIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/optimizer.h"
#include "core/types.h"
#include "util/err.h"

#define SIM_NAME_MAX 64          /* bytes of a dataset/network/optimizer name, with NUL */
#define SIM_LINE_MAX 1024        /* bytes of one trace line, newline included */
#define SIM_MAX_ROWS 1000000     /* data rows of one trace file */
/* Bytes of a trace file: a header and SIM_MAX_ROWS rows of at most SIM_LINE_MAX bytes. */
#define SIM_TRACE_MAX_BYTES ((SIM_MAX_ROWS + 1LL) * SIM_LINE_MAX)
#define SIM_MAX_PL 32            /* power limits of one batch size */
#define SIM_MAX_RECURRENCES 100000
#define SIM_MAX_SEEDS 100000

/* ---- traces (trace.c) ---- */

/* One line of a power trace: dataset,network,batch_size,optimizer,power_limit,
 * time_per_epoch,average_power. */
typedef struct sim_power_row {
    char dataset[SIM_NAME_MAX], network[SIM_NAME_MAX], optimizer[SIM_NAME_MAX];
    int64_t batch_size;
    int64_t power_limit_w;
    double time_per_epoch_s;
    double average_power_w;
} sim_power_row;

/* One line of a train trace: dataset,network,batch_size,optimizer,learning_rate,run,
 * target_metric,target_epoch. target_epoch "nan" (never reached) is stored as 0. */
typedef struct sim_train_row {
    char dataset[SIM_NAME_MAX], network[SIM_NAME_MAX], optimizer[SIM_NAME_MAX];
    int64_t batch_size;
    double learning_rate;
    int64_t run;
    double target_metric;
    int64_t target_epoch;
} sim_train_row;

typedef struct sim_power_trace {
    sim_power_row *rows;
    size_t n;
} sim_power_trace;

typedef struct sim_train_trace {
    sim_train_row *rows;
    size_t n;
} sim_train_trace;

/* Reads a power trace (header line exactly as above, then one row per line, every line
 * ended by a newline). Each value is checked: names non-empty and short, batch size and
 * power limit positive integers, time and power positive finite numbers, no duplicate
 * (dataset, network, batch size, optimizer, power limit). On success *out owns the rows
 * (sim_power_trace_free). On failure returns ZBSO_EIO (cannot read), ZBSO_EINVAL (err
 * says "FILE:LINE: ..." naming the value) or ZBSO_ENOMEM, and *out is empty. */
int sim_power_trace_load(const char *path, sim_power_trace *out, zbso_err *err);

/* The same for a train trace; learning_rate and target_metric finite numbers, run a
 * positive integer, target_epoch a positive integer or "nan". */
int sim_train_trace_load(const char *path, sim_train_trace *out, zbso_err *err);

/* The parsers under the two loaders: the same rules and results on len bytes of trace
 * text in memory (no NUL needed; a NUL byte in a line is refused). name stands for the
 * file in messages ("NAME:LINE: ..."). The loaders read the whole file (ZBSO_EINVAL past
 * SIM_TRACE_MAX_BYTES) and call these; the fuzz target calls them directly. */
int sim_power_trace_parse(const char *name, const char *buf, size_t len,
                          sim_power_trace *out, zbso_err *err);
int sim_train_trace_parse(const char *name, const char *buf, size_t len,
                          sim_train_trace *out, zbso_err *err);

/* Reads an arrivals file (--arrivals FILE): one submit time per line, seconds from the
 * job's start, >= 0 and non-decreasing, at most SIM_MAX_RECURRENCES; a first line that is
 * one name is a header; CRLF is accepted. On success *times (malloc'd, the caller frees)
 * holds *n >= 1 of them. ZBSO_EINVAL with "NAME:LINE: ..." naming the value, ZBSO_EIO,
 * ZBSO_ENOMEM. */
int sim_arrivals_load(const char *path, double **times, size_t *n, zbso_err *err);
int sim_arrivals_parse(const char *name, const char *buf, size_t len, double **times,
                       size_t *n, zbso_err *err);

void sim_power_trace_free(sim_power_trace *t);  /* NULL or empty: no-op */
void sim_train_trace_free(sim_train_trace *t);

/* ---- workloads (workload.c) ---- */

/* A named workload of the Zeus evaluation. */
typedef struct sim_preset {
    const char *name;
    const char *dataset, *network, *optimizer;
    double target_metric;
    bool higher_is_better;
    int64_t max_epochs;
    int64_t default_batch_size;
} sim_preset;

/* The presets in their fixed order; *n receives how many. */
const sim_preset *sim_presets(size_t *n);

/* The preset called name, or NULL. */
const sim_preset *sim_preset_find(const char *name);

/* One feasible batch size of a workload: its power limits (ascending) with the epoch time
 * and average power at each, and its training paths at the workload's target. */
typedef struct sim_bs {
    int64_t batch_size;
    size_t n_pl;
    int64_t pl_w[SIM_MAX_PL];
    double time_per_epoch_s[SIM_MAX_PL];
    double average_power_w[SIM_MAX_PL];
    size_t path_off, n_paths;    /* into sim_workload.path_epochs */
} sim_bs;

/* A workload resolved against one power trace and one train trace. Heap-allocated by
 * sim_workload_build, freed by sim_workload_free. */
typedef struct sim_workload {
    sim_preset preset;           /* name/dataset/... point at the preset's static strings */
    char gpu[SIM_NAME_MAX];
    int64_t default_batch_size;  /* the preset's (or the override), capped at the largest */
    double max_power_w;          /* largest power limit of the workload's power rows */
    size_t n_bs;
    sim_bs bs[ZBSO_MAX_BATCH_SIZES];   /* ascending batch size */
    size_t n_pl_all;             /* distinct power limits over all batch sizes */
    int64_t *path_epochs;        /* target_epoch of each path; 0: never reached */
    size_t n_paths;
    size_t n_dropped;            /* power-trace batch sizes without any training path */
    int64_t dropped[ZBSO_MAX_BATCH_SIZES];
    /* NULL, or the same workload on another GPU (--warm-start-from): each simulation first
     * runs a Zeus-policy job of it (seed + SIM_WARM_SEED_OFFSET) on the same store, the
     * prior the warm-started job reads through the service. Not owned. */
    const struct sim_workload *warm_from;
} sim_workload;

#define SIM_WARM_SEED_OFFSET 1000  /* the prior job's seed: independent paths */

/* Builds the workload of preset p for the GPU named gpu: feasible batch sizes are those
 * the power trace has for (dataset, network, optimizer) that also have training paths at
 * the target metric (the others are listed in dropped). default_bs_override > 0 replaces
 * the preset's default. The default is capped at the largest batch size of the power trace.
 * Returns 0 with *out set; ZBSO_EINVAL (err names the workload, the file and the values)
 * when the power trace has no rows for it, no batch size has a path, or the trace lacks
 * the default batch size; ZBSO_ENOMEM. power_path and train_path only name the files. */
int sim_workload_build(const sim_preset *p, int64_t default_bs_override, const char *gpu,
                       const sim_power_trace *power, const char *power_path,
                       const sim_train_trace *train, const char *train_path,
                       sim_workload **out, zbso_err *err);

void sim_workload_free(sim_workload *w);  /* NULL: no-op */

/* The batch size entry of w for batch_size, or NULL. */
const sim_bs *sim_workload_bs(const sim_workload *w, int64_t batch_size);

/* ---- one run (model.c): pure arithmetic ---- */

/* The power limit (index into b->pl_w) that JIT profiling picks: opt_pl_select, the
 * selector libzbso's power-limit optimizer uses (core/powerlimit.h), as ZeusCost(eta, 1)
 * over b's limits, highest first, with per-epoch time and energy: least
 * eta * average_power * time + (1 - eta) * P * time, P being b's highest limit; on ties
 * the higher power limit (Zeus profiles from the highest down). */
size_t sim_jit_pick(const sim_bs *b, double eta);

/* The index of b's highest power limit. */
size_t sim_max_pl(const sim_bs *b);

typedef struct sim_run {
    int64_t epochs;     /* epochs run; 0: the run was allowed none and did not run */
    double time_s;
    double energy_j;
    double cost;        /* opt_cost(energy, time, eta, max_power) */
    bool reached;       /* the path reached the target within the allowed epochs */
} sim_run;

/* One run of batch size b at power limit index pl on a path that reaches the target at
 * target_epoch (0: never). Allowed epochs: w's max_epochs, cut to
 * floor(cost_ub / cost_per_epoch) when cost_ub is finite. With profile, the first epoch
 * costs the mean time and mean energy over b's power limits. Cannot fail. */
void sim_run_compute(const sim_workload *w, const sim_bs *b, size_t pl, int64_t target_epoch,
                     bool profile, double eta, double cost_ub, sim_run *out);

/* sim_run_compute with every epoch's time and energy multiplied by factor (> 0): a run
 * slower or faster than the trace (--noise). factor 1 gives sim_run_compute's doubles. */
void sim_run_compute_scaled(const sim_workload *w, const sim_bs *b, size_t pl,
                            int64_t target_epoch, bool profile, double eta, double cost_ub,
                            double factor, sim_run *out);

/* Expected energy, time and cost of one recurrence when every run uses batch size b at
 * power limit index pl with no early stop, retrying until a run reaches the target
 * (the mean over b's paths; a path that never reaches costs max_epochs epochs).
 * feasible is false when no path of b reaches the target within max_epochs. */
typedef struct sim_expect {
    bool feasible;
    double energy_j, time_s, cost;
} sim_expect;

void sim_expect_fixed(const sim_workload *w, const sim_bs *b, size_t pl, double eta,
                      sim_expect *out);

/* ---- simulation (recurrence.c) and sweep (sweep.c) ---- */

/* Submit times of overlapping recurrences (--arrivals): recurrence k is submitted at
 * times[k] seconds after the job's start (n_times of them, ascending; the recurrences are
 * then min(n_times, recurrences)), or with Poisson arrivals at exponential gaps of mean
 * mean_gap_s from a stream of the seed's own. Both zero: one recurrence after another. */
typedef struct sim_arrivals {
    const double *times;
    size_t n_times;
    double mean_gap_s;
} sim_arrivals;

typedef struct sim_options {
    double eta;
    bool has_beta;        /* false: no early stopping (--beta none) */
    double beta;
    int64_t recurrences;  /* 0: 2 * |batch sizes| * |power limits| of the workload */
    bool jit;             /* JIT power limit profiling; false: always the max */
    zbso_policy policy;   /* the job's batch size policy (--policy; 0 is Zeus's) */
    /* > 0: each run's time and energy are multiplied by a lognormal factor of mean 1,
     * exp(noise * Z - noise^2 / 2), Z from a stream of the seed's own (--noise). */
    double noise;
    /* A recurrence that exhausts its tries, a default that does not converge first, or an
     * optimizer that finds no batch size converged ends the simulation with
     * sim_result.stuck set instead of failing it (--compare counts stuck jobs). */
    bool keep_stuck;
    sim_arrivals arrivals;
} sim_options;

/* One simulated run as runs.csv records it. */
typedef struct sim_row {
    int64_t recurrence, try_no;
    int64_t batch_size, pl_w;
    double energy_j, time_s, cost;
    bool reached;
} sim_row;

/* The outcome of one (workload, seed) simulation. */
typedef struct sim_result {
    uint64_t seed;
    sim_row *rows;
    size_t n_rows;
    int64_t n_recurrences;
    double *rec_cost;      /* cost of each recurrence (all its tries), n_recurrences */
    double energy_j, time_s, cost;  /* totals over all runs */
    int64_t n_unrun;       /* runs allowed zero epochs (ended as failed, not recorded) */
    opt_savings savings;   /* the job's savings (sim_savings of rows and n_unrun) */
    int64_t n_stopped;     /* runs that ran and did not converge (early-stopped or failed) */
    bool stuck;            /* keep_stuck: recurrence stuck_at failed RECUR_MAX_TRIES tries */
    int64_t stuck_at;
    int64_t n_concurrent;  /* Concurrent trials the optimizer dispatched (--arrivals) */
} sim_result;

/* The number of recurrences o gives for w. */
int64_t sim_recurrences(const sim_workload *w, const sim_options *o);

/* Simulates w recurring with seed: a memory:// store, the job registered with
 * mab_seed = seed, a fake clock that advances by each run's time, path sampling from
 * a generator seeded from the seed. Recurrences are retried as `zbso run` retries them
 * (recur/recur.h: at most RECUR_MAX_TRIES tries; a run allowed zero epochs is a try that
 * did not reach the target). Fills *out (sim_result_free). Returns 0; ZBSO_ENOCONV when the
 * default batch size does not reach the target in the first recurrence, a recurrence
 * exhausts its tries, or the optimizer finds no batch size converged; the service's codes;
 * ZBSO_ENOMEM. err names the workload, GPU, seed and recurrence. */
int sim_simulate(const sim_workload *w, const sim_options *o, uint64_t seed,
                 sim_result *out, zbso_err *err);

void sim_result_free(sim_result *r);  /* NULL: no-op */

/* The savings of a simulated job (SPEC §5, "Savings") by opt_savings_compute, the function
 * the server uses, over trials built from r's records: one Succeeded trial per row in row
 * order (the job's trial order; batch size, energy, time, converged = reached), then
 * r->n_unrun Failed ones. spec is the job's (its default batch size, eta and max_power
 * give each row's cost, the row's own cost). Returns 0 with *out set, or ZBSO_ENOMEM. */
int sim_savings(const zbso_job_spec *spec, const sim_result *r, opt_savings *out,
                zbso_err *err);

/* Runs sim_simulate for every workload in ws and every seed in [seed_lo, seed_hi] on at
 * most n_threads threads (>= 1). results[i * n_seeds + s] receives workload i, seed
 * seed_lo + s. progress (may be NULL) is called from the calling thread now and then
 * with (done, total). Returns 0, or the first failure's code with err (the other
 * results are freed). */
int sim_sweep(sim_workload *const *ws, size_t n_ws, uint64_t seed_lo, uint64_t seed_hi,
              const sim_options *o, int n_threads, sim_result *results,
              void (*progress)(void *ctx, size_t done, size_t total), void *progress_ctx,
              zbso_err *err);

/* ---- comparing two policies (compare.c): --compare ---- */

/* The trace oracle's cost c*: the least expected cost of one recurrence over every fixed
 * (batch size, power limit) of w (sim_expect_fixed); INFINITY when none is feasible. */
double sim_oracle_cost(const sim_workload *w, double eta);

/* One policy's figures on one pair, over its seeds. */
typedef struct sim_cmp_policy {
    double regret_pct;       /* mean over seeds of (cost - T c*) / (T c*) x 100; a stuck
                              * job's cost adds the default configuration's expected cost
                              * (sim_expect_fixed at the highest limit) for the recurrence
                              * it stuck in and every one after */
    double stopped_per_job;  /* mean of sim_result.n_stopped */
    size_t stuck;            /* jobs stuck (sim_result.stuck) */
    double concurrent_per_job; /* mean of sim_result.n_concurrent */
} sim_cmp_policy;

/* One (workload, GPU, eta) pair: p[0] the first policy of --compare, p[1] the second. */
typedef struct sim_cmp_pair {
    const sim_workload *w;
    double eta;
    double cstar;
    int64_t recurrences;
    size_t n_seeds;
    sim_cmp_policy p[2];
} sim_cmp_pair;

/* The figures over all pairs: means of the pairs' figures; the mean of the per-pair cuts
 * 1 - p[1]/p[0] of regret (over the n_cut pairs whose p[0] regret is positive); the pair
 * where p[1] is the most points above p[0]. */
typedef struct sim_cmp_total {
    double regret_pct[2], stopped_per_job[2], concurrent_per_job[2];
    size_t stuck[2];
    double mean_cut_pct;
    size_t n_cut;
    double worst;
    size_t worst_pair;
} sim_cmp_total;

/* Fills pair->p[which] (and the pair's workload, eta, c*, recurrences) from the results
 * r[0..n_seeds-1] of w at eta. */
void sim_cmp_fill(const sim_workload *w, double eta, const sim_result *r, size_t n_seeds,
                  int which, sim_cmp_pair *pair);

void sim_cmp_overall(const sim_cmp_pair *pairs, size_t n, sim_cmp_total *t);

/* Prints the legend, one line per pair and the overall line to f. */
void sim_cmp_print(FILE *f, const char *const names[2], const sim_cmp_pair *pairs, size_t n);

/* ---- outputs (output.c) ---- */

/* Per-workload comparison, averaged over seeds. */
typedef struct sim_summary {
    const sim_workload *w;
    size_t n_seeds;
    int64_t recurrences;
    sim_expect dflt;                 /* default batch size at the max power limit */
    sim_expect best;                 /* the best fixed (bs, pl) in hindsight */
    int64_t best_bs, best_pl_w;
    double energy_vs_default, time_vs_default, cost_vs_default;
    double energy_vs_best, time_vs_best, cost_vs_best;
    int64_t n_unrun;
} sim_summary;

/* Fills s from w's results for n_seeds seeds (ratios of zbso's totals to recurrences times
 * the baseline's expected values, averaged over seeds). */
void sim_summarize(const sim_workload *w, const sim_result *results, size_t n_seeds,
                   double eta, sim_summary *s);

/* Writes runs.csv: header "workload,gpu,seed,recurrence,try,bs,pl,energy,time,reached,cost"
 * then one line per run, energy, time and cost at 17 significant digits (%.17g: they read
 * back to the very doubles, so the savings can be recomputed from the file). Returns 0 or
 * ZBSO_EIO. */
int sim_write_runs(FILE *f, sim_workload *const *ws, size_t n_ws, const sim_result *results,
                   size_t n_seeds, zbso_err *err);

/* Writes summary.csv (header + one line per summary). Returns 0 or ZBSO_EIO. */
int sim_write_summary(FILE *f, const sim_summary *s, size_t n, zbso_err *err);

/* Writes savings.csv: one line per (workload, seed) with its sim_result's savings, header
 * SIM_SAVINGS_HEADER; numbers at 17 significant digits, an empty field where the figure
 * does not exist (the API's null: no baseline, not broken even, no best). Returns 0 or
 * ZBSO_EIO. */
#define SIM_SAVINGS_HEADER                                                                   \
    "workload,gpu,seed,finished_trials,failed_trials,spent_energy,spent_time,spent_cost,"   \
    "default_bs,default_runs,default_energy,default_time,default_cost,saved_energy,"        \
    "saved_time,saved_cost,break_even,best_bs,best_cost,regret"
int sim_write_savings(FILE *f, sim_workload *const *ws, size_t n_ws,
                      const sim_result *results, size_t n_seeds, zbso_err *err);

/* Writes cost.svg: cost per recurrence relative to the default configuration's expected
 * cost, the mean over seeds, one line per workload. Returns 0 or ZBSO_EIO. */
int sim_write_svg(FILE *f, sim_workload *const *ws, size_t n_ws, const sim_result *results,
                  size_t n_seeds, const sim_summary *s, zbso_err *err);

/* Writes runs.csv, summary.csv, savings.csv and cost.svg into dir: each to a temporary
 * name first, and only when all four are complete are they renamed into place. Creates dir
 * when it does not exist (one level). Returns 0; ZBSO_EIO with err naming the path (nothing
 * is left behind). */
int sim_write_outputs(const char *dir, sim_workload *const *ws, size_t n_ws,
                      const sim_result *results, size_t n_seeds, const sim_summary *s,
                      zbso_err *err);

/* Checks that dir is (or can be made) a writable directory, creating it when missing.
 * Returns 0 or ZBSO_EIO naming dir. */
int sim_check_out_dir(const char *dir, zbso_err *err);

/* The data directory compiled in (ZBSO_DATA_DIR, the repository's data/). */
const char *sim_default_data_dir(void);

/* ---- a custom workload (workload_file.c) ---------------------------------------------
 * `zbso simulate --workload-file FILE`: a JSON object with name, dataset, network,
 * optimizer (as the traces name them), target_metric, higher_is_better (default true),
 * max_epochs, default_batch_size, train_trace and power_trace (paths, relative to FILE's
 * directory; the columns of data/traces/README.md) and gpu (a name, default "custom"). */
#define SIM_WORKLOAD_PATH_MAX 4096
typedef struct sim_workload_file {
    sim_preset preset;         /* its strings point into this struct: do not copy it */
    char name[SIM_NAME_MAX], dataset[SIM_NAME_MAX], network[SIM_NAME_MAX];
    char optimizer[SIM_NAME_MAX], gpu[SIM_NAME_MAX];
    char train_trace[SIM_WORKLOAD_PATH_MAX], power_trace[SIM_WORKLOAD_PATH_MAX];
} sim_workload_file;

/* Reads the workload file at path into *out. Returns 0, or ZBSO_EINVAL naming the file
 * and what is wrong (a JSON error with its line and column, a missing, unknown or
 * mistyped field, a value out of range); *out is zeroed then. */
int sim_workload_file_load(const char *path, sim_workload_file *out, zbso_err *err);

#endif
