/* json.c: the JSON codec of codec.h on jansson. Checks presence and JSON types only; value
 * rules live in core/spec.c so every entry point validates alike. No HTTP, no I/O. */
#include "codec/codec.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/powerlimit.h"
#include "core/spec.h"
#include "util/buf.h"
#include "util/mem.h"

/* Decoding: duplicate keys are refused because which copy wins would be a guess; any
 * top-level value is parsed so a non-object body gets a message naming what it was. */
#define DECODE_FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY)
#define DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(17))
#define DESCRIBE_MAX 80 /* bytes of a JSON value quoted in a message */
#define DUMP_MAX (1 << 24) /* bytes of any text written: far above the largest value */

/* Where dump_text writes: a buffer, and whether an append failed. */
typedef struct dump_sink {
    zbso_buf buf;
    bool failed;
} dump_sink;

/* jansson's dump callback: appends to the sink; after one failure every later append
 * fails too, so text after a lost piece is never kept. */
static int dump_append(const char *data, size_t size, void *arg)
{
    dump_sink *d = arg;
    if (d->failed || buf_addn(&d->buf, data, size) < 0) {
        d->failed = true;
        return -1;
    }
    return 0;
}

/* v as JSON text in a string from mem_malloc (the caller frees it; *len, when not NULL,
 * its length), or NULL when memory runs out, the text would pass DUMP_MAX or v cannot be
 * written. Not json_dumps: jansson 2.14 ignores a failure to append an object key, so
 * under memory pressure json_dumps returns the text with the key left out. */
static char *dump_text(const json_t *v, size_t flags, size_t *len)
{
    dump_sink d = {.failed = false};
    buf_init(&d.buf, DUMP_MAX);
    if (json_dump_callback(v, dump_append, &d, flags) != 0 || d.failed) {
        buf_free(&d.buf);
        return NULL;
    }
    return buf_take(&d.buf, len);
}

/* Writes a short compact rendering of v into buf (cut with "..." past DESCRIBE_MAX). */
static void describe(const json_t *v, char *buf, size_t cap)
{
    char *text = dump_text(v, JSON_ENCODE_ANY | DUMP_FLAGS, NULL);
    if (!text) {
        snprintf(buf, cap, "(unprintable)");
        return;
    }
    if (strlen(text) > DESCRIBE_MAX)
        snprintf(buf, cap, "%.*s...", DESCRIBE_MAX, text);
    else
        snprintf(buf, cap, "%s", text);
    mem_free(text);
}

/* Fails with "<field> must be <what>, got <value>". Returns ZBSO_EINVAL. */
static int type_error(zbso_err *err, const char *field, const char *what, const json_t *v)
{
    char got[DESCRIBE_MAX + 8];
    describe(v, got, sizeof got);
    return err_set_field(err, ZBSO_EINVAL, "body", field, "%s must be %s, got %s", field,
                         what, got);
}

/* Parses buf into a JSON object in *out (caller decrefs). Returns 0, ZBSO_EINVAL for
 * malformed JSON (jansson's text and position) or a body that is not an object, or
 * ZBSO_ENOMEM. */
static int load_object(const char *buf, size_t len, json_t **out, zbso_err *err)
{
    json_error_t jerr;
    json_t *root = json_loadb(buf ? buf : "", buf ? len : 0, DECODE_FLAGS, &jerr);
    *out = NULL;
    /* jansson gives no text (or says so) when an allocation failed. It may also report
     * one as a syntax error: in the lexer its allocations fail as bad tokens. */
    if (!root && (!jerr.text[0] || json_error_code(&jerr) == json_error_out_of_memory))
        return err_set_field(err, ZBSO_ENOMEM, "body", NULL,
                             "out of memory parsing %zu bytes of JSON", len);
    if (!root)
        return err_set_field(err, ZBSO_EINVAL, "body", NULL,
                             "malformed JSON at line %d, column %d (byte %d): %s",
                             jerr.line, jerr.column, jerr.position, jerr.text);
    if (!json_is_object(root)) {
        char got[DESCRIBE_MAX + 8];
        describe(root, got, sizeof got);
        json_decref(root);
        return err_set_field(err, ZBSO_EINVAL, "body", NULL,
                             "the body must be a JSON object, got %s", got);
    }
    *out = root;
    return 0;
}

/* Looks up key. Returns 1 when present and not null (*v set), 0 when absent or null
 * and allowed to be, or ZBSO_EINVAL: absent and required ("field required"), or null
 * and not nullable. */
