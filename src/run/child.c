/* child.c: the training command as a child process: started without a shell in its own
 * process group, killed by the kernel when zbso run dies (PR_SET_PDEATHSIG), its
 * stdout+stderr read line by line through one pipe and copied to the try's log, stopped
 * with a signal (SIGINT for Ctrl-C, else SIGTERM) then SIGKILL. Knows nothing of the
 * optimizer. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/runInt.h"
#include "util/clock.h"

#define DRAIN_IDLE_MS 200      /* after the command exits, output idle this long has ended */

/* The file execve runs for name: name itself when it holds a '/', else the first
 * executable PATH entry (the parent's PATH, "/usr/local/bin:/usr/bin:/bin" when unset, as
 * posix_spawnp searches). Returns 0 with out filled, or an errno value. */
static int find_program(const char *name, char *out, size_t cap)
{
    if (strchr(name, '/') != NULL) {
        if ((size_t)snprintf(out, cap, "%s", name) >= cap)
            return ENAMETOOLONG;
        return 0;
    }
    const char *path = getenv("PATH");
    int found = ENOENT;
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;; p++) {
        size_t len = strcspn(p, ":");
        int n = snprintf(out, cap, "%.*s%s%s", (int)len, p, len ? "/" : "", name);
        if (n > 0 && (size_t)n < cap) {
            if (access(out, X_OK) == 0)
                return 0;
            if (errno == EACCES)
                found = EACCES;
        }
        p += len;
        if (*p == '\0')
            break;
    }
    return found;
}

int run_child_spawn(run_child *c, char *const argv[], char *const envp[], FILE *log,
                    zbso_err *err)
{
    static const int deflt[] = {SIGTERM, SIGINT, SIGPIPE, SIGHUP, SIGQUIT};
    char prog[RUN_PATH_MAX + 64];
    int fds[2] = {-1, -1}, errp[2] = {-1, -1};
    int rc = 0, e;
    pid_t parent = getpid();

    c->pid = -1;
    c->out_fd = -1;
    c->log = log;
    c->exited = false;
    c->exit_status = 0;
    c->n = 0;
    c->last_output_s = clk_mono_s();
    if ((e = find_program(argv[0], prog, sizeof prog)) != 0)
        return err_set(err, ZBSO_EIO, "cannot run the command '%s': %s%s", argv[0],
                       strerror(e), e == ENOENT && strchr(argv[0], '/') == NULL
                                        ? " (not found in PATH)" : "");
    if (pipe2(fds, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
        rc = err_set(err, ZBSO_EIO, "cannot create a pipe for '%s': %s", argv[0],
                     strerror(errno));
        goto out;
    }
    /* fork, not posix_spawn: the child must ask for PR_SET_PDEATHSIG between the two.
     * Only async-signal-safe calls follow in the child (zbso run has threads). */
    c->pid = fork();
    if (c->pid < 0) {
        c->pid = -1;
        rc = err_set(err, ZBSO_EIO, "cannot start '%s': %s", argv[0], strerror(errno));
        goto out;
    }
    if (c->pid == 0) {
        sigset_t none;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        sigemptyset(&sa.sa_mask);
        /* Its own process group: the terminal's Ctrl-C reaches zbso run alone, which
         * passes it on once; and the whole group can be killed. SIGKILL when zbso run
         * dies, however it dies (the guard kills the rest of the group, see power.h). */
        if (setpgid(0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
            goto child_failed;
        /* zbso run died before the prctl: nothing would kill this command later. */
        if (getppid() != parent)
            _exit(127);
        for (size_t i = 0; i < sizeof deflt / sizeof deflt[0]; i++)
            sigaction(deflt[i], &sa, NULL);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (dup2(fds[1], STDOUT_FILENO) < 0 || dup2(fds[1], STDERR_FILENO) < 0)
            goto child_failed;
        execve(prog, argv, envp);
    child_failed:
        e = errno;
        if (write(errp[1], &e, sizeof e) < 0)
            _exit(127);
        _exit(127);
    }
    close(errp[1]);
    errp[1] = -1;
    /* The guard kills the group if zbso run dies; PR_SET_PDEATHSIG reaches only the
     * command itself, not what it started. */
    zbso_err gerr;
    if (pw_guard_watch(c->guard, (long)c->pid, true, &gerr) < 0)
        fprintf(stderr, "zbso run: %s: the command's process group would outlive zbso run\n",
                gerr.msg);
    /* The error pipe closes on exec (0 bytes) or carries the child's errno. */
    ssize_t got;
    while ((got = read(errp[0], &e, sizeof e)) < 0 && errno == EINTR)
        ;
    if (got == (ssize_t)sizeof e) {
        pw_guard_watch(c->guard, (long)c->pid, false, NULL);
        waitpid(c->pid, NULL, 0);
        c->pid = -1;
        rc = err_set(err, ZBSO_EIO, "cannot run the command '%s': %s", argv[0], strerror(e));
        goto out;
    }
    c->out_fd = fds[0];
    fds[0] = -1;
out:
    for (int i = 0; i < 2; i++) {
        if (fds[i] >= 0)
            close(fds[i]);
        if (errp[i] >= 0)
            close(errp[i]);
    }
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
    /* Before the reaping frees the pid, which could then name another group. */
    pw_guard_watch(c->guard, (long)c->pid, false, NULL);
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

int run_child_stop(run_child *c, int sig, double grace_s, const volatile sig_atomic_t *signals,
                   zbso_err *err)
{
    int rc;
    if (!run_child_has_exited(c)) {
        sig_atomic_t seen = signals != NULL ? *signals : 0;
        kill(-c->pid, sig);
        double deadline = clk_mono_s() + grace_s;
        /* Another signal to zbso run meanwhile (a second Ctrl-C) cuts the grace short. */
        while (!run_child_has_exited(c) && clk_mono_s() < deadline &&
               (signals == NULL || *signals == seen)) {
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
