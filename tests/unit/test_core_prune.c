/* test_core_prune.c: the pruning stage's decisions (SPEC §3.1) with exact expected batch
 * sizes, rounds and defaults. Pure: builds jobs and exploration lists in memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/optimizer.h"
#include "core/spec.h"

/* Job with batch sizes 8..128 (five), default 32, eta 0.5, max_power 300 W. */
static zbso_job make_job(int64_t rounds)
{
    static const int64_t bs[] = {8, 16, 32, 64, 128};
    zbso_job job;
    memset(&job, 0, sizeof job);
    spec_defaults(&job.spec);
    snprintf(job.spec.job_id, sizeof job.spec.job_id, "%s", "job-1");
    snprintf(job.spec.job_id_prefix, sizeof job.spec.job_id_prefix, "%s", "job");
    memcpy(job.spec.batch_sizes, bs, sizeof bs);
    job.spec.n_batch_sizes = 5;
    job.spec.default_batch_size = 32;
    job.spec.num_pruning_rounds = rounds;
    job.spec.max_power = 300.0;
    job.spec.number_of_gpus = 1;
    snprintf(job.spec.gpu_model, sizeof job.spec.gpu_model, "%s", "H200");
    job.exp_default_batch_size = 32;
    job.min_cost_batch_size = 32;
    return job;
}

/* Appends an exploration: status Succeeded with (converged, time) and energy 0, so its
 * cost is 150 * time; or Dispatched when dispatched is true. */
static void add(zbso_trial *e, size_t *n, int64_t bs, bool dispatched, bool converged,
                double time_s)
{
    zbso_trial t;
    memset(&t, 0, sizeof t);
    t.trial_number = (int64_t)*n + 1;
    t.batch_size = bs;
    t.type = ZBSO_TRIAL_EXPLORATION;
    t.status = dispatched ? ZBSO_TRIAL_DISPATCHED : ZBSO_TRIAL_SUCCEEDED;
    t.converged = converged;
    t.time = time_s;
    e[(*n)++] = t;
}

static opt_prune_decision decide_ok(const zbso_job *job, const zbso_trial *e, size_t n)
{
    static opt_prune_decision d;
    zbso_err err;
    err_clear(&err);
    assert_int_equal(opt_prune_next(job, e, n, &d, &err), 0);
    return d;
}

static void expect_explore(const zbso_job *job, const zbso_trial *e, size_t n, int64_t bs,
                           int64_t round, int64_t round_default)
{
    opt_prune_decision d = decide_ok(job, e, n);
    assert_int_equal(d.kind, OPT_PRUNE_EXPLORE);
    assert_int_equal(d.batch_size, bs);
    assert_int_equal(d.round, round);
    assert_int_equal(d.round_default, round_default);
}

static void test_walk_down_then_up(void **unused)
{
    zbso_job job = make_job(2);
    zbso_trial e[16];
    size_t n = 0;
    expect_explore(&job, e, n, 32, 0, 32);
    add(e, &n, 32, false, true, 10);
    expect_explore(&job, e, n, 16, 0, 32);
    add(e, &n, 16, false, true, 10);
    expect_explore(&job, e, n, 8, 0, 32);
    add(e, &n, 8, false, true, 10);
    expect_explore(&job, e, n, 64, 0, 32);
    add(e, &n, 64, false, true, 10);
    expect_explore(&job, e, n, 128, 0, 32);
}

static void test_prune_after_non_converged(void **unused)
{
    zbso_job job = make_job(2);
    zbso_trial e[16];
    size_t n = 0;
    add(e, &n, 32, false, true, 10);
    add(e, &n, 16, false, false, 10);
    /* 16 did not converge: 8 is pruned this round, the walk goes up. */
    expect_explore(&job, e, n, 64, 0, 32);
    add(e, &n, 64, false, false, 10);
    /* 128 pruned too: round 1 has only 32, which is its own default. */
    expect_explore(&job, e, n, 32, 1, 32);
    add(e, &n, 32, false, true, 12);
    opt_prune_decision d = decide_ok(&job, e, n);
    assert_int_equal(d.kind, OPT_PRUNE_TO_MAB);
    assert_int_equal(d.n_survivors, 1);
    assert_int_equal(d.survivors[0], 32);
    assert_int_equal(d.round, 2);
    assert_int_equal(d.round_default, 32);
}

