/* service.h: the batch size optimizer's operations (SPEC §2-3): each request is one unit of
 * work on a store, deciding through the pure core. Used by the HTTP layer, `zbso run` in
 * embedded mode and the simulator. No HTTP, JSON, clock or entropy of its own: the clock
 * and the entropy source are passed in. */
#ifndef ZBSO_SERVICE_SERVICE_H
#define ZBSO_SERVICE_SERVICE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/types.h"
#include "core/value.h"
#include "store/store.h"
#include "util/err.h"

/* Every operation but delete takes job_revision (may be NULL): on success it receives the
 * job's revision (zbso_job.revision) after the unit, or for an answer read from a
 * snapshot the revision of that snapshot. Answers about one job sorted by revision (a
 * change first, then the answers that read its revision) are the order the database
 * applied them. */

/* What the service did, for /metrics: counted only once the unit of work that did it has
 * committed (a unit rolled back or run again counts once or not at all). Zero-initialize;
 * relaxed atomics, so any thread may read it while requests run. */
typedef struct svc_stats {
    atomic_uint_least64_t dispatched[3];    /* trials dispatched, by zbso_trial_type */
    atomic_uint_least64_t finished[3];      /* trials ended, by zbso_trial_status (Succeeded:
                                             * a final report; Failed: PATCH /trials or a
                                             * lease expiry); [DISPATCHED] stays 0 */
    atomic_uint_least64_t lease_expiries;   /* Dispatched trials Failed by the lease timeout */
    _Atomic double energy_j;                /* final energy of every Succeeded trial */
    _Atomic double time_s;                  /* final training time of every Succeeded trial */
    /* Trials ended, by zbso_stop_reason (issue 25); [NONE] and [UNKNOWN] stay 0. */
    atomic_uint_least64_t stopped[ZBSO_STOP_REASONS];
    _Atomic double co2e_g;                  /* CO2e of every Succeeded trial's energy at
                                             * its job's intensity (the spec's own, else
                                             * svc_env.footprint's; none: not counted) */
    atomic_uint_least64_t co2e_trials;      /* the trials co2e_g counts */
} svc_stats;

typedef struct svc_env {
    /* Unix time in seconds. */
    double (*now)(void *ctx);
    /* Fills words with n random 32-bit words (OS entropy); returns 0 or a negative code. */
    int (*entropy)(void *ctx, uint32_t *words, size_t n);
    void *ctx;
    /* Dispatched trials whose lease is older than this are Failed before the next
     * decision for their job (ZEUS_BSO_TRIAL_TIMEOUT); 0 disables. */
    double trial_timeout_s;
    /* NULL, or where the service counts what it did (the server's /metrics). */
    svc_stats *stats;
    /* The policy of a new job whose spec does not name one (has_policy false): `zbso
     * serve --policy`, ZBSO_POLICY. Zero (ZBSO_POLICY_ZEUS) unless set. */
    zbso_policy default_policy;
    /* NULL, or the server's CO2e and price configuration (not owned): stats->co2e_g adds
     * each Succeeded trial's CO2e over its interval at its job's own intensity
     * (carbon_intensity_g_per_kwh), else at this one's, else not at all. */
    const opt_footprint *footprint;
} svc_env;

/* The real clock (CLOCK_REALTIME) and entropy (getrandom) for servers and tools. */
svc_env svc_env_system(double trial_timeout_s);

/* ---- idempotency keys (docs/DESIGN.md) ----
 * A client that lost the answer to GET /jobs/batch_size sends it again with the same key
 * (the Idempotency-Key header). The dispatching insert stores the key with the trial
 * (store.h trial_insert), in the same unit of work, so the database remembers it for
 * every replica and across restarts; a repeated key started less than one lease ago
 * gets that trial instead of another. */
#define SVC_KEY_MAX STORE_KEY_MAX       /* bytes of a key */
#define SVC_KEY_LEASE_DEFAULT_S 86400.0 /* how long a key holds when leases are off */

