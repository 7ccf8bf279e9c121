/* runInt.h: the parts of `zbso run`, private to src/run: the optimizer seen through one
 * interface with an embedded and an HTTP implementation, the job file, placeholders,
 * the child process, GPU measurement and the log directory. */
#ifndef ZBSO_RUN_RUNINT_H
#define ZBSO_RUN_RUNINT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "core/types.h"
#include "power/power.h"
#include "run/run.h"
#include "util/err.h"

/* ---- the optimizer (bso_embedded.c, bso_http.c) -------------------------------------
 * The four requests of SPEC §2, so the driver is written once for both modes. Each
 * returns 0 or a negative ZBSO_E* code with err holding the optimizer's message. */
typedef struct run_bso run_bso;
typedef struct run_bso_ops {
    int (*register_job)(run_bso *b, const zbso_job_spec *spec, zbso_job_spec *out,
                        zbso_err *err);
    int (*next_batch_size)(run_bso *b, const char *job_id, zbso_trial_id *out,
                           zbso_err *err);
    int (*report)(run_bso *b, const zbso_training_result *r, zbso_report_response *out,
                  zbso_err *err);
    int (*end_trial)(run_bso *b, const zbso_trial_id *t, zbso_err *err);
    /* The job's power-limit profile of a batch size (SPEC §6.1): get answers
     * ZBSO_ENOTFOUND when there is none; put stores p (replacing). */
    int (*profile_get)(run_bso *b, const char *job_id, int64_t batch_size,
                       zbso_power_profile *out, zbso_err *err);
    int (*profile_put)(run_bso *b, const char *job_id, const zbso_power_profile *p,
                       zbso_err *err);
    void (*close)(run_bso *b);
} run_bso_ops;
struct run_bso {
    const run_bso_ops *ops;
    const char *server_url;   /* the URL given to the command, NULL in embedded mode */
};

/* Opens the database o->db (a URL such as sqlite:///path or postgresql://...; a bare path
 * is a SQLite file) with o->store's options, created with the schema when new, for svc_*
 * calls in this process; a job that names no policy gets o->default_policy. ZBSO_EINVAL
 * for a path that does not fit a URL, store errors (naming an unsupported scheme, or the
 * URL with its password as ***) otherwise. */
int run_bso_embedded_open(const run_options *o, run_bso **out, zbso_err *err);
/* Prepares requests to the server at url (http:// or https://; a trailing '/' is
 * dropped) over src/transport. $ZEUS_BSO_API_TOKEN, when set, is sent as a bearer token;
 * $ZBSO_CLIENT_RETRY_TIMEOUT bounds retries as in libzbso. Connects lazily. ZBSO_EINVAL
 * naming a bad URL, ZBSO_ECONFIG naming a bad retry timeout. */
int run_bso_http_open(const char *url, run_bso **out, zbso_err *err);
/* Closes b; NULL is a no-op. */
void run_bso_close(run_bso *b);

/* ---- the job file (jobfile.c) --------------------------------------------------------- */
#define RUN_OPTIMIZER_MAX 63

typedef struct run_job_file {
    zbso_job_spec spec;        /* validated once the GPU facts are filled */
    bool has_gpu_facts[3];     /* max_power, number_of_gpus, gpu_model given */
    bool has_lr;
    double learning_rate;      /* the default batch size's learning rate, > 0 */
    char optimizer[RUN_OPTIMIZER_MAX + 1];   /* "" when not given */
    bool has_seed;
    uint64_t seed;
} run_job_file;

/* Parses job.json text (len bytes): a JobSpec (seed 001 fields) plus, optionally,
 * max_power, number_of_gpus, gpu_model (absent ones come from the monitor, see
 * run_job_file_finish), learning_rate, optimizer, seed and epochs (an alias of
 * max_epochs). Returns 0, or ZBSO_EINVAL naming the file (what), the field and the value.
 * The spec is not validated yet. */
int run_job_file_parse(const char *what, const char *text, size_t len, run_job_file *out,
                       zbso_err *err);
/* Fills the absent GPU facts (max_power by mon_job_max_power_w, as the Zeus client and
 * libzbso compute it) and validates the whole spec (spec_validate). With n_gpus 0 (no
 * monitor) every fact must have been given: ZBSO_ECONFIG naming the missing one.
 * Returns 0 or ZBSO_EINVAL / ZBSO_ECONFIG. */
