/* test_rapl.c: CPU and DRAM energy from RAPL against a fake powercap tree (a temporary
 * directory laid out as /sys/class/powercap, named by ZBSO_POWERCAP_ROOT): which zones are
 * found, windows across counter wrap-around (between the edges and several times through
 * the polling thread), unreadable or absent RAPL, and a window spanning a failed poll. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "monitor/monitorInt.h"
#include "monitor/rapl.h"
#include "util/clock.h"
#include "zbso/zbso.h"

static char g_root[64];

/* Writes text to root/rel atomically (a new file renamed over the old one), as the kernel
 * would present a new value: a reader sees the old text or the new, never a torn one. */
static void put(const char *rel, const char *text)
{
    char path[512], tmp[520];
    snprintf(path, sizeof path, "%s/%s", g_root, rel);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        fail_msg("cannot write %s: %s", tmp, strerror(errno));
    fputs(text, f);
    fclose(f);
    assert_int_equal(rename(tmp, path), 0);
}

static void put_u64(const char *rel, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu\n", (unsigned long long)v);
    put(rel, buf);
}

static void mkdir_rel(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_root, rel);
    if (mkdir(path, 0755) != 0)
        fail_msg("mkdir %s: %s", path, strerror(errno));
}

/* Adds zone intel-rapl:n (name package-n) with counter value uj and range range_uj, and
 * with dram_uj != UINT64_MAX its DRAM subzone intel-rapl:n:0, as the kernel lays them out
 * (the subzone also linked at the top, as sysfs does). */
static void add_zone(int n, uint64_t uj, uint64_t range_uj, uint64_t dram_uj)
{
    char rel[128], name[32];
    snprintf(rel, sizeof rel, "intel-rapl:%d", n);
    mkdir_rel(rel);
    snprintf(rel, sizeof rel, "intel-rapl:%d/name", n);
    snprintf(name, sizeof name, "package-%d\n", n);
    put(rel, name);
    snprintf(rel, sizeof rel, "intel-rapl:%d/energy_uj", n);
    put_u64(rel, uj);
    snprintf(rel, sizeof rel, "intel-rapl:%d/max_energy_range_uj", n);
    put_u64(rel, range_uj);
    if (dram_uj == UINT64_MAX)
        return;
    snprintf(rel, sizeof rel, "intel-rapl:%d/intel-rapl:%d:0", n, n);
    mkdir_rel(rel);
    snprintf(rel, sizeof rel, "intel-rapl:%d/intel-rapl:%d:0/name", n, n);
    put(rel, "dram\n");
    snprintf(rel, sizeof rel, "intel-rapl:%d/intel-rapl:%d:0/energy_uj", n, n);
    put_u64(rel, dram_uj);
    snprintf(rel, sizeof rel, "intel-rapl:%d/intel-rapl:%d:0/max_energy_range_uj", n, n);
    put_u64(rel, range_uj);
    char target[512], link[512];
    snprintf(target, sizeof target, "%s/intel-rapl:%d/intel-rapl:%d:0", g_root, n, n);
    snprintf(link, sizeof link, "%s/intel-rapl:%d:0", g_root, n);
    assert_int_equal(symlink(target, link), 0);
}

static void set_pkg(int n, uint64_t uj)
{
    char rel[64];
    snprintf(rel, sizeof rel, "intel-rapl:%d/energy_uj", n);
    put_u64(rel, uj);
}

