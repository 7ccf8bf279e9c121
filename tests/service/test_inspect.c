/* test_inspect.c: src/inspect on a memory:// store filled through the service: the query
 * values insp_request_query takes and refuses, the four documents of a scripted job, pages,
 * 404s, and every allocation failure inside insp_answer (jansson's allocations routed
 * through util/mem), which must end in ZBSO_ENOMEM or the full answer, never a crash, a leak
 * (ASan build) or a shorter document. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/spec.h"
#include "inspect/inspect.h"
#include "service/service.h"
#include "util/mem.h"

static double now_s = 1000.0;

static double fake_now(void *ctx)
{
    (void)ctx;
    return now_s;
}

static int fake_entropy(void *ctx, uint32_t *words, size_t n)
{
    (void)ctx;
    memset(words, 0, n * sizeof *words);
    return 0;
}

static const svc_env ENV = {.now = fake_now, .entropy = fake_entropy};

static zbso_job_spec make_spec(const char *job_id)
{
    zbso_job_spec s;
    zbso_err err;
    spec_defaults(&s);
    snprintf(s.job_id_prefix, sizeof s.job_id_prefix, "%s", "job");
    snprintf(s.job_id, sizeof s.job_id, "%s", job_id);
    s.batch_sizes[0] = 16;
    s.batch_sizes[1] = 32;
    s.n_batch_sizes = 2;
    s.default_batch_size = 16;
    s.eta_knob = 0.5;
    s.has_beta_knob = false;
    s.target_metric = 0.5;
    s.max_epochs = 5;
    s.num_pruning_rounds = 1;
    s.mab_num_explorations = 0;
    s.has_mab_seed = true;
    s.mab_seed = 42;
    s.max_power = 300;
    s.number_of_gpus = 1;
    snprintf(s.gpu_model, sizeof s.gpu_model, "%s", "H200");
    assert_int_equal(spec_validate(&s, &err), 0);
    return s;
}

/* Registers job_id and runs `trials` trials to convergence (16: 20 s, 4000 J; 32: 6 s,
 * 1500 J), the first of each with a continuing report of epoch 1 before the final one. */
static void fill(store *st, const char *job_id, int trials)
{
    zbso_job_spec s = make_spec(job_id), out;
    bool created;
    zbso_err err;
    assert_int_equal(svc_register_job(st, &ENV, &s, &out, &created, NULL, &err), 0);
    for (int i = 0; i < trials; i++) {
        zbso_trial_id id;
        zbso_report_response resp;
        assert_int_equal(svc_next_batch_size(st, &ENV, job_id, NULL, &id, NULL, &err), 0);
        double t = id.batch_size == 16 ? 20.0 : 6.0, e = id.batch_size == 16 ? 4000.0 : 1500.0;
        zbso_training_result r = {id, t / 2, e / 2, 0.3, 1};
        now_s += 1;
        assert_int_equal(svc_report(st, &ENV, &r, &resp, NULL, &err), 0);
        assert_false(resp.stop_train);
        r = (zbso_training_result){id, t, e, 0.6, 2};
        now_s += 1;
        assert_int_equal(svc_report(st, &ENV, &r, &resp, NULL, &err), 0);
        assert_true(resp.converged);
    }
}

static store *open_filled(void)
{
    store *st;
    zbso_err err;
    store_options opt = {.create_if_empty = true};
    assert_int_equal(store_open("memory://", &opt, &st, &err), 0);
    fill(st, "job-b", 1);
    fill(st, "job-a", 4);
    fill(st, "job-c", 0);
    assert_int_equal(store_report_flush(st, &err), 0);
    return st;
}

static json_t *answer(store *st, const insp_request *req, int want_rc)
{
    char *text = NULL;
    size_t len = 0;
    zbso_err err = {0};
    int rc = insp_answer(st, req, &text, &len, &err);
    if (rc != want_rc)
        fail_msg("insp_answer kind %d: %d (want %d) %s", (int)req->kind, rc, want_rc, err.msg);
    if (rc < 0) {
        assert_null(text);
        assert_true(err.msg[0] != '\0');
        return NULL;
    }
    assert_int_equal(strlen(text), len);
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    if (!doc)
        fail_msg("answer is not JSON: %s", je.text);
    free(text);
    return doc;
}

