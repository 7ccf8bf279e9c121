/* test_smart_service.c: the smart policy through the service (svc_* on memory://, the
 * store the simulator uses; the SQL backends store the policy once the spec's schema step
 * is in): walk, Concurrent trials, the mean-based min_cost and its bound, exploit with
 * stored arms, the warm start reading the prefix's other jobs, and a Zeus job beside it
 * untouched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/optimizer.h"
#include "core/spec.h"
#include "service/service.h"

static double clock_now = 1000.0;

static double fake_now(void *ctx)
{
    return clock_now;
}

static int fake_entropy(void *ctx, uint32_t *words, size_t n)
{
    memset(words, 0, n * sizeof *words);
    return 0;
}

static svc_env env = {.now = fake_now, .entropy = fake_entropy};

static int setup(void **state)
{
    store *st;
    store_options opt = {.create_if_empty = true};
    zbso_err err;
    if (store_open("memory://", &opt, &st, &err) != 0)
        fail_msg("store_open: %s", err.msg);
    *state = st;
    return 0;
}

static int teardown(void **state)
{
    store_close(*state);
    return 0;
}

/* Batch sizes 8..128 (five), default 32, eta 1 (cost = energy), beta 2, seed 1. */
static zbso_job_spec make_spec(const char *job_id, zbso_policy policy)
{
    static const int64_t bs[] = {8, 16, 32, 64, 128};
    zbso_job_spec s;
    zbso_err err;
    spec_defaults(&s);
    /* The prefix: the id up to its first '-'. */
    snprintf(s.job_id_prefix, sizeof s.job_id_prefix, "%.*s", (int)strcspn(job_id, "-"),
             job_id);
    snprintf(s.job_id, sizeof s.job_id, "%s", job_id);
    memcpy(s.batch_sizes, bs, sizeof bs);
    s.n_batch_sizes = 5;
    s.default_batch_size = 32;
    s.eta_knob = 1.0;
    s.target_metric = 0.9;
    s.max_epochs = 50;
    s.has_mab_seed = true;
    s.mab_seed = 1;
    s.max_power = 300;
    s.number_of_gpus = 1;
    s.policy = policy;
    s.has_policy = true;
    snprintf(s.gpu_model, sizeof s.gpu_model, "%s", "H200");
    if (spec_validate(&s, &err) != 0)
        fail_msg("spec: %s", err.msg);
    return s;
}

static void register_job(store *st, const zbso_job_spec *s)
{
    zbso_job_spec out;
    bool created;
    zbso_err err;
    if (svc_register_job(st, &env, s, &out, &created, NULL, &err) != 0)
        fail_msg("register: %s", err.msg);
    assert_true(created);
}

static zbso_trial_id next(store *st, const char *job_id)
{
    zbso_trial_id id;
    zbso_err err;
    if (svc_next_batch_size(st, &env, job_id, NULL, &id, NULL, &err) != 0)
        fail_msg("next: %s", err.msg);
    return id;
}

/* One final report: converged at `epochs` with this energy, or not (current_epoch at
 * max_epochs). Returns whether the server called it converged. */
static bool finish(store *st, zbso_trial_id id, double energy, int64_t epochs, bool converged)
{
    zbso_training_result r = {.trial = id, .time = 1, .energy = energy,
                              .metric = converged ? 0.95 : 0.5,
                              .current_epoch = converged ? epochs : 50};
    zbso_report_response resp;
    zbso_err err;
    clock_now += 1;
    if (svc_report(st, &env, &r, &resp, NULL, &err) != 0)
        fail_msg("report: %s", err.msg);
    assert_true(resp.stop_train);
    return resp.converged;
}

typedef struct peek {
    const char *job_id;
    zbso_job job;
    zbso_arm arms[8];
    size_t n_arms;
    zbso_trial trial;
    int64_t trial_number;
} peek;

static int peek_fn(store_txn *t, void *arg, zbso_err *err)
{
    peek *p = arg;
    int rc = store_job_get(t, p->job_id, false, &p->job, err);
    if (rc == 0)
        rc = store_arms_get(t, p->job_id, p->arms, 8, &p->n_arms, err);
    if (rc == 0 && p->trial_number > 0)
        rc = store_trial_get(t, p->job_id, p->trial_number, &p->trial, err);
    return rc;
}

