/* test_core_smart.c: the smart policy's decisions (core/smart.h) on hand-built histories
 * with exact expected batch sizes (walk stops, confirmation set, censored MAB cost,
 * Concurrent answers, warm start), and a property test over random histories: every
 * dispatched batch size is one the job allows and never one already dropped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/smart.h"
#include "core/spec.h"

/* Job with batch sizes 8..128 (five), default dflt, eta 0.5, max_power 300 W: a trial of
 * time t and energy 0 costs 150 * t. */
static zbso_job make_job(int64_t dflt)
{
    static const int64_t bs[] = {8, 16, 32, 64, 128};
    zbso_job job;
    memset(&job, 0, sizeof job);
    spec_defaults(&job.spec);
    snprintf(job.spec.job_id, sizeof job.spec.job_id, "%s", "job-1");
    snprintf(job.spec.job_id_prefix, sizeof job.spec.job_id_prefix, "%s", "job");
    memcpy(job.spec.batch_sizes, bs, sizeof bs);
    job.spec.n_batch_sizes = 5;
    job.spec.default_batch_size = dflt;
    job.spec.max_power = 300.0;
    job.spec.number_of_gpus = 1;
    job.spec.policy = ZBSO_POLICY_SMART;
    job.min_cost_batch_size = dflt;
    rng_seed_u64(&job.rng, 7);
    return job;
}

/* Appends a trial of type type: Dispatched when dispatched, else Succeeded with
 * (converged, cost 150 * time_s, epochs). */
static void add(zbso_trial *t, size_t *n, zbso_trial_type type, int64_t bs, bool dispatched,
                bool converged, double time_s, int64_t epochs)
{
    zbso_trial x;
    memset(&x, 0, sizeof x);
    x.trial_number = (int64_t)*n + 1;
    x.batch_size = bs;
    x.type = type;
    x.status = dispatched ? ZBSO_TRIAL_DISPATCHED : ZBSO_TRIAL_SUCCEEDED;
    x.converged = converged;
    x.time = time_s;
    x.epochs = epochs;
    t[(*n)++] = x;
}

static void explore(zbso_trial *t, size_t *n, int64_t bs, bool converged, double time_s,
                    int64_t epochs)
{
    add(t, n, ZBSO_TRIAL_EXPLORATION, bs, false, converged, time_s, epochs);
}

static opt_smart_decision *decide(const zbso_job *job, const zbso_trial *t, size_t n,
                                  const opt_smart_prior *prior)
{
    static opt_smart_decision d;
    zbso_err err;
    zbso_rng rng = job->rng;
    err_clear(&err);
    assert_int_equal(opt_smart_next(job, t, n, prior, &rng, &d, &err), 0);
    return &d;
}

/* The fit of SPEC §3.8 rule 3, written out again: arms[a] is fitted from its n[a]
 * rewards r[a] with its own relative variance, bounded by the one pooled over the arms
 * with two or more (which stands in for a zero one). */
static void pooled_fit(const zbso_job_spec *spec, size_t n_arms, const int64_t *bs,
                       const double *const *r, const size_t *n, zbso_arm *arms)
{
    double rel_sum = 0, rel_w = 0;
    for (size_t a = 0; a < n_arms; a++) {
        if (n[a] < 2)
            continue;
        double m = opt_mean(r[a], n[a]);
        rel_sum += (double)(n[a] - 1) * opt_var(r[a], n[a]) / (m * m);
        rel_w += (double)(n[a] - 1);
    }
    double rel = rel_sum / rel_w;
    for (size_t a = 0; a < n_arms; a++) {
        double sum = opt_sum(r[a], n[a]), m = sum / (double)n[a];
        double own = n[a] >= 2 ? opt_var(r[a], n[a]) / (m * m) : 0;
        double q = 1.0 / ((own > 0 && own < rel ? own : rel) * m * m);
        arms[a].batch_size = bs[a];
        arms[a].num_observations = (int64_t)n[a];
        arms[a].param_precision = spec->mab_prior_precision + (double)n[a] * q;
        arms[a].param_mean = (spec->mab_prior_precision * spec->mab_prior_mean + q * sum) /
                             arms[a].param_precision;
    }
}

