/* cmd_db.c: `zbso db copy FROM TO`, `zbso db backup URL FILE`, `zbso db restore FILE URL`:
 * whole zbso databases moved between backends (src/xfer) or copied online (SQLite's backup
 * API, src/store/backup.h). Arguments and output only. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/config.h"
#include "store/backup.h"
#include "xfer/xfer.h"

static const char db_usage[] =
    "usage: zbso db copy FROM_URL TO_URL\n"
    "       zbso db backup URL FILE\n"
    "       zbso db restore FILE URL\n"
    "\n"
    "  copy     copies every job of a zbso database (spec, state, generator, trials, arms,\n"
    "           learning curves, power profiles) into another, on any two backends, from\n"
    "           one read snapshot, one transaction per job. TO must be empty or hold the\n"
    "           same jobs: a job there with other data stops the copy, naming it; a copy\n"
    "           that stopped can be run again and goes on where it stopped.\n"
    "  backup   copies a SQLite database into a new FILE while a server keeps writing to\n"
    "           it (SQLite's online backup API, one snapshot); for PostgreSQL use pg_dump,\n"
    "           for MySQL/MariaDB mariadb-dump\n"
    "  restore  checks FILE (a backup) and copies its jobs into URL, as copy does\n"
    "\n"
    "ZEUS_BSO_DB_USER and ZEUS_BSO_DB_PASSWORD fill URLs without credentials.\n"
    "Exit status: 0 done, 1 a database failure or a job that differs, 2 a usage error.\n";

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct progress_ctx {
    int64_t total;
    double last, start;
} progress_ctx;

/* A progress line at most once a second on a long copy. */
static void copy_progress(void *ctx, const xfer_copy_stats *s)
{
    progress_ctx *p = ctx;
    double now = mono_s();
    if (now - p->last < 1.0)
        return;
    p->last = now;
    fprintf(stderr, "zbso db: %lld/%lld jobs (%lld written, %lld already there), %lld trials,"
            " %.0f s\n", (long long)s->jobs, (long long)p->total, (long long)s->written,
            (long long)s->same, (long long)s->trials, now - p->start);
}

static int count_fn(store_txn *t, void *arg, zbso_err *err)
{
    store_counts c;
    int rc = store_counts_get(t, &c, err);
    if (rc == 0)
        *(int64_t *)arg = c.jobs;
    return rc;
}

/* Copies from -> to. from must hold zbso's current schema; to is created when empty. */
static int do_copy(const cli_config *cfg, const char *what, const char *from, const char *to)
{
    zbso_err err;
    store *src = NULL, *dst = NULL;
    int status = CLI_EXIT_FAIL;
    char shown_from[CFG_URL_MAX + 8], shown_to[CFG_URL_MAX + 8];
    xfer_copy_stats stats = {0};
    progress_ctx p = {0, 0, mono_s()};
    err_clear(&err);
    config_redact_url(from, shown_from, sizeof shown_from);
    config_redact_url(to, shown_to, sizeof shown_to);
    if (store_backend_for_url(from, &err) == NULL || store_backend_for_url(to, &err) == NULL) {
        fprintf(stderr, "zbso db %s: %s\n", what, err.msg);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(from, to) == 0) {
        fprintf(stderr, "zbso db %s: FROM and TO are the same database (%s)\n", what,
                shown_from);
        return CLI_EXIT_USAGE;
    }
    /* SQLite would make an empty file of a FROM that does not exist, and leave it. */
    const char *sep = strstr(from, ":///");
    if (strncmp(from, "sqlite", 6) == 0 && sep != NULL && access(sep + 4, F_OK) != 0) {
        fprintf(stderr, "zbso db %s: %s: no such file\n", what, sep + 4);
        return CLI_EXIT_FAIL;
    }
    store_options sopt = cli_store_options(cfg);
    sopt.discard_curves = false;
    if (store_open(from, &sopt, &src, &err) < 0) {
        fprintf(stderr, "zbso db %s: %s: %s\n", what, shown_from, err.msg);
        zdb *zeus = NULL;
        zbso_err ignored;
        if (err.code == ZBSO_ESCHEMA && zdb_open(from, sopt.db_user, sopt.db_password, &zeus,
                                                 &ignored) == 0)
            fprintf(stderr, "zbso db %s: %s is a Zeus BSO database: zbso import zeus reads"
                    " it\n", what, shown_from);
        zdb_close(zeus);
        goto out;
    }
    sopt.create_if_empty = true;
    if (store_open(to, &sopt, &dst, &err) < 0) {
        fprintf(stderr, "zbso db %s: %s: %s\n", what, shown_to, err.msg);
        goto out;
    }
    p.last = p.start;
    if (store_exec_read(src, count_fn, &p.total, &err) < 0) {
        fprintf(stderr, "zbso db %s: %s: %s\n", what, shown_from, err.msg);
        goto out;
    }
    if (xfer_copy(src, dst, copy_progress, &p, &stats, &err) < 0) {
        fprintf(stderr, "zbso db %s: %s (after %lld of %lld jobs; run it again to go on)\n",
                what, err.msg, (long long)stats.written + (long long)stats.same,
                (long long)p.total);
        goto out;
    }
    printf("zbso db %s: %s -> %s: %lld jobs, %lld trials: %lld written, %lld already there"
           " (%.1f s)\n", what, shown_from, shown_to, (long long)stats.jobs,
           (long long)stats.trials, (long long)stats.written, (long long)stats.same,
           mono_s() - p.start);
    status = CLI_EXIT_OK;
out:
    store_close(src);
    store_close(dst);
    return status;
}

