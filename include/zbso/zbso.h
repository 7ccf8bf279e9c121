/* zbso.h: the one public header of libzbso (error codes now; the client and monitor API
 * join it with the client issue). Plain C types only, so ctypes can bind it. */
#ifndef ZBSO_ZBSO_H
#define ZBSO_ZBSO_H

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: 0 is success, failures are negative. Each has a fixed meaning that the
 * HTTP layer maps to one status (src/http/status.c) and zbso_strerror() names. */
enum zbso_error {
    ZBSO_OK = 0,
    ZBSO_EINVAL = -1,      /* invalid input: a value out of range, wrong type (HTTP 422) */
    ZBSO_ENOTFOUND = -2,   /* unknown job or trial (404) */
    ZBSO_ECONFLICT = -3,   /* conflicts with stored state (409) */
    ZBSO_ENOMEM = -4,      /* out of memory (500) */
    ZBSO_ESTORE = -5,      /* the database failed (500) */
    ZBSO_EUNAVAIL = -6,    /* the database is unreachable for now; retry (503) */
    ZBSO_EAUTH = -7,       /* missing or wrong bearer token (401) */
    ZBSO_ETOOBIG = -8,     /* request body over the limit (413) */
    ZBSO_ENOCONV = -9,     /* no batch size converged during pruning (500) */
    ZBSO_ESCHEMA = -10,    /* database schema older or newer than this binary */
    ZBSO_EMETHOD = -11,    /* method not allowed on this path (405) */
    ZBSO_EIO = -12,        /* operating system I/O error */
    ZBSO_EINTERNAL = -13,  /* a bug: an invariant did not hold (500) */
    ZBSO_ECONFIG = -14,    /* client: bad configuration (seed 000 ZeusBSOConfigError) */
    ZBSO_EORDER = -15,     /* client: calls out of order (ZeusBSOOperationOrderError) */
    ZBSO_EBADOP = -16,     /* client: operation not allowed (ZeusBSOBadOperationError) */
    ZBSO_ERUNTIME = -17,   /* client: server or network failure (ZeusBSORuntimError) */
    ZBSO_ETRAINFAIL = -18, /* client: training stopped without converging (ZeusBSOTrainFailError) */
};

/* Returns a static, human-readable name for an error code; never NULL. */
const char *zbso_strerror(int code);

#include <stddef.h>
#include <stdint.h>

#define ZBSO_MAX_GPUS 64
#define ZBSO_ERRBUF_MAX 512

/* ---- Energy monitor (ZeusMonitor's role; SPEC §6) ----------------------------------
 * NVML is loaded at run time (dlopen "libnvidia-ml.so.1", or $ZBSO_NVML_LIBRARY). GPU
 * indices are CUDA indices: with CUDA_VISIBLE_DEVICES set, index i is the i-th listed
 * device. The monitor never changes a GPU setting. A monitor may be used from one thread
 * at a time. */
typedef struct zbso_monitor zbso_monitor;

typedef struct zbso_measurement {
    double time_s;                        /* wall time of the window */
    double total_energy_j;                /* sum over the window's GPUs */
    unsigned n_gpus;
    int gpu_indices[ZBSO_MAX_GPUS];       /* CUDA indices, in the monitor's order */
    double gpu_energy_j[ZBSO_MAX_GPUS];   /* per GPU, same order */
} zbso_measurement;

/* Opens NVML and the GPUs. gpu_indices NULL / n_gpus 0: every visible GPU. Refuses no GPUs
 * (ZBSO_ECONFIG), GPUs of different models (ZBSO_ECONFIG), a missing NVML (ZBSO_ECONFIG,
 * message names the library path tried). On failure *out is NULL and errbuf (may be NULL)
 * holds the message. */
int zbso_monitor_new(const int *gpu_indices, size_t n_gpus, zbso_monitor **out,
                     char *errbuf, size_t errbuf_len);
/* Stops the monitor's threads and closes NVML. NULL is a no-op. */
void zbso_monitor_free(zbso_monitor *mon);
/* The message of the last failed call on this handle ("" if none). Valid until the next
 * call on the handle. */
const char *zbso_monitor_errmsg(const zbso_monitor *mon);

/* Opens a measurement window named name (several may be open at once).
 * ZBSO_EBADOP if a window of that name is already open. */
int zbso_monitor_begin_window(zbso_monitor *mon, const char *name);
/* Closes the window and fills *out. ZBSO_EBADOP for an unknown name; ZBSO_ERUNTIME when an
 * NVML call failed during the window (never a wrong number). */
int zbso_monitor_end_window(zbso_monitor *mon, const char *name, zbso_measurement *out);

unsigned zbso_monitor_gpu_count(const zbso_monitor *mon);
/* The model name of the monitored GPUs (all the same), e.g. "NVIDIA H200". */
const char *zbso_monitor_gpu_model(const zbso_monitor *mon);
/* The maximum power limit of the first monitored GPU in mW (NVML's
 * getPowerManagementLimitConstraints max). */
unsigned zbso_monitor_max_power_limit_mw(const zbso_monitor *mon);

#ifdef __cplusplus
}
#endif
#endif