/* POST /jobs. spec has been validated (spec_validate) and may have an empty job_id, then
 * one "<prefix>-<8 hex>" is generated. On success *out is the stored spec and *created is
 * true for a new job (201), false for an identical re-registration (200).
 * The policy (SPEC §2): a new job without one (has_policy false) gets
 * env->default_policy, and the stored spec holds the resolved policy (has_policy true);
 * a re-registration without one takes the stored job's, so it matches whatever the
 * server's default was or is, and differs only in what it names. ZBSO_EINVAL at
 * body.warm_start: a new job asks for a warm start and resolves to the zeus policy.
 * A re-registration without a carbon intensity likewise takes the stored job's.
 * ZBSO_ECONFLICT: same id, different spec (policy, warm_start, prior_jobs and the carbon
 * intensity included; at body.carbon_intensity_g_per_kwh when only that differs). */
int svc_register_job(store *st, const svc_env *env, const zbso_job_spec *spec,
                     zbso_job_spec *out, bool *created, int64_t *job_revision, zbso_err *err);

/* A mistake the first hour often makes (seed 003's literal example with ZEUS_JOB_ID unset):
 * a job registered under a new random id although jobs of the same spec exist under its
 * prefix, so nothing is learned across runs. Looks at the jobs whose id begins with
 * spec->job_id_prefix (at most SVC_SIMILAR_SCAN of them, in one read) for one other than
 * spec->job_id whose spec is spec's but for the id. Returns 1 with its id copied into
 * similar (ZBSO_ID_MAX + 1 bytes), 0 when there is none, or a store error. */
#define SVC_SIMILAR_SCAN 1000
int svc_similar_job(store *st, const zbso_job_spec *spec, char *similar, zbso_err *err);

/* GET /jobs/batch_size. Dispatches a trial and fills *out. request_key (NULL or "": none;
 * at most SVC_KEY_MAX bytes) names the logical request: when a trial of the job holds it
 * and started less than one lease ago (env->trial_timeout_s, or SVC_KEY_LEASE_DEFAULT_S
 * when that is 0), *out is that trial and nothing changes; otherwise the new trial takes
 * the key.
 * ZBSO_ENOTFOUND: unknown job. ZBSO_ENOCONV: no batch size converged in pruning. */
int svc_next_batch_size(store *st, const svc_env *env, const char *job_id,
                        const char *request_key, zbso_trial_id *out, int64_t *job_revision,
                        zbso_err *err);

/* POST /report. ZBSO_ENOTFOUND: unknown job or trial (job, batch size and trial number
 * must all match). ZBSO_ECONFLICT: the trial is Failed. */
int svc_report(store *st, const svc_env *env, const zbso_training_result *result,
               zbso_report_response *out, int64_t *job_revision, zbso_err *err);

/* The cost bound a report of job_id is decided under now (SPEC §3.2): beta_knob x
 * min_cost, or INFINITY without beta or before any run converged. Read from a snapshot.
 * For the simulator, which runs each simulated training to the epoch the server would stop
 * it at. ZBSO_ENOTFOUND: unknown job. */
int svc_cost_bound(store *st, const svc_env *env, const char *job_id, double *bound,
                   int64_t *job_revision, zbso_err *err);

/* PATCH /trials. A Dispatched trial becomes Failed; other states are left as they are.
 * ZBSO_ENOTFOUND: unknown trial. */
int svc_end_trial(store *st, const svc_env *env, const zbso_trial_id *trial,
                  int64_t *job_revision, zbso_err *err);

/* DELETE /jobs. ZBSO_ENOTFOUND: unknown job. */
int svc_delete_job(store *st, const svc_env *env, const char *job_id, zbso_err *err);

/* PUT /power_profiles (SPEC §6.1): stores profile as the job's profile of its batch size,
 * replacing the one stored, with created_at = now; *out is what was stored. The job's
 * revision moves. ZBSO_EINVAL in FastAPI's shape at body.measurements (opt_pl_
 * measurements_check), body.trial_number or body.profile_steps (negative), body.batch_size
 * (not one of the job's); ZBSO_ENOTFOUND: unknown job. */
int svc_profile_put(store *st, const svc_env *env, const char *job_id,
                    const zbso_power_profile *profile, zbso_power_profile *out,
                    int64_t *job_revision, zbso_err *err);

/* GET /power_profiles: the job's profile of batch_size into *out, from a snapshot.
 * ZBSO_ENOTFOUND: unknown job, or no profile of that batch size (the message says
 * which). */
int svc_profile_get(store *st, const svc_env *env, const char *job_id, int64_t batch_size,
                    zbso_power_profile *out, int64_t *job_revision, zbso_err *err);

#endif
