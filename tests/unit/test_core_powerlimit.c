/* test_core_powerlimit.c: the power-limit decisions of src/core/powerlimit.c: the limits
 * profiled, each selector's choice against values worked out by hand below, and the
 * state machine's actions step by step, as Zeus's GlobalPowerLimitOptimizer takes them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/powerlimit.h"

static void test_limits(void **unused)
{
    int64_t l[OPT_PL_MAX];
    zbso_err err;
    (void)unused;
    /* Zeus: range(700000, 100000 - 1, -25000): 700 W down to 100 W, 25 limits. */
    assert_int_equal(opt_pl_limits(100000, 700000, 25, l, OPT_PL_MAX, &err), 25);
    assert_true(l[0] == 700000 && l[1] == 675000 && l[24] == 100000);
    /* A minimum between two steps: the last limit is the lowest step above it. */
    assert_int_equal(opt_pl_limits(160000, 700000, 25, l, OPT_PL_MAX, &err), 22);
    assert_true(l[21] == 175000);
    /* One limit when min == max. */
    assert_int_equal(opt_pl_limits(250000, 250000, 25, l, OPT_PL_MAX, &err), 1);
    assert_int_equal(opt_pl_limits(100000, 700000, 0, l, OPT_PL_MAX, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "pl_step must be positive"));
    assert_int_equal(opt_pl_limits(100000, 700000, 1, l, 100, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "pl_step 1 W gives more than 100 power limits"));
    assert_int_equal(opt_pl_limits(0, 700000, 25, l, OPT_PL_MAX, &err), ZBSO_EINVAL);
}

/* Per step: 300 W 1.0 s 250 J, 250 W 1.1 s 230 J, 200 W 1.3 s 220 J, 150 W 1.8 s 240 J. */
static const opt_pl_measurement M[] = {
    {300, 1.0, 250.0}, {250, 1.1, 230.0}, {200, 1.3, 220.0}, {150, 1.8, 240.0},
};

static int64_t pick(opt_pl_selector s, const opt_pl_measurement *m, size_t n)
{
    int64_t w = -1;
    zbso_err err;
    assert_int_equal(opt_pl_select(&s, m, n, &w, &err), 0);
    return w;
}

static void test_selectors(void **unused)
{
    (void)unused;
    opt_pl_selector energy = {.kind = OPT_PL_ENERGY};
    opt_pl_selector time = {.kind = OPT_PL_TIME};
    assert_int_equal(pick(energy, M, 4), 200);   /* 220 J is the least */
    assert_int_equal(pick(time, M, 4), 300);     /* 1.0 s */
    /* ZeusCost(0.5, 1): P = 300: 0.5 E + 150 T = 275, 280, 305, 390 -> 300 W. */
    assert_int_equal(pick((opt_pl_selector){OPT_PL_ZEUS_COST, 0.5, 1, 0}, M, 4), 300);
    /* ZeusCost(0.9, 1): 0.9 E + 30 T = 255, 240, 237, 270 -> 200 W. */
    assert_int_equal(pick((opt_pl_selector){OPT_PL_ZEUS_COST, 0.9, 1, 0}, M, 4), 200);
    /* ZeusCost(0.8, 1): 0.8 E + 60 T = 260, 250, 254, 300 -> 250 W; with world_size 4,
     * P = 1200: 0.8 E + 240 T = 440, 448, 488, 624 -> 300 W. */
    assert_int_equal(pick((opt_pl_selector){OPT_PL_ZEUS_COST, 0.8, 1, 0}, M, 4), 250);
    assert_int_equal(pick((opt_pl_selector){OPT_PL_ZEUS_COST, 0.8, 4, 0}, M, 4), 300);
    /* MaxSlowdownConstraint: times 1.0, 1.1, 1.3, 1.8 against 1.0 at 300 W. */
    assert_int_equal(pick((opt_pl_selector){OPT_PL_MAX_SLOWDOWN, 0, 0, 1.0}, M, 4), 300);
    assert_int_equal(pick((opt_pl_selector){OPT_PL_MAX_SLOWDOWN, 0, 0, 1.25}, M, 4), 250);
    assert_int_equal(pick((opt_pl_selector){OPT_PL_MAX_SLOWDOWN, 0, 0, 1.3}, M, 4), 200);
    assert_int_equal(pick((opt_pl_selector){OPT_PL_MAX_SLOWDOWN, 0, 0, 2.0}, M, 4), 150);
}