static void expect(const zbso_job *job, const zbso_trial *t, size_t n, opt_smart_kind kind,
                   opt_smart_phase phase, int64_t bs)
{
    opt_smart_decision *d = decide(job, t, n, NULL);
    assert_int_equal(d->kind, kind);
    assert_int_equal(d->phase, phase);
    assert_int_equal(d->batch_size, bs);
}

/* Default first; a Concurrent trial at it while it runs; then down; a size past 1.2 x the
 * best ends the way down, the way up ends the same way; the confirmation set is the
 * sizes within 1.2 x the best, ascending; a failed confirmation drops its size. */
static void test_walk_confirm_drop(void **unused)
{
    zbso_job job = make_job(32);
    zbso_trial t[32];
    size_t n = 0;
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_WALK, 32);
    add(t, &n, ZBSO_TRIAL_EXPLORATION, 32, true, false, 0, 0);
    expect(&job, t, n, OPT_SMART_CONCURRENT, OPT_SMART_WALK, 32);
    n = 0;
    explore(t, &n, 32, true, 10, 10);                 /* 1500 */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_WALK, 16);
    explore(t, &n, 16, true, 9, 10);                  /* 1350: the best */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_WALK, 8);
    explore(t, &n, 8, true, 13, 10);                  /* 1950 > 1.2 x 1350: down ends */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_WALK, 64);
    explore(t, &n, 64, true, 20, 10);                 /* 3000: up ends before 128 */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_CONFIRM, 16);
    explore(t, &n, 16, true, 9, 10);
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_CONFIRM, 32);
    add(t, &n, ZBSO_TRIAL_EXPLORATION, 32, true, false, 0, 0);
    expect(&job, t, n, OPT_SMART_CONCURRENT, OPT_SMART_CONFIRM, 16);
    t[n - 1].status = ZBSO_TRIAL_SUCCEEDED;          /* 32's confirmation: stopped */
    t[n - 1].time = 20;
    opt_smart_decision *d = decide(&job, t, n, NULL);
    assert_int_equal(d->kind, OPT_SMART_MAB);
    assert_int_equal(d->phase, OPT_SMART_EXPLOIT);
    assert_int_equal(d->batch_size, 16);
    assert_int_equal(d->n_arms, 1);
    assert_int_equal(d->arms[0].batch_size, 16);
    assert_int_equal(d->n_dropped, 1);
    assert_int_equal(d->dropped[0], 32);
}

/* A slow run that needed more epochs than its neighbour is damped: cost per epoch times
 * the mean of the two epoch counts. */
static void test_walk_damped(void **unused)
{
    zbso_job job = make_job(64);
    zbso_trial t[16];
    size_t n = 0;
    explore(t, &n, 64, true, 10, 10);                 /* 1500 */
    explore(t, &n, 32, true, 13, 20);                 /* 1950, damped 97.5 x 15 = 1462.5 */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_WALK, 16);
    n = 0;
    explore(t, &n, 64, true, 10, 10);
    explore(t, &n, 32, true, 13, 10);                 /* 1950, damped the same: ends */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_WALK, 128);
}

/* One bump (past 1.2 x the best, within 1.25 x) does not end a direction; a second in a
 * row does, and so does one past 1.25 x; a cheaper size between two bumps resets the
 * count. */
static void test_walk_bumps(void **unused)
{
    zbso_job job = make_job(128);
    zbso_trial t[16];
    size_t n = 0;
    explore(t, &n, 128, true, 10, 10);                /* 1500: the best */
    explore(t, &n, 64, true, 12.2, 10);               /* 1830: a bump */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_WALK, 32);
    explore(t, &n, 32, true, 12.2, 10);               /* a second bump: down ends */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_CONFIRM, 128);
    t[n - 1].time = 9;                                /* 1350: the best, the count resets */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_WALK, 16);
    explore(t, &n, 16, true, 11, 10);                 /* 1650 > 1.2 x 1350: a bump */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_WALK, 8);
    n = 0;
    explore(t, &n, 128, true, 10, 10);
    explore(t, &n, 64, true, 13, 10);                 /* 1950 > 1.25 x 1500: ends */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_CONFIRM, 128);
    t[1].time = 12.2;                                 /* a bump, */
    explore(t, &n, 32, true, 11, 10);                 /* 1650: within 1.2 x, not the best, */
    explore(t, &n, 16, true, 12.2, 10);               /* a bump again: one in a row */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_WALK, 8);
}

