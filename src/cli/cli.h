/* cli.h: the `zbso` commands that main.c's table dispatches to. Each takes the command's
 * own argv (argv[0] is the command name) and returns the process exit status. */
#ifndef ZBSO_CLI_CLI_H
#define ZBSO_CLI_CLI_H

#include "cli/config.h"
#include "util/err.h"

/* Exit statuses: 0 success, 1 a runtime failure (database, network), 2 a usage error. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_USAGE = 2 };

/* The start-up `serve` and `migrate` share: defaults, .env and environment (config_load),
 * then the command's flags through parse (which returns 0, 1 when --help was asked for, or a
 * negative code with err naming the flag and value), then the database URL's backend and
 * the log level. Returns -1 to go on, or the exit status to return at once (usage printed
 * for --help, or the error on stderr prefixed with "zbso CMD: "). */
int cli_start(const char *cmd, const char *usage, int argc, char **argv, cli_config *cfg,
              int (*parse)(int argc, char **argv, cli_config *cfg, void *ctx, zbso_err *err),
              void *ctx);

/* `zbso serve`: runs the BSO server until SIGTERM/SIGINT. */
int cli_serve(int argc, char **argv);

/* `zbso migrate`: applies the schema, or prints its SQL with --sql. */
int cli_migrate(int argc, char **argv);

/* `zbso simulate`: trace-driven simulation of recurring jobs (src/sim). */
int cli_simulate(int argc, char **argv);

/* `zbso run`: drives a training command across recurrences (src/run). */
int cli_run(int argc, char **argv);

#endif