static void test_selector_order_and_ties(void **unused)
{
    (void)unused;
    /* Ties go to the first entry, whatever its limit, as Python's min() does. */
    const opt_pl_measurement tie[] = {{200, 2.0, 100.0}, {300, 1.0, 100.0}, {100, 3.0, 100.0}};
    assert_int_equal(pick((opt_pl_selector){.kind = OPT_PL_ENERGY}, tie, 3), 200);
    const opt_pl_measurement tie_rev[] = {{100, 3.0, 100.0}, {300, 1.0, 100.0}};
    assert_int_equal(pick((opt_pl_selector){.kind = OPT_PL_ENERGY}, tie_rev, 2), 100);
    /* MaxSlowdown measures against the highest limit wherever it is in the list, and
     * ZeusCost's P is the highest limit's (300 W here) even when it is not first. */
    assert_int_equal(pick((opt_pl_selector){OPT_PL_MAX_SLOWDOWN, 0, 0, 1.5}, tie, 3), 300);
    assert_int_equal(pick((opt_pl_selector){OPT_PL_MAX_SLOWDOWN, 0, 0, 3.0}, tie, 3), 100);
    const opt_pl_measurement unsorted[] = {{250, 1.1, 230.0}, {150, 1.8, 240.0},
                                           {300, 1.0, 250.0}, {200, 1.3, 220.0}};
    assert_int_equal(pick((opt_pl_selector){OPT_PL_ZEUS_COST, 0.8, 1, 0}, unsorted, 4), 250);
    assert_int_equal(pick((opt_pl_selector){OPT_PL_ZEUS_COST, 0.9, 1, 0}, unsorted, 4), 200);
}

static void expect_bad(opt_pl_selector s, const opt_pl_measurement *m, size_t n,
                       const char *msg)
{
    int64_t w = 7;
    zbso_err err;
    assert_int_equal(opt_pl_select(&s, m, n, &w, &err), ZBSO_EINVAL);
    if (!strstr(err.msg, msg))
        fail_msg("message '%s' lacks '%s'", err.msg, msg);
    assert_int_equal(w, 7);
}

static void test_bad_input(void **unused)
{
    (void)unused;
    opt_pl_selector ok = {.kind = OPT_PL_ENERGY};
    expect_bad((opt_pl_selector){OPT_PL_ZEUS_COST, 1.5, 1, 0}, M, 4,
               "eta_knob must be between 0 and 1, inclusive both sides; got 1.5");
    expect_bad((opt_pl_selector){OPT_PL_ZEUS_COST, NAN, 1, 0}, M, 4, "got nan");
    expect_bad((opt_pl_selector){OPT_PL_ZEUS_COST, 0.5, 0, 0}, M, 4,
               "world_size must be greater than or equal to 1; got 0");
    expect_bad((opt_pl_selector){OPT_PL_MAX_SLOWDOWN, 0, 0, 0.9}, M, 4,
               "max_slowdown_factor must be greater than or equal to 1.0. Got 0.9.");
    expect_bad((opt_pl_selector){(opt_pl_selector_kind)9, 0, 0, 0}, M, 4,
               "unknown optimum selector 9");
    expect_bad(ok, M, 0, "at least one measurement");
    const opt_pl_measurement dup[] = {{300, 1, 1}, {200, 1, 1}, {300, 2, 2}};
    expect_bad(ok, dup, 3, "measurements 0 and 2 both have power limit 300 W");
    const opt_pl_measurement zero_t[] = {{300, 0, 1}};
    expect_bad(ok, zero_t, 1, "measurement 0 (300 W): time 0.0 is not a positive");
    const opt_pl_measurement nan_e[] = {{300, 1, 1}, {200, 1, NAN}};
    expect_bad(ok, nan_e, 2, "measurement 1 (200 W): energy nan is not");
    const opt_pl_measurement neg_pl[] = {{-5, 1, 1}};
    expect_bad(ok, neg_pl, 1, "power_limit -5 W is not positive");
}

/* Runs the state machine like a training loop: appends one token per action to log
 * ("S300" set a limit in W, "B" begin, "E" end (then measured with the limit's figures
 * from fig), "C" cancel, "D" done; "|" separates steps). */
typedef struct runner {
    opt_plo p;
    opt_pl_selector sel;
    char log[2048];
} runner;

static void note(runner *r, const char *tok)
{
    size_t n = strlen(r->log);
    snprintf(r->log + n, sizeof r->log - n, "%s%s", n ? " " : "", tok);
}

static void apply(runner *r, const opt_plo_action *a)
{
    char buf[32];
    if (a->cancel_window)
        note(r, "C");
    if (a->end_window) {
        note(r, "E");
        /* Figures of M by the limit just measured. */
        int64_t w = r->p.limits_mw[r->p.index] / 1000;
        const opt_pl_measurement *f = NULL;
        for (size_t i = 0; i < 4; i++)
            if (M[i].power_limit_w == w)
                f = &M[i];
        assert_non_null(f);
        opt_plo_action next;
        zbso_err err;
        assert_int_equal(opt_plo_measured(&r->p, &r->sel, f->time_s, f->energy_j, &next, &err),
                         0);
        apply(r, &next);
        return;
    }
    if (a->set_limit_mw > 0) {
        snprintf(buf, sizeof buf, "S%lld", (long long)(a->set_limit_mw / 1000));
        note(r, buf);
    }
    if (a->begin_window)
        note(r, "B");
    if (a->done)
        note(r, "D");
}

