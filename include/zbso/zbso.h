/* zbso.h: the one public header of libzbso: error codes, the energy monitor and the batch
 * size optimizer client. Plain C types only, so ctypes can bind it. */
#ifndef ZBSO_ZBSO_H
#define ZBSO_ZBSO_H

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: 0 is success, failures are negative. Each has a fixed meaning that the
 * HTTP layer maps to one status (src/http/status.c) and zbso_strerror() names. */
enum zbso_error {
    ZBSO_OK = 0,
    ZBSO_EINVAL = -1,      /* invalid input: a value out of range, wrong type (HTTP 422) */
    ZBSO_ENOTFOUND = -2,   /* unknown job or trial (404) */
    ZBSO_ECONFLICT = -3,   /* conflicts with stored state (409) */
    ZBSO_ENOMEM = -4,      /* out of memory (500) */
    ZBSO_ESTORE = -5,      /* the database failed (500) */
    ZBSO_EUNAVAIL = -6,    /* the database is unreachable for now; retry (503) */
    ZBSO_EAUTH = -7,       /* missing or wrong bearer token (401) */
    ZBSO_ETOOBIG = -8,     /* request body over the limit (413) */
    ZBSO_ENOCONV = -9,     /* no batch size converged during pruning (500) */
    ZBSO_ESCHEMA = -10,    /* database schema older or newer than this binary */
    ZBSO_EMETHOD = -11,    /* method not allowed on this path (405) */
    ZBSO_EIO = -12,        /* operating system I/O error */
    ZBSO_EINTERNAL = -13,  /* a bug: an invariant did not hold (500) */
    ZBSO_ECONFIG = -14,    /* client: bad configuration (seed 000 ZeusBSOConfigError) */
    ZBSO_EORDER = -15,     /* client: calls out of order (ZeusBSOOperationOrderError) */
    ZBSO_EBADOP = -16,     /* client: operation not allowed (ZeusBSOBadOperationError) */
    ZBSO_ERUNTIME = -17,   /* client: server or network failure (ZeusBSORuntimError) */
    ZBSO_ETRAINFAIL = -18, /* client: training stopped without converging (ZeusBSOTrainFailError) */
    ZBSO_EPERM = -19,      /* power limits: no privilege to set one (CAP_SYS_ADMIN, or zeusd) */
    ZBSO_EFORBIDDEN = -20, /* a valid token whose scope does not cover the request (403) */
};

/* Returns a static, human-readable name for an error code; never NULL. */
const char *zbso_strerror(int code);

/* libzbso's log: the lines it writes itself (the job registered, the batch size chosen,
 * retries, a trial ended at exit). Levels are Python logging's numbers: 10 DEBUG, 20 INFO,
 * 30 WARNING, 40 ERROR, 50 CRITICAL. By default lines of WARNING and above go to stderr;
 * ZBSO_LOG_LEVEL (one of those names, read when the library is loaded) sets another
 * level, and an unknown name is reported on stderr and ignored. */
typedef void (*zbso_log_fn)(void *arg, int level, const char *message);
/* Hands every later line to fn(arg, level, message) instead of stderr (NULL: stderr
 * again). The message has no time or level prefix and no control bytes. fn may be called
 * on any thread that uses libzbso, and must not call libzbso. */
void zbso_log_set_handler(zbso_log_fn fn, void *arg);
/* Sets the least level logged (a handler sees only those lines). Returns the previous. */
int zbso_log_set_level(int level);

#include <stddef.h>
#include <stdint.h>

#define ZBSO_MAX_GPUS 64
#define ZBSO_MAX_CPUS 32
#define ZBSO_ERRBUF_MAX 512

/* ---- Energy monitor (ZeusMonitor's role; SPEC §6) ----------------------------------
 * NVML is loaded at run time (dlopen "libnvidia-ml.so.1", or $ZBSO_NVML_LIBRARY). GPU
 * indices are CUDA indices: with CUDA_VISIBLE_DEVICES set, index i is the i-th listed
 * device. CPU indices are RAPL package zones: index N is ROOT/intel-rapl:N, ROOT being
 * $ZBSO_POWERCAP_ROOT or /sys/class/powercap; a zone's "dram" subzone is its DRAM. The
 * monitor never changes a GPU setting nor writes a file. A monitor may be used from one
 * thread at a time. */
