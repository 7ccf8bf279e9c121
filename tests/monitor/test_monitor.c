/* test_monitor.c: the energy monitor against the fake NVML (tests/fakes/fake_nvml.c),
 * scripted per test through environment variables set before zbso_monitor_new: both
 * energy paths agree, overlapping windows, CUDA_VISIBLE_DEVICES, refusals, NVML failures
 * in the middle of a window, misuse, and parallel edge reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "monitor/monitor.h"
#include "util/clock.h"
#include "zbso/zbso.h"

static const char *const fake_vars[] = {
    "FAKE_NVML_INIT_FAIL", "FAKE_NVML_GPUS", "FAKE_NVML_MODELS", "FAKE_NVML_POWER_MW",
    "FAKE_NVML_NO_ENERGY", "FAKE_NVML_ENERGY_DELAY_MS", "FAKE_NVML_MAX_LIMIT_MW",
    "FAKE_NVML_MIN_LIMIT_MW", "FAKE_NVML_FAIL_AFTER", "FAKE_NVML_CONTROL",
    "FAKE_NVML_ENERGY_STEPS_MJ", "CUDA_VISIBLE_DEVICES",
};

static char g_control[64];

/* Monitors a test has open, so teardown frees them even after a failed assertion (a
 * leaked one would keep the fake initialised with this test's script). */
static zbso_monitor *g_open[8];

/* Every test starts from the fake's defaults (1 GPU, H200, 300 W) and no control file. */
static int setup(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof fake_vars / sizeof fake_vars[0]; i++)
        unsetenv(fake_vars[i]);
    setenv("ZBSO_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    g_control[0] = '\0';
    return 0;
}

/* Frees mon and forgets it. */
static void close_mon(zbso_monitor *mon)
{
    for (size_t i = 0; i < sizeof g_open / sizeof g_open[0]; i++)
        if (g_open[i] == mon)
            g_open[i] = NULL;
    zbso_monitor_free(mon);
}

static int teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof g_open / sizeof g_open[0]; i++)
        close_mon(g_open[i]);
    if (g_control[0])
        unlink(g_control);
    return 0;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Opens a monitor that must succeed; prints the message if it does not. */
static zbso_monitor *open_ok(const int *idx, size_t n)
{
    char eb[ZBSO_ERRBUF_MAX];
    zbso_monitor *mon = NULL;
    int rc = zbso_monitor_new(idx, n, &mon, eb, sizeof eb);
    if (rc != 0)
        print_message("zbso_monitor_new: %s\n", eb);
    assert_int_equal(rc, 0);
    assert_non_null(mon);
    for (size_t i = 0; i < sizeof g_open / sizeof g_open[0]; i++)
        if (g_open[i] == NULL) {
            g_open[i] = mon;
            return mon;
        }
    fail_msg("more than %zu monitors open in one test", sizeof g_open / sizeof g_open[0]);
    return NULL;
}

/* Opens a monitor that must fail with code; returns the message in eb. */
static void open_fails(const int *idx, size_t n, int code, char *eb, size_t eb_len)
{
    zbso_monitor *mon = (zbso_monitor *)&mon;
    int rc = zbso_monitor_new(idx, n, &mon, eb, eb_len);
    if (rc == 0)
        zbso_monitor_free(mon); /* unexpected success: leave the fake clean for the next test */
    assert_int_equal(rc, code);
    assert_null(mon);
    assert_true(strlen(eb) > 0);
}

