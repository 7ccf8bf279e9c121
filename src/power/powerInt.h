/* powerInt.h: the actuator's private parts, shared by actuator.c (open, set, restore and
 * the exit guard) and zeusd.c (the zeusd client); NVML is src/nvml's loader. Not included
 * outside src/power. */
#ifndef ZBSO_POWER_POWERINT_H
#define ZBSO_POWER_POWERINT_H

#include <stdbool.h>
#include <sys/types.h>

#include "nvml/nvml.h"
#include "power/power.h"
#include "zbso/zbso.h"

/* ---- zeusd (zeusd.c) ---- */
typedef struct pw_zeusd pw_zeusd;

/* Connects to the zeusd that $ZEUSD_SOCK_PATH or $ZEUSD_HOST_PORT names (*out NULL and 0
 * when neither is set) and checks with GET /discover that it offers gpu-control for the
 * NVML indices nvml[0..n-1] (a zeusd older than 0.3, which has no /discover, is driven
 * with its per-GPU routes). Returns 0, ZBSO_ECONFIG naming the endpoint and the problem,
 * ZBSO_ENOMEM. */
int pw_zeusd_open(const unsigned *nvml, unsigned n, pw_zeusd **out, zbso_err *err);
void pw_zeusd_close(pw_zeusd *z);
/* "zeusd at <socket path or host:port>". */
const char *pw_zeusd_name(const pw_zeusd *z);
/* Sets the limit of the GPUs of NVML indices nvml[0..n-1] to mw, waiting for it
 * (block=true). Returns 0, ZBSO_EPERM (401/403: the message says which privilege),
 * ZBSO_ERUNTIME (unreachable, another status: with zeusd's message). */
int pw_zeusd_set(pw_zeusd *z, const unsigned *nvml, unsigned n, unsigned mw, zbso_err *err);

/* ---- records of original limits (pwstate.c) ---- */
#define PW_PATH_MAX 512

typedef struct pw_record {
    char boot_id[40];              /* /proc/sys/kernel/random/boot_id */
    char uuid[NVML_UUID_MAX];
    unsigned original_mw;
    long pid;                      /* the process that holds the GPU lowered */
    unsigned long long pid_start;  /* its start time (/proc/PID/stat): pids are reused */
} pw_record;

/* The state directory into out: $ZBSO_STATE_DIR, else /run/zbso for root, else
 * $XDG_RUNTIME_DIR/zbso, else /tmp/zbso-UID; made 0700 if missing, refused unless ours
 * and written by nobody else. Returns 0 or ZBSO_ECONFIG naming it. */
int pw_state_dir(char *out, size_t cap, zbso_err *err);
/* This boot's id. Returns 0 or ZBSO_EIO. */
int pw_boot_id(char *out, size_t cap);
/* The start time of process pid (clock ticks since boot). Returns 0, or ZBSO_ENOTFOUND
 * when it does not run (a zombie neither). */
int pw_proc_start(long pid, unsigned long long *start);
/* Whether the process that wrote r still runs (same pid and start time). */
bool pw_record_owner_alive(const pw_record *r);
/* Locks dir's lock file (flock, blocking) for a read-modify-write of records. Returns the
 * descriptor to pass to pw_state_unlock, or ZBSO_ECONFIG. */
int pw_state_lock(const char *dir, zbso_err *err);
void pw_state_unlock(int fd);
/* Reads GPU uuid's record. Returns 0, ZBSO_ENOTFOUND (none), or ZBSO_EINVAL (not a record
 * of ours: unreadable, malformed), err naming the file. */
int pw_record_load(const char *dir, const char *uuid, pw_record *r, zbso_err *err);
/* Writes r (mode 0600, atomically by rename). Returns 0 or ZBSO_EIO naming the file. */
int pw_record_save(const char *dir, const pw_record *r, zbso_err *err);
/* Removes GPU uuid's record if process pid holds it. */
void pw_record_remove(const char *dir, const char *uuid, long pid);

/* Sets gpus[0..n-1] back to their original limits through kind (NVML or zeusd, opened
 * here), each GPU found by NVML index and checked by UUID, skipping those already there.
 * Adds the set calls to *sets. Returns 0 or the first error (the others are tried). For
 * the guard process. */
int pw_restore_held(pw_kind kind, const pw_guard_gpu *gpus, unsigned n, unsigned long *sets,
                    zbso_err *err);

/* ---- the actuator ---- */
struct pw_gpus {
    unsigned flags;
    pw_kind kind;
    nvml_lib nvml;
    pw_zeusd *zeusd;
    unsigned n;
    unsigned nvml_index[ZBSO_MAX_GPUS];
    int cuda_index[ZBSO_MAX_GPUS];
    nvmlDevice_t dev[ZBSO_MAX_GPUS];
    unsigned min_mw[ZBSO_MAX_GPUS], max_mw[ZBSO_MAX_GPUS];
    unsigned original_mw[ZBSO_MAX_GPUS];   /* what is put back (pw_original) */
    char uuid[ZBSO_MAX_GPUS][NVML_UUID_MAX];
    bool recorded[ZBSO_MAX_GPUS];          /* this process wrote the GPU's record */
    char state_dir[PW_PATH_MAX];           /* "" when records cannot be kept */
    pw_guard *guard;
    pid_t owner;                           /* the process that opened it (not a fork) */
    unsigned long sets;
    bool guarded;            /* in the exit guard's list (actuator.c) */
    bool dead;               /* restored for good by a signal: no more sets */
    struct pw_gpus *next;    /* the exit guard's list */
    char name[160];
};

#endif
