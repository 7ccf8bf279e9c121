/* cmd_jobs.c: `zbso jobs ls|show|trials|curve|export|rm`: fetches the inspection API's
 * documents (SPEC §5) from a server (src/transport) or straight from a database
 * (src/inspect, the code that answers the server's routes), and prints them through
 * jobs_fmt. Both sources give the same JSON text; nothing here computes a figure. Reads
 * only, except rm (DELETE /jobs, or svc_delete_job on the database). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/config.h"
#include "cli/footprint.h"
#include "cli/jobs_fmt.h"
#include "cli/table.h"
#include "inspect/inspect.h"
#include "service/service.h"
#include "store/store.h"
#include "transport/transport.h"
#include "util/log.h"

/* Rows asked per page: a page of JobSummary documents (about 1 kB each with a long job
 * id) or of trials stays far below the transport's 1 MiB answer limit. */
#define JOBS_PAGE 200
#define TRIALS_PAGE 1000
/* Seconds a request to a server is retried when $ZBSO_CLIENT_RETRY_TIMEOUT is not set: a
 * person at a terminal waits less than a training script's 60 s. */
#define JOBS_RETRY_TIMEOUT_S 5.0

static const char jobs_usage[] =
    "usage: zbso jobs ls [--prefix P]         list every job\n"
    "       zbso jobs show JOB                a job: spec, stage, savings, rounds, arms\n"
    "       zbso jobs trials JOB              a job's trials\n"
    "       zbso jobs curve JOB TRIAL         a trial and its per-epoch reports\n"
    "       zbso jobs export JOB              the job, its trials and their reports\n"
    "       zbso jobs rm [--yes] JOB          delete a job with its trials and arms (on a\n"
    "                                         terminal, after asking; --yes: at once)\n"
    "       zbso jobs compare JOB JOB...      2 to 16 jobs side by side: cost per\n"
    "                                         recurrence, projection, savings\n"
    "options:\n"
    "  --format F        table (default; export: csv), json (the API's document, compact,\n"
    "                    one line) or csv (RFC 4180); export writes csv or json\n"
    "  --server URL      ask a zbso server (the token from ZEUS_BSO_API_TOKEN or\n"
    "                    --token-file); requests are retried for ZBSO_CLIENT_RETRY_TIMEOUT\n"
    "                    seconds (default 5)\n"
    "  --token-file F    read the bearer token from file F (its first line)\n"
    "  --db URL          read the database directly (default: ZEUS_BSO_DATABASE_URL, or\n"
    "                    sqlite:///zbso.db); read-only, except rm\n"
    "  --page-size N     rows per request of ls, trials and export, 1..1000 (default 200\n"
    "                    jobs, 1000 trials); every page is fetched whatever its size\n"
    "Table columns carry their units (J, s); times are UTC. Exit status: 0, 1 when the job\n"
    "or trial is unknown or the server or database failed, 2 for a usage error.\n";

enum { OPT_FORMAT = CLI_OPT_OWN, OPT_SERVER, OPT_TOKEN_FILE, OPT_PREFIX, OPT_PAGE_SIZE,
       OPT_YES };

typedef enum sub { SUB_LS, SUB_SHOW, SUB_TRIALS, SUB_CURVE, SUB_EXPORT, SUB_RM, SUB_COMPARE } sub;

#define COMPARE_MAX 16   /* jobs of one `zbso jobs compare` */

static const struct {
    const char *name;
    int n_args;               /* positional arguments after the subcommand; -1: 2 to
                               * COMPARE_MAX job ids */
} subs[] = {
    [SUB_LS] = {"ls", 0},       [SUB_SHOW] = {"show", 1},     [SUB_TRIALS] = {"trials", 1},
    [SUB_CURVE] = {"curve", 2}, [SUB_EXPORT] = {"export", 1}, [SUB_RM] = {"rm", 1},
    [SUB_COMPARE] = {"compare", -1},
};

