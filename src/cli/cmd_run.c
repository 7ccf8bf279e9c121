/* cmd_run.c: `zbso run`: reads the configuration as every command does (config_load) and
 * the command line into run_options, and hands them to src/run (the recurrence driver).
 * Nothing here talks to the optimizer or starts a process. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/config.h"
#include "run/run.h"

static const char run_usage[] =
    "usage: zbso run [--server URL | --db URL] --spec job.json --recurrences N\n"
    "                [--log-dir DIR] [--metric-regex RE] [--max-tries N] [--grace S]\n"
    "                [--seed N] [--no-gpu] [--policy zeus|smart]\n"
    "                [--power-limit jit|max|observe [--progress-regex RE] [--pl-step W]\n"
    "                 [--pl-warmup S] [--pl-hold S] [--profile-params W,P]]\n"
    "                -- COMMAND ARGS...\n"
    "\n"
    "Runs a training command N times with the batch sizes the optimizer picks (seed 004).\n"
    "  --server URL       a zbso (or Zeus) server; default: embedded mode on --db\n"
    "  --db URL           embedded mode's database, a URL as for zbso serve\n"
    "                     (sqlite:///zbso.db, postgresql://..., mysql://...) or a SQLite\n"
    "                     file's path (default zbso.db); ZEUS_BSO_DB_USER and\n"
    "                     ZEUS_BSO_DB_PASSWORD fill a URL without credentials;\n"
    "                     ZEUS_BSO_TRIAL_TIMEOUT is its optimizer's trial lease\n"
    "  --policy zeus|smart\n"
    "                     with --db: batch size policy of a job whose file names none\n"
    "                     (ZBSO_POLICY, default zeus), as zbso serve --policy\n"
    "  --spec FILE        the job: JobSpec fields, optionally max_power, number_of_gpus,\n"
    "                     gpu_model (else measured), learning_rate, optimizer, seed, epochs\n"
    "  --recurrences N    how many times the job recurs (>= 1)\n"
    "  --log-dir DIR      where the run's directory goes (default zbso-runs)\n"
    "  --metric-regex RE  read one metric per epoch from the command's output (the first\n"
    "                     group of RE, e.g. 'val_acc=([0-9.]+)'), measure and report it;\n"
    "                     without it the command reports through the zbso/Zeus client.\n"
    "                     A try that reports nothing stops the run at once\n"
    "  --max-tries N      tries per recurrence before the run fails (default 20, as\n"
    "                     Zeus's ZeusMaster)\n"
    "  --grace S          seconds between SIGTERM and SIGKILL when stopping (default 10)\n"
    "  --seed N           base of the {seed} placeholder (default: job file, else 123456)\n"
    "  --no-gpu           measure time only (energy 0) instead of the GPUs\n"
    "  --power-limit M    optimize the GPU power limit too (SPEC 7.1): jit profiles each\n"
    "                     batch size once (the profile is kept on the job), max trains at\n"
    "                     the highest limit, observe sets nothing; the limits are put back\n"
    "                     after every try. Client mode: the script's power-limit optimizer\n"
    "                     gets ZBSO_POWER_LIMIT and ZEUS_PROFILE_PARAMS. With --metric-regex:\n"
    "                     zbso run profiles by time slices, per unit of the command's\n"
    "  --progress-regex RE  progress counter (first group, e.g. 'step ([0-9]+)')\n"
    "  --pl-step W        W between the limits profiled (default 25)\n"
    "  --pl-warmup S      seconds each limit is warmed up (default 2) ...\n"
    "  --pl-hold S        ... and then measured (default 8)\n"
    "  --profile-params W,P  client mode: warm-up and measured steps per limit (10,40)\n"
    "Placeholders in COMMAND ARGS: {bs} {batch_size} {lr} {learning_rate} {seed} {epochs}\n"
    "{target_metric}. Environment: ZEUS_BSO_SERVER_URL, ZEUS_BSO_JOB_ID,\n"
    "ZEUS_BSO_TRIAL_NUMBER, ZEUS_BATCH_SIZE, ZEUS_LOG_DIR, ZEUS_JOB_ID, ZEUS_ETA_KNOB,\n"
    "ZEUS_TARGET_METRIC, ZEUS_COST_THRESH. With --server, requests are retried as the\n"
    "client library's are, for ZBSO_CLIENT_RETRY_TIMEOUT seconds (default 60).\n"
    "Configuration is read as by zbso serve: the environment, then a .env file.\n";

enum { OPT_SERVER = 256, OPT_DB, OPT_SPEC, OPT_RECUR, OPT_LOG_DIR, OPT_REGEX, OPT_GRACE,
       OPT_SEED, OPT_NO_GPU, OPT_HELP, OPT_PL, OPT_PROGRESS, OPT_PL_STEP, OPT_PL_WARMUP,
       OPT_PL_HOLD, OPT_PROFILE_PARAMS, OPT_MAX_TRIES, OPT_POLICY };

/* Reads an integer option in [lo, hi] into *out; ZBSO_EINVAL naming the option and value. */
static int int_option(const char *name, const char *v, long long lo, long long hi,
                      int64_t *out, zbso_err *err)
{
    char *end;
    long long n = strtoll(v, &end, 10);
    if (v[0] == '\0' || *end != '\0' || n < lo || n > hi)
        return err_set(err, ZBSO_EINVAL, "%s '%s' is not an integer in [%lld, %lld]", name, v,
                       lo, hi);
    *out = n;
    return 0;
}

