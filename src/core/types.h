/* types.h: the domain values of the batch size optimizer (SPEC §2-3) shared by every
 * module. Plain structs with fixed maxima: no pointers, so they copy and store simply. */
#ifndef ZBSO_CORE_TYPES_H
#define ZBSO_CORE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"

#define ZBSO_ID_MAX 300            /* bytes of a job id or prefix, without the NUL */
#define ZBSO_MAX_BATCH_SIZES 256   /* batch sizes per job */
#define ZBSO_GPU_MODEL_MAX 255     /* bytes of gpu_model, without the NUL */
#define ZBSO_LEASE_RENEW_S 60.0    /* a stored lease is rewritten at most this often */

/* Which batch size policy decides a job's trials (issue 21). ZBSO_POLICY_ZEUS, the
 * default and zero, is Zeus's policy bit for bit (SPEC §3); ZBSO_POLICY_SMART is zbso's own,
 * opt-in per job or as the server's default for jobs whose spec does not say. */
typedef enum zbso_policy { ZBSO_POLICY_ZEUS = 0, ZBSO_POLICY_SMART = 1 } zbso_policy;

#define ZBSO_MAX_PRIOR_JOBS 8      /* job ids a spec may name as a warm start's prior */
#define ZBSO_INTENSITY_MAX 1e5     /* g CO2e per kWh: a carbon intensity's upper bound */

/* JobSpecFromClient / CreatedJob of seed 001. Defaults come from spec_defaults(). */
typedef struct zbso_job_spec {
    char job_id[ZBSO_ID_MAX + 1];         /* "" when the client gave none */
    char job_id_prefix[ZBSO_ID_MAX + 1];
    int64_t batch_sizes[ZBSO_MAX_BATCH_SIZES]; /* sorted ascending once validated */
    size_t n_batch_sizes;
    int64_t default_batch_size;
    double eta_knob;
    bool has_beta_knob;                   /* false: JSON null, early stop disabled */
    double beta_knob;
    double target_metric;
    bool higher_is_better_metric;
    int64_t max_epochs;
    int64_t num_pruning_rounds;
    int64_t window_size;
    double mab_prior_mean;
    double mab_prior_precision;
    int64_t mab_num_explorations;
    bool has_mab_seed;                    /* false: JSON null, seed from the OS */
    uint64_t mab_seed;
    double max_power;                     /* W, all GPUs together */
    int64_t number_of_gpus;
    char gpu_model[ZBSO_GPU_MODEL_MAX + 1];
    /* Beyond Zeus (issue 21); Zeus's client never sends these. */
    zbso_policy policy;                   /* ZBSO_POLICY_ZEUS unless the spec says */
    bool has_policy;                      /* false: the spec did not say (server default) */
    bool warm_start;                      /* use other jobs of the prefix as a prior */
    size_t n_prior_jobs;                  /* explicit prior jobs (implies warm start) */
    char prior_jobs[ZBSO_MAX_PRIOR_JOBS][ZBSO_ID_MAX + 1];
    /* Beyond Zeus (issue 25): the grid's carbon intensity where this job runs, overriding
     * the server's (--carbon-intensity) in the job's CO2e figures. Accounting only: the
     * policy never reads it. */
    bool has_carbon_intensity;            /* false: the server's intensity, if any */
    double carbon_intensity_g_per_kwh;    /* g CO2e per kWh, 0..ZBSO_INTENSITY_MAX */
} zbso_job_spec;

typedef enum zbso_stage { ZBSO_STAGE_PRUNING = 0, ZBSO_STAGE_MAB = 1 } zbso_stage;

typedef enum zbso_trial_type {
    ZBSO_TRIAL_EXPLORATION = 0,
    ZBSO_TRIAL_CONCURRENT = 1,
    ZBSO_TRIAL_MAB = 2,
} zbso_trial_type;

typedef enum zbso_trial_status {
    ZBSO_TRIAL_DISPATCHED = 0,
    ZBSO_TRIAL_SUCCEEDED = 1,
    ZBSO_TRIAL_FAILED = 2,
} zbso_trial_status;

/* Why a trial ended (issue 25, SPEC §3.9). Stored per trial as its code; NONE (0) while
 * the trial runs and for trials stored before stop reasons were (opt_trial_stop_reason
 * derives theirs where the data allows, else UNKNOWN, which is never stored). */
typedef enum zbso_stop_reason {
    ZBSO_STOP_NONE = 0,
    ZBSO_STOP_TARGET_REACHED = 1,         /* converged: target metric within the bound */
    ZBSO_STOP_COST_BOUND = 2,             /* cost over beta_knob * min_cost */
    ZBSO_STOP_MAX_EPOCHS = 3,             /* max_epochs without reaching the target */
    ZBSO_STOP_ENDED = 4,                  /* PATCH /trials before a decision */
    ZBSO_STOP_LEASE_EXPIRED = 5,          /* Failed by ZEUS_BSO_TRIAL_TIMEOUT */
    ZBSO_STOP_UNKNOWN = 6,                /* ended before stop reasons were stored */
} zbso_stop_reason;
#define ZBSO_STOP_REASONS 7               /* values of zbso_stop_reason */

