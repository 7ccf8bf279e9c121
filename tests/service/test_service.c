/* test_service.c: the service's requests end to end against real stores ("memory://" and
 * a SQLite temp file) with a fake clock and fake entropy: registration, pruning into MAB
 * across requests, reports, lease expiry, PATCH, delete and the 404s; and the answers
 * decided on read snapshots against the same requests run only as units of work. */
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

#include "core/optimizer.h"
#include "core/spec.h"
#include "service/service.h"

/* ---- fake environment ---- */

typedef struct fake {
    double now;
    uint32_t words[16];   /* entropy handed out in order, then zeros */
    size_t n_words, next_word;
} fake;

static double fake_now(void *ctx)
{
    return ((fake *)ctx)->now;
}

static int fake_entropy(void *ctx, uint32_t *words, size_t n)
{
    fake *f = ctx;
    for (size_t i = 0; i < n; i++)
        words[i] = f->next_word < f->n_words ? f->words[f->next_word++] : 0;
    return 0;
}

typedef struct fixture {
    store *st;
    fake clock;
    svc_env env;
    char path[64];
} fixture;

static const char *g_url;  /* "memory://" or "sqlite" (a fresh temp file per test) */

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    store_options opt = {.create_if_empty = true};
    char url[96];
    zbso_err err;
    assert_non_null(fx);
    if (strcmp(g_url, "sqlite") == 0) {
        snprintf(fx->path, sizeof fx->path, "/tmp/zbso-svc-test-%ld.db", (long)getpid());
        unlink(fx->path);
        /* SQLAlchemy spelling: sqlite:/// + an absolute path gives four slashes. */
        snprintf(url, sizeof url, "sqlite:///%s", fx->path);
    } else {
        snprintf(url, sizeof url, "%s", g_url);
    }
    err_clear(&err);
    if (store_open(url, &opt, &fx->st, &err) != 0)
        fail_msg("store_open(%s): %s", url, err.msg);
    fx->clock.now = 1000.0;
    fx->env = (svc_env){.now = fake_now, .entropy = fake_entropy, .ctx = &fx->clock};
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    store_close(fx->st);
    if (fx->path[0]) {
        char extra[80];
        unlink(fx->path);
        snprintf(extra, sizeof extra, "%s-wal", fx->path);
        unlink(extra);
        snprintf(extra, sizeof extra, "%s-shm", fx->path);
        unlink(extra);
    }
    free(fx);
    return 0;
}

/* ---- helpers ---- */

/* A validated spec: batch sizes 16, 32, 64, default 32, eta 1 (cost = energy), seed 123456,
 * one pruning round. */
static zbso_job_spec make_spec(const char *job_id)
{
    zbso_job_spec s;
    zbso_err err;
    spec_defaults(&s);
    snprintf(s.job_id_prefix, sizeof s.job_id_prefix, "%s", "job");
    snprintf(s.job_id, sizeof s.job_id, "%s", job_id);
    s.batch_sizes[0] = 64;
    s.batch_sizes[1] = 16;
    s.batch_sizes[2] = 32;
    s.n_batch_sizes = 3;
    s.default_batch_size = 32;
    s.eta_knob = 1.0;
    s.target_metric = 0.9;
    s.max_epochs = 5;
    s.num_pruning_rounds = 1;
    s.has_mab_seed = true;
    s.mab_seed = 123456;
    s.max_power = 300;
    s.number_of_gpus = 1;
    snprintf(s.gpu_model, sizeof s.gpu_model, "%s", "H200");
    assert_int_equal(spec_validate(&s, &err), 0);
    return s;
}

static void register_ok(fixture *fx, const zbso_job_spec *s, bool want_created)
{
    zbso_job_spec out;
    bool created = !want_created;
    zbso_err err;
    err_clear(&err);
    int rc = svc_register_job(fx->st, &fx->env, s, &out, &created, NULL, &err);
    if (rc != 0)
        fail_msg("register: %d %s", rc, err.msg);
    assert_int_equal(created, want_created);
}

static zbso_trial_id next_ok(fixture *fx, const char *job_id)
{
    zbso_trial_id id;
    zbso_err err;
    err_clear(&err);
    int rc = svc_next_batch_size(fx->st, &fx->env, job_id, NULL, &id, NULL, &err);
    if (rc != 0)
        fail_msg("next batch size: %d %s", rc, err.msg);
    assert_string_equal(id.job_id, job_id);
    return id;
}

static zbso_report_response report(fixture *fx, zbso_trial_id id, double energy,
                                   double metric, int64_t epoch, int want_rc)
{
    zbso_training_result r;
    zbso_report_response resp;
    zbso_err err;
    memset(&r, 0, sizeof r);
    memset(&resp, 0, sizeof resp);
    r.trial = id;
    r.time = 10;
    r.energy = energy;
    r.metric = metric;
    r.current_epoch = epoch;
    err_clear(&err);
    int rc = svc_report(fx->st, &fx->env, &r, &resp, NULL, &err);
    if (rc != want_rc)
        fail_msg("report: %d (want %d) %s", rc, want_rc, err.msg);
    return resp;
}

/* Reads the job, one trial and the arms in one unit of work. */
typedef struct peek {
    const char *job_id;
    int64_t trial_number;
    zbso_job job;
    zbso_trial trial;
    zbso_arm arms[8];
    size_t n_arms;
} peek;

static int peek_fn(store_txn *t, void *arg, zbso_err *err)
{
    peek *p = arg;
    int rc = store_job_get(t, p->job_id, false, &p->job, err);
    if (rc == 0 && p->trial_number > 0)
        rc = store_trial_get(t, p->job_id, p->trial_number, &p->trial, err);
    if (rc == 0)
        rc = store_arms_get(t, p->job_id, p->arms, 8, &p->n_arms, err);
    return rc;
}

static peek peek_at(fixture *fx, const char *job_id, int64_t trial_number)
{
    peek p;
    zbso_err err;
    memset(&p, 0, sizeof p);
    p.job_id = job_id;
    p.trial_number = trial_number;
    int rc = store_exec(fx->st, peek_fn, &p, &err);
    if (rc != 0)
        fail_msg("peek: %d %s", rc, err.msg);
    return p;
}

/* ---- tests ---- */

static void test_register(void **state)
{
    fixture *fx = *state;
    zbso_job_spec s = make_spec("job-a"), out, other;
    bool created;
    zbso_err err;

    register_ok(fx, &s, true);
    register_ok(fx, &s, false);
    peek p = peek_at(fx, "job-a", 0);
    assert_int_equal(p.job.stage, ZBSO_STAGE_PRUNING);
    assert_int_equal(p.job.exp_default_batch_size, 32);
    assert_int_equal(p.job.min_cost_batch_size, 32);
    assert_false(p.job.has_min_cost);
    assert_int_equal(p.job.num_trials, 0);
    assert_true(p.job.created_at == 1000.0);
    assert_int_equal(p.job.spec.batch_sizes[0], 16);
    assert_true(spec_equal(&p.job.spec, &s));
    zbso_rng want;
    rng_seed_u64(&want, 123456);
    assert_memory_equal(&p.job.rng, &want, sizeof want);

    other = s;
    other.eta_knob = 0.25;
    assert_int_equal(svc_register_job(fx->st, &fx->env, &other, &out, &created, NULL, &err),
                     ZBSO_ECONFLICT);
    assert_non_null(strstr(err.msg, "job-a"));

    /* Generated ids: "<prefix>-<8 hex>" from entropy; a collision draws again. */
    zbso_job_spec g = make_spec("");
    fx->clock.words[0] = 0xdeadbeef;
    fx->clock.words[1] = 0xdeadbeef;
    fx->clock.words[2] = 0x00000abc;
    fx->clock.n_words = 3;
    assert_int_equal(svc_register_job(fx->st, &fx->env, &g, &out, &created, NULL, &err), 0);
    assert_true(created);
    assert_string_equal(out.job_id, "job-deadbeef");
    assert_int_equal(svc_register_job(fx->st, &fx->env, &g, &out, &created, NULL, &err), 0);
    assert_true(created);
    assert_string_equal(out.job_id, "job-00000abc");

    /* Without mab_seed the generator is seeded from four entropy words. */
    zbso_job_spec u = make_spec("job-unseeded");
    u.has_mab_seed = false;
    fx->clock.n_words = 0;
    fx->clock.next_word = 0;
    register_ok(fx, &u, true);
    p = peek_at(fx, "job-unseeded", 0);
    uint32_t zeros[4] = {0, 0, 0, 0};
    rng_seed_words(&want, zeros, 4);
    assert_memory_equal(&p.job.rng, &want, sizeof want);
}

