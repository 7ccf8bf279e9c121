/* main.c: the `zbso` command table: dispatches argv[1] to a command, prints usage and the
 * version. Holds no command logic of its own. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const cli_command commands[] = {
    {"serve", cli_serve, "run the batch size optimizer server (HTTP/JSON)"},
    {"migrate", cli_migrate, "create or upgrade the database schema, or print its SQL"},
    {"simulate", cli_simulate, "simulate recurring jobs on the Zeus traces against the optimizer"},
    {"run", cli_run, "run a training command repeatedly with the batch sizes the optimizer picks"},
    {"jobs", cli_jobs, "list, show, export and delete jobs (server or database)"},
    {"monitor", cli_monitor, "run a command and print the GPU time and energy it used"},
    {"import", cli_import, "import the jobs of a Zeus BSO server's database"},
    {"db", cli_db, "copy a zbso database between backends, back it up, restore it"},
    {"version", cli_version, "print the version, git commit, backends and libraries"},
    {"completion", cli_completion, "print a bash, zsh or fish completion script"},
};

const cli_command *cli_commands(size_t *n)
{
    *n = sizeof commands / sizeof commands[0];
    return commands;
}

static void usage(FILE *to)
{
    fprintf(to, "usage: zbso COMMAND [OPTIONS]\n"
                "       zbso --help | --version\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(to, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(to, "\n'zbso COMMAND --help' describes a command's options.\n");
}

/* Returns the exit status: the command's, 0 for --help/--version, 2 for a usage error. */
int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("zbso %s\n", ZBSO_VERSION);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "zbso: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
