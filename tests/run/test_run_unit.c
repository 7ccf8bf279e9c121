/* test_run_unit.c: cmocka tests of the pure parts of `zbso run`: learning rate scaling,
 * placeholder substitution and the job file's own fields. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "run/runInt.h"

static void test_lr_scaling(void **state)
{
    (void)state;
    /* Square root for adam, adamw, adadelta in any case; linear otherwise. */
    assert_true(fabs(run_lr_scale(0.001, "adam", 32, 128) - 0.002) < 1e-15);
    assert_true(fabs(run_lr_scale(0.001, "AdamW", 32, 8) - 0.0005) < 1e-15);
    assert_true(fabs(run_lr_scale(0.01, "adadelta", 64, 16) - 0.005) < 1e-15);
    assert_true(fabs(run_lr_scale(0.1, "sgd", 32, 128) - 0.4) < 1e-15);
    assert_true(fabs(run_lr_scale(0.1, "", 32, 16) - 0.05) < 1e-15);
    assert_true(fabs(run_lr_scale(0.1, NULL, 32, 32) - 0.1) < 1e-15);
    assert_true(fabs(run_lr_scale(0.1, "adamax", 32, 128) - 0.4) < 1e-15);
}

static void test_subst(void **state)
{
    (void)state;
    run_subst s = {.batch_size = 64, .has_lr = true, .lr = 0.25, .seed = 7, .epochs = 30,
                   .target_metric = 0.92};
    char out[128];
    zbso_err err;

    assert_int_equal(run_subst_arg("--bs={bs}", &s, out, sizeof out, &err), 0);
    assert_string_equal(out, "--bs=64");
    assert_int_equal(run_subst_arg("{batch_size}x{lr}/{learning_rate}", &s, out, sizeof out,
                                   &err), 0);
    assert_string_equal(out, "64x0.25/0.25");
    assert_int_equal(run_subst_arg("s{seed}e{epochs}t{target_metric}", &s, out, sizeof out,
                                   &err), 0);
    assert_string_equal(out, "s7e30t0.92");
    /* Braces that are not placeholders stay, and placeholders after them still count. */
    assert_int_equal(run_subst_arg("{\"a\":{bs}} {x} {{bs}} {", &s, out, sizeof out, &err), 0);
    assert_string_equal(out, "{\"a\":64} {x} {64} {");
    assert_int_equal(run_subst_arg("", &s, out, sizeof out, &err), 0);
    assert_string_equal(out, "");
    /* {lr} without a learning rate names the argument. */
    s.has_lr = false;
    assert_int_equal(run_subst_arg("--lr={lr}", &s, out, sizeof out, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "--lr={lr}"));
    assert_non_null(strstr(err.msg, "learning_rate"));
    /* Output over the capacity is refused, not cut. */
    char small[8];
    assert_int_equal(run_subst_arg("{bs}{bs}{bs}{bs}", &s, small, sizeof small, &err),
                     ZBSO_EINVAL);
    assert_int_equal(run_subst_arg("1234567", &s, small, sizeof small, &err), 0);
    assert_string_equal(small, "1234567");
    assert_int_equal(run_subst_arg("12345678", &s, small, sizeof small, &err), ZBSO_EINVAL);
}

static const char base_spec[] =
    "{\"job_id_prefix\":\"j\",\"batch_sizes\":[64,16,32],\"default_batch_size\":32,"
    "\"learning_rate\":0.01,\"optimizer\":\"Adam\",\"seed\":5,\"epochs\":12%s}";

/* Parses base_spec with extra appended inside the object. */
static int parse_with(const char *extra, run_job_file *jf, zbso_err *err)
{
    char text[1024];
    snprintf(text, sizeof text, base_spec, extra);
    return run_job_file_parse("job.json", text, strlen(text), jf, err);
}

static void test_job_file(void **state)
{
    (void)state;
    run_job_file jf;
    zbso_err err;

    assert_int_equal(parse_with("", &jf, &err), 0);
    assert_true(jf.has_lr);
    assert_true(jf.learning_rate == 0.01);
    assert_string_equal(jf.optimizer, "Adam");
    assert_true(jf.has_seed);
    assert_int_equal(jf.seed, 5);
    assert_int_equal(jf.spec.max_epochs, 12);
    assert_false(jf.has_gpu_facts[0] || jf.has_gpu_facts[1] || jf.has_gpu_facts[2]);
    /* Facts from the monitor: floor(mW / 1000) W per GPU. */
    assert_int_equal(run_job_file_finish(&jf, 4, 700500, "NVIDIA H200", &err), 0);
    assert_true(jf.spec.max_power == 2800.0);
    assert_int_equal(jf.spec.number_of_gpus, 4);
    assert_string_equal(jf.spec.gpu_model, "NVIDIA H200");
    assert_int_equal(jf.spec.batch_sizes[0], 16);

    /* Given facts win; without a monitor they are required. */
    assert_int_equal(parse_with(",\"max_power\":300,\"number_of_gpus\":1", &jf, &err), 0);
    assert_int_equal(run_job_file_finish(&jf, 0, 0, "", &err), ZBSO_ECONFIG);
    assert_non_null(strstr(err.msg, "gpu_model"));
    assert_int_equal(parse_with(",\"max_power\":300,\"number_of_gpus\":1,\"gpu_model\":\"A\"",
                                &jf, &err), 0);
    assert_int_equal(run_job_file_finish(&jf, 8, 100000, "B", &err), 0);
    assert_true(jf.spec.max_power == 300.0);
    assert_string_equal(jf.spec.gpu_model, "A");

    /* Bad values name the file and the field. */
    assert_int_equal(parse_with(",\"max_epochs\":13", &jf, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "epochs"));
    assert_int_equal(parse_with(",\"eta_knob\":2", &jf, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "job.json"));
    assert_non_null(strstr(err.msg, "eta_knob"));
    const char *bad_lr = "{\"job_id_prefix\":\"j\",\"batch_sizes\":[8],\"default_batch_size\":8,"
                         "\"learning_rate\":-1}";
    assert_int_equal(run_job_file_parse("x.json", bad_lr, strlen(bad_lr), &jf, &err),
                     ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "learning_rate"));
    assert_int_equal(run_job_file_parse("x.json", "[1]", 3, &jf, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "x.json"));
    assert_int_equal(run_job_file_parse("x.json", "{\"job_id_prefix\":", 17, &jf, &err),
                     ZBSO_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lr_scaling),
        cmocka_unit_test(test_subst),
        cmocka_unit_test(test_job_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
