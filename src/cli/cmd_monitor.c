/* cmd_monitor.c: `zbso monitor -- COMMAND`: runs a command as a child, measures the GPU time
 * and energy of its life in one window of the energy monitor (src/monitor), prints them
 * per GPU and in total, and exits with the command's status. The child keeps the
 * terminal, the standard streams and the process group; nothing about a GPU is changed. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/table.h"
#include "util/clock.h"
#include "zbso/zbso.h"

/* What `zbso monitor` exits with when it fails itself, as env(1), nice(1) and timeout(1)
 * do, so that a script can tell it from the command's own statuses: 125 before the
 * command runs (usage, no GPU) or when the measurement failed, 126 for a command found
 * but not runnable, 127 for one not found. */
enum { MON_EXIT_SELF = 125, MON_EXIT_CANNOT_RUN = 126, MON_EXIT_NOT_FOUND = 127 };

#define WINDOW "zbso-monitor"
#define TICK_WINDOW "zbso-monitor-interval"
#define INTERVAL_MIN_S 0.1     /* an H200's energy counter moves every 100 ms */
#define INTERVAL_MAX_S 86400.0

extern char **environ;

static const char monitor_usage[] =
    "usage: zbso monitor [--json] [--gpus LIST] [--interval S] [--output FILE]\n"
    "                    -- COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND and prints the GPU time (s) and energy (J) it used, per GPU and in\n"
    "total, measured over its whole life by the energy monitor (NVML's energy counters;\n"
    "ZBSO_NVML_LIBRARY overrides the library). The report goes to stderr, after the\n"
    "command's own output; stdout and stdin are the command's.\n"
    "  --json         the report as one JSON object (time_s, energy_j, gpus, exit_status)\n"
    "  --gpus LIST    CUDA indices of the GPUs to measure, e.g. 0,1 (default: every\n"
    "                 visible GPU; CUDA_VISIBLE_DEVICES applies)\n"
    "  --interval S   also print the time and energy so far every S seconds (>= 0.1),\n"
    "                 always to stderr\n"
    "  --output FILE  write the report to FILE instead of stderr\n"
    "SIGINT, SIGTERM and SIGHUP sent to zbso monitor are passed to the command.\n"
    "Exit status: the command's; 128+N when signal N killed it; 125 when zbso monitor\n"
    "itself failed (bad option, no GPU, the measurement failed); 126 when COMMAND cannot\n"
    "be run, 127 when it is not found.\n";

enum { OPT_JSON = 256, OPT_GPUS, OPT_INTERVAL, OPT_OUTPUT, OPT_HELP };

typedef struct monitor_args {
    bool json;
    int gpus[ZBSO_MAX_GPUS];
    size_t n_gpus;              /* 0: every visible GPU */
    double interval_s;          /* 0: no progress lines */
    const char *output;         /* NULL: stderr */
    char **argv;                /* the command, NULL-terminated */
} monitor_args;

/* Parses LIST ("0,1") into a->gpus. Returns 0 or ZBSO_EINVAL naming the entry. */
static int parse_gpus(const char *list, monitor_args *a, zbso_err *err)
{
    const char *p = list;
    a->n_gpus = 0;
    if (*p == '\0')
        return err_set(err, ZBSO_EINVAL, "--gpus '' names no GPU (give indices like 0,1)");
    for (;;) {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        if (*p < '0' || *p > '9' || (*end != ',' && *end != '\0') || v >= 1000)
            return err_set(err, ZBSO_EINVAL, "--gpus '%s': '%.*s' is not a GPU index (an "
                           "integer >= 0)", list, (int)strcspn(p, ","), p);
        if (a->n_gpus == ZBSO_MAX_GPUS)
            return err_set(err, ZBSO_EINVAL, "--gpus '%s' lists more than %d GPUs", list,
                           ZBSO_MAX_GPUS);
        a->gpus[a->n_gpus++] = (int)v;
        if (*end == '\0')
            return 0;
        p = end + 1;
    }
}

