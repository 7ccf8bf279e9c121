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

enum { OPT_DB = 256, OPT_TO, OPT_SQL, OPT_FROM, OPT_HELP };

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

/* Applies the flags. Returns 0, 1 when --help was asked for, or ZBSO_EINVAL naming the
 * flag and value. */
static int parse_flags(int argc, char **argv, cli_config *cfg, void *ctx, zbso_err *err)
{
    migrate_args *a = ctx;
    static const struct option opts[] = {
        {"db", required_argument, NULL, OPT_DB},
        {"to", required_argument, NULL, OPT_TO},
        {"sql", no_argument, NULL, OPT_SQL},
        {"from", required_argument, NULL, OPT_FROM},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    int rc = 0;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_DB:
            rc = config_copy("--db", optarg, cfg->database_url, sizeof cfg->database_url, err);
            break;
        case OPT_TO:
            rc = parse_version("--to", optarg, &a->to, err);
            break;
        case OPT_FROM:
            rc = parse_version("--from", optarg, &a->from, err);
            a->from_given = true;
            break;
        case OPT_SQL:
            a->sql = true;
            break;
        case OPT_HELP:
        case 'h':
            rc = 1;
            goto out;
        case ':':
            rc = err_set(err, ZBSO_EINVAL, "option '%s' needs a value", argv[optind - 1]);
            break;
        default:
            rc = err_set(err, ZBSO_EINVAL, "unknown option '%s'", argv[optind - 1]);
            break;
        }
        if (rc < 0)
            goto out;
    }
    if (optind < argc)
        rc = err_set(err, ZBSO_EINVAL, "unexpected argument '%s'", argv[optind]);
    else if (a->from_given && !a->sql)
        rc = err_set(err, ZBSO_EINVAL, "--from %d only applies with --sql; without it the "
                     "database's own version is the starting point", a->from);
out:
    return rc;
}

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
    store_options sopt = {
        .any_schema = true,
        .echo_sql = cfg->echo_sql,
        .db_user = cfg->db_user[0] ? cfg->db_user : NULL,
        .db_password = cfg->db_password[0] ? cfg->db_password : NULL,
    };
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

    int rc = cli_start("migrate", migrate_usage, argc, argv, &cfg, parse_flags, &a);
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
