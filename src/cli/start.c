/* start.c: the start-up that `zbso serve` and `zbso migrate` share (configuration, flags,
 * help, usage errors, backend check, log level), so both answer bad input the same way. */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/config.h"
#include "store/store.h"
#include "util/log.h"

int cli_start(const char *cmd, const char *usage, int argc, char **argv, cli_config *cfg,
              int (*parse)(int argc, char **argv, cli_config *cfg, void *ctx, zbso_err *err),
              void *ctx)
{
    zbso_err err;
    err_clear(&err);
    config_defaults(cfg);
    if (config_load(cfg, &err) < 0) {
        fprintf(stderr, "zbso %s: %s\n", cmd, err.msg);
        return CLI_EXIT_USAGE;
    }
    int rc = parse(argc, argv, cfg, ctx, &err);
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
    log_set_level(cfg->log_level);
    return -1;
}