/* Parses argv into *a. Returns 0, 1 for --help (usage printed), or ZBSO_EINVAL. */
static int parse_args(int argc, char **argv, monitor_args *a, zbso_err *err)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"gpus", required_argument, NULL, OPT_GPUS},
        {"interval", required_argument, NULL, OPT_INTERVAL},
        {"output", required_argument, NULL, OPT_OUTPUT},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    char *end;
    int c, rc;

    memset(a, 0, sizeof *a);
    optind = 1;
    opterr = 0;
    /* "+": stop at the command, so its own options are left to it. */
    while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_JSON: a->json = true; break;
        case OPT_OUTPUT: a->output = optarg; break;
        case OPT_GPUS:
            if ((rc = parse_gpus(optarg, a, err)) < 0)
                return rc;
            break;
        case OPT_INTERVAL:
            a->interval_s = strtod(optarg, &end);
            if (optarg[0] == '\0' || *end != '\0' ||
                !(a->interval_s >= INTERVAL_MIN_S && a->interval_s <= INTERVAL_MAX_S))
                return err_set(err, ZBSO_EINVAL, "--interval '%s' is not a number of "
                               "seconds in [%g, %g]", optarg, INTERVAL_MIN_S, INTERVAL_MAX_S);
            break;
        case OPT_HELP:
        case 'h':
            fputs(monitor_usage, stdout);
            return 1;
        case ':':
            return err_set(err, ZBSO_EINVAL, "option '%s' needs a value", argv[optind - 1]);
        default:
            return err_set(err, ZBSO_EINVAL, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc || argv[optind][0] == '\0')
        return err_set(err, ZBSO_EINVAL, "no command to run: give it after '--'");
    a->argv = argv + optind;
    return 0;
}

/* The signals passed on to the command. */
static void forwarded_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
}

/* Starts a->argv with the signal mask zbso monitor was started with (old_mask) and the
 * inherited dispositions, streams and process group. Returns 0 with *pid set, or the exit
 * status for a command that cannot be started (message printed). */
static int spawn(char **argv, const sigset_t *old_mask, pid_t *pid)
{
    posix_spawnattr_t attr;
    int e = posix_spawnattr_init(&attr);
    if (e == 0) {
        e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
        if (e == 0)
            e = posix_spawnattr_setsigmask(&attr, old_mask);
        if (e == 0)
            e = posix_spawnp(pid, argv[0], NULL, &attr, argv, environ);
        posix_spawnattr_destroy(&attr);
    }
    if (e == 0)
        return 0;
    fprintf(stderr, "zbso monitor: cannot run the command '%s': %s%s\n", argv[0], strerror(e),
            e == ENOENT && strchr(argv[0], '/') == NULL ? " (not found in PATH)" : "");
    return e == ENOENT ? MON_EXIT_NOT_FOUND : MON_EXIT_CANNOT_RUN;
}

/* The progress line of --interval: time and energy since the start (sums of the closed
 * interval windows) and the average power of the last one. */
typedef struct progress {
    double time_s, energy_j;
    bool failed;               /* the monitor failed once: no more progress lines */
} progress;

static void tick(zbso_monitor *mon, progress *pr, FILE *to)
{
    zbso_measurement m;
    if (pr->failed)
        return;
    if (zbso_monitor_end_window(mon, TICK_WINDOW, &m) < 0 ||
        zbso_monitor_begin_window(mon, TICK_WINDOW) < 0) {
        fprintf(to, "zbso monitor: no more progress lines: %s\n", zbso_monitor_errmsg(mon));
        pr->failed = true;
        return;
    }
    pr->time_s += m.time_s;
    pr->energy_j += m.total_energy_j;
    fprintf(to, "zbso monitor: %.1f s, %.1f J so far (%.1f W over the last %.1f s)\n",
            pr->time_s, pr->energy_j, m.time_s > 0 ? m.total_energy_j / m.time_s : 0.0,
            m.time_s);
    fflush(to);
}

