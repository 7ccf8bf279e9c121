/* driver.c: the recurrence loop of `zbso run` (seed 004's ZeusMaster.run): per try, ask
 * the optimizer for a batch size, run the command, learn whether it reached the target,
 * record it. Written once over run_bso, so embedded and server modes decide alike. */
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/optimizer.h"
#include "recur/recur.h"
#include "run/run.h"
#include "run/runInt.h"
#include "util/buf.h"

#define SPEC_FILE_MAX (1u << 20)   /* a larger job.json is refused */
#define N_ENV 11                   /* variables set for the command */
#define N_ENV_ALWAYS 9             /* the first ones replace inherited ones even when empty */

extern char **environ;

static volatile sig_atomic_t interrupted;    /* the first signal received, 0: none */
static volatile sig_atomic_t n_signals;      /* signals received (a second cuts grace) */

static void on_signal(int sig)
{
    if (!interrupted)
        interrupted = sig;
    n_signals++;
}

/* What the command gets when zbso run was interrupted: a Ctrl-C (SIGINT) passed on as it
 * is, once (the command has its own process group, so the terminal's reaches zbso run
 * alone), else SIGTERM. */
static int stop_signal(void)
{
    return interrupted == SIGINT ? SIGINT : SIGTERM;
}

typedef struct driver {
    const run_options *o;
    run_bso *bso;
    run_meter *meter;
    run_job_file jf;
    zbso_job_spec job;             /* as registered: job_id set */
    run_history hist;
    bool has_re;
    regex_t re;
    recur_policy policy;           /* retries and the cost bound (recur/recur.h) */
    uint64_t seed;
    run_child *child;
    pw_guard *guard;               /* kills the command's group if zbso run dies */
    run_power *power;              /* --power-limit (power.c); NULL without it */
} driver;

/* What one try came to. */
typedef struct try_state {
    driver *d;
    zbso_trial_id tid;
    int64_t epochs;                /* metrics reported so far */
    double time_s, energy_j;       /* cumulative, as last reported */
    bool stopped;                  /* the optimizer said stop */
    bool reached;
    char message[512];             /* the optimizer's last answer */
    int rc;                        /* a failure inside the line callback */
    zbso_err err;
} try_state;

/* Reads the job file into d->jf. Returns 0, ZBSO_EIO naming the file, or ZBSO_EINVAL. */
static int load_job_file(driver *d, zbso_err *err)
{
    const char *path = d->o->spec_path;
    zbso_buf text;
    int rc = 0;
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return err_set(err, ZBSO_EIO, "cannot open the job file '%s': %s", path,
                       strerror(errno));
    buf_init(&text, SPEC_FILE_MAX);
    switch (buf_add_file(&text, f)) {
    case 0:
        rc = run_job_file_parse(path, buf_ptr(&text), buf_len(&text), &d->jf, err);
        break;
    case ZBSO_ETOOBIG:
        rc = err_set(err, ZBSO_EINVAL, "the job file '%s' is over %u bytes", path,
                     SPEC_FILE_MAX);
        break;
    case ZBSO_ENOMEM:
        rc = err_set(err, ZBSO_ENOMEM, "out of memory reading '%s'", path);
        break;
    default:
        rc = err_set(err, ZBSO_EIO, "cannot read the job file '%s': %s", path,
                     strerror(errno));
    }
    buf_free(&text);
    fclose(f);
    return rc;
}

/* The placeholder values of a try with batch size bs. */
static run_subst subst_for(const driver *d, int64_t bs, uint64_t seed)
{
    run_subst s = {
        .batch_size = bs,
        .has_lr = d->jf.has_lr,
        .lr = d->jf.has_lr ? run_lr_scale(d->jf.learning_rate, d->jf.optimizer,
                                          d->job.default_batch_size, bs) : 0,
        .seed = seed,
        .epochs = d->job.max_epochs,
        .target_metric = d->job.target_metric,
    };
    return s;
}

/* The command's argv with placeholders filled: malloc'd array of malloc'd strings,
 * NULL-terminated (free with free_argv). Returns 0 or ZBSO_EINVAL / ZBSO_ENOMEM. */