int run_job_file_finish(run_job_file *jf, unsigned n_gpus, unsigned max_power_limit_mw,
                        const char *gpu_model, zbso_err *err);

/* ---- placeholders (placeholders.c, pure) --------------------------------------------- */
#define RUN_ARG_MAX 32767          /* bytes of one substituted argument */

typedef struct run_subst {
    int64_t batch_size;
    bool has_lr;
    double lr;                     /* already scaled to batch_size */
    uint64_t seed;
    int64_t epochs;
    double target_metric;
} run_subst;

/* The learning rate for batch size bs when lr is right for default_bs: square-root
 * scaling for adam, adamw and adadelta (any case), linear otherwise (seed 004). */
double run_lr_scale(double lr, const char *optimizer, int64_t default_bs, int64_t bs);

/* Writes in with {bs} {batch_size} {lr} {learning_rate} {seed} {epochs} {target_metric}
 * replaced into out (capacity cap); other braces are copied as they are. Returns 0, or
 * ZBSO_EINVAL when {lr} appears without a learning rate or the result exceeds cap. */
int run_subst_arg(const char *in, const run_subst *s, char *out, size_t cap, zbso_err *err);

/* Formats a double the way placeholders and the environment show it ("%.10g"). */
void run_fmt_double(double v, char *out, size_t cap);

/* ---- the child process (child.c) ----------------------------------------------------- */
#define RUN_LINE_MAX 65536         /* a longer output line is handled in pieces */

/* Called for each line of output (without the newline, NUL-terminated). A non-zero return
 * stops run_child_read early; the rest of the output stays for the next call. */
typedef int (*run_line_fn)(void *ctx, const char *line, size_t len);

typedef struct run_child {
    pw_guard *guard;           /* kills the group if zbso run dies (NULL: none); caller's */
    pid_t pid;                 /* also its process group */
    int out_fd;                /* read end of the stdout+stderr pipe, -1 at EOF */
    FILE *log;                 /* every line is copied here */
    bool exited;               /* reaped; exit_status is valid */
    int exit_status;           /* waitpid status */
    double last_output_s;      /* monotonic time output last arrived */
    size_t n;                  /* bytes in buf */
    char buf[RUN_LINE_MAX + 1];
} run_child;

/* Starts argv (PATH searched, no shell) in its own process group with envp, stdout and
 * stderr into one pipe, default signal dispositions and an empty signal mask, to be killed
 * by the kernel when this thread of zbso run ends (PR_SET_PDEATHSIG: call it from the
 * main thread, which lives as long as the process). Returns 0,
 * or ZBSO_EIO naming the command and the reason (it does not exist, is not executable).
 * The caller owns c (large: allocate it) and must call run_child_stop or run_child_wait. */
int run_child_spawn(run_child *c, char *const argv[], char *const envp[], FILE *log,
                    zbso_err *err);
/* Waits up to timeout_ms for output and hands each complete line to fn (NULL: the log
 * only). Returns 1 when the output has ended (EOF, or the command exited and the output
 * stayed idle 200 ms), the value fn returned when non-zero (stop early), else 0;
 * ZBSO_EIO when reading fails. */
int run_child_read(run_child *c, int timeout_ms, run_line_fn fn, void *ctx, zbso_err *err);
/* True once the command itself has exited (not yet reaped). */
bool run_child_has_exited(run_child *c);
/* Copies the remaining output to the log, waits for the command to exit, kills what is
 * left of its process group and reaps it. Returns 0 or ZBSO_EIO. */
int run_child_wait(run_child *c, zbso_err *err);
/* Stops the command: sig (SIGTERM; SIGINT passes a Ctrl-C on) to its process group, once,
 * then SIGKILL after grace_s seconds if it is still running, or at once when *signals (a
 * count of signals zbso run received; NULL: none) changes meanwhile; copies its output to
 * the log meanwhile; reaps it. Returns 0 or ZBSO_EIO. */
int run_child_stop(run_child *c, int sig, double grace_s, const volatile sig_atomic_t *signals,
                   zbso_err *err);
/* Describes a waitpid status ("exited with status 3", "killed by signal 9"). */
void run_child_describe(int status, char *out, size_t cap);

/* ---- measurement (meter.c) ------------------------------------------------------------
 * Time and GPU energy of a try, one measurement window per epoch. Without GPUs
 * (--no-gpu) time only, energy 0. */
typedef struct run_meter run_meter;

/* Opens the monitor over every visible GPU, or none with no_gpu. ZBSO_ECONFIG with the
 * monitor's message and a hint about --no-gpu when there is no usable GPU. */