static int lookup(json_t *obj, const char *key, bool required, bool nullable, json_t **v,
                  zbso_err *err)
{
    *v = json_object_get(obj, key);
    if (!*v) {
        if (required)
            return err_set_field(err, ZBSO_EINVAL, "body", key, "field required");
        return 0;
    }
    if (json_is_null(*v)) {
        if (nullable)
            return 0;
        return err_set_field(err, ZBSO_EINVAL, "body", key,
                             "%s must not be null (leave it out for the default)", key);
    }
    return 1;
}

/* Converts a JSON number that must be integral to int64 (256.0 is 256). Returns 0, or
 * ZBSO_EINVAL naming field and the value. */
static int as_int(const json_t *v, const char *field, int64_t *out, zbso_err *err)
{
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return 0;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        /* 2^63 is exactly representable; anything in [-2^63, 2^63) converts exactly. */
        if (isfinite(d) && d == floor(d) && d >= -9223372036854775808.0 &&
            d < 9223372036854775808.0) {
            *out = (int64_t)d;
            return 0;
        }
    }
    return type_error(err, field, "an integer", v);
}

/* Reads an integer field; absent leaves *out as it was (the default). */
static int get_int(json_t *obj, const char *key, bool required, int64_t *out,
                   zbso_err *err)
{
    json_t *v;
    int rc = lookup(obj, key, required, false, &v, err);
    if (rc <= 0)
        return rc;
    return as_int(v, key, out, err);
}

/* Reads a finite number (integers accepted). With present, reports whether a value was
 * given (false for absent or null); absent leaves *out as it was (the default). */
static int get_double(json_t *obj, const char *key, bool required, bool nullable,
                      double *out, bool *present, zbso_err *err)
{
    json_t *v;
    int rc = lookup(obj, key, required, nullable, &v, err);
    if (present)
        *present = rc == 1;
    if (rc <= 0)
        return rc;
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return type_error(err, key, "a finite number", v);
    *out = json_number_value(v);
    return 0;
}

/* Reads true/false only: 1, "true" and null are refused. */
static int get_bool(json_t *obj, const char *key, bool required, bool *out, zbso_err *err)
{
    json_t *v;
    int rc = lookup(obj, key, required, false, &v, err);
    if (rc <= 0)
        return rc;
    if (!json_is_boolean(v))
        return type_error(err, key, "true or false", v);
    *out = json_is_true(v);
    return 0;
}

/* Reads a string of at most max bytes into out (max + 1 bytes). Longer strings are
 * refused, not cut: a cut job id would name another job. */
static int get_string(json_t *obj, const char *key, bool required, bool nullable,
                      char *out, size_t max, zbso_err *err)
{
    json_t *v;
    int rc = lookup(obj, key, required, nullable, &v, err);
    if (rc <= 0)
        return rc;
    if (!json_is_string(v))
        return type_error(err, key, "a string", v);
    size_t n = json_string_length(v);
    if (n > max)
        return err_set_field(err, ZBSO_EINVAL, "body", key,
                             "%s is %zu bytes long, over the maximum of %zu: \"%.40s...\"",
                             key, n, max, json_string_value(v));
    if (memchr(json_string_value(v), '\0', n))
        return err_set_field(err, ZBSO_EINVAL, "body", key, "%s contains a NUL character",
                             key);
    memcpy(out, json_string_value(v), n);
    out[n] = '\0';
    return 0;
}

/* Reads the required list of integers, at most ZBSO_MAX_BATCH_SIZES of them; order,
 * sign and duplicates are spec_validate's business. */
static int get_batch_sizes(json_t *obj, zbso_job_spec *s, zbso_err *err)
{
    json_t *v;
    int rc = lookup(obj, "batch_sizes", true, false, &v, err);
    if (rc <= 0)
        return rc;
    if (!json_is_array(v))
        return type_error(err, "batch_sizes", "a list of integers", v);
    size_t n = json_array_size(v);
    if (n > ZBSO_MAX_BATCH_SIZES)
        return err_set_field(err, ZBSO_EINVAL, "body", "batch_sizes",
                             "batch_sizes has %zu entries, over the maximum of %d", n,
                             ZBSO_MAX_BATCH_SIZES);
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(v, i);
        if (as_int(item, "batch_sizes", &s->batch_sizes[i], err) < 0) {
            char got[DESCRIBE_MAX + 8];
            describe(item, got, sizeof got);
            return err_set_field(err, ZBSO_EINVAL, "body", "batch_sizes",
                                 "batch_sizes[%zu] must be an integer, got %s", i, got);
        }
    }
    s->n_batch_sizes = n;
    return 0;
}

