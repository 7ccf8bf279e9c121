/* monitor_bench.c: zbso-monitor-bench prints what a measurement window's edges cost (one
 * begin + end pair) with 1 GPU and with N GPUs, and the ratio, against the fake NVML of
 * the build (energy read delayed 4 ms, as on an H200) or a real NVML (--nvml). Reads only;
 * changes no GPU setting. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "zbso/zbso.h"

#define PAIRS_MAX 10000
#define WARMUP_PAIRS 3

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Times pairs begin+end pairs on mon (after a warm-up) and fills the median, 90th
 * percentile and minimum in ms. Returns 0, or the failing call's code after printing
 * its message. */
static int time_pairs(zbso_monitor *mon, int pairs, double *med_ms, double *p90_ms,
                      double *min_ms)
{
    static double t[PAIRS_MAX];
    for (int i = 0; i < WARMUP_PAIRS + pairs; i++) {
        double t0 = clk_mono_s();
        int rc = zbso_monitor_begin_window(mon, "bench");
        if (rc == 0)
            rc = zbso_monitor_end_window(mon, "bench", NULL);
        if (rc < 0) {
            fprintf(stderr, "zbso-monitor-bench: %s\n", zbso_monitor_errmsg(mon));
            return rc;
        }
        if (i >= WARMUP_PAIRS)
            t[i - WARMUP_PAIRS] = (clk_mono_s() - t0) * 1e3;
    }
    qsort(t, (size_t)pairs, sizeof t[0], cmp_double);
    *med_ms = t[pairs / 2];
    *p90_ms = t[(pairs * 9) / 10 < pairs ? (pairs * 9) / 10 : pairs - 1];
    *min_ms = t[0];
    return 0;
}

/* Opens a monitor on GPUs 0..n-1 (all visible when n is 0) into *mon. Returns 0, or the
 * code after printing the message. */
static int open_monitor(int n, zbso_monitor **mon)
{
    int idx[ZBSO_MAX_GPUS];
    char eb[ZBSO_ERRBUF_MAX];
    for (int i = 0; i < n; i++)
        idx[i] = i;
    int rc = zbso_monitor_new(n > 0 ? idx : NULL, (size_t)n, mon, eb, sizeof eb);
    if (rc < 0)
        fprintf(stderr, "zbso-monitor-bench: %s\n", eb);
    return rc;
}

/* Opens a monitor on GPUs 0..n-1 (all visible when n is 0), prints one line of figures
 * and leaves the median in *med_ms and the GPU count in *n_out. Returns 0 or the code. */
static int run_case(int n, int pairs, double *med_ms, unsigned *n_out)
{
    zbso_monitor *mon = NULL;
    double p90, min;
    int rc = open_monitor(n, &mon);
    if (rc < 0)
        return rc;
    *n_out = zbso_monitor_gpu_count(mon);
    rc = time_pairs(mon, pairs, med_ms, &p90, &min);
    if (rc == 0)
        printf("%2u x %s: begin+end pair median %.3f ms, p90 %.3f ms, min %.3f ms "
               "(%d pairs)\n",
               *n_out, zbso_monitor_gpu_model(mon), *med_ms, p90, min, pairs);
    zbso_monitor_free(mon);
    return rc;
}

/* Measures one window of seconds on all chosen GPUs and prints energy and mean power per
 * GPU: a sanity check that the readings are plausible on real hardware. */
static int run_window(int n, double seconds)
{
    zbso_monitor *mon = NULL;
    zbso_measurement m;
    int rc = open_monitor(n, &mon);
    if (rc < 0)
        return rc;
    rc = zbso_monitor_begin_window(mon, "window");
    if (rc == 0) {
        clk_sleep_s(seconds);
        rc = zbso_monitor_end_window(mon, "window", &m);
    }
    if (rc < 0) {
        fprintf(stderr, "zbso-monitor-bench: %s\n", zbso_monitor_errmsg(mon));
    } else {
        printf("window of %.3f s: total %.3f J (max power limit %u mW)\n", m.time_s,
               m.total_energy_j, zbso_monitor_max_power_limit_mw(mon));
        for (unsigned i = 0; i < m.n_gpus; i++)
            printf("  GPU %d: %.3f J, mean %.1f W\n", m.gpu_indices[i], m.gpu_energy_j[i],
                   m.gpu_energy_j[i] / m.time_s);
    }
    zbso_monitor_free(mon);
    return rc;
}

