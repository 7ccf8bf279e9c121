/* serve.c: starting and stopping a real `zbso serve` for the client tests (serve.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "serve.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"

void serve_exec(const char *dir, const char *db, int port, const char *log)
{
    char url[512], port_s[16];
    FILE *f = fopen(log, "a");
    if (f) {
        dup2(fileno(f), 1);
        dup2(fileno(f), 2);
    }
    snprintf(url, sizeof url, "sqlite:///%s/%s", dir, db);
    snprintf(port_s, sizeof port_s, "%d", port);
    unsetenv("ZEUS_BSO_API_TOKEN");
    execl(getenv("ZBSO_BIN"), "zbso", "serve", "--host", "127.0.0.1", "--port", port_s,
          "--db", url, (char *)NULL);
    _exit(127);
}

int serve_start(const char *dir, const char *db, int port, pid_t *pid)
{
    char log[512], line[512];
    const char *tag = "zbso serve listening on http://127.0.0.1:";
    snprintf(log, sizeof log, "%s/%s.%d.log", dir, db, (int)time(NULL));
    unlink(log);
    *pid = fork();
    assert_true(*pid >= 0);
    if (*pid == 0)
        serve_exec(dir, db, port, log);
    for (int i = 0; i < 1000; i++) {
        FILE *f = fopen(log, "r");
        while (f && fgets(line, sizeof line, f)) {
            char *p = strstr(line, tag);
            if (p) {
                fclose(f);
                return (int)strtol(p + strlen(tag), NULL, 10);
            }
        }
        if (f)
            fclose(f);
        clk_sleep_s(0.010);
    }
    fail_msg("zbso serve did not start; see %s", log);
    return -1;
}

void serve_stop(pid_t pid, int sig)
{
    kill(pid, sig);
    waitpid(pid, NULL, 0);
}

void serve_clean_env(void)
{
    static const char *const names[] = {
        "ZEUS_BSO_SERVER_URL", "ZEUS_BSO_JOB_ID",           "ZEUS_BSO_TRIAL_NUMBER",
        "ZEUS_BATCH_SIZE",     "ZEUS_BSO_API_TOKEN",        "ZBSO_CLIENT_RETRY_TIMEOUT",
        "CUDA_VISIBLE_DEVICES",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unsetenv(names[i]);
}