/* Fails unless job_id is unknown to the store. */
static void peek_arg_missing(fixture *fx, const char *job_id)
{
    peek p;
    zbso_err err;
    memset(&p, 0, sizeof p);
    p.job_id = job_id;
    assert_int_equal(store_exec(fx->st, peek_fn, &p, &err), ZBSO_ENOTFOUND);
}

/* Issue 21: a new job without a policy takes the server's default, stored resolved; the
 * job's own field wins; a re-registration without the field matches the stored policy
 * whatever the default is now, one that names another policy, warm start or prior jobs is
 * a 409; a warm start that resolves to the zeus policy is refused. */
static void test_register_policy(void **state)
{
    fixture *fx = *state;
    zbso_job_spec out;
    bool created;
    zbso_err err;

    fx->env.default_policy = ZBSO_POLICY_SMART;
    zbso_job_spec d = make_spec("job-default");
    register_ok(fx, &d, true);
    peek p = peek_at(fx, "job-default", 0);
    assert_int_equal(p.job.spec.policy, ZBSO_POLICY_SMART);
    assert_true(p.job.spec.has_policy);
    zbso_job_spec z = make_spec("job-zeus");
    z.policy = ZBSO_POLICY_ZEUS;
    z.has_policy = true;
    assert_int_equal(svc_register_job(fx->st, &fx->env, &z, &out, &created, NULL, &err), 0);
    assert_true(created);
    assert_int_equal(out.policy, ZBSO_POLICY_ZEUS);
    assert_int_equal(peek_at(fx, "job-zeus", 0).job.spec.policy, ZBSO_POLICY_ZEUS);

    /* The default changes (a restart with another --policy): re-registrations without the
     * field still match, and are answered with the stored policy. */
    fx->env.default_policy = ZBSO_POLICY_ZEUS;
    zbso_job_spec again = make_spec("job-default");
    assert_int_equal(svc_register_job(fx->st, &fx->env, &again, &out, &created, NULL, &err), 0);
    assert_false(created);
    assert_int_equal(out.policy, ZBSO_POLICY_SMART);
    again = make_spec("job-zeus");
    fx->env.default_policy = ZBSO_POLICY_SMART;
    assert_int_equal(svc_register_job(fx->st, &fx->env, &again, &out, &created, NULL, &err), 0);
    assert_false(created);
    assert_int_equal(out.policy, ZBSO_POLICY_ZEUS);

    /* Naming the stored policy matches; naming another, or another warm start, is 409. */
    again = make_spec("job-default");
    again.policy = ZBSO_POLICY_SMART;
    again.has_policy = true;
    register_ok(fx, &again, false);
    again.policy = ZBSO_POLICY_ZEUS;
    assert_int_equal(svc_register_job(fx->st, &fx->env, &again, &out, &created, NULL, &err),
                     ZBSO_ECONFLICT);
    assert_non_null(strstr(err.msg, "job-default"));
    again = make_spec("job-default");
    again.warm_start = true;
    assert_int_equal(svc_register_job(fx->st, &fx->env, &again, &out, &created, NULL, &err),
                     ZBSO_ECONFLICT);

    /* prior_jobs: stored, and compared as a set (validation sorts them). */
    zbso_job_spec w = make_spec("job-warm");
    w.policy = ZBSO_POLICY_SMART;
    w.has_policy = true;
    w.n_prior_jobs = 2;
    snprintf(w.prior_jobs[0], sizeof w.prior_jobs[0], "%s", "job-zeus");
    snprintf(w.prior_jobs[1], sizeof w.prior_jobs[1], "%s", "job-default");
    assert_int_equal(spec_validate(&w, &err), 0);
    register_ok(fx, &w, true);
    p = peek_at(fx, "job-warm", 0);
    assert_true(p.job.spec.warm_start);
    assert_int_equal(p.job.spec.n_prior_jobs, 2);
    assert_string_equal(p.job.spec.prior_jobs[0], "job-default");
    assert_string_equal(p.job.spec.prior_jobs[1], "job-zeus");
    zbso_job_spec w2 = w;
    snprintf(w2.prior_jobs[0], sizeof w2.prior_jobs[0], "%s", "job-zeus");
    snprintf(w2.prior_jobs[1], sizeof w2.prior_jobs[1], "%s", "job-default");
    assert_int_equal(spec_validate(&w2, &err), 0);
    register_ok(fx, &w2, false);
    w2.n_prior_jobs = 1;
    assert_int_equal(svc_register_job(fx->st, &fx->env, &w2, &out, &created, NULL, &err),
                     ZBSO_ECONFLICT);

    /* A warm start without a policy on a zeus server: 422 naming the default, nothing
     * stored; on a smart server it registers. */
    fx->env.default_policy = ZBSO_POLICY_ZEUS;
    zbso_job_spec ws = make_spec("job-ws");
    ws.warm_start = true;
    assert_int_equal(svc_register_job(fx->st, &fx->env, &ws, &out, &created, NULL, &err),
                     ZBSO_EINVAL);
    assert_string_equal(err.loc, "warm_start");
    assert_non_null(strstr(err.msg, "default policy is \"zeus\""));
    peek_arg_missing(fx, "job-ws");
    fx->env.default_policy = ZBSO_POLICY_SMART;
    register_ok(fx, &ws, true);
    assert_int_equal(peek_at(fx, "job-ws", 0).job.spec.policy, ZBSO_POLICY_SMART);
}