typedef struct jobs_args {
    sub s;
    jobs_format format;
    bool format_given;
    const char *server;        /* NULL: the database */
    const char *token_file;
    bool db_given;
    const char *prefix;        /* ls */
    const char *job_id;
    int64_t trial_number;      /* curve */
    int64_t page_size;         /* 0: JOBS_PAGE or TRIALS_PAGE */
    bool yes;                  /* rm: no question on a terminal */
    cli_config cfg;            /* database URL and credentials, API token */
    const char *compare[COMPARE_MAX]; /* compare's job ids */
    int n_compare;
} jobs_args;

/* Where the documents come from. */
typedef struct source {
    store *st;                 /* --db */
    transport *tp;             /* --server */
    cli_footprint footprint;   /* --db: the CO2e and price settings of the environment
                                * (with --server, the server's own apply) */
} source;

/* Reads the first line of --token-file into out. Returns 0 or ZBSO_EINVAL naming the
 * file. */
static int read_token_file(const char *path, char *out, size_t cap, zbso_err *err)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return err_set(err, ZBSO_EINVAL, "cannot read --token-file '%s': %s", path,
                       strerror(errno));
    char *line = fgets(out, (int)cap, f);
    fclose(f);
    size_t n = line != NULL ? strcspn(out, "\r\n") : 0;
    if (line != NULL && out[n] == '\0' && n == cap - 1)
        return err_set(err, ZBSO_EINVAL, "--token-file '%s': the token is over %zu bytes",
                       path, cap - 2);
    if (n == 0)
        return err_set(err, ZBSO_EINVAL, "--token-file '%s' holds no token on its first "
                       "line", path);
    out[n] = '\0';
    return 0;
}

/* Parses argv (argv[0] "jobs", argv[1] the subcommand). Returns 0, 1 for --help (usage
 * printed), or ZBSO_EINVAL. */
