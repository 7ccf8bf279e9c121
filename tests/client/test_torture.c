/* test_torture.c: libzbso under allocation failure (curl's torture tests, after
 * docs/internals/MEM.md). For N = 1, 2, ... a child process runs the whole client sequence
 * with the Nth allocation failing (util/mem's countdown; jansson's and libcurl's
 * allocations are routed through it too): monitor on the fake NVML, client against a real
 * `zbso serve`, batch size, train begin, two epochs to the end of training, a second client
 * whose trial is left for the exit handler to end. Every run must end cleanly: no crash,
 * no abort, no leak (the ASan build's leak check runs in each child), and a call that fails
 * returns ZBSO_ENOMEM with a message (but for the known ways jansson and libcurl misreport
 * their own allocation failures: `excused` below). The loop ends with the first run in
 * which no allocation failed; it must have completed the sequence. Links the static
 * libraries (client.c compiled in), since libzbso.so keeps the countdown local. */
#define _GNU_SOURCE /* dladdr */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <dlfcn.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "serve.h"
#include "util/clock.h"
#include "util/mem.h"
#include "zbso/zbso.h"

#define RUNS_MAX 20000        /* a bound far above the allocations of one sequence */
#define SITES_MAX 4096

/* What a child reports through its pipe at exit. */
typedef struct outcome {
    int step;                 /* the step that failed, or 0 */
    int rc;
    long failures;            /* allocations the countdown failed: 0 or 1 */
    uintptr_t site;           /* the failed allocation's caller */
    char msg[ZBSO_ERRBUF_MAX];
} outcome;

static const char *const step_names[] = {
    "",  "zbso_monitor_new", "zbso_client_new", "zbso_client_get_batch_size",
    "zbso_client_on_train_begin", "zbso_client_on_evaluate 1", "zbso_client_on_evaluate 2",
    "zbso_client_new (second)", "zbso_client_get_batch_size (second)",
};
#define STEPS 8

static char tmpdir[64];
static char url[64];
static int report_fd = -1;
static outcome result;

/* atexit handler registered before libzbso's, so it runs after libzbso's exit handler
 * (which ends the unfinished trial) and counts that handler's allocations too. */
static void report_at_exit(void)
{
    result.failures = mem_failures();
    result.site = (uintptr_t)mem_failed_site();
    if (write(report_fd, &result, sizeof result) != (ssize_t)sizeof result)
        _exit(90);
}

/* Records the first step that failed: rc < 0 from the call, or 1 for a call that succeeded
 * but left the wrong state (msg says what). Returns rc. */
static int step(int n, int rc, const char *msg)
{
    if (rc != 0 && result.step == 0) {
        result.step = n;
        result.rc = rc;
        snprintf(result.msg, sizeof result.msg, "%s", msg ? msg : "");
    }
    return rc;
}

/* The client sequence of one child, the nth allocation failing; then exit(0). A step
 * that returns 0 but leaves the wrong state is a failed run (rc 1: "wrong state"). */
static void child_run(long n, int fd)
{
    char spec[512], err[ZBSO_ERRBUF_MAX] = "";
    zbso_monitor *mon = NULL;
    zbso_client *c = NULL, *c2 = NULL;
    int64_t bs = 0;
    /* A crash must kill the child, not land in cmocka's handlers of the parent's test. */
    signal(SIGSEGV, SIG_DFL);
    signal(SIGBUS, SIG_DFL);
    signal(SIGILL, SIG_DFL);
    signal(SIGFPE, SIG_DFL);
    signal(SIGSYS, SIG_DFL);
    report_fd = fd;
    atexit(report_at_exit);
    snprintf(spec, sizeof spec,
             "{\"job_id\":\"torture-%ld\",\"job_id_prefix\":\"torture\","
             "\"batch_sizes\":[32,64],\"default_batch_size\":64,\"max_epochs\":5,"
             "\"target_metric\":0.5,\"mab_seed\":1,\"beta_knob\":null}",
             n);
    mem_fail_nth(n);
    if (step(1, zbso_monitor_new(NULL, 0, &mon, err, sizeof err), err) < 0 ||
        step(2, zbso_client_new(mon, url, spec, 0, &c, err, sizeof err), err) < 0 ||
        step(3, zbso_client_get_batch_size(c, &bs), zbso_client_errmsg(c)) < 0 ||
        step(4, zbso_client_on_train_begin(c), zbso_client_errmsg(c)) < 0 ||
        step(5, zbso_client_on_evaluate(c, 0.1), zbso_client_errmsg(c)) < 0)
        goto out;
    if (zbso_client_training_finished(c))
        step(5, 1, "training finished after an epoch under the target");
    else if (step(6, zbso_client_on_evaluate(c, 0.9), zbso_client_errmsg(c)) == 0 &&
             !zbso_client_training_finished(c))
        step(6, 1, "training did not finish at the target");
    if (result.step)
        goto out;
    /* A second run of the job, left unfinished: the exit handler ends its trial. */
    if (step(7, zbso_client_new(mon, url, spec, 0, &c2, err, sizeof err), err) == 0)
        step(8, zbso_client_get_batch_size(c2, &bs), zbso_client_errmsg(c2));
out:
    zbso_client_free(c2);
    zbso_client_free(c);
    zbso_monitor_free(mon);
    exit(0);
}