/* The number of GPUs a monitor of every visible GPU has (0 when it cannot open). */
static unsigned count_gpus(void)
{
    zbso_monitor *mon = NULL;
    if (zbso_monitor_new(NULL, 0, &mon, NULL, 0) < 0)
        return 0;
    unsigned n = zbso_monitor_gpu_count(mon);
    zbso_monitor_free(mon);
    return n;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: zbso-monitor-bench [--nvml PATH] [--gpus N] [--pairs K] [--delay-ms D]\n"
            "                          [--window-s S]\n"
            "  --nvml PATH     NVML library (default: the fake from the build,\n"
            "                  %s)\n"
            "  --gpus N        GPUs for the multi-GPU case (fake: 8; real NVML: 0 = all)\n"
            "  --pairs K       timed begin+end pairs per case (30)\n"
            "  --delay-ms D    fake only (a path containing \"fake_nvml\"): delay of each\n"
            "                  energy-counter read (4)\n"
            "  --window-s S    also measure one window of S seconds (0.5; 0 skips)\n",
            ZBSO_FAKE_NVML_PATH);
}

/* Parses a number in [lo, hi] from text or exits with a message naming the flag. */
static double parse_num(const char *flag, const char *text, double lo, double hi)
{
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || !(v >= lo && v <= hi)) {
        fprintf(stderr, "zbso-monitor-bench: %s '%s' must be a number in [%g, %g]\n", flag,
                text, lo, hi);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"nvml", required_argument, NULL, 'n'},   {"gpus", required_argument, NULL, 'g'},
        {"pairs", required_argument, NULL, 'p'},  {"delay-ms", required_argument, NULL, 'd'},
        {"window-s", required_argument, NULL, 'w'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *nvml = ZBSO_FAKE_NVML_PATH;
    int gpus = -1, pairs = 30;
    double delay_ms = 4.0, window_s = 0.5;
    int c;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'n': nvml = optarg; break;
        case 'g': gpus = (int)parse_num("--gpus", optarg, 0, ZBSO_MAX_GPUS); break;
        case 'p': pairs = (int)parse_num("--pairs", optarg, 1, PAIRS_MAX); break;
        case 'd': delay_ms = parse_num("--delay-ms", optarg, 0, 10000); break;
        case 'w': window_s = parse_num("--window-s", optarg, 0, 3600); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    /* Any build of the fake (not only this build's) takes the fake's script. */
    int fake = strstr(nvml, "fake_nvml") != NULL;
    if (gpus < 0)
        gpus = fake ? 8 : 0;
    setenv("ZBSO_NVML_LIBRARY", nvml, 1);
    if (fake) {
        char buf[32];
        snprintf(buf, sizeof buf, "%d", gpus > 0 ? gpus : 8);
        setenv("FAKE_NVML_GPUS", buf, 1);
        snprintf(buf, sizeof buf, "%g", delay_ms);
        setenv("FAKE_NVML_ENERGY_DELAY_MS", buf, 1);
        printf("NVML: fake (%s), energy read delay %g ms\n", nvml, delay_ms);
    } else {
        printf("NVML: %s\n", nvml);
    }

    double one_ms = 0, many_ms = 0;
    unsigned n_one = 0, n_many = 0;
    if (run_case(1, pairs, &one_ms, &n_one) < 0)
        return 1;
    if (gpus != 1 && (gpus > 1 || count_gpus() > 1)) {
        if (run_case(gpus, pairs, &many_ms, &n_many) < 0)
            return 1;
        printf("ratio %u GPUs / 1 GPU: %.3f (target <= 1.2)\n", n_many, many_ms / one_ms);
    }
    if (window_s > 0 && run_window(gpus, window_s) < 0)
        return 1;
    return 0;
}