/* Writes text to the control file the fake re-reads on every call (creating it). */
static void control(const char *text)
{
    if (g_control[0] == '\0') {
        snprintf(g_control, sizeof g_control, "/tmp/zbso-fake-nvml-XXXXXX");
        int fd = mkstemp(g_control);
        assert_true(fd >= 0);
        close(fd);
        setenv("FAKE_NVML_CONTROL", g_control, 1);
    }
    FILE *f = fopen(g_control, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* |a - b| <= tol * |b| */
static void assert_close(double a, double b, double tol)
{
    if (fabs(a - b) > tol * fabs(b))
        fail_msg("%.6f and %.6f differ by more than %.1f%%", a, b, tol * 100);
}

/* When a window's begin and end calls were made and returned (CLOCK_MONOTONIC, the clock
 * of the monitor and of the fake). At each edge the monitor reads its clock, then the
 * energy counters: a GPU read by a pool thread once that thread has been woken, the
 * caller's own GPU unless the caller is preempted first. Under CPU load either delay can
 * be many milliseconds, at either edge, so a counter GPU's energy differs from power *
 * time_s by the difference of the two edges' delays (of either sign). It always lies
 * between power * (end called - begin returned) and power * (end returned - begin
 * called), and so does power * time_s. */
typedef struct window_times {
    double begin_called_s, begin_returned_s;
    double end_called_s, end_returned_s;
} window_times;

static void begin_timed(zbso_monitor *mon, const char *name, window_times *wt)
{
    wt->begin_called_s = clk_mono_s();
    assert_int_equal(zbso_monitor_begin_window(mon, name), 0);
    wt->begin_returned_s = clk_mono_s();
}

/* Ends the window begun by begin_timed; checks that its time lies within the calls. */
static zbso_measurement end_timed(zbso_monitor *mon, const char *name, window_times *wt)
{
    zbso_measurement m;
    wt->end_called_s = clk_mono_s();
    int rc = zbso_monitor_end_window(mon, name, &m);
    wt->end_returned_s = clk_mono_s();
    if (rc != 0)
        print_message("end_window: %s\n", zbso_monitor_errmsg(mon));
    assert_int_equal(rc, 0);
    if (m.time_s < wt->end_called_s - wt->begin_returned_s ||
        m.time_s > wt->end_returned_s - wt->begin_called_s)
        fail_msg("window '%s': time %.6f s outside the calls' [%.6f, %.6f] s", name, m.time_s,
                 wt->end_called_s - wt->begin_returned_s,
                 wt->end_returned_s - wt->begin_called_s);
    return m;
}

/* A window of at least seconds; wt (may be NULL) receives when its edges were called. */
static zbso_measurement measure(zbso_monitor *mon, const char *name, double seconds,
                                window_times *wt)
{
    window_times own;
    if (wt == NULL)
        wt = &own;
    begin_timed(mon, name, wt);
    sleep_s(seconds);
    return end_timed(mon, name, wt);
}

/* Checks that j is the energy of a constant p_w over some interval within the window's
 * calls (see window_times), give or take the fake counters' truncation to whole mJ. */
static void assert_energy(double j, double p_w, const window_times *wt)
{
    double lo_s = wt->end_called_s - wt->begin_returned_s;
    double hi_s = wt->end_returned_s - wt->begin_called_s;
    if (j < p_w * lo_s - 0.005 || j > p_w * hi_s + 0.005)
        fail_msg("%.6f J is not %.0f W over [%.6f, %.6f] s (%.6f to %.6f J)", j, p_w, lo_s,
                 hi_s, p_w * lo_s, p_w * hi_s);
}

/* GPU 0 has the energy counter, GPU 1 only power: on the same constant 300 W both report
 * 300 W over the window (the integral of samples exactly over the window's time). */
static void test_counter_and_sampling_agree(void **state)
{
    (void)state;
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_NO_ENERGY", "1", 1);
    setenv("FAKE_NVML_POWER_MW", "300000", 1);
    zbso_monitor *mon = open_ok(NULL, 0);
    window_times wt;
    zbso_measurement m = measure(mon, "agree", 0.5, &wt);
    assert_true(m.time_s >= 0.5);
    assert_int_equal(m.n_gpus, 2);
    assert_energy(m.gpu_energy_j[0], 300.0, &wt);
    assert_energy(m.gpu_energy_j[1], 300.0, &wt);
    assert_close(m.gpu_energy_j[1], 300.0 * m.time_s, 0.02);
    assert_close(m.total_energy_j, m.gpu_energy_j[0] + m.gpu_energy_j[1], 1e-12);
    close_mon(mon);
}

/* An inner window inside an outer one: each matches power over its own time, the outer
 * holds more, on both GPUs. */
static void test_overlapping_windows(void **state)
{
    (void)state;
    const double p_w[2] = {200.0, 400.0};
    zbso_measurement in, out;
    window_times in_t, out_t;
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_NO_ENERGY", "0", 1);
    setenv("FAKE_NVML_POWER_MW", "200000,400000", 1);
    zbso_monitor *mon = open_ok(NULL, 0);
    begin_timed(mon, "outer", &out_t);
    sleep_s(0.1);
    begin_timed(mon, "inner", &in_t);
    sleep_s(0.25);
    in = end_timed(mon, "inner", &in_t);
    sleep_s(0.1);
    out = end_timed(mon, "outer", &out_t);
    assert_true(out.time_s > in.time_s + 0.15);
    for (int i = 0; i < 2; i++) {
        assert_energy(in.gpu_energy_j[i], p_w[i], &in_t);
        assert_energy(out.gpu_energy_j[i], p_w[i], &out_t);
        assert_true(out.gpu_energy_j[i] > in.gpu_energy_j[i] + 0.1 * p_w[i]);
    }
    /* Ended windows are gone; the name can be reused. */
    assert_int_equal(zbso_monitor_end_window(mon, "inner", &in), ZBSO_EBADOP);
    measure(mon, "inner", 0.01, NULL);
    close_mon(mon);
}

/* CUDA index i is the i-th GPU of CUDA_VISIBLE_DEVICES; the powers tell the GPUs apart
 * (a wrong GPU's power is 25% or more off, and the energy check allows no more than the
 * edges' own duration, a few milliseconds of the window unless the machine is loaded). */
static void test_cuda_visible_devices(void **state)
{
    (void)state;
    char eb[ZBSO_ERRBUF_MAX];
    setenv("FAKE_NVML_GPUS", "4", 1);
    setenv("FAKE_NVML_POWER_MW", "100000,200000,300000,400000", 1);
    setenv("CUDA_VISIBLE_DEVICES", "3,1", 1);

    zbso_monitor *mon = open_ok(NULL, 0);
    assert_int_equal(zbso_monitor_gpu_count(mon), 2);
    close_mon(mon);

    const int idx[2] = {1, 0};
    mon = open_ok(idx, 2);
    window_times wt;
    zbso_measurement m = measure(mon, "map", 0.2, &wt);
    assert_int_equal(m.n_gpus, 2);
    assert_int_equal(m.gpu_indices[0], 1);
    assert_int_equal(m.gpu_indices[1], 0);
    assert_energy(m.gpu_energy_j[0], 200.0, &wt); /* CUDA 1 = NVML 1 */
    assert_energy(m.gpu_energy_j[1], 400.0, &wt); /* CUDA 0 = NVML 3 */
    close_mon(mon);

    const int beyond[1] = {2};
    open_fails(beyond, 1, ZBSO_ECONFIG, eb, sizeof eb);
    assert_non_null(strstr(eb, "GPU index 2"));
    const int twice[2] = {0, 0};
    open_fails(twice, 2, ZBSO_ECONFIG, eb, sizeof eb);

    setenv("CUDA_VISIBLE_DEVICES", "0,7", 1);
    open_fails(NULL, 0, ZBSO_ECONFIG, eb, sizeof eb);
    assert_non_null(strstr(eb, "GPU 7"));
    setenv("CUDA_VISIBLE_DEVICES", "GPU-5f2c9e1a", 1);
    open_fails(NULL, 0, ZBSO_ECONFIG, eb, sizeof eb);
    assert_non_null(strstr(eb, "GPU-5f2c9e1a"));
}

static void test_heterogeneous_refused(void **state)
{
    (void)state;
    char eb[ZBSO_ERRBUF_MAX];
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_MODELS", "NVIDIA H200,NVIDIA A100-SXM4-80GB", 1);
    open_fails(NULL, 0, ZBSO_ECONFIG, eb, sizeof eb);
    assert_non_null(strstr(eb, "'NVIDIA H200'"));
    assert_non_null(strstr(eb, "'NVIDIA A100-SXM4-80GB'"));

    /* One model once the other is hidden. */
    setenv("CUDA_VISIBLE_DEVICES", "1", 1);
    zbso_monitor *mon = open_ok(NULL, 0);
    assert_string_equal(zbso_monitor_gpu_model(mon), "NVIDIA A100-SXM4-80GB");
    close_mon(mon);
}

static void test_no_gpus_refused(void **state)
{
    (void)state;
    char eb[ZBSO_ERRBUF_MAX];
    setenv("FAKE_NVML_GPUS", "0", 1);
    open_fails(NULL, 0, ZBSO_ECONFIG, eb, sizeof eb);
    assert_non_null(strstr(eb, "no GPUs"));
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    open_fails(NULL, 0, ZBSO_ECONFIG, eb, sizeof eb);
    assert_non_null(strstr(eb, "CUDA_VISIBLE_DEVICES"));
}

static void test_nvml_missing_or_broken(void **state)
{
    (void)state;
    char eb[ZBSO_ERRBUF_MAX];
    setenv("ZBSO_NVML_LIBRARY", "/nonexistent/dir/libnvidia-ml.so.1", 1);
    open_fails(NULL, 0, ZBSO_ECONFIG, eb, sizeof eb);
    assert_non_null(strstr(eb, "/nonexistent/dir/libnvidia-ml.so.1"));

    /* A library without NVML's functions. */
    setenv("ZBSO_NVML_LIBRARY", "libm.so.6", 1);
    open_fails(NULL, 0, ZBSO_ECONFIG, eb, sizeof eb);
    assert_non_null(strstr(eb, "nvmlInit_v2"));

    setenv("ZBSO_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    setenv("FAKE_NVML_INIT_FAIL", "1", 1);
    open_fails(NULL, 0, ZBSO_ECONFIG, eb, sizeof eb);
    assert_non_null(strstr(eb, "Driver Not Loaded"));

    /* errbuf may be NULL. */
    zbso_monitor *mon = NULL;
    assert_int_equal(zbso_monitor_new(NULL, 0, &mon, NULL, 0), ZBSO_ECONFIG);
    assert_null(mon);
}

/* zbso_monitor_open as ZeusMonitor chooses GPUs: all of them, or none when NVML is
 * missing or sees none (the status says why); none at all without loading NVML; given
 * indices must open. */
static void test_open_gpus_as_zeus(void **state)
{
    (void)state;
    char eb[ZBSO_ERRBUF_MAX];
    zbso_monitor *mon = NULL;
    setenv("ZBSO_NVML_LIBRARY", "/nonexistent/dir/libnvidia-ml.so.1", 1);
    assert_int_equal(zbso_monitor_open(NULL, ZBSO_MONITOR_ALL, NULL, 0, 0, &mon, eb, sizeof eb),
                     0);
    assert_int_equal(zbso_monitor_gpu_count(mon), 0);
    assert_non_null(strstr(zbso_monitor_gpu_status(mon), "/nonexistent/dir/libnvidia-ml"));
    zbso_measurement m = measure(mon, "cpu-only", 0.01, NULL);
    assert_int_equal(m.n_gpus, 0);
    zbso_monitor_free(mon);
    assert_int_equal(zbso_monitor_open(NULL, 0, NULL, 0, 0, &mon, eb, sizeof eb), 0);
    assert_string_equal(zbso_monitor_gpu_status(mon), "");
    zbso_monitor_free(mon);
    const int one[1] = {0};
    assert_int_equal(zbso_monitor_open(one, 1, NULL, 0, 0, &mon, eb, sizeof eb), ZBSO_ECONFIG);
    assert_non_null(strstr(eb, "/nonexistent/dir/libnvidia-ml"));

    setenv("ZBSO_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    setenv("FAKE_NVML_GPUS", "0", 1);
    assert_int_equal(zbso_monitor_open(NULL, ZBSO_MONITOR_ALL, NULL, 0, 0, &mon, eb, sizeof eb),
                     0);
    assert_int_equal(zbso_monitor_gpu_count(mon), 0);
    assert_non_null(strstr(zbso_monitor_gpu_status(mon), "no GPUs"));
    zbso_monitor_free(mon);
    assert_int_equal(zbso_monitor_open(one, 1, NULL, 0, 0, &mon, eb, sizeof eb), ZBSO_ECONFIG);
    assert_non_null(strstr(eb, "no GPUs"));
    assert_int_equal(zbso_monitor_open(NULL, 0, NULL, 0, 0x8, &mon, eb, sizeof eb),
                     ZBSO_EINVAL);
}

/* Counters that do not move read 0 J; with ZBSO_MONITOR_APPROX_INSTANT_ENERGY the window
 * gets the power at its end times its time instead. */
static void test_approx_instant_energy(void **state)
{
    (void)state;
    char eb[ZBSO_ERRBUF_MAX];
    zbso_monitor *mon = NULL;
    setenv("FAKE_NVML_ENERGY_STEPS_MJ", "0", 1);
    setenv("FAKE_NVML_POWER_MW", "300000", 1);
    mon = open_ok(NULL, 0);
    zbso_measurement m = measure(mon, "zero", 0.02, NULL);
    assert_true(m.gpu_energy_j[0] == 0.0);
    close_mon(mon);
    assert_int_equal(zbso_monitor_open(NULL, ZBSO_MONITOR_ALL, NULL, 0,
                                       ZBSO_MONITOR_APPROX_INSTANT_ENERGY, &mon, eb, sizeof eb),
                     0);
    m = measure(mon, "approx", 0.02, NULL);
    assert_true(fabs(m.gpu_energy_j[0] - 300.0 * m.time_s) < 1e-9);
    assert_true(m.gpu_energy_j[0] >= 300.0 * 0.02);
    assert_true(m.total_energy_j == m.gpu_energy_j[0]);
    zbso_monitor_free(mon);
}

/* zbso_gpus_*: the visible GPUs by CUDA index with their facts, read-only. */
static void test_gpus_queries(void **state)
{
    (void)state;
    char eb[ZBSO_ERRBUF_MAX], name[64];
    zbso_gpus *g = NULL;
    unsigned lo = 0, hi = 0, mw = 0;
    unsigned long long mj = 0;
    setenv("FAKE_NVML_GPUS", "3", 1);
    setenv("FAKE_NVML_MODELS", "GPU A,GPU B,GPU C", 1);
    setenv("FAKE_NVML_POWER_MW", "100000,200000,300000", 1);
    setenv("FAKE_NVML_NO_ENERGY", "1", 1);
    setenv("FAKE_NVML_MAX_LIMIT_MW", "450000", 1);
    setenv("CUDA_VISIBLE_DEVICES", "2,1", 1);
    assert_int_equal(zbso_gpus_open(&g, eb, sizeof eb), 0);
    assert_int_equal(zbso_gpus_count(g), 2);
    assert_int_equal(zbso_gpus_name(g, 0, name, sizeof name), 0);
    assert_string_equal(name, "GPU C");
    assert_int_equal(zbso_gpus_name(g, 1, name, sizeof name), 0);
    assert_string_equal(name, "GPU B");
    assert_int_equal(zbso_gpus_power_limit_constraints_mw(g, 1, &lo, &hi), 0);
    assert_int_equal(lo, 100000);
    assert_int_equal(hi, 450000);
    assert_int_equal(zbso_gpus_power_mw(g, 0, &mw), 0);
    assert_int_equal(mw, 300000);
    assert_int_equal(zbso_gpus_energy_mj(g, 0, &mj), 0);
    assert_true(mj >= 1000000);
    assert_int_equal(zbso_gpus_energy_mj(g, 1, &mj), ZBSO_EBADOP); /* NVML GPU 1 */
    assert_non_null(strstr(zbso_gpus_errmsg(g), "no energy counter"));
    assert_int_equal(zbso_gpus_name(g, 2, name, sizeof name), ZBSO_EINVAL);
    assert_non_null(strstr(zbso_gpus_errmsg(g), "GPU index 2"));
    zbso_gpus_free(g);
    zbso_gpus_free(NULL);

    setenv("FAKE_NVML_GPUS", "0", 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    assert_int_equal(zbso_gpus_open(&g, eb, sizeof eb), 0);
    assert_int_equal(zbso_gpus_count(g), 0);
    zbso_gpus_free(g);
    setenv("ZBSO_NVML_LIBRARY", "/nonexistent/dir/libnvidia-ml.so.1", 1);
    assert_int_equal(zbso_gpus_open(&g, eb, sizeof eb), ZBSO_ECONFIG);
    assert_null(g);
    assert_non_null(strstr(eb, "/nonexistent/dir/libnvidia-ml.so.1"));
}

/* The energy counter of GPU 1 fails at the end edge: ZBSO_ERUNTIME naming the GPU and
 * NVML's error, the window is closed, and the next window works again. */
static void test_energy_error_mid_window(void **state)
{
    (void)state;
    zbso_measurement m;
    setenv("FAKE_NVML_GPUS", "2", 1);
    control("");
    zbso_monitor *mon = open_ok(NULL, 0);
    assert_int_equal(zbso_monitor_begin_window(mon, "w"), 0);
    control("energy:1\n");
    m.total_energy_j = -1.0;
    assert_int_equal(zbso_monitor_end_window(mon, "w", &m), ZBSO_ERUNTIME);
    assert_true(m.total_energy_j == -1.0); /* *out untouched on failure */
    const char *msg = zbso_monitor_errmsg(mon);
    assert_non_null(strstr(msg, "GPU 1"));
    assert_non_null(strstr(msg, "GPU is lost"));
    assert_non_null(strstr(msg, "'w'"));
    assert_int_equal(zbso_monitor_end_window(mon, "w", &m), ZBSO_EBADOP);

    /* A failing begin edge opens nothing. */
    assert_int_equal(zbso_monitor_begin_window(mon, "w"), ZBSO_ERUNTIME);
    assert_int_equal(zbso_monitor_end_window(mon, "w", &m), ZBSO_EBADOP);

    control("");
    window_times wt;
    m = measure(mon, "w", 0.05, &wt);
    assert_energy(m.total_energy_j, 600.0, &wt);
    assert_string_equal(zbso_monitor_errmsg(mon), "");
    close_mon(mon);

    /* FAIL_AFTER: monitor_new probes the counter once, begin reads it once, end fails. */
    setenv("FAKE_NVML_GPUS", "1", 1);
    setenv("FAKE_NVML_FAIL_AFTER", "energy:2", 1);
    mon = open_ok(NULL, 0);
    assert_int_equal(zbso_monitor_begin_window(mon, "x"), 0);
    assert_int_equal(zbso_monitor_end_window(mon, "x", &m), ZBSO_ERUNTIME);
    assert_non_null(strstr(zbso_monitor_errmsg(mon), "GPU 0"));
    close_mon(mon);
}

/* A GPU without an energy counter whose power reads fail for a while in the middle of a
 * window: the window fails even though sampling recovered before it ended. */
static void test_sampler_error_mid_window(void **state)
{
    (void)state;
    zbso_measurement m;
    setenv("FAKE_NVML_NO_ENERGY", "0", 1);
    control("");
    zbso_monitor *mon = open_ok(NULL, 0);
    assert_int_equal(zbso_monitor_begin_window(mon, "s"), 0);
    sleep_s(0.05);
    control("power");
    sleep_s(0.06);
    control("");
    sleep_s(0.06);
    assert_int_equal(zbso_monitor_end_window(mon, "s", &m), ZBSO_ERUNTIME);
    const char *msg = zbso_monitor_errmsg(mon);
    assert_non_null(strstr(msg, "power"));
    assert_non_null(strstr(msg, "GPU 0"));
    assert_non_null(strstr(msg, "GPU is lost"));

    m = measure(mon, "s", 0.2, NULL);
    assert_close(m.gpu_energy_j[0], 300.0 * m.time_s, 0.02);
    close_mon(mon);

    /* A GPU with neither a counter nor readable power is refused at once. */
    char eb[ZBSO_ERRBUF_MAX];
    setenv("FAKE_NVML_FAIL_AFTER", "power:0", 1);
    open_fails(NULL, 0, ZBSO_ERUNTIME, eb, sizeof eb);
    assert_non_null(strstr(eb, "GPU is lost"));
}

static void test_bad_operations(void **state)
{
    (void)state;
    char name[16];
    zbso_measurement m;
    zbso_monitor *mon = open_ok(NULL, 0);

    assert_int_equal(zbso_monitor_end_window(mon, "never", &m), ZBSO_EBADOP);
    assert_non_null(strstr(zbso_monitor_errmsg(mon), "'never'"));
    assert_int_equal(zbso_monitor_begin_window(mon, "a"), 0);
    assert_int_equal(zbso_monitor_begin_window(mon, "a"), ZBSO_EBADOP);
    assert_non_null(strstr(zbso_monitor_errmsg(mon), "'a'"));
    assert_int_equal(zbso_monitor_begin_window(mon, NULL), ZBSO_EINVAL);
    assert_string_equal(zbso_monitor_errmsg(mon), "the window name is NULL");
    assert_int_equal(zbso_monitor_begin_window(mon, ""), ZBSO_EINVAL);
    assert_string_equal(zbso_monitor_errmsg(mon), "window name '' is 0 bytes; 1 to 127 allowed");
    /* end_window checks alike; a call that works clears the last message. */
    char longname[129];
    memset(longname, 'n', 128);
    longname[128] = '\0';
    assert_int_equal(zbso_monitor_end_window(mon, longname, &m), ZBSO_EINVAL);
    assert_non_null(strstr(zbso_monitor_errmsg(mon), "is 128 bytes; 1 to 127 allowed"));
    assert_int_equal(zbso_monitor_end_window(mon, NULL, &m), ZBSO_EINVAL);
    assert_string_equal(zbso_monitor_errmsg(mon), "the window name is NULL");
    assert_int_equal(zbso_monitor_begin_window(mon, "b"), 0);
    assert_string_equal(zbso_monitor_errmsg(mon), "");
    assert_int_equal(zbso_monitor_end_window(mon, "b", NULL), 0);
    assert_int_equal(zbso_monitor_begin_window(NULL, "x"), ZBSO_EINVAL);
    assert_int_equal(zbso_monitor_end_window(NULL, "x", &m), ZBSO_EINVAL);

    /* 64 windows at once, not 65. */
    for (int i = 1; i < 64; i++) {
        snprintf(name, sizeof name, "w%d", i);
        assert_int_equal(zbso_monitor_begin_window(mon, name), 0);
    }
    assert_int_equal(zbso_monitor_begin_window(mon, "one-too-many"), ZBSO_EBADOP);
    assert_non_null(strstr(zbso_monitor_errmsg(mon), "64"));
    assert_int_equal(zbso_monitor_end_window(mon, "w10", NULL), 0);
    assert_int_equal(zbso_monitor_begin_window(mon, "one-too-many"), 0);
    close_mon(mon); /* with windows open */
    zbso_monitor_free(NULL);
}

static void test_gpu_facts(void **state)
{
    (void)state;
    setenv("FAKE_NVML_GPUS", "3", 1);
    setenv("FAKE_NVML_MAX_LIMIT_MW", "700000", 1);
    zbso_monitor *mon = open_ok(NULL, 0);
    assert_int_equal(zbso_monitor_gpu_count(mon), 3);
    assert_string_equal(zbso_monitor_gpu_model(mon), "NVIDIA H200");
    assert_int_equal(zbso_monitor_max_power_limit_mw(mon), 700000);
    zbso_measurement m = measure(mon, "facts", 0.01, NULL);
    for (int i = 0; i < 3; i++)
        assert_int_equal(m.gpu_indices[i], i);
    assert_true(mon_job_max_power_w(zbso_monitor_max_power_limit_mw(mon),
                                    zbso_monitor_gpu_count(mon)) == 2100.0);
    close_mon(mon);
}

/* The job's max_power from the GPU facts, as the Zeus client computes it: whole watts. */
static void test_job_max_power(void **state)
{
    (void)state;
    assert_true(mon_job_max_power_w(700500, 4) == 2800.0);
    assert_true(mon_job_max_power_w(300000, 1) == 300.0);
    assert_true(mon_job_max_power_w(999, 8) == 0.0);
    assert_true(mon_job_max_power_w(250999, 2) == 500.0);
    assert_true(mon_job_max_power_w(700000, 0) == 0.0);
    assert_true(mon_job_max_power_w(4294967295u, 64) == 4294967.0 * 64);
}

/* Median over 5 begin+end pairs, in seconds. */
static double edge_pair_s(zbso_monitor *mon)
{
    double t[5];
    for (int i = 0; i < 5; i++) {
        double t0 = clk_mono_s();
        assert_int_equal(zbso_monitor_begin_window(mon, "pair"), 0);
        assert_int_equal(zbso_monitor_end_window(mon, "pair", NULL), 0);
        t[i] = clk_mono_s() - t0;
    }
    for (int i = 1; i < 5; i++)
        for (int k = i; k > 0 && t[k] < t[k - 1]; k--) {
            double x = t[k];
            t[k] = t[k - 1];
            t[k - 1] = x;
        }
    return t[2];
}

/* 8 GPUs whose counter read takes 20 ms: an edge pair costs about 40 ms (parallel), not
 * 320 ms (one GPU after the other). */
static void test_edges_read_in_parallel(void **state)
{
    (void)state;
    setenv("FAKE_NVML_ENERGY_DELAY_MS", "20", 1);
    zbso_monitor *mon = open_ok(NULL, 0);
    double one = edge_pair_s(mon);
    close_mon(mon);
    setenv("FAKE_NVML_GPUS", "8", 1);
    mon = open_ok(NULL, 0);
    double eight = edge_pair_s(mon);
    close_mon(mon);
    print_message("edge pair: 1 GPU %.1f ms, 8 GPUs %.1f ms\n", one * 1e3, eight * 1e3);
    assert_true(one >= 0.040);
    assert_true(eight < 0.120);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_counter_and_sampling_agree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlapping_windows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cuda_visible_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heterogeneous_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_gpus_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nvml_missing_or_broken, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_gpus_as_zeus, setup, teardown),
        cmocka_unit_test_setup_teardown(test_approx_instant_energy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpus_queries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_energy_error_mid_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sampler_error_mid_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_operations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_facts, setup, teardown),
        cmocka_unit_test(test_job_max_power),
        cmocka_unit_test_setup_teardown(test_edges_read_in_parallel, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