/* One allocation site: where the failed allocation was asked for. */
typedef struct site {
    uintptr_t addr;
    int library;              /* 0 libzbso (this program), 1 jansson, 2 libcurl, 3 other */
} site;

static const char *const library_names[] = {"libzbso", "jansson", "libcurl", "other"};

static int library_of(uintptr_t addr)
{
    Dl_info info, self;
    if (!dladdr((void *)addr, &info) || !dladdr((void *)(uintptr_t)library_of, &self))
        return 3;
    if (info.dli_fbase == self.dli_fbase)
        return 0;
    if (info.dli_fname && strstr(info.dli_fname, "libjansson"))
        return 1;
    if (info.dli_fname && strstr(info.dli_fname, "libcurl"))
        return 2;
    return 3;
}

/* Runs the child with the nth allocation failing and returns its outcome; fails the test
 * when it crashed, aborted, leaked (sanitizer exit) or reported nothing. */
static outcome run(long n)
{
    int fds[2];
    int status = 0;
    outcome o;
    memset(&o, 0, sizeof o);
    assert_int_equal(pipe(fds), 0);
    fflush(stdout); /* or the child's exit writes the parent's pending output again */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        child_run(n, fds[1]);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], &o, sizeof o);
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg("allocation %ld failing: the child died of signal %d (%s) after step %d",
                 n, WTERMSIG(status), strsignal(WTERMSIG(status)), o.step);
    if (WEXITSTATUS(status) != 0)
        fail_msg("allocation %ld failing: the child exited %d (a sanitizer report?)", n,
                 WEXITSTATUS(status));
    if (got != (ssize_t)sizeof o)
        fail_msg("allocation %ld failing: the child reported nothing", n);
    return o;
}

/* The ways jansson 2.14 and libcurl 7.88 let an allocation failure of theirs surface as
 * another error, none of which the client can tell from the real thing
 * (docs/internals/MEM.md): jansson's lexer reports a failed allocation as a bad token, or
 * drops a byte of a token it failed to grow (here a key, so a field goes missing;
 * upstream issue #362), when the client parses the spec or an answer; libcurl sends a
 * request without its query string when copying the query fails, which the server
 * refuses. */
static const struct {
    int library;
    const char *has, *lacks[2];
} excused[] = {
    {1, "malformed JSON at line ", {"status code", "line -1,"}},
    {1, "field required", {"status code", NULL}},
    {2, "the server returned status code 422: query.job_id: field required", {NULL, NULL}},
};

/* Whether a run that failed in step with rc and msg, the failed allocation being in
 * library lib, ended as it must: ZBSO_ENOMEM; or, for one of the excused cases above,
 * the code the call documents for what the library said instead (ZBSO_ECONFIG for the
 * caller's spec, ZBSO_ERUNTIME for the server's answer). */
static bool acceptable(int step, int lib, int rc, const char *msg)
{
    bool spec = (step == 2 || step == 7) && strncmp(msg, "invalid job spec: ", 18) == 0;
    if (rc == ZBSO_ENOMEM)
        return true;
    if (rc != (spec ? ZBSO_ECONFIG : ZBSO_ERUNTIME) || step == 1 || step == 4)
        return false;
    for (size_t i = 0; i < sizeof excused / sizeof excused[0]; i++) {
        bool ok = excused[i].library == lib && strstr(msg, excused[i].has);
        for (int k = 0; k < 2 && ok; k++)
            ok = !excused[i].lacks[k] || !strstr(msg, excused[i].lacks[k]);
        if (ok)
            return true;
    }
    return false;
}