/* A size past 1.25 x the best whose cost per epoch times the fewer epochs of its run and
 * its neighbour's is within 1.2 x (one slow path) is run once more; then it is judged by
 * the mean cost per epoch of its two runs times the median of the three epoch counts. */
static void test_walk_verify(void **unused)
{
    zbso_job job = make_job(128);
    zbso_trial t[16];
    size_t n = 0;
    explore(t, &n, 128, true, 10, 10);                /* 1500, 150 per epoch */
    explore(t, &n, 64, true, 20, 20);                 /* 3000, damped 150 x 15 = 2250 */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_WALK, 64);
    add(t, &n, ZBSO_TRIAL_EXPLORATION, 64, true, false, 0, 0);
    expect(&job, t, n, OPT_SMART_CONCURRENT, OPT_SMART_WALK, 128);
    t[n - 1].status = ZBSO_TRIAL_SUCCEEDED;          /* 150 x median(20, 10, 10): 1500 */
    t[n - 1].converged = true;
    t[n - 1].time = 10;
    t[n - 1].epochs = 10;
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_WALK, 32);
    t[n - 1].time = 30;                               /* 187.5 x median(20, 20, 10): ends */
    t[n - 1].epochs = 20;
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_CONFIRM, 128);
    t[n - 1].time = 10;                               /* did not converge: ends */
    t[n - 1].epochs = 10;
    t[n - 1].converged = false;
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_CONFIRM, 128);
    n = 1;
    explore(t, &n, 64, true, 26, 20);                 /* 195 x 10 = 1950 > 1.2 x 1500 */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_CONFIRM, 128);
}

/* A size that does not converge ends its direction; the way up is walked even when the
 * way down found a cheaper size (a second valley may lie up there), unless that size costs
 * less than half the default. */
static void test_walk_stops(void **unused)
{
    zbso_job job = make_job(32);
    zbso_trial t[16];
    size_t n = 0;
    explore(t, &n, 32, true, 10, 10);
    explore(t, &n, 16, false, 20, 5);
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_WALK, 64);
    n = 0;
    explore(t, &n, 32, true, 10, 10);                 /* 1500 */
    explore(t, &n, 16, true, 8, 10);                  /* 1200 < 0.9 x 1500 */
    explore(t, &n, 8, true, 12, 10);                  /* 1800 > 1.2 x 1200 */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_WALK, 64);
    explore(t, &n, 64, true, 5, 10);                  /* 750: the second valley */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_WALK, 128);
    explore(t, &n, 128, true, 10, 10);                /* 1500 > 1.2 x 750 */
    /* Confirmation: 64 only (16's 1200 and its damped 1200 are > 900). */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_CONFIRM, 64);
    n = 0;
    explore(t, &n, 32, true, 10, 10);                 /* 1500 */
    explore(t, &n, 16, true, 4.9, 10);                /* 735 < 0.5 x 1500 */
    explore(t, &n, 8, true, 12, 10);                  /* past the valley */
    expect(&job, t, n, OPT_SMART_EXPLORE, OPT_SMART_CONFIRM, 16);
}

/* Nothing converged in the walk: ZBSO_ENOCONV naming the job. */
static void test_no_convergence(void **unused)
{
    zbso_job job = make_job(32);
    zbso_trial t[8];
    size_t n = 0;
    opt_smart_decision d;
    zbso_err err;
    explore(t, &n, 32, false, 10, 100);
    explore(t, &n, 16, false, 10, 100);
    explore(t, &n, 64, false, 10, 100);
    err_clear(&err);
    assert_int_equal(opt_smart_next(&job, t, n, NULL, &job.rng, &d, &err), ZBSO_ENOCONV);
    assert_non_null(strstr(err.msg, "job-1"));
}

/* Exploit: a MAB run the cost bound stopped counts as its cost plus min_cost; Failed
 * trials count nowhere; the arms are those of the survivors. */