/* Reads mab_seed: null or absent (seed from the OS) or a non-negative integer. */
static int get_mab_seed(json_t *obj, zbso_job_spec *s, zbso_err *err)
{
    json_t *v;
    int64_t seed;
    int rc = lookup(obj, "mab_seed", false, true, &v, err);
    s->has_mab_seed = false;
    if (rc <= 0)
        return rc;
    if (as_int(v, "mab_seed", &seed, err) < 0 || seed < 0)
        return type_error(err, "mab_seed", "null or a non-negative integer", v);
    s->has_mab_seed = true;
    s->mab_seed = (uint64_t)seed;
    return 0;
}

/* Reads policy: absent or null leaves the server's default (has_policy false), else
 * "zeus" or "smart". */
static int get_policy(json_t *obj, zbso_job_spec *s, zbso_err *err)
{
    json_t *v;
    int rc = lookup(obj, "policy", false, true, &v, err);
    s->has_policy = false;
    s->policy = ZBSO_POLICY_ZEUS;
    if (rc <= 0)
        return rc;
    if (!json_is_string(v) || spec_policy_parse(json_string_value(v), &s->policy) < 0 ||
        strlen(json_string_value(v)) != json_string_length(v))
        return type_error(err, "policy", "\"zeus\" or \"smart\"", v);
    s->has_policy = true;
    return 0;
}

/* Reads prior_jobs (absent or null: none) and warm_start; an explicit "warm_start": false
 * beside prior_jobs is refused, since the list asks for a warm start. The ids' values are
 * spec_validate's business. */
static int get_warm_start(json_t *obj, zbso_job_spec *s, zbso_err *err)
{
    json_t *v;
    int rc = get_bool(obj, "warm_start", false, &s->warm_start, err);
    if (rc < 0)
        return rc;
    s->n_prior_jobs = 0;
    if ((rc = lookup(obj, "prior_jobs", false, true, &v, err)) <= 0)
        return rc;
    if (!json_is_array(v))
        return type_error(err, "prior_jobs", "a list of job ids", v);
    size_t n = json_array_size(v);
    if (n > ZBSO_MAX_PRIOR_JOBS)
        return err_set_field(err, ZBSO_EINVAL, "body", "prior_jobs",
                             "prior_jobs has %zu entries, over the maximum of %d", n,
                             ZBSO_MAX_PRIOR_JOBS);
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(v, i);
        char field[32];
        snprintf(field, sizeof field, "prior_jobs[%zu]", i);
        if (!json_is_string(item)) {
            char got[DESCRIBE_MAX + 8];
            describe(item, got, sizeof got);
            return err_set_field(err, ZBSO_EINVAL, "body", "prior_jobs",
                                 "%s must be a job id (a string), got %s", field, got);
        }
        size_t len = json_string_length(item);
        if (len == 0 || len > ZBSO_ID_MAX || memchr(json_string_value(item), '\0', len))
            return err_set_field(err, ZBSO_EINVAL, "body", "prior_jobs",
                                 "%s must be a job id of 1 to %d bytes without NUL, got "
                                 "\"%.40s%s\" (%zu bytes)", field, ZBSO_ID_MAX,
                                 json_string_value(item), len > 40 ? "..." : "", len);
        memcpy(s->prior_jobs[i], json_string_value(item), len + 1);
    }
    s->n_prior_jobs = n;
    if (n > 0 && json_is_false(json_object_get(obj, "warm_start")))
        return err_set_field(err, ZBSO_EINVAL, "body", "warm_start",
                             "warm_start is false but prior_jobs names %zu job%s, which asks "
                             "for a warm start: leave warm_start out or set it true", n,
                             n == 1 ? "" : "s");
    return 0;
}

/* The GPU facts of JobSpecFromClient: what a client measures instead of reading. */
static const char *const gpu_facts[] = {"max_power", "number_of_gpus", "gpu_model"};