/* Waits for the command to end, passing on SIGINT/SIGTERM/SIGHUP that a process sent to
 * zbso monitor (a terminal's signals reach the command itself: it shares the process
 * group, so those are not sent twice), with a progress line every interval_s when > 0.
 * The forwarded signals and SIGCHLD are blocked by the caller. Returns the wait status. */
static int wait_child(pid_t pid, double interval_s, zbso_monitor *mon, FILE *report)
{
    sigset_t set;
    progress pr = {0};
    double next_tick = clk_mono_s() + interval_s;
    int status = 0;

    forwarded_set(&set);
    sigaddset(&set, SIGCHLD);
    if (interval_s > 0 && zbso_monitor_begin_window(mon, TICK_WINDOW) < 0)
        pr.failed = true;
    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid)
            break;
        if (got < 0 && errno != EINTR) {
            fprintf(stderr, "zbso monitor: cannot wait for the command: %s\n", strerror(errno));
            return -1;
        }
        siginfo_t si;
        int sig;
        if (interval_s > 0 && !pr.failed) {
            double left = next_tick - clk_mono_s();
            if (left <= 0) {
                tick(mon, &pr, report);
                next_tick += interval_s * (1 + floor((clk_mono_s() - next_tick) / interval_s));
                continue;
            }
            struct timespec ts = {(time_t)left, (long)((left - floor(left)) * 1e9)};
            sig = sigtimedwait(&set, &si, &ts);
        } else {
            sig = sigwaitinfo(&set, &si);
        }
        if (sig > 0 && sig != SIGCHLD && si.si_code != SI_KERNEL)
            kill(pid, sig);
    }
    if (interval_s > 0 && !pr.failed) {
        zbso_measurement unused;
        zbso_monitor_end_window(mon, TICK_WINDOW, &unused);
    }
    return status;
}

/* Writes the report as a table: per GPU and total energy, time and average power. */
static void print_table(FILE *to, char **argv, const zbso_measurement *m, const char *model,
                        const char *ended)
{
    fputs("zbso monitor: '", to);
    for (char **p = argv; *p; p++) {
        cli_table_escape(to, *p);
        if (p[1])
            fputc(' ', to);
    }
    fprintf(to, "' %s; %u x %s\n", ended, m->n_gpus, model);
    cli_table *t = cli_table_new(4, "lrrr");
    cli_table_cell(t, "GPU");
    cli_table_cell(t, "energy (J)");
    cli_table_cell(t, "time (s)");
    cli_table_cell(t, "avg power (W)");
    cli_table_end_row(t);
    for (unsigned i = 0; i <= m->n_gpus; i++) {
        double e = i < m->n_gpus ? m->gpu_energy_j[i] : m->total_energy_j;
        if (i < m->n_gpus)
            cli_table_cellf(t, "%d", m->gpu_indices[i]);
        else
            cli_table_cell(t, "total");
        cli_table_cellf(t, "%.3f", e);
        cli_table_cellf(t, "%.3f", m->time_s);
        cli_table_cellf(t, "%.1f", m->time_s > 0 ? e / m->time_s : 0.0);
        cli_table_end_row(t);
    }
    cli_table_print(t, to);
    cli_table_free(t);
}

/* Writes the report as one JSON line. Returns 0, or -1 when out of memory. */
static int print_json(FILE *to, char **argv, const zbso_measurement *m, const char *model,
                      int exit_status, int signal)
{
    json_t *cmd = json_array(), *gpus = json_array();
    int rc = -1;
    for (char **p = argv; *p; p++)
        json_array_append_new(cmd, json_string_nocheck(*p));
    for (unsigned i = 0; i < m->n_gpus; i++)
        json_array_append_new(gpus, json_pack("{s:i,s:f}", "index", m->gpu_indices[i],
                                              "energy_j", m->gpu_energy_j[i]));
    json_t *o = json_pack("{s:o,s:s,s:i,s:f,s:f,s:o,s:i,s:o}", "command", cmd, "gpu_model",
                          model, "gpu_count", (int)m->n_gpus, "time_s", m->time_s, "energy_j",
                          m->total_energy_j, "gpus", gpus, "exit_status", exit_status,
                          "signal", signal > 0 ? json_integer(signal) : json_null());
    char *text = o != NULL ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    if (text != NULL) {
        fprintf(to, "%s\n", text);
        free(text);
        rc = 0;
    }
    json_decref(o);
    return rc;
}

