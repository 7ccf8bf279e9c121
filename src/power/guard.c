/* guard.c: the guard process (SPEC §6.1, §7): a small process, `zbso-guard`, that a process
 * lowering GPU power limits (libzbso's optimizer, `zbso run`) starts and that outlives it:
 * when its parent goes away by any death (SIGKILL, OOM kill, a crash), it kills the process
 * groups it was told to watch (the training command of `zbso run`) and puts the GPUs'
 * original limits back through NVML or zeusd. Both sides of the protocol are here: the
 * parent's (pw_guard_start, _watch, _stop) and the guard's (pw_guard_main). */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "power/powerInt.h"

#define GUARD_NAME "zbso-guard"
#define GUARD_POLL_MS 200         /* how often the guard looks for a new parent */
#define GUARD_PGIDS_MAX 64        /* process groups one guard watches */
#define GUARD_STOP_WAIT_S 5.0     /* pw_guard_stop waits this long for the guard */
#define GUARD_READY_MS 5000       /* pw_guard_start waits this long for it to start */
#define GUARD_SETTLE_MS 100       /* after the parent's death, before restoring */

extern char **environ;

struct pw_guard {
    pid_t pid;                    /* the guard process */
    int fd;                       /* our end of the socket; -1 once stopped */
};

/* ---- the parent's side ---- */

/* Whether path names an executable file; copies it to out. */
static bool try_path(const char *path, char *out, size_t cap)
{
    if (path == NULL || path[0] == '\0' || access(path, X_OK) != 0)
        return false;
    return (size_t)snprintf(out, cap, "%s", path) < cap;
}

/* Finds the guard program: $ZBSO_GUARD; zbso-guard beside the file this code was loaded
 * from (libzbso.so, or the zbso binary: a package keeps them together); the libexec
 * directories of a system install; the build tree's. Returns 0, 1 for ZBSO_GUARD=none, or
 * ZBSO_ECONFIG naming where it looked. */
static int guard_program(char *out, size_t cap, zbso_err *err)
{
    const char *env = getenv("ZBSO_GUARD");
    char dir[PATH_MAX];
    Dl_info info;
    if (env != NULL && strcmp(env, "none") == 0)
        return 1;
    if (env != NULL && env[0] != '\0')
        return try_path(env, out, cap) ? 0
               : err_set(err, ZBSO_ECONFIG, "ZBSO_GUARD='%.200s' is not an executable file",
                         env);
    /* dladdr of an object of ours names the file it came from (a function pointer would
     * not convert to void * in ISO C). */
    static const char anchor = 0;
    if (dladdr(&anchor, &info) != 0 && info.dli_fname != NULL &&
        strchr(info.dli_fname, '/') != NULL) {
        snprintf(dir, sizeof dir, "%s", info.dli_fname);
        *strrchr(dir, '/') = '\0';
        char path[PATH_MAX + 16];
        snprintf(path, sizeof path, "%s/" GUARD_NAME, dir);
        if (try_path(path, out, cap))
            return 0;
    }
    if (try_path("/usr/libexec/zbso/" GUARD_NAME, out, cap) ||
        try_path("/usr/local/libexec/zbso/" GUARD_NAME, out, cap))
        return 0;
#ifdef ZBSO_GUARD_BUILD_PATH
    if (try_path(ZBSO_GUARD_BUILD_PATH, out, cap))
        return 0;
#endif
    return err_set(err, ZBSO_ECONFIG, "cannot find the power-limit guard program "
                   GUARD_NAME " (beside libzbso.so or zbso, or in /usr/libexec/zbso): it "
                   "puts GPU power limits back if this process is killed. Set ZBSO_GUARD "
                   "to its path (ZBSO_GUARD=none runs without it, and limits then outlive "
                   "a SIGKILL)");
}

