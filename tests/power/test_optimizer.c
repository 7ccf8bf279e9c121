/* test_optimizer.c: libzbso's power-limit optimizer (zbso_power_optimizer_*, SPEC §6.1)
 * against the fake NVML and a real `zbso serve`: the limits set step by step, the choice of
 * each selector on figures worked out by hand (windows measured by the test's own ops, so
 * no clock is involved), the limits put back, observer and max modes, Zeus's profile file,
 * and the server's profile of a batch size reused by the next run with no profiling set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../client/serve.h"
#include "zbso/zbso.h"

static char dir[64], state[128], state_dir[128], url[64];
static pid_t server_pid;

/* Per step at each limit (W): 300 -> 1.0 s 250 J, 200 -> 1.3 s 220 J, 100 -> 1.8 s
 * 240 J (tests/unit/test_core_powerlimit.c's figures, 250 W left out). */
static double fig_time(int64_t w)
{
    return w == 300 ? 1.0 : w == 200 ? 1.3 : 1.8;
}

static double fig_energy(int64_t w)
{
    return w == 300 ? 250.0 : w == 200 ? 220.0 : 240.0;
}

/* The test's window ops: a window of W watts measures profile_steps steps of its figures
 * (the name ends in the limit, as Zeus names it); counts begins, ends and cancels. */
typedef struct fake_mon {
    int64_t steps;
    int begins, ends, cancels;
} fake_mon;

static int fm_begin(void *arg, const char *name, char *errbuf, size_t len)
{
    fake_mon *m = arg;
    assert_non_null(strstr(name, "__GlobalPowerLimitOptimizer_"));
    m->begins++;
    return 0;
}

static int fm_end(void *arg, const char *name, int cancel, double *t, double *e, char *errbuf,
                  size_t len)
{
    fake_mon *m = arg;
    int64_t w = strtoll(strrchr(name, '_') + 1, NULL, 10);
    if (cancel) {
        m->cancels++;
        return 0;
    }
    m->ends++;
    *t = fig_time(w) * (double)m->steps;
    *e = fig_energy(w) * (double)m->steps;
    return 0;
}

/* The set calls in the fake NVML's file, as "W W W" (GPU 0's), and their count. */
static int sets(char *out, size_t cap)
{
    char line[128];
    int n = 0;
    size_t len = 0;
    out[0] = '\0';
    FILE *f = fopen(state, "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        unsigned g, mw;
        if (sscanf(line, "set %u %u", &g, &mw) == 2 && g == 0) {
            len += (size_t)snprintf(out + len, cap - len, "%s%u", n ? " " : "", mw / 1000);
            n++;
        }
    }
    fclose(f);
    return n;
}

static int group_setup(void **unused)
{
    (void)unused;
    snprintf(dir, sizeof dir, "/tmp/zbso-plo-XXXXXX");
    assert_non_null(mkdtemp(dir));
    serve_clean_env();
    int port = serve_start(dir, "plo.db", 0, &server_pid);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    snprintf(state, sizeof state, "%s/limits", dir);
    setenv("FAKE_NVML_STATE", state, 1);
    snprintf(state_dir, sizeof state_dir, "%s/state", dir);
    setenv("ZBSO_STATE_DIR", state_dir, 1);
    setenv("FAKE_NVML_GPUS", "1", 1);
    setenv("FAKE_NVML_MIN_LIMIT_MW", "100000", 1);
    setenv("FAKE_NVML_MAX_LIMIT_MW", "300000", 1);
    return 0;
}

