/* child.c: the training command as a child process: started without a shell in its own
 * process group, its stdout+stderr read line by line through one pipe and copied to the
 * try's log, stopped with SIGTERM then SIGKILL. Knows nothing of the optimizer. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/runInt.h"
#include "util/clock.h"

#define DRAIN_IDLE_MS 200      /* after the command exits, output idle this long has ended */

int run_child_spawn(run_child *c, char *const argv[], char *const envp[], FILE *log,
                    zbso_err *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, deflt;
    int fds[2] = {-1, -1};
    int rc = 0, e;
    bool fa_init = false, attr_init = false;

    c->pid = -1;
    c->out_fd = -1;
    c->log = log;
    c->exited = false;
    c->exit_status = 0;
    c->n = 0;
    c->last_output_s = clk_mono_s();
    if (pipe(fds) < 0 || fcntl(fds[0], F_SETFD, FD_CLOEXEC) < 0 ||
        fcntl(fds[1], F_SETFD, FD_CLOEXEC) < 0) {
        rc = err_set(err, ZBSO_EIO, "cannot create a pipe for '%s': %s", argv[0],
                     strerror(errno));
        goto out;
    }
    if ((e = posix_spawn_file_actions_init(&fa)) != 0)
        goto spawn_failed;
    fa_init = true;
    if ((e = posix_spawnattr_init(&attr)) != 0)
        goto spawn_failed;
    attr_init = true;
    sigemptyset(&none);
    sigemptyset(&deflt);
    sigaddset(&deflt, SIGTERM);
    sigaddset(&deflt, SIGINT);
    sigaddset(&deflt, SIGPIPE);
    sigaddset(&deflt, SIGHUP);
    /* The pipe ends are close-on-exec; dup2 gives the child clean copies of the write
     * end as fds 1 and 2. */
    if ((e = posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO)) != 0 ||
        (e = posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO)) != 0 ||
        (e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                 POSIX_SPAWN_SETSIGDEF)) != 0 ||
        (e = posix_spawnattr_setpgroup(&attr, 0)) != 0 ||
        (e = posix_spawnattr_setsigmask(&attr, &none)) != 0 ||
        (e = posix_spawnattr_setsigdefault(&attr, &deflt)) != 0)
        goto spawn_failed;
    if ((e = posix_spawnp(&c->pid, argv[0], &fa, &attr, argv, envp)) != 0) {
        c->pid = -1;
        rc = err_set(err, ZBSO_EIO, "cannot run the command '%s': %s%s", argv[0],
                     strerror(e),
                     e == ENOENT && strchr(argv[0], '/') == NULL
                         ? " (not found in PATH)" : "");
        goto out;
    }
    c->out_fd = fds[0];
    fds[0] = -1;
    goto out;
spawn_failed:
    rc = err_set(err, ZBSO_EIO, "cannot prepare to run '%s': %s", argv[0], strerror(e));
out:
    if (fa_init)
        posix_spawn_file_actions_destroy(&fa);
    if (attr_init)
        posix_spawnattr_destroy(&attr);
    if (fds[0] >= 0)
        close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    return rc;
}

/* Hands buf[0..len) as one line to the log and to fn (NULL: log only). */
static int emit(run_child *c, char *line, size_t len, run_line_fn fn, void *ctx)
{
    if (c->log != NULL) {
        fwrite(line, 1, len, c->log);
        fputc('\n', c->log);
    }
    line[len] = '\0';
    return fn != NULL ? fn(ctx, line, len) : 0;
}

/* Delivers the complete lines in c->buf (all of it, as a last line, when at_eof; a full
 * buffer as a piece), keeping the rest. Returns fn's first non-zero value, else 0. */
static int deliver(run_child *c, bool at_eof, run_line_fn fn, void *ctx)
{
    size_t start = 0;
    int rc = 0;
    while (rc == 0 && start < c->n) {
        char *nl = memchr(c->buf + start, '\n', c->n - start);
        size_t end;
        if (nl != NULL)
            end = (size_t)(nl - c->buf);
        else if (at_eof || (start == 0 && c->n == RUN_LINE_MAX))
            end = c->n;
        else
            break;
        char saved = c->buf[end];
        rc = emit(c, c->buf + start, end - start, fn, ctx);
        c->buf[end] = saved;
        start = end + (nl != NULL ? 1 : 0);
    }
    memmove(c->buf, c->buf + start, c->n - start);
    c->n -= start;
    return rc;
}

