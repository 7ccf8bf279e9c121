/* run.h: `zbso run` (SPEC §7, seed 004's ZeusMaster): drives a training command across
 * recurrences with the batch sizes the optimizer picks, in-process on a SQLite file or
 * against a zbso server. Knows nothing of the command line; src/cli/cmd_run.c parses it. */
#ifndef ZBSO_RUN_RUN_H
#define ZBSO_RUN_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/types.h"
#include "store/store.h"
#include "util/err.h"

#define RUN_DEFAULT_SEED 123456   /* seed 004's default */

/* --power-limit (SPEC §7.1). */
enum run_pl_mode { RUN_PL_NONE = 0, RUN_PL_JIT = 1, RUN_PL_MAX = 2, RUN_PL_OBSERVE = 3 };
#define RUN_DEFAULT_GRACE_S 10.0  /* SIGTERM -> SIGKILL */

typedef struct run_options {
    const char *server_url;    /* server mode: base URL; NULL for embedded mode */
    const char *db;            /* embedded mode: a database URL, or a SQLite file's path */
    /* Embedded mode: the store options the configuration sets, as for `zbso serve`
     * (src/cli's cli_store_options: echo_sql, ZEUS_BSO_DB_USER / ZEUS_BSO_DB_PASSWORD for
     * a URL without credentials; not owned). src/run adds create_if_empty. */
    store_options store;
    /* Embedded mode: the policy of a job whose file names none (`--policy`, ZBSO_POLICY),
     * as the server's default is; ZBSO_POLICY_ZEUS unless set. */
    zbso_policy default_policy;
    /* Embedded mode: the lease of a Dispatched trial (ZEUS_BSO_TRIAL_TIMEOUT, as for `zbso
     * serve`; 0 disables), which matters when several runs share one database. */
    double trial_timeout_s;
    const char *spec_path;     /* job.json */
    int64_t recurrences;       /* >= 1 */
    const char *log_dir;       /* base directory of the run's log directory */
    int64_t max_tries;         /* tries per recurrence; 0: RECUR_MAX_TRIES */
    /* NULL: the command reports through the client itself; else an extended POSIX regex
     * whose first group (or whole match) is one epoch's metric in the command's output. */
    const char *metric_regex;
    double grace_s;            /* >= 0 */
    bool has_seed;             /* --seed given: overrides job.json's "seed" */
    uint64_t seed;
    bool no_gpu;               /* measure time only, energy 0, no NVML */
    int power_limit;           /* enum run_pl_mode; RUN_PL_NONE sets nothing */
    const char *progress_regex; /* zero-code mode's progress counter; NULL: none */
    int64_t pl_step_w;         /* W between the limits of time slices (25) */
    int64_t pl_warmup_s;       /* seconds each limit is warmed up (2) ... */
    int64_t pl_hold_s;         /* ... and then measured (8) */
    int64_t profile_warmup;    /* client mode: ZEUS_PROFILE_PARAMS (10, 40) */
    int64_t profile_measure;
    char *const *argv;         /* the training command, NULL-terminated, argv[0] non-NULL */
} run_options;

/* Runs the job o->recurrences times (SPEC §7) and prints one line per try to stdout.
 * Returns 0 when every recurrence reached the target; otherwise a negative ZBSO_E* code
 * with err naming what failed: ZBSO_EINVAL (bad job.json, bad regex, a placeholder that
 * cannot be filled), ZBSO_ECONFIG (no GPU measurement without --no-gpu), ZBSO_EIO (log
 * directory, command that cannot be started or exits non-zero), ZBSO_ETRAINFAIL (the
 * default batch size of the first recurrence, or max_tries tries, did not reach the
 * target), ZBSO_ECONFIG (also a try that reported nothing: the run stops at once),
 * ZBSO_ERUNTIME (server failures, interrupted by a signal), store errors. Every try that
 * ran is in history.csv, and a trial that was dispatched has been ended, even on failure. */
int run_main(const run_options *o, zbso_err *err);

#endif
