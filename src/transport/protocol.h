/* protocol.h: the requests of the batch size optimizer's protocol (SPEC §2, §6.1) over a
 * transport, written once for libzbso's client and `zbso run --server`: bodies through
 * src/codec, each request with its retry class (docs/DESIGN.md, "Client transport"). */
#ifndef ZBSO_TRANSPORT_PROTOCOL_H
#define ZBSO_TRANSPORT_PROTOCOL_H

#include "core/types.h"
#include "transport/transport.h"

/* Each returns 0 with *out, or the code of transport_request (the server's status, a
 * network failure) with its message, ZBSO_ERUNTIME when the answer is not what the
 * request promises ("the server answered <request> with ..."), ZBSO_ENOMEM. */

/* POST /jobs. Retried as idempotent when spec names its job_id; without one the server
 * generates an id, so it is retried only when it never reached the server. *out is the
 * job as registered (with its job_id). A warning the server sent with it (X-Zbso-Warning:
 * a new random id where jobs of the same spec exist) is logged at WARN and stays readable
 * with transport_warning until the next request. */
int protocol_register_job(transport *t, const zbso_job_spec *spec, zbso_job_spec *out,
                          zbso_err *err);

/* GET /jobs/batch_size?job_id=..., with a new idempotency key reused by its retries, so a
 * retry after a lost answer gets the trial that was dispatched; ZBSO_EIO when the OS gives
 * no entropy for the key. */
int protocol_next_batch_size(transport *t, const char *job_id, zbso_trial_id *out,
                             zbso_err *err);

/* POST /report (cumulative totals: the server answers a repeated report as it did). */
int protocol_report(transport *t, const zbso_training_result *r, zbso_report_response *out,
                    zbso_err *err);

/* PATCH /trials (ending a trial that already ended changes nothing). */
int protocol_end_trial(transport *t, const zbso_trial_id *trial, zbso_err *err);

/* PUT /power_profiles (SPEC §6.1; idempotent: a repeat stores the same profile again).
 * *out is the profile as the server stored it. */
int protocol_profile_put(transport *t, const char *job_id, const zbso_power_profile *p,
                         zbso_power_profile *out, zbso_err *err);

/* GET /power_profiles?job_id=..&batch_size=..: ZBSO_ENOTFOUND (the server's 404) when
 * the job has no profile of that batch size (or the job is unknown). */
int protocol_profile_get(transport *t, const char *job_id, int64_t batch_size,
                         zbso_power_profile *out, zbso_err *err);

#endif
