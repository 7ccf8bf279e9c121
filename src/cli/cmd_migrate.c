/* cmd_migrate.c: `zbso migrate`: takes a database's schema to a version through the store, or
 * with --sql prints the backend's migration SQL without opening any database. The SQL
 * and the schema policy belong to src/store; none is written here. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/config.h"
#include "store/store.h"
#include "util/log.h"

static const char migrate_usage[] =
    "usage: zbso migrate [--db URL] [--to N] [--sql] [--from N]\n"
    "\n"
    "  --db URL   database to migrate (ZEUS_BSO_DATABASE_URL, default sqlite:///zbso.db)\n"
    "  --to N     target schema version (default: the latest this binary knows)\n"
    "  --sql      print the migration SQL instead of running it; touches no database\n"
    "  --from N   with --sql: the version the SQL starts from (default 0, an empty database)\n";

enum { OPT_TO = CLI_OPT_OWN, OPT_SQL, OPT_FROM };

static const struct option migrate_options[] = {
    {"db", required_argument, NULL, CLI_OPT_DB},
    {"to", required_argument, NULL, OPT_TO},
    {"sql", no_argument, NULL, OPT_SQL},
    {"from", required_argument, NULL, OPT_FROM},
    {"help", no_argument, NULL, CLI_OPT_HELP},
    {NULL, 0, NULL, 0},
};

typedef struct migrate_args {
    int to;
    int from;
    bool from_given;
    bool sql;
} migrate_args;

/* Parses a schema version (a non-negative integer). Returns 0 or ZBSO_EINVAL. */
static int parse_version(const char *flag, const char *text, int *out, zbso_err *err)
{
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || v < 0 || v > 1000000)
        return err_set(err, ZBSO_EINVAL, "%s '%s' is not a schema version (an integer >= 0)",
                       flag, text);
    *out = (int)v;
    return 0;
}

/* Applies one of migrate's own flags (cli_flags.apply). */
static int apply_flag(int opt, const char *arg, cli_config *cfg, void *ctx, zbso_err *err)
{
    migrate_args *a = ctx;
    (void)cfg;
    switch (opt) {
    case OPT_TO:
        return parse_version("--to", arg, &a->to, err);
    case OPT_FROM:
        a->from_given = true;
        return parse_version("--from", arg, &a->from, err);
    default: /* OPT_SQL, the only other flag of migrate_options */
        a->sql = true;
        return 0;
    }
}

/* --from goes with --sql only (cli_flags.check). */
static int check_flags(const void *ctx, zbso_err *err)
{
    const migrate_args *a = ctx;
    if (a->from_given && !a->sql)
        return err_set(err, ZBSO_EINVAL, "--from %d only applies with --sql; without it the "
                       "database's own version is the starting point", a->from);
    return 0;
}

static const cli_flags migrate_flags = {migrate_options, apply_flag, check_flags};

/* Writes one statement of migration SQL to the FILE in ctx, ending it with a newline. */
static void print_sql(void *ctx, const char *sql)
{
    FILE *to = ctx;
    fputs(sql, to);
    size_t n = strlen(sql);
    if (n == 0 || sql[n - 1] != '\n')
        fputc('\n', to);
}

/* Opens the database at any version and migrates it to a.to. Returns an exit status. */
static int run_migration(const cli_config *cfg, const store_backend *b, const migrate_args *a,
                         zbso_err *err)
{
    int status = CLI_EXIT_FAIL;
    store *st = NULL;
    int before = 0, after = 0;
    char shown_url[CFG_URL_MAX + 8];
    config_redact_url(cfg->database_url, shown_url, sizeof shown_url);
    store_options sopt = cli_store_options(cfg);
    sopt.any_schema = true;
    if (a->to > b->latest_schema_version) {
        err_set(err, ZBSO_EINVAL, "--to %d is beyond the latest %s schema version %d", a->to,
                b->name, b->latest_schema_version);
        status = CLI_EXIT_USAGE;
        goto out;
    }
    if (store_open(cfg->database_url, &sopt, &st, err) < 0)
        goto out;
    if (store_schema_version(st, &before, err) < 0)
        goto out;
    if (store_migrate(st, a->to, err) < 0)
        goto out;
    if (store_schema_version(st, &after, err) < 0)
        goto out;
    printf("zbso migrate: %s: schema version %d -> %d\n", shown_url, before, after);
    status = CLI_EXIT_OK;
out:
    store_close(st);
    return status;
}

int cli_migrate(int argc, char **argv)
{
    cli_config cfg;
    zbso_err err;
    migrate_args a = {0};
    int status = CLI_EXIT_FAIL;
    err_clear(&err);

    int rc = cli_start("migrate", migrate_usage, argc, argv, &cfg, &migrate_flags, &a);
    if (rc >= 0) {
        status = rc;
        goto out;
    }
    const store_backend *b = store_backend_for_url(cfg.database_url, &err);
    if (a.sql) {
        if (store_migrate_sql(b, a.from, a.to, print_sql, stdout, &err) < 0) {
            fprintf(stderr, "zbso migrate: %s\n", err.msg);
            status = err.code == ZBSO_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
            goto out;
        }
        status = fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        goto out;
    }
    status = run_migration(&cfg, b, &a, &err);
    if (status != CLI_EXIT_OK)
        fprintf(stderr, "zbso migrate: %s\n", err.msg);
out:
    return status;
}