typedef struct zbso_monitor zbso_monitor;

typedef struct zbso_measurement {
    double time_s;                        /* wall time of the window */
    double total_energy_j;                /* sum over the window's GPUs */
    unsigned n_gpus;
    int gpu_indices[ZBSO_MAX_GPUS];       /* CUDA indices, in the monitor's order */
    double gpu_energy_j[ZBSO_MAX_GPUS];   /* per GPU, same order */
} zbso_measurement;

/* CPU (package) and DRAM energy of a window, per RAPL zone, in the monitor's order. */
typedef struct zbso_cpu_measurement {
    unsigned n_cpus;
    int cpu_indices[ZBSO_MAX_CPUS];       /* N of intel-rapl:N */
    double cpu_energy_j[ZBSO_MAX_CPUS];
    int has_dram[ZBSO_MAX_CPUS];          /* 1 when the zone has a DRAM subzone */
    double dram_energy_j[ZBSO_MAX_CPUS];  /* 0 where has_dram is 0 */
} zbso_cpu_measurement;

/* Opens NVML and the GPUs. gpu_indices NULL / n_gpus 0: every visible GPU. Refuses no GPUs
 * (ZBSO_ECONFIG), GPUs of different models (ZBSO_ECONFIG), a missing NVML (ZBSO_ECONFIG,
 * message names the library path tried). Measures no CPU. On failure *out is NULL and
 * errbuf (may be NULL) holds the message. */
int zbso_monitor_new(const int *gpu_indices, size_t n_gpus, zbso_monitor **out,
                     char *errbuf, size_t errbuf_len);

#define ZBSO_MONITOR_ALL (-1)
/* A GPU whose energy over a window reads 0 (a window shorter than the counter's update
 * period) gets its power at the end of the window times the window's time instead. */
#define ZBSO_MONITOR_APPROX_INSTANT_ENERGY 0x1u

/* Opens a monitor of GPUs and CPUs, as Zeus's ZeusMonitor chooses them:
 *   n_gpus ZBSO_MONITOR_ALL: every visible GPU, and none when NVML cannot be loaded or sees
 *     none (zbso_monitor_gpu_status says why); 0: no GPU (NVML is not loaded); > 0: the
 *     CUDA indices gpu_indices[0..n_gpus), each of which must open.
 *   n_cpus ZBSO_MONITOR_ALL: every RAPL package zone, and none when RAPL is absent or its
 *     counters cannot be read (zbso_monitor_cpu_status says why); 0: no CPU; > 0: the zones
 *     cpu_indices[0..n_cpus), each of which must be readable.
 * flags: ZBSO_MONITOR_* or 0. A background thread reads the RAPL counters often enough
 * (at least once a second) that a counter's wrap-around is never missed. Returns 0, or
 * ZBSO_ECONFIG naming the GPU or CPU index, the file or library, and the system's error
 * (GPUs of different models too), ZBSO_ERUNTIME (an NVML call failed, a thread did not
 * start), ZBSO_EINVAL (bad arguments), ZBSO_ENOMEM. On failure *out is NULL and errbuf
 * (may be NULL) holds the message. */
int zbso_monitor_open(const int *gpu_indices, int n_gpus, const int *cpu_indices,
                      int n_cpus, unsigned flags, zbso_monitor **out, char *errbuf,
                      size_t errbuf_len);
/* Stops the monitor's threads and closes NVML. NULL is a no-op. */
void zbso_monitor_free(zbso_monitor *mon);
/* The message of the last failed call on this handle ("" if none). Valid until the next
 * call on the handle. */
const char *zbso_monitor_errmsg(const zbso_monitor *mon);

/* Opens a measurement window named name (several may be open at once).
 * ZBSO_EBADOP if a window of that name is already open. */
int zbso_monitor_begin_window(zbso_monitor *mon, const char *name);
/* Closes the window and fills *out. ZBSO_EBADOP for an unknown name; ZBSO_ERUNTIME when an
 * NVML call failed during the window (never a wrong number). */
int zbso_monitor_end_window(zbso_monitor *mon, const char *name, zbso_measurement *out);
/* zbso_monitor_end_window that also fills *cpu_out (may be NULL) with the CPU and DRAM
 * energy of the window. ZBSO_ERUNTIME also when a RAPL counter could not be read at either
 * edge or by the polling thread during the window (a wrap might have been missed). */
