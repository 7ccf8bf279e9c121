/* fuzz_trial.c: PATCH /trials bodies (TrialId) and POST /report bodies (TrainingResult),
 * both parsers on every input. What parses satisfies SPEC §2's value rules and round-trips
 * through the encoder; a TrainingResult that parses is also a TrialId with the same three
 * fields (unknown fields are ignored); a refused body gives a 422 body that reads back. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "fuzz.h"

static void check_trial_id(const zbso_trial_id *t)
{
    size_t n = strnlen(t->job_id, sizeof t->job_id);
    FUZZ_CHECK(n >= 1 && n <= ZBSO_ID_MAX);
    FUZZ_CHECK(t->batch_size > 0 && t->trial_number > 0);
}

static bool trial_id_equal(const zbso_trial_id *a, const zbso_trial_id *b)
{
    return strcmp(a->job_id, b->job_id) == 0 && a->batch_size == b->batch_size &&
           a->trial_number == b->trial_number;
}

/* A failed parse: a 422 naming the body. */
static void check_refused(int rc, const zbso_err *err)
{
    FUZZ_CHECK(rc == ZBSO_EINVAL && err->code == rc);
    FUZZ_CHECK(strcmp(err->where, "body") == 0);
    fuzz_check_error_body(err, true);
}

static void round_trip_trial_id(const zbso_trial_id *t)
{
    zbso_trial_id again;
    zbso_err err;
    size_t len = 0;
    char *text = codec_trial_id_dump(t, &len);
    FUZZ_CHECK(text != NULL && strlen(text) == len);
    char *copy = fuzz_copy(text, len);
    err_clear(&err);
    FUZZ_CHECK(codec_trial_id_parse(copy, len, &again, &err) == 0);
    FUZZ_CHECK(trial_id_equal(t, &again));
    free(copy);
    free(text);
}

static void round_trip_result(const zbso_training_result *r)
{
    zbso_training_result again;
    zbso_err err;
    size_t len = 0;
    char *text = codec_training_result_dump(r, &len);
    FUZZ_CHECK(text != NULL && strlen(text) == len);
    char *copy = fuzz_copy(text, len);
    err_clear(&err);
    FUZZ_CHECK(codec_training_result_parse(copy, len, &again, &err) == 0);
    FUZZ_CHECK(trial_id_equal(&r->trial, &again.trial));
    /* Seventeen significant digits read back bit for bit. */
    FUZZ_CHECK(memcmp(&r->time, &again.time, sizeof r->time) == 0);
    FUZZ_CHECK(memcmp(&r->energy, &again.energy, sizeof r->energy) == 0);
    FUZZ_CHECK(memcmp(&r->metric, &again.metric, sizeof r->metric) == 0);
    FUZZ_CHECK(r->current_epoch == again.current_epoch);
    free(copy);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zbso_trial_id tid;
    zbso_training_result res;
    zbso_err err_t, err_r;
    err_clear(&err_t);
    err_clear(&err_r);
    char *buf = fuzz_copy(data, size);
    int rc_t = codec_trial_id_parse(buf, size, &tid, &err_t);
    int rc_r = codec_training_result_parse(buf, size, &res, &err_r);
    free(buf);

    if (rc_t == 0) {
        check_trial_id(&tid);
        round_trip_trial_id(&tid);
    } else {
        check_refused(rc_t, &err_t);
    }
    if (rc_r == 0) {
        FUZZ_CHECK(rc_t == 0 && trial_id_equal(&tid, &res.trial));
        check_trial_id(&res.trial);
        FUZZ_CHECK(isfinite(res.time) && res.time >= 0.0);
        FUZZ_CHECK(isfinite(res.energy) && res.energy >= 0.0);
        FUZZ_CHECK(isfinite(res.metric));
        FUZZ_CHECK(res.current_epoch >= 1);
        round_trip_result(&res);
    } else {
        check_refused(rc_r, &err_r);
    }
    return 0;
}