static int parse_args(int argc, char **argv, jobs_args *a, zbso_err *err)
{
    static const struct option opts[] = {
        {"format", required_argument, NULL, OPT_FORMAT},
        {"server", required_argument, NULL, OPT_SERVER},
        {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
        {"db", required_argument, NULL, CLI_OPT_DB},
        {"prefix", required_argument, NULL, OPT_PREFIX},
        {"page-size", required_argument, NULL, OPT_PAGE_SIZE},
        {"yes", no_argument, NULL, OPT_YES},
        {"help", no_argument, NULL, CLI_OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    int c, rc;

    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        if (argc < 2)
            return err_set(err, ZBSO_EINVAL, "no subcommand: give ls, show, trials, curve, "
                           "export, rm or compare");
        fputs(jobs_usage, stdout);
        return 1;
    }
    size_t k = 0;
    while (k < sizeof subs / sizeof subs[0] && strcmp(subs[k].name, argv[1]) != 0)
        k++;
    if (k == sizeof subs / sizeof subs[0])
        return err_set(err, ZBSO_EINVAL, "unknown subcommand '%s': give ls, show, trials, "
                       "curve, export, rm or compare", argv[1]);
    a->s = (sub)k;
    argc--;
    argv++;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_FORMAT:
            if ((rc = jobs_format_parse(optarg, &a->format, err)) < 0)
                return rc;
            a->format_given = true;
            break;
        case OPT_SERVER: a->server = optarg; break;
        case OPT_TOKEN_FILE: a->token_file = optarg; break;
        case OPT_PREFIX: a->prefix = optarg; break;
        case OPT_YES: a->yes = true; break;
        case OPT_PAGE_SIZE: {
            char *end = NULL;
            long long v = strtoll(optarg, &end, 10);
            if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || v < 1 ||
                v > INSP_LIMIT_MAX)
                return err_set(err, ZBSO_EINVAL, "--page-size '%s' is not an integer in "
                               "[1, %d]", optarg, INSP_LIMIT_MAX);
            a->page_size = v;
            break;
        }
        case CLI_OPT_DB:
            if ((rc = config_copy("--db", optarg, a->cfg.database_url,
                                  sizeof a->cfg.database_url, err)) < 0)
                return rc;
            a->db_given = true;
            break;
        case CLI_OPT_HELP:
        case 'h':
            fputs(jobs_usage, stdout);
            return 1;
        case ':':
            return err_set(err, ZBSO_EINVAL, "option '%s' needs a value", argv[optind - 1]);
        default:
            return err_set(err, ZBSO_EINVAL, "unknown option '%s'", argv[optind - 1]);
        }
    }
    const char *name = subs[a->s].name;
    int n = argc - optind;
    if (subs[a->s].n_args < 0) {
        if (n < 2 || n > COMPARE_MAX)
            return err_set(err, ZBSO_EINVAL, "compare takes 2 to %d job ids, got %d",
                           COMPARE_MAX, n);
        for (int i = 0; i < n; i++) {
            a->compare[i] = argv[optind + i];
            if (a->compare[i][0] == '\0')
                return err_set(err, ZBSO_EINVAL, "job id %d of compare is empty", i + 1);
        }
        a->n_compare = n;
        n = 0;
    } else if (n != subs[a->s].n_args)
        return err_set(err, ZBSO_EINVAL, "%s takes %s, got %d argument%s", name,
                       subs[a->s].n_args == 0 ? "no argument"
                       : subs[a->s].n_args == 1 ? "JOB" : "JOB TRIAL",
                       n, n == 1 ? "" : "s");
    if (n >= 1) {
        a->job_id = argv[optind];
        if (a->job_id[0] == '\0')
            return err_set(err, ZBSO_EINVAL, "the job id is empty");
    }
    if (n == 2) {
        const char *t = argv[optind + 1];
        char *end = NULL;
        errno = 0;
        long long v = strtoll(t, &end, 10);
        if (t[0] < '0' || t[0] > '9' || *end != '\0' || errno != 0 || v < 1)
            return err_set(err, ZBSO_EINVAL, "TRIAL '%s' is not a trial number (an integer "
                           ">= 1)", t);
        a->trial_number = v;
    }
    if (a->server != NULL && a->db_given)
        return err_set(err, ZBSO_EINVAL, "give --server URL or --db URL, not both");
    if (a->token_file != NULL && a->server == NULL)
        return err_set(err, ZBSO_EINVAL, "--token-file goes with --server");
    if (a->prefix != NULL && a->s != SUB_LS)
        return err_set(err, ZBSO_EINVAL, "--prefix applies to ls only");
    if (a->yes && a->s != SUB_RM)
        return err_set(err, ZBSO_EINVAL, "--yes applies to rm only");
    if (a->format_given && a->s == SUB_RM)
        return err_set(err, ZBSO_EINVAL, "--format does not apply to rm");
    if (a->page_size > 0 && a->s != SUB_LS && a->s != SUB_TRIALS && a->s != SUB_EXPORT)
        return err_set(err, ZBSO_EINVAL, "--page-size applies to ls, trials and export");
    if (a->s == SUB_EXPORT) {
        if (!a->format_given)
            a->format = JOBS_FMT_CSV;
        else if (a->format == JOBS_FMT_TABLE)
            return err_set(err, ZBSO_EINVAL, "export writes csv or json, not a table");
    }
    return 0;
}

/* Connects the source: a transport to --server, or the database, which must exist and
 * hold this binary's schema (nothing is created or migrated). Returns 0, ZBSO_EINVAL /
 * ZBSO_ECONFIG for a bad URL or token file (usage), or a runtime error. */