int pw_guard_start(pw_kind kind, const pw_guard_gpu *gpus, unsigned n, const char *state_dir,
                   pw_guard **out, zbso_err *err)
{
    char prog[PATH_MAX], parent[32], kind_s[16];
    char *argv[5 + ZBSO_MAX_GPUS + 1];
    char gpu_args[ZBSO_MAX_GPUS][NVML_UUID_MAX + 48];
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, deflt;
    int sv[2] = {-1, -1}, e, rc;
    bool fa_init = false, attr_init = false;

    *out = NULL;
    if (n > ZBSO_MAX_GPUS)
        return err_set(err, ZBSO_EINVAL, "a guard holds at most %d GPUs", ZBSO_MAX_GPUS);
    if ((rc = guard_program(prog, sizeof prog, err)) != 0) {
        if (rc > 0 && n > 0)
            fprintf(stderr, "zbso: ZBSO_GUARD=none: no guard process; the GPU power limits "
                    "set from now on outlive a SIGKILL of process %ld\n", (long)getpid());
        return rc < 0 ? rc : 0;
    }
    pw_guard *gd = calloc(1, sizeof *gd);
    if (gd == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory starting the guard");
    gd->fd = -1;
    snprintf(parent, sizeof parent, "%ld", (long)getpid());
    snprintf(kind_s, sizeof kind_s, "%s",
             kind == PW_ZEUSD ? "zeusd" : kind == PW_NVML ? "nvml" : "none");
    argv[0] = (char *)GUARD_NAME;
    argv[1] = parent;
    argv[2] = kind_s;
    argv[3] = (char *)(state_dir != NULL && state_dir[0] != '\0' ? state_dir : "-");
    for (unsigned i = 0; i < n; i++) {
        snprintf(gpu_args[i], sizeof gpu_args[i], "%u:%u:%s", gpus[i].nvml_index,
                 gpus[i].original_mw, gpus[i].uuid);
        argv[4 + i] = gpu_args[i];
    }
    argv[4 + n] = NULL;
    /* A socket, not a pipe: a write to a guard that died fails with EPIPE (MSG_NOSIGNAL)
     * instead of a SIGPIPE that would end the caller. Close-on-exec: the training command
     * must not hold it. */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        rc = err_set(err, ZBSO_ERUNTIME, "cannot start the guard: socketpair: %s",
                     strerror(errno));
        goto out;
    }
    sigemptyset(&none);
    sigfillset(&deflt);
    sigdelset(&deflt, SIGKILL);
    sigdelset(&deflt, SIGSTOP);
    if ((e = posix_spawn_file_actions_init(&fa)) != 0)
        goto spawn_failed;
    fa_init = true;
    if ((e = posix_spawnattr_init(&attr)) != 0)
        goto spawn_failed;
    attr_init = true;
    /* A session of its own: the terminal's Ctrl-C and a kill of the caller's process
     * group do not reach it. stdin is the socket, stdout goes to stderr. */
    if ((e = posix_spawn_file_actions_adddup2(&fa, sv[1], STDIN_FILENO)) != 0 ||
        (e = posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO)) != 0 ||
        (e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                                 POSIX_SPAWN_SETSIGDEF)) != 0 ||
        (e = posix_spawnattr_setsigmask(&attr, &none)) != 0 ||
        (e = posix_spawnattr_setsigdefault(&attr, &deflt)) != 0)
        goto spawn_failed;
    if ((e = posix_spawn(&gd->pid, prog, &fa, &attr, argv, environ)) != 0)
        goto spawn_failed;
    gd->fd = sv[0];
    sv[0] = -1;
    close(sv[1]);
    sv[1] = -1;
    /* Wait for its "ready" byte: a guard that cannot run is an error now, not a surprise
     * after a kill, and its start (exec, loading libraries) is over before the caller
     * measures anything. */
    struct pollfd p = {.fd = gd->fd, .events = POLLIN};
    char ready = 0;
    int pr;
    while ((pr = poll(&p, 1, GUARD_READY_MS)) < 0 && errno == EINTR)
        ;
    if (pr <= 0 || recv(gd->fd, &ready, 1, 0) != 1 || ready != 'r') {
        rc = err_set(err, ZBSO_ECONFIG, "the guard '%s' did not start (%s)", prog,
                     pr == 0 ? "no answer in 5 s" : "it ended");
        close(gd->fd);
        kill(gd->pid, SIGKILL);
        waitpid(gd->pid, NULL, 0);
        goto out;
    }
    *out = gd;
    gd = NULL;
    rc = 0;
    goto out;