static void test_censored_mab_cost(void **unused)
{
    zbso_job job = make_job(32);
    zbso_trial t[16];
    size_t n = 0;
    explore(t, &n, 32, true, 10, 10);                 /* 1500 */
    explore(t, &n, 16, true, 9, 10);                  /* 1350 */
    explore(t, &n, 8, true, 20, 10);                  /* 3000: down ends, up walked */
    explore(t, &n, 64, true, 20, 10);
    explore(t, &n, 16, true, 9, 10);                  /* confirmations */
    explore(t, &n, 32, true, 10, 10);
    job.has_min_cost = true;
    job.min_cost = 1350;
    add(t, &n, ZBSO_TRIAL_MAB, 16, false, false, 4, 3);   /* stopped: 600 */
    add(t, &n, ZBSO_TRIAL_MAB, 32, false, true, 10, 10);
    add(t, &n, ZBSO_TRIAL_MAB, 32, true, false, 0, 0);    /* still running */
    t[n - 1].status = ZBSO_TRIAL_FAILED;
    assert_true(opt_smart_reward(&job, &t[6]) == -(600.0 + 1350.0));
    assert_true(opt_smart_reward(&job, &t[7]) == -1500.0);
    opt_smart_decision *d = decide(&job, t, n, NULL);
    assert_int_equal(d->kind, OPT_SMART_MAB);
    assert_int_equal(d->n_arms, 2);
    /* One noise model for both: 32's three equal rewards are not taken as exact. */
    zbso_arm want[2];
    double r16[] = {-1350, -1350, -1950}, r32[] = {-1500, -1500, -1500};
    const double *r[] = {r16, r32};
    size_t nr[] = {3, 3};
    int64_t bs[] = {16, 32};
    pooled_fit(&job.spec, 2, bs, r, nr, want);
    for (size_t a = 0; a < 2; a++) {
        assert_int_equal(d->arms[a].batch_size, bs[a]);
        assert_int_equal(d->arms[a].num_observations, 3);
        assert_true(fabs(d->arms[a].param_mean - want[a].param_mean) <=
                    1e-12 * fabs(want[a].param_mean));
        assert_true(fabs(d->arms[a].param_precision - want[a].param_precision) <=
                    1e-12 * want[a].param_precision);
        assert_true(isfinite(d->arms[a].param_precision));
    }
    /* 16: relative variance (2 x 80000 / 1550^2 + 2 x 0) / 4, precision 3 / (that x
     * 1550^2) = 3 / 40000. */
    assert_true(fabs(d->arms[0].param_precision - 3.0 / 40000.0) <= 1e-15);
    /* The window keeps the newest rewards; with one reward per arm nothing is pooled and
     * §3.3's fit takes it as exact. */
    job.spec.window_size = 1;
    d = decide(&job, t, n, NULL);
    assert_int_equal(d->arms[0].num_observations, 1);
    assert_true(d->arms[0].param_mean == -1950.0);
    assert_true(isinf(d->arms[0].param_precision));
}

/* Exploit: an arm whose own runs agree more closely than the pool keeps its own variance;
 * one whose runs differ more gets the pooled one. */
static void test_pooled_bound(void **unused)
{
    zbso_job job = make_job(32);
    zbso_trial t[16];
    size_t n = 0;
    explore(t, &n, 32, true, 10, 10);                 /* 1500 */
    explore(t, &n, 16, true, 9, 10);                  /* 1350 */
    explore(t, &n, 8, true, 20, 10);                  /* 3000: down ends */
    explore(t, &n, 64, true, 20, 10);                 /* 3000: up ends */
    explore(t, &n, 16, true, 1360.0 / 150.0, 10);     /* confirmations */
    explore(t, &n, 32, true, 1900.0 / 150.0, 10);
    opt_smart_decision *d = decide(&job, t, n, NULL);
    assert_int_equal(d->kind, OPT_SMART_MAB);
    assert_int_equal(d->n_arms, 2);
    zbso_arm want[2];
    double r16[] = {-1350, -1360}, r32[] = {-1500, -1900};
    const double *r[] = {r16, r32};
    size_t nr[] = {2, 2};
    int64_t bs[] = {16, 32};
    pooled_fit(&job.spec, 2, bs, r, nr, want);
    for (size_t a = 0; a < 2; a++)
        assert_true(fabs(d->arms[a].param_precision - want[a].param_precision) <=
                    1e-12 * want[a].param_precision);
    /* 16's own: variance 25, precision 2 / 25; 32's own (40000 / 1700^2) is above the
     * pool, (25 / 1355^2 + 40000 / 1700^2) / 2, which it gets instead. */
    assert_true(fabs(d->arms[0].param_precision - 2.0 / 25.0) <= 1e-9);
    double pool = (25.0 / (1355.0 * 1355.0) + 40000.0 / (1700.0 * 1700.0)) / 2;
    assert_true(fabs(d->arms[1].param_precision - 2.0 / (pool * 1700.0 * 1700.0)) <=
                1e-9 * d->arms[1].param_precision);
}