/* Fills s from obj but for the GPU facts; presence and types only. */
static int job_spec_from_json(json_t *obj, zbso_job_spec *s, zbso_err *err)
{
    int rc;
    bool beta;
    if ((rc = get_string(obj, "job_id", false, true, s->job_id, ZBSO_ID_MAX, err)) < 0 ||
        (rc = get_string(obj, "job_id_prefix", true, false, s->job_id_prefix, ZBSO_ID_MAX,
                         err)) < 0 ||
        (rc = get_batch_sizes(obj, s, err)) < 0 ||
        (rc = get_int(obj, "default_batch_size", true, &s->default_batch_size, err)) < 0 ||
        (rc = get_double(obj, "eta_knob", false, false, &s->eta_knob, NULL, err)) < 0 ||
        (rc = get_double(obj, "beta_knob", false, true, &s->beta_knob, &beta, err)) < 0 ||
        (rc = get_double(obj, "target_metric", false, false, &s->target_metric, NULL,
                         err)) < 0 ||
        (rc = get_bool(obj, "higher_is_better_metric", false, &s->higher_is_better_metric,
                       err)) < 0 ||
        (rc = get_int(obj, "max_epochs", false, &s->max_epochs, err)) < 0 ||
        (rc = get_int(obj, "num_pruning_rounds", false, &s->num_pruning_rounds, err)) < 0 ||
        (rc = get_int(obj, "window_size", false, &s->window_size, err)) < 0 ||
        (rc = get_double(obj, "mab_prior_mean", false, false, &s->mab_prior_mean, NULL,
                         err)) < 0 ||
        (rc = get_double(obj, "mab_prior_precision", false, false, &s->mab_prior_precision,
                         NULL, err)) < 0 ||
        (rc = get_int(obj, "mab_num_explorations", false, &s->mab_num_explorations,
                      err)) < 0 ||
        (rc = get_mab_seed(obj, s, err)) < 0 || (rc = get_policy(obj, s, err)) < 0 ||
        (rc = get_warm_start(obj, s, err)) < 0 ||
        (rc = get_double(obj, "carbon_intensity_g_per_kwh", false, true,
                         &s->carbon_intensity_g_per_kwh, &s->has_carbon_intensity, err)) < 0)
        return rc;
    /* beta_knob: absent keeps the default (2.0), null disables early stopping. */
    if (json_object_get(obj, "beta_knob"))
        s->has_beta_knob = beta;
    return 0;
}

/* Fills the GPU facts of s from obj; presence and types only. */
static int gpu_facts_from_json(json_t *obj, zbso_job_spec *s, zbso_err *err)
{
    int rc;
    if ((rc = get_double(obj, gpu_facts[0], true, false, &s->max_power, NULL, err)) < 0 ||
        (rc = get_int(obj, gpu_facts[1], true, &s->number_of_gpus, err)) < 0 ||
        (rc = get_string(obj, gpu_facts[2], true, false, s->gpu_model, ZBSO_GPU_MODEL_MAX,
                         err)) < 0)
        return rc;
    return 0;
}

/* True when obj's job_id is a string, even "" (a job_id the client gave). */
static bool gave_job_id(json_t *obj)
{
    return json_is_string(json_object_get(obj, "job_id"));
}

int codec_job_spec_check(zbso_job_spec *s, bool job_id_given, zbso_err *err)
{
    int rc = spec_validate(s, err);
    /* "job_id": "" is a job id that does not start with the prefix (Zeus: 422), not a
     * request for a generated one (null or absent), which s->job_id cannot tell. */
    if (rc == 0 && job_id_given && s->job_id[0] == '\0')
        rc = spec_check_job_id("", s->job_id_prefix, err);
    return rc;
}

int codec_job_spec_parse(const char *buf, size_t len, zbso_job_spec *out, zbso_err *err)
{
    json_t *obj = NULL;
    int rc;
    spec_defaults(out);
    if ((rc = load_object(buf, len, &obj, err)) < 0 ||
        (rc = job_spec_from_json(obj, out, err)) < 0 ||
        (rc = gpu_facts_from_json(obj, out, err)) < 0)
        goto out;
    rc = codec_job_spec_check(out, gave_job_id(obj), err);
out:
    json_decref(obj);
    return rc;
}

int codec_job_spec_parse_partial(const char *buf, size_t len, zbso_job_spec *out,
                                 codec_spec_given *given, zbso_err *err)
{
    json_t *obj = NULL;
    int rc;
    spec_defaults(out);
    memset(given, 0, sizeof *given);
    if ((rc = load_object(buf, len, &obj, err)) < 0)
        goto out;
    given->job_id = gave_job_id(obj);
    for (size_t i = sizeof gpu_facts / sizeof gpu_facts[0]; i-- > 0;)
        if (json_object_get(obj, gpu_facts[i]))
            given->gpu_fact = gpu_facts[i];
    rc = job_spec_from_json(obj, out, err);
out:
    json_decref(obj);
    return rc;
}

