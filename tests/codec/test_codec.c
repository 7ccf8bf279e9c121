/* test_codec.c: the JSON codec against exact texts and values: strict types, required
 * fields, limits, error shapes, and doubles that read back bit for bit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec/codec.h"
#include "core/spec.h"

/* Every field of seed 001, batch sizes unsorted on purpose. */
static const char FULL[] =
    "{\"job_id\":\"mnist-1\",\"job_id_prefix\":\"mnist\",\"batch_sizes\":[128,32,64],"
    "\"default_batch_size\":64,\"eta_knob\":0.25,\"beta_knob\":3,\"target_metric\":0.9,"
    "\"higher_is_better_metric\":false,\"max_epochs\":50,\"num_pruning_rounds\":1,"
    "\"window_size\":10,\"mab_prior_mean\":-1.5,\"mab_prior_precision\":0.5,"
    "\"mab_num_explorations\":3,\"mab_seed\":123,\"max_power\":3000,"
    "\"number_of_gpus\":4,\"gpu_model\":\"H200\",\"unknown_field\":{\"x\":[1]}}";

/* Required fields only; %s lets a test append or replace one. */
#define REQ_PREFIX "\"job_id_prefix\":\"p\""
#define REQ_BS "\"batch_sizes\":[8,16]"
#define REQ_DBS "\"default_batch_size\":8"
#define REQ_POWER "\"max_power\":300"
#define REQ_GPUS "\"number_of_gpus\":1"
#define REQ_MODEL "\"gpu_model\":\"A100\""

static int parse_spec(const char *text, zbso_job_spec *s, zbso_err *err)
{
    err_clear(err);
    return codec_job_spec_parse(text, strlen(text), s, err);
}

/* Parses the required fields with `extra` appended, e.g. ",\"eta_knob\":2". */
static int parse_with(const char *extra, zbso_job_spec *s, zbso_err *err)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{" REQ_PREFIX "," REQ_BS "," REQ_DBS "," REQ_POWER "," REQ_GPUS "," REQ_MODEL
             "%s}",
             extra);
    return parse_spec(text, s, err);
}

static void test_full_spec(void **state)
{
    zbso_job_spec s;
    zbso_err err;
    assert_int_equal(parse_spec(FULL, &s, &err), 0);
    assert_string_equal(s.job_id, "mnist-1");
    assert_string_equal(s.job_id_prefix, "mnist");
    assert_int_equal(s.n_batch_sizes, 3);
    assert_int_equal(s.batch_sizes[0], 32);
    assert_int_equal(s.batch_sizes[1], 64);
    assert_int_equal(s.batch_sizes[2], 128);
    assert_int_equal(s.default_batch_size, 64);
    assert_true(s.eta_knob == 0.25);
    assert_true(s.has_beta_knob);
    assert_true(s.beta_knob == 3.0);
    assert_true(s.target_metric == 0.9);
    assert_false(s.higher_is_better_metric);
    assert_int_equal(s.max_epochs, 50);
    assert_int_equal(s.num_pruning_rounds, 1);
    assert_int_equal(s.window_size, 10);
    assert_true(s.mab_prior_mean == -1.5);
    assert_true(s.mab_prior_precision == 0.5);
    assert_int_equal(s.mab_num_explorations, 3);
    assert_true(s.has_mab_seed);
    assert_int_equal(s.mab_seed, 123);
    assert_true(s.max_power == 3000.0);
    assert_int_equal(s.number_of_gpus, 4);
    assert_string_equal(s.gpu_model, "H200");
}

static void test_defaults(void **state)
{
    zbso_job_spec s;
    zbso_err err;
    assert_int_equal(parse_with("", &s, &err), 0);
    assert_string_equal(s.job_id, "");
    assert_true(s.eta_knob == 0.5);
    assert_true(s.has_beta_knob);
    assert_true(s.beta_knob == 2.0);
    assert_true(s.target_metric == 0.5);
    assert_true(s.higher_is_better_metric);
    assert_int_equal(s.max_epochs, 100);
    assert_int_equal(s.num_pruning_rounds, 2);
    assert_int_equal(s.window_size, 0);
    assert_int_equal(s.mab_num_explorations, 2);
    assert_false(s.has_mab_seed);
}

