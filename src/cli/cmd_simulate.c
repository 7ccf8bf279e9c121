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
#include "core/spec.h"
#include "sim/sim.h"
#include "util/clock.h"

static const char simulate_usage[] =
    "usage: zbso simulate [--workload NAME|all] [--gpu NAME] [--power-trace FILE]\n"
    "                     [--train-trace FILE] [--seeds A..B] [--eta E] [--beta B|none]\n"
    "                     [--recurrences N] [--power-limit jit|max] [--out DIR]\n"
    "                     [--default-bs N] [--threads N] [--data-dir DIR]\n"
    "                     [--policy zeus|smart] [--compare zeus,smart] [--noise SIGMA]\n"
    "                     [--warm-start-from GPU|other]\n"
    "                     [--arrivals poisson:MEAN_GAP_S|FILE]\n"
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
    "  --policy P        the jobs' batch size policy: zeus (default) or smart\n"
    "  --compare P,Q     run both policies on the same seeds and print their regret\n"
    "                    against the trace oracle per workload, GPU and eta, and overall;\n"
    "                    --gpu and --eta then take comma lists (v100,a40 and 0.5,1)\n"
    "  --noise SIGMA     multiply each run's time and energy by a lognormal factor of\n"
    "                    mean 1 and log-sd SIGMA (seeded; default 0: the trace's figures)\n"
    "  --warm-start-from GPU  smart jobs start warm from a Zeus-policy job of the same\n"
    "                    workload on DATA/traces/summary_power_GPU.csv (other: the next\n"
    "                    GPU of --gpu's list)\n"
    "  --arrivals A      submit recurrences while earlier ones still run (synthetic):\n"
    "                    poisson:MEAN_GAP_S (exponential gaps, seeded), or FILE (one\n"
    "                    submit time in seconds per line); default: one after another\n"
    "\n"
    "Prints the comparison per workload, then each simulated job's savings against its\n"
    "default batch size (the server's definition: docs/SPEC.md, section 5, \"Savings\"),\n"
    "each table with a legend of its columns; energy in Wh/kWh/MWh, time in s/min/h.\n"
    "A progress line goes to stderr once a run has taken 2 s.\n";

enum {
    OPT_WORKLOAD = 256, OPT_GPU, OPT_POWER, OPT_TRAIN, OPT_SEEDS, OPT_ETA, OPT_BETA,
    OPT_RECUR, OPT_PL, OPT_OUT, OPT_DEFAULT_BS, OPT_THREADS, OPT_DATA_DIR, OPT_HELP,
    OPT_POLICY, OPT_COMPARE, OPT_NOISE, OPT_WARM, OPT_ARRIVALS, OPT_WORKLOAD_FILE
};

#define SIM_LIST_MAX 8   /* GPUs or etas of a --compare list */

typedef struct sim_args {
    const char *workload, *gpu, *power_trace, *train_trace, *data_dir, *out;
    const char *workload_file;     /* --workload-file; NULL: the presets */
    bool workload_given, gpu_given;
    char traces[3900];             /* the traces folder of --data-dir (traces_dir) */
    uint64_t seed_lo, seed_hi;
    int64_t default_bs;
    int threads;
    sim_options o;
    /* --compare, --warm-start-from, and the lists --gpu and --eta give */
    bool compare;
    zbso_policy cmp[2];
    const char *warm_from;
    char gpus[SIM_LIST_MAX][SIM_NAME_MAX];
    size_t n_gpus;
    double etas[SIM_LIST_MAX];
    size_t n_etas;
    const char *arrivals;        /* --arrivals: poisson:MEAN_GAP_S or a file */
} sim_args;

/* Parses a policy name (the API's, spec_policy_parse). Returns 0 or ZBSO_EINVAL naming flag
 * and text. */
static int parse_policy(const char *flag, const char *text, zbso_policy *out, zbso_err *err)
{
    if (spec_policy_parse(text, out) == 0)
        return 0;
    return err_set(err, ZBSO_EINVAL, "%s '%s' is not a policy (zeus or smart)", flag, text);
}

/* Parses --compare P,Q (two different policies) into a->cmp. */
static int parse_compare(const char *text, sim_args *a, zbso_err *err)
{
    char first[16];
    const char *comma = strchr(text, ',');
    size_t len = comma ? (size_t)(comma - text) : 0;
    if (comma == NULL || len >= sizeof first)
        return err_set(err, ZBSO_EINVAL, "--compare '%s' is not two policies P,Q", text);
    memcpy(first, text, len);
    first[len] = '\0';
    int rc;
    if ((rc = parse_policy("--compare", first, &a->cmp[0], err)) < 0 ||
        (rc = parse_policy("--compare", comma + 1, &a->cmp[1], err)) < 0)
        return rc;
    a->compare = true;
    return 0;
}