static int build_argv(const driver *d, const run_subst *s, char ***out, zbso_err *err)
{
    size_t argc = 0;
    char **v, buf[RUN_ARG_MAX + 1];
    while (d->o->argv[argc] != NULL)
        argc++;
    if ((v = calloc(argc + 1, sizeof *v)) == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory building the command line");
    for (size_t i = 0; i < argc; i++) {
        int rc = run_subst_arg(d->o->argv[i], s, buf, sizeof buf, err);
        if (rc == 0 && (v[i] = strdup(buf)) == NULL)
            rc = err_set(err, ZBSO_ENOMEM, "out of memory building the command line");
        if (rc < 0) {
            for (size_t k = 0; k < i; k++)
                free(v[k]);
            free(v);
            return rc;
        }
    }
    *out = v;
    return 0;
}

static void free_argv(char **v)
{
    for (size_t i = 0; v != NULL && v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

/* The command's environment: ours (vals, N_ENV "KEY=value" strings) and every inherited
 * variable of another name (the power-limit ones, after N_ENV_ALWAYS, are ours only when
 * --power-limit sets them). A malloc'd array of borrowed pointers (free it alone). */
static char **build_envp(char vals[N_ENV][RUN_PATH_MAX + 64])
{
    static const char *const ours[] = {
        "ZEUS_BSO_SERVER_URL=", "ZEUS_BSO_JOB_ID=", "ZEUS_BSO_TRIAL_NUMBER=",
        "ZEUS_BATCH_SIZE=", "ZEUS_LOG_DIR=", "ZEUS_JOB_ID=", "ZEUS_ETA_KNOB=",
        "ZEUS_TARGET_METRIC=", "ZEUS_COST_THRESH=", "ZBSO_POWER_LIMIT=",
        "ZEUS_PROFILE_PARAMS="};
    size_t n = 0, k = 0;
    while (environ[n] != NULL)
        n++;
    char **envp = calloc(n + N_ENV + 1, sizeof *envp);
    if (envp == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        bool mine = false;
        for (size_t j = 0; j < N_ENV && !mine; j++)
            mine = strncmp(environ[i], ours[j], strlen(ours[j])) == 0 &&
                   (j < N_ENV_ALWAYS || vals[j][0] != '\0');
        if (!mine)
            envp[k++] = environ[i];
    }
    for (size_t j = 0; j < N_ENV; j++)
        if (vals[j][0] != '\0')
            envp[k++] = vals[j];
    return envp;
}

/* Fills the variables of SPEC §7 for try tag of trial t; ZEUS_BSO_SERVER_URL only in
 * server mode (left "" otherwise, which build_envp skips and so removes). */
static void env_values(const driver *d, const zbso_trial_id *t, const char *tag,
                       char vals[N_ENV][RUN_PATH_MAX + 64])
{
    const size_t cap = RUN_PATH_MAX + 64;
    char eta[40], target[40], thresh[40];
    run_fmt_double(d->job.eta_knob, eta, sizeof eta);
    run_fmt_double(d->job.target_metric, target, sizeof target);
    double bound = recur_cost_bound(&d->policy);
    if (isfinite(bound))
        run_fmt_double(bound, thresh, sizeof thresh);
    else
        snprintf(thresh, sizeof thresh, "inf");
    vals[0][0] = '\0';
    if (d->bso->server_url != NULL)
        snprintf(vals[0], cap, "ZEUS_BSO_SERVER_URL=%s", d->bso->server_url);
    snprintf(vals[1], cap, "ZEUS_BSO_JOB_ID=%s", t->job_id);
    snprintf(vals[2], cap, "ZEUS_BSO_TRIAL_NUMBER=%lld", (long long)t->trial_number);
    snprintf(vals[3], cap, "ZEUS_BATCH_SIZE=%lld", (long long)t->batch_size);
    snprintf(vals[4], cap, "ZEUS_LOG_DIR=%s", d->hist.dir);
    snprintf(vals[5], cap, "ZEUS_JOB_ID=%s", tag);
    snprintf(vals[6], cap, "ZEUS_ETA_KNOB=%s", eta);
    snprintf(vals[7], cap, "ZEUS_TARGET_METRIC=%s", target);
    snprintf(vals[8], cap, "ZEUS_COST_THRESH=%s", thresh);
    run_power_env(d->power, vals[9], vals[10], cap);
}

/* --metric-regex: each matching line is one epoch's metric, reported with the time and
 * energy measured so far. Returns 2 to stop reading when the optimizer says stop, 3 on a
 * failure (in s->rc / s->err), else 0. */
static int on_line(void *ctx, const char *line, size_t len)
{
    try_state *s = ctx;
    driver *d = s->d;
    regmatch_t m[2];
    char num[64], *end;
    zbso_report_response resp;

    bool matched = regexec(&d->re, line, 2, m, 0) == 0;
    run_power_line(d->power, line, matched);
    if (!matched)
        return 0;
    regmatch_t g = d->re.re_nsub >= 1 && m[1].rm_so >= 0 ? m[1] : m[0];
    size_t n = (size_t)(g.rm_eo - g.rm_so);
    snprintf(num, sizeof num, "%.*s", (int)(n < sizeof num - 1 ? n : sizeof num - 1),
             line + g.rm_so);
    double metric = strtod(num, &end);
    if (num[0] == '\0' || *end != '\0' || !isfinite(metric)) {
        fprintf(stderr, "zbso run: ignoring a line matching --metric-regex whose metric "
                        "'%s' is not a finite number: %.200s\n", num, line);
        return 0;
    }
    (void)len;
    s->epochs++;
    if ((s->rc = run_meter_lap(d->meter, true, &s->time_s, &s->energy_j, &s->err)) < 0)
        return 3;
    zbso_training_result r = {s->tid, s->time_s, s->energy_j, metric, s->epochs};
    if ((s->rc = d->bso->ops->report(d->bso, &r, &resp, &s->err)) < 0)
        return 3;
    snprintf(s->message, sizeof s->message, "%s", resp.message);
    if (!resp.stop_train)
        return 0;
    s->stopped = true;
    s->reached = resp.converged;
    return 2;
}

/* Client mode: the command ran the trial itself. Ends it (a no-op when the command's last
 * report ended it) and asks how it ended with a repeated report, which changes nothing:
 * the answer carries the stored outcome; a trial that the command never finished is
 * Failed now and answers 409. Sets s->stopped (finished by the command) and s->reached. */
static int read_outcome(driver *d, try_state *s, zbso_err *err)
{
    zbso_report_response resp;
    zbso_training_result probe = {s->tid, 0, 0, 0, 1};
    int rc = d->bso->ops->end_trial(d->bso, &s->tid, err);
    if (rc < 0)
        return rc;
    rc = d->bso->ops->report(d->bso, &probe, &resp, err);
    if (rc == ZBSO_ECONFLICT)
        return 0;
    if (rc < 0)
        return rc;
    s->stopped = true;
    s->reached = resp.converged;
    return 0;
}

/* The failure of a try whose command exited (desc) without reporting: prints what to do
 * on stderr and returns ZBSO_ECONFIG with err saying what happened. */
static int no_report(const driver *d, const char *cmd, const char *desc, int64_t trial,
                     const char *log_path, zbso_err *err)
{
    if (d->has_re) {
        fprintf(stderr, "zbso run: hint: no line of the command's output matched "
                        "--metric-regex '%s'; check it against %s (its first group must be "
                        "the metric, e.g. 'val_acc=([0-9.]+)'), or drop it and report each "
                        "epoch through the client library (zbso.optimizer.batch_size, "
                        "zbso_client_*)\n", d->o->metric_regex, log_path);
        return err_set(err, ZBSO_ECONFIG, "the command '%s' %s without printing a metric "
                       "that --metric-regex matches (trial %lld, see %s); stopped after this "
                       "first try, since every try would end alike", cmd, desc,
                       (long long)trial, log_path);
    }
    fprintf(stderr, "zbso run: hint: without --metric-regex the command must report each "
                    "epoch through the client library (zbso.optimizer.batch_size's "
                    "BatchSizeOptimizer, or zbso_client_*) until the optimizer says stop; "
                    "or give --metric-regex 'RE' (e.g. 'val_acc=([0-9.]+)') and zbso run "
                    "reads one metric per epoch from its output\n");
    return err_set(err, ZBSO_ECONFIG, "the command '%s' %s without finishing its trial "
                   "%lld: it reported nothing, or stopped before the optimizer said so (see "
                   "%s); stopped after this first try, since every try would end alike", cmd,
                   desc, (long long)trial, log_path);
}

/* Runs one try of recurrence rec. Fills *row for history.csv (row->try_no set by the
 * caller) and returns 0 when the try ran to an outcome (reached or not); a negative code
 * when the run must stop (the trial has been ended). *dispatched tells whether a trial was
 * dispatched, so a row must be recorded. */
static int run_try(driver *d, int64_t rec, int64_t try_no, run_history_row *row,
                   bool *dispatched, zbso_err *err)
{
    char tag[64], log_path[RUN_PATH_MAX + 80], desc[96];
    char (*vals)[RUN_PATH_MAX + 64] = NULL;
    char **argv = NULL, **envp = NULL;
    FILE *log = NULL;
    run_child *c = d->child;
    bool spawned = false, ended = false, metered = false;
    double time_s = 0, energy_j = 0;
    int rc, r = 0;
    try_state *s = calloc(1, sizeof *s);

    *dispatched = false;
    if (s == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory starting a try");
    s->d = d;
    if ((rc = d->bso->ops->next_batch_size(d->bso, d->job.job_id, &s->tid, err)) < 0)
        goto out;
    *dispatched = true;
    row->batch_size = s->tid.batch_size;
    snprintf(tag, sizeof tag, "rec%02lld+try%02lld", (long long)rec, (long long)try_no);
    snprintf(log_path, sizeof log_path, "%s/%s.log", d->hist.dir, tag);
    uint64_t seed = d->seed + (uint64_t)(rec - 1) * (uint64_t)d->policy.max_tries +
                    (uint64_t)(try_no - 1);
    run_subst sub = subst_for(d, s->tid.batch_size, seed);
    if ((rc = build_argv(d, &sub, &argv, err)) < 0)
        goto out;
    if ((vals = calloc(N_ENV, sizeof *vals)) == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory building the environment");
        goto out;
    }
    env_values(d, &s->tid, tag, vals);
    if ((envp = build_envp(vals)) == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory building the environment");
        goto out;
    }
    if ((log = fopen(log_path, "we")) == NULL) {
        rc = err_set(err, ZBSO_EIO, "cannot create the log file '%s': %s", log_path,
                     strerror(errno));
        goto out;
    }
    if ((rc = run_meter_start(d->meter, err)) < 0)
        goto out;
    metered = true;
    if ((rc = run_power_try_begin(d->power, d->bso, d->meter, &s->tid, d->has_re, err)) < 0)
        goto out;
    if ((rc = run_child_spawn(c, argv, envp, log, err)) < 0) {
        fprintf(log, "zbso run: %s\n", err->msg);
        goto out;
    }
    spawned = true;

    while (r == 0 && !interrupted) {
        r = run_child_read(c, 100, d->has_re ? on_line : NULL, s, err);
        run_power_tick(d->power);
    }
    if (r < 0 || r == 3 || interrupted) {
        run_child_stop(c, stop_signal(), d->o->grace_s, &n_signals, NULL);
        if (r == 3) {
            *err = s->err;
            rc = s->rc;
        } else if (r < 0) {
            rc = r;
        } else {
            rc = err_set(err, ZBSO_ERUNTIME, "interrupted by signal %d (%s); trial %lld "
                         "ended", (int)interrupted, strsignal((int)interrupted),
                         (long long)s->tid.trial_number);
        }
        goto out;
    }
    rc = r == 2 ? run_child_stop(c, SIGTERM, d->o->grace_s, &n_signals, err)
                : run_child_wait(c, err);
    if (rc < 0)
        goto out;
    run_child_describe(c->exit_status, desc, sizeof desc);
    bool exit_ok = WIFEXITED(c->exit_status) && WEXITSTATUS(c->exit_status) == 0;
    if (!d->has_re) {
        if ((rc = read_outcome(d, s, err)) < 0)
            goto out;
        ended = true;
    }
    if (!s->stopped && !exit_ok) {
        rc = err_set(err, ZBSO_EIO, "the command '%s' %s %s (trial %lld, see %s)", argv[0],
                     desc, d->has_re ? "before the optimizer stopped it"
                                     : "without finishing its trial",
                     (long long)s->tid.trial_number, log_path);
        goto out;
    }
    /* A try that reported nothing says the command and zbso run are not wired together
     * (no --metric-regex, or one that matches nothing): every retry would burn a whole
     * training run and end alike, so the run stops here with one Failed trial. */
    if (!s->stopped && (!d->has_re || s->epochs == 0)) {
        rc = no_report(d, argv[0], desc, s->tid.trial_number, log_path, err);
        goto out;
    }
    if (!s->stopped)
        fprintf(stderr, "zbso run: the command %s %s (trial %lld); counted as not reaching "
                        "the target\n", desc,
                d->has_re ? "before the optimizer stopped it" : "without finishing its trial",
                (long long)s->tid.trial_number);
    rc = 0;
out:
    if (*dispatched) {
        if (metered) {
            double t = 0, e = 0;
            zbso_err ignored;
            if (run_meter_lap(d->meter, false, &t, &e, &ignored) == 0) {
                time_s = t;
                energy_j = e;
            }
        }
        /* With --metric-regex the optimizer judged the cumulative figures it was sent. */
        if (d->has_re && s->stopped) {
            time_s = s->time_s;
            energy_j = s->energy_j;
        }
        row->time_s = time_s;
        row->energy_j = energy_j;
        row->cost = opt_cost(energy_j, time_s, d->job.eta_knob, d->job.max_power);
        row->reached = rc == 0 && s->reached;
        if (!ended || rc < 0) {
            zbso_err end_err;
            if (d->bso->ops->end_trial(d->bso, &s->tid, &end_err) < 0 && rc == 0)
                rc = err_set(err, end_err.code, "%s", end_err.msg);
        }
        if (spawned && !c->exited)
            run_child_stop(c, stop_signal(), d->o->grace_s, &n_signals, NULL);
        run_power_try_end(d->power);
    }
    if (log != NULL)
        fclose(log);
    free(envp);
    free(vals);
    free_argv(argv);
    free(s);
    return rc;
}

/* Checks the command line's placeholders, the regex and the log directory before
 * anything is registered. Returns 0, ZBSO_EINVAL or ZBSO_EIO. */
static int prepare(driver *d, zbso_err *err)
{
    char **argv = NULL;
    int rc;
    if (d->o->metric_regex != NULL) {
        int e = regcomp(&d->re, d->o->metric_regex, REG_EXTENDED);
        if (e != 0) {
            char why[128];
            regerror(e, &d->re, why, sizeof why);
            return err_set(err, ZBSO_EINVAL, "--metric-regex '%s' is not a valid extended "
                           "regular expression: %s", d->o->metric_regex, why);
        }
        d->has_re = true;
    }
    run_subst sub = subst_for(d, d->job.default_batch_size, d->seed);
    if ((rc = build_argv(d, &sub, &argv, err)) < 0)
        return rc;
    free_argv(argv);
    return run_history_make_base(d->o->log_dir, err);
}

/* Prints the summary line of a try. */
static void print_try(const run_history_row *row, const char *note)
{
    printf("rec %02lld try %02lld: batch size %lld %s: time %.3f s, energy %.3f J, cost "
           "%.3f%s%s\n", (long long)row->recurrence, (long long)row->try_no,
           (long long)row->batch_size, row->reached ? "reached the target"
                                                    : "did not reach the target",
           row->time_s, row->energy_j, row->cost, note[0] ? "; " : "", note);
    fflush(stdout);
}

/* The recurrence loop proper, once everything is open; retries as recur/recur.h says. */
static int recurrences(driver *d, zbso_err *err)
{
    int rc = 0;
    recur_init(&d->policy, d->job.default_batch_size, d->job.has_beta_knob, d->job.beta_knob);
    d->policy.max_tries = d->o->max_tries > 0 ? d->o->max_tries : RECUR_MAX_TRIES;
    for (int64_t rec = 1; rec <= d->o->recurrences; rec++) {
        recur_next next = RECUR_RETRY;
        for (int64_t try_no = 1; next == RECUR_RETRY; try_no++) {
            run_history_row row = {.recurrence = rec, .try_no = try_no};
            bool dispatched;
            zbso_err hist_err;
            if (interrupted)
                return err_set(err, ZBSO_ERUNTIME, "interrupted by signal %d (%s)",
                               (int)interrupted, strsignal((int)interrupted));
            rc = run_try(d, rec, try_no, &row, &dispatched, err);
            if (dispatched) {
                print_try(&row, rc < 0 ? "failed" : "");
                if (run_history_append(&d->hist, &row, &hist_err) < 0 && rc == 0)
                    rc = err_set(err, hist_err.code, "%s", hist_err.msg);
            }
            if (rc < 0)
                return rc;
            next = recur_after_try(&d->policy, rec, try_no, row.batch_size, row.reached,
                                   row.cost);
        }
        if (next == RECUR_FAIL_DEFAULT)
            return err_set(err, ZBSO_ETRAINFAIL,
                           "the default batch size %lld did not reach the target metric %g "
                           "in the first recurrence; it must (seed 004): raise max_epochs, "
                           "lower target_metric or pick another default batch size (logs in "
                           "%s)", (long long)d->job.default_batch_size, d->job.target_metric,
                           d->hist.dir);
        if (next == RECUR_FAIL_TRIES)
            return err_set(err, ZBSO_ETRAINFAIL,
                           "recurrence %lld did not reach the target metric %g in %lld tries "
                           "(--max-tries; logs in %s)", (long long)rec, d->job.target_metric,
                           (long long)d->policy.max_tries, d->hist.dir);
    }
    return 0;
}

int run_main(const run_options *o, zbso_err *err)
{
    struct sigaction sa, old_int, old_term, old_hup;
    driver *d = calloc(1, sizeof *d);
    bool handlers = false;
    int rc;

    if (d == NULL || (d->child = malloc(sizeof *d->child)) == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory starting zbso run");
        goto out;
    }
    d->o = o;
    d->child->guard = NULL;
    d->hist.csv = NULL;
    if ((rc = load_job_file(d, err)) < 0)
        goto out;
    d->seed = o->has_seed ? o->seed : d->jf.has_seed ? d->jf.seed : RUN_DEFAULT_SEED;
    if ((rc = run_meter_open(o->no_gpu, &d->meter, err)) < 0)
        goto out;
    if ((rc = run_job_file_finish(&d->jf, run_meter_gpu_count(d->meter),
                                  run_meter_max_power_limit_mw(d->meter),
                                  run_meter_gpu_model(d->meter), err)) < 0)
        goto out;
    d->job = d->jf.spec;
    if ((rc = prepare(d, err)) < 0 || (rc = run_power_open(o, &d->job, &d->power, err)) < 0)
        goto out;
    zbso_err gerr;
    if (pw_guard_start(PW_OBSERVE, NULL, 0, NULL, &d->guard, &gerr) < 0)
        fprintf(stderr, "zbso run: %s; a training command's children would outlive a "
                "SIGKILL of zbso run\n", gerr.msg);
    d->child->guard = d->guard;
    rc = o->server_url != NULL ? run_bso_http_open(o->server_url, &d->bso, err)
                               : run_bso_embedded_open(o, &d->bso, err);
    if (rc < 0)
        goto out;
    if ((rc = d->bso->ops->register_job(d->bso, &d->jf.spec, &d->job, err)) < 0)
        goto out;
    if ((rc = run_history_open(&d->hist, o->log_dir, &d->job, o->recurrences, err)) < 0)
        goto out;
    printf("zbso run: job %s, %lld recurrences, logs in %s\n", d->job.job_id,
           (long long)o->recurrences, d->hist.dir);
    fflush(stdout);

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    n_signals = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    handlers = true;
    rc = recurrences(d, err);
out:
    if (handlers) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGHUP, &old_hup, NULL);
    }
    if (d != NULL) {
        run_history_close(&d->hist);
        run_power_close(d->power);
        pw_guard_stop(d->guard, true);
        run_bso_close(d->bso);
        run_meter_free(d->meter);
        if (d->has_re)
            regfree(&d->re);
        free(d->child);
    }
    free(d);
    return rc;
}
