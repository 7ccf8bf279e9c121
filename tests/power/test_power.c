/* test_power.c: the power-limit actuator (src/power) against the fake NVML: sets, skipped
 * sets, restoring, observer mode, the privilege error, CUDA indices; the exit guard in
 * child processes (normal exit, SIGTERM, SIGINT, SIGHUP, a forked grandchild's signal);
 * and zeusd's protocol against a small fake zeusd on a Unix socket and on TCP. The fake
 * NVML's limit file (FAKE_NVML_STATE) holds every set call: the tests read it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "power/power.h"

static char dir[64];
static char state[128];
static char state_dir[128];

/* The set calls in the limit file: count, and the last limit of GPU gpu (0 if none). */
static int sets_in_file(unsigned gpu, unsigned *last)
{
    char line[128];
    int n = 0;
    *last = 0;
    FILE *f = fopen(state, "r");
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof line, f)) {
        unsigned g, mw;
        if (sscanf(line, "set %u %u", &g, &mw) == 2) {
            n++;
            if (g == gpu)
                *last = mw;
        }
    }
    fclose(f);
    return n;
}

static int setup(void **unused)
{
    (void)unused;
    snprintf(dir, sizeof dir, "/tmp/zbso-power-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(state, sizeof state, "%s/limits", dir);
    snprintf(state_dir, sizeof state_dir, "%s/state", dir);
    setenv("ZBSO_STATE_DIR", state_dir, 1);
    unsetenv("ZBSO_GUARD");
    unsetenv("FAKE_NVML_DEFAULT_LIMIT_MW");
    setenv("ZBSO_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    setenv("FAKE_NVML_STATE", state, 1);
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_MIN_LIMIT_MW", "100000", 1);
    setenv("FAKE_NVML_MAX_LIMIT_MW", "300000", 1);
    unsetenv("FAKE_NVML_SET_FAIL");
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("ZEUSD_SOCK_PATH");
    unsetenv("ZEUSD_HOST_PORT");
    unsetenv("ZEUSD_TOKEN");
    unlink(state);
    return 0;
}

static int teardown(void **unused)
{
    char p[512];
    (void)unused;
    unlink(state);
    snprintf(p, sizeof p, "%s/zeusd.sock", dir);
    unlink(p);
    /* A guard of a killed child may still be removing its records: retry for 2 s. */
    for (int i = 0; i < 100; i++) {
        DIR *d = opendir(state_dir);
        struct dirent *e;
        while (d != NULL && (e = readdir(d)) != NULL)
            if (e->d_name[0] != '.') {
                snprintf(p, sizeof p, "%s/%s", state_dir, e->d_name);
                unlink(p);
            }
        if (d != NULL)
            closedir(d);
        if (rmdir(state_dir) == 0 || errno == ENOENT)
            break;
        usleep(20000);
    }
    rmdir(dir);
    return 0;
}

static void test_set_skip_restore(void **unused)
{
    pw_gpus *g;
    zbso_err err;
    unsigned last, cur[2];
    int64_t lo, hi;
    (void)unused;
    assert_int_equal(pw_open(NULL, 0, 0, &g, &err), 0);
    assert_int_equal(pw_actuator(g), PW_NVML);
    assert_string_equal(pw_actuator_name(g), "NVML");
    assert_int_equal(pw_count(g), 2);
    assert_int_equal(pw_constraints(g, &lo, &hi, &err), 0);
    assert_true(lo == 100000 && hi == 300000);
    assert_int_equal(pw_original(g)[0], 300000);
    /* Already at the max: nothing is set. */
    assert_int_equal(pw_set(g, 300000, &err), 0);
    assert_int_equal(sets_in_file(0, &last), 0);
    assert_int_equal(pw_set(g, 200000, &err), 0);
    assert_int_equal(sets_in_file(1, &last), 2);
    assert_int_equal(last, 200000);
    assert_int_equal(pw_limits(g, cur, &err), 0);
    assert_true(cur[0] == 200000 && cur[1] == 200000);
    assert_int_equal(pw_set(g, 200000, &err), 0);   /* skipped */
    assert_int_equal(sets_in_file(1, &last), 2);
    assert_int_equal(pw_set_count(g), 2);
    /* Outside the constraints. */
    assert_int_equal(pw_set(g, 50000, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "50000 mW is outside GPU 0's constraints [100000, 300000]"));
    assert_int_equal(pw_restore(g, &err), 0);
    assert_int_equal(sets_in_file(0, &last), 4);
    assert_int_equal(last, 300000);
    assert_int_equal(pw_restore(g, &err), 0);       /* nothing left to restore */
    assert_int_equal(sets_in_file(0, &last), 4);
    /* Closing restores too. */
    assert_int_equal(pw_set(g, 150000, &err), 0);
    pw_close(g);
    assert_int_equal(sets_in_file(1, &last), 8);
    assert_int_equal(last, 300000);
}

static void test_cuda_indices_and_observer(void **unused)
{
    pw_gpus *g;
    zbso_err err;
    unsigned last;
    int one = 0;
    (void)unused;
    setenv("CUDA_VISIBLE_DEVICES", "1", 1);
    assert_int_equal(pw_open(&one, 1, 0, &g, &err), 0);
    assert_int_equal(pw_nvml_index(g, 0), 1);
    assert_int_equal(pw_set(g, 250000, &err), 0);
    assert_int_equal(sets_in_file(1, &last), 1);     /* NVML index 1, not 0 */
    assert_int_equal(last, 250000);
    pw_close(g);
    int two = 1;
    assert_int_equal(pw_open(&two, 1, 0, &g, &err), ZBSO_ECONFIG);
    assert_non_null(strstr(err.msg, "GPU index 1 is out of range: 1 GPU(s) visible"));
    unsetenv("CUDA_VISIBLE_DEVICES");
    /* Observer mode sets nothing, ever, and restores nothing. */
    unlink(state);
    assert_int_equal(pw_open(NULL, 0, PW_OBSERVER, &g, &err), 0);
    assert_int_equal(pw_actuator(g), PW_OBSERVE);
    assert_int_equal(pw_set(g, 200000, &err), ZBSO_EBADOP);
    assert_int_equal(pw_restore(g, &err), 0);
    pw_close(g);
    assert_int_equal(sets_in_file(0, &last), 0);
}

static void test_no_privilege(void **unused)
{
    pw_gpus *g;
    zbso_err err;
    (void)unused;
    setenv("FAKE_NVML_SET_FAIL", "noperm", 1);
    assert_int_equal(pw_open(NULL, 0, 0, &g, &err), 0);
    assert_int_equal(pw_set(g, 200000, &err), ZBSO_EPERM);
    assert_non_null(strstr(err.msg, "needs the CAP_SYS_ADMIN capability (NVML: Insufficient "
                                    "Permissions)"));
    assert_non_null(strstr(err.msg, "ZEUSD_SOCK_PATH or ZEUSD_HOST_PORT"));
    pw_close(g);
    unsetenv("FAKE_NVML_SET_FAIL");
}

/* ---- the exit guard, in a child process ---- */

typedef enum { END_EXIT, END_SIGNAL, END_RETURN_FROM_MAIN } end_kind;

/* Forks a child that opens the actuator (guarding signals), sets 150 W, tells the parent
 * through a pipe, and then ends as kind says; returns its wait status. */
static int child_run(end_kind kind, int sig)
{
    int p[2];
    char c;
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        pw_gpus *g;
        zbso_err err;
        close(p[0]);
        if (pw_open(NULL, 0, PW_GUARD_SIGNALS, &g, &err) < 0 || pw_set(g, 150000, &err) < 0)
            _exit(90);
        if (write(p[1], "x", 1) != 1)
            _exit(91);
        if (kind == END_EXIT)
            exit(0);
        for (;;)
            pause();
    }
    close(p[1]);
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    if (kind == END_SIGNAL)
        kill(pid, sig);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void test_restored_at_exit(void **unused)
{
    unsigned last;
    (void)unused;
    int status = child_run(END_EXIT, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* 2 GPUs set to 150 W, then both back to 300 W by atexit. */
    assert_int_equal(sets_in_file(0, &last), 4);
    assert_int_equal(last, 300000);
}

static void test_restored_on_signals(void **unused)
{
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
    unsigned last;
    (void)unused;
    for (size_t i = 0; i < 3; i++) {
        unlink(state);
        int status = child_run(END_SIGNAL, sigs[i]);
        /* The signal still ends the process as it would have. */
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), sigs[i]);
        assert_int_equal(sets_in_file(0, &last), 4);
        assert_int_equal(last, 300000);
        sets_in_file(1, &last);
        assert_int_equal(last, 300000);
    }
}

/* Forks a child that opens the GPUs, sets 150 W on both and waits; returns its pid once
 * the limits are set. */
static pid_t child_at_150(void)
{
    int p[2];
    char c;
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        pw_gpus *g;
        zbso_err err;
        close(p[0]);
        if (pw_open(NULL, 0, 0, &g, &err) < 0 || pw_set(g, 150000, &err) < 0)
            _exit(90);
        if (write(p[1], "x", 1) != 1)
            _exit(91);
        for (;;)
            pause();
    }
    close(p[1]);
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    return pid;
}