/* Splits --gpu's comma list into a->gpus, each 1 to SIM_NAME_MAX - 1 letters, digits,
 * '_', '-' or '.', not starting with '.'. */
static int parse_gpus(const char *text, sim_args *a, zbso_err *err)
{
    a->n_gpus = 0;
    for (const char *p = text;; p++) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= SIM_NAME_MAX || a->n_gpus == SIM_LIST_MAX ||
            strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") <
                len || p[0] == '.')
            return err_set(err, ZBSO_EINVAL, "--gpu '%s' must be 1 to %d GPU names of 1 to %d "
                           "letters, digits, '_', '-' or '.'", text, SIM_LIST_MAX,
                           SIM_NAME_MAX - 1);
        memcpy(a->gpus[a->n_gpus], p, len);
        a->gpus[a->n_gpus++][len] = '\0';
        p += len;
        if (*p == '\0')
            return 0;
    }
}

/* Splits --eta's comma list into a->etas, each a number in [0, 1]. */
static int parse_etas(const char *text, sim_args *a, zbso_err *err)
{
    const char *p = text;
    a->n_etas = 0;
    for (;;) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || (*end != ',' && *end != '\0') || !(v >= 0 && v <= 1) ||
            a->n_etas == SIM_LIST_MAX)
            return err_set(err, ZBSO_EINVAL, "--eta '%s' is not a number in [0, 1] (or, "
                           "with --compare, a list of at most %d)", text, SIM_LIST_MAX);
        a->etas[a->n_etas++] = v;
        if (*end == '\0')
            return 0;
        p = end + 1;
    }
}

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

/* Checks --gpu, --eta and --warm-start-from against each other and --compare. */
static int check_lists(sim_args *a, zbso_err *err)
{
    int rc;
    if (a->n_etas == 0)
        a->etas[a->n_etas++] = a->o.eta;
    if ((rc = parse_gpus(a->gpu, a, err)) < 0)
        return rc;
    if (!a->compare && (a->n_gpus > 1 || a->n_etas > 1))
        return err_set(err, ZBSO_EINVAL, "lists of GPUs or etas (--gpu '%s', %zu etas) need "
                       "--compare", a->gpu, a->n_etas);
    if (a->power_trace != NULL && a->n_gpus > 1)
        return err_set(err, ZBSO_EINVAL, "--power-trace names one GPU's trace, not the %zu "
                       "of --gpu '%s'", a->n_gpus, a->gpu);
    if (a->warm_from == NULL)
        return 0;
    if (strcmp(a->warm_from, "other") == 0 && a->n_gpus < 2)
        return err_set(err, ZBSO_EINVAL, "--warm-start-from other needs a list of GPUs "
                       "(--gpu A,B)");
    if (strcmp(a->warm_from, "other") != 0) {
        sim_args g;
        if (parse_gpus(a->warm_from, &g, err) < 0 || g.n_gpus != 1)
            return err_set(err, ZBSO_EINVAL, "--warm-start-from '%s' is not one GPU name "
                           "(letters, digits, '_', '-' or '.') nor 'other'", a->warm_from);
    }
    if (!a->compare && a->o.policy != ZBSO_POLICY_SMART)
        return err_set(err, ZBSO_EINVAL, "--warm-start-from needs --policy smart (Zeus's "
                       "policy has no warm start)");
    return 0;
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
        {"policy", required_argument, NULL, OPT_POLICY},
        {"compare", required_argument, NULL, OPT_COMPARE},
        {"noise", required_argument, NULL, OPT_NOISE},
        {"warm-start-from", required_argument, NULL, OPT_WARM},
        {"arrivals", required_argument, NULL, OPT_ARRIVALS},
        {NULL, 0, NULL, 0},
    };
    long long v = 0; /* set before use; gcc -O3 cannot tell (maybe-uninitialized) */
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
            if ((rc = parse_etas(optarg, a, err)) < 0)
                return rc;
            a->o.eta = a->etas[0];
            break;
        case OPT_POLICY:
            if ((rc = parse_policy("--policy", optarg, &a->o.policy, err)) < 0)
                return rc;
            break;
        case OPT_COMPARE:
            if ((rc = parse_compare(optarg, a, err)) < 0)
                return rc;
            break;
        case OPT_NOISE:
            a->o.noise = strtod(optarg, &end);
            if (optarg[0] == '\0' || *end != '\0' || !(a->o.noise >= 0 && a->o.noise <= 4))
                return err_set(err, ZBSO_EINVAL, "--noise '%s' is not a number in [0, 4]",
                               optarg);
            break;
        case OPT_WARM: a->warm_from = optarg; break;
        case OPT_ARRIVALS:
            a->arrivals = optarg;
            if (strncmp(optarg, "poisson:", 8) == 0) {
                double gap = strtod(optarg + 8, &end);
                if (optarg[8] == '\0' || *end != '\0' || !(gap > 0 && gap <= 1e12))
                    return err_set(err, ZBSO_EINVAL, "--arrivals '%s': the mean gap is not a "
                                   "number of seconds in (0, 1e12]", optarg);
                a->o.arrivals.mean_gap_s = gap;
            }
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
    return check_lists(a, err);
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

