/* actuator.c: the pw_* actuator of power.h: opening the GPUs, setting and restoring their
 * limits through NVML or zeusd, and the exit guard that restores every open actuator's
 * limits at exit and on the signals a process can catch. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "power/powerInt.h"
#include "util/cudavis.h"

/* ---- the exit guard ----
 * Open actuators that may set are listed under guard_mu. atexit and the signal thread
 * restore every listed one. A signal handler may only do async-signal-safe things, so it
 * writes the signal's number to a pipe; a thread of ours, blocked on the pipe, restores
 * (NVML and curl calls, outside any handler) and then ends the process with the signal
 * under its default action, which is what the signal would have done. Forked children
 * inherit the handler but not the thread: the handler passes their signals on unchanged,
 * and atexit restores nothing in them (the limits are the parent's). */
static pthread_mutex_t guard_mu = PTHREAD_MUTEX_INITIALIZER;
static pw_gpus *guard_list;
static pid_t guard_pid;               /* the process that registered the guard */
static bool guard_atexit_done;
static int guard_pipe[2] = {-1, -1};
static bool guard_signals_done;
static const int guard_signals[] = {SIGTERM, SIGINT, SIGHUP};

static int restore_locked(pw_gpus *g, zbso_err *err);
static int set_some(pw_gpus *g, const unsigned *idx, unsigned k, unsigned mw, zbso_err *err);

static void drop_records(pw_gpus *g);

/* Restores every listed actuator; with final, they refuse later sets, and those restored
 * drop their records and end their guard processes (nothing is left to guard). */
static void restore_all(bool final)
{
    pthread_mutex_lock(&guard_mu);
    for (pw_gpus *g = guard_list; g != NULL; g = g->next) {
        zbso_err err;
        int rc = restore_locked(g, &err);
        if (rc < 0)
            fprintf(stderr, "zbso: could not restore the GPU power limits: %s\n", err.msg);
        g->dead = g->dead || final;
        if (final && rc == 0) {
            drop_records(g);
            pw_guard_stop(g->guard, true);
            g->guard = NULL;
        }
    }
    pthread_mutex_unlock(&guard_mu);
}

static void at_exit(void)
{
    if (getpid() == guard_pid)
        restore_all(true);
}

static void on_signal(int sig)
{
    int saved = errno;
    if (getpid() != guard_pid) {
        /* A forked child: it owns no limit; the signal does what it would have. */
        signal(sig, SIG_DFL);
        raise(sig);
    } else {
        unsigned char b = (unsigned char)sig;
        if (write(guard_pipe[1], &b, 1) != 1) {
            /* The pipe is gone: the signal ends the process unrestored, as before. */
            signal(sig, SIG_DFL);
            raise(sig);
        }
    }
    errno = saved;
}

static void *guard_thread(void *arg)
{
    sigset_t all;
    unsigned char b;
    (void)arg;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (;;) {
        ssize_t n = read(guard_pipe[0], &b, 1);
        if (n == 1)
            break;
        if (n < 0 && errno == EINTR)
            continue;
        return NULL;
    }
    int sig = b;
    restore_all(true);
    fprintf(stderr, "zbso: signal %d (%s): GPU power limits restored\n", sig, strsignal(sig));
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    /* A signal whose default is to stop the process (none of ours) would come back. */
    _exit(128 + sig);
}

/* Lists g in the guard (under guard_mu); installs atexit once and, for PW_GUARD_SIGNALS,
 * the handlers of the signals whose disposition is the default. */
