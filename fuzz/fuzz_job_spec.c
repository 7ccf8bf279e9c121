/* fuzz_job_spec.c: POST /jobs bodies (JobSpecFromClient) through codec_job_spec_parse, which
 * ends with spec_validate as the server's handler does. A spec that parses must satisfy
 * every rule of SPEC §2, validate again unchanged, and round-trip through the encoder to an
 * equal spec and the same text; a refused body must give a 422 error body that reads back. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "core/spec.h"
#include "fuzz.h"

/* The value rules of SPEC §2 on a spec that parsed, checked here independently of
 * spec_validate so that a rule it forgets shows up. */
static void check_valid(const zbso_job_spec *s)
{
    bool has_default = false;
    FUZZ_CHECK(s->n_batch_sizes >= 1 && s->n_batch_sizes <= ZBSO_MAX_BATCH_SIZES);
    for (size_t i = 0; i < s->n_batch_sizes; i++) {
        FUZZ_CHECK(s->batch_sizes[i] > 0);
        FUZZ_CHECK(i == 0 || s->batch_sizes[i - 1] < s->batch_sizes[i]); /* sorted, distinct */
        has_default |= s->batch_sizes[i] == s->default_batch_size;
    }
    FUZZ_CHECK(has_default);
    size_t prefix = strnlen(s->job_id_prefix, sizeof s->job_id_prefix);
    FUZZ_CHECK(prefix >= 1 && prefix <= ZBSO_ID_MAX);
    size_t id = strnlen(s->job_id, sizeof s->job_id);
    FUZZ_CHECK(id <= ZBSO_ID_MAX);
    FUZZ_CHECK(id == 0 || strncmp(s->job_id, s->job_id_prefix, prefix) == 0);
    size_t gpu = strnlen(s->gpu_model, sizeof s->gpu_model);
    FUZZ_CHECK(gpu >= 1 && gpu <= ZBSO_GPU_MODEL_MAX);
    FUZZ_CHECK(s->eta_knob >= 0.0 && s->eta_knob <= 1.0);
    FUZZ_CHECK(!s->has_beta_knob || (s->beta_knob > 0.0 && s->beta_knob < INFINITY));
    FUZZ_CHECK(s->target_metric == s->target_metric && s->target_metric > -INFINITY &&
               s->target_metric < INFINITY);
    FUZZ_CHECK(s->max_epochs > 0 && s->num_pruning_rounds >= 0 && s->window_size >= 0);
    FUZZ_CHECK(s->mab_prior_mean >= -1e150 && s->mab_prior_mean <= 1e150);
    FUZZ_CHECK(s->mab_prior_precision >= 0.0 && s->mab_prior_precision <= 1e150);
    FUZZ_CHECK(s->mab_num_explorations >= 0);
    FUZZ_CHECK(!s->has_mab_seed || s->mab_seed <= INT64_MAX);
    FUZZ_CHECK(s->max_power > 0.0 && s->max_power < INFINITY);
    FUZZ_CHECK(s->number_of_gpus > 0);
    /* issue 21: a policy of the enum, a warm start only with smart or the server's
     * default, prior jobs non-empty ids in strictly ascending byte order */
    FUZZ_CHECK(s->policy == ZBSO_POLICY_ZEUS || s->policy == ZBSO_POLICY_SMART);
    FUZZ_CHECK(s->has_policy || s->policy == ZBSO_POLICY_ZEUS);
    FUZZ_CHECK(s->n_prior_jobs <= ZBSO_MAX_PRIOR_JOBS);
    FUZZ_CHECK(s->n_prior_jobs == 0 || s->warm_start);
    FUZZ_CHECK(!s->warm_start || !s->has_policy || s->policy == ZBSO_POLICY_SMART);
    for (size_t i = 0; i < s->n_prior_jobs; i++) {
        size_t n = strnlen(s->prior_jobs[i], sizeof s->prior_jobs[i]);
        FUZZ_CHECK(n >= 1 && n <= ZBSO_ID_MAX);
        FUZZ_CHECK(i == 0 || strcmp(s->prior_jobs[i - 1], s->prior_jobs[i]) < 0);
        FUZZ_CHECK(id == 0 || strcmp(s->prior_jobs[i], s->job_id) != 0);
    }
    /* issue 25: the job's own carbon intensity, when given, within 0..ZBSO_INTENSITY_MAX */
    FUZZ_CHECK(!s->has_carbon_intensity || (s->carbon_intensity_g_per_kwh >= 0.0 &&
                                            s->carbon_intensity_g_per_kwh <= ZBSO_INTENSITY_MAX));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zbso_job_spec spec, again, checked;
    zbso_err err;
    err_clear(&err);
    char *buf = fuzz_copy(data, size);
    int rc = codec_job_spec_parse(buf, size, &spec, &err);
    free(buf);
    if (rc < 0) {
        FUZZ_CHECK(rc == ZBSO_EINVAL && err.code == rc);
        FUZZ_CHECK(strcmp(err.where, "body") == 0);
        fuzz_check_error_body(&err, true);
        return 0;
    }
    FUZZ_CHECK(rc == 0);
    check_valid(&spec);

    /* Validating a validated spec changes nothing. */
    checked = spec;
    FUZZ_CHECK(spec_validate(&checked, &err) == 0);
    FUZZ_CHECK(spec_equal(&checked, &spec));

    /* The encoder's text (the CreatedJob answer, the client's request) reads back as the
     * same spec, and encodes to the same text again. */
    size_t len = 0, len2 = 0;
    char *text = codec_job_spec_dump(&spec, &len);
    FUZZ_CHECK(text != NULL && strlen(text) == len);
    char *copy = fuzz_copy(text, len);
    err_clear(&err);
    FUZZ_CHECK(codec_job_spec_parse(copy, len, &again, &err) == 0);
    FUZZ_CHECK(spec_equal(&spec, &again));
    char *text2 = codec_job_spec_dump(&again, &len2);
    FUZZ_CHECK(text2 != NULL && len2 == len && memcmp(text, text2, len) == 0);
    free(text2);
    free(copy);
    free(text);
    return 0;
}