/* One GPU's power trace and the workloads built from it. */
typedef struct gpu_set {
    char power_path[4096];
    sim_power_trace power;
    sim_workload *ws[16];
    size_t n_ws;
} gpu_set;

static void gpu_set_free(gpu_set *g)
{
    for (size_t i = 0; i < g->n_ws; i++)
        sim_workload_free(g->ws[i]);
    g->n_ws = 0;
    sim_power_trace_free(&g->power);
}

/* Loads gpu's power trace (power_trace, else DATA/traces/summary_power_GPU.csv) and builds
 * the chosen workloads from it and train. With more than one chosen, workloads the trace
 * lacks are skipped (named on stderr); a single one must exist. Returns 0 or a negative
 * code with err set; *g is freed by gpu_set_free either way. */
static int gpu_set_load(const sim_args *a, const char *gpu, const char *power_trace,
                        const sim_preset *const *chosen, size_t n_chosen,
                        const sim_train_trace *train, const char *train_path, gpu_set *g,
                        zbso_err *err)
{
    int rc;
    memset(g, 0, sizeof *g);
    if (power_trace != NULL)
        snprintf(g->power_path, sizeof g->power_path, "%s", power_trace);
    else
        snprintf(g->power_path, sizeof g->power_path, "%s/summary_power_%s.csv", a->traces,
                 gpu);
    if (power_trace == NULL && access(g->power_path, F_OK) != 0)
        return err_set(err, ZBSO_EINVAL, "no power trace for GPU '%s' (%s does not exist); "
                       "give one with --power-trace FILE", gpu, g->power_path);
    if ((rc = sim_power_trace_load(g->power_path, &g->power, err)) < 0)
        return rc;
    for (size_t i = 0; i < n_chosen; i++) {
        sim_workload *w = NULL;
        zbso_err werr;
        rc = sim_workload_build(chosen[i], a->default_bs, gpu, &g->power, g->power_path,
                                train, train_path, &w, &werr);
        if (rc < 0) {
            if (n_chosen > 1 && rc == ZBSO_EINVAL && a->default_bs == 0) {
                fprintf(stderr, "zbso simulate: skipping %s: %s\n", chosen[i]->name,
                        werr.msg);
                continue;
            }
            *err = werr;
            return rc;
        }
        if (w->n_dropped > 0) {
            fprintf(stderr, "zbso simulate: %s on %s: batch size%s", w->preset.name, w->gpu,
                    w->n_dropped > 1 ? "s" : "");
            for (size_t k = 0; k < w->n_dropped; k++)
                fprintf(stderr, " %lld", (long long)w->dropped[k]);
            fprintf(stderr, " of the power trace %s no training path at target %g; left "
                    "out\n", w->n_dropped > 1 ? "have" : "has", w->preset.target_metric);
        }
        g->ws[g->n_ws++] = w;
    }
    if (g->n_ws == 0)
        return err_set(err, ZBSO_EINVAL, "the power trace %s has no rows for any known "
                       "workload", g->power_path);
    return 0;
}

/* Points every workload of g at the same workload of src (the warm start's prior); a
 * workload src lacks is an error naming both. */
static int link_warm(gpu_set *g, const gpu_set *src, zbso_err *err)
{
    for (size_t i = 0; i < g->n_ws; i++) {
        g->ws[i]->warm_from = NULL;
        for (size_t k = 0; k < src->n_ws; k++)
            if (strcmp(src->ws[k]->preset.name, g->ws[i]->preset.name) == 0)
                g->ws[i]->warm_from = src->ws[k];
        if (g->ws[i]->warm_from == NULL)
            return err_set(err, ZBSO_EINVAL, "--warm-start-from: workload %s has no trace on "
                           "%s (%s)", g->ws[i]->preset.name, src->n_ws ? src->ws[0]->gpu : "?",
                           src->power_path);
    }
    return 0;
}