/* Every confirmation failed: no size is dropped, all candidates stay arms. */
static void test_all_confirmations_fail(void **unused)
{
    zbso_job job = make_job(32);
    zbso_trial t[16];
    size_t n = 0;
    explore(t, &n, 32, true, 10, 10);
    explore(t, &n, 16, true, 10, 10);
    explore(t, &n, 8, true, 20, 10);
    explore(t, &n, 64, true, 20, 10);
    explore(t, &n, 16, false, 20, 10);
    explore(t, &n, 32, false, 20, 10);
    opt_smart_decision *d = decide(&job, t, n, NULL);
    assert_int_equal(d->kind, OPT_SMART_MAB);
    assert_int_equal(d->n_dropped, 0);
    assert_int_equal(d->n_arms, 2);
}

/* Warm start: asks for the prior; with it, jumps to the predicted best after the
 * default's run, then walks around the better of the two. */
static void test_warm_start(void **unused)
{
    zbso_job job = make_job(32);
    zbso_trial t[16], p[8];
    size_t n = 0, np = 0;
    opt_smart_prior prior;
    job.spec.warm_start = true;
    explore(t, &n, 32, true, 10, 10);                 /* 150 per epoch */
    opt_smart_decision *d = decide(&job, t, n, NULL);
    assert_true(d->wants_prior);
    assert_int_equal(d->batch_size, 16);
    /* The prior job: 100 per epoch at 32 (ratio 1.5); 128 at 50 per epoch, 10 epochs:
     * predicted 750, below 0.97 x 1500; 16 predicted 1500 is not. */
    explore(p, &np, 32, true, 100.0 / 15.0, 10);
    explore(p, &np, 16, true, 100.0 / 15.0, 10);
    explore(p, &np, 128, true, 50.0 / 15.0, 10);
    explore(p, &np, 64, false, 1, 1);                 /* never converged: no prediction */
    memset(&prior, 0, sizeof prior);
    opt_smart_prior_add(&job.spec, p, np, &prior);
    assert_int_equal(prior.n_runs[4], 1);
    assert_int_equal(prior.n_converged[3], 0);
    d = decide(&job, t, n, &prior);
    assert_false(d->wants_prior);
    assert_int_equal(d->kind, OPT_SMART_EXPLORE);
    assert_int_equal(d->batch_size, 128);
    explore(t, &n, 128, true, 6, 10);                 /* 900: the walk starts from 128 */
    d = decide(&job, t, n, &prior);
    assert_int_equal(d->center, 128);
    assert_int_equal(d->batch_size, 64);
    d = decide(&job, t, n, NULL);     /* a step to a size not run yet reads the prior */
    assert_true(d->wants_prior);
    assert_int_equal(d->center, 128);
    assert_int_equal(d->batch_size, 64);
    /* Without warm start the same trials are a plain walk from the default. */
    job.spec.warm_start = false;
    d = decide(&job, t, n, NULL);
    assert_false(d->wants_prior);
    assert_int_equal(d->center, 32);
}

/* A warm job's walk does not run a size the prior predicts past 1.5 x the best, once the
 * prior's shape has held (two shared sizes, ratios within 1.25 x); replayed without the
 * prior, the size stays passed over once the job has a newer trial. */
