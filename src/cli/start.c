/* start.c: the start-up that `zbso serve` and `zbso migrate` share (configuration, the flag
 * loop, help, usage errors, backend check, log level, the store options the configuration
 * sets), so both answer bad input the same way. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/config.h"
#include "store/store.h"
#include "util/log.h"

/* Applies the command line on top of cfg. Returns 0, 1 when --help was asked for, or
 * ZBSO_EINVAL with err naming the flag and the value. */
static int parse_flags(int argc, char **argv, cli_config *cfg, const cli_flags *flags,
                       void *ctx, zbso_err *err)
{
    int rc = 0;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", flags->options, NULL)) != -1) {
        switch (c) {
        case CLI_OPT_DB:
            rc = config_copy("--db", optarg, cfg->database_url, sizeof cfg->database_url, err);
            break;
        case CLI_OPT_HELP:
        case 'h':
            return 1;
        case ':':
            rc = err_set(err, ZBSO_EINVAL, "option '%s' needs a value", argv[optind - 1]);
            break;
        case '?':
            rc = err_set(err, ZBSO_EINVAL, "unknown option '%s'", argv[optind - 1]);
            break;
        default:
            rc = flags->apply(c, optarg, cfg, ctx, err);
            break;
        }
        if (rc < 0)
            return rc;
    }
    if (optind < argc)
        return err_set(err, ZBSO_EINVAL, "unexpected argument '%s'", argv[optind]);
    return flags->check ? flags->check(ctx, err) : 0;
}

int cli_start(const char *cmd, const char *usage, int argc, char **argv, cli_config *cfg,
              const cli_flags *flags, void *ctx)
{
    zbso_err err;
    err_clear(&err);
    config_defaults(cfg);
    if (config_load(cfg, &err) < 0) {
        fprintf(stderr, "zbso %s: %s\n", cmd, err.msg);
        return CLI_EXIT_USAGE;
    }
    int rc = parse_flags(argc, argv, cfg, flags, ctx, &err);
    if (rc == 1) {
        fputs(usage, stdout);
        return CLI_EXIT_OK;
    }
    if (rc < 0) {
        fprintf(stderr, "zbso %s: %s\n(zbso %s --help lists the options)\n", cmd, err.msg, cmd);
        return CLI_EXIT_USAGE;
    }
    if (!store_backend_for_url(cfg->database_url, &err)) {
        fprintf(stderr, "zbso %s: %s\n", cmd, err.msg);
        return CLI_EXIT_USAGE;
    }
    if (cfg->log_level < 0) {
        fprintf(stderr, "zbso %s: ZEUS_BSO_LOG_LEVEL '%s' is not one of NOTSET, DEBUG, INFO, "
                        "WARN, WARNING, ERROR, CRITICAL\n", cmd, cfg->log_level_bad);
        return CLI_EXIT_USAGE;
    }
    log_set_level(cfg->log_level);
    return -1;
}

store_options cli_store_options(const cli_config *cfg)
{
    return (store_options){
        .echo_sql = cfg->echo_sql,
        .db_user = cfg->db_user[0] ? cfg->db_user : NULL,
        .db_password = cfg->db_password[0] ? cfg->db_password : NULL,
    };
}