/* Fills t from obj (TrialId's three fields). */
static int trial_id_from_json(json_t *obj, zbso_trial_id *t, zbso_err *err)
{
    int rc;
    if ((rc = get_string(obj, "job_id", true, false, t->job_id, ZBSO_ID_MAX, err)) < 0 ||
        (rc = get_int(obj, "batch_size", true, &t->batch_size, err)) < 0 ||
        (rc = get_int(obj, "trial_number", true, &t->trial_number, err)) < 0)
        return rc;
    return 0;
}

int codec_trial_id_parse(const char *buf, size_t len, zbso_trial_id *out, zbso_err *err)
{
    json_t *obj = NULL;
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = load_object(buf, len, &obj, err)) < 0)
        goto out;
    if ((rc = trial_id_from_json(obj, out, err)) < 0)
        goto out;
    rc = trial_id_validate(out, err);
out:
    json_decref(obj);
    return rc;
}

int codec_training_result_parse(const char *buf, size_t len, zbso_training_result *out,
                                zbso_err *err)
{
    json_t *obj = NULL;
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = load_object(buf, len, &obj, err)) < 0)
        goto out;
    if ((rc = trial_id_from_json(obj, &out->trial, err)) < 0 ||
        (rc = get_double(obj, "time", true, false, &out->time, NULL, err)) < 0 ||
        (rc = get_double(obj, "energy", true, false, &out->energy, NULL, err)) < 0 ||
        (rc = get_double(obj, "metric", true, false, &out->metric, NULL, err)) < 0 ||
        (rc = get_int(obj, "current_epoch", true, &out->current_epoch, err)) < 0)
        goto out;
    rc = result_validate(out, err);
out:
    json_decref(obj);
    return rc;
}

int codec_report_response_parse(const char *buf, size_t len, zbso_report_response *out,
                                zbso_err *err)
{
    json_t *obj = NULL, *msg;
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = load_object(buf, len, &obj, err)) < 0)
        goto out;
    if ((rc = get_bool(obj, "stop_train", true, &out->stop_train, err)) < 0 ||
        (rc = get_bool(obj, "converged", true, &out->converged, err)) < 0 ||
        (rc = lookup(obj, "message", true, false, &msg, err)) < 0)
        goto out;
    if (!json_is_string(msg)) {
        rc = type_error(err, "message", "a string", msg);
        goto out;
    }
    /* The server's message is informational: cutting a long one loses nothing decided. */
    snprintf(out->message, sizeof out->message, "%s", json_string_value(msg));
    rc = 0;
out:
    json_decref(obj);
    return rc;
}

/* Emitting. Each set_* returns 0, or -1 when allocation failed or a double is not
 * finite (json_real refuses NaN and infinities). */

static int set_new(json_t *obj, const char *key, json_t *v)
{
    return v ? json_object_set_new(obj, key, v) : -1;
}

static int set_int(json_t *obj, const char *key, int64_t v)
{
    return set_new(obj, key, json_integer((json_int_t)v));
}

static int set_real(json_t *obj, const char *key, double v)
{
    return set_new(obj, key, json_real(v));
}

static int set_str(json_t *obj, const char *key, const char *v)
{
    return set_new(obj, key, json_string(v));
}

/* A JSON string of text; bytes that are not valid UTF-8 (a job id from a raw query string
 * quoted in a message) become '?' so an error body can always be written. */
static json_t *text_string(const char *text)
{
    json_t *v = json_string(text);
    if (v)
        return v;
    size_t n = strlen(text);
    char *copy = mem_malloc(n + 1);
    if (!copy)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        copy[i] = (unsigned char)text[i] >= 0x80 ? '?' : text[i];
    v = json_string(copy);
    mem_free(copy);
    return v;
}

/* Serializes obj (consumed) to a string from mem_malloc. NULL on failure. */
static char *finish(json_t *obj, bool ok, size_t *len)
{
    char *text = ok && obj ? dump_text(obj, DUMP_FLAGS, len) : NULL;
    json_decref(obj);
    return text;
}

/* Which of the spec's fields beyond Zeus (policy, warm_start, prior_jobs) an emitter
 * writes; carbon_intensity_g_per_kwh (issue 25) is written by each exactly when the spec
 * has one, so that a job without it shows no CO2e field anywhere (SPEC §5). */
typedef enum spec_extras {
    EXTRAS_GIVEN,     /* the client's request: those the spec sets (policy iff has_policy) */
    EXTRAS_NOT_ZEUS,  /* the CreatedJob answer: only those that differ from Zeus's policy */
    EXTRAS_ALL,       /* the inspection documents: every one */
} spec_extras;