spawn_failed:
    rc = err_set(err, ZBSO_ECONFIG, "cannot start the guard '%s': %s", prog, strerror(e));
out:
    if (fa_init)
        posix_spawn_file_actions_destroy(&fa);
    if (attr_init)
        posix_spawnattr_destroy(&attr);
    for (int i = 0; i < 2; i++)
        if (sv[i] >= 0)
            close(sv[i]);
    free(gd);
    return rc;
}

/* Sends one line to the guard. Returns 0 or ZBSO_ERUNTIME (the guard is gone). */
static int guard_send(pw_guard *gd, const char *line, zbso_err *err)
{
    size_t len = strlen(line), off = 0;
    while (off < len) {
        ssize_t w = send(gd->fd, line + off, len - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return err_set(err, ZBSO_ERUNTIME, "the guard process %ld is gone: %s",
                           (long)gd->pid, strerror(errno));
        off += (size_t)w;
    }
    return 0;
}

int pw_guard_watch(pw_guard *gd, long pgid, bool on, zbso_err *err)
{
    char line[48];
    if (gd == NULL || gd->fd < 0)
        return 0;
    snprintf(line, sizeof line, "%s %ld\n", on ? "pgid" : "unpgid", pgid);
    return guard_send(gd, line, err);
}

void pw_guard_stop(pw_guard *gd, bool restored)
{
    if (gd == NULL)
        return;
    if (gd->fd >= 0) {
        /* Without "done" the guard takes the closed socket for our end and restores. */
        if (restored)
            guard_send(gd, "done\n", NULL);
        close(gd->fd);
        gd->fd = -1;
    }
    struct timespec t0, now, nap = {0, 10 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        pid_t r = waitpid(gd->pid, NULL, WNOHANG);
        if (r == gd->pid || (r < 0 && errno != EINTR))
            break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) * 1e-9 >
            GUARD_STOP_WAIT_S)
            break;   /* still restoring: it ends on its own */
        nanosleep(&nap, NULL);
    }
    free(gd);
}

/* ---- the guard's side ---- */

/* Parses "NVML_INDEX:ORIGINAL_MW:UUID". */
static bool parse_gpu(const char *s, pw_guard_gpu *g)
{
    char *end;
    unsigned long idx = strtoul(s, &end, 10);
    if (end == s || *end != ':' || idx > 1024)
        return false;
    const char *p = end + 1;
    unsigned long mw = strtoul(p, &end, 10);
    if (end == p || *end != ':' || mw == 0 || mw > UINT_MAX)
        return false;
    g->nvml_index = (unsigned)idx;
    g->original_mw = (unsigned)mw;
    return (size_t)snprintf(g->uuid, sizeof g->uuid, "%s", end + 1) < sizeof g->uuid;
}