static void guard_add(pw_gpus *g)
{
    pthread_mutex_lock(&guard_mu);
    if (guard_pid != getpid()) {
        /* First use in this process, or in a forked child that opens its own: the parent's
         * list, pipe and thread are the parent's (the thread did not survive the fork, and
         * a signal written to the inherited pipe would wake the parent's). The child makes
         * its own; the handlers it inherited stay (they are ours) and pass signals on
         * until then. */
        guard_pid = getpid();
        guard_list = NULL;
        if (guard_signals_done) {
            close(guard_pipe[0]);
            close(guard_pipe[1]);
            guard_pipe[0] = guard_pipe[1] = -1;
            guard_signals_done = false;
        }
    }
    g->next = guard_list;
    guard_list = g;
    g->guarded = true;
    if (!guard_atexit_done)
        guard_atexit_done = atexit(at_exit) == 0;
    if ((g->flags & PW_GUARD_SIGNALS) && !guard_signals_done) {
        pthread_t t;
        pthread_attr_t attr;
        if (pipe(guard_pipe) == 0) {
            for (int i = 0; i < 2; i++) {
                int fl = fcntl(guard_pipe[i], F_GETFD);
                if (fl >= 0)
                    fcntl(guard_pipe[i], F_SETFD, fl | FD_CLOEXEC);
            }
            pthread_attr_init(&attr);
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            if (pthread_create(&t, &attr, guard_thread, NULL) == 0) {
                for (size_t i = 0; i < sizeof guard_signals / sizeof guard_signals[0]; i++) {
                    struct sigaction old, sa;
                    if (sigaction(guard_signals[i], NULL, &old) != 0 ||
                        (old.sa_flags & SA_SIGINFO) ||
                        (old.sa_handler != SIG_DFL && old.sa_handler != on_signal))
                        continue;
                    memset(&sa, 0, sizeof sa);
                    sa.sa_handler = on_signal;
                    sigemptyset(&sa.sa_mask);
                    sa.sa_flags = SA_RESTART;
                    sigaction(guard_signals[i], &sa, NULL);
                }
                guard_signals_done = true;
            }
            pthread_attr_destroy(&attr);
        }
    }
    pthread_mutex_unlock(&guard_mu);
}

static void guard_remove(pw_gpus *g)
{
    pthread_mutex_lock(&guard_mu);
    for (pw_gpus **p = &guard_list; *p != NULL; p = &(*p)->next)
        if (*p == g) {
            *p = g->next;
            break;
        }
    g->guarded = false;
    pthread_mutex_unlock(&guard_mu);
}

/* ---- original limits: records and the guard process ---- */

/* Removes the records this process wrote for g's GPUs. */
static void drop_records(pw_gpus *g)
{
    for (unsigned i = 0; i < g->n; i++)
        if (g->recorded[i]) {
            pw_record_remove(g->state_dir, g->uuid[i], (long)getpid());
            g->recorded[i] = false;
        }
}

/* Settles what is put back on each GPU (SPEC §6.1): the record of an earlier zbso process
 * of this boot (state directory) when there is one, else NVML's default limit; never the
 * limit found now, which a killed process may have left lowered. Records this process as
 * the holder of GPUs nobody living holds, sets back at once a GPU that a dead holder left
 * lowered, and starts the guard process. g->original_mw holds the limits read at open on
 * entry. Returns 0, or what nvml or pw_guard_start fail with (records dropped by the
 * caller). */
