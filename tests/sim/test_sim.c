/* test_sim.c: the simulator's pieces with exact values: the trace parser (a good file and
 * each kind of malformed one), one run's arithmetic on a tiny hand-made trace (epochs,
 * time, energy, cost, JIT pick, cost_ub cut), a whole simulation's first run, and
 * determinism of runs.csv across repeats and thread counts, the savings of a job's records
 * and savings.csv. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/powerlimit.h"
#include "core/spec.h"
#include "sim/sim.h"

#define POWER_HDR "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
#define TRAIN_HDR \
    "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch\n"

static char g_path[64];

/* Writes text to a fresh temp file whose name is left in g_path. */
static const char *write_tmp(const char *text)
{
    snprintf(g_path, sizeof g_path, "/tmp/zbso-sim-test-XXXXXX");
    int fd = mkstemp(g_path);
    assert_true(fd >= 0);
    size_t len = strlen(text);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    return g_path;
}

/* Loads text as a power trace; returns the code and leaves the message in err. */
static int load_power(const char *text, sim_power_trace *t, zbso_err *err)
{
    const char *p = write_tmp(text);
    err_clear(err);
    int rc = sim_power_trace_load(p, t, err);
    unlink(p);
    return rc;
}

static int load_train(const char *text, sim_train_trace *t, zbso_err *err)
{
    const char *p = write_tmp(text);
    err_clear(err);
    int rc = sim_train_trace_load(p, t, err);
    unlink(p);
    return rc;
}

/* Asserts that err's message starts with the temp file's name, ":LINE:" and has needle. */
static void assert_msg(const zbso_err *err, const char *line_tag, const char *needle)
{
    char want[128];
    snprintf(want, sizeof want, "%s%s", g_path, line_tag);
    if (strncmp(err->msg, want, strlen(want)) != 0 || strstr(err->msg, needle) == NULL)
        fail_msg("message '%s' lacks '%s' or '%s'", err->msg, want, needle);
}

static void test_power_good(void **state)
{
    sim_power_trace t;
    zbso_err err;
    assert_int_equal(load_power(POWER_HDR "d,n,32,o,100,10,80\r\nd,n,32,o,200,6.5,150.25\n",
                                &t, &err), 0);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.rows[1].dataset, "d");
    assert_string_equal(t.rows[1].optimizer, "o");
    assert_int_equal(t.rows[1].batch_size, 32);
    assert_int_equal(t.rows[1].power_limit_w, 200);
    assert_true(t.rows[1].time_per_epoch_s == 6.5);
    assert_true(t.rows[1].average_power_w == 150.25);
    sim_power_trace_free(&t);
    sim_power_trace_free(NULL);
}