static void test_nullable_fields(void **state)
{
    zbso_job_spec s;
    zbso_err err;
    assert_int_equal(parse_with(",\"job_id\":null,\"beta_knob\":null,\"mab_seed\":null", &s,
                                &err),
                     0);
    assert_string_equal(s.job_id, "");
    assert_false(s.has_beta_knob);
    assert_false(s.has_mab_seed);
    assert_int_equal(parse_with(",\"mab_seed\":0", &s, &err), 0);
    assert_true(s.has_mab_seed);
    assert_int_equal(s.mab_seed, 0);
}

/* "job_id": "" is not "no job id": like Zeus, it does not start with the prefix (422), while
 * null (above) and absence ask for a generated one. */
static void test_empty_job_id_refused(void **state)
{
    zbso_job_spec s;
    zbso_err err;
    assert_int_equal(parse_with(",\"job_id\":\"\"", &s, &err), ZBSO_EINVAL);
    assert_string_equal(err.where, "body");
    assert_string_equal(err.loc, "job_id");
    assert_string_equal(err.msg, "Job_id() does not start with prefix(p).");
    size_t len = 0;
    char *body = codec_error_dump(&err, true, &len);
    assert_string_equal(body, "{\"detail\":[{\"loc\":[\"body\",\"job_id\"],\"msg\":"
                              "\"Job_id() does not start with prefix(p).\",\"type\":"
                              "\"value_error\"}]}");
    free(body);
    /* Other errors of the spec come first, as Zeus's field checks precede its root ones. */
    assert_int_equal(parse_with(",\"job_id\":\"\",\"eta_knob\":2", &s, &err), ZBSO_EINVAL);
    assert_string_equal(err.loc, "eta_knob");
}

static void expect_field_error(const char *text, const char *field, const char *needle)
{
    zbso_job_spec s;
    zbso_err err;
    assert_int_equal(parse_spec(text, &s, &err), ZBSO_EINVAL);
    assert_int_equal(err.code, ZBSO_EINVAL);
    assert_string_equal(err.where, "body");
    assert_string_equal(err.loc, field);
    if (!strstr(err.msg, needle))
        fail_msg("message \"%s\" lacks \"%s\"", err.msg, needle);
}

