/* codec.h: JSON <-> domain values of seed 001 (JobSpecFromClient/CreatedJob, TrialId,
 * TrainingResult, ReportResponse) and the error bodies of SPEC §2, on jansson. Shared by
 * the server, the client and the CLI, so it knows nothing of HTTP, sockets or the store. */
#ifndef ZBSO_CODEC_CODEC_H
#define ZBSO_CODEC_CODEC_H

#include <stdbool.h>
#include <stddef.h>

#include "core/types.h"
#include "util/err.h"

/* Parsers. Each reads len bytes of JSON (no NUL needed), checks presence and JSON types
 * strictly (strings are not coerced, booleans are true/false only, integers must be
 * integral: 256.0 is 256, 256.5 is refused), ignores unknown fields, then runs the value
 * checks of core/spec.h. Returns 0 with *out filled, or ZBSO_EINVAL with err->where =
 * "body", err->loc = the field ("" when the body as a whole is wrong: malformed JSON, not
 * an object) and a message naming the value, or ZBSO_ENOMEM. *out is unspecified on
 * failure. jansson 2.14 reports some allocation failures of its lexer as syntax errors
 * (ZBSO_EINVAL) or, failing to grow a token, drops one of its bytes (upstream issue
 * #362; docs/internals/MEM.md). */

/* JobSpecFromClient (also reads a CreatedJob: job_id is then set). Starts from
 * spec_defaults(); ends with spec_validate(), so batch_sizes come back sorted. */
int codec_job_spec_parse(const char *buf, size_t len, zbso_job_spec *out, zbso_err *err);

/* What codec_job_spec_parse_partial saw in the text beyond the values it returns. */
typedef struct codec_spec_given {
    bool job_id;              /* a job_id string, even "" (which the spec cannot tell from
                               * none) */
    const char *gpu_fact;     /* the first of "max_power", "number_of_gpus", "gpu_model" that
                               * the text sets (even to null), or NULL */
} codec_spec_given;

/* JobSpecFromClient without its GPU facts (max_power, number_of_gpus, gpu_model): seed
 * 001's JobSpec as a client library holds it before it adds what it measures (seed 000).
 * Presence and types as codec_job_spec_parse; the GPU facts are neither required nor
 * read, and no value is checked: the caller completes *out and calls
 * codec_job_spec_check. *given is filled whenever the text is a JSON object, even when a
 * field is wrong. */
int codec_job_spec_parse_partial(const char *buf, size_t len, zbso_job_spec *out,
                                 codec_spec_given *given, zbso_err *err);

/* The value checks that end codec_job_spec_parse: spec_validate(), then, when the text
 * gave a job_id (job_id_given) and s->job_id is "", Zeus's rule that even "" must start
 * with the prefix (spec_check_job_id). Returns 0 or ZBSO_EINVAL as the parsers do. */
int codec_job_spec_check(zbso_job_spec *s, bool job_id_given, zbso_err *err);

/* TrainingResult; ends with result_validate(). */
int codec_training_result_parse(const char *buf, size_t len, zbso_training_result *out,
                                zbso_err *err);

/* TrialId; ends with trial_id_validate(). */
int codec_trial_id_parse(const char *buf, size_t len, zbso_trial_id *out, zbso_err *err);

/* ReportResponse (what a client receives from POST /report); the message is cut to fit
 * out->message. */
int codec_report_response_parse(const char *buf, size_t len, zbso_report_response *out,
                                zbso_err *err);

/* Emitters. Each returns a NUL-terminated compact JSON text allocated with malloc
 * (util/mem; the caller frees it) and stores its length in *len when len is not NULL.
 * Returns NULL only when memory runs out or a double is not finite (which validated
 * values never are). */

/* The spec as seed 001 spells it, every field present: job_id (null when empty),
 * beta_knob and mab_seed null when absent, doubles with 17 significant digits so they
 * read back bit for bit; then the fields beyond Zeus that the spec sets (issue 21):
 * "policy" when has_policy, "warm_start" when true, "prior_jobs" when not empty; and
 * "carbon_intensity_g_per_kwh" when the spec has one (issue 25; so in every emitter). The
 * client's request (and what it reads back reads the same). */
char *codec_job_spec_dump(const zbso_job_spec *s, size_t *len);

/* The CreatedJob answer to POST /jobs: seed 001's fields as codec_job_spec_dump writes
 * them, and of the fields beyond Zeus only those that make the job differ from Zeus's
 * policy ("policy" when not "zeus", "warm_start" when true, "prior_jobs" when not empty),
 * and the carbon intensity when given, so that the answer to a Zeus-shaped job is byte
 * for byte Zeus's (SPEC §2). */
char *codec_created_job_dump(const zbso_job_spec *s, size_t *len);

/* For documents that hold a spec (src/inspect): the spec of codec_job_spec_dump with
 * every field beyond Zeus present ("policy", "warm_start", "prior_jobs": [] included; the
 * carbon intensity only when given: SPEC §5 wants no CO2e field without one) as
 * a jansson value (a new reference), or NULL when memory runs out. */
struct json_t;
struct json_t *codec_job_spec_json(const zbso_job_spec *s);

/* Writes v (consumed: its reference is released; NULL gives NULL) as compact JSON text
 * with doubles of 17 significant digits, as every emitter here does. NULL when memory
 * runs out or v holds a value JSON cannot write. */
char *codec_json_text(struct json_t *v, size_t *len);

/* {"job_id","batch_size","trial_number"}. */
char *codec_trial_id_dump(const zbso_trial_id *t, size_t *len);

/* TrainingResult: TrialId's fields plus time, energy, metric, current_epoch. */
char *codec_training_result_dump(const zbso_training_result *r, size_t *len);

/* {"stop_train","converged","message"}. */
char *codec_report_response_dump(const zbso_report_response *r, size_t *len);

/* A power-limit profile (SPEC §6.1), the body of PUT /power_profiles: job_id (into
 * job_id, ZBSO_ID_MAX + 1 bytes), batch_size, trial_number and profile_steps (null or
 * absent: 0, else positive), observer (default false), measurements ([{"power_limit": W,
 * "time": s, "energy": J}], checked by opt_pl_measurements_check); created_at is not read.
 * Errors as the other parsers'. */
int codec_power_profile_parse(const char *buf, size_t len, char *job_id,
                              zbso_power_profile *out, zbso_err *err);
/* What a client reads back (GET or PUT /power_profiles): codec_power_profile_parse plus
 * created_at. */
int codec_power_profile_read(const char *buf, size_t len, zbso_power_profile *out,
                             zbso_err *err);
/* The profile as a jansson object (a new reference; NULL when memory runs out): every
 * field above with created_at, trial_number and profile_steps null when 0, without the
 * job id (for documents that hold it elsewhere). */
struct json_t *codec_power_profile_json(const zbso_power_profile *p);
/* The profile with its "job_id", as PUT and GET /power_profiles answer it. */
char *codec_power_profile_dump(const char *job_id, const zbso_power_profile *p, size_t *len);

/* An error body. With detail (422): {"detail":[{"loc":[where, loc],"msg":...,
 * "type":"value_error"}]}, loc being ["body"] when err has no field and where defaulting
 * to "body". Otherwise {"message": err->msg}. */
char *codec_error_dump(const zbso_err *err, bool detail, size_t *len);

/* Reads the human message out of an error body of either shape (for the client, which
 * carries the server's message in its own errors). Writes at most cap bytes with the NUL.
 * Returns 0, or ZBSO_EINVAL when the body is neither shape (msg then holds nothing). */
int codec_error_message(const char *buf, size_t len, char *msg, size_t cap);

#endif