int run_child_read(run_child *c, int timeout_ms, run_line_fn fn, void *ctx, zbso_err *err)
{
    int rc = deliver(c, false, fn, ctx);
    if (rc != 0)
        return rc;
    if (c->out_fd < 0)
        return 1;
    struct pollfd p = {.fd = c->out_fd, .events = POLLIN};
    int n = poll(&p, 1, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : err_set(err, ZBSO_EIO, "cannot poll the command's "
                                            "output: %s", strerror(errno));
    if (n == 0) {
        /* What is left of the process group may hold the pipe open after the command
         * exits; output idle that long after the exit counts as the end. */
        if (!run_child_has_exited(c) ||
            clk_mono_s() - c->last_output_s < DRAIN_IDLE_MS / 1e3)
            return 0;
        rc = deliver(c, true, fn, ctx);
        if (c->log != NULL)
            fflush(c->log);
        return rc != 0 ? rc : 1;
    }
    ssize_t got = read(c->out_fd, c->buf + c->n, RUN_LINE_MAX - c->n);
    if (got < 0)
        return errno == EINTR ? 0 : err_set(err, ZBSO_EIO, "cannot read the command's "
                                            "output: %s", strerror(errno));
    c->last_output_s = clk_mono_s();
    if (got == 0) {
        close(c->out_fd);
        c->out_fd = -1;
        rc = deliver(c, true, fn, ctx);
        if (c->log != NULL)
            fflush(c->log);
        return rc != 0 ? rc : 1;
    }
    c->n += (size_t)got;
    return deliver(c, false, fn, ctx);
}

bool run_child_has_exited(run_child *c)
{
    siginfo_t si;
    if (c->exited)
        return true;
    memset(&si, 0, sizeof si);
    /* WNOWAIT leaves the zombie: while it exists its pid cannot name a new process
     * group, so killing the group afterwards cannot hit an unrelated one. */
    if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
        return errno == ECHILD;
    return si.si_pid == c->pid;
}

/* Copies output to the log until it ends (run_child_read) or deadline (monotonic s). */
static int drain(run_child *c, double deadline, zbso_err *err)
{
    int r = 0;
    while (r == 0 && clk_mono_s() < deadline)
        r = run_child_read(c, 20, NULL, NULL, err);
    return r < 0 ? r : 0;
}

/* Kills what is left of the group, reaps the command and closes the pipe. */
static int reap(run_child *c, zbso_err *err)
{
    int status = 0;
    kill(-c->pid, SIGKILL);
    while (!c->exited) {
        if (waitpid(c->pid, &status, 0) == c->pid) {
            c->exited = true;
            c->exit_status = status;
        } else if (errno != EINTR) {
            return err_set(err, ZBSO_EIO, "cannot wait for the command (pid %ld): %s",
                           (long)c->pid, strerror(errno));
        }
    }
    if (c->out_fd >= 0) {
        deliver(c, true, NULL, NULL);
        close(c->out_fd);
        c->out_fd = -1;
    }
    if (c->log != NULL)
        fflush(c->log);
    return 0;
}

int run_child_wait(run_child *c, zbso_err *err)
{
    int rc = 0;
    while ((rc = run_child_read(c, 100, NULL, NULL, err)) == 0)
        ;
    if (rc < 0)
        return rc;
    /* The output has ended; a command that closed it early still runs to its end. */
    while (!run_child_has_exited(c)) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return reap(c, err);
}

int run_child_stop(run_child *c, double grace_s, zbso_err *err)
{
    int rc;
    if (!run_child_has_exited(c)) {
        kill(-c->pid, SIGTERM);
        double deadline = clk_mono_s() + grace_s;
        while (!run_child_has_exited(c) && clk_mono_s() < deadline) {
            if (c->out_fd >= 0) {
                if ((rc = run_child_read(c, 20, NULL, NULL, err)) < 0)
                    return rc;
            } else {
                struct timespec ts = {0, 10 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
        }
    }
    /* SIGKILL (in reap) whatever still runs, then keep what it wrote. */
    kill(-c->pid, SIGKILL);
    if ((rc = drain(c, clk_mono_s() + 1.0, err)) < 0)
        return rc;
    return reap(c, err);
}

void run_child_describe(int status, char *out, size_t cap)
{
    if (WIFEXITED(status))
        snprintf(out, cap, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(out, cap, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(out, cap, "ended with wait status %d", status);
}