int zbso_monitor_end_window_cpu(zbso_monitor *mon, const char *name, zbso_measurement *out,
                                zbso_cpu_measurement *cpu_out);
/* Closes the window without reading anything. ZBSO_EBADOP for a name that is not open. */
int zbso_monitor_cancel_window(zbso_monitor *mon, const char *name);
/* Closes every open window without reading anything; returns how many were open. */
unsigned zbso_monitor_reset_windows(zbso_monitor *mon);

unsigned zbso_monitor_gpu_count(const zbso_monitor *mon);
/* The model name of the monitored GPUs (all the same), e.g. "NVIDIA H200". */
const char *zbso_monitor_gpu_model(const zbso_monitor *mon);
/* The maximum power limit of the first monitored GPU in mW (NVML's
 * getPowerManagementLimitConstraints max). */
unsigned zbso_monitor_max_power_limit_mw(const zbso_monitor *mon);
/* Why the monitor measures no GPU ("" when it measures some, or was asked for none). */
const char *zbso_monitor_gpu_status(const zbso_monitor *mon);

/* The CPU zones measured: how many, the i-th one's index (-1 out of range), whether it
 * has a DRAM subzone, and why none is measured ("" when some are, or none was asked for:
 * RAPL absent, or its counters not readable). */
unsigned zbso_monitor_cpu_count(const zbso_monitor *mon);
int zbso_monitor_cpu_index(const zbso_monitor *mon, unsigned i);
int zbso_monitor_cpu_has_dram(const zbso_monitor *mon, unsigned i);
const char *zbso_monitor_cpu_status(const zbso_monitor *mon);
/* Fills *out with each zone's counters read now, with their wraps undone (the first
 * reading plus every step since), so two calls' difference is the energy between them.
 * ZBSO_ERUNTIME when a counter cannot be read. */
int zbso_monitor_cpu_energy(zbso_monitor *mon, zbso_cpu_measurement *out);

/* ---- GPUs (read-only queries: Zeus's zeus.device.get_gpus without its setters) -------
 * The visible GPUs by CUDA index (CUDA_VISIBLE_DEVICES honoured), through NVML loaded as
 * the monitor loads it. No thread, no setting changed. Queries return 0, ZBSO_EINVAL for
 * an index out of range (or a NULL handle), ZBSO_ERUNTIME when NVML fails, with the
 * message in zbso_gpus_errmsg. */
typedef struct zbso_gpus zbso_gpus;

/* Loads NVML and finds the visible GPUs (none is not an error: zbso_gpus_count is 0).
 * ZBSO_ECONFIG when NVML cannot be loaded (the message names the path) or
 * CUDA_VISIBLE_DEVICES is bad; ZBSO_ERUNTIME when a GPU cannot be opened. On failure *out
 * is NULL and errbuf (may be NULL) holds the message. */
int zbso_gpus_open(zbso_gpus **out, char *errbuf, size_t errbuf_len);
/* Closes NVML. NULL is a no-op. */
void zbso_gpus_free(zbso_gpus *g);
const char *zbso_gpus_errmsg(const zbso_gpus *g);
unsigned zbso_gpus_count(const zbso_gpus *g);
/* The model name into buf (NUL-terminated, cut to len). */
int zbso_gpus_name(zbso_gpus *g, unsigned index, char *buf, size_t len);
int zbso_gpus_power_limit_constraints_mw(zbso_gpus *g, unsigned index, unsigned *min_mw,
                                         unsigned *max_mw);
/* The power draw now (NVML's power usage). */
int zbso_gpus_power_mw(zbso_gpus *g, unsigned index, unsigned *mw);
/* NVML's total energy counter; ZBSO_EBADOP when the GPU has none (pre-Volta). */
int zbso_gpus_energy_mj(zbso_gpus *g, unsigned index, unsigned long long *mj);