static void set_dram(int n, uint64_t uj)
{
    char rel[64];
    snprintf(rel, sizeof rel, "intel-rapl:%d/intel-rapl:%d:0/energy_uj", n, n);
    put_u64(rel, uj);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* A fresh, empty powercap root with the control-type directory "intel-rapl" and an
 * unrelated zone type, neither of which is a package. */
static int setup(void **state)
{
    (void)state;
    snprintf(g_root, sizeof g_root, "/tmp/zbso-powercap-XXXXXX");
    if (!mkdtemp(g_root))
        return -1;
    setenv("ZBSO_POWERCAP_ROOT", g_root, 1);
    mkdir_rel("intel-rapl");
    mkdir_rel("intel-rapl-mmio:0");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    nftw(g_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    unsetenv("ZBSO_POWERCAP_ROOT");
    return 0;
}

static zbso_monitor *open_cpus(const int *idx, int n)
{
    char eb[ZBSO_ERRBUF_MAX];
    zbso_monitor *mon = NULL;
    int rc = zbso_monitor_open(NULL, 0, idx, n, 0, &mon, eb, sizeof eb);
    if (rc != 0)
        fail_msg("zbso_monitor_open: %s", eb);
    return mon;
}

static zbso_cpu_measurement end_cpu(zbso_monitor *mon, const char *name)
{
    zbso_measurement m;
    zbso_cpu_measurement c;
    int rc = zbso_monitor_end_window_cpu(mon, name, &m, &c);
    if (rc != 0)
        fail_msg("end_window_cpu: %s", zbso_monitor_errmsg(mon));
    assert_int_equal(m.n_gpus, 0);
    assert_true(m.total_energy_j == 0.0);
    return c;
}

static void test_fold(void **state)
{
    (void)state;
    assert_int_equal(rapl_fold(100, 350, 1000), 250);
    assert_int_equal(rapl_fold(900, 50, 1000), 150);          /* one wrap */
    assert_int_equal(rapl_fold(7, 7, 1000), 0);
    assert_int_equal(rapl_fold(1200, 30, 1000), 30);          /* above its own range */
    assert_int_equal(rapl_fold(262143328000ULL, 1000ULL, 262143328850ULL), 1850);
}

/* Packages are the intel-rapl:N entries only, in numeric order (10 after 2). */
static void test_list(void **state)
{
    (void)state;
    int idx[RAPL_ZONES_MAX];
    unsigned n = 99;
    char why[256];
    zbso_err err;
    assert_int_equal(rapl_list(g_root, idx, &n, why, sizeof why, &err), 0);
    assert_int_equal(n, 0);
    assert_non_null(strstr(why, "no intel-rapl:N zone"));
    add_zone(10, 0, 1000, UINT64_MAX);
    add_zone(2, 0, 1000, 5);
    add_zone(0, 0, 1000, UINT64_MAX);
    assert_int_equal(rapl_list(g_root, idx, &n, why, sizeof why, &err), 0);
    assert_int_equal(n, 3);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 2);
    assert_int_equal(idx[2], 10);
    assert_int_equal(rapl_list("/nonexistent/powercap", idx, &n, why, sizeof why, &err), 0);
    assert_int_equal(n, 0);
    assert_non_null(strstr(why, "/nonexistent/powercap"));
}

/* Two packages, the second with DRAM; a window sees each counter's steps, the second
 * package's across a wrap (from range - 100 to 50: 150 uJ). */
static void test_window_and_wrap(void **state)
{
    (void)state;
    add_zone(0, 5000000, 262143328850ULL, UINT64_MAX);
    add_zone(1, 999900, 1000000, 42);
    zbso_monitor *mon = open_cpus(NULL, ZBSO_MONITOR_ALL);
    assert_int_equal(zbso_monitor_cpu_count(mon), 2);
    assert_int_equal(zbso_monitor_cpu_index(mon, 0), 0);
    assert_int_equal(zbso_monitor_cpu_index(mon, 1), 1);
    assert_int_equal(zbso_monitor_cpu_index(mon, 2), -1);
    assert_int_equal(zbso_monitor_cpu_has_dram(mon, 0), 0);
    assert_int_equal(zbso_monitor_cpu_has_dram(mon, 1), 1);
    assert_string_equal(zbso_monitor_cpu_status(mon), "");
    assert_int_equal(zbso_monitor_begin_window(mon, "w"), 0);
    set_pkg(0, 5000000 + 2500000); /* 2.5 J */
    set_pkg(1, 50);                /* wrapped: 100 + 50 uJ */
    set_dram(1, 42 + 700000);      /* 0.7 J */
    zbso_cpu_measurement c = end_cpu(mon, "w");
    assert_int_equal(c.n_cpus, 2);
    assert_int_equal(c.cpu_indices[0], 0);
    assert_int_equal(c.cpu_indices[1], 1);
    assert_true(c.cpu_energy_j[0] == 2.5);
    assert_true(c.cpu_energy_j[1] == 150e-6);
    assert_int_equal(c.has_dram[0], 0);
    assert_int_equal(c.has_dram[1], 1);
    assert_true(c.dram_energy_j[0] == 0.0);
    assert_true(c.dram_energy_j[1] == 0.7);
    /* Counters with their wraps undone: package 1 read 999900, then 50 after a wrap. */
    zbso_cpu_measurement tot;
    assert_int_equal(zbso_monitor_cpu_energy(mon, &tot), 0);
    assert_true(tot.cpu_energy_j[0] == 7.5);
    assert_true(tot.cpu_energy_j[1] == (999900.0 + 150.0) / 1e6);
    assert_true(tot.dram_energy_j[1] == (42.0 + 700000.0) / 1e6);
    zbso_monitor_free(mon);
}

/* Driven round by round (no thread): three wraps seen by polls between two reads add
 * up; without the polls the same readings would give one wrap's worth. */
static void test_polls_count_every_wrap(void **state)
{
    (void)state;
    rapl_set s;
    zbso_err err;
    uint64_t pkg[1], dram[1];
    int idx[1] = {0};
    add_zone(0, 100, 1000, 900);
    assert_int_equal(rapl_open(&s, g_root, idx, 1, &err), 0);
    assert_true(s.zones[0].has_dram);
    const uint64_t steps[] = {600, 300, 900, 200, 700}; /* 500, wrap 700, 600, wrap 300, 500 */
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        set_pkg(0, steps[i]);
        set_dram(0, steps[i]);
        rapl_poll_once(&s);
    }
    assert_int_equal(rapl_read(&s, pkg, dram, NULL, &err), 0);
    assert_int_equal(pkg[0], 500 + 700 + 600 + 300 + 500);
    assert_int_equal(dram[0], 700 + 700 + 600 + 300 + 500); /* from 900: two wraps first */
    assert_int_equal(s.polls, 5);
    assert_int_equal(s.fail_seq, 0);
    rapl_close(&s);
}

