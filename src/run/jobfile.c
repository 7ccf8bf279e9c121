/* jobfile.c: reads `zbso run`'s job.json: a JobSpec (parsed and checked by src/codec, so
 * it is validated exactly as the server validates it) plus run's own fields. Does no I/O:
 * the caller reads the file. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "core/spec.h"
#include "monitor/monitor.h"
#include "run/runInt.h"

static const char *const gpu_fact_names[3] = {"max_power", "number_of_gpus", "gpu_model"};

/* Rewrites a codec error as one naming the job file and the field. Returns err->code. */
static int name_file(const char *what, zbso_err *err)
{
    char msg[ZBSO_ERR_MSG_MAX], loc[ZBSO_ERR_LOC_MAX];
    memcpy(msg, err->msg, sizeof msg);
    memcpy(loc, err->loc, sizeof loc);
    if (loc[0] != '\0' && strncmp(msg, loc, strlen(loc)) != 0)
        return err_set(err, err->code, "job file %s: %s: %s", what, loc, msg);
    return err_set(err, err->code, "job file %s: %s", what, msg);
}

/* Reads run's own optional fields out of obj into *out and removes them, turning "epochs"
 * into "max_epochs". Returns 0 or ZBSO_EINVAL naming the field and its value. */
static int take_run_fields(const char *what, json_t *obj, run_job_file *out, zbso_err *err)
{
    json_t *v;
    if ((v = json_object_get(obj, "learning_rate")) != NULL && !json_is_null(v)) {
        double lr = json_is_number(v) ? json_number_value(v) : NAN;
        if (!(isfinite(lr) && lr > 0))
            return err_set(err, ZBSO_EINVAL,
                           "job file %s: learning_rate must be a number > 0", what);
        out->has_lr = true;
        out->learning_rate = lr;
    }
    if ((v = json_object_get(obj, "optimizer")) != NULL && !json_is_null(v)) {
        if (!json_is_string(v) || json_string_length(v) > RUN_OPTIMIZER_MAX)
            return err_set(err, ZBSO_EINVAL,
                           "job file %s: optimizer must be a string of at most %d bytes "
                           "(e.g. \"adam\", \"sgd\")", what, RUN_OPTIMIZER_MAX);
        snprintf(out->optimizer, sizeof out->optimizer, "%s", json_string_value(v));
    }
    if ((v = json_object_get(obj, "seed")) != NULL && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return err_set(err, ZBSO_EINVAL,
                           "job file %s: seed must be a non-negative integer", what);
        out->has_seed = true;
        out->seed = (uint64_t)json_integer_value(v);
    }
    if ((v = json_object_get(obj, "epochs")) != NULL && !json_is_null(v)) {
        json_t *max = json_object_get(obj, "max_epochs");
        if (!json_is_integer(v))
            return err_set(err, ZBSO_EINVAL, "job file %s: epochs must be an integer", what);
        if (max != NULL && !(json_is_integer(max) &&
                             json_integer_value(max) == json_integer_value(v)))
            return err_set(err, ZBSO_EINVAL,
                           "job file %s: epochs (%lld) and max_epochs differ; give one",
                           what, (long long)json_integer_value(v));
        if (json_object_set(obj, "max_epochs", v) < 0)
            return err_set(err, ZBSO_ENOMEM, "out of memory reading job file %s", what);
    }
    json_object_del(obj, "learning_rate");
    json_object_del(obj, "optimizer");
    json_object_del(obj, "seed");
    json_object_del(obj, "epochs");
    return 0;
}

int run_job_file_parse(const char *what, const char *text, size_t len, run_job_file *out,
                       zbso_err *err)
{
    json_error_t jerr;
    json_t *obj = NULL;
    char *dumped = NULL;
    int rc = 0;

    memset(out, 0, sizeof *out);
    obj = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (obj == NULL || !json_is_object(obj)) {
        rc = err_set(err, ZBSO_EINVAL, "job file %s is not a JSON object: %s (line %d)",
                     what, obj == NULL ? jerr.text : "another JSON value",
                     obj == NULL ? jerr.line : 1);
        goto out;
    }
    if ((rc = take_run_fields(what, obj, out, err)) < 0)
        goto out;
    /* Absent GPU facts get stand-ins so the codec checks everything else now; the
     * monitor's values replace them in run_job_file_finish. */
    for (int i = 0; i < 3; i++) {
        json_t *v = json_object_get(obj, gpu_fact_names[i]);
        out->has_gpu_facts[i] = v != NULL && !json_is_null(v);
        if (!out->has_gpu_facts[i] &&
            json_object_set_new(obj, gpu_fact_names[i],
                                i == 2 ? json_string("unknown") : json_integer(1)) < 0) {
            rc = err_set(err, ZBSO_ENOMEM, "out of memory reading job file %s", what);
            goto out;
        }
    }
    if ((dumped = json_dumps(obj, JSON_COMPACT)) == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory reading job file %s", what);
        goto out;
    }
    if ((rc = codec_job_spec_parse(dumped, strlen(dumped), &out->spec, err)) < 0)
        rc = name_file(what, err);
out:
    free(dumped);
    json_decref(obj);
    return rc;
}

int run_job_file_finish(run_job_file *jf, unsigned n_gpus, unsigned max_power_limit_mw,
                        const char *gpu_model, zbso_err *err)
{
    for (int i = 0; i < 3; i++) {
        if (jf->has_gpu_facts[i])
            continue;
        if (n_gpus == 0)
            return err_set(err, ZBSO_ECONFIG,
                           "the job file has no %s and no GPU is measured (--no-gpu); give "
                           "max_power, number_of_gpus and gpu_model in the job file",
                           gpu_fact_names[i]);
        if (i == 0)
            jf->spec.max_power = mon_job_max_power_w(max_power_limit_mw, n_gpus);
        else if (i == 1)
            jf->spec.number_of_gpus = (int64_t)n_gpus;
        else
            snprintf(jf->spec.gpu_model, sizeof jf->spec.gpu_model, "%s", gpu_model);
    }
    int rc = spec_validate(&jf->spec, err);
    if (rc < 0) {
        char msg[ZBSO_ERR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        rc = err_set(err, rc, "job spec with the monitor's GPU facts: %s", msg);
    }
    return rc;
}