static void test_second_round_new_default_and_survivors(void **unused)
{
    zbso_job job = make_job(2);
    zbso_trial e[16];
    size_t n = 0;
    /* Round 0: 32 (cost 1500), 16 (1200), 8 does not converge; 64 (900, cheapest),
     * 128 (900 too: a tie keeps the first seen). */
    add(e, &n, 32, false, true, 10);
    add(e, &n, 16, false, true, 8);
    add(e, &n, 8, false, false, 20);
    add(e, &n, 64, false, true, 6);
    add(e, &n, 128, false, true, 6);
    /* Round 1: B = {16, 32, 64, 128}, default 64: down 64, 32, 16, then up 128. */
    expect_explore(&job, e, n, 64, 1, 64);
    add(e, &n, 64, false, true, 7);
    expect_explore(&job, e, n, 32, 1, 64);
    add(e, &n, 32, false, false, 7);
    /* 32 did not converge in round 1, so 16 is skipped; up: 128. */
    expect_explore(&job, e, n, 128, 1, 64);
    add(e, &n, 128, false, true, 5);
    opt_prune_decision d = decide_ok(&job, e, n);
    assert_int_equal(d.kind, OPT_PRUNE_TO_MAB);
    assert_int_equal(d.n_survivors, 2);
    assert_int_equal(d.survivors[0], 64);
    assert_int_equal(d.survivors[1], 128);
    assert_int_equal(d.round_default, 128);
}

static void test_concurrent_while_outstanding(void **unused)
{
    zbso_job job = make_job(2);
    zbso_trial e[16];
    size_t n = 0;
    job.min_cost_batch_size = 16;
    add(e, &n, 32, false, true, 10);
    add(e, &n, 16, true, false, 0);
    opt_prune_decision d = decide_ok(&job, e, n);
    assert_int_equal(d.kind, OPT_PRUNE_CONCURRENT);
    assert_int_equal(d.batch_size, 16);
    job.min_cost_batch_size = 32;
    d = decide_ok(&job, e, n);
    assert_int_equal(d.kind, OPT_PRUNE_CONCURRENT);
    assert_int_equal(d.batch_size, 32);
}

static void test_failed_exploration_explored_again(void **unused)
{
    zbso_job job = make_job(2);
    zbso_trial e[16];
    size_t n = 0;
    zbso_err err;
    opt_prune_decision d;
    add(e, &n, 32, false, true, 10);
    add(e, &n, 16, true, false, 0);
    e[1].status = ZBSO_TRIAL_FAILED;
    /* A Failed trial must not reach the decision... */
    err_clear(&err);
    assert_int_equal(opt_prune_next(&job, e, n, &d, &err), ZBSO_EINTERNAL);
    /* ...and without it, 16 has no round-0 exploration and is explored again. */
    expect_explore(&job, e, 1, 16, 0, 32);
}

static void test_no_batch_size_converged(void **unused)
{
    zbso_job job = make_job(2);
    zbso_trial e[16];
    size_t n = 0;
    zbso_err err;
    opt_prune_decision d;
    add(e, &n, 32, false, false, 10);
    add(e, &n, 64, false, false, 10);
    err_clear(&err);
    assert_int_equal(opt_prune_next(&job, e, n, &d, &err), ZBSO_ENOCONV);
    assert_int_equal(err.code, ZBSO_ENOCONV);
    assert_non_null(strstr(err.msg, "job-1"));
    assert_non_null(strstr(err.msg, "Re-register the job with other batch_sizes"));
}

static void test_zero_rounds(void **unused)
{
    zbso_job job = make_job(0);
    opt_prune_decision d = decide_ok(&job, NULL, 0);
    assert_int_equal(d.kind, OPT_PRUNE_TO_MAB);
    assert_int_equal(d.n_survivors, 5);
    assert_int_equal(d.survivors[0], 8);
    assert_int_equal(d.survivors[4], 128);
    assert_int_equal(d.round_default, 32);
    assert_int_equal(d.round, 0);
}

/* The default at the top of the list: down walks everything, up is empty. */
static void test_default_is_largest(void **unused)
{
    zbso_job job = make_job(1);
    zbso_trial e[16];
    size_t n = 0;
    job.spec.default_batch_size = 128;
    expect_explore(&job, e, n, 128, 0, 128);
    add(e, &n, 128, false, true, 10);
    expect_explore(&job, e, n, 64, 0, 128);
    add(e, &n, 64, false, false, 10);
    opt_prune_decision d = decide_ok(&job, e, n);
    assert_int_equal(d.kind, OPT_PRUNE_TO_MAB);
    assert_int_equal(d.n_survivors, 1);
    assert_int_equal(d.survivors[0], 128);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_down_then_up),
        cmocka_unit_test(test_prune_after_non_converged),
        cmocka_unit_test(test_second_round_new_default_and_survivors),
        cmocka_unit_test(test_concurrent_while_outstanding),
        cmocka_unit_test(test_failed_exploration_explored_again),
        cmocka_unit_test(test_no_batch_size_converged),
        cmocka_unit_test(test_zero_rounds),
        cmocka_unit_test(test_default_is_largest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