int pw_guard_main(int argc, char **argv)
{
    static const int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP,
                                  SIGTTIN, SIGTTOU};
    pw_guard_gpu gpus[ZBSO_MAX_GPUS];
    long pgids[GUARD_PGIDS_MAX];
    unsigned n_gpus = 0, n_pgids = 0;
    char buf[4096];
    size_t len = 0;
    char *end;

    if (argc < 4 || argc > 4 + ZBSO_MAX_GPUS) {
        fprintf(stderr, GUARD_NAME ": started by libzbso and zbso run, not by hand: "
                "PARENT_PID nvml|zeusd|none STATE_DIR|- [NVML_INDEX:ORIGINAL_MW:UUID]...\n");
        return 2;
    }
    long parent = strtol(argv[1], &end, 10);
    pw_kind kind = !strcmp(argv[2], "zeusd") ? PW_ZEUSD
                   : !strcmp(argv[2], "nvml") ? PW_NVML : PW_OBSERVE;
    const char *state_dir = strcmp(argv[3], "-") != 0 ? argv[3] : NULL;
    if (end == argv[1] || *end != '\0' || parent <= 1) {
        fprintf(stderr, GUARD_NAME ": bad parent pid '%s'\n", argv[1]);
        return 2;
    }
    for (int i = 4; i < argc; i++)
        if (!parse_gpu(argv[i], &gpus[n_gpus++])) {
            fprintf(stderr, GUARD_NAME ": bad GPU '%s'\n", argv[i]);
            return 2;
        }
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
        signal(ignored[i], SIG_IGN);
    /* Ready: the parent waits for this byte (stdin is one end of a socket pair). */
    if (write(STDIN_FILENO, "r", 1) != 1)
        return 1;

    /* Until the parent is gone: its end of the socket closed (it exited, or closed us
     * without "done"), or we were handed to another parent (a forked child of it holds
     * the socket open). */
    while (getppid() == (pid_t)parent) {
        struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
        int r = poll(&p, 1, GUARD_POLL_MS);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            continue;
        ssize_t got = r > 0 ? read(STDIN_FILENO, buf + len, sizeof buf - 1 - len) : -1;
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        len += (size_t)got;
        buf[len] = '\0';
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n')) != NULL) {
            *nl = '\0';
            long v;
            if (!strcmp(line, "done"))
                return 0;
            if (sscanf(line, "pgid %ld", &v) == 1 && v > 1 && n_pgids < GUARD_PGIDS_MAX) {
                pgids[n_pgids++] = v;
            } else if (sscanf(line, "unpgid %ld", &v) == 1) {
                for (unsigned i = 0; i < n_pgids; i++)
                    if (pgids[i] == v) {
                        pgids[i] = pgids[--n_pgids];
                        break;
                    }
            }
            line = nl + 1;
        }
        len -= (size_t)(line - buf);
        memmove(buf, line, len);
        if (len == sizeof buf - 1)
            len = 0;   /* no line is that long: not our parent talking */
    }

    for (unsigned i = 0; i < n_pgids; i++)
        if (kill((pid_t)-pgids[i], SIGKILL) == 0)
            fprintf(stderr, GUARD_NAME ": process %ld ended: killed its command (process "
                    "group %ld)\n", parent, pgids[i]);
    if (n_gpus == 0 || kind == PW_OBSERVE)
        return 0;
    /* The parent's socket closes early in its exit, before the kernel sends its children
     * their PR_SET_PDEATHSIG; a child's set call already in flight (a `zbso run` command's
     * optimizer) would complete after ours. Let them die first. */
    struct timespec settle = {0, GUARD_SETTLE_MS * 1000 * 1000};
    nanosleep(&settle, NULL);
    /* With records, only the GPUs whose record the parent still holds: one it restored
     * and released (a clean exit) may be another process's by now, and one held by
     * another process is that one's to put back. The lock orders us with a process that
     * opens the GPUs meanwhile. */
    zbso_err err;
    unsigned long sets = 0;
    int lock = state_dir != NULL ? pw_state_lock(state_dir, &err) : -1;
    if (lock >= 0) {
        unsigned k = 0;
        for (unsigned i = 0; i < n_gpus; i++) {
            pw_record r;
            if (pw_record_load(state_dir, gpus[i].uuid, &r, NULL) == 0 && r.pid == parent)
                gpus[k++] = gpus[i];
        }
        n_gpus = k;
    }
    int rc = n_gpus > 0 ? pw_restore_held(kind, gpus, n_gpus, &sets, &err) : 0;
    if (rc == 0 && lock >= 0)
        for (unsigned i = 0; i < n_gpus; i++)
            pw_record_remove(state_dir, gpus[i].uuid, parent);
    pw_state_unlock(lock);
    if (rc < 0) {
        /* The records stay: the next zbso process restores from them. */
        fprintf(stderr, GUARD_NAME ": process %ld ended; could not put the GPU power limits "
                "back: %s\n", parent, err.msg);
        return 1;
    }
    if (sets > 0)
        fprintf(stderr, GUARD_NAME ": process %ld ended; GPU power limits put back (GPU of "
                "NVML index %u: %u W)\n", parent, gpus[0].nvml_index,
                gpus[0].original_mw / 1000);
    return 0;
}