int run_meter_open(bool no_gpu, run_meter **out, zbso_err *err);
void run_meter_free(run_meter *m);
unsigned run_meter_gpu_count(const run_meter *m);          /* 0 without GPUs */
unsigned run_meter_max_power_limit_mw(const run_meter *m);
const char *run_meter_gpu_model(const run_meter *m);       /* "" without GPUs */
/* Starts measuring a try from zero. ZBSO_ERUNTIME when the monitor fails. */
int run_meter_start(run_meter *m, zbso_err *err);
/* Cumulative time (s) and energy (J) since run_meter_start; with restart, a new window is
 * opened so measuring continues, otherwise measuring ends. ZBSO_ERUNTIME on failure. */
int run_meter_lap(run_meter *m, bool restart, double *time_s, double *energy_j,
                  zbso_err *err);
/* A window of its own beside the epoch's (a power limit's time slice, §7.1): begin opens
 * name; end closes it and gives its time and energy (cancel: only closes). Needs the GPUs
 * (ZBSO_EBADOP with --no-gpu); ZBSO_ERUNTIME when the monitor fails. */
int run_meter_window_begin(run_meter *m, const char *name, zbso_err *err);
int run_meter_window_end(run_meter *m, const char *name, bool cancel, double *time_s,
                         double *energy_j, zbso_err *err);

/* ---- power limits (power.c, SPEC §7.1) ----------------------------------------------- */
typedef struct run_power run_power;
struct run_options;

/* Opens the GPUs' actuator for o->power_limit (*out NULL for RUN_PL_NONE), with job's
 * eta for ZeusCost. ZBSO_EINVAL (--no-gpu, a bad --progress-regex), or pw_open's codes. */
int run_power_open(const struct run_options *o, const zbso_job_spec *job, run_power **out,
                   zbso_err *err);
/* Puts the limits back (as they were at open) and frees p; NULL is a no-op. */
void run_power_close(run_power *p);
/* A client-mode command's "ZBSO_POWER_LIMIT=..." and "ZEUS_PROFILE_PARAMS=W,P" (both ""
 * when p is NULL), each at most cap bytes. */
void run_power_env(const run_power *p, char *mode, char *params, size_t cap);
/* Before trial tid's command starts: max sets the highest limit; in zero-code mode jit and
 * observe use the job's profile of the batch size (its optimum set at once) or begin
 * profiling by time slices (with --progress-regex; else a message, once). Returns 0 or
 * the actuator's error (ZBSO_EPERM). NULL p: 0. */
int run_power_try_begin(run_power *p, run_bso *b, run_meter *m, const zbso_trial_id *tid,
                        bool zero_code, zbso_err *err);
/* Each line of the command's output (progress), with epoch_end for a metric line. */
void run_power_line(run_power *p, const char *line, bool epoch_end);
/* Advances the time slices (one step per second); problems stop profiling with a
 * message, never the try. */
void run_power_tick(run_power *p);
/* After the command ended, however: puts back the limits that differ from those at open,
 * saying so. */
void run_power_try_end(run_power *p);

/* ---- the log directory (history.c) ---------------------------------------------------- */
#define RUN_PATH_MAX 4096

typedef struct run_history {
    char dir[RUN_PATH_MAX];    /* LOG_DIR/<job>+x<N>+eta<eta>+beta<beta>+<time> */
    FILE *csv;                 /* history.csv, appended and flushed per row */
} run_history;

typedef struct run_history_row {
    int64_t recurrence, try_no, batch_size;
    double time_s, energy_j, cost;
    bool reached;
} run_history_row;

/* Creates base and its parents (so a bad --log-dir is found before anything is
 * registered). Returns 0 or ZBSO_EIO naming the directory and the reason. */
int run_history_make_base(const char *base, zbso_err *err);
/* Creates base (and its parents) and the run's directory in it, named after the job, the
 * recurrences, eta, beta ("none" when absent) and the local time, and opens history.csv
 * with its header. Returns 0 or ZBSO_EIO naming the directory or file and the reason. */
int run_history_open(run_history *h, const char *base, const zbso_job_spec *spec,
                     int64_t recurrences, zbso_err *err);
/* Appends and flushes one row. Returns 0 or ZBSO_EIO. */
int run_history_append(run_history *h, const run_history_row *row, zbso_err *err);
void run_history_close(run_history *h);

#endif
