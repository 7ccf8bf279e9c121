/* test_core_rounds.c: opt_prune_rounds, the pruning rounds replayed for inspection
 * (SPEC §5), on the walks of SPEC §3.1 with exact lists; cross-checked against
 * opt_prune_next on the same explorations. Pure: jobs and explorations in memory. */
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
    job.exp_default_batch_size = 32;
    job.min_cost_batch_size = 32;
    return job;
}

/* Appends an exploration: Succeeded with (converged, time) and energy 0, so its cost is
 * 150 * time; or Dispatched when dispatched is true. */
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

/* Checks list[0..n-1] against the want array of length n_want. */
static void expect_list(const int64_t *list, size_t n, const int64_t *want, size_t n_want)
{
    assert_int_equal(n, n_want);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(list[i], want[i]);
}

#define LIST(...) (const int64_t[]){__VA_ARGS__}, \
    sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)
#define NONE NULL, 0

static void expect_round(const opt_prune_round *r, int64_t round, int64_t dflt, bool complete)
{
    assert_int_equal(r->round, round);
    assert_int_equal(r->default_batch_size, dflt);
    assert_int_equal(r->complete, complete);
}

static size_t replay(const zbso_job *job, const zbso_trial *e, size_t n, opt_prune_round *out,
                     size_t cap)
{
    zbso_err err;
    size_t n_out = 99;
    err_clear(&err);
    assert_int_equal(opt_prune_rounds(job, e, n, out, cap, &n_out, &err), 0);
    return n_out;
}

/* Round 0 of a 2-round job: 32 (cost 1500), 16 (1200), 8 does not converge; 64 (900,
 * cheapest), 128 (900 too: a tie keeps the first seen). */
static void round_0(zbso_trial *e, size_t *n)
{
    add(e, n, 32, false, true, 10);
    add(e, n, 16, false, true, 8);
    add(e, n, 8, false, false, 20);
    add(e, n, 64, false, true, 6);
    add(e, n, 128, false, true, 6);
}

static void test_two_rounds_replayed(void **unused)
{
    zbso_job job = make_job(2);
    zbso_trial e[16];
    size_t n = 0;
    opt_prune_round r[4];
    round_0(e, &n);
    /* Round 1: list {16, 32, 64, 128}, default 64: down 64 (750), 32 does not converge
     * (16 is not reached), up 128 (1050). */
    add(e, &n, 64, false, true, 5);
    add(e, &n, 32, false, false, 9);
    add(e, &n, 128, false, true, 7);

    assert_int_equal(replay(&job, e, n, r, 4), 2);
    expect_round(&r[0], 0, 32, true);
    expect_list(r[0].explored, r[0].n_explored, LIST(32, 16, 8, 64, 128));
    expect_list(r[0].converged, r[0].n_converged, LIST(32, 16, 64, 128));
    expect_list(r[0].pruned, r[0].n_pruned, LIST(8));
    expect_round(&r[1], 1, 64, true);
    expect_list(r[1].explored, r[1].n_explored, LIST(64, 32, 128));
    expect_list(r[1].converged, r[1].n_converged, LIST(64, 128));
    expect_list(r[1].pruned, r[1].n_pruned, LIST(32, 16));

    /* The same survivors as the decision that ends pruning. */
    opt_prune_decision d;
    zbso_err err;
    assert_int_equal(opt_prune_next(&job, e, n, &d, &err), 0);
    assert_int_equal(d.kind, OPT_PRUNE_TO_MAB);
    expect_list(d.survivors, d.n_survivors, LIST(64, 128));

    /* Between the rounds: round 1 is where pruning is, with its default and nothing
     * explored yet. */
    assert_int_equal(replay(&job, e, 5, r, 4), 2);
    expect_round(&r[0], 0, 32, true);
    expect_round(&r[1], 1, 64, false);
    expect_list(r[1].explored, r[1].n_explored, NONE);
    expect_list(r[1].converged, r[1].n_converged, NONE);
    expect_list(r[1].pruned, r[1].n_pruned, NONE);
}

/* A round in progress whose walk waits on a Dispatched exploration: what has a result is
 * explored, the Dispatched one is not; the walk has not gone up yet. */