/* A job and the state the optimizer keeps for it (SPEC §3). */
typedef struct zbso_job {
    zbso_job_spec spec;                   /* spec.job_id is always set here */
    zbso_stage stage;
    int64_t exp_default_batch_size;       /* the current pruning round's default */
    bool has_min_cost;
    double min_cost;
    int64_t min_cost_batch_size;          /* = spec.default_batch_size at first */
    zbso_rng rng;
    int64_t num_trials;                   /* highest trial number issued; next is +1 */
    double created_at;                    /* unix seconds */
    /* Committed changes to the job's state (its row, trials and arms): 1 once registered,
     * and every unit of work that changes anything of the job adds 1 and stores it. Units
     * on one job are serialized, so the revision orders them as the database applied them;
     * answers carry it (X-Zbso-Job-Version on the wire, the name Zeus-side tools know),
     * which lets a test replay them serially. Stored in the jobs table's column
     * "version". */
    int64_t revision;
    /* Unix seconds of the job's last change: created_at at first, then the time of every
     * unit of work that changes the job (the service sets it with the revision). A
     * continuing report that writes nothing leaves it: it is as fresh as the lease
     * renewals (ZBSO_LEASE_RENEW_S). Stored in the jobs table's column "updated_at". */
    double updated_at;
} zbso_job;

/* One run of a job. The job id is not repeated here: it is the key the caller holds. */
typedef struct zbso_trial {
    int64_t trial_number;                 /* 1, 2, 3, ... per job */
    int64_t batch_size;
    zbso_trial_type type;
    zbso_trial_status status;
    double start_time;                    /* unix seconds */
    double end_time;                      /* unix seconds; 0 while Dispatched */
    double lease_renewed_at;              /* unix seconds of the last stored renewal */
    /* Set when status is Succeeded: */
    double time;                          /* s, cumulative */
    double energy;                        /* J, cumulative */
    double metric;                        /* last reported metric */
    int64_t epochs;                       /* current_epoch of the final report */
    bool converged;
    zbso_stop_reason stop_reason;         /* as stored: NONE while Dispatched */
} zbso_trial;

/* One point of a trial's learning curve: one report (POST /report) as the server received
 * it (SPEC §5, docs/DESIGN.md "Curve points"). A trial has at most one point per epoch. */
typedef struct zbso_curve_point {
    int64_t epoch;                        /* the report's current_epoch */
    double time;                          /* s, cumulative */
    double energy;                        /* J, cumulative */
    double metric;
    double received_at;                   /* unix seconds */
} zbso_curve_point;

/* A Gaussian Thompson sampling arm (one per surviving batch size in MAB stage). */
typedef struct zbso_arm {
    int64_t batch_size;
    double param_mean;
    double param_precision;               /* may be +INFINITY */
    int64_t num_observations;
} zbso_arm;

/* One power limit's figures in a power profile (SPEC §6.1): Zeus's PowerLimitMeasurement,
 * per training step. */
#define ZBSO_MAX_POWER_LIMITS 1024  /* measurements of one profile */
typedef struct zbso_pl_measurement {
    int64_t power_limit_w;                /* W (the limit set, mW / 1000 rounded down) */
    double time_s;                        /* s per step */
    double energy_j;                      /* J per step, all GPUs of the job together */
} zbso_pl_measurement;

/* A job's power-limit profile of one batch size, as a training run measured it: the
 * figures of each power limit profiled, highest first. Large (24 KB): allocate it. */
typedef struct zbso_power_profile {
    int64_t batch_size;
    int64_t trial_number;                 /* the trial that measured it; 0: not said */
    bool observer;                        /* observer mode: every figure was measured at
                                           * the limit the GPUs had, not at its own */
    int64_t profile_steps;                /* steps measured per limit; 0: not said */
    double created_at;                    /* unix seconds, when the server stored it */
    size_t n;                             /* 1..ZBSO_MAX_POWER_LIMITS */
    zbso_pl_measurement m[ZBSO_MAX_POWER_LIMITS];
} zbso_power_profile;

/* TrialId of seed 001: the answer to GET /jobs/batch_size and the body of PATCH /trials. */
typedef struct zbso_trial_id {
    char job_id[ZBSO_ID_MAX + 1];
    int64_t batch_size;
    int64_t trial_number;
} zbso_trial_id;

/* TrainingResult of seed 001 (POST /report). time and energy are cumulative. */
typedef struct zbso_training_result {
    zbso_trial_id trial;
    double time;
    double energy;
    double metric;
    int64_t current_epoch;
} zbso_training_result;

/* ReportResponse of seed 001. */
typedef struct zbso_report_response {
    bool stop_train;
    bool converged;
    char message[512];
} zbso_report_response;

const char *zbso_stage_name(zbso_stage s);               /* "Pruning" | "MAB" */
const char *zbso_trial_type_name(zbso_trial_type t);     /* "Exploration" | ... */
const char *zbso_trial_status_name(zbso_trial_status s); /* "Dispatched" | ... */
/* "target_reached", "cost_bound", "max_epochs", "ended", "lease_expired", "unknown";
 * NULL for ZBSO_STOP_NONE (JSON null: the trial runs). */
const char *zbso_stop_reason_name(zbso_stop_reason r);
/* The reason of a stored code: NONE for 0, UNKNOWN for a code this binary does not know
 * (a newer zbso wrote it). */
zbso_stop_reason zbso_stop_reason_of_code(int64_t code);

#endif