static void kill_and_reap(pid_t pid)
{
    int status;
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* The record of GPU i's original limit in the state directory, or "" if none. */
static void record_of(unsigned i, char *out, size_t cap)
{
    char path[512];
    out[0] = '\0';
    FILE *f = NULL;
    /* The fake's UUID: GPU-fa4e<hash>-0000-4000-8000-<index>: find it by its index. */
    DIR *d = opendir(state_dir);
    struct dirent *e;
    char suffix[32];
    snprintf(suffix, sizeof suffix, "-%012u", i);
    while (d != NULL && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, "power-limit-", 12) == 0 && n > strlen(suffix) &&
            strcmp(e->d_name + n - strlen(suffix), suffix) == 0) {
            snprintf(path, sizeof path, "%s/%s", state_dir, e->d_name);
            f = fopen(path, "r");
        }
    }
    if (d != NULL)
        closedir(d);
    if (f != NULL) {
        size_t n = fread(out, 1, cap - 1, f);
        out[n] = '\0';
        fclose(f);
    }
}

/* SIGKILL cannot be caught, but the guard process sees its parent die and puts the limits
 * back within a few seconds, then drops the records (issue 22). */
static void test_sigkill_restored_by_the_guard(void **unused)
{
    unsigned last0, last1;
    char rec[1024];
    (void)unused;
    pid_t pid = child_at_150();
    record_of(0, rec, sizeof rec);
    assert_non_null(strstr(rec, "original_mw 300000\n"));
    struct stat st;
    assert_int_equal(stat(state_dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    kill_and_reap(pid);
    double waited = 0;
    while (waited < 5.0) {
        sets_in_file(0, &last0);
        sets_in_file(1, &last1);
        if (last0 == 300000 && last1 == 300000)
            break;
        usleep(20000);
        waited += 0.02;
    }
    assert_int_equal(last0, 300000);
    assert_int_equal(last1, 300000);
    assert_int_equal(sets_in_file(0, &last0), 4);   /* 150 and 300 on two GPUs */
    /* The guard dropped the records once the limits were back. */
    for (int i = 0; i < 250; i++) {
        record_of(0, rec, sizeof rec);
        if (rec[0] == '\0')
            break;
        usleep(20000);
    }
    assert_string_equal(rec, "");
}

/* The guard died too (here: none ran): the record of the killed process says what the
 * GPUs had, so the next process puts back 300 W, not the 150 W it finds. */
static void test_record_outlives_the_guard(void **unused)
{
    pw_gpus *g;
    zbso_err err;
    unsigned last, cur[2];
    char rec[1024];
    (void)unused;
    setenv("ZBSO_GUARD", "none", 1);
    pid_t pid = child_at_150();
    kill_and_reap(pid);
    unsetenv("ZBSO_GUARD");
    usleep(300000);
    assert_int_equal(sets_in_file(0, &last), 2);
    assert_int_equal(last, 150000);
    record_of(1, rec, sizeof rec);
    assert_non_null(strstr(rec, "original_mw 300000\n"));
    /* Opening puts the dead process's limits back at once and takes the records over. */
    assert_int_equal(pw_open(NULL, 0, 0, &g, &err), 0);
    assert_int_equal(pw_original(g)[0], 300000);
    assert_int_equal(pw_limits(g, cur, &err), 0);
    assert_true(cur[0] == 300000 && cur[1] == 300000);
    char mine[64];
    snprintf(mine, sizeof mine, "pid %ld\n", (long)getpid());
    record_of(1, rec, sizeof rec);
    assert_non_null(strstr(rec, mine));
    assert_int_equal(pw_set(g, 200000, &err), 0);
    pw_close(g);
    assert_int_equal(sets_in_file(1, &last), 8);   /* 150, 300, 200, 300 on two GPUs */
    assert_int_equal(last, 300000);
    record_of(1, rec, sizeof rec);
    assert_string_equal(rec, "");
}

/* No record: the original is NVML's default limit, never the limit found. A record of
 * another boot, or one that is not ours, is no record. */
static void test_original_without_a_record(void **unused)
{
    pw_gpus *g;
    zbso_err err;
    (void)unused;
    char path[512];
    setenv("FAKE_NVML_LIMIT_MW", "150000", 1);
    assert_int_equal(pw_open(NULL, 0, 0, &g, &err), 0);
    assert_int_equal(pw_original(g)[0], 300000);   /* the default: the max here */
    pw_close(g);
    unlink(state);
    setenv("FAKE_NVML_DEFAULT_LIMIT_MW", "250000", 1);
    assert_int_equal(pw_open(NULL, 0, 0, &g, &err), 0);
    assert_int_equal(pw_original(g)[0], 250000);
    /* Leave a record behind as a killed process would, then age it by a boot. */
    char rec[1024];
    record_of(0, rec, sizeof rec);
    assert_non_null(strstr(rec, "original_mw 250000\n"));
    DIR *d = opendir(state_dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "power-limit-", 12) == 0 && strstr(e->d_name, "-000000000000")) {
            snprintf(path, sizeof path, "%s/%s", state_dir, e->d_name);
            FILE *f = fopen(path, "w");
            assert_non_null(f);
            fprintf(f, "zbso power limit record 1\nboot_id another-boot\nuuid x\n"
                    "original_mw 120000\npid 1\npid_start 1\n");
            fclose(f);
        }
    closedir(d);
    pw_close(g);   /* the record is not this process's any more: left as it is */
    unsetenv("FAKE_NVML_DEFAULT_LIMIT_MW");
    setenv("FAKE_NVML_LIMIT_MW", "300000", 1);
    unlink(state);
    assert_int_equal(pw_open(NULL, 0, 0, &g, &err), 0);
    assert_int_equal(pw_original(g)[0], 300000);
    pw_close(g);
    unsetenv("FAKE_NVML_LIMIT_MW");
}

/* A state directory another user could write is refused: the actuator works, keeping no
 * record there. */
static void test_unsafe_state_dir(void **unused)
{
    pw_gpus *g;
    zbso_err err;
    char rec[1024];
    (void)unused;
    assert_int_equal(mkdir(state_dir, 0700), 0);
    assert_int_equal(chmod(state_dir, 0777), 0);
    assert_int_equal(pw_open(NULL, 0, 0, &g, &err), 0);
    assert_int_equal(pw_set(g, 200000, &err), 0);
    record_of(0, rec, sizeof rec);
    assert_string_equal(rec, "");
    pw_close(g);
    assert_int_equal(chmod(state_dir, 0700), 0);
}

static void test_forked_child_signal_restores_nothing(void **unused)
{
    unsigned last;
    int p[2], q[2];
    char c;
    (void)unused;
    unlink(state);
    assert_int_equal(pipe(p), 0);
    assert_int_equal(pipe(q), 0);
    pid_t pid = fork();
    if (pid == 0) {
        pw_gpus *g;
        zbso_err err;
        if (pw_open(NULL, 0, PW_GUARD_SIGNALS, &g, &err) < 0 || pw_set(g, 150000, &err) < 0)
            _exit(90);
        /* A worker forked after the guard (a DataLoader worker, say) gets SIGTERM: it
         * dies of it, and the trainer's limits stay. */
        pid_t w = fork();
        if (w == 0) {
            for (;;)
                pause();
        }
        kill(w, SIGTERM);
        int ws;
        waitpid(w, &ws, 0);
        if (!WIFSIGNALED(ws) || WTERMSIG(ws) != SIGTERM)
            _exit(92);
        unsigned cur[2];
        if (pw_limits(g, cur, &err) < 0 || cur[0] != 150000)
            _exit(93);
        if (write(p[1], "x", 1) != 1)
            _exit(91);
        if (read(q[0], &c, 1) != 1)
            _exit(94);
        _exit(0);   /* no atexit: leaves the limits as they are */
    }
    close(p[1]);
    assert_int_equal(read(p[0], &c, 1), 1);
    assert_int_equal(sets_in_file(0, &last), 2);
    assert_int_equal(last, 150000);
    assert_int_equal(write(q[1], "y", 1), 1);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(p[0]);
    close(q[0]);
    close(q[1]);
}

/* A child forked after the guard that opens an actuator of its own: its SIGTERM restores
 * its limits and ends it alone, never the parent (whose guard thread reads the pipe the
 * child inherited). What it puts back is the GPUs' true original (300 W, the record its
 * parent keeps), not the 150 W its parent had set when it opened. */
static void test_forked_child_with_its_own_guard(void **unused)
{
    unsigned last;
    (void)unused;
    unlink(state);
    pid_t pid = fork();
    if (pid == 0) {
        pw_gpus *g;
        zbso_err err;
        if (pw_open(NULL, 0, PW_GUARD_SIGNALS, &g, &err) < 0 || pw_set(g, 150000, &err) < 0)
            _exit(90);
        pid_t w = fork();
        if (w == 0) {
            pw_gpus *g2;
            /* Its original limit is the record's 300 W, not the 150 W it finds. */
            if (pw_open(NULL, 0, PW_GUARD_SIGNALS, &g2, &err) < 0 ||
                pw_set(g2, 250000, &err) < 0)
                _exit(95);
            for (;;)
                pause();
        }
        int ws;
        for (int i = 0; i < 500; i++) {
            unsigned cur[2];
            if (pw_limits(g, cur, &err) == 0 && cur[0] == 250000)
                break;
            usleep(10000);
        }
        kill(w, SIGTERM);
        waitpid(w, &ws, 0);
        if (!WIFSIGNALED(ws) || WTERMSIG(ws) != SIGTERM)
            _exit(92);
        /* Still alive, and the grandchild put the true original (300 W) back. */
        unsigned cur[2];
        if (pw_limits(g, cur, &err) < 0 || cur[0] != 300000)
            _exit(93);
        exit(0);   /* atexit: 300 W back */
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(sets_in_file(0, &last), 6);   /* 150, 250, 300 on two GPUs */
    assert_int_equal(last, 300000);
}

/* ---- a fake zeusd ----
 * Answers one connection at a time: GET /discover (status discover_status with the
 * discover body), and POST set requests (set_status; on 200 it writes the limit to the
 * fake NVML's file, as zeusd's NVML call would). Keeps each request line and body. */
typedef struct fake_zeusd {
    int fd;
    pthread_t thread;
    int discover_status;
    const char *discover_body;
    int set_status;
    int n;
    char req[8][512];
} fake_zeusd;

static void answer(int c, int status, const char *body)
{
    char buf[2048];
    int n = snprintf(buf, sizeof buf, "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", status,
                     strlen(body), body);
    assert_int_equal(write(c, buf, (size_t)n), n);
}

static void *zeusd_main(void *arg)
{
    fake_zeusd *z = arg;
    for (;;) {
        char buf[4096] = "";
        size_t len = 0;
        int c = accept(z->fd, NULL, NULL);
        if (c < 0)
            return NULL;
        /* Read the head, then the body its Content-Length announces. */
        char *end = NULL;
        while (len < sizeof buf - 1 && (end = strstr(buf, "\r\n\r\n")) == NULL) {
            ssize_t k = read(c, buf + len, sizeof buf - 1 - len);
            if (k <= 0)
                break;
            len += (size_t)k;
            buf[len] = '\0';
        }
        if (end != NULL) {
            const char *cl = strstr(buf, "Content-Length: ");
            size_t want = cl ? strtoul(cl + 16, NULL, 10) : 0;
            while (len - (size_t)(end + 4 - buf) < want) {
                ssize_t k = read(c, buf + len, sizeof buf - 1 - len);
                if (k <= 0)
                    break;
                len += (size_t)k;
                buf[len] = '\0';
            }
            char *eol = strstr(buf, "\r\n");
            if (z->n < 8)
                snprintf(z->req[z->n++], sizeof z->req[0], "%.*s|%s", (int)(eol - buf), buf,
                         end + 4);
            if (strncmp(buf, "GET /discover ", 14) == 0) {
                answer(c, z->discover_status, z->discover_body);
            } else if (z->set_status != 200) {
                answer(c, z->set_status, "{\"errors\":{\"0\":\"NVML Error: Insufficient "
                                         "Permissions\"}}");
            } else {
                unsigned mw = 0;
                const char *p = strstr(buf, "power_limit_mw");
                if (p) {
                    p += strlen("power_limit_mw");
                    while (*p && (*p < '0' || *p > '9'))
                        p++;
                    sscanf(p, "%u", &mw);
                }
                FILE *f = fopen(state, "a");
                const char *ids = strstr(buf, "gpu_ids=");
                if (ids) {
                    for (const char *q = ids + 8; *q >= '0' && *q <= '9';) {
                        fprintf(f, "set %lu %u 0\n", strtoul(q, NULL, 10), mw);
                        q += strspn(q, "0123456789");
                        if (*q == ',')
                            q++;
                    }
                } else {
                    unsigned gpu = 0;
                    sscanf(buf, "POST /gpu/%u/", &gpu);
                    fprintf(f, "set %u %u 0\n", gpu, mw);
                }
                fclose(f);
                answer(c, 200, "");
            }
        }
        close(c);
    }
}

static const char DISCOVER[] = "{\"gpus\":[{\"id\":0,\"name\":\"NVIDIA H200\"},{\"id\":1,"
                               "\"name\":\"NVIDIA H200\"}],\"cpus\":[],\"enabled_api_groups\":"
                               "[\"gpu-control\",\"gpu-read\"],\"auth_required\":false}";

static void zeusd_start(fake_zeusd *z, bool tcp)
{
    char port[16];
    z->n = 0;
    if (tcp) {
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t alen = sizeof a;
        z->fd = socket(AF_INET, SOCK_STREAM, 0);
        assert_int_equal(bind(z->fd, (struct sockaddr *)&a, sizeof a), 0);
        assert_int_equal(getsockname(z->fd, (struct sockaddr *)&a, &alen), 0);
        snprintf(port, sizeof port, "127.0.0.1:%d", ntohs(a.sin_port));
        setenv("ZEUSD_HOST_PORT", port, 1);
        unsetenv("ZEUSD_SOCK_PATH");
    } else {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "%s/zeusd.sock", dir);
        unlink(a.sun_path);
        z->fd = socket(AF_UNIX, SOCK_STREAM, 0);
        assert_int_equal(bind(z->fd, (struct sockaddr *)&a, sizeof a), 0);
        setenv("ZEUSD_SOCK_PATH", a.sun_path, 1);
    }
    assert_int_equal(listen(z->fd, 8), 0);
    assert_int_equal(pthread_create(&z->thread, NULL, zeusd_main, z), 0);
}

static void zeusd_stop(fake_zeusd *z)
{
    shutdown(z->fd, SHUT_RDWR);
    close(z->fd);
    pthread_join(z->thread, NULL);
    unsetenv("ZEUSD_SOCK_PATH");
    unsetenv("ZEUSD_HOST_PORT");
}

static void test_zeusd_unix_socket(void **unused)
{
    fake_zeusd z = {.discover_status = 200, .discover_body = DISCOVER, .set_status = 200};
    pw_gpus *g;
    zbso_err err;
    unsigned last;
    (void)unused;
    unlink(state);
    /* NVML says "no permission": only zeusd may set. */
    setenv("FAKE_NVML_SET_FAIL", "noperm", 1);
    zeusd_start(&z, false);
    setenv("ZEUSD_TOKEN", "tok123", 1);
    assert_int_equal(pw_open(NULL, 0, 0, &g, &err), 0);
    assert_int_equal(pw_actuator(g), PW_ZEUSD);
    assert_non_null(strstr(pw_actuator_name(g), "zeusd at /tmp/zbso-power-"));
    assert_int_equal(pw_set(g, 200000, &err), 0);
    assert_string_equal(z.req[0], "GET /discover HTTP/1.1|");
    assert_string_equal(z.req[1], "POST /gpu/set_power_limit?gpu_ids=0,1&power_limit_mw=200000"
                                  "&block=true HTTP/1.1|");
    assert_int_equal(sets_in_file(1, &last), 2);
    assert_int_equal(last, 200000);
    pw_close(g);   /* restored through zeusd */
    assert_int_equal(z.n, 3);
    assert_string_equal(z.req[2], "POST /gpu/set_power_limit?gpu_ids=0,1&power_limit_mw=300000"
                                  "&block=true HTTP/1.1|");
    zeusd_stop(&z);
    unsetenv("ZEUSD_TOKEN");
    unsetenv("FAKE_NVML_SET_FAIL");
}

/* A forked child that closes its copy of the parent's actuator (a data loader worker
 * freeing the optimizer it inherited) restores nothing and leaves the parent's guard. */
static void test_forked_child_close_leaves_the_parents(void **unused)
{
    pw_gpus *g;
    zbso_err err;
    unsigned cur[2], last;
    (void)unused;
    assert_int_equal(pw_open(NULL, 0, 0, &g, &err), 0);
    assert_int_equal(pw_set(g, 150000, &err), 0);
    pid_t pid = fork();
    if (pid == 0) {
        pw_close(g);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(pw_limits(g, cur, &err), 0);
    assert_true(cur[0] == 150000 && cur[1] == 150000);
    pw_close(g);
    assert_int_equal(sets_in_file(0, &last), 4);   /* 150, 300 on two GPUs */
    assert_int_equal(last, 300000);
}

/* The guard restores through zeusd too: NVML may not set here, and a SIGKILL of the
 * process that set 150 W through zeusd is followed by the guard's set of 300 W there. */
static void test_zeusd_sigkill_restored_by_the_guard(void **unused)
{
    fake_zeusd z = {.discover_status = 200, .discover_body = DISCOVER, .set_status = 200};
    unsigned last = 0;
    (void)unused;
    unlink(state);
    setenv("FAKE_NVML_SET_FAIL", "noperm", 1);
    zeusd_start(&z, false);
    pid_t pid = child_at_150();
    assert_int_equal(sets_in_file(0, &last), 2);
    assert_int_equal(last, 150000);
    kill_and_reap(pid);
    for (int i = 0; i < 250 && last != 300000; i++) {
        usleep(20000);
        sets_in_file(0, &last);
    }
    assert_int_equal(last, 300000);
    assert_int_equal(z.n, 4);   /* the child's discover and set, the guard's */
    assert_string_equal(z.req[3], "POST /gpu/set_power_limit?gpu_ids=0,1&power_limit_mw=300000"
                                  "&block=true HTTP/1.1|");
    zeusd_stop(&z);
    unsetenv("FAKE_NVML_SET_FAIL");
}

static void test_zeusd_tcp_errors_and_legacy(void **unused)
{
    fake_zeusd z = {.discover_status = 200, .discover_body = DISCOVER, .set_status = 403};
    pw_gpus *g;
    zbso_err err;
    (void)unused;
    unlink(state);
    zeusd_start(&z, true);
    assert_int_equal(pw_open(NULL, 0, 0, &g, &err), 0);
    assert_int_equal(pw_set(g, 200000, &err), ZBSO_EPERM);
    assert_non_null(strstr(err.msg, "refused to set the power limit to 200000 mW (403: GPU 0: "
                                    "NVML Error: Insufficient Permissions)"));
    pw_close(g);
    zeusd_stop(&z);

    /* A zeusd without gpu-control, or one that needs a token we lack, is refused at open. */
    z = (fake_zeusd){.discover_status = 200, .set_status = 200,
                     .discover_body = "{\"gpus\":[{\"id\":0}],\"enabled_api_groups\":"
                                      "[\"gpu-read\"],\"auth_required\":false}"};
    zeusd_start(&z, true);
    assert_int_equal(pw_open(NULL, 0, 0, &g, &err), ZBSO_ECONFIG);
    assert_non_null(strstr(err.msg, "does not enable the gpu-control API group"));
    zeusd_stop(&z);
    z = (fake_zeusd){.discover_status = 200, .set_status = 200,
                     .discover_body = "{\"gpus\":[{\"id\":0},{\"id\":1}],\"enabled_api_groups\":"
                                      "[\"gpu-control\"],\"auth_required\":true}"};
    zeusd_start(&z, true);
    assert_int_equal(pw_open(NULL, 0, 0, &g, &err), ZBSO_ECONFIG);
    assert_non_null(strstr(err.msg, "requires authentication: set ZEUSD_TOKEN"));
    zeusd_stop(&z);
    z = (fake_zeusd){.discover_status = 200, .set_status = 200,
                     .discover_body = "{\"gpus\":[{\"id\":0}],\"enabled_api_groups\":"
                                      "[\"gpu-control\"],\"auth_required\":false}"};
    zeusd_start(&z, true);
    assert_int_equal(pw_open(NULL, 0, 0, &g, &err), ZBSO_ECONFIG);
    assert_non_null(strstr(err.msg, "does not list GPU 1 (NVML index)"));
    zeusd_stop(&z);

    /* zeusd 0.2 has no /discover: one POST /gpu/{id}/set_power_limit per GPU, JSON body. */
    z = (fake_zeusd){.discover_status = 404, .discover_body = "", .set_status = 200};
    zeusd_start(&z, true);
    assert_int_equal(pw_open(NULL, 0, 0, &g, &err), 0);
    assert_int_equal(pw_set(g, 250000, &err), 0);
    assert_string_equal(z.req[1], "POST /gpu/0/set_power_limit HTTP/1.1|"
                                  "{\"power_limit_mw\":250000,\"block\":true}");
    assert_string_equal(z.req[2], "POST /gpu/1/set_power_limit HTTP/1.1|"
                                  "{\"power_limit_mw\":250000,\"block\":true}");
    pw_close(g);
    zeusd_stop(&z);

    /* Nothing listening: a clear error naming the variable. */
    setenv("ZEUSD_SOCK_PATH", "/nonexistent/zeusd.sock", 1);
    assert_int_equal(pw_open(NULL, 0, 0, &g, &err), ZBSO_ECONFIG);
    assert_non_null(strstr(err.msg, "cannot reach zeusd at /nonexistent/zeusd.sock"));
    assert_non_null(strstr(err.msg, "ZEUSD_SOCK_PATH"));
    unsetenv("ZEUSD_SOCK_PATH");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_set_skip_restore, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cuda_indices_and_observer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_privilege, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restored_at_exit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restored_on_signals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigkill_restored_by_the_guard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_record_outlives_the_guard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_original_without_a_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsafe_state_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forked_child_signal_restores_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_forked_child_with_its_own_guard, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_zeusd_unix_socket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zeusd_tcp_errors_and_legacy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forked_child_close_leaves_the_parents, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_zeusd_sigkill_restored_by_the_guard, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