static int source_open(jobs_args *a, source *src, zbso_err *err)
{
    int rc;
    if (a->server != NULL) {
        char token[TRANSPORT_TOKEN_MAX + 2];
        const char *tok = a->cfg.api_token;
        double retry = JOBS_RETRY_TIMEOUT_S;
        const char *env = getenv(TRANSPORT_RETRY_ENV);
        if (a->token_file != NULL) {
            if ((rc = read_token_file(a->token_file, token, sizeof token, err)) < 0)
                return rc;
            tok = token;
        }
        if (env != NULL && env[0] != '\0' && (rc = transport_retry_timeout_env(&retry, err)) < 0)
            return rc;
        return transport_new(a->server, tok, retry, &src->tp, err);
    }
    const store_backend *b = store_backend_for_url(a->cfg.database_url, err);
    if (b == NULL)
        return ZBSO_EINVAL;
    if (strcmp(b->name, "sqlite") == 0) {
        /* The SQLite store creates a missing file; a reader must not. */
        const char *path = strstr(a->cfg.database_url, ":///");
        path = path != NULL ? path + 4 : "";
        if (path[0] != '\0' && access(path, F_OK) != 0)
            return err_set(err, ZBSO_ESTORE, "no database file '%s': %s", path,
                           strerror(errno));
    }
    if ((rc = cli_footprint_load(&a->cfg, &src->footprint, err)) < 0)
        return rc;
    store_options so = cli_store_options(&a->cfg);
    so.any_schema = true;
    so.discard_curves = true;
    if ((rc = store_open(a->cfg.database_url, &so, &src->st, err)) < 0)
        return rc;
    int version = 0;
    if ((rc = store_schema_version(src->st, &version, err)) < 0)
        return rc;
    if (version != b->latest_schema_version)
        return err_set(err, ZBSO_ESCHEMA, "the database %s has schema version %d and this "
                       "zbso reads version %d%s", src->st->shown, version,
                       b->latest_schema_version,
                       version < b->latest_schema_version ? ": run zbso migrate" : "");
    return 0;
}

static void source_close(source *src)
{
    transport_free(src->tp);
    store_close(src->st);
    cli_footprint_free(&src->footprint);
}