/* Adds the fields beyond Zeus to o as extras says. Returns 0 or -1 (out of memory). */
static int put_extras(json_t *o, const zbso_job_spec *s, spec_extras extras)
{
    bool all = extras == EXTRAS_ALL;
    bool policy = all || (extras == EXTRAS_GIVEN ? s->has_policy
                                                 : s->policy != ZBSO_POLICY_ZEUS);
    if (policy && set_str(o, "policy", spec_policy_name(s->policy)) < 0)
        return -1;
    if ((all || s->warm_start) && set_new(o, "warm_start", json_boolean(s->warm_start)) < 0)
        return -1;
    if (all || s->n_prior_jobs > 0) {
        json_t *ids = json_array();
        if (set_new(o, "prior_jobs", ids) < 0)
            return -1;
        for (size_t i = 0; i < s->n_prior_jobs; i++)
            if (json_array_append_new(ids, text_string(s->prior_jobs[i])) < 0)
                return -1;
    }
    if (s->has_carbon_intensity &&
        set_real(o, "carbon_intensity_g_per_kwh", s->carbon_intensity_g_per_kwh) < 0)
        return -1;
    return 0;
}

static struct json_t *spec_json(const zbso_job_spec *s, spec_extras extras)
{
    json_t *o = json_object(), *bs = json_array();
    bool ok = o && bs;
    if (ok)
        for (size_t i = 0; i < s->n_batch_sizes && ok; i++)
            ok = json_array_append_new(bs, json_integer((json_int_t)s->batch_sizes[i])) == 0;
    ok = ok &&
         set_new(o, "job_id", s->job_id[0] ? json_string(s->job_id) : json_null()) == 0 &&
         set_str(o, "job_id_prefix", s->job_id_prefix) == 0 &&
         json_object_set(o, "batch_sizes", bs) == 0 &&
         set_int(o, "default_batch_size", s->default_batch_size) == 0 &&
         set_real(o, "eta_knob", s->eta_knob) == 0 &&
         set_new(o, "beta_knob", s->has_beta_knob ? json_real(s->beta_knob) : json_null()) ==
             0 &&
         set_real(o, "target_metric", s->target_metric) == 0 &&
         set_new(o, "higher_is_better_metric", json_boolean(s->higher_is_better_metric)) ==
             0 &&
         set_int(o, "max_epochs", s->max_epochs) == 0 &&
         set_int(o, "num_pruning_rounds", s->num_pruning_rounds) == 0 &&
         set_int(o, "window_size", s->window_size) == 0 &&
         set_real(o, "mab_prior_mean", s->mab_prior_mean) == 0 &&
         set_real(o, "mab_prior_precision", s->mab_prior_precision) == 0 &&
         set_int(o, "mab_num_explorations", s->mab_num_explorations) == 0 &&
         /* Seeds above INT64_MAX cannot be parsed, so they are never stored. */
         s->mab_seed <= INT64_MAX &&
         set_new(o, "mab_seed",
                 s->has_mab_seed ? json_integer((json_int_t)s->mab_seed) : json_null()) == 0 &&
         set_real(o, "max_power", s->max_power) == 0 &&
         set_int(o, "number_of_gpus", s->number_of_gpus) == 0 &&
         set_str(o, "gpu_model", s->gpu_model) == 0 && put_extras(o, s, extras) == 0;
    json_decref(bs);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

struct json_t *codec_job_spec_json(const zbso_job_spec *s)
{
    return spec_json(s, EXTRAS_ALL);
}

char *codec_job_spec_dump(const zbso_job_spec *s, size_t *len)
{
    json_t *o = spec_json(s, EXTRAS_GIVEN);
    return finish(o, o != NULL, len);
}

char *codec_created_job_dump(const zbso_job_spec *s, size_t *len)
{
    json_t *o = spec_json(s, EXTRAS_NOT_ZEUS);
    return finish(o, o != NULL, len);
}

char *codec_json_text(struct json_t *v, size_t *len)
{
    return finish(v, v != NULL, len);
}

/* Adds TrialId's fields to o. */
static bool put_trial_id(json_t *o, const zbso_trial_id *t)
{
    return o && set_str(o, "job_id", t->job_id) == 0 &&
           set_int(o, "batch_size", t->batch_size) == 0 &&
           set_int(o, "trial_number", t->trial_number) == 0;
}

char *codec_trial_id_dump(const zbso_trial_id *t, size_t *len)
{
    json_t *o = json_object();
    bool ok = put_trial_id(o, t);
    return finish(o, ok, len);
}

char *codec_training_result_dump(const zbso_training_result *r, size_t *len)
{
    json_t *o = json_object();
    bool ok = put_trial_id(o, &r->trial) && set_real(o, "time", r->time) == 0 &&
              set_real(o, "energy", r->energy) == 0 &&
              set_real(o, "metric", r->metric) == 0 &&
              set_int(o, "current_epoch", r->current_epoch) == 0;
    return finish(o, ok, len);
}

char *codec_report_response_dump(const zbso_report_response *r, size_t *len)
{
    json_t *o = json_object();
    bool ok = o && set_new(o, "stop_train", json_boolean(r->stop_train)) == 0 &&
              set_new(o, "converged", json_boolean(r->converged)) == 0 &&
              set_new(o, "message", text_string(r->message)) == 0;
    return finish(o, ok, len);
}

char *codec_error_dump(const zbso_err *err, bool detail, size_t *len)
{
    json_t *o = json_object();
    bool ok = o != NULL;
    if (ok && detail) {
        json_t *loc = json_array(), *item = json_object(), *list = json_array();
        ok = loc && item && list &&
             json_array_append_new(loc, text_string(err->where[0] ? err->where : "body")) ==
                 0 &&
             (!err->loc[0] || json_array_append_new(loc, text_string(err->loc)) == 0) &&
             json_object_set(item, "loc", loc) == 0 &&
             set_new(item, "msg", text_string(err->msg)) == 0 &&
             set_str(item, "type", "value_error") == 0 &&
             json_array_append(list, item) == 0 && json_object_set(o, "detail", list) == 0;
        json_decref(loc);
        json_decref(item);
        json_decref(list);
    } else if (ok) {
        ok = set_new(o, "message", text_string(err->msg)) == 0;
    }
    return finish(o, ok, len);
}

int codec_error_message(const char *buf, size_t len, char *msg, size_t cap)
{
    json_error_t jerr;
    json_t *root = json_loadb(buf ? buf : "", buf ? len : 0, DECODE_FLAGS, &jerr);
    json_t *m = json_object_get(root, "message"); /* NULL-safe on a NULL root */
    json_t *first, *loc;
    size_t used = 0;
    int rc = 0;
    if (cap)
        msg[0] = '\0';
    if (json_is_string(m)) {
        snprintf(msg, cap, "%s", json_string_value(m));
        goto out;
    }
    /* 422: "<loc joined by '.'>: <msg>" of the first detail entry. */
    first = json_array_get(json_object_get(root, "detail"), 0);
    loc = json_object_get(first, "loc");
    m = json_object_get(first, "msg");
    if (!json_is_string(m)) {
        rc = ZBSO_EINVAL;
        goto out;
    }
    for (size_t i = 0; i < json_array_size(loc) && used < cap; i++) {
        json_t *part = json_array_get(loc, i);
        int n = json_is_string(part)
                    ? snprintf(msg + used, cap - used, "%s%s", i ? "." : "",
                               json_string_value(part))
                    : snprintf(msg + used, cap - used, "%s%" JSON_INTEGER_FORMAT,
                               i ? "." : "", json_integer_value(part));
        used += n > 0 ? (size_t)n : 0;
    }
    if (used < cap)
        snprintf(msg + used, cap - used, "%s%s", used ? ": " : "", json_string_value(m));
out:
    json_decref(root);
    return rc;
}

/* ---- power-limit profiles (SPEC §6.1) ---- */

/* Reads an optional positive integer (null or absent: 0). */
static int get_positive_or_null(json_t *obj, const char *key, int64_t *out, zbso_err *err)
{
    json_t *v;
    int rc = lookup(obj, key, false, true, &v, err);
    *out = 0;
    if (rc <= 0)
        return rc;
    if (as_int(v, key, out, err) < 0 || *out <= 0)
        return type_error(err, key, "null or a positive integer", v);
    return 0;
}

/* Reads measurements: a list of {"power_limit", "time", "energy"} objects. */
static int get_measurements(json_t *obj, zbso_power_profile *p, zbso_err *err)
{
    json_t *v;
    char got[DESCRIBE_MAX + 8];
    int rc = lookup(obj, "measurements", true, false, &v, err);
    if (rc <= 0)
        return rc;
    if (!json_is_array(v))
        return type_error(err, "measurements", "a list of {power_limit, time, energy}", v);
    size_t n = json_array_size(v);
    if (n > ZBSO_MAX_POWER_LIMITS)
        return err_set_field(err, ZBSO_EINVAL, "body", "measurements",
                             "measurements has %zu entries, over the maximum of %d", n,
                             ZBSO_MAX_POWER_LIMITS);
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(v, i);
        json_t *pl = json_object_get(m, "power_limit"), *t = json_object_get(m, "time");
        json_t *e = json_object_get(m, "energy");
        zbso_pl_measurement *out = &p->m[i];
        if (!json_is_object(m) || !pl || as_int(pl, "power_limit", &out->power_limit_w, err) < 0 ||
            !json_is_number(t) || !json_is_number(e)) {
            describe(m, got, sizeof got);
            return err_set_field(err, ZBSO_EINVAL, "body", "measurements",
                                 "measurements[%zu] must be {\"power_limit\": integer W, "
                                 "\"time\": s, \"energy\": J}, got %s", i, got);
        }
        out->time_s = json_number_value(t);
        out->energy_j = json_number_value(e);
    }
    p->n = n;
    return 0;
}