static void test_incomplete_round_with_dispatched(void **unused)
{
    zbso_job job = make_job(2);
    zbso_trial e[16];
    size_t n = 0;
    opt_prune_round r[4];
    add(e, &n, 32, false, true, 10);
    add(e, &n, 16, true, false, 0);
    assert_int_equal(replay(&job, e, n, r, 4), 1);
    expect_round(&r[0], 0, 32, false);
    expect_list(r[0].explored, r[0].n_explored, LIST(32));
    expect_list(r[0].converged, r[0].n_converged, LIST(32));
    expect_list(r[0].pruned, r[0].n_pruned, NONE);

    /* Further on: 16 did not converge (the walk turns up at it), 64 is Dispatched: 16 is
     * pruned already, 8 was never reached and is not shown as pruned yet. */
    n = 0;
    add(e, &n, 32, false, true, 10);
    add(e, &n, 16, false, false, 10);
    add(e, &n, 64, true, false, 0);
    assert_int_equal(replay(&job, e, n, r, 4), 1);
    expect_round(&r[0], 0, 32, false);
    expect_list(r[0].explored, r[0].n_explored, LIST(32, 16));
    expect_list(r[0].converged, r[0].n_converged, LIST(32));
    expect_list(r[0].pruned, r[0].n_pruned, LIST(16));

    /* A fresh job: round 0 with nothing explored. */
    assert_int_equal(replay(&job, e, 0, r, 4), 1);
    expect_round(&r[0], 0, 32, false);
    expect_list(r[0].explored, r[0].n_explored, NONE);
}

/* Nothing converged in round 0: the round is complete, all of its list pruned, and the
 * replay ends there although the job has 2 rounds (opt_prune_next fails there). */
static void test_round_with_nothing_converged(void **unused)
{
    zbso_job job = make_job(2);
    zbso_trial e[16];
    size_t n = 0;
    opt_prune_round r[4];
    add(e, &n, 32, false, false, 10);
    add(e, &n, 64, false, false, 10);
    assert_int_equal(replay(&job, e, n, r, 4), 1);
    expect_round(&r[0], 0, 32, true);
    expect_list(r[0].explored, r[0].n_explored, LIST(32, 64));
    expect_list(r[0].converged, r[0].n_converged, NONE);
    expect_list(r[0].pruned, r[0].n_pruned, LIST(32, 16, 8, 64, 128));

    opt_prune_decision d;
    zbso_err err;
    assert_int_equal(opt_prune_next(&job, e, n, &d, &err), ZBSO_ENOCONV);
}

/* cap below the rounds: only the first cap rounds; cap 0: none. */
static void test_cap_smaller_than_rounds(void **unused)
{
    zbso_job job = make_job(3);
    zbso_trial e[16];
    size_t n = 0;
    opt_prune_round r[4];
    round_0(e, &n);
    add(e, &n, 64, false, true, 5);
    add(e, &n, 32, false, false, 9);
    add(e, &n, 128, false, true, 7);
    /* Round 2: {64, 128}, default 64; nothing explored yet. */
    assert_int_equal(replay(&job, e, n, r, 4), 3);
    expect_round(&r[2], 2, 64, false);
    memset(r, 0, sizeof r);
    assert_int_equal(replay(&job, e, n, r, 1), 1);
    expect_round(&r[0], 0, 32, true);
    expect_list(r[0].pruned, r[0].n_pruned, LIST(8));
    assert_int_equal(r[1].n_explored, 0); /* untouched */
    assert_int_equal(replay(&job, e, n, r, 0), 0);
}

static void test_failed_trial_refused(void **unused)
{
    zbso_job job = make_job(2);
    zbso_trial e[4];
    size_t n = 0, n_out = 7;
    opt_prune_round r[2];
    zbso_err err;
    add(e, &n, 32, false, true, 10);
    e[0].status = ZBSO_TRIAL_FAILED;
    err_clear(&err);
    assert_int_equal(opt_prune_rounds(&job, e, n, r, 2, &n_out, &err), ZBSO_EINTERNAL);
    assert_int_equal(n_out, 0);
    assert_non_null(strstr(err.msg, "trial 1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_rounds_replayed),
        cmocka_unit_test(test_incomplete_round_with_dispatched),
        cmocka_unit_test(test_round_with_nothing_converged),
        cmocka_unit_test(test_cap_smaller_than_rounds),
        cmocka_unit_test(test_failed_trial_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