/* Appends "&name=" and the escaped value to path. Returns 0 or ZBSO_ENOMEM. */
static int add_query(char *path, size_t cap, const char *name, const char *value,
                     zbso_err *err)
{
    char *esc = transport_escape(value);
    if (esc == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory");
    size_t n = strlen(path);
    int w = snprintf(path + n, cap - n, "%s%s=%s", strchr(path, '?') ? "&" : "?", name, esc);
    free(esc);
    if (w < 0 || (size_t)w >= cap - n)
        return err_set(err, ZBSO_EINVAL, "the request for '%s' is too long", value);
    return 0;
}

/* The server path of req (its route and query). */
static int request_path(const insp_request *req, char *path, size_t cap, zbso_err *err)
{
    char num[32];
    path[0] = '\0';
    if (req->kind != INSP_JOBS) {
        char *esc = transport_escape(req->job_id);
        if (esc == NULL)
            return err_set(err, ZBSO_ENOMEM, "out of memory");
        snprintf(path, cap, "/jobs/%s%s", esc, req->kind == INSP_JOB ? "" : "/trials");
        free(esc);
        if (req->kind == INSP_TRIAL) {
            size_t n = strlen(path);
            snprintf(path + n, cap - n, "/%" PRId64, req->trial_number);
        }
    } else {
        snprintf(path, cap, "/jobs");
    }
    if (req->kind == INSP_JOBS || req->kind == INSP_TRIALS) {
        snprintf(num, sizeof num, "%" PRId64, req->limit);
        int rc = add_query(path, cap, "limit", num, err);
        if (rc == 0 && req->kind == INSP_JOBS && req->prefix[0])
            rc = add_query(path, cap, "prefix", req->prefix, err);
        if (rc == 0 && req->kind == INSP_JOBS && req->after_job[0])
            rc = add_query(path, cap, "after", req->after_job, err);
        if (rc == 0 && req->kind == INSP_TRIALS && req->after_trial > 0) {
            snprintf(num, sizeof num, "%" PRId64, req->after_trial);
            rc = add_query(path, cap, "after", num, err);
        }
        return rc;
    }
    return 0;
}

/* Fetches the document of req into *doc (the caller decrefs it). Returns 0; ZBSO_ENOTFOUND
 * naming the job or trial; a network, server or database error; ZBSO_ERUNTIME for an
 * answer that is not a JSON object. */
static int fetch(source *src, const insp_request *req, json_t **doc, zbso_err *err)
{
    const char *text;
    size_t len;
    char *owned = NULL;
    int rc;

    *doc = NULL;
    if (src->tp != NULL) {
        char path[4 * ZBSO_ID_MAX + 128];
        transport_resp resp;
        transport_req tr = {"GET", path, NULL, TRANSPORT_IDEMPOTENT, NULL};
        if ((rc = request_path(req, path, sizeof path, err)) < 0 ||
            (rc = transport_request(src->tp, &tr, &resp, err)) < 0)
            return rc;
        text = resp.body;
        len = resp.len;
    } else {
        insp_request r = *req;
        r.footprint = cli_footprint_get(&src->footprint);
        if ((rc = insp_answer(src->st, &r, &owned, &len, err)) < 0)
            return rc;
        text = owned;
    }
    json_error_t jerr;
    *doc = json_loadb(text, len, 0, &jerr);
    free(owned);
    if (!json_is_object(*doc)) {
        json_decref(*doc);
        *doc = NULL;
        return err_set(err, ZBSO_ERUNTIME, "the answer is not a JSON object: %s", jerr.text);
    }
    return 0;
}

/* Fetches every page of a list (INSP_JOBS or INSP_TRIALS) and returns in *out the first
 * page's document with the array `field` holding every row and "next" null. */
static int fetch_all(source *src, insp_request *req, const char *field, json_t **out,
                     zbso_err *err)
{
    json_t *all = NULL, *page = NULL;
    int rc;
    *out = NULL;
    for (;;) {
        if ((rc = fetch(src, req, &page, err)) < 0)
            goto fail;
        json_t *rows = json_object_get(page, field);
        json_t *next = json_object_get(page, "next");
        if (!json_is_array(rows)) {
            rc = err_set(err, ZBSO_ERUNTIME, "the answer has no \"%s\" list", field);
            goto fail;
        }
        if (all == NULL) {
            all = json_incref(page);
        } else if (json_array_extend(json_object_get(all, field), rows) < 0) {
            rc = err_set(err, ZBSO_ENOMEM, "out of memory");
            goto fail;
        }
        if (json_is_null(next) || json_array_size(rows) == 0)
            break;
        /* A cursor that does not move on would loop for ever. */
        if (req->kind == INSP_JOBS && json_is_string(next) &&
            strcmp(json_string_value(next), req->after_job) > 0 &&
            strlen(json_string_value(next)) <= ZBSO_ID_MAX) {
            memcpy(req->after_job, json_string_value(next), strlen(json_string_value(next)) + 1);
        } else if (req->kind == INSP_TRIALS && json_is_integer(next) &&
                   json_integer_value(next) > req->after_trial) {
            req->after_trial = json_integer_value(next);
        } else {
            rc = err_set(err, ZBSO_ERUNTIME, "the answer's \"next\" cursor does not move on");
            goto fail;
        }
        json_decref(page);
        page = NULL;
    }
    json_decref(page);
    json_object_set_new(all, "next", json_null());
    *out = all;
    return 0;
fail:
    json_decref(page);
    json_decref(all);
    return rc;
}

/* zbso jobs export: the job, its trials, each trial's document with its reports. */
static int export_job(source *src, const jobs_args *a, zbso_err *err)
{
    insp_request req;
    json_t *job = NULL, *list = NULL, *docs = json_array();
    int rc;

    insp_request_init(&req, INSP_JOB);
    snprintf(req.job_id, sizeof req.job_id, "%s", a->job_id);
    if ((rc = fetch(src, &req, &job, err)) < 0)
        goto out;
    insp_request_init(&req, INSP_TRIALS);
    snprintf(req.job_id, sizeof req.job_id, "%s", a->job_id);
    req.limit = a->page_size > 0 ? a->page_size : TRIALS_PAGE;
    if ((rc = fetch_all(src, &req, "trials", &list, err)) < 0)
        goto out;
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(list, "trials"), i, t) {
        json_t *doc = NULL;
        insp_request_init(&req, INSP_TRIAL);
        snprintf(req.job_id, sizeof req.job_id, "%s", a->job_id);
        req.trial_number = json_integer_value(json_object_get(t, "trial_number"));
        if ((rc = fetch(src, &req, &doc, err)) < 0)
            goto out;
        json_array_append_new(docs, doc);
    }
    rc = jobs_fmt_export(stdout, a->format, job, docs, err);
out:
    json_decref(docs);
    json_decref(list);
    json_decref(job);
    return rc;
}

