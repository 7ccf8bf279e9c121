/* cmd_import.c: `zbso import zeus`: reads a Zeus BSO server's database and writes its jobs
 * into a zbso database, one unit of work per job (src/xfer). Argument handling and output
 * only; the reading, checking and writing live in src/xfer. */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/config.h"
#include "xfer/xfer.h"

static const char import_usage[] =
    "usage: zbso import zeus ZEUS_DATABASE_URL [--db URL] [--dry-run] [--replace]\n"
    "                        [--jobs PREFIX|ID]... [--quiet]\n"
    "\n"
    "Copies every job of a Zeus BSO server's database (its batch sizes, trials, arms, stage,\n"
    "min cost and generator state) into a zbso database, one transaction per job, so that\n"
    "zbso serve continues each job as the Zeus server would have.\n"
    "\n"
    "  ZEUS_DATABASE_URL  as Zeus's .env spells it: sqlite:///zeus.db, sqlite+aiosqlite:///,\n"
    "                     postgresql+asyncpg://..., mysql+asyncmy://...; ZEUS_BSO_DB_USER and\n"
    "                     ZEUS_BSO_DB_PASSWORD fill a URL without credentials\n"
    "  --db URL           the zbso database to write (ZEUS_BSO_DATABASE_URL, default\n"
    "                     sqlite:///zbso.db); created when empty\n"
    "  --dry-run          read and check everything, print what would be imported, write nothing\n"
    "  --replace          overwrite a job already in the target with other data (else refused)\n"
    "  --jobs PREFIX|ID   only the jobs of this job_id_prefix, or this job id; repeat for\n"
    "                     more\n"
    "  --quiet            no line per job, only refusals and the summary\n"
    "\n"
    "Zeus keeps no per-epoch reports: imported trials have no learning curve, metric or\n"
    "epoch count. Naive Zeus timestamps are read in the local time zone (set TZ to the Zeus\n"
    "server's). Exit status: 0 every job imported or already there, 1 a job refused or a\n"
    "database failure, 2 a usage error.\n";

enum { OPT_DRY = CLI_OPT_OWN, OPT_REPLACE, OPT_JOBS, OPT_QUIET };

static const struct option import_options[] = {
    {"db", required_argument, NULL, CLI_OPT_DB},
    {"dry-run", no_argument, NULL, OPT_DRY},
    {"replace", no_argument, NULL, OPT_REPLACE},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"help", no_argument, NULL, CLI_OPT_HELP},
    {NULL, 0, NULL, 0},
};

typedef struct import_args {
    const char *zeus_url;
    bool dry_run, replace, quiet;
    const char **prefixes;
    size_t n_prefixes;
} import_args;

typedef struct id_list {
    char **v;
    size_t n, cap;
    const import_args *a;
} id_list;

/* Whether cell c holds exactly the bytes of text. */
static bool cell_is(const zcell *c, const char *text)
{
    return c->kind == ZC_TEXT && c->len == strlen(text) && memcmp(c->text, text, c->len) == 0;
}

/* Keeps a Job row's id when --jobs selects it: its id or its job_id_prefix is one of the
 * values (a job id holding a NUL is kept too: the reader refuses it by name). */
static int collect_id(void *ctx, const zcell *c, size_t n)
{
    id_list *l = ctx;
    if (n < 2 || c[0].kind != ZC_TEXT) {
        fprintf(stderr, "zbso import: table Job holds a job_id that is not text; skipped\n");
        return 0;
    }
    bool keep = l->a->n_prefixes == 0;
    for (size_t i = 0; !keep && i < l->a->n_prefixes; i++)
        keep = cell_is(&c[0], l->a->prefixes[i]) || cell_is(&c[1], l->a->prefixes[i]);
    if (!keep)
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        char **v = realloc(l->v, cap * sizeof *v);
        if (v == NULL)
            return ZBSO_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    if ((l->v[l->n] = strndup(c[0].text, c[0].len)) == NULL)
        return ZBSO_ENOMEM;
    l->n++;
    return 0;
}