static void backup_progress(void *ctx, int remaining, int total)
{
    progress_ctx *p = ctx;
    double now = mono_s();
    if (now - p->last < 1.0 || remaining == 0)
        return;
    p->last = now;
    fprintf(stderr, "zbso db backup: %d of %d pages left\n", remaining, total);
}

static int do_backup(const char *url, const char *file)
{
    zbso_err err;
    progress_ctx p = {0, mono_s(), mono_s()};
    char shown[CFG_URL_MAX + 8];
    err_clear(&err);
    config_redact_url(url, shown, sizeof shown);
    if (store_sqlite_backup(url, file, 256, backup_progress, &p, &err) < 0) {
        fprintf(stderr, "zbso db backup: %s\n", err.msg);
        return err.code == ZBSO_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }
    printf("zbso db backup: %s -> %s (%.1f s; checked with integrity_check)\n", shown, file,
           mono_s() - p.start);
    return CLI_EXIT_OK;
}

static int do_restore(const cli_config *cfg, const char *file, const char *url)
{
    zbso_err err;
    char from[CFG_URL_MAX + 16];
    err_clear(&err);
    if (store_sqlite_check(file, &err) < 0) {
        fprintf(stderr, "zbso db restore: %s\n", err.msg);
        return CLI_EXIT_FAIL;
    }
    if (snprintf(from, sizeof from, "sqlite:///%s", file) >= (int)sizeof from) {
        fprintf(stderr, "zbso db restore: the file name is too long\n");
        return CLI_EXIT_USAGE;
    }
    return do_copy(cfg, "restore", from, url);
}

int cli_db(int argc, char **argv)
{
    cli_config cfg;
    zbso_err err;
    err_clear(&err);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(db_usage, stdout);
        return CLI_EXIT_OK;
    }
    config_defaults(&cfg);
    if (config_load(&cfg, &err) < 0) {
        fprintf(stderr, "zbso db: %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    const char *sub = argc >= 2 ? argv[1] : "";
    bool known = strcmp(sub, "copy") == 0 || strcmp(sub, "backup") == 0 ||
                 strcmp(sub, "restore") == 0;
    if (!known || argc != 4) {
        if (!known)
            fprintf(stderr, "zbso db: %s '%s'\n", sub[0] ? "unknown subcommand" :
                    "a subcommand is missing", sub);
        else
            fprintf(stderr, "zbso db %s: takes exactly two arguments, got %d\n", sub, argc - 2);
        fputs(db_usage, stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(sub, "copy") == 0)
        return do_copy(&cfg, "copy", argv[2], argv[3]);
    if (strcmp(sub, "backup") == 0)
        return do_backup(argv[2], argv[3]);
    return do_restore(&cfg, argv[2], argv[3]);
}