static void test_warm_prune(void **unused)
{
    zbso_job job = make_job(32);
    zbso_trial t[16], p[8];
    size_t n = 0, np = 0;
    opt_smart_prior prior;
    job.spec.warm_start = true;
    /* The prior job, per epoch: 32 at 100 (this job's 150: ratio 1.5), 64 at 90 (predicted
     * 1350: the jump), 128 at 100 (1500), 16 at 200 (3000 > 1.5 x 1350). */
    explore(p, &np, 32, true, 1000.0 / 150.0, 10);
    explore(p, &np, 64, true, 900.0 / 150.0, 10);
    explore(p, &np, 128, true, 1000.0 / 150.0, 10);
    explore(p, &np, 16, true, 2000.0 / 150.0, 10);
    memset(&prior, 0, sizeof prior);
    opt_smart_prior_add(&job.spec, p, np, &prior);
    explore(t, &n, 32, true, 10, 10);                 /* 1500 */
    opt_smart_decision *d = decide(&job, t, n, &prior);
    assert_int_equal(d->batch_size, 64);              /* the jump */
    explore(t, &n, 64, true, 9, 10);                  /* 1350: ratio 1.5 again */
    d = decide(&job, t, n, NULL);
    assert_true(d->wants_prior);                      /* the live step down to 16 */
    d = decide(&job, t, n, &prior);
    assert_int_equal(d->center, 64);
    assert_int_equal(d->batch_size, 128);             /* 16 pruned: down ends */
    explore(t, &n, 128, true, 12, 10);                /* 1800 > 1.25 x 1350: up ends */
    d = decide(&job, t, n, NULL);                     /* 16 stays pruned */
    assert_false(d->wants_prior);
    assert_int_equal(d->kind, OPT_SMART_EXPLORE);
    assert_int_equal(d->phase, OPT_SMART_CONFIRM);
    assert_int_equal(d->batch_size, 32);
    /* A prior whose shape did not hold (ratios 1.5 and 2.25) prunes nothing. */
    memset(&prior, 0, sizeof prior);
    p[1].time = 600.0 / 150.0;
    opt_smart_prior_add(&job.spec, p, np, &prior);
    d = decide(&job, t, 2, &prior);
    assert_int_equal(d->batch_size, 16);
    /* Without warm start the walk runs 16 after the default. */
    job.spec.warm_start = false;
    expect(&job, t, 1, OPT_SMART_EXPLORE, OPT_SMART_WALK, 16);
}

/* The smart min_cost is the least mean converged cost of a size. */
static void test_min_cost(void **unused)
{
    zbso_job job = make_job(32);
    zbso_trial t[8];
    size_t n = 0;
    bool has;
    double mc = 0;
    int64_t bs = 0;
    opt_smart_min_cost(&job.spec, t, n, &has, &mc, &bs);
    assert_false(has);
    explore(t, &n, 32, true, 10, 10);                 /* 32: mean 1500 */
    explore(t, &n, 16, true, 6, 10);                  /* 16: (900 + 2100) / 2 = 1500 */
    explore(t, &n, 16, true, 14, 10);
    explore(t, &n, 8, false, 1, 1);                   /* not converged: left out */
    opt_smart_min_cost(&job.spec, t, n, &has, &mc, &bs);
    assert_true(has);
    assert_true(mc == 1500.0);
    assert_int_equal(bs, 16);                         /* the smaller on ties */
}

/* Random histories: a job whose trials come from a random world (each dispatched trial
 * converges or not, at a random cost and epochs; up to three run at once; some fail)
 * must only be sent batch sizes it allows, never one a decision has called dropped. */