/* Parses argv into *o, and --policy into cfg (loaded by the caller: the flag wins over
 * ZBSO_POLICY). Returns 0, 1 for --help (usage printed), or ZBSO_EINVAL. */
static int parse_args(int argc, char **argv, run_options *o, cli_config *cfg, zbso_err *err)
{
    static const struct option opts[] = {
        {"server", required_argument, NULL, OPT_SERVER},
        {"db", required_argument, NULL, OPT_DB},
        {"spec", required_argument, NULL, OPT_SPEC},
        {"recurrences", required_argument, NULL, OPT_RECUR},
        {"log-dir", required_argument, NULL, OPT_LOG_DIR},
        {"metric-regex", required_argument, NULL, OPT_REGEX},
        {"grace", required_argument, NULL, OPT_GRACE},
        {"seed", required_argument, NULL, OPT_SEED},
        {"no-gpu", no_argument, NULL, OPT_NO_GPU},
        {"power-limit", required_argument, NULL, OPT_PL},
        {"progress-regex", required_argument, NULL, OPT_PROGRESS},
        {"pl-step", required_argument, NULL, OPT_PL_STEP},
        {"pl-warmup", required_argument, NULL, OPT_PL_WARMUP},
        {"pl-hold", required_argument, NULL, OPT_PL_HOLD},
        {"profile-params", required_argument, NULL, OPT_PROFILE_PARAMS},
        {"max-tries", required_argument, NULL, OPT_MAX_TRIES},
        {"policy", required_argument, NULL, OPT_POLICY},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    char *end;
    bool policy_flag = false;
    int c;

    memset(o, 0, sizeof *o);
    o->log_dir = "zbso-runs";
    o->grace_s = RUN_DEFAULT_GRACE_S;
    o->pl_step_w = 25;
    o->pl_warmup_s = 2;
    o->pl_hold_s = 8;
    o->profile_warmup = 10;
    o->profile_measure = 40;
    optind = 1;
    opterr = 0;
    /* "+": stop at the command, so its own options are left to it. */
    while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
        switch (c) {
        case OPT_SERVER: o->server_url = optarg; break;
        case OPT_DB: o->db = optarg; break;
        case OPT_SPEC: o->spec_path = optarg; break;
        case OPT_LOG_DIR: o->log_dir = optarg; break;
        case OPT_REGEX: o->metric_regex = optarg; break;
        case OPT_NO_GPU: o->no_gpu = true; break;
        case OPT_RECUR:
            o->recurrences = strtoll(optarg, &end, 10);
            if (optarg[0] == '\0' || *end != '\0' || o->recurrences < 1 ||
                o->recurrences > 1000000)
                return err_set(err, ZBSO_EINVAL,
                               "--recurrences '%s' is not an integer in [1, 1000000]", optarg);
            break;
        case OPT_GRACE:
            o->grace_s = strtod(optarg, &end);
            if (optarg[0] == '\0' || *end != '\0' || !(o->grace_s >= 0 && o->grace_s <= 86400))
                return err_set(err, ZBSO_EINVAL,
                               "--grace '%s' is not a number of seconds in [0, 86400]", optarg);
            break;
        case OPT_SEED:
            o->seed = strtoull(optarg, &end, 10);
            if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || o->seed > (1ULL << 62))
                return err_set(err, ZBSO_EINVAL,
                               "--seed '%s' is not a non-negative integer below 2^62", optarg);
            o->has_seed = true;
            break;
        case OPT_PL:
            if (!strcmp(optarg, "jit"))
                o->power_limit = RUN_PL_JIT;
            else if (!strcmp(optarg, "max"))
                o->power_limit = RUN_PL_MAX;
            else if (!strcmp(optarg, "observe"))
                o->power_limit = RUN_PL_OBSERVE;
            else
                return err_set(err, ZBSO_EINVAL, "--power-limit '%s' is not jit, max or "
                               "observe", optarg);
            break;
        case OPT_PROGRESS: o->progress_regex = optarg; break;
        case OPT_PL_STEP:
            if (int_option("--pl-step", optarg, 1, 1000000, &o->pl_step_w, err) < 0)
                return ZBSO_EINVAL;
            break;
        case OPT_PL_WARMUP:
            if (int_option("--pl-warmup", optarg, 0, 3600, &o->pl_warmup_s, err) < 0)
                return ZBSO_EINVAL;
            break;
        case OPT_MAX_TRIES:
            if (int_option("--max-tries", optarg, 1, 1000, &o->max_tries, err) < 0)
                return ZBSO_EINVAL;
            break;
        case OPT_PL_HOLD:
            if (int_option("--pl-hold", optarg, 1, 3600, &o->pl_hold_s, err) < 0)
                return ZBSO_EINVAL;
            break;
        case OPT_PROFILE_PARAMS: {
            char w[32];
            const char *comma = strchr(optarg, ',');
            size_t k = comma ? (size_t)(comma - optarg) : 0;
            if (!comma || k >= sizeof w)
                return err_set(err, ZBSO_EINVAL, "--profile-params '%s' is not WARMUP,MEASURE "
                               "(steps)", optarg);
            memcpy(w, optarg, k);
            w[k] = '\0';
            if (int_option("--profile-params' warm-up", w, 0, 1000000, &o->profile_warmup,
                           err) < 0 ||
                int_option("--profile-params' measured steps", comma + 1, 1, 1000000,
                           &o->profile_measure, err) < 0)
                return ZBSO_EINVAL;
            break;
        }
        case OPT_POLICY:
            if (config_parse_policy("--policy", optarg, &cfg->policy, err) < 0)
                return ZBSO_EINVAL;
            policy_flag = true;
            break;
        case OPT_HELP:
            fputs(run_usage, stdout);
            return 1;
        default:
            return err_set(err, ZBSO_EINVAL, "unknown or incomplete option '%s'",
                           argv[optind - 1]);
        }
    }
    if (o->server_url != NULL && o->db != NULL)
        return err_set(err, ZBSO_EINVAL, "give --server URL or --db URL, not both");
    /* A server resolves a job's policy itself, with its own default. */
    if (o->server_url != NULL && policy_flag)
        return err_set(err, ZBSO_EINVAL, "--policy is the default of --db's optimizer; with "
                       "--server the server's default applies (zbso serve --policy), or "
                       "name \"policy\" in the job file");
    if (o->server_url == NULL && o->db == NULL)
        o->db = "zbso.db";
    if (o->db != NULL && o->db[0] == '\0')
        return err_set(err, ZBSO_EINVAL, "--db '' is empty: give a database URL or a path");
    if (o->spec_path == NULL)
        return err_set(err, ZBSO_EINVAL, "--spec job.json is required");
    if (o->recurrences == 0)
        return err_set(err, ZBSO_EINVAL, "--recurrences N is required");
    if (o->power_limit == RUN_PL_NONE && o->progress_regex != NULL)
        return err_set(err, ZBSO_EINVAL, "--progress-regex needs --power-limit");
    if (optind >= argc || argv[optind][0] == '\0')
        return err_set(err, ZBSO_EINVAL, "no training command: give it after '--'");
    o->argv = argv + optind;
    o->store = cli_store_options(cfg);
    o->default_policy = cfg->policy;
    o->trial_timeout_s = cfg->trial_timeout_s;
    return 0;
}

int cli_run(int argc, char **argv)
{
    run_options o;
    cli_config cfg;  /* o.store points into it */
    zbso_err err;
    int rc;

    err_clear(&err);
    config_defaults(&cfg);
    if (config_load(&cfg, &err) < 0) {
        fprintf(stderr, "zbso run: %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    if ((rc = parse_args(argc, argv, &o, &cfg, &err)) != 0) {
        if (rc > 0)
            return CLI_EXIT_OK;
        fprintf(stderr, "zbso run: %s\n(see 'zbso run --help')\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    if ((rc = run_main(&o, &err)) < 0) {
        fprintf(stderr, "zbso run: %s\n", err.msg);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}