/* ---- Batch size optimizer client (seed 000's BatchSizeOptimizer; SPEC §6) -----------
 * Call in order: zbso_client_new (registers the job), zbso_client_get_batch_size,
 * zbso_client_on_train_begin, then zbso_client_on_evaluate after each epoch until
 * zbso_client_training_finished. One client per training run, used from one thread at a
 * time. Failures return a negative ZBSO_E* code and leave the message in
 * zbso_client_errmsg:
 *   ZBSO_ECONFIG    bad configuration: no GPUs, a bad job spec, no server URL, a bad
 *                   environment variable (ZeusBSOConfigError)
 *   ZBSO_EORDER     calls out of order (ZeusBSOOperationOrderError)
 *   ZBSO_EBADOP     an operation this client may not do, e.g. rank != 0 asking for a batch
 *                   size (ZeusBSOBadOperationError)
 *   ZBSO_ERUNTIME   the server answered an error ("Zeus server returned status code N:
 *                   <server's message>"), a strange answer, or could not be reached within
 *                   the retry timeout (ZeusBSORuntimError)
 *   ZBSO_ETRAINFAIL training stopped without converging; re-launch the training and another
 *                   batch size is chosen (ZeusBSOTrainFailError)
 * Network failures, timeouts and 502/503/504 answers are retried with exponential backoff
 * and jitter (honouring Retry-After) for the retry timeout: 60 s by default,
 * $ZBSO_CLIENT_RETRY_TIMEOUT, or zbso_client_set_retry_timeout; registering without a
 * job_id (the server would repeat it under a new id) is retried only when the request
 * never reached the server. GET /jobs/batch_size carries an Idempotency-Key, so a retry
 * gets the trial a lost answer dispatched. 4xx and 500 answers are final.
 * $ZEUS_BSO_API_TOKEN, when set, is sent as a bearer token. A NULL handle makes the int
 * functions return ZBSO_EINVAL and the others "" or 0. */
typedef struct zbso_client zbso_client;

/* Registers the job (POST /jobs) and returns a client in *out. job_spec_json is seed 001's
 * JobSpec (job_id_prefix, batch_sizes, default_batch_size required; the other fields take
 * their defaults), and may carry zbso's own optional fields: "policy" ("zeus" or "smart";
 * absent or null: the server's default), "warm_start" (true or false), "prior_jobs" (at
 * most 8 job ids) and "carbon_intensity_g_per_kwh" (0 to 100000: the job's own grid
 * intensity for its CO2e figures), checked before sending and sent only when given;
 * the client adds the GPU facts from mon: max_power = floor(max power limit mW / 1000) * GPU count,
 * number_of_gpus, gpu_model (a spec that sets them is refused). mon NULL: the client
 * opens (and later frees) a monitor of every visible GPU;
 * otherwise mon must outlive the client. server_url NULL: $ZEUS_BSO_SERVER_URL. rank: the
 * process's rank in distributed training; only rank 0 asks for a batch size.
 * When $ZEUS_BSO_JOB_ID is set (by `zbso run`), it is the job id (a different job_id in the
 * spec is ZBSO_ECONFIG). Re-registering an id with a different config fails with the
 * server's 409 message. On failure *out is NULL and errbuf (may be NULL) holds the message.
 */
int zbso_client_new(zbso_monitor *mon, const char *server_url, const char *job_spec_json,
                    int rank, zbso_client **out, char *errbuf, size_t errbuf_len);
/* How a client created with zbso_client_new_ops measures: the caller's functions open and
 * close its window (named by the client; one per client) and give the window's time (s)
 * and GPU energy (J). Each returns 0, or a negative ZBSO_E* code (a positive value reads
 * as ZBSO_ERUNTIME) with a message in errbuf, which the client's call then returns. They
 * are called from within on_train_begin and on_evaluate only, never from free. */
typedef struct zbso_window_ops {
    void *arg;
    int (*begin)(void *arg, const char *name, char *errbuf, size_t errbuf_len);
    int (*end)(void *arg, const char *name, double *time_s, double *energy_j, char *errbuf,
               size_t errbuf_len);
} zbso_window_ops;

/* zbso_client_new for a caller that measures itself (a monitor of its own, such as the
 * Python binding's ZeusMonitor): ops open and close the window, and the GPU facts of the
 * job spec are given: max_power_limit_mw (of the first GPU), n_gpus (the GPUs measured)
 * and gpu_model. The order checks on the window (on_train_begin twice, on_evaluate without
 * it) are left to ops, as Zeus leaves them to its monitor. ZBSO_EINVAL when ops or one of
 * its functions is NULL; ZBSO_ECONFIG for a NULL or too long gpu_model; else as
 * zbso_client_new. *ops is copied; ops->arg must outlive the client. */
