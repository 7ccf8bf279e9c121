/* powerInt.h: the actuator's private parts, shared by actuator.c (open, set, restore and
 * the exit guard) and zeusd.c (the zeusd client); NVML is src/nvml's loader. Not included
 * outside src/power. */
#ifndef ZBSO_POWER_POWERINT_H
#define ZBSO_POWER_POWERINT_H

#include <stdbool.h>

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
    unsigned original_mw[ZBSO_MAX_GPUS];
    unsigned long sets;
    bool guarded;            /* in the exit guard's list (actuator.c) */
    bool dead;               /* restored for good by a signal: no more sets */
    struct pw_gpus *next;    /* the exit guard's list */
    char name[160];
};

#endif