/* The warm start's source GPU for gpus[i]: --warm-start-from's, or with "other" the next
 * GPU of the list. NULL: no warm start. */
static const char *warm_gpu(const sim_args *a, size_t i)
{
    if (a->warm_from == NULL)
        return NULL;
    if (strcmp(a->warm_from, "other") == 0)
        return a->gpus[(i + 1) % a->n_gpus];
    return a->warm_from;
}

/* --compare: for every GPU of the list and eta, both policies on the same workloads and
 * seeds (smart jobs warm-started when --warm-start-from says so); prints the regret table
 * (sim_cmp_print). Returns 0 or a negative code with err set. */
static int run_compare(sim_args *a, const sim_preset *const *chosen, size_t n_chosen,
                       const sim_train_trace *train, const char *train_path, zbso_err *err)
{
    size_t n_seeds = (size_t)(a->seed_hi - a->seed_lo + 1), n_pairs = 0;
    sim_cmp_pair *pairs = calloc(a->n_gpus * a->n_etas * 16, sizeof *pairs);
    sim_result *results = calloc(16 * n_seeds, sizeof *results);
    gpu_set *sets = calloc(a->n_gpus, sizeof *sets), src = {0};
    int rc = 0;
    if (pairs == NULL || results == NULL || sets == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory for %zu simulations", 16 * n_seeds);
        goto out;
    }
    for (size_t gi = 0; gi < a->n_gpus; gi++) {
        gpu_set *g = &sets[gi];
        const char *wg = warm_gpu(a, gi);
        gpu_set_free(&src);
        if ((rc = gpu_set_load(a, a->gpus[gi], a->power_trace, chosen, n_chosen, train,
                               train_path, g, err)) < 0 ||
            (wg != NULL && (rc = gpu_set_load(a, wg, NULL, chosen, n_chosen, train,
                                              train_path, &src, err)) < 0))
            goto out;
        for (size_t ei = 0; ei < a->n_etas; ei++, n_pairs += g->n_ws) {
            for (int k = 0; k < 2; k++) {
                sim_options o = a->o;
                o.eta = a->etas[ei];
                o.policy = a->cmp[k];
                o.keep_stuck = true;
                /* Zeus's policy has no warm start: its jobs run without the prior. */
                for (size_t i = 0; i < g->n_ws; i++)
                    g->ws[i]->warm_from = NULL;
                if (wg != NULL && o.policy == ZBSO_POLICY_SMART &&
                    (rc = link_warm(g, &src, err)) < 0)
                    goto out;
                progress_ctx prog = {.tty = isatty(STDERR_FILENO), .start_s = clk_mono_s()};
                if ((rc = sim_sweep(g->ws, g->n_ws, a->seed_lo, a->seed_hi, &o, a->threads,
                                    results, show_progress, &prog, err)) < 0)
                    goto out;
                for (size_t i = 0; i < g->n_ws; i++)
                    sim_cmp_fill(g->ws[i], o.eta, &results[i * n_seeds], n_seeds, k,
                                 &pairs[n_pairs + i]);
                for (size_t i = 0; i < g->n_ws * n_seeds; i++)
                    sim_result_free(&results[i]);
            }
        }
        for (size_t i = 0; i < g->n_ws; i++)
            g->ws[i]->warm_from = NULL;
    }
    const char *names[2] = {spec_policy_name(a->cmp[0]), spec_policy_name(a->cmp[1])};
    sim_cmp_print(stdout, names, pairs, n_pairs);
out:
    for (size_t gi = 0; sets != NULL && gi < a->n_gpus; gi++)
        gpu_set_free(&sets[gi]);
    gpu_set_free(&src);
    free(sets);
    free(pairs);
    free(results);
    return rc;
}