/* rapl_set.polls under its lock. */
static unsigned long polls_of(rapl_set *s)
{
    pthread_mutex_lock(&s->mu);
    unsigned long n = s->polls;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Waits (up to 20 s, for a loaded machine) until the thread completed two more rounds,
 * so it has read whatever was written before the call. */
static void await_polls(rapl_set *s)
{
    unsigned long want = polls_of(s) + 2;
    double deadline = clk_mono_s() + 20.0;
    while (polls_of(s) < want) {
        if (clk_mono_s() > deadline)
            fail_msg("the RAPL thread did no round for 20 s");
        clk_sleep_s(0.002);
    }
}

/* The thread itself: a 1 J counter is polled every 10 ms, and two wraps it saw between
 * two reads are both counted. */
static void test_thread_sees_wraps(void **state)
{
    (void)state;
    rapl_set s;
    zbso_err err;
    uint64_t before[1], after[1];
    int idx[1] = {0};
    add_zone(0, 100000, 1000000, UINT64_MAX);
    assert_int_equal(rapl_open(&s, g_root, idx, 1, &err), 0);
    assert_int_equal(rapl_start(&s, &err), 0);
    assert_true(s.period_s == RAPL_PERIOD_MIN_S);
    assert_int_equal(rapl_read(&s, before, NULL, NULL, &err), 0);
    set_pkg(0, 900000); /* +0.8 J */
    await_polls(&s);
    set_pkg(0, 50000);  /* wrap: +0.15 J */
    await_polls(&s);
    set_pkg(0, 800000); /* +0.75 J */
    await_polls(&s);
    set_pkg(0, 10000);  /* wrap: +0.21 J */
    await_polls(&s);
    assert_int_equal(rapl_read(&s, after, NULL, NULL, &err), 0);
    assert_int_equal(after[0] - before[0], 800000 + 150000 + 750000 + 210000);
    rapl_close(&s);
    rapl_close(&s); /* twice is a no-op */
}

/* A real counter's range (262 kJ) is polled once a second, as Zeus polls. */
static void test_period_of_real_range(void **state)
{
    (void)state;
    rapl_set s;
    zbso_err err;
    int idx[1] = {0};
    add_zone(0, 0, 262143328850ULL, UINT64_MAX);
    assert_int_equal(rapl_open(&s, g_root, idx, 1, &err), 0);
    assert_int_equal(rapl_start(&s, &err), 0);
    assert_true(s.period_s == RAPL_PERIOD_MAX_S);
    rapl_close(&s);
}

/* No RAPL: every CPU asked for gives none, and the status says why; asked by index it is
 * an error naming the index. An unreadable counter (a directory here: as root, file modes
 * do not stop reads) is the same, with the file's path and error. */
static void test_absent_or_unreadable(void **state)
{
    (void)state;
    char eb[ZBSO_ERRBUF_MAX];
    zbso_monitor *mon = open_cpus(NULL, ZBSO_MONITOR_ALL);
    assert_int_equal(zbso_monitor_cpu_count(mon), 0);
    assert_non_null(strstr(zbso_monitor_cpu_status(mon), "RAPL is not available"));
    assert_non_null(strstr(zbso_monitor_cpu_status(mon), g_root));
    assert_int_equal(zbso_monitor_begin_window(mon, "w"), 0);
    zbso_cpu_measurement c = end_cpu(mon, "w");
    assert_int_equal(c.n_cpus, 0);
    zbso_monitor_free(mon);

    int idx[1] = {3};
    mon = (zbso_monitor *)&mon;
    assert_int_equal(zbso_monitor_open(NULL, 0, idx, 1, 0, &mon, eb, sizeof eb),
                     ZBSO_ECONFIG);
    assert_null(mon);
    assert_non_null(strstr(eb, "CPU index 3"));
    assert_non_null(strstr(eb, "intel-rapl:3"));

    add_zone(0, 1, 1000, UINT64_MAX);
    char path[256];
    snprintf(path, sizeof path, "%s/intel-rapl:0/energy_uj", g_root);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkdir(path, 0755), 0);
    mon = open_cpus(NULL, ZBSO_MONITOR_ALL);
    assert_int_equal(zbso_monitor_cpu_count(mon), 0);
    const char *st = zbso_monitor_cpu_status(mon);
    assert_non_null(strstr(st, "RAPL is not readable"));
    assert_non_null(strstr(st, path));
    zbso_monitor_free(mon);
    idx[0] = 0;
    assert_int_equal(zbso_monitor_open(NULL, 0, idx, 1, 0, &mon, eb, sizeof eb),
                     ZBSO_ECONFIG);
    assert_non_null(strstr(eb, "CPU index 0"));
    assert_non_null(strstr(eb, path));
    assert_int_equal(zbso_monitor_open(NULL, 0, NULL, 1, 0, &mon, eb, sizeof eb),
                     ZBSO_EINVAL);
}