static int by_bytes(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when p starts none. */
static size_t utf8_len(const unsigned char *p)
{
    size_t n = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3 : (*p >> 3) == 30 ? 4
                                                                                      : 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

/* Prints a job id for a terminal: control bytes and bytes that are not UTF-8 as \xNN. */
static void put_id(FILE *to, const char *id)
{
    const unsigned char *p = (const unsigned char *)id;
    while (*p != '\0') {
        size_t n = utf8_len(p);
        if (n == 0 || *p < 0x20 || *p == 0x7f) {
            fprintf(to, "\\x%02x", *p);
            p++;
        } else {
            fwrite(p, 1, n, to);
            p += n;
        }
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct tally {
    const import_args *a;
    int64_t written, same, replaced, refused, trials;
    bool failed;        /* the target failed: stop */
    size_t total;       /* jobs selected */
    double last, start; /* monotonic seconds of the last progress line, of the start */
} tally;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A job read (and, without --dry-run, put): its line, or its refusal. Called by the pool
 * with its lock held, or by run_import itself for --dry-run and for jobs refused when
 * read. Returns non-zero to stop the import (the target or the source failed). */
static pthread_mutex_t print_mu = PTHREAD_MUTEX_INITIALIZER; /* the lines and the tally */

static int job_done_locked(tally *t, const zjob *j, int rc, zput_result res,
                           const zbso_err *err)
{
    if (rc < 0) {
        t->refused++;
        fprintf(stderr, "zbso import: refused job ");
        put_id(stderr, j->job.spec.job_id);
        fprintf(stderr, ": %s\n", err->msg);
        if (rc != ZBSO_EINVAL && rc != ZBSO_ECONFLICT && rc != ZBSO_ENOTFOUND) {
            t->failed = true; /* the target failed: stop rather than go on */
            return 1;
        }
        return 0;
    }
    t->trials += (int64_t)j->n_trials;
    t->written += res == ZPUT_WRITTEN;
    t->same += res == ZPUT_SAME;
    t->replaced += res == ZPUT_REPLACED;
    double now = mono_s();
    if (now - t->last >= 1.0) { /* a long import says how far it is, once a second */
        t->last = now;
        fprintf(stderr, "zbso import: %lld/%zu jobs done, %lld trials, %.0f s\n",
                (long long)(t->written + t->same + t->replaced + t->refused), t->total,
                (long long)t->trials, now - t->start);
    }
    if (!t->a->quiet) {
        printf("%s ", t->a->dry_run ? "would import" : res == ZPUT_SAME ? "unchanged"
                                     : res == ZPUT_REPLACED ? "replaced" : "imported");
        put_id(stdout, j->job.spec.job_id);
        printf(" (%s, %zu trials, %zu arms%s)\n", zbso_stage_name(j->job.stage), j->n_trials,
               j->n_arms, j->job.spec.has_mab_seed ? ", seeded generator" : "");
    }
    return 0;
}

static int job_done(void *ctx, size_t seq, const zjob *j, int rc, zput_result res,
                    const zbso_err *err)
{
    (void)seq;
    pthread_mutex_lock(&print_mu);
    int stop = job_done_locked(ctx, j, rc, res, err);
    pthread_mutex_unlock(&print_mu);
    return stop;
}

static bool import_failed(tally *t)
{
    pthread_mutex_lock(&print_mu);
    bool failed = t->failed;
    pthread_mutex_unlock(&print_mu);
    return failed;
}

/* Imports (or checks, with --dry-run) every selected job: read and checked here, in
 * order, and put by IMPORT_THREADS writers, so that the target's commits are grouped.
 * Returns the exit status. */
#define IMPORT_THREADS 8
static int run_import(const cli_config *cfg, const import_args *a)
{
    zbso_err err;
    zdb *db = NULL;
    store *st = NULL;
    xfer_pool *pool = NULL;
    id_list ids = {NULL, 0, 0, a};
    int status = CLI_EXIT_FAIL;
    tally t = {a, 0, 0, 0, 0, 0, false, 0, mono_s(), mono_s()};
    err_clear(&err);
    if (zdb_open(a->zeus_url, cfg->db_user[0] ? cfg->db_user : NULL,
                 cfg->db_password[0] ? cfg->db_password : NULL, &db, &err) < 0) {
        fprintf(stderr, "zbso import: %s\n", err.msg);
        goto out;
    }
    if (zdb_query(db, ZQ_JOB_IDS, NULL, collect_id, &ids, &err) != 0) {
        fprintf(stderr, "zbso import: %s\n", err.code ? err.msg : "out of memory");
        goto out;
    }
    qsort(ids.v, ids.n, sizeof ids.v[0], by_bytes);
    t.total = ids.n;
    if (!a->dry_run) {
        store_options sopt = cli_store_options(cfg);
        sopt.create_if_empty = true;
        if (store_open(cfg->database_url, &sopt, &st, &err) < 0 ||
            xfer_pool_new(st, IMPORT_THREADS, a->replace, false, job_done, &t, &pool,
                          &err) < 0) {
            fprintf(stderr, "zbso import: %s\n", err.msg);
            goto out;
        }
    }
    for (size_t i = 0; i < ids.n && !import_failed(&t); i++) {
        zjob j;
        uint32_t entropy[4] = {0};
        if (getrandom(entropy, sizeof entropy, 0) != (ssize_t)sizeof entropy) {
            fprintf(stderr, "zbso import: cannot read entropy to seed unseeded jobs\n");
            goto out;
        }
        err_clear(&err);
        int rc = zeus_job_read(db, ids.v[i], now_s(), entropy, &j, &err);
        if (rc < 0) {
            zjob named;
            memset(&named, 0, sizeof named);
            snprintf(named.job.spec.job_id, sizeof named.job.spec.job_id, "%s", ids.v[i]);
            if (job_done(&t, i, &named, rc, ZPUT_WRITTEN, &err) != 0)
                break;
            continue;
        }
        if (pool == NULL) {
            job_done(&t, i, &j, 0, ZPUT_WRITTEN, &err);
            zjob_free(&j);
        } else if (xfer_pool_put(pool, &j, i, &err) < 0) {
            break;
        }
    }
    if (pool != NULL)
        xfer_pool_wait(pool);
    if (import_failed(&t))
        goto out;
    printf("zbso import: %zu jobs, %lld trials from %s: %lld %s, %lld unchanged, %lld"
           " replaced, %lld refused\n", ids.n, (long long)t.trials, zdb_shown(db),
           (long long)t.written, a->dry_run ? "to import" : "imported", (long long)t.same,
           (long long)t.replaced, (long long)t.refused);
    printf("zbso import: Zeus keeps no per-epoch reports; imported trials have no learning"
           " curve, metric or epoch count\n");
    status = t.refused == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
out:
    xfer_pool_finish(pool);
    fflush(stdout);
    for (size_t i = 0; i < ids.n; i++)
        free(ids.v[i]);
    free(ids.v);
    store_close(st);
    zdb_close(db);
    return status;
}

int cli_import(int argc, char **argv)
{
    cli_config cfg;
    zbso_err err;
    import_args a = {0};
    int status = CLI_EXIT_USAGE;
    int c;
    err_clear(&err);
    config_defaults(&cfg);
    if (config_load(&cfg, &err) < 0) {
        fprintf(stderr, "zbso import: %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    a.prefixes = calloc((size_t)argc, sizeof *a.prefixes);
    if (a.prefixes == NULL)
        return CLI_EXIT_FAIL;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", import_options, NULL)) != -1) {
        switch (c) {
        case CLI_OPT_DB:
            if (config_copy("--db", optarg, cfg.database_url, sizeof cfg.database_url,
                            &err) < 0)
                goto usage;
            break;
        case OPT_DRY:
            a.dry_run = true;
            break;
        case OPT_REPLACE:
            a.replace = true;
            break;
        case OPT_QUIET:
            a.quiet = true;
            break;
        case OPT_JOBS:
            if (optarg[0] == '\0') {
                err_set(&err, ZBSO_EINVAL, "--jobs needs a job id or prefix, got ''");
                goto usage;
            }
            a.prefixes[a.n_prefixes++] = optarg;
            break;
        case CLI_OPT_HELP:
        case 'h':
            fputs(import_usage, stdout);
            status = CLI_EXIT_OK;
            goto out;
        case ':':
            err_set(&err, ZBSO_EINVAL, "option '%s' needs a value", argv[optind - 1]);
            goto usage;
        default:
            err_set(&err, ZBSO_EINVAL, "unknown option '%s'", argv[optind - 1]);
            goto usage;
        }
    }
    if (optind >= argc || strcmp(argv[optind], "zeus") != 0) {
        err_set(&err, ZBSO_EINVAL, optind >= argc ? "what to import is missing (zbso import"
                " zeus ZEUS_DATABASE_URL)" : "cannot import from '%s' (only 'zeus')",
                optind < argc ? argv[optind] : "");
        goto usage;
    }
    if (optind + 2 != argc) {
        err_set(&err, ZBSO_EINVAL, optind + 1 >= argc ? "the Zeus database URL is missing"
                : "unexpected argument '%s'", optind + 2 < argc ? argv[optind + 2] : "");
        goto usage;
    }
    a.zeus_url = argv[optind + 1];
    if (store_backend_for_url(cfg.database_url, &err) == NULL)
        goto usage;
    const store_backend *zb = store_backend_for_url(a.zeus_url, &err);
    if (zb == NULL || strcmp(zb->name, "memory") == 0) {
        if (zb != NULL)
            err_set(&err, ZBSO_EINVAL, "memory:// holds no Zeus database");
        goto usage;
    }
    status = run_import(&cfg, &a);
    goto out;
usage:
    fprintf(stderr, "zbso import: %s\n(zbso import --help lists the options)\n", err.msg);
    status = CLI_EXIT_USAGE;
out:
    free(a.prefixes);
    return status;
}