static void test_power_bad(void **state)
{
    static const struct {
        const char *text, *line, *needle;
    } cases[] = {
        {"", ":", "empty file"},
        {POWER_HDR, ":", "no data rows"},
        {"dataset,network,batch_size\n", ":1:", "header"},
        {POWER_HDR "d,n,32,o,100,10\n", ":2:", "6 fields, expected 7"},
        {POWER_HDR "d,n,32,o,100,10,80,1\n", ":2:", "8 fields"},
        {POWER_HDR "d,n,x32,o,100,10,80\n", ":2:", "batch_size 'x32'"},
        {POWER_HDR "d,n,0,o,100,10,80\n", ":2:", "batch_size '0'"},
        {POWER_HDR "d,n,32,o,-100,10,80\n", ":2:", "power_limit '-100'"},
        {POWER_HDR "d,n,32,o,100,inf,80\n", ":2:", "time_per_epoch 'inf'"},
        {POWER_HDR "d,n,32,o,100,10,0\n", ":2:", "average_power '0'"},
        {POWER_HDR "d,n,32,o,100,10,8x\n", ":2:", "average_power '8x'"},
        {POWER_HDR "d,,32,o,100,10,80\n", ":2:", "network ''"},
        {POWER_HDR "d,n,32,o,100,10,80\n\n", ":3:", "empty line"},
        {POWER_HDR "d,n,32,o,100,10,80\nd,n,32,o,200,6,1", ":3:", "no newline"},
        {POWER_HDR "d,n,32,o,100,10,80\nd,n,64,o,100,1,1\nd,n,32,o,100,9,70\n", ":4:",
         "duplicate"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sim_power_trace t;
        zbso_err err;
        assert_int_equal(load_power(cases[i].text, &t, &err), ZBSO_EINVAL);
        assert_msg(&err, cases[i].line, cases[i].needle);
        assert_null(t.rows);
    }
    char longline[SIM_LINE_MAX + 200];
    snprintf(longline, sizeof longline, POWER_HDR "%0*d,n,32,o,100,10,80\n",
             SIM_LINE_MAX + 10, 1);
    sim_power_trace t;
    zbso_err err;
    assert_int_equal(load_power(longline, &t, &err), ZBSO_EINVAL);
    assert_msg(&err, ":2:", "longer than");
    err_clear(&err);
    assert_int_equal(sim_power_trace_load("/nonexistent/zbso.csv", &t, &err), ZBSO_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/zbso.csv"));
    /* A directory opens but cannot be read: the reason is named. */
    err_clear(&err);
    assert_int_equal(sim_power_trace_load("/tmp", &t, &err), ZBSO_EIO);
    assert_string_equal(err.msg, "cannot read trace /tmp: Is a directory");
    assert_null(t.rows);
}

static void test_train_parse(void **state)
{
    sim_train_trace t;
    zbso_err err;
    assert_int_equal(load_train(TRAIN_HDR "d,n,32,o,1e-1,1,0.5,5\nd,n,32,o,1e-1,2,0.5,nan\n",
                                &t, &err), 0);
    assert_int_equal(t.n, 2);
    assert_true(t.rows[0].learning_rate == 0.1);
    assert_int_equal(t.rows[0].target_epoch, 5);
    assert_int_equal(t.rows[1].target_epoch, 0);
    assert_int_equal(t.rows[1].run, 2);
    sim_train_trace_free(&t);
    assert_int_equal(load_train(TRAIN_HDR "d,n,32,o,1e-1,1,0.5,-3\n", &t, &err), ZBSO_EINVAL);
    assert_msg(&err, ":2:", "target_epoch '-3'");
    assert_int_equal(load_train(TRAIN_HDR "d,n,32,o,1e-1,1,nan,3\n", &t, &err), ZBSO_EINVAL);
    assert_msg(&err, ":2:", "target_metric 'nan'");
    assert_int_equal(load_train(TRAIN_HDR "d,n,32,o,fast,1,0.5,3\n", &t, &err), ZBSO_EINVAL);
    assert_msg(&err, ":2:", "learning_rate 'fast'");
    assert_int_equal(load_train(POWER_HDR "d,n,32,o,100,10,80\n", &t, &err), ZBSO_EINVAL);
    assert_msg(&err, ":1:", "header");
}

/* ---- a tiny workload ----
 * bs 32: pl 100 (10 s, 80 W -> 800 J/epoch), pl 200 (6 s, 150 W -> 900 J/epoch); paths 5, 5
 * bs 64: pl 100 (4 s, 90 W), pl 200 (3 s, 160 W); paths 3, never
 * bs 16: power rows only (no path: dropped). Max power 200 W. */
static const sim_preset tiny = {"tiny", "d", "n", "o", 0.5, true, 10, 32};

static sim_workload *tiny_workload(int64_t default_bs)
{
    sim_power_trace power;
    sim_train_trace train;
    sim_workload *w = NULL;
    zbso_err err;
    assert_int_equal(load_power(POWER_HDR "d,n,32,o,100,10,80\nd,n,32,o,200,6,150\n"
                                          "d,n,64,o,200,3,160\nd,n,64,o,100,4,90\n"
                                          "d,n,16,o,100,20,50\nx,n,32,o,300,1,1\n",
                                &power, &err), 0);
    assert_int_equal(load_train(TRAIN_HDR "d,n,32,o,1,1,0.5,5\nd,n,32,o,1,2,0.5,5\n"
                                          "d,n,64,o,1,1,0.5,3\nd,n,64,o,1,2,0.5,nan\n"
                                          "d,n,64,o,1,1,0.4,1\nd,n,128,o,1,1,0.5,1\n",
                                &train, &err), 0);
    int rc = sim_workload_build(&tiny, default_bs, "gpu", &power, "P", &train, "T", &w, &err);
    sim_power_trace_free(&power);
    sim_train_trace_free(&train);
    if (rc < 0)
        fail_msg("build: %s", err.msg);
    return w;
}

static void test_workload(void **state)
{
    sim_workload *w = tiny_workload(0);
    assert_int_equal(w->n_bs, 2);
    assert_int_equal(w->bs[0].batch_size, 32);
    assert_int_equal(w->bs[1].batch_size, 64);
    assert_int_equal(w->bs[1].pl_w[0], 100);
    assert_true(w->bs[1].time_per_epoch_s[0] == 4);
    assert_int_equal(w->bs[1].n_paths, 2);
    assert_int_equal(w->n_dropped, 1);
    assert_int_equal(w->dropped[0], 16);
    assert_true(w->max_power_w == 200);
    assert_int_equal(w->n_pl_all, 2);
    assert_int_equal(w->default_batch_size, 32);
    sim_workload_free(w);
    /* Capped at the largest batch size of the power trace. */
    w = tiny_workload(1000);
    assert_int_equal(w->default_batch_size, 64);
    sim_workload_free(w);

    /* A default the trace lacks is refused, naming it and the feasible ones. */
    sim_power_trace power;
    sim_train_trace train;
    zbso_err err;
    assert_int_equal(load_power(POWER_HDR "d,n,32,o,100,10,80\n", &power, &err), 0);
    assert_int_equal(load_train(TRAIN_HDR "d,n,32,o,1,1,0.5,5\n", &train, &err), 0);
    assert_int_equal(sim_workload_build(&tiny, 24, "g", &power, "P", &train, "T", &w, &err),
                     ZBSO_EINVAL);
    assert_null(w);
    assert_non_null(strstr(err.msg, "default batch size 24"));
    assert_non_null(strstr(err.msg, "feasible: 32"));
    static const sim_preset other = {"other", "zz", "n", "o", 0.5, true, 10, 32};
    assert_int_equal(sim_workload_build(&other, 0, "g", &power, "P", &train, "T", &w, &err),
                     ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "no rows for dataset zz"));
    sim_power_trace_free(&power);
    sim_train_trace_free(&train);
}

static void test_run_arithmetic(void **state)
{
    sim_workload *w = tiny_workload(0);
    const sim_bs *b = sim_workload_bs(w, 32);
    sim_run r;

    /* JIT: epoch cost (eta*P + (1-eta)*200)*t: eta 0.5 -> 1400 at 100 W, 1050 at 200 W. */
    assert_int_equal(b->pl_w[sim_jit_pick(b, 0.5)], 200);
    /* eta 1: energy only, 800 J at 100 W beats 900 J. */
    assert_int_equal(b->pl_w[sim_jit_pick(b, 1.0)], 100);
    assert_int_equal(b->pl_w[sim_max_pl(b)], 200);

    sim_run_compute(w, b, 1, 5, false, 0.5, INFINITY, &r);
    assert_int_equal(r.epochs, 5);
    assert_true(r.reached);
    assert_true(r.time_s == 30);
    assert_true(r.energy_j == 4500);
    assert_true(r.cost == 5250);     /* 0.5*4500 + 0.5*200*30 */

    /* Profiling: the first epoch costs the mean over power limits (8 s, 850 J). */
    sim_run_compute(w, b, 1, 5, true, 0.5, INFINITY, &r);
    assert_true(r.time_s == 32);
    assert_true(r.energy_j == 4450);
    assert_true(r.cost == 5425);

    /* cost_ub 4000 / 1050 per epoch -> 3 epochs: stopped before the target. */
    sim_run_compute(w, b, 1, 5, false, 0.5, 4000, &r);
    assert_int_equal(r.epochs, 3);
    assert_false(r.reached);
    assert_true(r.time_s == 18);
    assert_true(r.energy_j == 2700);
    assert_true(r.cost == 3150);
    /* Exactly five epochs fit. */
    sim_run_compute(w, b, 1, 5, false, 0.5, 5250, &r);
    assert_int_equal(r.epochs, 5);
    assert_true(r.reached);
    /* Not even one epoch fits: the run does not happen and costs nothing. */
    sim_run_compute(w, b, 1, 5, false, 0.5, 1000, &r);
    assert_int_equal(r.epochs, 0);
    assert_false(r.reached);
    assert_true(r.time_s == 0 && r.energy_j == 0 && r.cost == 0);
    /* A path that never reaches runs max_epochs. */
    sim_run_compute(w, b, 0, 0, false, 0.5, INFINITY, &r);
    assert_int_equal(r.epochs, 10);
    assert_false(r.reached);
    assert_true(r.time_s == 100);

    /* Expected cost of always bs 64 at 200 W: p = 1/2, 3 + 1 * 10 = 13 epochs. */
    sim_expect e;
    sim_expect_fixed(w, sim_workload_bs(w, 64), 1, 0.5, &e);
    assert_true(e.feasible);
    assert_true(e.time_s == 39);
    assert_true(e.energy_j == 160.0 * 39);
    assert_true(e.cost == 0.5 * 6240 + 0.5 * 200 * 39);
    sim_workload_free(w);
}

static void test_simulate_first_run(void **state)
{
    sim_workload *w = tiny_workload(0);
    sim_options o = {.eta = 0.5, .has_beta = true, .beta = 2, .jit = true};
    sim_result r;
    zbso_err err;
    assert_int_equal(sim_recurrences(w, &o), 8);   /* 2 * 2 batch sizes * 2 power limits */
    if (sim_simulate(w, &o, 7, &r, &err) < 0)
        fail_msg("simulate: %s", err.msg);
    assert_int_equal(r.n_recurrences, 8);
    /* Recurrence 1 is the default batch size, profiled, at the JIT pick. */
    assert_int_equal(r.rows[0].recurrence, 1);
    assert_int_equal(r.rows[0].try_no, 1);
    assert_int_equal(r.rows[0].batch_size, 32);
    assert_int_equal(r.rows[0].pl_w, 200);
    assert_true(r.rows[0].time_s == 32);
    assert_true(r.rows[0].energy_j == 4450);
    assert_true(r.rows[0].cost == 5425);
    assert_true(r.rows[0].reached);
    /* Later runs of bs 32 are not profiled any more. */
    double sum = 0;
    for (size_t i = 1; i < r.n_rows; i++) {
        if (r.rows[i].batch_size == 32)
            assert_true(r.rows[i].cost == 5250);
        sum += r.rows[i].cost;
    }
    assert_true(fabs(r.cost - (sum + 5425)) < 1e-6);
    /* Every recurrence ended with a run that reached the target. */
    for (int64_t rec = 1; rec <= 8; rec++) {
        bool reached = false;
        for (size_t i = 0; i < r.n_rows; i++)
            if (r.rows[i].recurrence == rec && r.rows[i].reached)
                reached = true;
        assert_true(reached);
    }
    sim_result_free(&r);

    /* --power-limit max: always 200 W here, never profiled. */
    o.jit = false;
    if (sim_simulate(w, &o, 7, &r, &err) < 0)
        fail_msg("simulate: %s", err.msg);
    assert_true(r.rows[0].cost == 5250);
    sim_result_free(&r);
    sim_workload_free(w);
}

/* The runs.csv bytes of a sweep of the shipped traces. Caller frees. */
static char *sweep_bytes(const char *workload, uint64_t lo, uint64_t hi, int threads,
                         size_t *len)
{
    char power_path[512], train_path[512];
    snprintf(power_path, sizeof power_path, "%s/traces/summary_power_v100.csv",
             sim_default_data_dir());
    snprintf(train_path, sizeof train_path, "%s/traces/summary_train.csv",
             sim_default_data_dir());
    sim_power_trace power;
    sim_train_trace train;
    sim_workload *w = NULL;
    zbso_err err;
    assert_int_equal(sim_power_trace_load(power_path, &power, &err), 0);
    assert_int_equal(sim_train_trace_load(train_path, &train, &err), 0);
    assert_int_equal(sim_workload_build(sim_preset_find(workload), 0, "v100", &power,
                                        power_path, &train, train_path, &w, &err), 0);
    sim_options o = {.eta = 0.5, .has_beta = true, .beta = 2, .jit = true};
    size_t n = (size_t)(hi - lo + 1);
    sim_result *res = calloc(n, sizeof *res);
    assert_non_null(res);
    sim_workload *ws[1] = {w};
    if (sim_sweep(ws, 1, lo, hi, &o, threads, res, NULL, NULL, &err) < 0)
        fail_msg("sweep: %s", err.msg);
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    assert_int_equal(sim_write_runs(f, ws, 1, res, n, &err), 0);
    fclose(f);
    for (size_t i = 0; i < n; i++)
        sim_result_free(&res[i]);
    free(res);
    sim_workload_free(w);
    sim_power_trace_free(&power);
    sim_train_trace_free(&train);
    return buf;
}

static void test_determinism(void **state)
{
    size_t a_len, b_len, c_len, d_len;
    char *a = sweep_bytes("librispeech", 1, 4, 1, &a_len);
    char *b = sweep_bytes("librispeech", 1, 4, 3, &b_len);
    char *c = sweep_bytes("librispeech", 1, 4, 1, &c_len);
    char *d = sweep_bytes("librispeech", 5, 8, 2, &d_len);
    assert_true(a_len > 1000);
    assert_int_equal(a_len, b_len);
    assert_memory_equal(a, b, a_len);
    assert_int_equal(a_len, c_len);
    assert_memory_equal(a, c, a_len);
    static const char hdr[] = "workload,gpu,seed,recurrence,try,bs,pl,energy,time,reached,cost\n";
    const size_t h = sizeof hdr - 1;
    assert_true(strncmp(a, hdr, h) == 0);
    /* Other seeds give other runs. */
    assert_true(a_len != d_len || memcmp(a + h, d + h, a_len - h) != 0);
    free(a);
    free(b);
    free(c);
    free(d);
}

/* sim_savings builds one Succeeded trial per record and n_unrun Failed ones, and gives
 * them to opt_savings_compute; savings.csv writes what that gave, empty where a figure does
 * not exist. Spec: default 32, eta 0.5, max_power 200: cost = E/2 + 100 T. */
static void test_savings_of_records(void **state)
{
    zbso_job_spec spec;
    spec_defaults(&spec);
    spec.batch_sizes[0] = 16;
    spec.batch_sizes[1] = 32;
    spec.n_batch_sizes = 2;
    spec.default_batch_size = 32;
    spec.max_power = 200;
    sim_row rows[] = {
        {1, 1, 32, 200, 2000, 10, 2000, true},   /* cost 1000 + 1000 */
        {2, 1, 16, 200, 800, 6, 1000, false},    /* 400 + 600, not reached */
        {2, 2, 16, 200, 1200, 4, 1000, true},    /* 600 + 400 */
    };
    sim_result r = {.seed = 9, .rows = rows, .n_rows = 3, .n_unrun = 2};
    zbso_err err;
    assert_int_equal(sim_savings(&spec, &r, &r.savings, &err), 0);
    const opt_savings *s = &r.savings;
    assert_int_equal(s->finished, 3);
    assert_int_equal(s->failed, 2);
    assert_true(s->spent.energy == 4000 && s->spent.time == 20 && s->spent.cost == 4000);
    assert_int_equal(s->default_runs, 1);
    /* 3*2000 - 4000 = 2000 (energy and cost), 3*10 - 20 = 10; cumulative 2000 <= 2000,
     * 3000 <= 4000, 4000 <= 6000: even from 1. Best 16 (1000): 4000 - 3*1000 = 1000. */
    assert_true(s->saved.energy == 2000 && s->saved.time == 10 && s->saved.cost == 2000);
    assert_int_equal(s->break_even, 1);
    assert_int_equal(s->best_batch_size, 16);
    assert_true(s->regret == 1000);

    sim_workload w;
    memset(&w, 0, sizeof w);
    w.preset.name = "tiny";
    snprintf(w.gpu, sizeof w.gpu, "g1");
    sim_workload *ws[1] = {&w};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(sim_write_savings(f, ws, 1, &r, 1, &err), 0);
    /* Without a converged default run: no baseline, no break-even (empty fields). */
    rows[0].reached = false;
    assert_int_equal(sim_savings(&spec, &r, &r.savings, &err), 0);
    assert_int_equal(sim_write_savings(f, ws, 1, &r, 1, &err), 0);
    fclose(f);
    assert_string_equal(buf, SIM_SAVINGS_HEADER "\n"
                        "tiny,g1,9,3,2,4000,20,4000,32,1,2000,10,2000,2000,10,2000,1,16,1000,"
                        "1000\n"
                        SIM_SAVINGS_HEADER "\n"
                        "tiny,g1,9,3,2,4000,20,4000,32,0,,,,,,,,16,1000,1000\n");
    free(buf);
}

/* Runs libzbso's power-limit state machine (core/powerlimit.h) over b's limits as a
 * training run would profile them, one step per epoch, each measured window answered
 * with the trace's epoch time and energy at that limit, and returns the limit (W) it
 * settles on; 0 when b's limits are not the 25 W ladder the library would profile. */
static int64_t library_choice(const sim_bs *b, double eta)
{
    static opt_plo p;
    opt_plo_config c = {0, 0, 1, 25, b->pl_w[0] * 1000, b->pl_w[b->n_pl - 1] * 1000};
    opt_pl_selector sel = {.kind = OPT_PL_ZEUS_COST, .eta_knob = eta, .world_size = 1};
    opt_plo_action a;
    zbso_err err;
    assert_int_equal(opt_plo_init(&p, &c, &a, &err), 0);
    if (p.n_limits != b->n_pl)
        return 0;
    for (int i = 0; i < 1000 && p.state != OPT_PLO_DONE; i++) {
        opt_plo_step_begin(&p, &a);
        if (!a.end_window)
            continue;
        int64_t w = p.limits_mw[p.index] / 1000;
        size_t k = 0;
        while (k < b->n_pl && b->pl_w[k] != w)
            k++;
        if (k == b->n_pl)
            return 0;
        double t = b->time_per_epoch_s[k];
        assert_int_equal(opt_plo_measured(&p, &sel, t, b->average_power_w[k] * t, &a, &err), 0);
    }
    assert_int_equal(p.state, OPT_PLO_DONE);
    return p.optimal_mw / 1000;
}

/* The simulator's JIT pick and the library's choice are one function: on every batch
 * size of every workload of the shipped traces, for eta from 0 to 1, the limit the
 * simulator trains at is the one the library's state machine chooses from the same
 * figures. */
static void test_jit_pick_is_the_library_choice(void **state)
{
    static const char *const gpus[] = {"v100", "a40"};
    char path[512];
    size_t n_presets, compared = 0, differ_from_max = 0;
    const sim_preset *presets = sim_presets(&n_presets);
    sim_train_trace train;
    zbso_err err;
    (void)state;
    snprintf(path, sizeof path, "%s/summary_train.csv", ZBSO_TRACE_DIR);
    assert_int_equal(sim_train_trace_load(path, &train, &err), 0);
    for (size_t g = 0; g < 2; g++) {
        sim_power_trace power;
        snprintf(path, sizeof path, "%s/summary_power_%s.csv", ZBSO_TRACE_DIR, gpus[g]);
        assert_int_equal(sim_power_trace_load(path, &power, &err), 0);
        for (size_t i = 0; i < n_presets; i++) {
            sim_workload *w = NULL;
            if (sim_workload_build(&presets[i], 0, gpus[g], &power, "P", &train, "T", &w,
                                   &err) < 0)
                continue;
            for (size_t bi = 0; bi < w->n_bs; bi++) {
                const sim_bs *b = &w->bs[bi];
                for (int e = 0; e <= 10; e++) {
                    int64_t lib = library_choice(b, e / 10.0);
                    if (lib == 0)
                        continue;
                    size_t k = sim_jit_pick(b, e / 10.0);
                    assert_int_equal(b->pl_w[k], lib);
                    compared++;
                    differ_from_max += k != sim_max_pl(b);
                }
            }
            sim_workload_free(w);
        }
        sim_power_trace_free(&power);
    }
    sim_train_trace_free(&train);
    /* Most batch sizes were compared, and the choice is not always the highest limit. */
    assert_true(compared > 500);
    assert_true(differ_from_max > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_power_good),
        cmocka_unit_test(test_power_bad),
        cmocka_unit_test(test_train_parse),
        cmocka_unit_test(test_workload),
        cmocka_unit_test(test_run_arithmetic),
        cmocka_unit_test(test_simulate_first_run),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_savings_of_records),
        cmocka_unit_test(test_jit_pick_is_the_library_choice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