int codec_power_profile_parse(const char *buf, size_t len, char *job_id,
                              zbso_power_profile *out, zbso_err *err)
{
    json_t *obj = NULL;
    zbso_err why;
    int rc;
    memset(out, 0, offsetof(zbso_power_profile, m));
    job_id[0] = '\0';
    if ((rc = load_object(buf, len, &obj, err)) < 0 ||
        (rc = get_string(obj, "job_id", true, false, job_id, ZBSO_ID_MAX, err)) < 0 ||
        (rc = get_int(obj, "batch_size", true, &out->batch_size, err)) < 0 ||
        (rc = get_positive_or_null(obj, "trial_number", &out->trial_number, err)) < 0 ||
        (rc = get_bool(obj, "observer", false, &out->observer, err)) < 0 ||
        (rc = get_positive_or_null(obj, "profile_steps", &out->profile_steps, err)) < 0 ||
        (rc = get_measurements(obj, out, err)) < 0)
        goto out;
    if (job_id[0] == '\0') {
        rc = err_set_field(err, ZBSO_EINVAL, "body", "job_id", "job_id must not be empty");
        goto out;
    }
    if (out->batch_size <= 0) {
        rc = err_set_field(err, ZBSO_EINVAL, "body", "batch_size",
                           "batch_size must be greater than 0, got %lld",
                           (long long)out->batch_size);
        goto out;
    }
    if (opt_pl_measurements_check(out->m, out->n, &why) < 0)
        rc = err_set_field(err, ZBSO_EINVAL, "body", "measurements", "%s", why.msg);
out:
    json_decref(obj);
    return rc;
}