int zbso_client_new_ops(const zbso_window_ops *ops, unsigned max_power_limit_mw,
                        unsigned n_gpus, const char *gpu_model, const char *server_url,
                        const char *job_spec_json, int rank, zbso_client **out,
                        char *errbuf, size_t errbuf_len);
/* Frees the client (not a caller's monitor). It does not end the trial: an unfinished
 * trial is ended (PATCH /trials, marking it Failed) when the process exits, as Zeus does.
 * NULL is a no-op. */
void zbso_client_free(zbso_client *c);
/* The message of the last failed call on this handle ("" if none). */
const char *zbso_client_errmsg(const zbso_client *c);
/* Sets how long later requests retry network failures (seconds >= 0; 0: one attempt).
 * ZBSO_EINVAL for a negative or non-finite value. */
int zbso_client_set_retry_timeout(zbso_client *c, double seconds);
/* The registered job's id, and the job as the server returned it (CreatedJob JSON). Both
 * valid until zbso_client_free. */
const char *zbso_client_job_id(const zbso_client *c);
const char *zbso_client_job_json(const zbso_client *c);
/* The server's warning about the registration ("" when none), also logged at WARNING: a
 * zbso server warns when a job registers with a new random id (no job_id given) while
 * jobs of the same spec exist under its prefix, since nothing is learned across runs that
 * way. Valid until zbso_client_free. */
const char *zbso_client_warning(const zbso_client *c);

/* The job spec the client registered (JobSpecFromClient: the caller's spec with the GPU
 * facts), as JSON; valid until zbso_client_free. */
const char *zbso_client_spec_json(const zbso_client *c);

/* The batch size to train with (GET /jobs/batch_size), cached after the first success.
 * The trial it starts is ended at process exit unless training finished. When
 * $ZEUS_BSO_TRIAL_NUMBER is set, the launching driver (`zbso run`) already dispatched the
 * trial: the batch size is $ZEUS_BATCH_SIZE and $ZEUS_BSO_JOB_ID must name this job (else
 * ZBSO_ECONFIG); the server is not asked. ZBSO_EBADOP for rank != 0; ZBSO_ERUNTIME for
 * server errors or a batch size the job does not have. */
int zbso_client_get_batch_size(zbso_client *c, int64_t *out);
/* The trial number of the batch size, 0 before zbso_client_get_batch_size. */
int64_t zbso_client_trial_number(const zbso_client *c);
/* The batch size (0 before zbso_client_get_batch_size or zbso_client_set_batch_size). */
int64_t zbso_client_batch_size(const zbso_client *c);
/* What a process of rank != 0 learns from rank 0 (Zeus's data-parallel example sets
 * current_batch_size and trial_number after a broadcast), so that it can report the same
 * trial. The batch size must be one of the job's (or 0: none), the trial number >= 0;
 * else ZBSO_EINVAL naming the value. No trial is dispatched, nor ended at exit. */
int zbso_client_set_batch_size(zbso_client *c, int64_t batch_size);
int zbso_client_set_trial_number(zbso_client *c, int64_t trial_number);
/* Epochs evaluated, and the time (s) and energy (J) they took, as reported. */
int64_t zbso_client_cur_epoch(const zbso_client *c);
double zbso_client_running_time_s(const zbso_client *c);
double zbso_client_consumed_energy_j(const zbso_client *c);
/* Starts measuring (a monitor window) before the first epoch. ZBSO_EORDER when training
 * already began and no epoch was evaluated since. */
int zbso_client_on_train_begin(zbso_client *c);
/* After each epoch: closes the window, adds its time and energy to the run's totals,
 * reports them with metric (POST /report), and reopens the window or, when the server says
 * stop, sets training_finished. ZBSO_EORDER before zbso_client_get_batch_size or
 * zbso_client_on_train_begin; ZBSO_EINVAL for a metric that is not finite (nothing
 * changes); ZBSO_ETRAINFAIL when training stopped without converging (the message is the
 * server's reason); ZBSO_ERUNTIME when the report failed (the epoch stays counted, the
 * window stays open, the next call reports the totals). A no-op once training finished. */
int zbso_client_on_evaluate(zbso_client *c, double metric);
/* 1 when the server said to stop training, else 0. */
int zbso_client_training_finished(const zbso_client *c);