/* On a terminal (stdin and stderr), asks whether to delete the job; true for "y" or
 * "yes". Elsewhere (a script, a pipe) true without asking, as before. */
static bool confirmed(const jobs_args *a)
{
    char line[16];
    if (a->yes || !isatty(STDIN_FILENO) || !isatty(STDERR_FILENO))
        return true;
    fputs("zbso jobs rm: delete job '", stderr);
    cli_table_escape(stderr, a->job_id);
    fprintf(stderr, "' with its trials, arms and reports from %s? [y/N] ",
            a->server != NULL ? a->server : "the database");
    fflush(stderr);
    if (fgets(line, sizeof line, stdin) == NULL)
        return false;
    line[strcspn(line, "\r\n")] = '\0';
    return !strcasecmp(line, "y") || !strcasecmp(line, "yes");
}

/* zbso jobs rm: DELETE /jobs?job_id=J, or the service's delete on the database. */
static int remove_job(source *src, const jobs_args *a, zbso_err *err)
{
    int rc;
    if (!confirmed(a))
        return err_set(err, ZBSO_ECONFLICT, "not deleted: job '%s' is kept (--yes deletes "
                       "without asking)", a->job_id);
    if (src->tp != NULL) {
        char path[4 * ZBSO_ID_MAX + 64] = "/jobs";
        transport_resp resp;
        /* A repeat after a lost answer would find the job gone: only unsent retries. */
        transport_req tr = {"DELETE", path, NULL, TRANSPORT_RETRY_IF_UNSENT, NULL};
        if ((rc = add_query(path, sizeof path, "job_id", a->job_id, err)) < 0 ||
            (rc = transport_request(src->tp, &tr, &resp, err)) < 0)
            return rc;
    } else {
        svc_env env = svc_env_system(0);
        if ((rc = svc_delete_job(src->st, &env, a->job_id, err)) < 0)
            return rc;
    }
    fputs("zbso jobs rm: deleted job '", stdout);
    cli_table_escape(stdout, a->job_id);
    fputs("'\n", stdout);
    return fflush(stdout) == 0 ? 0 : err_set(err, ZBSO_EIO, "cannot write the output");
}