static void test_property_dispatch(void **unused)
{
    zbso_rng world;
    rng_seed_u64(&world, 2026);
    for (int job_no = 0; job_no < 300; job_no++) {
        zbso_job job;
        memset(&job, 0, sizeof job);
        spec_defaults(&job.spec);
        snprintf(job.spec.job_id, sizeof job.spec.job_id, "prop-%d", job_no);
        size_t nb = 1 + (size_t)(rng_next_u64(&world) % 9);
        for (size_t i = 0; i < nb; i++)
            job.spec.batch_sizes[i] = (int64_t)(8 << i);
        job.spec.n_batch_sizes = nb;
        job.spec.default_batch_size = job.spec.batch_sizes[rng_next_u64(&world) % nb];
        job.spec.max_power = 300;
        job.spec.policy = ZBSO_POLICY_SMART;
        job.spec.warm_start = rng_next_u64(&world) % 2;
        job.spec.window_size = (int64_t)(rng_next_u64(&world) % 3);
        rng_seed_u64(&job.rng, (uint64_t)job_no);
        opt_smart_prior prior;
        memset(&prior, 0, sizeof prior);
        for (size_t i = 0; i < nb; i++) {
            prior.epoch_cost_sum[i] = 10 + (double)(rng_next_u64(&world) % 100);
            prior.n_runs[i] = 1;
            prior.epochs_sum[i] = 1 + (double)(rng_next_u64(&world) % 20);
            prior.n_converged[i] = rng_next_u64(&world) % 4 != 0;
        }
        bool dropped[ZBSO_MAX_BATCH_SIZES] = {false};
        /* The default's bs converges first: a job the world lets start. */
        double p_conv = 0.5 + 0.5 * (double)(rng_next_u64(&world) % 100) / 100.0;
        zbso_trial t[200];
        size_t n = 0;
        while (n < 200) {
            /* End a random running trial, or dispatch another (at most 3 running). */
            size_t running = 0;
            for (size_t k = 0; k < n; k++)
                running += t[k].status == ZBSO_TRIAL_DISPATCHED;
            if (running > 0 && (running == 3 || rng_next_u64(&world) % 2)) {
                size_t pick = rng_next_u64(&world) % running;
                for (size_t k = 0; k < n; k++) {
                    if (t[k].status != ZBSO_TRIAL_DISPATCHED || pick-- > 0)
                        continue;
                    uint64_t u = rng_next_u64(&world) % 100;
                    t[k].status = u < 5 ? ZBSO_TRIAL_FAILED : ZBSO_TRIAL_SUCCEEDED;
                    t[k].converged = (double)u / 100.0 < p_conv ||
                                     (n < 2 && t[k].batch_size == job.spec.default_batch_size);
                    t[k].epochs = 1 + (int64_t)(rng_next_u64(&world) % 30);
                    t[k].time = (double)(1 + rng_next_u64(&world) % 1000) / 10.0;
                    if (t[k].status == ZBSO_TRIAL_SUCCEEDED && t[k].converged) {
                        double cost = opt_trial_cost(&job.spec, &t[k]);
                        if (!job.has_min_cost || cost < job.min_cost) {
                            job.has_min_cost = true;
                            job.min_cost = cost;
                        }
                    }
                    break;
                }
                continue;
            }
            opt_smart_decision d;
            zbso_err err;
            err_clear(&err);
            int rc = opt_smart_next(&job, t, n, job.spec.warm_start ? &prior : NULL, &job.rng,
                                    &d, &err);
            if (rc == ZBSO_ENOCONV)
                break;
            assert_int_equal(rc, 0);
            bool allowed = false;
            for (size_t i = 0; i < nb; i++)
                allowed = allowed || job.spec.batch_sizes[i] == d.batch_size;
            assert_true(allowed);
            for (size_t i = 0; i < nb; i++)
                if (dropped[i])
                    assert_true(job.spec.batch_sizes[i] != d.batch_size);
            for (size_t k = 0; k < d.n_dropped; k++)
                for (size_t i = 0; i < nb; i++)
                    if (job.spec.batch_sizes[i] == d.dropped[k])
                        dropped[i] = true;
            zbso_trial_type type = d.kind == OPT_SMART_EXPLORE      ? ZBSO_TRIAL_EXPLORATION
                                   : d.kind == OPT_SMART_CONCURRENT ? ZBSO_TRIAL_CONCURRENT
                                                                    : ZBSO_TRIAL_MAB;
            add(t, &n, type, d.batch_size, true, false, 0, 0);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_confirm_drop),
        cmocka_unit_test(test_walk_damped),
        cmocka_unit_test(test_walk_bumps),
        cmocka_unit_test(test_walk_verify),
        cmocka_unit_test(test_walk_stops),
        cmocka_unit_test(test_no_convergence),
        cmocka_unit_test(test_censored_mab_cost),
        cmocka_unit_test(test_pooled_bound),
        cmocka_unit_test(test_all_confirmations_fail),
        cmocka_unit_test(test_warm_start),
        cmocka_unit_test(test_warm_prune),
        cmocka_unit_test(test_min_cost),
        cmocka_unit_test(test_property_dispatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