/* ---- GPU power-limit optimizer (Zeus's GlobalPowerLimitOptimizer; SPEC §6.1) ---------
 * Profiles the GPUs' power limits during training and keeps the best one: call
 * zbso_power_optimizer_on_step_begin before every training step and
 * zbso_power_optimizer_on_epoch_end after every epoch. Setting a limit needs
 * CAP_SYS_ADMIN, or a zeusd daemon ($ZEUSD_SOCK_PATH or $ZEUSD_HOST_PORT); observer mode
 * sets nothing. The GPUs' original limits (recorded in $ZBSO_STATE_DIR, else NVML's
 * default limits) are put back when it is freed, at process exit, and on SIGTERM, SIGINT
 * and SIGHUP whose action was the default; after a death the process cannot catch
 * (SIGKILL, an OOM kill, a crash) by the guard process zbso-guard it starts ($ZBSO_GUARD,
 * else beside libzbso.so; not found: ZBSO_ECONFIG, or ZBSO_GUARD=none). With a client,
 * or the environment `zbso run` sets, the job's profile of the batch size is read from
 * the server first (a profile found: no profiling) and stored there after profiling.
 * One optimizer per process and set of GPUs, used from one thread
 * at a time. Failures return a negative ZBSO_E* code with the message in
 * zbso_power_optimizer_errmsg: ZBSO_EINVAL (a bad option, naming it), ZBSO_ECONFIG (no
 * NVML or GPU, GPUs without one range of limits, zeusd unreachable or unfit, a bad
 * environment variable), ZBSO_EPERM (a limit could not be set: no privilege), ZBSO_ERUNTIME
 * (NVML, zeusd or the measurement failed), ZBSO_EIO (profile_path). A NULL handle makes
 * the int functions return ZBSO_EINVAL and the others 0 or "". */
typedef struct zbso_power_optimizer zbso_power_optimizer;

/* Zeus's optimum selectors. */
enum zbso_power_selector {
    ZBSO_PL_ZEUS_COST = 0,     /* ZeusCost(eta_knob, world_size) */
    ZBSO_PL_ENERGY = 1,        /* Energy */
    ZBSO_PL_TIME = 2,          /* Time */
    ZBSO_PL_MAX_SLOWDOWN = 3,  /* MaxSlowdownConstraint(max_slowdown_factor) */
};

enum zbso_power_mode {
    ZBSO_PL_JIT = 0,           /* profile (or use the stored profile), then the optimum */
    ZBSO_PL_MAX = 1,           /* the highest limit, no profiling */
    ZBSO_PL_OBSERVE = 2,       /* observer mode: profile at the current limit, set nothing */
};

/* Measuring for the optimizer with the caller's monitor: begin opens the window name;
 * end closes it and gives its time (s) and energy (J, all GPUs), or with cancel set only
 * closes it. Each returns 0, or a negative ZBSO_E* code (a positive value reads as
 * ZBSO_ERUNTIME) with a message in errbuf. */
typedef struct zbso_power_window_ops {
    void *arg;
    int (*begin)(void *arg, const char *name, char *errbuf, size_t errbuf_len);
    int (*end)(void *arg, const char *name, int cancel, double *time_s, double *energy_j,
               char *errbuf, size_t errbuf_len);
} zbso_power_window_ops;

typedef struct zbso_power_options {
    const int *gpu_indices;    /* CUDA indices of the GPUs to optimize; NULL: every visible */
    size_t n_gpus;
    int selector;              /* enum zbso_power_selector */
    double eta_knob;           /* ZBSO_PL_ZEUS_COST */
    int64_t world_size;        /* ZBSO_PL_ZEUS_COST; 0: the number of GPUs */
    double max_slowdown_factor; /* ZBSO_PL_MAX_SLOWDOWN, >= 1 */
    int64_t wait_steps;        /* Zeus's defaults: 1, 10, 40, 25 */
    int64_t warmup_steps;
    int64_t profile_steps;
    int64_t pl_step_w;
    const char *profile_path;  /* NULL; or Zeus's profile file: read when it exists (no
                                * profiling), else written after profiling */
    int mode;                  /* enum zbso_power_mode */
    const zbso_power_window_ops *ops; /* NULL: measure with monitor */
    zbso_monitor *monitor;     /* NULL (and ops NULL): a monitor of the GPUs of its own */
    zbso_client *client;       /* NULL; or the trial's client: the server's profile of its
                                * batch size is read and stored */
    int use_env;               /* 1: $ZBSO_POWER_LIMIT (jit|max|observe),
                                * $ZEUS_USE_OPTIMAL_PL=false, $ZEUS_PROFILE_PARAMS=W,P and,
                                * without a client, the job of $ZEUS_BSO_SERVER_URL,
                                * $ZEUS_BSO_JOB_ID and $ZEUS_BATCH_SIZE (`zbso run`) apply */
} zbso_power_options;