int cli_monitor(int argc, char **argv)
{
    monitor_args a;
    zbso_err err;
    zbso_monitor *mon = NULL;
    zbso_measurement m;
    FILE *report = stderr;
    sigset_t block, old_mask;
    char msg[ZBSO_ERRBUF_MAX] = "";
    char ended[128];
    int status = MON_EXIT_SELF, rc, ws, mrc, sig = 0;
    pid_t pid = -1;

    err_clear(&err);
    if ((rc = parse_args(argc, argv, &a, &err)) != 0) {
        if (rc > 0)
            return CLI_EXIT_OK;
        fprintf(stderr, "zbso monitor: %s\n(zbso monitor --help lists the options)\n",
                err.msg);
        return MON_EXIT_SELF;
    }
    if (a.output != NULL && (report = fopen(a.output, "we")) == NULL) {
        fprintf(stderr, "zbso monitor: cannot open --output '%s': %s\n", a.output,
                strerror(errno));
        return MON_EXIT_SELF;
    }
    if ((rc = zbso_monitor_new(a.n_gpus ? a.gpus : NULL, a.n_gpus, &mon, msg, sizeof msg)) <
        0) {
        fprintf(stderr, "zbso monitor: cannot measure GPU energy: %s\n",
                msg[0] ? msg : zbso_strerror(rc));
        goto out;
    }
    /* Blocked before the command starts, so neither its end nor a signal can come
     * before the wait: they stay pending until wait_child takes them. */
    forwarded_set(&block);
    sigaddset(&block, SIGCHLD);
    sigprocmask(SIG_BLOCK, &block, &old_mask);
    if (zbso_monitor_begin_window(mon, WINDOW) < 0) {
        fprintf(stderr, "zbso monitor: %s\n", zbso_monitor_errmsg(mon));
        goto out;
    }
    if ((rc = spawn(a.argv, &old_mask, &pid)) != 0) {
        zbso_monitor_end_window(mon, WINDOW, &m);
        status = rc;
        goto out;
    }
    /* Progress lines go to stderr even with --output, whose file holds the report alone
     * (one JSON document with --json). */
    ws = wait_child(pid, a.interval_s, mon, stderr);
    mrc = zbso_monitor_end_window(mon, WINDOW, &m);
    if (ws < 0)
        goto out;
    if (WIFSIGNALED(ws)) {
        sig = WTERMSIG(ws);
        status = 128 + sig;
        snprintf(ended, sizeof ended, "was killed by signal %d (%s)", sig, strsignal(sig));
    } else {
        status = WEXITSTATUS(ws);
        snprintf(ended, sizeof ended, "exited with status %d", status);
    }
    if (mrc < 0) {
        fprintf(stderr, "zbso monitor: the command %s, but measuring it failed: %s\n", ended,
                zbso_monitor_errmsg(mon));
        /* The command's failure is the news when it failed; else the measurement's. */
        if (status == 0)
            status = MON_EXIT_SELF;
        goto out;
    }
    if (a.json) {
        if (print_json(report, a.argv, &m, zbso_monitor_gpu_model(mon), status, sig) < 0) {
            fputs("zbso monitor: out of memory writing the report\n", stderr);
            if (status == 0)
                status = MON_EXIT_SELF;
        }
    } else {
        print_table(report, a.argv, &m, zbso_monitor_gpu_model(mon), ended);
    }
out:
    /* The forwarded signals stay blocked until the process exits: one that came after
     * the command ended (a terminal's ^C reaches both) must not cut the report short. */
    zbso_monitor_free(mon);
    if (report != stderr && fclose(report) != 0) {
        fprintf(stderr, "zbso monitor: cannot write --output '%s': %s\n", a.output,
                strerror(errno));
        if (status == 0)
            status = MON_EXIT_SELF;
    }
    return status;
}