static int hold_originals(pw_gpus *g, zbso_err *err)
{
    unsigned cur[ZBSO_MAX_GPUS], dflt[ZBSO_MAX_GPUS];
    bool stale[ZBSO_MAX_GPUS] = {false};
    pw_guard_gpu held[ZBSO_MAX_GPUS];
    char boot[40] = "";
    unsigned long long started = 0;
    long me = (long)getpid();
    zbso_err why;
    int lock = -1, rc;

    for (unsigned i = 0; i < g->n; i++) {
        cur[i] = g->original_mw[i];
        nvmlReturn_t nrc = g->nvml.device_get_uuid(g->dev[i], g->uuid[i], NVML_UUID_MAX);
        if (nrc != NVML_SUCCESS)
            return err_set(err, ZBSO_ERUNTIME, "nvmlDeviceGetUUID failed for GPU %d: %s",
                           g->cuda_index[i], nvml_lib_strerror(&g->nvml, nrc));
        /* A GPU without a default limit: its highest, what it runs at unlimited. */
        if (g->nvml.device_get_power_management_default_limit(g->dev[i], &dflt[i]) !=
                NVML_SUCCESS ||
            dflt[i] < g->min_mw[i] || dflt[i] > g->max_mw[i])
            dflt[i] = g->max_mw[i];
    }
    if (pw_state_dir(g->state_dir, sizeof g->state_dir, &why) < 0 ||
        (pw_boot_id(boot, sizeof boot) < 0 &&
         err_set(&why, ZBSO_EIO, "cannot read this boot's id") < 0) ||
        (pw_proc_start(me, &started) < 0 &&
         err_set(&why, ZBSO_EIO, "cannot read /proc/%ld/stat", me) < 0) ||
        (lock = pw_state_lock(g->state_dir, &why)) < 0) {
        fprintf(stderr, "zbso: %s; the GPUs' original power limits are not recorded (a "
                "later run puts back NVML's default limits)\n", why.msg);
        g->state_dir[0] = '\0';
    }
    for (unsigned i = 0; i < g->n; i++) {
        pw_record r;
        int lr = g->state_dir[0] ? pw_record_load(g->state_dir, g->uuid[i], &r, &why)
                                 : ZBSO_ENOTFOUND;
        if (lr == ZBSO_EINVAL)
            fprintf(stderr, "zbso: %s: ignored\n", why.msg);
        if (lr == 0 && strcmp(r.boot_id, boot) == 0 && strcmp(r.uuid, g->uuid[i]) == 0 &&
            r.original_mw >= g->min_mw[i] && r.original_mw <= g->max_mw[i]) {
            g->original_mw[i] = r.original_mw;
            if (r.pid == me || pw_record_owner_alive(&r))
                continue;          /* its holder lives, and puts it back */
            stale[i] = cur[i] != r.original_mw;
            if (stale[i])
                fprintf(stderr, "zbso: GPU %d's power limit was left at %u W by process %ld, "
                        "which ended; putting back its original %u W\n", g->cuda_index[i],
                        cur[i] / 1000, r.pid, r.original_mw / 1000);
        } else {
            g->original_mw[i] = dflt[i];
            if (cur[i] != dflt[i])
                fprintf(stderr, "zbso: GPU %d's power limit is %u W, not its default %u W, "
                        "and no record says what it was before a zbso process changed it: "
                        "%u W is what will be put back\n", g->cuda_index[i], cur[i] / 1000,
                        dflt[i] / 1000, dflt[i] / 1000);
        }
        if (g->state_dir[0] == '\0')
            continue;
        pw_record mine = {.original_mw = g->original_mw[i], .pid = me, .pid_start = started};
        snprintf(mine.boot_id, sizeof mine.boot_id, "%s", boot);
        snprintf(mine.uuid, sizeof mine.uuid, "%s", g->uuid[i]);
        if (pw_record_save(g->state_dir, &mine, &why) < 0)
            fprintf(stderr, "zbso: %s; GPU %d's original power limit is not recorded\n",
                    why.msg, g->cuda_index[i]);
        else
            g->recorded[i] = true;
    }
    pw_state_unlock(lock);
    for (unsigned i = 0; i < g->n; i++)
        if (stale[i] && (rc = set_some(g, &i, 1, g->original_mw[i], &why)) < 0)
            fprintf(stderr, "zbso: could not put GPU %d's power limit back: %s\n",
                    g->cuda_index[i], why.msg);
    for (unsigned i = 0; i < g->n; i++) {
        held[i].nvml_index = g->nvml_index[i];
        held[i].original_mw = g->original_mw[i];
        snprintf(held[i].uuid, sizeof held[i].uuid, "%s", g->uuid[i]);
    }
    return pw_guard_start(g->kind, held, g->n, g->state_dir[0] ? g->state_dir : NULL,
                          &g->guard, err);
}

/* ---- opening ---- */