static void test_every_allocation_fails_cleanly(void **state)
{
    static site sites[SITES_MAX];
    size_t n_sites = 0, distinct[4] = {0};
    long allocations[4] = {0}, enomem[4] = {0}, excused_runs[4] = {0}, recovered[4] = {0};
    long by_step[STEPS + 1] = {0}, bad = 0, n;
    double t0 = clk_mono_s();
    for (n = 1; n <= RUNS_MAX; n++) {
        outcome o = run(n);
        if (o.failures == 0) {
            /* The countdown outlived the sequence: everything must have worked. */
            if (o.step)
                fail_msg("no allocation failed, yet %s returned %d: %s", step_names[o.step],
                         o.rc, o.msg);
            break;
        }
        int lib = library_of(o.site);
        bool known = false;
        allocations[lib]++;
        for (size_t i = 0; i < n_sites && !known; i++)
            known = sites[i].addr == o.site;
        if (!known && n_sites < SITES_MAX) {
            sites[n_sites++] = (site){o.site, lib};
            distinct[lib]++;
        }
        if (o.step == 0) {
            recovered[lib]++; /* e.g. a connection never made, retried; the exit handler */
            continue;
        }
        by_step[o.step]++;
        if (o.rc == ZBSO_ENOMEM)
            enomem[lib]++;
        else
            excused_runs[lib]++;
        if (!acceptable(o.step, lib, o.rc, o.msg) || o.msg[0] == '\0') {
            if (++bad <= 20)
                printf("torture: allocation %ld failing (in %s): %s returned %d (%s) with "
                       "\"%s\"\n",
                       n, library_names[lib], step_names[o.step], o.rc, zbso_strerror(o.rc),
                       o.msg);
        }
    }
    assert_true(n <= RUNS_MAX);
    printf("torture: the sequence makes %ld allocations; each failed in turn (%.1f s)\n",
           n - 1, clk_mono_s() - t0);
    printf("torture:   %-8s %6s %6s %11s %7s %9s\n", "where", "allocs", "sites", "ZBSO_ENOMEM",
           "excused", "recovered");
    for (int lib = 0; lib < 4; lib++)
        printf("torture:   %-8s %6ld %6zu %11ld %7ld %9ld\n", library_names[lib],
               allocations[lib], distinct[lib], enomem[lib], excused_runs[lib], recovered[lib]);
    for (int s = 1; s <= STEPS; s++)
        printf("torture:   failed in %-36s %5ld\n", step_names[s], by_step[s]);
    assert_true(n - 1 > 0);
    if (bad)
        fail_msg("%ld runs ended with an error other than the ones allowed (first 20 above)",
                 bad);
}

static int setup(void **state)
{
    pid_t *server = malloc(sizeof *server);
    if (!getenv("ZBSO_BIN") || !getenv("ZBSO_NVML_LIBRARY") || !server) {
        fprintf(stderr, "ZBSO_BIN and ZBSO_NVML_LIBRARY must be set\n");
        free(server);
        return -1;
    }
    /* Before any other jansson or libcurl call: both settings are process-global. */
    json_set_alloc_funcs(mem_malloc, mem_free);
    if (curl_global_init_mem(CURL_GLOBAL_DEFAULT, mem_malloc, mem_free, mem_realloc,
                             mem_strdup, mem_calloc) != CURLE_OK) {
        free(server);
        return -1;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zbso-torture-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        free(server);
        return -1;
    }
    serve_clean_env();
    /* Two GPUs, the second without an energy counter: the edge pool and the sampler. */
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_NO_ENERGY", "1", 1);
    /* A request whose allocation failure looks like a connection never made is retried. */
    setenv("ZBSO_CLIENT_RETRY_TIMEOUT", "2", 1);
    int port = serve_start(tmpdir, "torture.db", 0, server);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    *state = server;
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    pid_t *server = *state;
    serve_stop(*server, SIGTERM);
    free(server);
    curl_global_cleanup();
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_allocation_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