static void query_ok(insp_request *req, const char *name, const char *v)
{
    zbso_err err = {0};
    if (insp_request_query(req, name, v, strlen(v), &err) != 0)
        fail_msg("%s=%s refused: %s", name, v, err.msg);
}

static void query_bad(insp_kind kind, const char *name, const char *v, size_t len,
                      const char *says)
{
    insp_request req;
    zbso_err err = {0};
    insp_request_init(&req, kind);
    assert_int_equal(insp_request_query(&req, name, v, len, &err), ZBSO_EINVAL);
    assert_string_equal(err.where, "query");
    assert_string_equal(err.loc, name);
    if (!strstr(err.msg, says))
        fail_msg("'%s' does not say '%s'", err.msg, says);
}

static void test_query_values(void **state)
{
    (void)state;
    insp_request req;
    insp_request_init(&req, INSP_JOBS);
    assert_int_equal(req.limit, INSP_LIMIT_DEFAULT);
    query_ok(&req, "limit", "1000");
    assert_int_equal(req.limit, 1000);
    query_ok(&req, "limit", "007");
    assert_int_equal(req.limit, 7);
    query_ok(&req, "prefix", "job-");
    assert_string_equal(req.prefix, "job-");
    query_ok(&req, "after", "job-a");
    assert_string_equal(req.after_job, "job-a");
    insp_request_init(&req, INSP_TRIALS);
    query_ok(&req, "after", "12");
    assert_int_equal(req.after_trial, 12);

    query_bad(INSP_JOBS, "limit", "0", 1, "from 1 to 1000, got '0'");
    query_bad(INSP_JOBS, "limit", "1001", 4, "got '1001'");
    query_bad(INSP_JOBS, "limit", "", 0, "got ''");
    query_bad(INSP_JOBS, "limit", "-5", 2, "got '-5'");
    query_bad(INSP_JOBS, "limit", "10x", 3, "got '10x'");
    query_bad(INSP_JOBS, "limit", "9999999999999999999999999999", 28, "999999...'");
    query_bad(INSP_JOBS, "limit", "1\n", 2, "got '1\\x0a'");
    query_bad(INSP_JOBS, "limit", "1\0", 2, "got '1\\x00'");
    query_bad(INSP_TRIALS, "after", "x", 1, "got 'x'");
    query_bad(INSP_JOBS, "prefix", "a\0b", 3, "NUL");
    query_bad(INSP_JOBS, "after", "\xff", 1, "not valid UTF-8");
    char long_id[ZBSO_ID_MAX + 2];
    memset(long_id, 'a', sizeof long_id);
    query_bad(INSP_JOBS, "prefix", long_id, sizeof long_id, "302 bytes long");
    query_bad(INSP_JOBS, "bogus", "1", 1, "unknown query argument 'bogus'");
    query_bad(INSP_JOB, "limit", "1", 1, "this path takes none");
    query_bad(INSP_TRIAL, "after", "1", 1, "this path takes none");
}