static peek look(store *st, const char *job_id, int64_t trial_number)
{
    peek p = {.job_id = job_id, .trial_number = trial_number};
    zbso_err err;
    if (store_exec_read(st, peek_fn, &p, &err) != 0)
        fail_msg("peek: %s", err.msg);
    return p;
}

/* Walk, Concurrent answers, confirm, exploit; min_cost is a mean; the bound follows it. */
static void test_smart_job(void **state)
{
    store *st = *state;
    zbso_job_spec s = make_spec("bert-smart", ZBSO_POLICY_SMART);
    zbso_err err;
    register_job(st, &s);
    zbso_trial_id a = next(st, "bert-smart");
    assert_int_equal(a.batch_size, 32);
    zbso_trial_id c = next(st, "bert-smart");            /* while 32 runs */
    assert_int_equal(c.batch_size, 32);
    assert_int_equal(look(st, "bert-smart", c.trial_number).trial.type,
                     ZBSO_TRIAL_CONCURRENT);
    double ub;
    assert_int_equal(svc_cost_bound(st, &env, "bert-smart", &ub, NULL, &err), 0);
    assert_true(isinf(ub));
    assert_true(finish(st, a, 1000, 10, true));
    assert_true(finish(st, c, 1400, 14, true));
    /* min_cost: the mean of 32's converged runs, 1200, not the least (1000). */
    peek p = look(st, "bert-smart", 0);
    assert_true(p.job.has_min_cost);
    assert_true(p.job.min_cost == 1200.0);
    assert_int_equal(svc_cost_bound(st, &env, "bert-smart", &ub, NULL, &err), 0);
    assert_true(ub == 2400.0);
    /* Down: 16 (900, the best), 8 (1700 > 1.2 x 900: down ends); up: 64 (1500 > 1080). */
    zbso_trial_id t = next(st, "bert-smart");
    assert_int_equal(t.batch_size, 16);
    assert_true(finish(st, t, 900, 10, true));
    t = next(st, "bert-smart");
    assert_int_equal(t.batch_size, 8);
    assert_true(finish(st, t, 1700, 10, true));
    t = next(st, "bert-smart");
    assert_int_equal(t.batch_size, 64);
    assert_true(finish(st, t, 1500, 10, true));
    /* Confirm 16 and 32 (1000, its walk run, is within 1.2 x 900; the Concurrent run is
     * not an exploration), then exploit over both. */
    t = next(st, "bert-smart");
    assert_int_equal(t.batch_size, 16);
    assert_int_equal(look(st, "bert-smart", t.trial_number).trial.type,
                     ZBSO_TRIAL_EXPLORATION);
    assert_true(finish(st, t, 950, 10, true));
    t = next(st, "bert-smart");
    assert_int_equal(t.batch_size, 32);
    assert_true(finish(st, t, 1100, 10, true));
    t = next(st, "bert-smart");
    p = look(st, "bert-smart", t.trial_number);
    assert_int_equal(p.trial.type, ZBSO_TRIAL_MAB);
    assert_int_equal(p.job.stage, ZBSO_STAGE_MAB);
    assert_int_equal(p.n_arms, 2);
    assert_int_equal(p.arms[0].batch_size, 16);
    assert_int_equal(p.arms[0].num_observations, 2);
    assert_int_equal(p.arms[1].batch_size, 32);
    assert_int_equal(p.arms[1].num_observations, 3);  /* the Concurrent run counts here */
    /* A stopped MAB run: the next choice's arm counts it as its cost plus min_cost, the
     * least mean (16's 925). */
    int64_t bs = t.batch_size;
    assert_false(finish(st, t, 500, 5, false));
    assert_true(look(st, "bert-smart", 0).job.min_cost == 925.0);
    next(st, "bert-smart");
    p = look(st, "bert-smart", 0);
    /* The arm's relative variance, bounded by the one pooled over both (SPEC §3.8 rule 3). */
    double r16[] = {-900, -950, -(500 + 925.0)};
    double r32[] = {-1000, -1400, -1100, -(500 + 925.0)};
    const double *r[] = {r16, r32};
    size_t nr[] = {bs == 16 ? 3 : 2, bs == 16 ? 3 : 4}, w = bs == 16 ? 0 : 1;
    double rel = 0;
    for (size_t k = 0; k < 2; k++) {
        double mk = opt_mean(r[k], nr[k]);
        rel += (double)(nr[k] - 1) * opt_var(r[k], nr[k]) / (mk * mk);
    }
    rel /= (double)(nr[0] - 1 + nr[1] - 1);
    double sum = opt_sum(r[w], nr[w]), m = sum / (double)nr[w];
    double own = opt_var(r[w], nr[w]) / (m * m);  /* the pool bounds it from above */
    double q = 1.0 / ((own > 0 && own < rel ? own : rel) * m * m);
    double prec = s.mab_prior_precision + (double)nr[w] * q;
    double mean = (s.mab_prior_precision * s.mab_prior_mean + q * sum) / prec;
    zbso_arm *got = &p.arms[w];
    assert_true(fabs(got->param_mean - mean) <= 1e-12 * fabs(mean));
    assert_true(fabs(got->param_precision - prec) <= 1e-12 * prec);
    assert_int_equal(got->num_observations, (int64_t)nr[w]);
}