/* zbso jobs compare: each job's document, side by side. */
static int compare_jobs(source *src, const jobs_args *a, zbso_err *err)
{
    json_t *docs = json_array();
    int rc = 0;
    if (docs == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory");
    for (int i = 0; i < a->n_compare; i++) {
        insp_request req;
        json_t *doc = NULL;
        if (strlen(a->compare[i]) > ZBSO_ID_MAX) {
            rc = err_set(err, ZBSO_ENOTFOUND, "Unknown job_id: '%.40s...' is %zu bytes long, "
                         "over the maximum of %d", a->compare[i], strlen(a->compare[i]),
                         ZBSO_ID_MAX);
            goto out;
        }
        insp_request_init(&req, INSP_JOB);
        snprintf(req.job_id, sizeof req.job_id, "%s", a->compare[i]);
        if ((rc = fetch(src, &req, &doc, err)) < 0)
            goto out;
        json_array_append_new(docs, doc);
    }
    rc = jobs_fmt_compare(stdout, a->format, docs, err);
out:
    json_decref(docs);
    return rc;
}

/* Runs the subcommand on an open source. Returns 0 or a negative code with err set. */
static int run(source *src, const jobs_args *a, zbso_err *err)
{
    insp_request req;
    json_t *doc = NULL;
    int rc;

    /* No job has a longer id: the same answer from the server and the database. */
    if (a->job_id != NULL && strlen(a->job_id) > ZBSO_ID_MAX)
        return err_set(err, ZBSO_ENOTFOUND, "Unknown job_id: '%.40s...' is %zu bytes long, "
                       "over the maximum of %d", a->job_id, strlen(a->job_id), ZBSO_ID_MAX);
    if (a->s == SUB_EXPORT)
        return export_job(src, a, err);
    if (a->s == SUB_RM)
        return remove_job(src, a, err);
    if (a->s == SUB_COMPARE)
        return compare_jobs(src, a, err);
    static const insp_kind kinds[] = {[SUB_LS] = INSP_JOBS, [SUB_SHOW] = INSP_JOB,
                                      [SUB_TRIALS] = INSP_TRIALS, [SUB_CURVE] = INSP_TRIAL};
    insp_request_init(&req, kinds[a->s]);
    if (a->job_id != NULL)
        snprintf(req.job_id, sizeof req.job_id, "%s", a->job_id);
    req.trial_number = a->trial_number;
    switch (a->s) {
    case SUB_LS:
        if (a->prefix != NULL && strlen(a->prefix) > ZBSO_ID_MAX)
            return err_set(err, ZBSO_EINVAL, "--prefix is over %d bytes", ZBSO_ID_MAX);
        snprintf(req.prefix, sizeof req.prefix, "%s", a->prefix ? a->prefix : "");
        req.limit = a->page_size > 0 ? a->page_size : JOBS_PAGE;
        if ((rc = fetch_all(src, &req, "jobs", &doc, err)) == 0)
            rc = jobs_fmt_list(stdout, a->format, doc, err);
        break;
    case SUB_TRIALS:
        req.limit = a->page_size > 0 ? a->page_size : TRIALS_PAGE;
        if ((rc = fetch_all(src, &req, "trials", &doc, err)) == 0)
            rc = jobs_fmt_trials(stdout, a->format, doc, err);
        break;
    case SUB_SHOW:
        if ((rc = fetch(src, &req, &doc, err)) == 0)
            rc = jobs_fmt_job(stdout, a->format, doc, err);
        break;
    default: /* SUB_CURVE */
        if ((rc = fetch(src, &req, &doc, err)) == 0)
            rc = jobs_fmt_curve(stdout, a->format, doc, err);
        break;
    }
    json_decref(doc);
    return rc;
}

int cli_jobs(int argc, char **argv)
{
    jobs_args a;
    source src;
    memset(&src, 0, sizeof src);
    zbso_err err;
    int rc;

    memset(&a, 0, sizeof a);
    err_clear(&err);
    config_defaults(&a.cfg);
    if (config_load(&a.cfg, &err) < 0) {
        fprintf(stderr, "zbso jobs: %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    /* The store's own notes (opening, checkpoints) are not the output of a reader. */
    log_set_level(a.cfg.log_level > ZLOG_WARN ? a.cfg.log_level : ZLOG_WARN);
    if ((rc = parse_args(argc, argv, &a, &err)) != 0) {
        if (rc > 0)
            return CLI_EXIT_OK;
        fprintf(stderr, "zbso jobs: %s\n(zbso jobs --help lists the subcommands and "
                "options)\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    const char *name = subs[a.s].name;
    if ((rc = source_open(&a, &src, &err)) < 0) {
        fprintf(stderr, "zbso jobs %s: %s\n", name, err.msg);
        source_close(&src);
        return rc == ZBSO_EINVAL || rc == ZBSO_ECONFIG ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }
    rc = run(&src, &a, &err);
    source_close(&src);
    if (rc < 0) {
        /* The message may quote a job id or a server's words: escaped as a table cell,
         * so no control or invisible character reaches the terminal as it is. */
        fprintf(stderr, "zbso jobs %s: ", name);
        cli_table_escape(stderr, err.msg);
        fputc('\n', stderr);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}