static void step(runner *r)
{
    opt_plo_action a;
    note(r, "|");
    opt_plo_step_begin(&r->p, &a);
    apply(r, &a);
}

static void start(runner *r, int64_t wait, int64_t warmup, int64_t profile)
{
    opt_plo_config c = {wait, warmup, profile, 50, 150000, 300000};
    opt_plo_action a;
    zbso_err err;
    memset(r, 0, sizeof *r);
    r->sel = (opt_pl_selector){OPT_PL_ZEUS_COST, 0.8, 1, 0};
    assert_int_equal(opt_plo_init(&r->p, &c, &a, &err), 0);
    assert_int_equal(r->p.n_limits, 4);
    apply(r, &a);
}

static void test_state_machine_sequence(void **unused)
{
    runner *r = test_malloc(sizeof *r);
    (void)unused;
    start(r, 1, 2, 3);
    for (int i = 0; i < 24; i++)
        step(r);
    /* Zeus: max at start; the 2nd step (wait 1) sets 300 W and warms up 2 steps; 3 steps
     * are measured; each lower limit follows; after 150 W the optimum, 250 W (ZeusCost
     * 0.8 above), is set and nothing changes after. */
    assert_string_equal(r->log,
                        "S300 | | S300 | | B | | | E S250 | | B | | | E S200 | | B | | | E "
                        "S150 | | B | | | E S250 D | |");
    assert_int_equal(r->p.state, OPT_PLO_DONE);
    assert_int_equal(r->p.optimal_mw, 250000);
    assert_int_equal(r->p.n_meas, 4);
    assert_true(r->p.meas[3].power_limit_w == 150 && r->p.meas[3].energy_j == 240.0);
    assert_int_equal(opt_plo_current_mw(&r->p), 250000);
    test_free(r);
}

static void test_epoch_end_interrupts(void **unused)
{
    runner *r = test_malloc(sizeof *r);
    opt_plo_action a;
    (void)unused;
    start(r, 0, 1, 2);
    step(r);      /* | S300 (warm-up) */
    step(r);      /* | B */
    step(r);      /* | */
    note(r, "/");
    opt_plo_epoch_end(&r->p, &a); /* profiling 300 W interrupted: cancel, back to max */
    apply(r, &a);
    assert_int_equal(r->p.state, OPT_PLO_READY);
    step(r);      /* the same limit again */
    step(r);
    step(r);
    step(r);      /* E, then 250 W */
    note(r, "/");
    opt_plo_epoch_end(&r->p, &a); /* warm-up interrupted: no window to cancel */
    apply(r, &a);
    note(r, "/");
    opt_plo_epoch_end(&r->p, &a); /* in READY: nothing */
    apply(r, &a);
    step(r);
    assert_string_equal(r->log, "S300 | S300 | B | / C S300 | S300 | B | | E S250 / S300 / | "
                                "S250");
    test_free(r);
}

static void test_no_warmup_no_wait(void **unused)
{
    runner *r = test_malloc(sizeof *r);
    (void)unused;
    start(r, 0, 0, 1);
    for (int i = 0; i < 6; i++)
        step(r);
    assert_string_equal(r->log, "S300 | S300 B | E S250 B | E S200 B | E S150 B | E S250 D |");
    test_free(r);
}