/* One pruning round over 16/32/64, then MAB, across separate requests. */
static void test_pruning_to_mab(void **state)
{
    fixture *fx = *state;
    zbso_job_spec s = make_spec("job-p");
    zbso_report_response r;
    register_ok(fx, &s, true);

    zbso_trial_id t1 = next_ok(fx, "job-p");
    assert_int_equal(t1.batch_size, 32);
    assert_int_equal(t1.trial_number, 1);
    r = report(fx, t1, 500, 0.5, 1, 0);
    assert_false(r.stop_train);
    assert_string_equal(r.message, "Stop condition not met, keep training");
    r = report(fx, t1, 900, 0.95, 2, 0);
    assert_true(r.stop_train && r.converged);
    assert_string_equal(r.message, "Train succeeded");
    peek p = peek_at(fx, "job-p", 1);
    assert_int_equal(p.trial.status, ZBSO_TRIAL_SUCCEEDED);
    assert_int_equal(p.trial.type, ZBSO_TRIAL_EXPLORATION);
    assert_true(p.trial.energy == 900.0 && p.trial.time == 10.0 && p.trial.metric == 0.95);
    assert_int_equal(p.trial.epochs, 2);
    assert_true(p.trial.converged);
    assert_true(p.job.has_min_cost && p.job.min_cost == 900.0);
    assert_int_equal(p.job.min_cost_batch_size, 32);

    zbso_trial_id t2 = next_ok(fx, "job-p");
    assert_int_equal(t2.batch_size, 16);
    assert_int_equal(t2.trial_number, 2);
    r = report(fx, t2, 700, 0.95, 3, 0);
    assert_true(r.converged);
    zbso_trial_id t3 = next_ok(fx, "job-p");
    assert_int_equal(t3.batch_size, 64);
    /* Over beta * min_cost = 2 * 700: early stop, not converged. */
    r = report(fx, t3, 1400.5, 0.5, 1, 0);
    assert_true(r.stop_train);
    assert_false(r.converged);
    assert_string_equal(r.message, "Batch Size(64) exceeded the cost upper bound: current "
                                   "cost(1400.5) > beta_knob(2.0)*min_cost(700.0)");

    /* Round over: arms 16 and 32 (one observation each, exact), then MAB's first choice:
     * the first arm of the generator's permutation (both lack 2 observations). */
    zbso_trial_id t4 = next_ok(fx, "job-p");
    zbso_rng rng;
    size_t perm[2];
    rng_seed_u64(&rng, 123456);
    rng_permutation(&rng, 2, perm);
    int64_t survivors[2] = {16, 32};
    assert_int_equal(t4.batch_size, survivors[perm[0]]);
    assert_int_equal(t4.trial_number, 4);
    p = peek_at(fx, "job-p", 4);
    assert_int_equal(p.job.stage, ZBSO_STAGE_MAB);
    assert_int_equal(p.job.exp_default_batch_size, 16);
    assert_int_equal(p.trial.type, ZBSO_TRIAL_MAB);
    assert_memory_equal(&p.job.rng, &rng, sizeof rng);
    assert_int_equal(p.n_arms, 2);
    assert_int_equal(p.arms[0].batch_size, 16);
    assert_true(p.arms[0].param_mean == -700.0 && isinf(p.arms[0].param_precision));
    assert_int_equal(p.arms[0].num_observations, 1);
    assert_int_equal(p.arms[1].batch_size, 32);
    assert_true(p.arms[1].param_mean == -900.0);

    /* Reporting the MAB trial refits its arm from all its Succeeded trials. */
    r = report(fx, t4, 800, 0.95, 2, 0);
    assert_true(r.converged);
    p = peek_at(fx, "job-p", 4);
    size_t k = t4.batch_size == 16 ? 0 : 1;
    double old = t4.batch_size == 16 ? -700.0 : -900.0;
    double rewards[2] = {old, -800.0};
    zbso_arm want;
    opt_arm_fit(t4.batch_size, 0.0, 0.0, rewards, 2, &want);
    assert_int_equal(p.arms[k].num_observations, 2);
    assert_true(p.arms[k].param_mean == want.param_mean);
    assert_true(p.arms[k].param_precision == want.param_precision);
    /* A repeated report changes nothing. */
    r = report(fx, t4, 5, 0.1, 1, 0);
    assert_true(r.stop_train && r.converged);
    assert_string_equal(r.message, "Result for this trial(4) is already reported.");
}

static void test_window_and_zero_rounds(void **state)
{
    fixture *fx = *state;
    zbso_job_spec s = make_spec("job-w");
    s.num_pruning_rounds = 0;
    s.window_size = 2;
    s.mab_num_explorations = 0;
    s.mab_prior_precision = 0.5;
    s.mab_prior_mean = -1000;
    register_ok(fx, &s, true);
    zbso_trial_id t = next_ok(fx, "job-w");
    assert_int_equal(t.trial_number, 1);
    peek p = peek_at(fx, "job-w", 1);
    assert_int_equal(p.job.stage, ZBSO_STAGE_MAB);
    assert_int_equal(p.n_arms, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(p.arms[i].num_observations, 0);
        assert_true(p.arms[i].param_mean == -1000.0 && p.arms[i].param_precision == 0.5);
    }
    /* Three results for one batch size: the arm keeps only the last two. */
    int64_t bs = t.batch_size;
    double energies[3] = {100, 300, 500};
    report(fx, t, energies[0], 0.95, 1, 0);
    for (int i = 1; i < 3; i++) {
        zbso_trial_id u;
        do {
            u = next_ok(fx, "job-w");
            if (u.batch_size != bs) {
                zbso_err err;
                assert_int_equal(svc_end_trial(fx->st, &fx->env, &u, NULL, &err), 0);
            }
        } while (u.batch_size != bs);
        report(fx, u, energies[i], 0.95, 1, 0);
    }
    p = peek_at(fx, "job-w", 1);
    size_t k = 0;
    while (p.arms[k].batch_size != bs)
        k++;
    assert_int_equal(p.arms[k].num_observations, 2);
    /* rewards -300, -500: mean -400, variance 10000, q 1e-4; prior 0.5 at -1000:
     * precision 0.5 + 2e-4, mean (0.5 * -1000 + 1e-4 * -800) / precision. */
    double q = 1.0 / 10000.0;
    double prec = 0.5 + 2.0 * q;
    assert_true(p.arms[k].param_precision == prec);
    assert_true(p.arms[k].param_mean == (0.5 * -1000.0 + q * -800.0) / prec);
}

static void test_concurrent_and_no_convergence(void **state)
{
    fixture *fx = *state;
    zbso_job_spec s = make_spec("job-c");
    zbso_err err;
    zbso_trial_id id;
    register_ok(fx, &s, true);
    zbso_trial_id t1 = next_ok(fx, "job-c");
    zbso_trial_id t2 = next_ok(fx, "job-c");
    assert_int_equal(t2.batch_size, 32);  /* min_cost_batch_size = default */
    assert_int_equal(t2.trial_number, 2);
    peek p = peek_at(fx, "job-c", 2);
    assert_int_equal(p.trial.type, ZBSO_TRIAL_CONCURRENT);
    /* 32 does not converge, then 64 neither: nothing survives the round. */
    report(fx, t1, 10, 0.1, 5, 0);
    zbso_trial_id t3 = next_ok(fx, "job-c");
    assert_int_equal(t3.batch_size, 64);
    report(fx, t3, 10, 0.1, 5, 0);
    assert_int_equal(svc_next_batch_size(fx->st, &fx->env, "job-c", NULL, &id, NULL, &err),
                     ZBSO_ENOCONV);
    assert_non_null(strstr(err.msg, "Re-register"));
    /* The failed request stored nothing. */
    p = peek_at(fx, "job-c", 0);
    assert_int_equal(p.job.num_trials, 3);
}