int cli_simulate(int argc, char **argv)
{
    sim_args a;
    zbso_err err;
    sim_train_trace train = {0};
    gpu_set g = {0}, src = {0};
    size_t n_ws = 0, n_seeds = 0;
    sim_result *results = NULL;
    sim_summary sums[16];
    char train_path[4096];
    double *arrival_times = NULL;
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
    size_t n_presets, n_chosen = 0;
    const sim_preset *presets = sim_presets(&n_presets);
    const sim_preset *chosen[16];
    if (a.workload_file != NULL) {
        if ((custom = calloc(1, sizeof *custom)) == NULL) {
            rc = err_set(&err, ZBSO_ENOMEM, "out of memory reading --workload-file");
            goto fail;
        }
        if ((rc = sim_workload_file_load(a.workload_file, custom, &err)) < 0)
            goto fail;
        chosen[n_chosen++] = &custom->preset;
        if (a.power_trace == NULL)
            a.power_trace = custom->power_trace;
        if (a.train_trace == NULL)
            a.train_trace = custom->train_trace;
        if (!a.gpu_given && (rc = parse_gpus(custom->gpu, &a, &err)) < 0)
            goto fail;
    } else if (strcmp(a.workload, "all") == 0) {
        for (size_t i = 0; i < n_presets && i < 16; i++)
            chosen[n_chosen++] = &presets[i];
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
        chosen[n_chosen++] = p;
    }
    traces_dir(a.data_dir, a.traces, sizeof a.traces);
    if (a.train_trace != NULL)
        snprintf(train_path, sizeof train_path, "%s", a.train_trace);
    else
        snprintf(train_path, sizeof train_path, "%s/summary_train.csv", a.traces);

    /* Refuse an unusable --out before spending any time. */
    if (a.out != NULL && (rc = sim_check_out_dir(a.out, &err)) < 0)
        goto fail;
    /* Every GPU named (--gpu's list, --warm-start-from's) must have a trace. */
    for (size_t i = a.power_trace != NULL ? a.n_gpus : 0; i <= a.n_gpus; i++) {
        const char *gpu = i < a.n_gpus ? a.gpus[i] : warm_gpu(&a, 0);
        char power_path[4096];
        if (gpu == NULL)
            break;
        snprintf(power_path, sizeof power_path, "%s/summary_power_%s.csv", a.traces, gpu);
        if (access(power_path, F_OK) != 0) {
            rc = err_set(&err, ZBSO_EINVAL, "no power trace for GPU '%s' (%s does not exist); "
                         "give one with --power-trace FILE", gpu, power_path);
            goto fail;
        }
    }
    if ((rc = sim_train_trace_load(train_path, &train, &err)) < 0)
        goto fail;
    if (a.arrivals != NULL && a.o.arrivals.mean_gap_s == 0 &&
        (rc = sim_arrivals_load(a.arrivals, &arrival_times, &a.o.arrivals.n_times, &err)) < 0)
        goto fail;
    a.o.arrivals.times = arrival_times;
    if (a.compare) {
        if ((rc = run_compare(&a, chosen, n_chosen, &train, train_path, &err)) < 0)
            goto fail;
        status = CLI_EXIT_OK;
        goto out;
    }
    if ((rc = gpu_set_load(&a, a.gpus[0], a.power_trace, chosen, n_chosen, &train,
                           train_path, &g, &err)) < 0)
        goto fail;
    if (a.warm_from != NULL &&
        ((rc = gpu_set_load(&a, a.warm_from, NULL, chosen, n_chosen, &train, train_path,
                            &src, &err)) < 0 ||
         (rc = link_warm(&g, &src, &err)) < 0))
        goto fail;
    n_ws = g.n_ws;

    n_seeds = (size_t)(a.seed_hi - a.seed_lo + 1);
    results = calloc(n_ws * n_seeds, sizeof *results);
    if (results == NULL) {
        rc = err_set(&err, ZBSO_ENOMEM, "out of memory for %zu simulations", n_ws * n_seeds);
        goto fail;
    }
    progress_ctx prog = {.tty = isatty(STDERR_FILENO), .start_s = clk_mono_s()};
    rc = sim_sweep(g.ws, n_ws, a.seed_lo, a.seed_hi, &a.o, a.threads, results, show_progress,
                   &prog, &err);
    if (rc < 0)
        goto fail;
    for (size_t i = 0; i < n_ws; i++)
        sim_summarize(g.ws[i], &results[i * n_seeds], n_seeds, a.o.eta, &sums[i]);
    if (a.out != NULL &&
        (rc = sim_write_outputs(a.out, g.ws, n_ws, results, n_seeds, sums, &err)) < 0)
        goto fail;
    print_summary(sums, n_ws);
    print_savings(g.ws, n_ws, results, n_seeds);
    status = CLI_EXIT_OK;
    goto out;
fail:
    fprintf(stderr, "zbso simulate: %s\n", err.msg);
out:
    if (results != NULL)
        for (size_t i = 0; i < n_ws * n_seeds; i++)
            sim_result_free(&results[i]);
    free(results);
    gpu_set_free(&g);
    gpu_set_free(&src);
    sim_train_trace_free(&train);
    free(arrival_times);
    free(custom);
    return status;
}
