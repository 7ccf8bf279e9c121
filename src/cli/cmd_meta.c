/* cmd_meta.c: commands about zbso itself: `zbso version` (version, commit, backends and the
 * libraries it runs with) and `zbso completion SHELL` (bash, zsh, fish). Completion is
 * generated from main.c's command table and each command's own --help text, so a new
 * command or flag is completed without touching this file. No command logic here. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <microhttpd.h>
#include <mysql.h>
#include <sqlite3.h>

#include "cli/cli.h"
#include "cli/gitversion.h"
#include "util/buf.h"

#define HELP_MAX (256u * 1024u)   /* bytes of one command's --help text */
#define WORDS_MAX 4096            /* bytes of one command's flag or subcommand list */

static const char version_usage[] =
    "usage: zbso version\n"
    "\n"
    "Prints zbso's version, the git commit it was built from, the database backends\n"
    "compiled in and the versions of the libraries it runs with. 'zbso --version'\n"
    "prints the first line alone.\n";

static const char completion_usage[] =
    "usage: zbso completion bash|zsh|fish\n"
    "\n"
    "Prints a shell completion script for zbso's commands, subcommands and flags.\n"
    "  bash:  source <(zbso completion bash)     (or save it as\n"
    "         /usr/share/bash-completion/completions/zbso)\n"
    "  zsh:   source <(zbso completion zsh)      after compinit (or save it as _zbso\n"
    "         in a directory of $fpath)\n"
    "  fish:  zbso completion fish | source      (or save it as\n"
    "         ~/.config/fish/completions/zbso.fish)\n";

/* Answers a lone --help/-h with usage (returns 1); 0 for no arguments; ZBSO_EINVAL after
 * printing the error for anything else beyond the nargs positional arguments allowed. */
static int simple_args(const char *cmd, const char *usage, int argc, char **argv, int nargs)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 1;
        }
        if (argv[i][0] == '-' || i > nargs) {
            fprintf(stderr, "zbso %s: unexpected argument '%s'\n(see 'zbso %s --help')\n",
                    cmd, argv[i], cmd);
            return ZBSO_EINVAL;
        }
    }
    return 0;
}

int cli_version(int argc, char **argv)
{
    int rc = simple_args("version", version_usage, argc, argv, 0);
    if (rc != 0)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    int pq = PQlibVersion();
    const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
    printf("zbso %s\n", ZBSO_VERSION);
    printf("commit:    %s\n", ZBSO_GIT_COMMIT);
    printf("backends:  sqlite (SQLite %s), postgresql (libpq %d.%d), mysql/mariadb "
           "(MariaDB Connector/C %s)\n", sqlite3_libversion(), pq / 10000, pq % 10000,
           mysql_get_client_info());
    printf("libraries: libmicrohttpd %s, jansson %s, libcurl %s%s%s\n", MHD_get_version(),
           JANSSON_VERSION, cv->version, cv->ssl_version ? " with " : "",
           cv->ssl_version ? cv->ssl_version : "");
    printf("GPU:       NVML loaded at run time (ZBSO_NVML_LIBRARY overrides the path)\n");
    return CLI_EXIT_OK;
}

/* Runs command c with "--help" in a child process and collects what it prints on stdout
 * into out (buf_init'd by the caller, up to HELP_MAX bytes). Returns 0, or ZBSO_EIO when
 * the child cannot be started, fails, or prints too much. */