static void test_lease_expiry(void **state)
{
    fixture *fx = *state;
    zbso_job_spec s = make_spec("job-l");
    zbso_trial_id t1, t2;
    register_ok(fx, &s, true);
    fx->env.trial_timeout_s = 100;
    t1 = next_ok(fx, "job-l");
    /* A report 60 s later renews the lease; at 150 s it is still alive. */
    fx->clock.now = 1060;
    report(fx, t1, 5, 0.1, 1, 0);
    peek p = peek_at(fx, "job-l", 1);
    assert_true(p.trial.lease_renewed_at == 1060.0);
    fx->clock.now = 1150;
    t2 = next_ok(fx, "job-l");
    assert_int_equal(t2.batch_size, 32);
    p = peek_at(fx, "job-l", 2);
    assert_int_equal(p.trial.type, ZBSO_TRIAL_CONCURRENT);
    /* Past the lease: trial 1 (and the concurrent 2) fail, 32 is explored again. */
    fx->clock.now = 1260.5;
    zbso_trial_id t3 = next_ok(fx, "job-l");
    assert_int_equal(t3.batch_size, 32);
    p = peek_at(fx, "job-l", 1);
    assert_int_equal(p.trial.status, ZBSO_TRIAL_FAILED);
    assert_true(p.trial.end_time == 1260.5);
    p = peek_at(fx, "job-l", 3);
    assert_int_equal(p.trial.type, ZBSO_TRIAL_EXPLORATION);
    /* The dead client's late report is refused. */
    report(fx, t1, 5, 0.1, 2, ZBSO_ECONFLICT);
}

static void test_end_trial_delete_and_404(void **state)
{
    fixture *fx = *state;
    zbso_job_spec s = make_spec("job-e");
    zbso_err err;
    zbso_trial_id id, bad;
    register_ok(fx, &s, true);
    zbso_trial_id t1 = next_ok(fx, "job-e");
    fx->clock.now = 1234;
    assert_int_equal(svc_end_trial(fx->st, &fx->env, &t1, NULL, &err), 0);
    peek p = peek_at(fx, "job-e", 1);
    assert_int_equal(p.trial.status, ZBSO_TRIAL_FAILED);
    assert_true(p.trial.end_time == 1234.0);
    /* Ending again leaves it as it is; the Failed exploration is explored again. */
    fx->clock.now = 1300;
    assert_int_equal(svc_end_trial(fx->st, &fx->env, &t1, NULL, &err), 0);
    p = peek_at(fx, "job-e", 1);
    assert_true(p.trial.end_time == 1234.0);
    zbso_trial_id t2 = next_ok(fx, "job-e");
    assert_int_equal(t2.batch_size, 32);
    p = peek_at(fx, "job-e", 2);
    assert_int_equal(p.trial.type, ZBSO_TRIAL_EXPLORATION);
    /* A Succeeded trial is not failed by PATCH. */
    report(fx, t2, 10, 0.95, 1, 0);
    assert_int_equal(svc_end_trial(fx->st, &fx->env, &t2, NULL, &err), 0);
    p = peek_at(fx, "job-e", 2);
    assert_int_equal(p.trial.status, ZBSO_TRIAL_SUCCEEDED);

    bad = t2;
    bad.batch_size = 64;
    assert_int_equal(svc_end_trial(fx->st, &fx->env, &bad, NULL, &err), ZBSO_ENOTFOUND);
    report(fx, bad, 1, 0.1, 1, ZBSO_ENOTFOUND);
    bad = t2;
    bad.trial_number = 99;
    assert_int_equal(svc_end_trial(fx->st, &fx->env, &bad, NULL, &err), ZBSO_ENOTFOUND);
    assert_non_null(strstr(err.msg, "99"));
    report(fx, bad, 1, 0.1, 1, ZBSO_ENOTFOUND);
    snprintf(bad.job_id, sizeof bad.job_id, "%s", "job-none");
    report(fx, bad, 1, 0.1, 1, ZBSO_ENOTFOUND);
    assert_int_equal(svc_end_trial(fx->st, &fx->env, &bad, NULL, &err), ZBSO_ENOTFOUND);
    assert_int_equal(svc_next_batch_size(fx->st, &fx->env, "job-none", NULL, &id, NULL, &err),
                     ZBSO_ENOTFOUND);
    assert_non_null(strstr(err.msg, "job-none"));

    assert_int_equal(svc_delete_job(fx->st, &fx->env, "job-e", &err), 0);
    assert_int_equal(svc_delete_job(fx->st, &fx->env, "job-e", &err), ZBSO_ENOTFOUND);
    assert_int_equal(svc_next_batch_size(fx->st, &fx->env, "job-e", NULL, &id, NULL, &err),
                     ZBSO_ENOTFOUND);
    /* Deleted means gone: the same id registers anew with trial numbers from 1. */
    register_ok(fx, &s, true);
    assert_int_equal(next_ok(fx, "job-e").trial_number, 1);
}

/* ---- read path: the same answers as units of work alone ---- */

/* A store that forwards to another and counts the calls. counting_writes_only runs every
 * read unit through exec, as before read units existed. */
typedef struct counting {
    store base;
    store *inner;
    int n_exec, n_read;
} counting;

static int cnt_exec(store *s, store_work_fn fn, void *arg, zbso_err *err)
{
    counting *c = (counting *)s;
    c->n_exec++;
    return store_exec(c->inner, fn, arg, err);
}

static int cnt_exec_read(store *s, store_work_fn fn, void *arg, zbso_err *err)
{
    counting *c = (counting *)s;
    c->n_read++;
    return store_exec_read(c->inner, fn, arg, err);
}

static const store_backend counting_writes_only = {
    .name = "counting", .exec = cnt_exec, .exec_read = cnt_exec};
static const store_backend counting_reads = {
    .name = "counting", .exec = cnt_exec, .exec_read = cnt_exec_read};

#define TRANSCRIPT_MAX 160

/* One line per request: its code, message and answer. */
typedef struct transcript {
    char lines[TRANSCRIPT_MAX][1000];
    int n;
    int writes_when_quiet;       /* exec calls made by requests that change nothing */
} transcript;