static void test_missing_required(void **state)
{
    static const struct { const char *field; const char *text; } cases[] = {
        {"job_id_prefix", "{" REQ_BS "," REQ_DBS "," REQ_POWER "," REQ_GPUS "," REQ_MODEL "}"},
        {"batch_sizes", "{" REQ_PREFIX "," REQ_DBS "," REQ_POWER "," REQ_GPUS "," REQ_MODEL "}"},
        {"default_batch_size", "{" REQ_PREFIX "," REQ_BS "," REQ_POWER "," REQ_GPUS ","
                               REQ_MODEL "}"},
        {"max_power", "{" REQ_PREFIX "," REQ_BS "," REQ_DBS "," REQ_GPUS "," REQ_MODEL "}"},
        {"number_of_gpus", "{" REQ_PREFIX "," REQ_BS "," REQ_DBS "," REQ_POWER "," REQ_MODEL
                           "}"},
        {"gpu_model", "{" REQ_PREFIX "," REQ_BS "," REQ_DBS "," REQ_POWER "," REQ_GPUS "}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zbso_job_spec s;
        zbso_err err;
        assert_int_equal(parse_spec(cases[i].text, &s, &err), ZBSO_EINVAL);
        assert_string_equal(err.loc, cases[i].field);
        assert_string_equal(err.msg, "field required");
    }
}

static void test_strict_types(void **state)
{
    char text[1024];
    static const struct { const char *extra; const char *field; const char *needle; } cases[] = {
        {",\"eta_knob\":\"0.5\"", "eta_knob", "got \"0.5\""},
        {",\"eta_knob\":null", "eta_knob", "must not be null"},
        {",\"higher_is_better_metric\":1", "higher_is_better_metric", "got 1"},
        {",\"higher_is_better_metric\":\"true\"", "higher_is_better_metric", "got \"true\""},
        {",\"max_epochs\":10.5", "max_epochs", "got 10.5"},
        {",\"max_epochs\":true", "max_epochs", "got true"},
        {",\"max_epochs\":1e30", "max_epochs", "must be an integer"},
        {",\"mab_seed\":-1", "mab_seed", "got -1"},
        {",\"mab_seed\":\"7\"", "mab_seed", "got \"7\""},
        {",\"job_id\":5", "job_id", "got 5"},
        {",\"beta_knob\":[2]", "beta_knob", "got [2]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(text, sizeof text,
                 "{" REQ_PREFIX "," REQ_BS "," REQ_DBS "," REQ_POWER "," REQ_GPUS ","
                 REQ_MODEL "%s}",
                 cases[i].extra);
        expect_field_error(text, cases[i].field, cases[i].needle);
    }
    expect_field_error("{\"job_id_prefix\":7," REQ_BS "," REQ_DBS "," REQ_POWER "," REQ_GPUS
                       "," REQ_MODEL "}",
                       "job_id_prefix", "must be a string, got 7");
    expect_field_error("{" REQ_PREFIX ",\"batch_sizes\":[8,\"16\"]," REQ_DBS "," REQ_POWER
                       "," REQ_GPUS "," REQ_MODEL "}",
                       "batch_sizes", "batch_sizes[1] must be an integer, got \"16\"");
    expect_field_error("{" REQ_PREFIX ",\"batch_sizes\":8," REQ_DBS "," REQ_POWER
                       "," REQ_GPUS "," REQ_MODEL "}",
                       "batch_sizes", "got 8");
    expect_field_error("{" REQ_PREFIX "," REQ_BS ",\"default_batch_size\":256.5,"
                       REQ_POWER "," REQ_GPUS "," REQ_MODEL "}",
                       "default_batch_size", "got 256.5");
}

static void test_integral_reals_accepted(void **state)
{
    zbso_job_spec s;
    zbso_err err;
    assert_int_equal(parse_spec("{" REQ_PREFIX ",\"batch_sizes\":[256.0,8],"
                                "\"default_batch_size\":256.0,\"max_power\":300,"
                                "\"number_of_gpus\":2.0," REQ_MODEL "}",
                                &s, &err),
                     0);
    assert_int_equal(s.batch_sizes[0], 8);
    assert_int_equal(s.batch_sizes[1], 256);
    assert_int_equal(s.default_batch_size, 256);
    assert_int_equal(s.number_of_gpus, 2);
}

static void test_string_limits(void **state)
{
    char prefix[ZBSO_ID_MAX + 2];
    char text[2048];
    zbso_job_spec s;
    zbso_err err;
    memset(prefix, 'a', sizeof prefix - 1);
    prefix[ZBSO_ID_MAX] = '\0'; /* exactly the maximum */
    snprintf(text, sizeof text,
             "{\"job_id_prefix\":\"%s\"," REQ_BS "," REQ_DBS "," REQ_POWER "," REQ_GPUS
             "," REQ_MODEL "}",
             prefix);
    assert_int_equal(parse_spec(text, &s, &err), 0);
    assert_int_equal(strlen(s.job_id_prefix), ZBSO_ID_MAX);

    prefix[ZBSO_ID_MAX] = 'a'; /* one over */
    prefix[ZBSO_ID_MAX + 1] = '\0';
    snprintf(text, sizeof text,
             "{\"job_id_prefix\":\"%s\"," REQ_BS "," REQ_DBS "," REQ_POWER "," REQ_GPUS
             "," REQ_MODEL "}",
             prefix);
    expect_field_error(text, "job_id_prefix", "301 bytes long, over the maximum of 300");

    char model[ZBSO_GPU_MODEL_MAX + 2];
    memset(model, 'g', sizeof model - 1);
    model[sizeof model - 1] = '\0';
    snprintf(text, sizeof text,
             "{" REQ_PREFIX "," REQ_BS "," REQ_DBS "," REQ_POWER "," REQ_GPUS
             ",\"gpu_model\":\"%s\"}",
             model);
    expect_field_error(text, "gpu_model", "256 bytes long, over the maximum of 255");
}

static void test_too_many_batch_sizes(void **state)
{
    char text[8192];
    size_t n = (size_t)snprintf(text, sizeof text, "{" REQ_PREFIX ",\"batch_sizes\":[");
    for (int i = 1; i <= ZBSO_MAX_BATCH_SIZES + 1; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s%d", i > 1 ? "," : "", i);
    snprintf(text + n, sizeof text - n,
             "],\"default_batch_size\":1," REQ_POWER "," REQ_GPUS "," REQ_MODEL "}");
    expect_field_error(text, "batch_sizes", "257 entries, over the maximum of 256");
}

static void test_malformed_body(void **state)
{
    zbso_job_spec s;
    zbso_err err;
    assert_int_equal(parse_spec("{\"job_id_prefix\": ", &s, &err), ZBSO_EINVAL);
    assert_string_equal(err.where, "body");
    assert_string_equal(err.loc, "");
    if (!strstr(err.msg, "malformed JSON at line 1, column"))
        fail_msg("message: %s", err.msg);

    assert_int_equal(parse_spec("[1,2]", &s, &err), ZBSO_EINVAL);
    assert_string_equal(err.loc, "");
    assert_string_equal(err.msg, "the body must be a JSON object, got [1,2]");

    assert_int_equal(codec_job_spec_parse(NULL, 0, &s, &err), ZBSO_EINVAL);
    assert_string_equal(err.loc, "");

    /* Duplicate keys: which copy wins would be a guess. */
    assert_int_equal(parse_spec("{\"a\":1,\"a\":2}", &s, &err), ZBSO_EINVAL);
    if (!strstr(err.msg, "duplicate"))
        fail_msg("message: %s", err.msg);
}

static void test_value_validation_runs(void **state)
{
    zbso_job_spec s;
    zbso_err err;
    assert_int_equal(parse_with(",\"eta_knob\":1.5", &s, &err), ZBSO_EINVAL);
    assert_string_equal(err.loc, "eta_knob");
    assert_string_equal(err.where, "body");
}

static void test_spec_dump_exact(void **state)
{
    zbso_job_spec s;
    zbso_err err;
    size_t len = 0;
    assert_int_equal(parse_with(",\"beta_knob\":null,\"eta_knob\":0.1", &s, &err), 0);
    char *text = codec_job_spec_dump(&s, &len);
    assert_non_null(text);
    assert_string_equal(
        text,
        "{\"job_id\":null,\"job_id_prefix\":\"p\",\"batch_sizes\":[8,16],"
        "\"default_batch_size\":8,\"eta_knob\":0.10000000000000001,\"beta_knob\":null,"
        "\"target_metric\":0.5,\"higher_is_better_metric\":true,\"max_epochs\":100,"
        "\"num_pruning_rounds\":2,\"window_size\":0,\"mab_prior_mean\":0.0,"
        "\"mab_prior_precision\":0.0,\"mab_num_explorations\":2,\"mab_seed\":null,"
        "\"max_power\":300.0,\"number_of_gpus\":1,\"gpu_model\":\"A100\"}");
    assert_int_equal(len, strlen(text));
    free(text);
}

static void test_spec_round_trip(void **state)
{
    zbso_job_spec a, b;
    zbso_err err;
    assert_int_equal(parse_spec(FULL, &a, &err), 0);
    a.eta_knob = 1.0 / 3.0;
    a.mab_prior_mean = -1e-300;
    a.target_metric = 0.1 + 0.2;
    a.max_power = 1234.5678901234567;
    char *text = codec_job_spec_dump(&a, NULL);
    assert_non_null(text);
    assert_int_equal(codec_job_spec_parse(text, strlen(text), &b, &err), 0);
    free(text);
    assert_true(memcmp(&a.eta_knob, &b.eta_knob, sizeof(double)) == 0);
    assert_true(memcmp(&a.mab_prior_mean, &b.mab_prior_mean, sizeof(double)) == 0);
    assert_true(memcmp(&a.target_metric, &b.target_metric, sizeof(double)) == 0);
    assert_true(memcmp(&a.max_power, &b.max_power, sizeof(double)) == 0);
    assert_string_equal(b.job_id, "mnist-1");
    assert_int_equal(b.mab_seed, 123);
    assert_true(spec_equal(&a, &b));
}

/* Issue 21: policy, warm_start and prior_jobs (SPEC §2). */
static void test_policy_fields(void **state)
{
    zbso_job_spec s;
    zbso_err err;
    /* absent or null: the server's default decides (has_policy false) */
    assert_int_equal(parse_with("", &s, &err), 0);
    assert_false(s.has_policy);
    assert_int_equal(s.policy, ZBSO_POLICY_ZEUS);
    assert_false(s.warm_start);
    assert_int_equal(s.n_prior_jobs, 0);
    assert_int_equal(parse_with(",\"policy\":null,\"prior_jobs\":null", &s, &err), 0);
    assert_false(s.has_policy);
    assert_int_equal(s.n_prior_jobs, 0);
    assert_int_equal(parse_with(",\"policy\":\"zeus\"", &s, &err), 0);
    assert_true(s.has_policy);
    assert_int_equal(s.policy, ZBSO_POLICY_ZEUS);
    assert_int_equal(parse_with(",\"policy\":\"smart\",\"warm_start\":true", &s, &err), 0);
    assert_true(s.has_policy);
    assert_int_equal(s.policy, ZBSO_POLICY_SMART);
    assert_true(s.warm_start);
    /* prior_jobs: sorted into byte order, and they ask for a warm start */
    assert_int_equal(parse_with(",\"policy\":\"smart\",\"prior_jobs\":[\"p-b\",\"p-a\"]", &s,
                                &err), 0);
    assert_true(s.warm_start);
    assert_int_equal(s.n_prior_jobs, 2);
    assert_string_equal(s.prior_jobs[0], "p-a");
    assert_string_equal(s.prior_jobs[1], "p-b");
    /* without a policy the spec is valid: the server decides whether its default can */
    assert_int_equal(parse_with(",\"warm_start\":true", &s, &err), 0);
    assert_false(s.has_policy);

    static const struct {
        const char *extra, *loc, *msg;
    } bad[] = {
        {",\"policy\":\"Smart\"", "policy", "got \"Smart\""},
        {",\"policy\":\"optuna\"", "policy", "got \"optuna\""},
        {",\"policy\":\"\"", "policy", "\"zeus\" or \"smart\""},
        {",\"policy\":1", "policy", "got 1"},
        {",\"policy\":[\"smart\"]", "policy", "got [\"smart\"]"},
        {",\"warm_start\":\"true\"", "warm_start", "true or false"},
        {",\"warm_start\":1", "warm_start", "true or false"},
        {",\"warm_start\":null", "warm_start", "must not be null"},
        {",\"prior_jobs\":\"p-a\"", "prior_jobs", "a list of job ids"},
        {",\"prior_jobs\":[\"p-a\",7]", "prior_jobs", "prior_jobs[1] must be a job id"},
        {",\"prior_jobs\":[\"\"]", "prior_jobs", "prior_jobs[0] must be a job id of 1 to"},
        {",\"policy\":\"smart\",\"prior_jobs\":[\"p-a\",\"p-a\"]", "prior_jobs",
         "job p-a appears more than once"},
        {",\"job_id\":\"p-self\",\"policy\":\"smart\",\"prior_jobs\":[\"p-self\"]",
         "prior_jobs", "names the job itself (p-self)"},
        {",\"policy\":\"smart\",\"warm_start\":false,\"prior_jobs\":[\"p-a\"]", "warm_start",
         "warm_start is false but prior_jobs names 1 job"},
        {",\"policy\":\"zeus\",\"warm_start\":true", "policy",
         "needs policy \"smart\", got policy \"zeus\""},
        {",\"policy\":\"zeus\",\"prior_jobs\":[\"p-a\"]", "policy", "needs policy \"smart\""},
        {",\"prior_jobs\":[\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\"]",
         "prior_jobs", "9 entries, over the maximum of 8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse_with(bad[i].extra, &s, &err), ZBSO_EINVAL);
        if (strcmp(err.loc, bad[i].loc) != 0 || strstr(err.msg, bad[i].msg) == NULL)
            fail_msg("%s: loc %s msg %s", bad[i].extra, err.loc, err.msg);
        assert_string_equal(err.where, "body");
    }
    /* an id of ZBSO_ID_MAX bytes is one; one more byte is not */
    char extra[1024], id[ZBSO_ID_MAX + 2];
    memset(id, 'x', ZBSO_ID_MAX);
    id[ZBSO_ID_MAX] = '\0';
    snprintf(extra, sizeof extra, ",\"policy\":\"smart\",\"prior_jobs\":[\"%s\"]", id);
    assert_int_equal(parse_with(extra, &s, &err), 0);
    assert_string_equal(s.prior_jobs[0], id);
    snprintf(extra, sizeof extra, ",\"policy\":\"smart\",\"prior_jobs\":[\"%sy\"]", id);
    assert_int_equal(parse_with(extra, &s, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "(301 bytes)"));
}

/* The client's request carries what the spec sets; the CreatedJob answer only what makes
 * the job differ from Zeus's, so a Zeus-shaped job is answered byte for byte as before. */
static void test_policy_dump(void **state)
{
    static const char ZEUS_SHAPE[] =
        "{\"job_id\":null,\"job_id_prefix\":\"p\",\"batch_sizes\":[8,16],"
        "\"default_batch_size\":8,\"eta_knob\":0.5,\"beta_knob\":2.0,"
        "\"target_metric\":0.5,\"higher_is_better_metric\":true,\"max_epochs\":100,"
        "\"num_pruning_rounds\":2,\"window_size\":0,\"mab_prior_mean\":0.0,"
        "\"mab_prior_precision\":0.0,\"mab_num_explorations\":2,\"mab_seed\":null,"
        "\"max_power\":300.0,\"number_of_gpus\":1,\"gpu_model\":\"A100\"";
    zbso_job_spec s, back;
    zbso_err err;
    char want[2048];
    assert_int_equal(parse_with(",\"policy\":\"zeus\"", &s, &err), 0);
    char *req = codec_job_spec_dump(&s, NULL), *ans = codec_created_job_dump(&s, NULL);
    snprintf(want, sizeof want, "%s,\"policy\":\"zeus\"}", ZEUS_SHAPE);
    assert_string_equal(req, want);
    snprintf(want, sizeof want, "%s}", ZEUS_SHAPE);
    assert_string_equal(ans, want);
    free(req);
    free(ans);

    assert_int_equal(parse_with(",\"policy\":\"smart\",\"prior_jobs\":[\"q\\n\",\"a\"]", &s,
                                &err), 0);
    req = codec_job_spec_dump(&s, NULL);
    ans = codec_created_job_dump(&s, NULL);
    snprintf(want, sizeof want,
             "%s,\"policy\":\"smart\",\"warm_start\":true,\"prior_jobs\":[\"a\",\"q\\n\"]}",
             ZEUS_SHAPE);
    assert_string_equal(req, want);
    assert_string_equal(ans, want);
    assert_int_equal(codec_job_spec_parse(req, strlen(req), &back, &err), 0);
    assert_true(spec_equal(&s, &back));
    assert_true(back.has_policy);
    free(req);
    free(ans);

    /* the inspection documents always show all three */
    assert_int_equal(parse_with("", &s, &err), 0);
    char *doc = codec_json_text(codec_job_spec_json(&s), NULL);
    snprintf(want, sizeof want,
             "%s,\"policy\":\"zeus\",\"warm_start\":false,\"prior_jobs\":[]}", ZEUS_SHAPE);
    assert_string_equal(doc, want);
    free(doc);
}

/* Issue 25: the job's own carbon intensity. Absent or null: none (the server's); a
 * number from 0 to ZBSO_INTENSITY_MAX; written by every emitter exactly when given (the
 * inspection documents too: no CO2e field without an intensity, SPEC §5). */
static void test_carbon_intensity(void **state)
{
    static const char ZEUS_SHAPE[] =
        "{\"job_id\":null,\"job_id_prefix\":\"p\",\"batch_sizes\":[8,16],"
        "\"default_batch_size\":8,\"eta_knob\":0.5,\"beta_knob\":2.0,"
        "\"target_metric\":0.5,\"higher_is_better_metric\":true,\"max_epochs\":100,"
        "\"num_pruning_rounds\":2,\"window_size\":0,\"mab_prior_mean\":0.0,"
        "\"mab_prior_precision\":0.0,\"mab_num_explorations\":2,\"mab_seed\":null,"
        "\"max_power\":300.0,\"number_of_gpus\":1,\"gpu_model\":\"A100\"";
    zbso_job_spec s, back;
    zbso_err err;
    char want[2048];
    (void)state;
    assert_int_equal(parse_with("", &s, &err), 0);
    assert_false(s.has_carbon_intensity);
    assert_int_equal(parse_with(",\"carbon_intensity_g_per_kwh\":null", &s, &err), 0);
    assert_false(s.has_carbon_intensity);
    char *req = codec_job_spec_dump(&s, NULL), *ans = codec_created_job_dump(&s, NULL);
    char *doc = codec_json_text(codec_job_spec_json(&s), NULL);
    assert_null(strstr(req, "carbon"));
    assert_null(strstr(ans, "carbon"));
    assert_null(strstr(doc, "carbon"));
    free(req);
    free(ans);
    free(doc);

    /* 0 is an intensity (a grid of renewables), not "none"; the bounds are inclusive */
    assert_int_equal(parse_with(",\"carbon_intensity_g_per_kwh\":0", &s, &err), 0);
    assert_true(s.has_carbon_intensity);
    assert_true(s.carbon_intensity_g_per_kwh == 0.0);
    assert_int_equal(parse_with(",\"carbon_intensity_g_per_kwh\":100000", &s, &err), 0);
    assert_true(s.carbon_intensity_g_per_kwh == ZBSO_INTENSITY_MAX);

    assert_int_equal(parse_with(",\"carbon_intensity_g_per_kwh\":412.5", &s, &err), 0);
    req = codec_job_spec_dump(&s, NULL);
    ans = codec_created_job_dump(&s, NULL);
    doc = codec_json_text(codec_job_spec_json(&s), NULL);
    snprintf(want, sizeof want, "%s,\"carbon_intensity_g_per_kwh\":412.5}", ZEUS_SHAPE);
    assert_string_equal(req, want);
    assert_string_equal(ans, want);
    snprintf(want, sizeof want,
             "%s,\"policy\":\"zeus\",\"warm_start\":false,\"prior_jobs\":[],"
             "\"carbon_intensity_g_per_kwh\":412.5}", ZEUS_SHAPE);
    assert_string_equal(doc, want);
    assert_int_equal(codec_job_spec_parse(req, strlen(req), &back, &err), 0);
    assert_true(spec_equal(&s, &back));
    free(req);
    free(ans);
    free(doc);

    /* equality: given against not given, and two values */
    zbso_job_spec none;
    assert_int_equal(parse_with("", &none, &err), 0);
    assert_false(spec_equal(&s, &none));
    back.carbon_intensity_g_per_kwh = 412.25;
    assert_false(spec_equal(&s, &back));

    static const struct {
        const char *extra, *msg;
    } bad[] = {
        {",\"carbon_intensity_g_per_kwh\":-1", "between 0 and 100000 g CO2e per kWh, got -1"},
        {",\"carbon_intensity_g_per_kwh\":-0.001", "got -0.001"},
        {",\"carbon_intensity_g_per_kwh\":100000.01", "got 100000.01"},
        {",\"carbon_intensity_g_per_kwh\":1e300", "got 1e+300"},
        {",\"carbon_intensity_g_per_kwh\":\"400\"", "a finite number"},
        {",\"carbon_intensity_g_per_kwh\":true", "a finite number"},
        {",\"carbon_intensity_g_per_kwh\":[400]", "a finite number"},
        {",\"carbon_intensity_g_per_kwh\":{}", "a finite number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse_with(bad[i].extra, &s, &err), ZBSO_EINVAL);
        if (strcmp(err.loc, "carbon_intensity_g_per_kwh") != 0 ||
            strstr(err.msg, bad[i].msg) == NULL)
            fail_msg("%s: loc %s msg %s", bad[i].extra, err.loc, err.msg);
        assert_string_equal(err.where, "body");
    }
}

static void test_trial_id(void **state)
{
    zbso_trial_id t;
    zbso_err err;
    const char *in = "{\"job_id\":\"j-1\",\"batch_size\":32,\"trial_number\":7,\"x\":1}";
    assert_int_equal(codec_trial_id_parse(in, strlen(in), &t, &err), 0);
    assert_string_equal(t.job_id, "j-1");
    assert_int_equal(t.batch_size, 32);
    assert_int_equal(t.trial_number, 7);
    char *text = codec_trial_id_dump(&t, NULL);
    assert_string_equal(text, "{\"job_id\":\"j-1\",\"batch_size\":32,\"trial_number\":7}");
    free(text);

    in = "{\"job_id\":\"j-1\",\"batch_size\":32}";
    assert_int_equal(codec_trial_id_parse(in, strlen(in), &t, &err), ZBSO_EINVAL);
    assert_string_equal(err.loc, "trial_number");
    assert_string_equal(err.msg, "field required");
}

static void test_training_result(void **state)
{
    zbso_training_result r;
    zbso_err err;
    const char *in = "{\"job_id\":\"j-1\",\"batch_size\":32,\"trial_number\":2,"
                     "\"time\":12.5,\"energy\":3000,\"metric\":0.75,\"current_epoch\":3}";
    assert_int_equal(codec_training_result_parse(in, strlen(in), &r, &err), 0);
    assert_string_equal(r.trial.job_id, "j-1");
    assert_int_equal(r.trial.trial_number, 2);
    assert_true(r.time == 12.5);
    assert_true(r.energy == 3000.0);
    assert_true(r.metric == 0.75);
    assert_int_equal(r.current_epoch, 3);
    char *text = codec_training_result_dump(&r, NULL);
    assert_string_equal(text, "{\"job_id\":\"j-1\",\"batch_size\":32,\"trial_number\":2,"
                              "\"time\":12.5,\"energy\":3000.0,\"metric\":0.75,"
                              "\"current_epoch\":3}");
    free(text);

    in = "{\"job_id\":\"j-1\",\"batch_size\":32,\"trial_number\":2,"
         "\"time\":\"12\",\"energy\":3000,\"metric\":0.75,\"current_epoch\":3}";
    assert_int_equal(codec_training_result_parse(in, strlen(in), &r, &err), ZBSO_EINVAL);
    assert_string_equal(err.loc, "time");
    assert_string_equal(err.msg, "time must be a finite number, got \"12\"");
}

static void test_report_response(void **state)
{
    zbso_report_response r = {.stop_train = true, .converged = false};
    zbso_report_response back;
    zbso_err err;
    snprintf(r.message, sizeof r.message, "cost \"9\" over 2 * 4");
    char *text = codec_report_response_dump(&r, NULL);
    assert_string_equal(text, "{\"stop_train\":true,\"converged\":false,"
                              "\"message\":\"cost \\\"9\\\" over 2 * 4\"}");
    assert_int_equal(codec_report_response_parse(text, strlen(text), &back, &err), 0);
    free(text);
    assert_true(back.stop_train);
    assert_false(back.converged);
    assert_string_equal(back.message, r.message);
}

static void test_error_bodies(void **state)
{
    zbso_err err;
    char msg[256];
    err_clear(&err);
    err_set_field(&err, ZBSO_EINVAL, "body", "eta_knob", "eta_knob must be in [0, 1], got 2");
    char *text = codec_error_dump(&err, true, NULL);
    assert_string_equal(text, "{\"detail\":[{\"loc\":[\"body\",\"eta_knob\"],"
                              "\"msg\":\"eta_knob must be in [0, 1], got 2\","
                              "\"type\":\"value_error\"}]}");
    assert_int_equal(codec_error_message(text, strlen(text), msg, sizeof msg), 0);
    assert_string_equal(msg, "body.eta_knob: eta_knob must be in [0, 1], got 2");
    free(text);

    err_set_field(&err, ZBSO_EINVAL, "query", "job_id", "field required");
    text = codec_error_dump(&err, true, NULL);
    assert_string_equal(text, "{\"detail\":[{\"loc\":[\"query\",\"job_id\"],"
                              "\"msg\":\"field required\",\"type\":\"value_error\"}]}");
    free(text);

    err_set(&err, ZBSO_EINVAL, "malformed");
    text = codec_error_dump(&err, true, NULL);
    assert_string_equal(text, "{\"detail\":[{\"loc\":[\"body\"],\"msg\":\"malformed\","
                              "\"type\":\"value_error\"}]}");
    free(text);

    err_set(&err, ZBSO_ENOTFOUND, "job \"x\" not found");
    text = codec_error_dump(&err, false, NULL);
    assert_string_equal(text, "{\"message\":\"job \\\"x\\\" not found\"}");
    assert_int_equal(codec_error_message(text, strlen(text), msg, sizeof msg), 0);
    assert_string_equal(msg, "job \"x\" not found");
    free(text);

    assert_int_equal(codec_error_message("{\"other\":1}", 11, msg, sizeof msg), ZBSO_EINVAL);
    assert_string_equal(msg, "");
    assert_int_equal(codec_error_message("<html>", 6, msg, sizeof msg), ZBSO_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_spec),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_nullable_fields),
        cmocka_unit_test(test_empty_job_id_refused),
        cmocka_unit_test(test_missing_required),
        cmocka_unit_test(test_strict_types),
        cmocka_unit_test(test_integral_reals_accepted),
        cmocka_unit_test(test_string_limits),
        cmocka_unit_test(test_too_many_batch_sizes),
        cmocka_unit_test(test_malformed_body),
        cmocka_unit_test(test_value_validation_runs),
        cmocka_unit_test(test_spec_dump_exact),
        cmocka_unit_test(test_spec_round_trip),
        cmocka_unit_test(test_policy_fields),
        cmocka_unit_test(test_policy_dump),
        cmocka_unit_test(test_carbon_intensity),
        cmocka_unit_test(test_trial_id),
        cmocka_unit_test(test_training_result),
        cmocka_unit_test(test_report_response),
        cmocka_unit_test(test_error_bodies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