/* A warm-started job reads the other jobs of its prefix and jumps to their best; a Zeus job
 * of the same spec walks as Zeus does, and the prior job is left as it was. */
static void test_warm_start_and_zeus_beside(void **state)
{
    store *st = *state;
    zbso_job_spec prior = make_spec("bert-a40", ZBSO_POLICY_ZEUS);
    register_job(st, &prior);
    /* The prior: 128 is the cheapest by far (per epoch 20, 10 epochs), 32 costs 100 per
     * epoch. */
    zbso_trial_id t = next(st, "bert-a40");
    assert_int_equal(t.batch_size, 32);
    finish(st, t, 1000, 10, true);
    t = next(st, "bert-a40");
    assert_int_equal(t.batch_size, 16);   /* Zeus walks down first */
    finish(st, t, 3000, 10, false);
    t = next(st, "bert-a40");
    assert_int_equal(t.batch_size, 64);
    finish(st, t, 600, 10, true);
    t = next(st, "bert-a40");
    assert_int_equal(t.batch_size, 128);
    finish(st, t, 200, 10, true);
    int64_t prior_rev = look(st, "bert-a40", 0).job.revision;

    zbso_job_spec s = make_spec("bert-h100", ZBSO_POLICY_SMART);
    s.warm_start = true;
    register_job(st, &s);
    t = next(st, "bert-h100");
    assert_int_equal(t.batch_size, 32);
    finish(st, t, 2000, 10, true);       /* 200 per epoch here: ratio 2 */
    t = next(st, "bert-h100");
    assert_int_equal(t.batch_size, 128);  /* predicted 2 x 20 x 10 = 400 < 0.97 x 2000 */
    assert_int_equal(look(st, "bert-a40", 0).job.revision, prior_rev);

    /* The same trials without warm start: the walk goes down from the default. */
    zbso_job_spec cold = make_spec("bert-cold", ZBSO_POLICY_SMART);
    register_job(st, &cold);
    t = next(st, "bert-cold");
    finish(st, t, 2000, 10, true);
    t = next(st, "bert-cold");
    assert_int_equal(t.batch_size, 16);

    /* prior_jobs naming an unknown job and the prior: the unknown one is skipped. */
    zbso_job_spec named = make_spec("other-1", ZBSO_POLICY_SMART);
    named.n_prior_jobs = 2;
    snprintf(named.prior_jobs[0], sizeof named.prior_jobs[0], "%s", "no-such-job");
    snprintf(named.prior_jobs[1], sizeof named.prior_jobs[1], "%s", "bert-a40");
    register_job(st, &named);
    t = next(st, "other-1");
    finish(st, t, 2000, 10, true);
    t = next(st, "other-1");
    assert_int_equal(t.batch_size, 128);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_smart_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_warm_start_and_zeus_beside, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
