/* cmd_simulate.c: `zbso simulate`: parses the command line, loads the traces, runs the
 * sweep of (workload, seed) simulations and prints/writes the results. The simulation
 * itself lives in src/sim; nothing here decides a batch size or computes a cost. */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "sim/sim.h"
#include "util/clock.h"

static const char simulate_usage[] =
    "usage: zbso simulate [--workload NAME|all] [--gpu NAME] [--power-trace FILE]\n"
    "                     [--train-trace FILE] [--seeds A..B] [--eta E] [--beta B|none]\n"
    "                     [--recurrences N] [--power-limit jit|max] [--out DIR]\n"
    "                     [--default-bs N] [--threads N] [--data-dir DIR]\n"
    "                     [--workload-file FILE]\n"
    "\n"
    "Replays recurring training jobs on the Zeus traces against the optimizer.\n"
    "  --workload NAME   cifar100, imagenet, squad, librispeech, movielens-1m,\n"
    "                    sentiment140, or all (default)\n"
    "  --gpu NAME        GPU whose power trace DATA/traces/summary_power_NAME.csv is used\n"
    "                    (default v100); with --power-trace it only names the GPU\n"
    "  --power-trace F   power trace CSV (dataset,network,batch_size,optimizer,power_limit,\n"
    "                    time_per_epoch,average_power)\n"
    "  --train-trace F   train trace CSV (default DATA/traces/summary_train.csv)\n"
    "  --seeds N|A..B    seeds to simulate, one simulation each, in parallel: N means 1..N\n"
    "                    (default 1)\n"
    "  --eta E           cost knob in [0, 1] (default 0.5)\n"
    "  --beta B|none     early-stop threshold factor > 0, or none (default 2)\n"
    "  --recurrences N   recurrences per simulation (default 2 * |batch sizes| * |power limits|)\n"
    "  --power-limit M   jit: profile power limits on a batch size's first run (default);\n"
    "                    max: always the highest power limit\n"
    "  --default-bs N    replace the workload's default batch size\n"
    "  --threads N       worker threads (default: the number of CPUs)\n"
    "  --data-dir DIR    the data directory, or its traces/ folder itself (ZBSO_DATA_DIR,\n"
    "                    default the source tree's data/)\n"
    "  --workload-file F a custom workload instead of --workload: a JSON object with name,\n"
    "                    dataset, network, optimizer, target_metric, higher_is_better,\n"
    "                    max_epochs, default_batch_size, train_trace, power_trace (CSV\n"
    "                    files in data/traces/README.md's columns, relative to F) and gpu\n"
    "  --out DIR         write runs.csv, summary.csv, savings.csv and cost.svg there\n"
    "\n"
    "Prints the comparison per workload, then each simulated job's savings against its\n"
    "default batch size (the server's definition: docs/SPEC.md, section 5, \"Savings\"),\n"
    "each table with a legend of its columns; energy in Wh/kWh/MWh, time in s/min/h.\n"
    "A progress line goes to stderr once a run has taken 2 s.\n";

enum {
    OPT_WORKLOAD = 256, OPT_GPU, OPT_POWER, OPT_TRAIN, OPT_SEEDS, OPT_ETA, OPT_BETA,
    OPT_RECUR, OPT_PL, OPT_OUT, OPT_DEFAULT_BS, OPT_THREADS, OPT_DATA_DIR, OPT_HELP,
    OPT_WORKLOAD_FILE
};

typedef struct sim_args {
    const char *workload, *gpu, *power_trace, *train_trace, *data_dir, *out;
    const char *workload_file;     /* --workload-file; NULL: the presets */
    bool workload_given, gpu_given;
    uint64_t seed_lo, seed_hi;
    int64_t default_bs;
    int threads;
    sim_options o;
} sim_args;

/* Parses an integer in [lo, hi] from text. Returns 0 or ZBSO_EINVAL naming flag and text. */
static int parse_int(const char *flag, const char *text, long long lo, long long hi,
                     long long *out, zbso_err *err)
{
    char *end = NULL;
    long long v = strtoll(text, &end, 10);
    if (text[0] == '\0' || *end != '\0' || v < lo || v > hi)
        return err_set(err, ZBSO_EINVAL, "%s '%s' is not an integer in [%lld, %lld]", flag,
                       text, lo, hi);
    *out = v;
    return 0;
}

/* Parses "A..B" (seeds A to B) or "N" (seeds 1 to N) into a seed range of at most
 * SIM_MAX_SEEDS seeds. */