static void test_init_done_and_misuse(void **unused)
{
    opt_plo *p = test_malloc(sizeof *p);
    opt_plo_action a;
    zbso_err err;
    opt_plo_config c = {1, 2, 3, 50, 150000, 300000};
    opt_pl_selector sel = {OPT_PL_ZEUS_COST, 0.9, 1, 0};
    (void)unused;
    assert_int_equal(opt_plo_init_done(p, &c, &sel, M, 4, &a, &err), 0);
    assert_int_equal(p->state, OPT_PLO_DONE);
    assert_true(a.set_limit_mw == 200000 && a.done && !a.begin_window);
    opt_plo_step_begin(p, &a);
    assert_true(a.set_limit_mw == 0 && !a.begin_window && !a.end_window);
    /* A stored limit the GPUs cannot take: profile again. */
    c.min_limit_mw = 200000;
    assert_int_equal(opt_plo_init_done(p, &c, &sel, M, 4, &a, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "power limit 150 W is outside the GPUs' constraints"));
    c.min_limit_mw = 150000;
    /* Config errors as Zeus's ValueErrors. */
    opt_plo_config bad = c;
    bad.profile_steps = 0;
    assert_int_equal(opt_plo_init(p, &bad, &a, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "profile_steps must be positive"));
    bad = c;
    bad.warmup_steps = -1;
    assert_int_equal(opt_plo_init(p, &bad, &a, &err), ZBSO_EINVAL);
    bad = c;
    bad.wait_steps = -1;
    assert_int_equal(opt_plo_init(p, &bad, &a, &err), ZBSO_EINVAL);
    /* measured without an ended window; a bad time leaves the window due. */
    assert_int_equal(opt_plo_init(p, &c, &a, &err), 0);
    assert_int_equal(opt_plo_measured(p, &sel, 1.0, 1.0, &a, &err), ZBSO_EINTERNAL);
    for (int i = 0; i < 10 && !p->awaiting; i++)
        opt_plo_step_begin(p, &a);
    assert_true(p->awaiting && a.end_window);
    assert_int_equal(opt_plo_measured(p, &sel, INFINITY, 1.0, &a, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "time of inf s per step"));
    assert_int_equal(opt_plo_measured(p, &sel, 1.0, -1.0, &a, &err), ZBSO_EINVAL);
    assert_int_equal(opt_plo_measured(p, &sel, 1.0, 2.0, &a, &err), 0);
    assert_true(a.set_limit_mw == 250000 && p->n_meas == 1);
    test_free(p);
}

/* Issue 22 item 5: a limit of 2^61 + 200 W times 1000 wraps to 200000 mW, which passed the
 * constraints check and was set; every product of the profile code is bounded now. */
static void test_overflow(void **unused)
{
    opt_plo *p = test_malloc(sizeof *p);
    opt_plo_action a;
    zbso_err err;
    int64_t w, l[OPT_PL_MAX];
    opt_plo_config c = {1, 2, 3, 50, 100000, 700000};
    opt_pl_selector sel = {OPT_PL_ZEUS_COST, 0.5, 1, 0};
    opt_pl_measurement huge[] = {{INT64_C(2305843009213694152), 1.0, 1.0}, {150, 2.0, 2.0}};
    (void)unused;
    assert_int_equal(opt_pl_measurements_check(huge, 2, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "power_limit 2305843009213694152 W is out of range"));
    assert_int_equal(opt_plo_init_done(p, &c, &sel, huge, 2, &a, &err), ZBSO_EINVAL);
    assert_int_equal(a.set_limit_mw, 0);
    huge[0].power_limit_w = OPT_PL_MAX_W + 1;
    assert_int_equal(opt_pl_select(&sel, huge, 2, &w, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "is 1 to 100000 W"));
    huge[0].power_limit_w = OPT_PL_MAX_W;
    assert_int_equal(opt_pl_measurements_check(huge, 2, &err), 0);
    /* world_size scales P: bounded so that P * world_size cannot overflow. */
    sel.world_size = INT64_C(1) << 62;
    assert_int_equal(opt_pl_select(&sel, huge, 2, &w, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "world_size must be at most"));
    sel.world_size = OPT_PL_WORLD_MAX;
    assert_int_equal(opt_pl_select(&sel, huge, 2, &w, &err), 0);
    /* Selectors without a world_size ignore whatever it holds. */
    opt_pl_selector energy = {OPT_PL_ENERGY, 0, INT64_MAX, 0};
    assert_int_equal(opt_pl_select(&energy, huge, 2, &w, &err), 0);
    assert_int_equal(w, OPT_PL_MAX_W);
    /* A step too wide to count in mW: the highest limit alone, as Zeus's range gives. */
    assert_int_equal(opt_pl_limits(100000, 700000, INT64_MAX, l, OPT_PL_MAX, &err), 1);
    assert_true(l[0] == 700000);
    assert_int_equal(opt_pl_limits(100000, INT64_C(1) << 62, 25, l, OPT_PL_MAX, &err),
                     ZBSO_EINVAL);
    /* wait_steps + 1 */
    c.wait_steps = INT64_MAX;
    assert_int_equal(opt_plo_init(p, &c, &a, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "wait_steps must be at most"));
    c.wait_steps = 1;
    c.profile_steps = INT64_MAX;
    assert_int_equal(opt_plo_init(p, &c, &a, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "profile_steps must be at most"));
    test_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_selectors),
        cmocka_unit_test(test_selector_order_and_ties),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_state_machine_sequence),
        cmocka_unit_test(test_epoch_end_interrupts),
        cmocka_unit_test(test_no_warmup_no_wait),
        cmocka_unit_test(test_init_done_and_misuse),
        cmocka_unit_test(test_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
