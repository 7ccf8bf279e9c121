/* cli.h: the `zbso` commands that main.c's table dispatches to. Each takes the command's
 * own argv (argv[0] is the command name) and returns the process exit status. */
#ifndef ZBSO_CLI_CLI_H
#define ZBSO_CLI_CLI_H

#include "cli/config.h"
#include "store/store.h"
#include "util/err.h"

/* Exit statuses: 0 success, 1 a runtime failure (database, network), 2 a usage error. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_USAGE = 2 };

/* Flag values that every table given to cli_start uses for --db and --help (cli_start
 * applies them itself); a command numbers its own flags from CLI_OPT_OWN. */
enum { CLI_OPT_DB = 256, CLI_OPT_HELP, CLI_OPT_OWN };

struct option;

/* A row of main.c's command table. */
typedef struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);   /* the command's argv; returns the exit status */
    const char *summary;                 /* one line for `zbso --help` */
} cli_command;

/* main.c's command table, *n rows (for completion and the man pages). */
const cli_command *cli_commands(size_t *n);

/* One command's flags for cli_start. */
typedef struct cli_flags {
    /* getopt_long's table: the command's flags, {"db", CLI_OPT_DB} and {"help",
     * CLI_OPT_HELP} rows, and a zero row last. */
    const struct option *options;
    /* Applies one of the command's own flags (opt its value in the table, arg its argument
     * or NULL). Returns 0, or ZBSO_EINVAL with err naming the flag and the value. */
    int (*apply)(int opt, const char *arg, cli_config *cfg, void *ctx, zbso_err *err);
    /* NULL, or checks the flags taken together once all are applied: 0 or ZBSO_EINVAL. */
    int (*check)(const void *ctx, zbso_err *err);
} cli_flags;

/* The start-up `serve` and `migrate` share: defaults, .env and environment (config_load),
 * then the command line (flags->options; --db, --help, a missing value, an unknown option
 * and a stray argument are answered here, the rest by flags->apply), then the database
 * URL's backend and the log level. Returns -1 to go on, or the exit status to return at
 * once (usage printed for --help, or the error on stderr prefixed with "zbso CMD: "). */
int cli_start(const char *cmd, const char *usage, int argc, char **argv, cli_config *cfg,
              const cli_flags *flags, void *ctx);

/* The store_options that cfg sets for every command that opens the store: echo_sql and
 * the credentials (NULL where not configured); the command sets the schema policy. */
store_options cli_store_options(const cli_config *cfg);

/* `zbso serve`: runs the BSO server until SIGTERM/SIGINT. */
int cli_serve(int argc, char **argv);

/* `zbso migrate`: applies the schema, or prints its SQL with --sql. */
int cli_migrate(int argc, char **argv);

/* `zbso simulate`: trace-driven simulation of recurring jobs (src/sim). */
int cli_simulate(int argc, char **argv);

/* `zbso run`: drives a training command across recurrences (src/run). */
int cli_run(int argc, char **argv);

/* `zbso jobs`: inspects, exports and deletes jobs through a server or a database. */
int cli_jobs(int argc, char **argv);

/* `zbso monitor`: runs a command and prints the GPU time and energy it used; returns the
 * command's exit status (125-127 for its own failures, see its usage). */
int cli_monitor(int argc, char **argv);

/* `zbso version`: version, git commit, backends and library versions. */
int cli_version(int argc, char **argv);

/* `zbso completion bash|zsh|fish`: prints a completion script. */
int cli_completion(int argc, char **argv);

/* `zbso import zeus`: imports a Zeus BSO database's jobs (src/xfer). */
int cli_import(int argc, char **argv);

/* `zbso db copy|backup|restore`: moves or backs up a whole zbso database. */
int cli_db(int argc, char **argv);

#endif