int pw_open(const int *cuda, size_t n, unsigned flags, pw_gpus **out, zbso_err *err)
{
    unsigned visible[ZBSO_MAX_GPUS], n_visible = 0, n_nvml = 0;
    nvmlReturn_t nrc;
    int rc;

    *out = NULL;
    if (n > ZBSO_MAX_GPUS)
        return err_set(err, ZBSO_EINVAL, "%zu GPU indices given; at most %d", n,
                       ZBSO_MAX_GPUS);
    pw_gpus *g = calloc(1, sizeof *g);
    if (g == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory opening the GPUs");
    g->flags = flags;
    g->owner = getpid();
    if ((rc = nvml_lib_open(NULL, &g->nvml, err)) < 0)
        goto fail;
    if ((nrc = g->nvml.device_get_count(&n_nvml)) != NVML_SUCCESS) {
        rc = err_set(err, ZBSO_ERUNTIME, "nvmlDeviceGetCount failed: %s",
                     nvml_lib_strerror(&g->nvml, nrc));
        goto fail;
    }
    if ((rc = cuda_visible_devices(n_nvml, visible, &n_visible, err)) < 0)
        goto fail;
    if (n_visible == 0) {
        rc = err_set(err, ZBSO_ECONFIG, "no GPU is visible (NVML sees %u)", n_nvml);
        goto fail;
    }
    if (cuda == NULL || n == 0) {
        for (unsigned i = 0; i < n_visible; i++) {
            g->cuda_index[i] = (int)i;
            g->nvml_index[i] = visible[i];
        }
        g->n = n_visible;
    } else {
        for (size_t i = 0; i < n; i++) {
            if (cuda[i] < 0 || (unsigned)cuda[i] >= n_visible) {
                rc = err_set(err, ZBSO_ECONFIG, "GPU index %d is out of range: %u GPU(s) "
                             "visible (0..%u)", cuda[i], n_visible, n_visible - 1);
                goto fail;
            }
            for (size_t k = 0; k < i; k++)
                if (cuda[k] == cuda[i]) {
                    rc = err_set(err, ZBSO_ECONFIG, "GPU index %d is given twice", cuda[i]);
                    goto fail;
                }
            g->cuda_index[i] = cuda[i];
            g->nvml_index[i] = visible[cuda[i]];
        }
        g->n = (unsigned)n;
    }
    for (unsigned i = 0; i < g->n; i++) {
        const char *what = "nvmlDeviceGetHandleByIndex";
        nrc = g->nvml.device_get_handle_by_index(g->nvml_index[i], &g->dev[i]);
        if (nrc == NVML_SUCCESS) {
            what = "nvmlDeviceGetPowerManagementLimitConstraints";
            nrc = g->nvml.device_get_power_management_limit_constraints(
                g->dev[i], &g->min_mw[i], &g->max_mw[i]);
        }
        if (nrc == NVML_SUCCESS) {
            what = "nvmlDeviceGetPowerManagementLimit";
            nrc = g->nvml.device_get_power_management_limit(g->dev[i], &g->original_mw[i]);
        }
        if (nrc != NVML_SUCCESS) {
            rc = err_set(err, ZBSO_ERUNTIME, "%s failed for GPU %d (NVML index %u): %s", what,
                         g->cuda_index[i], g->nvml_index[i], nvml_lib_strerror(&g->nvml, nrc));
            goto fail;
        }
    }
    if (flags & PW_OBSERVER) {
        g->kind = PW_OBSERVE;
        snprintf(g->name, sizeof g->name, "observer mode (nothing is set)");
    } else {
        if ((rc = pw_zeusd_open(g->nvml_index, g->n, &g->zeusd, err)) < 0)
            goto fail;
        g->kind = g->zeusd ? PW_ZEUSD : PW_NVML;
        snprintf(g->name, sizeof g->name, "%s", g->zeusd ? pw_zeusd_name(g->zeusd) : "NVML");
        if ((rc = hold_originals(g, err)) < 0)
            goto fail;
        guard_add(g);
    }
    *out = g;
    return 0;
fail:
    drop_records(g);
    pw_zeusd_close(g->zeusd);
    nvml_lib_close(&g->nvml);
    free(g);
    return rc;
}

void pw_close(pw_gpus *g)
{
    if (g == NULL)
        return;
    if (g->owner != getpid()) {
        /* A forked child's copy: the limits, their records and the guard are the
         * parent's. Close our copy of the guard's socket (its end stays open). */
        pw_guard_stop(g->guard, false);
        g->guard = NULL;
        g->guarded = false;
    }
    if (g->guarded) {
        zbso_err err;
        pthread_mutex_lock(&guard_mu);
        int rc = restore_locked(g, &err);
        pthread_mutex_unlock(&guard_mu);
        if (rc < 0)
            fprintf(stderr, "zbso: could not restore the GPU power limits: %s\n", err.msg);
        guard_remove(g);
        /* Restored: the records go and the guard ends; else both stay, and the guard
         * tries once more. */
        if (rc == 0)
            drop_records(g);
        pw_guard_stop(g->guard, rc == 0);
        g->guard = NULL;
    }
    pw_zeusd_close(g->zeusd);
    nvml_lib_close(&g->nvml);
    free(g);
}

pw_kind pw_actuator(const pw_gpus *g)
{
    return g->kind;
}

const char *pw_actuator_name(const pw_gpus *g)
{
    return g->name;
}

unsigned pw_count(const pw_gpus *g)
{
    return g->n;
}

unsigned pw_nvml_index(const pw_gpus *g, unsigned i)
{
    return i < g->n ? g->nvml_index[i] : 0;
}

int pw_cuda_index(const pw_gpus *g, unsigned i)
{
    return i < g->n ? g->cuda_index[i] : -1;
}

int pw_constraints(const pw_gpus *g, int64_t *min_mw, int64_t *max_mw, zbso_err *err)
{
    for (unsigned i = 1; i < g->n; i++)
        if (g->min_mw[i] != g->min_mw[0] || g->max_mw[i] != g->max_mw[0])
            return err_set(err, ZBSO_ECONFIG, "Power limits ranges are not uniform across "
                           "GPUs: GPU %d has [%u, %u] mW, GPU %d [%u, %u] mW",
                           g->cuda_index[0], g->min_mw[0], g->max_mw[0], g->cuda_index[i],
                           g->min_mw[i], g->max_mw[i]);
    *min_mw = g->min_mw[0];
    *max_mw = g->max_mw[0];
    return 0;
}

const unsigned *pw_original(const pw_gpus *g)
{
    return g->original_mw;
}

unsigned long pw_set_count(const pw_gpus *g)
{
    return g->sets;
}

int pw_limits(pw_gpus *g, unsigned *mw, zbso_err *err)
{
    for (unsigned i = 0; i < g->n; i++) {
        nvmlReturn_t nrc = g->nvml.device_get_power_management_limit(g->dev[i], &mw[i]);
        if (nrc != NVML_SUCCESS)
            return err_set(err, ZBSO_ERUNTIME, "nvmlDeviceGetPowerManagementLimit failed "
                           "for GPU %d: %s", g->cuda_index[i], nvml_lib_strerror(&g->nvml, nrc));
    }
    return 0;
}

/* Sets the GPUs of indices idx[0..k-1] (into g's arrays) to mw. */
static int set_some(pw_gpus *g, const unsigned *idx, unsigned k, unsigned mw, zbso_err *err)
{
    if (k == 0)
        return 0;
    if (g->kind == PW_ZEUSD) {
        unsigned nvml[ZBSO_MAX_GPUS];
        for (unsigned i = 0; i < k; i++)
            nvml[i] = g->nvml_index[idx[i]];
        int rc = pw_zeusd_set(g->zeusd, nvml, k, mw, err);
        if (rc == 0)
            g->sets += k;
        return rc;
    }
    for (unsigned i = 0; i < k; i++) {
        unsigned j = idx[i];
        nvmlReturn_t nrc = g->nvml.device_set_power_management_limit(g->dev[j], mw);
        if (nrc == NVML_ERROR_NO_PERMISSION)
            return err_set(err, ZBSO_EPERM, "setting the power limit of GPU %d to %u mW needs "
                           "the CAP_SYS_ADMIN capability (NVML: %s): run as root or with "
                           "that capability, or set ZEUSD_SOCK_PATH or ZEUSD_HOST_PORT to a "
                           "zeusd daemon with gpu-control, or use observer mode",
                           g->cuda_index[j], mw, nvml_lib_strerror(&g->nvml, nrc));
        if (nrc != NVML_SUCCESS)
            return err_set(err, ZBSO_ERUNTIME, "nvmlDeviceSetPowerManagementLimit(%u mW) "
                           "failed for GPU %d: %s", mw, g->cuda_index[j],
                           nvml_lib_strerror(&g->nvml, nrc));
        g->sets++;
    }
    return 0;
}

int pw_set(pw_gpus *g, int64_t mw, zbso_err *err)
{
    unsigned cur[ZBSO_MAX_GPUS], idx[ZBSO_MAX_GPUS], k = 0;
    int rc;
    if (g->kind == PW_OBSERVE)
        return err_set(err, ZBSO_EBADOP, "observer mode sets no power limit");
    for (unsigned i = 0; i < g->n; i++)
        if (mw < g->min_mw[i] || mw > g->max_mw[i])
            return err_set(err, ZBSO_EINVAL, "power limit %lld mW is outside GPU %d's "
                           "constraints [%u, %u] mW", (long long)mw, g->cuda_index[i],
                           g->min_mw[i], g->max_mw[i]);
    pthread_mutex_lock(&guard_mu);
    if (g->dead) {
        rc = err_set(err, ZBSO_EBADOP, "the GPU power limits were restored for good (the "
                     "process is ending)");
        goto out;
    }
    if ((rc = pw_limits(g, cur, err)) < 0)
        goto out;
    for (unsigned i = 0; i < g->n; i++)
        if (cur[i] != (unsigned)mw)
            idx[k++] = i;
    rc = set_some(g, idx, k, (unsigned)mw, err);
out:
    pthread_mutex_unlock(&guard_mu);
    return rc;
}

/* Under guard_mu: sets back the GPUs whose limit is not the original, those with the
 * same original limit in one call. */
static int restore_locked(pw_gpus *g, zbso_err *err)
{
    unsigned cur[ZBSO_MAX_GPUS], idx[ZBSO_MAX_GPUS];
    bool todo[ZBSO_MAX_GPUS];
    int rc, first = 0;
    if (g->kind == PW_OBSERVE)
        return 0;
    if ((rc = pw_limits(g, cur, err)) < 0)
        return rc;
    for (unsigned i = 0; i < g->n; i++)
        todo[i] = cur[i] != g->original_mw[i];
    for (unsigned i = 0; i < g->n; i++) {
        unsigned k = 0;
        if (!todo[i])
            continue;
        for (unsigned j = i; j < g->n; j++)
            if (todo[j] && g->original_mw[j] == g->original_mw[i]) {
                idx[k++] = j;
                todo[j] = false;
            }
        zbso_err e;
        if ((rc = set_some(g, idx, k, g->original_mw[i], &e)) < 0 && first == 0) {
            first = rc;
            if (err)
                *err = e;
        }
    }
    return first;
}

int pw_restore(pw_gpus *g, zbso_err *err)
{
    pthread_mutex_lock(&guard_mu);
    int rc = restore_locked(g, err);
    pthread_mutex_unlock(&guard_mu);
    return rc;
}

int pw_restore_held(pw_kind kind, const pw_guard_gpu *gpus, unsigned n, unsigned long *sets,
                    zbso_err *err)
{
    int rc = 0, first = 0;
    zbso_err e;
    pw_gpus *g = calloc(1, sizeof *g);
    if (g == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory");
    g->kind = kind;
    if ((rc = nvml_lib_open(NULL, &g->nvml, err)) < 0)
        goto out;
    for (unsigned i = 0; i < n && g->n < ZBSO_MAX_GPUS; i++) {
        unsigned k = g->n;
        char uuid[NVML_UUID_MAX] = "";
        nvmlReturn_t nrc = g->nvml.device_get_handle_by_index(gpus[i].nvml_index, &g->dev[k]);
        if (nrc == NVML_SUCCESS)
            nrc = g->nvml.device_get_uuid(g->dev[k], uuid, sizeof uuid);
        if (nrc != NVML_SUCCESS || strcmp(uuid, gpus[i].uuid) != 0) {
            /* NVML renumbered the GPUs: setting that index would change another GPU. */
            if (first == 0)
                first = err_set(err, ZBSO_ERUNTIME, "NVML index %u is not GPU %s any more "
                                "(%s)", gpus[i].nvml_index, gpus[i].uuid,
                                nrc != NVML_SUCCESS ? nvml_lib_strerror(&g->nvml, nrc)
                                                    : uuid);
            continue;
        }
        g->nvml_index[k] = gpus[i].nvml_index;
        g->cuda_index[k] = (int)gpus[i].nvml_index;
        g->original_mw[k] = gpus[i].original_mw;
        g->n++;
    }
    if (kind == PW_ZEUSD) {
        if ((rc = pw_zeusd_open(g->nvml_index, g->n, &g->zeusd, err)) < 0)
            goto out;
        if (g->zeusd == NULL) {
            rc = err_set(err, ZBSO_ECONFIG, "ZEUSD_SOCK_PATH and ZEUSD_HOST_PORT are unset");
            goto out;
        }
    }
    pthread_mutex_lock(&guard_mu);
    rc = restore_locked(g, &e);
    pthread_mutex_unlock(&guard_mu);
    *sets += g->sets;
    if (rc < 0 && first == 0 && err != NULL)
        *err = e;
out:
    pw_zeusd_close(g->zeusd);
    nvml_lib_close(&g->nvml);
    free(g);
    return rc < 0 ? rc : first;
}