static void note(transcript *tr, int rc, const zbso_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void note(transcript *tr, int rc, const zbso_err *err, const char *fmt, ...)
{
    char answer[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(answer, sizeof answer, fmt, ap);
    va_end(ap);
    assert_true(tr->n < TRANSCRIPT_MAX);
    snprintf(tr->lines[tr->n++], sizeof tr->lines[0], "%d|%s|%s", rc,
             rc < 0 ? err->msg : "", rc < 0 ? "" : answer);
}

static void play_report(fixture *fx, counting *c, transcript *tr, zbso_trial_id id,
                        double energy, double metric, int64_t epoch, bool quiet)
{
    zbso_training_result r;
    zbso_report_response resp;
    zbso_err err;
    memset(&r, 0, sizeof r);
    memset(&resp, 0, sizeof resp);
    r.trial = id;
    r.time = 10;
    r.energy = energy;
    r.metric = metric;
    r.current_epoch = epoch;
    err_clear(&err);
    int before = c->n_exec;
    int rc = svc_report(&c->base, &fx->env, &r, &resp, NULL, &err);
    if (quiet)
        tr->writes_when_quiet += c->n_exec - before;
    note(tr, rc, &err, "stop %d converged %d %s", resp.stop_train, resp.converged,
         resp.message);
}

static void play_end(fixture *fx, counting *c, transcript *tr, zbso_trial_id id, bool quiet)
{
    zbso_err err;
    err_clear(&err);
    int before = c->n_exec;
    int rc = svc_end_trial(&c->base, &fx->env, &id, NULL, &err);
    if (quiet)
        tr->writes_when_quiet += c->n_exec - before;
    note(tr, rc, &err, "ended");
}

static zbso_trial_id play_next(fixture *fx, counting *c, transcript *tr, const char *job_id)
{
    zbso_trial_id id;
    zbso_err err;
    memset(&id, 0, sizeof id);
    err_clear(&err);
    int rc = svc_next_batch_size(&c->base, &fx->env, job_id, NULL, &id, NULL, &err);
    note(tr, rc, &err, "%s bs %lld trial %lld", id.job_id, (long long)id.batch_size,
         (long long)id.trial_number);
    return id;
}

static void play_register(fixture *fx, counting *c, transcript *tr, const zbso_job_spec *s,
                          bool quiet)
{
    zbso_job_spec out;
    bool created = false;
    zbso_err err;
    memset(&out, 0, sizeof out);
    err_clear(&err);
    int before = c->n_exec;
    int rc = svc_register_job(&c->base, &fx->env, s, &out, &created, NULL, &err);
    if (quiet)
        tr->writes_when_quiet += c->n_exec - before;
    note(tr, rc, &err, "%s created %d", out.job_id, created);
}

/* Registration, reports that continue (quiet, then one that renews the lease), end,
 * repeat, PATCH on ended and Dispatched trials, the errors, through pruning into MAB;
 * then the stored state of every trial. */
static void play(fixture *fx, counting *c, transcript *tr)
{
    zbso_job_spec s = make_spec("job-rp"), other = s;
    other.eta_knob = 0.25;
    play_register(fx, c, tr, &s, false);
    play_register(fx, c, tr, &s, true);
    play_register(fx, c, tr, &other, true);

    zbso_trial_id t = play_next(fx, c, tr, "job-rp");
    play_report(fx, c, tr, t, 20, 0.1, 1, true);
    fx->clock.now += ZBSO_LEASE_RENEW_S;
    play_report(fx, c, tr, t, 30, 0.2, 2, false);
    play_report(fx, c, tr, t, 40, 0.3, 3, true);
    play_report(fx, c, tr, t, 100, 0.95, 4, false);
    play_report(fx, c, tr, t, 100, 0.95, 4, true);
    play_end(fx, c, tr, t, true);

    zbso_trial_id bad = t;
    bad.batch_size += 1;
    play_report(fx, c, tr, bad, 1, 0.1, 1, true);
    play_end(fx, c, tr, bad, true);
    bad = t;
    bad.trial_number = 99;
    play_report(fx, c, tr, bad, 1, 0.1, 1, true);
    play_end(fx, c, tr, bad, true);
    snprintf(bad.job_id, sizeof bad.job_id, "job-none");
    play_report(fx, c, tr, bad, 1, 0.1, 1, true);
    play_end(fx, c, tr, bad, true);

    zbso_trial_id dead = play_next(fx, c, tr, "job-rp");
    play_end(fx, c, tr, dead, false);
    play_report(fx, c, tr, dead, 1, 0.1, 1, true);
    play_end(fx, c, tr, dead, true);

    /* Cost = energy (eta 1): 16 is cheapest, 64 never converges; on into MAB. */
    for (int i = 0; i < 12; i++) {
        fx->clock.now += 7;
        t = play_next(fx, c, tr, "job-rp");
        double energy = t.batch_size == 16 ? 50 : t.batch_size == 32 ? 80 + i : 120;
        double metric = t.batch_size == 64 ? 0.5 : 0.95;
        for (int64_t epoch = 1; epoch < 3; epoch++)
            play_report(fx, c, tr, t, energy * (double)epoch / 3, 0.1, epoch, true);
        play_report(fx, c, tr, t, energy, metric, s.max_epochs, false);
        play_end(fx, c, tr, t, true);
    }

    peek p = peek_at(fx, "job-rp", 0);
    note(tr, 0, NULL, "stage %d min %d %.17g bs %lld trials %lld arms %zu", p.job.stage,
         p.job.has_min_cost, p.job.min_cost, (long long)p.job.min_cost_batch_size,
         (long long)p.job.num_trials, p.n_arms);
    for (size_t i = 0; i < p.n_arms; i++)
        note(tr, 0, NULL, "arm %lld %.17g %.17g %lld", (long long)p.arms[i].batch_size,
             p.arms[i].param_mean, p.arms[i].param_precision,
             (long long)p.arms[i].num_observations);
    for (int64_t n = 1; n <= p.job.num_trials; n++) {
        peek q = peek_at(fx, "job-rp", n);
        note(tr, 0, NULL, "trial %lld bs %lld type %d status %d lease %.17g end %.17g"
             " energy %.17g conv %d", (long long)n, (long long)q.trial.batch_size,
             q.trial.type, q.trial.status, q.trial.lease_renewed_at, q.trial.end_time,
             q.trial.energy, q.trial.converged);
    }
}

/* The store under test answers through read units; a second store of the same kind
 * answers every request as a unit of work. Both must answer alike, and the requests that
 * change nothing must not reach the writer. */
static void test_read_path_same_answers(void **state)
{
    fixture *fx = *state;
    static transcript with, without;
    counting c_with = {.base = {&counting_reads}, .inner = fx->st};
    counting c_without = {.base = {&counting_writes_only}};
    store_options opt = {.create_if_empty = true};
    char path[80] = "", url[96];
    zbso_err err;

    memset(&with, 0, sizeof with);
    memset(&without, 0, sizeof without);
    if (fx->path[0]) {
        snprintf(path, sizeof path, "%s-plain", fx->path);
        unlink(path);
        snprintf(url, sizeof url, "sqlite:///%s", path);
    } else {
        snprintf(url, sizeof url, "%s", g_url);
    }
    err_clear(&err);
    if (store_open(url, &opt, &c_without.inner, &err) != 0)
        fail_msg("store_open(%s): %s", url, err.msg);

    play(fx, &c_with, &with);
    fx->clock.now = 1000.0;
    store *mine = fx->st;
    fx->st = c_without.inner;      /* peek_at reads the store in the fixture */
    play(fx, &c_without, &without);
    fx->st = mine;
    store_close(c_without.inner);
    if (path[0]) {
        char extra[96];
        unlink(path);
        snprintf(extra, sizeof extra, "%s-wal", path);
        unlink(extra);
        snprintf(extra, sizeof extra, "%s-shm", path);
        unlink(extra);
    }

    assert_int_equal(with.n, without.n);
    for (int i = 0; i < with.n; i++)
        assert_string_equal(with.lines[i], without.lines[i]);
    assert_int_equal(c_without.n_read, 0);
    assert_true(c_with.n_read > 0);
    assert_int_equal(with.writes_when_quiet, 0);
    assert_true(without.writes_when_quiet > 0);
    /* The report 60 s in kept training and renewed the lease; the job reached MAB. */
    assert_non_null(strstr(with.lines[4], "keep training"));
    bool in_mab = false;
    for (int i = 0; i < with.n; i++)
        in_mab |= strncmp(with.lines[i], "0||stage 1 min 1 ", 17) == 0;
    assert_true(in_mab);
}

/* The job version counts committed changes: registration makes 1, each change adds 1, and
 * answers that change nothing carry the version they read (service.h). */
static void test_job_version(void **state)
{
    fixture *fx = *state;
    zbso_job_spec s = make_spec("job-v"), out;
    zbso_trial_id id, other;
    zbso_training_result r;
    zbso_report_response resp;
    bool created = false;
    int64_t v = -1;
    zbso_err err;
    err_clear(&err);

    assert_int_equal(svc_register_job(fx->st, &fx->env, &s, &out, &created, &v, &err), 0);
    assert_true(created);
    assert_int_equal(v, 1);
    v = -1;
    assert_int_equal(svc_register_job(fx->st, &fx->env, &s, &out, &created, &v, &err), 0);
    assert_false(created);
    assert_int_equal(v, 1);

    assert_int_equal(svc_next_batch_size(fx->st, &fx->env, "job-v", NULL, &id, &v, &err), 0);
    assert_int_equal(v, 2);
    assert_int_equal(svc_next_batch_size(fx->st, &fx->env, "job-v", NULL, &other, &v, &err), 0);
    assert_int_equal(v, 3);

    /* keep training with a fresh lease: read only, the version it read */
    memset(&r, 0, sizeof r);
    r.trial = id;
    r.time = 10;
    r.energy = 100;
    r.metric = 0.1;
    r.current_epoch = 1;
    assert_int_equal(svc_report(fx->st, &fx->env, &r, &resp, &v, &err), 0);
    assert_false(resp.stop_train);
    assert_int_equal(v, 3);
    /* a report that renews an old lease is a change */
    fx->clock.now += 3600;
    r.current_epoch = 2;
    assert_int_equal(svc_report(fx->st, &fx->env, &r, &resp, &v, &err), 0);
    assert_false(resp.stop_train);
    assert_int_equal(v, 4);
    /* converging ends the trial: a change; repeating that report is not */
    r.metric = 0.95;
    r.current_epoch = 3;
    assert_int_equal(svc_report(fx->st, &fx->env, &r, &resp, &v, &err), 0);
    assert_true(resp.stop_train);
    assert_int_equal(v, 5);
    assert_int_equal(svc_report(fx->st, &fx->env, &r, &resp, &v, &err), 0);
    assert_int_equal(v, 5);
    /* ending the finished trial changes nothing; ending the Dispatched one does */
    assert_int_equal(svc_end_trial(fx->st, &fx->env, &id, &v, &err), 0);
    assert_int_equal(v, 5);
    assert_int_equal(svc_end_trial(fx->st, &fx->env, &other, &v, &err), 0);
    assert_int_equal(v, 6);
    assert_int_equal(peek_at(fx, "job-v", 0).job.revision, 6);

    /* a failed unit leaves the out value alone */
    v = -7;
    assert_int_equal(svc_next_batch_size(fx->st, &fx->env, "job-none", NULL, &id, &v, &err),
                     ZBSO_ENOTFOUND);
    assert_int_equal(v, -7);
}

/* One batch size (32), no pruning, no explorations: every answer is 32 in MAB. */
static zbso_job_spec single_arm_spec(const char *job_id, int64_t window_size)
{
    zbso_job_spec s = make_spec(job_id);
    zbso_err err;
    s.batch_sizes[0] = 32;
    s.n_batch_sizes = 1;
    s.num_pruning_rounds = 0;
    s.mab_num_explorations = 0;
    s.window_size = window_size;
    assert_int_equal(spec_validate(&s, &err), 0);
    return s;
}

/* Concurrent trials of one batch size finishing out of trial-number order refit the arm by
 * Zeus's rule (core: opt_arm_refit): the other Succeeded trials newest first, at most
 * window_size; a full window drops its oldest and turns ascending; the reported one last. */
static void test_refit_out_of_order(void **state)
{
    fixture *fx = *state;
    static const int64_t windows[2] = {2, 0};
    for (int k = 0; k < 2; k++) {
        char job_id[16];
        snprintf(job_id, sizeof job_id, "job-o%d", k);
        zbso_job_spec s = single_arm_spec(job_id, windows[k]);
        register_ok(fx, &s, true);
        zbso_trial_id t[5];
        for (int i = 1; i <= 4; i++) {
            t[i] = next_ok(fx, job_id);
            assert_int_equal(t[i].trial_number, i);
            assert_int_equal(t[i].batch_size, 32);
        }
        /* Trial i costs 100 * i (eta 1: energy); they end in the order 4, 1, 3, 2. */
        static const int order[4] = {4, 1, 3, 2};
        for (int i = 0; i < 4; i++)
            report(fx, t[order[i]], 100.0 * order[i], 0.95, 1, 0);
        /* Report of 2: window 2 reads 4 3 (full), drops 3: rewards -400 -200 (the old rule,
         * the last two by number, fitted 3 4). Window 0 reads 4 3 1, newest first, then 2. */
        double w2[2] = {-400, -200}, w0[4] = {-400, -300, -100, -200};
        zbso_arm want;
        if (windows[k] == 2)
            opt_arm_fit(32, 0.0, 0.0, w2, 2, &want);
        else
            opt_arm_fit(32, 0.0, 0.0, w0, 4, &want);
        peek p = peek_at(fx, job_id, 0);
        assert_int_equal(p.n_arms, 1);
        assert_int_equal(p.arms[0].num_observations, want.num_observations);
        if (p.arms[0].param_mean != want.param_mean ||
            p.arms[0].param_precision != want.param_precision)
            fail_msg("window %lld: arm (%.17g, %.17g), want (%.17g, %.17g)",
                     (long long)windows[k], p.arms[0].param_mean, p.arms[0].param_precision,
                     want.param_mean, want.param_precision);
    }
}

static int insert_fn(store_txn *t, void *arg, zbso_err *err)
{
    const zbso_trial *trial = arg;
    zbso_job job;
    int rc = store_job_get(t, "job-b", true, &job, err);
    if (rc == 0)
        rc = store_trial_insert(t, "job-b", trial, NULL, err);
    job.num_trials = trial->trial_number;
    if (rc == 0)
        rc = store_job_update(t, &job, err);
    return rc;
}

/* A report whose cost is not finite (the 1e308 s and 1e308 J) is refused with 422
 * at body.time and stores nothing; a measurement an older zbso stored anyway is left out of
 * the arms instead of poisoning every later request. */
static void test_bad_values(void **state)
{
    fixture *fx = *state;
    zbso_job_spec s = single_arm_spec("job-b", 0);
    zbso_training_result r;
    zbso_report_response resp;
    zbso_err err;
    s.eta_knob = 0.5;
    register_ok(fx, &s, true);
    zbso_trial_id id = next_ok(fx, "job-b");
    int64_t version = peek_at(fx, "job-b", 0).job.revision;
    memset(&r, 0, sizeof r);
    r.trial = id;
    r.time = 1e308;
    r.energy = 1e308;
    r.metric = 0.95;
    r.current_epoch = 1;
    err_clear(&err);
    assert_int_equal(svc_report(fx->st, &fx->env, &r, &resp, NULL, &err), ZBSO_EINVAL);
    assert_string_equal(err.where, "body");
    assert_string_equal(err.loc, "time");
    assert_non_null(strstr(err.msg, "give cost inf"));
    peek p = peek_at(fx, "job-b", id.trial_number);
    assert_int_equal(p.trial.status, ZBSO_TRIAL_DISPATCHED);
    assert_int_equal(p.job.revision, version);
    assert_int_equal(p.arms[0].num_observations, 0);

    /* What an older zbso stored: a Succeeded trial 2 of 32 with that result. */
    zbso_trial legacy;
    memset(&legacy, 0, sizeof legacy);
    legacy.trial_number = 2;
    legacy.batch_size = 32;
    legacy.type = ZBSO_TRIAL_MAB;
    legacy.status = ZBSO_TRIAL_SUCCEEDED;
    legacy.start_time = legacy.end_time = legacy.lease_renewed_at = 1000;
    legacy.time = legacy.energy = 1e308;
    legacy.epochs = 1;
    legacy.converged = true;
    assert_int_equal(store_exec(fx->st, insert_fn, &legacy, &err), 0);
    /* Trial 1 ends: the refit reads 2 and leaves it out: the arm is trial 1's alone. */
    r.time = 10;
    r.energy = 1000;
    assert_int_equal(svc_report(fx->st, &fx->env, &r, &resp, NULL, &err), 0);
    p = peek_at(fx, "job-b", 0);
    assert_int_equal(p.arms[0].num_observations, 1);
    assert_true(p.arms[0].param_mean == -2000.0 && isinf(p.arms[0].param_precision));
    zbso_trial_id next = next_ok(fx, "job-b");
    assert_int_equal(next.trial_number, 3);
}

/* GET /jobs/batch_size with idempotency keys: a repeated key gets the trial its first
 * request dispatched and changes nothing; other keys, no key, another job or an expired
 * key dispatch, and the next dispatch with that key takes it over. */
static zbso_trial_id next_keyed(fixture *fx, const char *job_id, const char *key,
                                int64_t *version)
{
    zbso_trial_id id;
    zbso_err err;
    err_clear(&err);
    int rc = svc_next_batch_size(fx->st, &fx->env, job_id, key, &id, version, &err);
    if (rc != 0)
        fail_msg("next batch size (key %s): %d %s", key ? key : "none", rc, err.msg);
    return id;
}

static void test_idempotency_keys(void **state)
{
    fixture *fx = *state;
    zbso_job_spec s = make_spec("job-k"), s2 = make_spec("job-k2");
    int64_t v1 = 0, v = 0;
    register_ok(fx, &s, true);
    register_ok(fx, &s2, true);

    zbso_trial_id t1 = next_keyed(fx, "job-k", "a", &v1);
    assert_int_equal(t1.trial_number, 1);
    fx->clock.now += 5;
    zbso_trial_id again = next_keyed(fx, "job-k", "a", &v);
    assert_int_equal(again.trial_number, 1);
    assert_int_equal(again.batch_size, t1.batch_size);
    assert_string_equal(again.job_id, "job-k");
    assert_int_equal(v, v1); /* nothing changed */
    peek p = peek_at(fx, "job-k", 1);
    assert_int_equal(p.job.num_trials, 1);
    assert_int_equal(p.job.revision, v1);

    assert_int_equal(next_keyed(fx, "job-k", "b", NULL).trial_number, 2);
    assert_int_equal(next_keyed(fx, "job-k", NULL, NULL).trial_number, 3);
    assert_int_equal(next_keyed(fx, "job-k", "", NULL).trial_number, 4);
    assert_int_equal(next_keyed(fx, "job-k2", "a", NULL).trial_number, 1); /* per job */
    assert_int_equal(next_keyed(fx, "job-k", "b", NULL).trial_number, 2);

    /* A key lives as long as a trial's lease: ZEUS_BSO_TRIAL_TIMEOUT; then the next
     * dispatch takes it over. */
    fx->env.trial_timeout_s = 100;
    assert_int_equal(next_keyed(fx, "job-k", "c", NULL).trial_number, 5);
    fx->clock.now += 99;
    assert_int_equal(next_keyed(fx, "job-k", "c", NULL).trial_number, 5);
    fx->clock.now += 2;
    assert_int_equal(next_keyed(fx, "job-k", "c", NULL).trial_number, 6);
    assert_int_equal(next_keyed(fx, "job-k", "c", NULL).trial_number, 6);
    /* Without leases, a key lives SVC_KEY_LEASE_DEFAULT_S. */
    fx->env.trial_timeout_s = 0;
    fx->clock.now += SVC_KEY_LEASE_DEFAULT_S - 1;
    assert_int_equal(next_keyed(fx, "job-k", "c", NULL).trial_number, 6);
    fx->clock.now += 2;
    assert_int_equal(next_keyed(fx, "job-k", "c", NULL).trial_number, 7);
    assert_int_equal(next_keyed(fx, "job-k", "a", NULL).trial_number, 8);
}

/* svc_stats (the server's /metrics): each count moves once per committed change, and
 * answers that change nothing (a repeated key, a continuing or repeated report, ending an
 * ended trial, a refused report) leave every count as it was. */
static uint64_t got(atomic_uint_least64_t *c)
{
    return atomic_load(c);
}

static void test_stats(void **state)
{
    fixture *fx = *state;
    zbso_job_spec s = make_spec("job-s");
    svc_stats stats;
    zbso_err err;
    memset(&stats, 0, sizeof stats);
    fx->env.stats = &stats;
    fx->env.trial_timeout_s = 100;
    register_ok(fx, &s, true);
    zbso_trial_id t1 = next_ok(fx, "job-s");
    zbso_trial_id t2 = next_keyed(fx, "job-s", "k", NULL);
    assert_int_equal(next_keyed(fx, "job-s", "k", NULL).trial_number, t2.trial_number);
    assert_int_equal(got(&stats.dispatched[ZBSO_TRIAL_EXPLORATION]), 1);
    assert_int_equal(got(&stats.dispatched[ZBSO_TRIAL_CONCURRENT]), 1);
    report(fx, t1, 5, 0.1, 1, 0);
    assert_int_equal(got(&stats.finished[ZBSO_TRIAL_SUCCEEDED]), 0);
    assert_true(atomic_load(&stats.energy_j) == 0.0);
    report(fx, t1, 7.25, 0.95, 2, 0);
    report(fx, t1, 7.25, 0.95, 2, 0);   /* repeated */
    assert_int_equal(got(&stats.finished[ZBSO_TRIAL_SUCCEEDED]), 1);
    assert_true(atomic_load(&stats.energy_j) == 7.25);
    assert_true(atomic_load(&stats.time_s) == 10.0);
    err_clear(&err);
    assert_int_equal(svc_end_trial(fx->st, &fx->env, &t2, NULL, &err), 0);
    assert_int_equal(svc_end_trial(fx->st, &fx->env, &t2, NULL, &err), 0);
    assert_int_equal(got(&stats.finished[ZBSO_TRIAL_FAILED]), 1);
    assert_int_equal(got(&stats.lease_expiries), 0);
    /* Two trials outlive their lease; the next dispatch fails both. */
    next_ok(fx, "job-s");
    zbso_trial_id t4 = next_ok(fx, "job-s");
    fx->clock.now += 150;
    next_ok(fx, "job-s");
    assert_int_equal(got(&stats.lease_expiries), 2);
    assert_int_equal(got(&stats.finished[ZBSO_TRIAL_FAILED]), 3);
    report(fx, t4, 5, 0.95, 1, ZBSO_ECONFLICT);
    assert_int_equal(got(&stats.finished[ZBSO_TRIAL_SUCCEEDED]), 1);
    assert_true(atomic_load(&stats.energy_j) == 7.25);
    uint64_t by_type[3] = {0};
    for (int64_t n = 1; n <= 5; n++)
        by_type[peek_at(fx, "job-s", n).trial.type]++;
    for (int k = 0; k < 3; k++)
        assert_int_equal(got(&stats.dispatched[k]), by_type[k]);
    assert_int_equal(got(&stats.finished[ZBSO_TRIAL_DISPATCHED]), 0);
}

/* ---- curve points and updated_at ---- */

#define PTS_MAX 16
typedef struct pts {
    zbso_curve_point p[PTS_MAX];
    size_t n;
} pts;

static int pts_cb(void *ctx, const zbso_curve_point *p)
{
    pts *a = ctx;
    if (a->n == PTS_MAX)
        return -100;
    a->p[a->n++] = *p;
    return 0;
}

typedef struct pts_arg {
    const char *job_id;
    int64_t trial_number;
    pts out;
} pts_arg;

static int pts_fn(store_txn *t, void *arg, zbso_err *err)
{
    pts_arg *a = arg;
    a->out.n = 0;
    return store_reports_list(t, a->job_id, a->trial_number, pts_cb, &a->out, err);
}

/* The stored points of a trial, ascending by epoch. */
static pts stored_points(fixture *fx, const char *job_id, int64_t trial_number)
{
    pts_arg a = {.job_id = job_id, .trial_number = trial_number};
    zbso_err err;
    int rc = store_exec_read(fx->st, pts_fn, &a, &err);
    if (rc != 0)
        fail_msg("reports_list: %d %s", rc, err.msg);
    return a.out;
}

static void assert_point(const zbso_curve_point *p, int64_t epoch, double energy,
                         double metric, double received_at)
{
    assert_int_equal(p->epoch, epoch);
    assert_true(p->time == 10.0 && p->energy == energy && p->metric == metric);
    assert_true(p->received_at == received_at);
}

/* Reports keep their points, all through the buffer: continuing ones (on the read path
 * and when the lease is renewed) and the one that ends a trial, whose values the trial
 * itself holds durably from its unit on; a repeated report adds none, epochs outside
 * 0..max(max_epochs, 1) + 1 none. Every change of the job moves updated_at. */
static void test_curve_points(void **state)
{
    fixture *fx = *state;
    zbso_job_spec s = make_spec("job-c");
    zbso_err err;
    err_clear(&err);
    register_ok(fx, &s, true);
    assert_true(peek_at(fx, "job-c", 0).job.updated_at == 1000.0);
    fx->clock.now = 1010.0;
    zbso_trial_id id = next_ok(fx, "job-c");
    zbso_trial_id other = next_ok(fx, "job-c");
    peek pk = peek_at(fx, "job-c", 0);
    assert_true(pk.job.updated_at == 1010.0);
    assert_int_equal(pk.job.revision, 3);

    /* keep training, read path: buffered, nothing of the job changes */
    fx->clock.now = 1020.0;
    assert_false(report(fx, id, 100, 0.1, 0, 0).stop_train);
    fx->clock.now = 1030.0;
    assert_false(report(fx, id, 150, 0.2, 1, 0).stop_train);
    fx->clock.now = 1031.0;
    assert_false(report(fx, id, 160, 0.3, 1, 0).stop_train); /* epoch 1 again, later */
    assert_false(report(fx, id, 170, 0.3, -1, 0).stop_train); /* not kept */
    pk = peek_at(fx, "job-c", 0);
    assert_true(pk.job.updated_at == 1010.0);
    assert_int_equal(pk.job.revision, 3);
    assert_int_equal(store_report_flush(fx->st, &err), 0);
    pts p = stored_points(fx, "job-c", id.trial_number);
    assert_int_equal(p.n, 2);
    assert_point(&p.p[0], 0, 100, 0.1, 1020.0);
    assert_point(&p.p[1], 1, 160, 0.3, 1031.0);

    /* a report that renews the lease is a change of the job; its point is buffered */
    fx->clock.now = 1031.0 + ZBSO_LEASE_RENEW_S;
    assert_false(report(fx, id, 200, 0.4, 2, 0).stop_train);
    pk = peek_at(fx, "job-c", id.trial_number);
    assert_true(pk.trial.lease_renewed_at == fx->clock.now);
    assert_true(pk.job.updated_at == fx->clock.now);
    assert_int_equal(pk.job.revision, 4);
    assert_int_equal(store_report_flush(fx->st, &err), 0);
    assert_int_equal(stored_points(fx, "job-c", id.trial_number).n, 3);

    /* the final report: its values are the trial's at once, its point is buffered */
    uint64_t written, dropped, buffered, w2, d2, b2;
    fx->clock.now = 2000.0;
    zbso_report_response r = report(fx, id, 300, 0.95, 3, 0);
    assert_true(r.stop_train && r.converged);
    pk = peek_at(fx, "job-c", id.trial_number);
    assert_true(pk.trial.status == ZBSO_TRIAL_SUCCEEDED && pk.trial.energy == 300 &&
                pk.trial.epochs == 3);
    store_curve_stats(fx->st, &written, &dropped, &buffered);
    assert_int_equal(buffered, 1);
    assert_int_equal(store_report_flush(fx->st, &err), 0);
    store_curve_stats(fx->st, &written, &dropped, &buffered);
    p = stored_points(fx, "job-c", id.trial_number);
    assert_int_equal(p.n, 4);
    assert_point(&p.p[3], 3, 300, 0.95, 2000.0);
    pk = peek_at(fx, "job-c", 0);
    assert_true(pk.job.updated_at == 2000.0);
    assert_int_equal(pk.job.revision, 5);
    /* repeated: the same answer, no point, no change */
    fx->clock.now = 2100.0;
    assert_true(report(fx, id, 300, 0.95, 3, 0).stop_train);
    assert_int_equal(store_report_flush(fx->st, &err), 0);
    store_curve_stats(fx->st, &w2, &d2, &b2);
    assert_true(w2 == written && d2 == dropped && b2 == 0 && buffered == 0);
    p = stored_points(fx, "job-c", id.trial_number);
    assert_int_equal(p.n, 4);
    assert_true(p.p[3].received_at == 2000.0);
    assert_true(peek_at(fx, "job-c", 0).job.updated_at == 2000.0);

    /* a trial that ends beyond max(max_epochs, 1) + 1 ends without a point */
    fx->clock.now = 2200.0;
    assert_true(report(fx, other, 300, 0.1, 7, 0).stop_train);
    assert_int_equal(store_report_flush(fx->st, &err), 0);
    assert_int_equal(stored_points(fx, "job-c", other.trial_number).n, 0);
    assert_true(peek_at(fx, "job-c", 0).job.updated_at == 2200.0);
    /* max_epochs + 1 is still kept */
    zbso_trial_id third = next_ok(fx, "job-c");
    fx->clock.now = 2300.0;
    assert_true(report(fx, third, 300, 0.1, 6, 0).stop_train);
    assert_int_equal(store_report_flush(fx->st, &err), 0);
    p = stored_points(fx, "job-c", third.trial_number);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.p[0].epoch, 6);

    /* ending a Dispatched trial moves updated_at to its end */
    zbso_trial_id fourth = next_ok(fx, "job-c");
    fx->clock.now = 2400.0;
    assert_int_equal(svc_end_trial(fx->st, &fx->env, &fourth, NULL, &err), 0);
    assert_true(peek_at(fx, "job-c", 0).job.updated_at == 2400.0);
}

static int run_for(const char *url)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_register, setup, teardown),
        cmocka_unit_test_setup_teardown(test_register_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pruning_to_mab, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_and_zero_rounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_and_no_convergence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lease_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_end_trial_delete_and_404, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_path_same_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refit_out_of_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idempotency_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_curve_points, setup, teardown),
    };
    g_url = url;
    fprintf(stderr, "store: %s\n", url);
    return cmocka_run_group_tests_name(url, tests, NULL, NULL);
}

int main(void)
{
    int failed = run_for("memory://");
    failed += run_for("sqlite");
    return failed != 0;
}
