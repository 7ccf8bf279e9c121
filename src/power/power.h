/* power.h: changing GPU power limits (SPEC §6.1), the only code of zbso that writes a GPU
 * setting. An actuator sets the limits of a set of GPUs through NVML directly (needs
 * CAP_SYS_ADMIN) or through the zeusd daemon (ZEUSD_SOCK_PATH or ZEUSD_HOST_PORT), or, in
 * observer mode, sets nothing. Every actuator that may set remembers the GPUs' limits at
 * open and puts them back when closed, at process exit (atexit) and, when asked, on
 * SIGTERM, SIGINT and SIGHUP. Used by libzbso's power-limit optimizer and `zbso run`. */
#ifndef ZBSO_POWER_POWER_H
#define ZBSO_POWER_POWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct pw_gpus pw_gpus;

typedef enum pw_kind {
    PW_OBSERVE = 0,     /* sets nothing */
    PW_NVML = 1,        /* nvmlDeviceSetPowerManagementLimit in this process */
    PW_ZEUSD = 2,       /* POST /gpu/set_power_limit to zeusd */
} pw_kind;

/* pw_open flags. */
#define PW_OBSERVER 0x1u       /* observer mode: never set a limit (no zeusd needed) */
/* Restore on SIGTERM, SIGINT and SIGHUP: for each of them whose disposition is the
 * default when the first such actuator opens, a handler is installed that wakes a thread
 * of the library, which puts back the limits of every open actuator and then lets the
 * signal end the process as it would have. (A handler the program installs later
 * replaces it; the program then restores by closing the actuator or at exit.) Signals
 * of forked children are not taken. */
#define PW_GUARD_SIGNALS 0x2u

/* Opens the GPUs of CUDA indices cuda[0..n-1] (NULL/0: every visible one;
 * CUDA_VISIBLE_DEVICES honoured), NVML loaded as the monitor loads it ($ZBSO_NVML_LIBRARY
 * or libnvidia-ml.so.1), and reads their limits and constraints. Unless PW_OBSERVER, picks
 * the actuator: zeusd when $ZEUSD_SOCK_PATH (Unix socket) or $ZEUSD_HOST_PORT (host:port)
 * is set (checked with GET /discover: the GPUs must be there and the gpu-control API
 * group enabled; $ZEUSD_TOKEN is sent as a bearer token), else NVML. Returns 0 with *out
 * set, or ZBSO_ECONFIG (no NVML, no GPU, a bad index, zeusd unreachable or unfit: the
 * message says which), ZBSO_ERUNTIME (an NVML read failed), ZBSO_ENOMEM. */
int pw_open(const int *cuda, size_t n, unsigned flags, pw_gpus **out, zbso_err *err);

/* Puts back the original limits (pw_restore, errors ignored), removes this process's
 * records of them, stops its guard and closes NVML. NULL is a no-op. */
void pw_close(pw_gpus *g);

pw_kind pw_actuator(const pw_gpus *g);
/* "NVML", "zeusd at /run/zeusd.sock", "observer mode (nothing is set)". */
const char *pw_actuator_name(const pw_gpus *g);
unsigned pw_count(const pw_gpus *g);
/* The NVML and CUDA indices of GPU i (0..pw_count-1). */
unsigned pw_nvml_index(const pw_gpus *g, unsigned i);
int pw_cuda_index(const pw_gpus *g, unsigned i);

/* The GPUs' constraints (NVML), in mW. Returns 0, or ZBSO_ECONFIG when the GPUs do not
 * all have the same ones (Zeus: "Power limits ranges are not uniform across GPUs."). */
int pw_constraints(const pw_gpus *g, int64_t *min_mw, int64_t *max_mw, zbso_err *err);

/* The limits put back, per GPU (mW): each GPU's true original, from its record in the
 * state directory when an earlier zbso process of this boot lowered it, else NVML's
 * default limit, never the limit found at open (SPEC §6.1). */
const unsigned *pw_original(const pw_gpus *g);

/* Reads each GPU's limit now into mw[0..pw_count-1]. ZBSO_ERUNTIME when NVML fails. */
int pw_limits(pw_gpus *g, unsigned *mw, zbso_err *err);

/* Sets every GPU's limit to mw, skipping a GPU whose limit already is mw. Returns 0;
 * ZBSO_EBADOP in observer mode or once the limits were restored for good (a signal);
 * ZBSO_EINVAL for mw outside the constraints; ZBSO_EPERM when the process may not (NVML
 * without CAP_SYS_ADMIN, zeusd refusing): the message names the privilege and the ways
 * around it; ZBSO_ERUNTIME for other NVML or zeusd failures. */
int pw_set(pw_gpus *g, int64_t mw, zbso_err *err);

/* Sets back each GPU whose limit differs from its original (pw_original). Returns 0 or
 * the first error as pw_set (the other GPUs are still tried); 0 at once in observer mode. */
int pw_restore(pw_gpus *g, zbso_err *err);

/* Set calls made through g that changed a GPU (for tests and logs). */
unsigned long pw_set_count(const pw_gpus *g);

/* ---- the guard process (guard.c) ----------------------------------------------------
 * Every actuator that may set starts one (pw_open); `zbso run` starts one more for its
 * training command. It runs `zbso-guard` ($ZBSO_GUARD, else beside libzbso.so or zbso, else
 * /usr/libexec/zbso; ZBSO_GUARD=none: no guard) in a session of its own; when this process
 * ends without stopping it (SIGKILL, OOM kill, a crash, or a clean exit), the guard kills
 * the process groups it watches and sets each GPU back to its original limit through
 * NVML or zeusd, within 0.3 s of the death (a poll of 0.2 s, then 0.1 s for the dead
 * process's children to die) plus the set calls. */
typedef struct pw_guard pw_guard;

/* A GPU the guard holds: its NVML index, UUID (checked before setting) and the limit to
 * put back. */
typedef struct pw_guard_gpu {
    unsigned nvml_index;
    unsigned original_mw;
    char uuid[96];
} pw_guard_gpu;

/* Starts a guard for gpus[0..n-1] (n 0: process groups only) set through kind, removing
 * their records in state_dir (NULL: none) once restored. Returns 0 with *out set (NULL
 * with ZBSO_GUARD=none), or ZBSO_ECONFIG (no guard program: the message says where it
 * was looked for; it cannot start), ZBSO_ENOMEM. */
int pw_guard_start(pw_kind kind, const pw_guard_gpu *gpus, unsigned n, const char *state_dir,
                   pw_guard **out, zbso_err *err);

/* Tells the guard to kill process group pgid if this process dies (on), or no more
 * (off: call it before reaping the group's leader, whose pid could then be reused).
 * NULL gd: no-op. Returns 0 or ZBSO_ERUNTIME (the guard is gone). */
int pw_guard_watch(pw_guard *gd, long pgid, bool on, zbso_err *err);

/* Ends the guard: restored says the limits are back, so it restores nothing; without it
 * the guard restores as if this process had died. Waits up to 5 s for it; frees gd. NULL
 * is a no-op. */
void pw_guard_stop(pw_guard *gd, bool restored);

/* The guard program's main (zbso-guard): argv as pw_guard_start passes it. */
int pw_guard_main(int argc, char **argv);

#endif