static int help_text(const cli_command *c, zbso_buf *out)
{
    int fd[2];
    char chunk[4096];
    int rc = 0, status;

    fflush(NULL);
    if (pipe(fd) < 0)
        return ZBSO_EIO;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return ZBSO_EIO;
    }
    if (pid == 0) {
        char name[64], help[] = "--help";
        snprintf(name, sizeof name, "%s", c->name);
        char *args[] = {name, help, NULL};
        close(fd[0]);
        if (dup2(fd[1], STDOUT_FILENO) < 0)
            _exit(127);
        int r = c->run(2, args);
        fflush(stdout);
        _exit(r);
    }
    close(fd[1]);
    for (;;) {
        ssize_t n = read(fd[0], chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (rc == 0 && buf_addn(out, chunk, (size_t)n) < 0)
            rc = ZBSO_EIO;
    }
    close(fd[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (rc == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
        rc = ZBSO_EIO;
    return rc;
}

/* Appends word w (n bytes) to the space-separated list, unless it is there already. */
static void add_word(char *list, const char *w, size_t n)
{
    size_t len = strlen(list);
    for (const char *p = list; *p != '\0';) {
        size_t k = strcspn(p, " ");
        if (k == n && strncmp(p, w, n) == 0)
            return;
        p += k + (p[k] == ' ');
    }
    if (len + n + 2 > WORDS_MAX)
        return;
    snprintf(list + len, WORDS_MAX - len, "%s%.*s", len ? " " : "", (int)n, w);
}

/* The flags (every "--name" in text) and subcommands (in a usage line, the lowercase word
 * after "zbso CMD") of command cmd's help text. */
static void scan_help(const char *cmd, const char *text, char *flags, char *subs)
{
    char lead[80];
    flags[0] = subs[0] = '\0';
    snprintf(lead, sizeof lead, "zbso %s ", cmd);
    for (const char *p = text; (p = strstr(p, "--")) != NULL;) {
        size_t n = 2;
        while ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= '0' && p[n] <= '9') ||
               (p[n] == '-' && p[n + 1] != '-' && n > 2))
            n++;
        if (n > 2 && (p == text || strchr(" [|(\n", p[-1]) != NULL)) {
            while (p[n - 1] == '-')
                n--;
            add_word(flags, p, n);
        }
        p += n;
    }
    bool usage = false;   /* in the usage block: "usage:" and the lines that go on with it */
    for (const char *line = text; *line != '\0';) {
        size_t len = strcspn(line, "\n");
        const char *p = line;
        if (strncmp(p, "usage:", 6) == 0) {
            usage = true;
            p += 6;
        }
        while (*p == ' ')
            p++;
        if (usage && p < line + len && strncmp(p, lead, strlen(lead)) == 0) {
            /* "zbso jobs show JOB", "zbso completion bash|zsh|fish" */
            for (p += strlen(lead);; p++) {
                size_t n = 0;
                while (p[n] >= 'a' && p[n] <= 'z')
                    n++;
                if (n == 0 || !strchr(" |\n", p[n]))
                    break;
                add_word(subs, p, n);
                if (p[n] != '|')
                    break;
                p += n;
            }
        } else if (usage && !(p < line + len && (*p == '[' || *p == '-'))) {
            usage = false;
        }
        line += len + (line[len] == '\n');
    }
}

/* Writes s single-quoted for a POSIX shell or zsh ('\'' for each quote). */
static void put_sq(const char *s)
{
    putchar('\'');
    for (; *s; s++)
        fputs(*s == '\'' ? "'\\''" : (char[]){*s, '\0'}, stdout);
    putchar('\'');
}

/* Writes s single-quoted for fish (\' and \\ inside quotes). */
static void put_fish(const char *s)
{
    putchar('\'');
    for (; *s; s++) {
        if (*s == '\'' || *s == '\\')
            putchar('\\');
        putchar(*s);
    }
    putchar('\'');
}

static const char bash_head[] =
    "# bash completion for zbso, generated by 'zbso completion bash'\n"
    "_zbso() {\n"
    "    local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]} i opts= subs=\n"
    "    COMPREPLY=()\n"
    "    for ((i = 2; i < COMP_CWORD; i++)); do\n"
    "        [[ ${COMP_WORDS[i]} == -- ]] && return 0   # the command run: files\n"
    "    done\n"
    "    if ((COMP_CWORD == 1)); then\n"
    "        COMPREPLY=($(compgen -W \"$_zbso_commands --help --version\" -- \"$cur\"))\n"
    "        return 0\n"
    "    fi\n"
    "    case $cmd in\n";
static const char bash_tail[] =
    "    esac\n"
    "    if [[ $cur == -* ]]; then\n"
    "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
    "    elif ((COMP_CWORD == 2)) && [[ -n $subs ]]; then\n"
    "        COMPREPLY=($(compgen -W \"$subs\" -- \"$cur\"))\n"
    "    fi\n"
    "}\n"
    "complete -o bashdefault -o default -F _zbso zbso\n";

static const char zsh_head[] =
    "#compdef zbso\n"
    "# zsh completion for zbso, generated by 'zbso completion zsh'\n"
    "_zbso() {\n"
    "    local -a cmds opts subs\n"
    "    local i\n"
    "    for ((i = 3; i < CURRENT; i++)); do\n"
    "        [[ ${words[i]} == -- ]] && { _files; return }\n"
    "    done\n"
    "    if ((CURRENT == 2)); then\n"
    "        cmds=(\n";
static const char zsh_mid[] =
    "        )\n"
    "        _describe 'zbso command' cmds\n"
    "        return\n"
    "    fi\n"
    "    case ${words[2]} in\n";
static const char zsh_tail[] =
    "    esac\n"
    "    if [[ $PREFIX == -* ]]; then\n"
    "        compadd -- $opts\n"
    "    elif ((CURRENT == 3 && ${#subs} > 0)); then\n"
    "        compadd -- $subs\n"
    "    else\n"
    "        _files\n"
    "    fi\n"
    "}\n"
    "if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then\n"
    "    _zbso \"$@\"\n"
    "else\n"
    "    compdef _zbso zbso\n"
    "fi\n";

/* Prints the completion script for shell sh (bash, zsh or fish). Returns 0, or ZBSO_EIO
 * when a command's help text cannot be read. */
static int completion(const char *sh)
{
    size_t n;
    const cli_command *cmds = cli_commands(&n);
    char *flags = malloc(WORDS_MAX), *subs = malloc(WORDS_MAX);
    zbso_buf help;
    int rc = 0;

    if (flags == NULL || subs == NULL) {
        free(flags);
        free(subs);
        return ZBSO_ENOMEM;
    }
    if (!strcmp(sh, "bash")) {
        printf("_zbso_commands='");
        for (size_t i = 0; i < n; i++)
            printf("%s%s", i ? " " : "", cmds[i].name);
        printf("'\n%s", bash_head);
    } else if (!strcmp(sh, "zsh")) {
        fputs(zsh_head, stdout);
        for (size_t i = 0; i < n; i++) {
            char item[256];
            snprintf(item, sizeof item, "%s:%s", cmds[i].name, cmds[i].summary);
            fputs("            ", stdout);
            put_sq(item);
            putchar('\n');
        }
        fputs(zsh_mid, stdout);
    } else {
        printf("# fish completion for zbso, generated by 'zbso completion fish'\n"
               "complete -c zbso -f\n"
               "complete -c zbso -n __fish_use_subcommand -l help -d 'show usage'\n"
               "complete -c zbso -n __fish_use_subcommand -l version -d 'print the "
               "version'\n");
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        buf_init(&help, HELP_MAX);
        if ((rc = help_text(&cmds[i], &help)) < 0) {
            fprintf(stderr, "zbso completion: cannot read 'zbso %s --help'\n", cmds[i].name);
            buf_free(&help);
            break;
        }
        scan_help(cmds[i].name, buf_ptr(&help), flags, subs);
        buf_free(&help);
        if (!strcmp(sh, "bash") || !strcmp(sh, "zsh")) {
            printf("        %s)\n            opts=%s%s%s\n            subs=%s%s%s\n", cmds[i].name,
                   sh[0] == 'z' ? "(" : "'", flags, sh[0] == 'z' ? ")" : "'",
                   sh[0] == 'z' ? "(" : "'", subs, sh[0] == 'z' ? ")" : "'");
            puts("            ;;");
            continue;
        }
        printf("complete -c zbso -n __fish_use_subcommand -a %s -d ", cmds[i].name);
        put_fish(cmds[i].summary);
        putchar('\n');
        char *all = strdup(subs), *save = NULL;
        for (char *w = strtok_r(subs, " ", &save); all != NULL && w != NULL;
             w = strtok_r(NULL, " ", &save))
            printf("complete -c zbso -n '__fish_seen_subcommand_from %s; and not "
                   "__fish_seen_subcommand_from %s' -a %s\n", cmds[i].name, all, w);
        free(all);
        for (char *w = strtok_r(flags, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save))
            printf("complete -c zbso -n '__fish_seen_subcommand_from %s' -l %s -F\n",
                   cmds[i].name, w + 2);
    }
    if (rc == 0)
        fputs(!strcmp(sh, "bash") ? bash_tail : !strcmp(sh, "zsh") ? zsh_tail : "", stdout);
    free(flags);
    free(subs);
    return rc;
}

int cli_completion(int argc, char **argv)
{
    int rc = simple_args("completion", completion_usage, argc, argv, 1);
    if (rc != 0)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (argc != 2) {
        fprintf(stderr, "zbso completion: name the shell: bash, zsh or fish\n"
                        "(see 'zbso completion --help')\n");
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "bash") && strcmp(argv[1], "zsh") && strcmp(argv[1], "fish")) {
        fprintf(stderr, "zbso completion: shell '%s' is not bash, zsh or fish\n", argv[1]);
        return CLI_EXIT_USAGE;
    }
    if (completion(argv[1]) < 0)
        return CLI_EXIT_FAIL;
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