static int group_teardown(void **unused)
{
    char cmd[128];
    (void)unused;
    serve_stop(server_pid, SIGTERM);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int setup(void **unused)
{
    (void)unused;
    unlink(state);
    unsetenv("FAKE_NVML_LIMIT_MW");
    unsetenv("FAKE_NVML_DEFAULT_LIMIT_MW");
    unsetenv("FAKE_NVML_SET_FAIL");
    unsetenv("ZBSO_POWER_LIMIT");
    unsetenv("ZEUS_PROFILE_PARAMS");
    unsetenv("ZEUS_USE_OPTIMAL_PL");
    unsetenv("ZEUS_BSO_SERVER_URL");
    unsetenv("ZEUS_BSO_JOB_ID");
    unsetenv("ZEUS_BATCH_SIZE");
    unsetenv("ZEUS_BSO_TRIAL_NUMBER");
    return 0;
}

/* Options: 100 W steps from 300 W, wait 1, warm-up 1, 2 steps measured; m measures. */
static zbso_power_options opts(fake_mon *m)
{
    static zbso_power_window_ops ops;
    zbso_power_options o;
    zbso_power_options_init(&o);
    m->steps = 2;
    ops = (zbso_power_window_ops){m, fm_begin, fm_end};
    o.ops = &ops;
    o.wait_steps = 1;
    o.warmup_steps = 1;
    o.profile_steps = 2;
    o.pl_step_w = 100;
    return o;
}

static zbso_power_optimizer *make(const zbso_power_options *o)
{
    zbso_power_optimizer *p = NULL;
    char err[ZBSO_ERRBUF_MAX];
    int rc = zbso_power_optimizer_new(o, &p, err, sizeof err);
    if (rc != 0)
        fail_msg("zbso_power_optimizer_new: %d %s", rc, err);
    return p;
}

static void steps(zbso_power_optimizer *p, int n)
{
    for (int i = 0; i < n; i++)
        assert_int_equal(zbso_power_optimizer_on_step_begin(p), 0);
}

static void test_sequence_and_restore(void **unused)
{
    fake_mon m = {0};
    char log[256];
    (void)unused;
    /* The GPU starts at 250 W: the highest limit is set first, and 250 W is put back. */
    setenv("FAKE_NVML_LIMIT_MW", "250000", 1);
    setenv("FAKE_NVML_DEFAULT_LIMIT_MW", "250000", 1);   /* the GPU's original */
    zbso_power_options o = opts(&m);
    o.selector = ZBSO_PL_ZEUS_COST;
    o.eta_knob = 0.9;   /* 0.9 E + 30 T: 255, 237, 270 -> 200 W */
    zbso_power_optimizer *p = make(&o);
    assert_string_equal(zbso_power_optimizer_actuator(p), "NVML");
    assert_int_equal(zbso_power_optimizer_limit_mw(p), 300000);
    assert_int_equal(zbso_power_optimizer_state(p), 0);
    /* step 1 waits; 2 sets 300 W (already) and warms up; 3 measures 3-4; 5 ends it and
     * warms 200 W up; 6 measures 6-7; 8 ends, 100 W; 9 measures 9-10; 11 ends: Done. */
    steps(p, 10);
    assert_int_equal(zbso_power_optimizer_state(p), 2);
    assert_int_equal(sets(log, sizeof log), 3);
    assert_string_equal(log, "300 200 100");
    steps(p, 1);
    assert_int_equal(zbso_power_optimizer_state(p), 3);
    assert_int_equal(zbso_power_optimizer_optimal_mw(p), 200000);
    assert_string_equal(zbso_power_optimizer_source(p), "profiling");
    assert_int_equal(zbso_power_optimizer_profiling_steps(p), 11);
    int64_t pl[4];
    double t[4], e[4];
    assert_int_equal(zbso_power_optimizer_measurements(p, pl, t, e, 4), 3);
    assert_true(pl[0] == 300 && pl[1] == 200 && pl[2] == 100);
    assert_true(t[1] == 1.3 && e[1] == 220.0);    /* per step */
    assert_true(m.begins == 3 && m.ends == 3 && m.cancels == 0);
    steps(p, 5);
    assert_int_equal(sets(log, sizeof log), 4);
    int64_t n;
    double at, ae;
    zbso_power_optimizer_accounted(p, &n, &at, &ae);
    assert_true(n == 5 && at == 5 * 1.3 && ae == 5 * 220.0);
    zbso_power_optimizer_free(p);
    assert_int_equal(sets(log, sizeof log), 5);
    assert_string_equal(log, "300 200 100 200 250");
}

static int64_t choice(int selector, double eta, double factor)
{
    fake_mon m = {0};
    zbso_power_options o = opts(&m);
    o.selector = selector;
    o.eta_knob = eta;
    o.max_slowdown_factor = factor;
    zbso_power_optimizer *p = make(&o);
    steps(p, 11);
    assert_int_equal(zbso_power_optimizer_state(p), 3);
    int64_t w = zbso_power_optimizer_optimal_mw(p) / 1000;
    zbso_power_optimizer_free(p);
    return w;
}

static void test_each_selector(void **unused)
{
    (void)unused;
    assert_int_equal(choice(ZBSO_PL_ENERGY, 0, 1), 200);          /* 220 J */
    assert_int_equal(choice(ZBSO_PL_TIME, 0, 1), 300);            /* 1.0 s */
    assert_int_equal(choice(ZBSO_PL_ZEUS_COST, 0.5, 1), 300);     /* 275, 305, 390 */
    assert_int_equal(choice(ZBSO_PL_ZEUS_COST, 0.9, 1), 200);
    assert_int_equal(choice(ZBSO_PL_MAX_SLOWDOWN, 0, 1.25), 300); /* 1.3 > 1.25 */
    assert_int_equal(choice(ZBSO_PL_MAX_SLOWDOWN, 0, 1.3), 200);
    assert_int_equal(choice(ZBSO_PL_MAX_SLOWDOWN, 0, 2.0), 100);
    /* A bad selector parameter is refused at creation, naming it. */
    fake_mon m = {0};
    zbso_power_options o = opts(&m);
    zbso_power_optimizer *p = NULL;
    char err[ZBSO_ERRBUF_MAX];
    o.max_slowdown_factor = 0.5;
    o.selector = ZBSO_PL_MAX_SLOWDOWN;
    assert_int_equal(zbso_power_optimizer_new(&o, &p, err, sizeof err), ZBSO_EINVAL);
    assert_null(p);
    assert_non_null(strstr(err, "max_slowdown_factor must be greater than or equal to 1.0"));
}

static void test_observer_and_max(void **unused)
{
    fake_mon m = {0};
    char log[256];
    (void)unused;
    setenv("FAKE_NVML_LIMIT_MW", "250000", 1);
    setenv("FAKE_NVML_DEFAULT_LIMIT_MW", "250000", 1);   /* the GPU's original */
    setenv("ZBSO_POWER_LIMIT", "observe", 1);
    zbso_power_options o = opts(&m);
    o.selector = ZBSO_PL_ENERGY;
    zbso_power_optimizer *p = make(&o);
    assert_string_equal(zbso_power_optimizer_actuator(p), "observer mode (nothing is set)");
    steps(p, 14);
    assert_int_equal(zbso_power_optimizer_optimal_mw(p), 200000);
    assert_int_equal(zbso_power_optimizer_limit_mw(p), 200000);
    zbso_power_optimizer_free(p);
    assert_int_equal(sets(log, sizeof log), 0);   /* never a set call */

    setenv("ZBSO_POWER_LIMIT", "max", 1);
    p = make(&o);
    steps(p, 14);
    assert_string_equal(zbso_power_optimizer_source(p), "max");
    assert_int_equal(zbso_power_optimizer_optimal_mw(p), 300000);
    assert_int_equal(m.begins, 3);                /* no window in max mode */
    zbso_power_optimizer_free(p);
    assert_int_equal(sets(log, sizeof log), 2);
    assert_string_equal(log, "300 250");

    setenv("ZBSO_POWER_LIMIT", "fast", 1);
    char err[ZBSO_ERRBUF_MAX];
    assert_int_equal(zbso_power_optimizer_new(&o, &p, err, sizeof err), ZBSO_ECONFIG);
    assert_non_null(strstr(err, "ZBSO_POWER_LIMIT='fast' is not jit, max or observe"));
    unsetenv("ZBSO_POWER_LIMIT");
    setenv("ZEUS_PROFILE_PARAMS", "3", 1);
    assert_int_equal(zbso_power_optimizer_new(&o, &p, err, sizeof err), ZBSO_ECONFIG);
    assert_non_null(strstr(err, "ZEUS_PROFILE_PARAMS='3'"));
}

static void test_no_privilege(void **unused)
{
    fake_mon m = {0};
    zbso_power_options o = opts(&m);
    zbso_power_optimizer *p = NULL;
    char err[ZBSO_ERRBUF_MAX];
    (void)unused;
    setenv("FAKE_NVML_LIMIT_MW", "250000", 1);
    setenv("FAKE_NVML_DEFAULT_LIMIT_MW", "250000", 1);   /* the GPU's original */
    setenv("FAKE_NVML_SET_FAIL", "noperm", 1);
    assert_int_equal(zbso_power_optimizer_new(&o, &p, err, sizeof err), ZBSO_EPERM);
    assert_null(p);
    assert_non_null(strstr(err, "CAP_SYS_ADMIN"));
    assert_non_null(strstr(err, "observer mode"));
}

static void test_profile_file(void **unused)
{
    fake_mon m = {0};
    char path[160], log[256];
    (void)unused;
    snprintf(path, sizeof path, "%s/profile.json", dir);
    unlink(path);
    zbso_power_options o = opts(&m);
    o.selector = ZBSO_PL_ENERGY;
    o.profile_path = path;
    zbso_power_optimizer *p = make(&o);
    steps(p, 11);
    zbso_power_optimizer_free(p);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char text[1024];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    /* Zeus's file: totals over profile_steps (2) steps. */
    assert_non_null(strstr(text, "\"measurements\""));
    assert_non_null(strstr(text, "\"power_limit\": 200"));
    assert_non_null(strstr(text, "\"energy\": 440.0"));
    unlink(state);
    p = make(&o);
    assert_string_equal(zbso_power_optimizer_source(p), "file");
    assert_int_equal(zbso_power_optimizer_optimal_mw(p), 200000);
    steps(p, 3);
    assert_int_equal(zbso_power_optimizer_profiling_steps(p), 0);
    zbso_power_optimizer_free(p);
    assert_int_equal(sets(log, sizeof log), 2);
    assert_string_equal(log, "200 300");
}

/* Registers a job on the test's server and dispatches a trial; returns its batch size
 * and sets the environment `zbso run` would. */
static int64_t trial_env(zbso_client **out, const char *job)
{
    char err[ZBSO_ERRBUF_MAX], spec[256];
    int64_t bs = 0;
    snprintf(spec, sizeof spec, "{\"job_id\":\"%s\",\"job_id_prefix\":\"plo\",\"batch_sizes\":"
             "[16,32],\"default_batch_size\":32}", job);
    int rc = zbso_client_new(NULL, url, spec, 0, out, err, sizeof err);
    if (rc != 0)
        fail_msg("client: %d %s", rc, err);
    assert_int_equal(zbso_client_get_batch_size(*out, &bs), 0);
    return bs;
}

static void test_server_profile_reused(void **unused)
{
    fake_mon m = {0};
    char log[256], bs_text[32];
    zbso_client *c = NULL;
    (void)unused;
    int64_t bs = trial_env(&c, "plo-env");
    /* The first run, given the job by the environment: profiles and stores. */
    setenv("ZEUS_BSO_SERVER_URL", url, 1);
    setenv("ZEUS_BSO_JOB_ID", "plo-env", 1);
    snprintf(bs_text, sizeof bs_text, "%lld", (long long)bs);
    setenv("ZEUS_BATCH_SIZE", bs_text, 1);
    zbso_power_options o = opts(&m);
    o.selector = ZBSO_PL_ENERGY;
    zbso_power_optimizer *p = make(&o);
    steps(p, 11);
    assert_int_equal(zbso_power_optimizer_optimal_mw(p), 200000);
    zbso_power_optimizer_free(p);
    assert_int_equal(sets(log, sizeof log), 4);
    /* The next run of that batch size: the profile's optimum at once, no window, no other
     * limit set, no step spent profiling. */
    unlink(state);
    int begins = m.begins;
    p = make(&o);
    assert_string_equal(zbso_power_optimizer_source(p), "server");
    assert_int_equal(zbso_power_optimizer_state(p), 3);
    steps(p, 11);
    assert_int_equal(zbso_power_optimizer_profiling_steps(p), 0);
    assert_int_equal(m.begins, begins);
    zbso_power_optimizer_free(p);
    assert_int_equal(sets(log, sizeof log), 2);
    assert_string_equal(log, "200 300");
    /* An observer-mode profile of another batch size is not used by a run that sets. */
    unsetenv("ZEUS_BSO_SERVER_URL");
    unsetenv("ZEUS_BSO_JOB_ID");
    unsetenv("ZEUS_BATCH_SIZE");
    zbso_client_free(c);

    /* Through a client: its trial's batch size, looked up at the first step. */
    c = NULL;
    zbso_client *c2 = NULL;
    char err[ZBSO_ERRBUF_MAX];
    assert_int_equal(zbso_client_new(NULL, url, "{\"job_id\":\"plo-cli\",\"job_id_prefix\":"
                                     "\"plo\",\"batch_sizes\":[16],\"default_batch_size\":16}",
                                     0, &c2, err, sizeof err), 0);
    o.client = c2;
    setenv("ZBSO_POWER_LIMIT", "observe", 1);
    p = make(&o);   /* before the batch size is known */
    int64_t b2 = 0;
    assert_int_equal(zbso_client_get_batch_size(c2, &b2), 0);
    steps(p, 11);
    assert_string_equal(zbso_power_optimizer_source(p), "profiling");
    zbso_power_optimizer_free(p);
    unsetenv("ZBSO_POWER_LIMIT");
    unlink(state);
    /* Stored as an observer profile: a run that sets profiles anew; one that observes
     * uses it. */
    p = make(&o);
    steps(p, 1);
    assert_string_equal(zbso_power_optimizer_source(p), "profiling");
    zbso_power_optimizer_free(p);
    setenv("ZBSO_POWER_LIMIT", "observe", 1);
    p = make(&o);
    steps(p, 1);
    assert_string_equal(zbso_power_optimizer_source(p), "server");
    zbso_power_optimizer_free(p);
    unsetenv("ZBSO_POWER_LIMIT");
    zbso_client_free(c2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_sequence_and_restore, setup),
        cmocka_unit_test_setup(test_each_selector, setup),
        cmocka_unit_test_setup(test_observer_and_max, setup),
        cmocka_unit_test_setup(test_no_privilege, setup),
        cmocka_unit_test_setup(test_profile_file, setup),
        cmocka_unit_test_setup(test_server_profile_reused, setup),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