struct json_t *codec_power_profile_json(const zbso_power_profile *p)
{
    json_t *o = json_object(), *list = json_array();
    bool ok = o && list;
    for (size_t i = 0; ok && i < p->n; i++) {
        json_t *m = json_object();
        ok = m && set_int(m, "power_limit", p->m[i].power_limit_w) == 0 &&
             set_real(m, "time", p->m[i].time_s) == 0 &&
             set_real(m, "energy", p->m[i].energy_j) == 0 && json_array_append(list, m) == 0;
        json_decref(m);
    }
    ok = ok && set_int(o, "batch_size", p->batch_size) == 0 &&
         set_new(o, "trial_number",
                 p->trial_number > 0 ? json_integer(p->trial_number) : json_null()) == 0 &&
         set_new(o, "observer", json_boolean(p->observer)) == 0 &&
         set_new(o, "profile_steps",
                 p->profile_steps > 0 ? json_integer(p->profile_steps) : json_null()) == 0 &&
         set_real(o, "created_at", p->created_at) == 0 &&
         json_object_set(o, "measurements", list) == 0;
    json_decref(list);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

char *codec_power_profile_dump(const char *job_id, const zbso_power_profile *p, size_t *len)
{
    json_t *o = codec_power_profile_json(p);
    bool ok = o && set_str(o, "job_id", job_id) == 0;
    return finish(o, ok, len);
}

int codec_power_profile_read(const char *buf, size_t len, zbso_power_profile *out,
                             zbso_err *err)
{
    char job_id[ZBSO_ID_MAX + 1];
    json_t *obj = NULL;
    int rc = codec_power_profile_parse(buf, len, job_id, out, err);
    if (rc < 0)
        return rc;
    if ((rc = load_object(buf, len, &obj, err)) == 0)
        rc = get_double(obj, "created_at", false, false, &out->created_at, NULL, err);
    json_decref(obj);
    return rc;
}