static void test_documents(void **state)
{
    (void)state;
    store *st = open_filled();
    insp_request req;

    insp_request_init(&req, INSP_JOB);
    snprintf(req.job_id, sizeof req.job_id, "job-a");
    json_t *doc = answer(st, &req, 0);
    assert_string_equal(json_string_value(json_object_get(doc, "stage")), "MAB");
    json_t *trials = json_object_get(doc, "trials");
    assert_int_equal(json_integer_value(json_object_get(trials, "total")), 4);
    assert_int_equal(json_integer_value(json_object_get(trials, "Succeeded")), 4);
    json_t *sav = json_object_get(doc, "savings");
    assert_int_equal(json_integer_value(json_object_get(sav, "finished_trials")), 4);
    assert_true(json_real_value(json_object_get(json_object_get(sav, "default_expected"),
                                                "cost")) == 5000.0);
    assert_int_equal(json_integer_value(json_object_get(sav, "best_batch_size")), 32);
    assert_int_equal(json_array_size(json_object_get(doc, "arms")), 2);
    json_t *rounds = json_object_get(json_object_get(doc, "exploration"), "rounds");
    assert_int_equal(json_array_size(rounds), 1);
    json_decref(doc);

    /* Pages of one job, in byte order: job-a, job-b, job-c. */
    insp_request_init(&req, INSP_JOBS);
    req.limit = 2;
    doc = answer(st, &req, 0);
    json_t *jobs = json_object_get(doc, "jobs");
    assert_int_equal(json_array_size(jobs), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(jobs, 0), "job_id")),
                        "job-a");
    assert_string_equal(json_string_value(json_object_get(doc, "next")), "job-b");
    json_decref(doc);
    snprintf(req.after_job, sizeof req.after_job, "job-b");
    doc = answer(st, &req, 0);
    jobs = json_object_get(doc, "jobs");
    assert_int_equal(json_array_size(jobs), 1);
    assert_true(json_is_null(json_object_get(doc, "next")));
    json_decref(doc);

    insp_request_init(&req, INSP_TRIALS);
    snprintf(req.job_id, sizeof req.job_id, "job-a");
    req.limit = 3;
    doc = answer(st, &req, 0);
    assert_int_equal(json_array_size(json_object_get(doc, "trials")), 3);
    assert_int_equal(json_integer_value(json_object_get(doc, "next")), 3);
    json_decref(doc);

    insp_request_init(&req, INSP_TRIAL);
    snprintf(req.job_id, sizeof req.job_id, "job-a");
    req.trial_number = 1;
    doc = answer(st, &req, 0);
    json_t *reports = json_object_get(doc, "reports");
    assert_int_equal(json_array_size(reports), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(reports, 1), "epoch")),
                     2);
    json_decref(doc);

    req.trial_number = 5;
    answer(st, &req, ZBSO_ENOTFOUND);
    snprintf(req.job_id, sizeof req.job_id, "nope");
    answer(st, &req, ZBSO_ENOTFOUND);
    req.kind = INSP_JOB;
    answer(st, &req, ZBSO_ENOTFOUND);
    store_close(st);
}

/* Every allocation of insp_answer fails once, in turn: the answer is ZBSO_ENOMEM or the
 * same text as without failures. */
static void torture(store *st, const insp_request *req)
{
    char *want = NULL, *got = NULL;
    size_t want_len = 0, got_len = 0;
    zbso_err err = {0};
    assert_int_equal(insp_answer(st, req, &want, &want_len, &err), 0);
    bool done = false;
    for (long n = 1; !done && n < 100000; n++) {
        long before = mem_failures();
        mem_fail_nth(n);
        int rc = insp_answer(st, req, &got, &got_len, &err);
        mem_fail_nth(0);
        if (mem_failures() == before) {
            done = true;                         /* no allocation was left to fail */
        }
        if (rc == 0) {
            assert_int_equal(got_len, want_len);
            assert_memory_equal(got, want, want_len);
            free(got);
        } else {
            assert_int_equal(rc, ZBSO_ENOMEM);
            assert_null(got);
        }
    }
    assert_true(done);
    free(want);
}

static void test_allocation_failures(void **state)
{
    (void)state;
    store *st = open_filled();
    insp_request req;
    json_set_alloc_funcs(mem_malloc, mem_free);
    insp_request_init(&req, INSP_JOBS);
    torture(st, &req);
    insp_request_init(&req, INSP_JOB);
    snprintf(req.job_id, sizeof req.job_id, "job-a");
    torture(st, &req);
    req.kind = INSP_TRIALS;
    torture(st, &req);
    req.kind = INSP_TRIAL;
    req.trial_number = 1;
    torture(st, &req);
    json_set_alloc_funcs(malloc, free);
    store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_query_values),
        cmocka_unit_test(test_documents),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