/* Fills o with Zeus's defaults: ZeusCost(0.5, the number of GPUs), wait 1, warm-up 10,
 * profile 40 steps, pl_step 25 W, ZBSO_PL_JIT, use_env 1, everything else NULL or 0. */
void zbso_power_options_init(zbso_power_options *o);

/* Opens the GPUs and the actuator, reads the stored profile when there is one, and sets
 * the first limit (the highest, or a stored profile's optimum). On failure *out is NULL
 * and errbuf (may be NULL) holds the message. */
int zbso_power_optimizer_new(const zbso_power_options *o, zbso_power_optimizer **out,
                             char *errbuf, size_t errbuf_len);
/* Gives p the trial's client after creation (zbso_power_options.client): the server's
 * profile of its batch size is looked up at the next step while profiling has not begun
 * (the state still Ready), and the profile is stored there after profiling. The client
 * must outlive p. ZBSO_EINVAL for a NULL argument. */
int zbso_power_optimizer_set_client(zbso_power_optimizer *p, zbso_client *client);
/* Puts the limits back and frees p (not a caller's monitor or client). NULL is a no-op. */
void zbso_power_optimizer_free(zbso_power_optimizer *p);
/* Puts the limits back now; later steps set nothing. Returns 0 or the actuator's error. */
int zbso_power_optimizer_close(zbso_power_optimizer *p);
const char *zbso_power_optimizer_errmsg(const zbso_power_optimizer *p);

/* Before each training step (Zeus's on_step_begin) and after each epoch (on_epoch_end). */
int zbso_power_optimizer_on_step_begin(zbso_power_optimizer *p);
int zbso_power_optimizer_on_epoch_end(zbso_power_optimizer *p);

/* 0 Ready, 1 Warmup, 2 Profiling, 3 Done. */
int zbso_power_optimizer_state(const zbso_power_optimizer *p);
/* The limit (mW) the optimizer is at (in observer mode: would be at). */
int64_t zbso_power_optimizer_limit_mw(const zbso_power_optimizer *p);
/* The chosen limit (mW) once Done, else 0. */
int64_t zbso_power_optimizer_optimal_mw(const zbso_power_optimizer *p);
/* Where the choice comes from: "profiling", "server", "file" (profile_path) or "max". */
const char *zbso_power_optimizer_source(const zbso_power_optimizer *p);
/* Copies up to cap measurements (per step, in profiling order) and returns how many there
 * are. Any pointer may be NULL when cap is 0. */
size_t zbso_power_optimizer_measurements(const zbso_power_optimizer *p, int64_t *power_limit_w,
                                         double *time_s, double *energy_j, size_t cap);
/* Steps begun since the optimizer was created, and steps that profiling took (from the
 * first step until Done, warm-ups and interruptions included; 0 when a stored profile
 * was used). */
int64_t zbso_power_optimizer_steps(const zbso_power_optimizer *p);
int64_t zbso_power_optimizer_profiling_steps(const zbso_power_optimizer *p);
/* The steps since Done and their time (s) and energy (J) as if each took the chosen
 * limit's figures per step (observer mode's accounting). Any pointer may be NULL. */
void zbso_power_optimizer_accounted(const zbso_power_optimizer *p, int64_t *steps,
                                    double *time_s, double *energy_j);
/* The actuator: "NVML", "zeusd at ...", "observer mode (nothing is set)". */
const char *zbso_power_optimizer_actuator(const zbso_power_optimizer *p);
/* Limit changes made on the GPUs (each GPU counts). */
unsigned long zbso_power_optimizer_set_count(const zbso_power_optimizer *p);

#ifdef __cplusplus
}
#endif
#endif