/* The RAPL thread's failed rounds so far, under its lock. */
static unsigned long fails_of(zbso_monitor *mon)
{
    pthread_mutex_lock(&mon->rapl.mu);
    unsigned long n = mon->rapl.fail_seq;
    pthread_mutex_unlock(&mon->rapl.mu);
    return n;
}

/* A counter that is unreadable for a while mid-window: the thread's failed round makes the
 * window fail (a wrap might have been missed) although both edges read it. */
static void test_failed_poll_fails_window(void **state)
{
    (void)state;
    add_zone(0, 10, 1000000, UINT64_MAX);
    int idx[1] = {0};
    zbso_monitor *mon = open_cpus(idx, 1);
    assert_int_equal(zbso_monitor_begin_window(mon, "w"), 0);
    char path[256], saved[270];
    snprintf(path, sizeof path, "%s/intel-rapl:0/energy_uj", g_root);
    snprintf(saved, sizeof saved, "%s.saved", path);
    assert_int_equal(rename(path, saved), 0);
    double deadline = clk_mono_s() + 20.0;
    while (fails_of(mon) == 0) {
        if (clk_mono_s() > deadline)
            fail_msg("the RAPL thread did not fail a round in 20 s");
        clk_sleep_s(0.002);
    }
    assert_int_equal(rename(saved, path), 0);
    zbso_measurement m;
    zbso_cpu_measurement c;
    assert_int_equal(zbso_monitor_end_window_cpu(mon, "w", &m, &c), ZBSO_ERUNTIME);
    const char *msg = zbso_monitor_errmsg(mon);
    assert_non_null(strstr(msg, "wrap-around may have been missed"));
    assert_non_null(strstr(msg, path));
    /* A window after the failure measures again. */
    assert_int_equal(zbso_monitor_begin_window(mon, "w"), 0);
    set_pkg(0, 1010);
    c = end_cpu(mon, "w");
    assert_true(c.cpu_energy_j[0] == 1000e-6);
    zbso_monitor_free(mon);
}

/* Cancel and reset close windows without reading. */
static void test_cancel_and_reset(void **state)
{
    (void)state;
    add_zone(0, 10, 1000000, UINT64_MAX);
    zbso_monitor *mon = open_cpus(NULL, ZBSO_MONITOR_ALL);
    assert_int_equal(zbso_monitor_cancel_window(mon, "none"), ZBSO_EBADOP);
    assert_int_equal(zbso_monitor_begin_window(mon, "a"), 0);
    assert_int_equal(zbso_monitor_begin_window(mon, "b"), 0);
    assert_int_equal(zbso_monitor_begin_window(mon, "c"), 0);
    assert_int_equal(zbso_monitor_cancel_window(mon, "a"), 0);
    assert_int_equal(zbso_monitor_cancel_window(mon, "a"), ZBSO_EBADOP);
    assert_int_equal(zbso_monitor_reset_windows(mon), 2);
    assert_int_equal(zbso_monitor_reset_windows(mon), 0);
    zbso_measurement m;
    assert_int_equal(zbso_monitor_end_window(mon, "b", &m), ZBSO_EBADOP);
    assert_int_equal(zbso_monitor_begin_window(mon, "b"), 0);
    zbso_monitor_free(mon);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fold),
        cmocka_unit_test_setup_teardown(test_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_and_wrap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_polls_count_every_wrap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_thread_sees_wraps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_period_of_real_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_absent_or_unreadable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_poll_fails_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_and_reset, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