static int parse_seeds(const char *text, uint64_t *lo, uint64_t *hi, zbso_err *err)
{
    char *end = NULL;
    unsigned long long a = strtoull(text, &end, 10), b = a;
    if (text[0] < '0' || text[0] > '9')
        goto bad;
    if (end[0] == '.' && end[1] == '.') {
        const char *rest = end + 2;
        if (rest[0] < '0' || rest[0] > '9')
            goto bad;
        b = strtoull(rest, &end, 10);
    } else {
        if (a == 0)
            goto bad;
        a = 1;    /* --seeds N: N simulations, seeds 1..N */
    }
    if (*end != '\0' || b < a || b - a >= SIM_MAX_SEEDS || a > (1ULL << 62) ||
        b > (1ULL << 62))
        goto bad;
    *lo = a;
    *hi = b;
    return 0;
bad:
    return err_set(err, ZBSO_EINVAL,
                   "--seeds '%s' is neither a count N >= 1 (seeds 1..N) nor a range A..B of "
                   "non-negative seeds (A <= B), of at most %d seeds", text, SIM_MAX_SEEDS);
}

/* Parses argv into *a. Returns 0, 1 for --help (usage printed), or ZBSO_EINVAL. */
static int parse_args(int argc, char **argv, sim_args *a, zbso_err *err)
{
    static const struct option opts[] = {
        {"workload", required_argument, NULL, OPT_WORKLOAD},
        {"gpu", required_argument, NULL, OPT_GPU},
        {"power-trace", required_argument, NULL, OPT_POWER},
        {"train-trace", required_argument, NULL, OPT_TRAIN},
        {"seeds", required_argument, NULL, OPT_SEEDS},
        {"eta", required_argument, NULL, OPT_ETA},
        {"beta", required_argument, NULL, OPT_BETA},
        {"recurrences", required_argument, NULL, OPT_RECUR},
        {"power-limit", required_argument, NULL, OPT_PL},
        {"out", required_argument, NULL, OPT_OUT},
        {"default-bs", required_argument, NULL, OPT_DEFAULT_BS},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"data-dir", required_argument, NULL, OPT_DATA_DIR},
        {"workload-file", required_argument, NULL, OPT_WORKLOAD_FILE},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    long long v;
    char *end;
    int c, rc;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

    memset(a, 0, sizeof *a);
    a->workload = "all";
    a->gpu = "v100";
    a->seed_lo = a->seed_hi = 1;
    a->threads = ncpu > 0 ? (int)(ncpu < 256 ? ncpu : 256) : 1;
    a->o.eta = 0.5;
    a->o.has_beta = true;
    a->o.beta = 2.0;
    a->o.jit = true;
    a->data_dir = getenv("ZBSO_DATA_DIR");
    if (a->data_dir == NULL || a->data_dir[0] == '\0')
        a->data_dir = sim_default_data_dir();

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case OPT_WORKLOAD: a->workload = optarg; a->workload_given = true; break;
        case OPT_GPU: a->gpu = optarg; a->gpu_given = true; break;
        case OPT_WORKLOAD_FILE: a->workload_file = optarg; break;
        case OPT_POWER: a->power_trace = optarg; break;
        case OPT_TRAIN: a->train_trace = optarg; break;
        case OPT_DATA_DIR: a->data_dir = optarg; break;
        case OPT_OUT: a->out = optarg; break;
        case OPT_SEEDS:
            if ((rc = parse_seeds(optarg, &a->seed_lo, &a->seed_hi, err)) < 0)
                return rc;
            break;
        case OPT_ETA:
            a->o.eta = strtod(optarg, &end);
            if (optarg[0] == '\0' || *end != '\0' || !(a->o.eta >= 0 && a->o.eta <= 1))
                return err_set(err, ZBSO_EINVAL, "--eta '%s' is not a number in [0, 1]",
                               optarg);
            break;
        case OPT_BETA:
            if (strcmp(optarg, "none") == 0) {
                a->o.has_beta = false;
                break;
            }
            a->o.beta = strtod(optarg, &end);
            if (optarg[0] == '\0' || *end != '\0' || !(a->o.beta > 0 && a->o.beta < 1e300))
                return err_set(err, ZBSO_EINVAL, "--beta '%s' is neither a number > 0 nor "
                               "'none'", optarg);
            break;
        case OPT_RECUR:
            if ((rc = parse_int("--recurrences", optarg, 1, SIM_MAX_RECURRENCES, &v, err)) < 0)
                return rc;
            a->o.recurrences = v;
            break;
        case OPT_DEFAULT_BS:
            if ((rc = parse_int("--default-bs", optarg, 1, 1LL << 40, &v, err)) < 0)
                return rc;
            a->default_bs = v;
            break;
        case OPT_THREADS:
            if ((rc = parse_int("--threads", optarg, 1, 256, &v, err)) < 0)
                return rc;
            a->threads = (int)v;
            break;
        case OPT_PL:
            if (strcmp(optarg, "jit") == 0)
                a->o.jit = true;
            else if (strcmp(optarg, "max") == 0)
                a->o.jit = false;
            else
                return err_set(err, ZBSO_EINVAL, "--power-limit '%s' is neither jit nor max",
                               optarg);
            break;
        case OPT_HELP:
            fputs(simulate_usage, stdout);
            return 1;
        default:
            if (optopt != 0 && optind > 0)
                return err_set(err, ZBSO_EINVAL, "option '%s' needs a value",
                               argv[optind - 1]);
            return err_set(err, ZBSO_EINVAL, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return err_set(err, ZBSO_EINVAL, "unexpected argument '%s'", argv[optind]);
    if (a->workload_file != NULL && a->workload_given)
        return err_set(err, ZBSO_EINVAL, "give --workload or --workload-file, not both");
    size_t glen = strlen(a->gpu);
    if (glen == 0 || glen >= SIM_NAME_MAX || strspn(a->gpu,
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != glen ||
        a->gpu[0] == '.')
        return err_set(err, ZBSO_EINVAL, "--gpu '%s' must be 1 to %d letters, digits, '_', "
                       "'-' or '.'", a->gpu, SIM_NAME_MAX - 1);
    return 0;
}

typedef struct progress_ctx {
    double start_s, last_s;    /* monotonic */
    bool shown, tty;
} progress_ctx;

/* Prints "simulations done/total" on stderr once a sweep has run 2 s: in place on a
 * terminal, else a line every five seconds. */
static void show_progress(void *ctx, size_t done, size_t total)
{
    progress_ctx *p = ctx;
    double now_s = clk_mono_s();
    if (now_s - p->start_s < 2.0)
        return;
    if (!p->tty && p->shown && now_s - p->last_s < 5.0 && done < total)
        return;
    fprintf(stderr, "%szbso simulate: %zu/%zu simulations done%s", p->tty ? "\r" : "", done,
            total, p->tty && done < total ? "" : "\n");
    p->shown = true;
    p->last_s = now_s;
}

static void print_summary(const sim_summary *s, size_t n)
{
    printf("%-13s %-6s %5s %4s %8s %9s  %7s %7s %7s  %7s %7s %7s\n", "workload", "gpu",
           "seeds", "recs", "default", "best", "E/dflt", "T/dflt", "C/dflt", "E/best",
           "T/best", "C/best");
    for (size_t i = 0; i < n; i++) {
        char best[32];
        snprintf(best, sizeof best, "%lld@%lld", (long long)s[i].best_bs,
                 (long long)s[i].best_pl_w);
        printf("%-13s %-6s %5zu %4lld %8lld %9s  %7.3f %7.3f %7.3f  %7.3f %7.3f %7.3f\n",
               s[i].w->preset.name, s[i].w->gpu, s[i].n_seeds, (long long)s[i].recurrences,
               (long long)s[i].w->default_batch_size, best, s[i].energy_vs_default,
               s[i].time_vs_default, s[i].cost_vs_default, s[i].energy_vs_best,
               s[i].time_vs_best, s[i].cost_vs_best);
    }
    printf("  seeds: simulations (one job each); recs: recurrences per job\n"
           "  default: the default batch size; best: the cheapest fixed batch size@power\n"
           "    limit (W) in hindsight\n"
           "  E, T, C: energy, time and cost (eta * E + (1 - eta) * max power * T) of all\n"
           "    recurrences with zbso, as a ratio: /dflt to always training the default at\n"
           "    the highest power limit, /best to always training the best (below 1: zbso\n"
           "    spent less)\n");
}

/* Writes J as Wh, kWh, MWh or GWh with 3 significant digits into out. */
static const char *energy_text(double j, char *out, size_t cap)
{
    static const char *const units[] = {"Wh", "kWh", "MWh", "GWh"};
    double v = j / 3600.0;
    size_t u = 0;
    while (u + 1 < sizeof units / sizeof units[0] && fabs(v) >= 1000.0) {
        v /= 1000.0;
        u++;
    }
    snprintf(out, cap, "%.3g %s", v, units[u]);
    return out;
}

/* Writes s as s, min, h or d with 3 significant digits into out. */
static const char *time_text(double s, char *out, size_t cap)
{
    double a = fabs(s);
    if (a < 120)
        snprintf(out, cap, "%.3g s", s);
    else if (a < 7200)
        snprintf(out, cap, "%.3g min", s / 60);
    else if (a < 172800)
        snprintf(out, cap, "%.3g h", s / 3600);
    else
        snprintf(out, cap, "%.3g d", s / 86400);
    return out;
}

/* Prints x as text (energy_text or time_text) in a column of 12, or "-" when it does not
 * exist. */
static void print_qty(bool exists, double x, const char *(*text)(double, char *, size_t))
{
    char buf[32];
    printf(" %12s", exists ? text(x, buf, sizeof buf) : "-");
}

/* One line per simulated job: its savings (opt_savings) as savings.csv has them (in J and
 * s there), in readable units. */
static void print_savings(sim_workload *const *ws, size_t n_ws, const sim_result *results,
                          size_t n_seeds)
{
    printf("\nsavings per job against its default batch size:\n");
    printf("%-13s %-6s %5s %6s %6s %12s %12s %12s %10s %12s\n", "workload", "gpu", "seed",
           "trials", "failed", "saved E", "saved T", "saved C", "break-even", "regret");
    for (size_t i = 0; i < n_ws; i++)
        for (size_t k = 0; k < n_seeds; k++) {
            const sim_result *r = &results[i * n_seeds + k];
            const opt_savings *s = &r->savings;
            char be[24] = "-";
            if (s->break_even > 0)
                snprintf(be, sizeof be, "%lld", (long long)s->break_even);
            printf("%-13s %-6s %5llu %6lld %6lld", ws[i]->preset.name, ws[i]->gpu,
                   (unsigned long long)r->seed, (long long)s->finished, (long long)s->failed);
            print_qty(s->has_baseline, s->saved.energy, energy_text);
            print_qty(s->has_baseline, s->saved.time, time_text);
            print_qty(s->has_baseline, s->saved.cost, energy_text);
            printf(" %10s", be);
            print_qty(s->has_best, s->regret, energy_text);
            printf("\n");
        }
    printf("  trials: finished trials (with a measurement); failed: trials without one\n"
           "  saved E, T, C: what as many runs at the default batch size (their mean in\n"
           "    this job) would have spent, less what the job spent (negative: zbso spent\n"
           "    more while exploring); cost in energy units (eta * E + (1 - eta) *\n"
           "    max power * T)\n"
           "  break-even: the trial from which the job's cumulative cost stays at or below\n"
           "    the default's (-: not yet)\n"
           "  regret: cost spent beyond as many runs of the job's best batch size\n");
}

/* The traces folder of --data-dir DIR into out (cap bytes): DIR/traces, or DIR itself
 * when it holds the traces (summary_train.csv) and has no traces/ folder. */
static void traces_dir(const char *data_dir, char *out, size_t cap)
{
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/summary_train.csv", data_dir);
    snprintf(out, cap, "%s/traces", data_dir);
    if (access(out, F_OK) != 0 && access(probe, F_OK) == 0)
        snprintf(out, cap, "%s", data_dir);
}

int cli_simulate(int argc, char **argv)
{
    sim_args a;
    zbso_err err;
    sim_power_trace power = {0};
    sim_train_trace train = {0};
    sim_workload *ws[16] = {NULL};
    size_t n_ws = 0, n_seeds = 0;
    sim_result *results = NULL;
    sim_summary sums[16];
    char power_path[4096], train_path[4096], traces[3900];
    sim_workload_file *custom = NULL;
    int status = CLI_EXIT_FAIL, rc;

    err_clear(&err);
    rc = parse_args(argc, argv, &a, &err);
    if (rc == 1)
        return CLI_EXIT_OK;
    if (rc < 0) {
        fprintf(stderr, "zbso simulate: %s\n(see 'zbso simulate --help')\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    size_t n_presets;
    const sim_preset *presets = sim_presets(&n_presets);
    const sim_preset *chosen[16];
    if (a.workload_file != NULL) {
        if ((custom = calloc(1, sizeof *custom)) == NULL) {
            rc = err_set(&err, ZBSO_ENOMEM, "out of memory reading --workload-file");
            goto fail;
        }
        if ((rc = sim_workload_file_load(a.workload_file, custom, &err)) < 0)
            goto fail;
        chosen[n_ws++] = &custom->preset;
        if (a.power_trace == NULL)
            a.power_trace = custom->power_trace;
        if (a.train_trace == NULL)
            a.train_trace = custom->train_trace;
        if (!a.gpu_given)
            a.gpu = custom->gpu;
    } else if (strcmp(a.workload, "all") == 0) {
        for (size_t i = 0; i < n_presets && i < 16; i++)
            chosen[n_ws++] = &presets[i];
    } else {
        const sim_preset *p = sim_preset_find(a.workload);
        if (p == NULL) {
            fprintf(stderr, "zbso simulate: unknown workload '%s'; known workloads:",
                    a.workload);
            for (size_t i = 0; i < n_presets; i++)
                fprintf(stderr, " %s", presets[i].name);
            fprintf(stderr, " (or all)\n");
            return CLI_EXIT_USAGE;
        }
        chosen[n_ws++] = p;
    }
    traces_dir(a.data_dir, traces, sizeof traces);
    if (a.power_trace != NULL)
        snprintf(power_path, sizeof power_path, "%s", a.power_trace);
    else
        snprintf(power_path, sizeof power_path, "%s/summary_power_%s.csv", traces, a.gpu);
    if (a.train_trace != NULL)
        snprintf(train_path, sizeof train_path, "%s", a.train_trace);
    else
        snprintf(train_path, sizeof train_path, "%s/summary_train.csv", traces);

    /* Refuse an unusable --out before spending any time. */
    if (a.out != NULL && (rc = sim_check_out_dir(a.out, &err)) < 0)
        goto fail;
    if (a.power_trace == NULL && access(power_path, F_OK) != 0) {
        rc = err_set(&err, ZBSO_EINVAL, "no power trace for GPU '%s' (%s does not exist); "
                     "give one with --power-trace FILE", a.gpu, power_path);
        goto fail;
    }
    if ((rc = sim_power_trace_load(power_path, &power, &err)) < 0 ||
        (rc = sim_train_trace_load(train_path, &train, &err)) < 0)
        goto fail;

    /* With "all", workloads the power trace lacks are skipped; a named one must exist. */
    size_t kept = 0;
    for (size_t i = 0; i < n_ws; i++) {
        sim_workload *w = NULL;
        zbso_err werr;
        rc = sim_workload_build(chosen[i], a.default_bs, a.gpu, &power, power_path, &train,
                                train_path, &w, &werr);
        if (rc < 0) {
            if (n_ws > 1 && rc == ZBSO_EINVAL && a.default_bs == 0) {
                fprintf(stderr, "zbso simulate: skipping %s: %s\n", chosen[i]->name,
                        werr.msg);
                continue;
            }
            err = werr;
            goto fail;
        }
        if (w->n_dropped > 0) {
            fprintf(stderr, "zbso simulate: %s on %s: batch size%s", w->preset.name, w->gpu,
                    w->n_dropped > 1 ? "s" : "");
            for (size_t k = 0; k < w->n_dropped; k++)
                fprintf(stderr, " %lld", (long long)w->dropped[k]);
            fprintf(stderr, " of the power trace %s no training path at target %g; left "
                    "out\n", w->n_dropped > 1 ? "have" : "has", w->preset.target_metric);
        }
        ws[kept++] = w;
    }
    n_ws = kept;
    if (n_ws == 0) {
        rc = err_set(&err, ZBSO_EINVAL, "the power trace %s has no rows for any known "
                     "workload", power_path);
        goto fail;
    }

    n_seeds = (size_t)(a.seed_hi - a.seed_lo + 1);
    results = calloc(n_ws * n_seeds, sizeof *results);
    if (results == NULL) {
        rc = err_set(&err, ZBSO_ENOMEM, "out of memory for %zu simulations", n_ws * n_seeds);
        goto fail;
    }
    progress_ctx prog = {.tty = isatty(STDERR_FILENO), .start_s = clk_mono_s()};
    rc = sim_sweep(ws, n_ws, a.seed_lo, a.seed_hi, &a.o, a.threads, results, show_progress,
                   &prog, &err);
    if (rc < 0)
        goto fail;
    for (size_t i = 0; i < n_ws; i++)
        sim_summarize(ws[i], &results[i * n_seeds], n_seeds, a.o.eta, &sums[i]);
    if (a.out != NULL &&
        (rc = sim_write_outputs(a.out, ws, n_ws, results, n_seeds, sums, &err)) < 0)
        goto fail;
    print_summary(sums, n_ws);
    print_savings(ws, n_ws, results, n_seeds);
    status = CLI_EXIT_OK;
    goto out;
fail:
    fprintf(stderr, "zbso simulate: %s\n", err.msg);
out:
    if (results != NULL)
        for (size_t i = 0; i < n_ws * n_seeds; i++)
            sim_result_free(&results[i]);
    free(results);
    for (size_t i = 0; i < n_ws; i++)
        sim_workload_free(ws[i]);
    sim_power_trace_free(&power);
    sim_train_trace_free(&train);
    free(custom);
    return status;
}
