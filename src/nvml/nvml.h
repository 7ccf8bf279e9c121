/* nvml.h: the one NVML loader of zbso: the few NVML types and functions zbso calls,
 * declared here (no NVML headers at build time) and loaded from the driver's library at
 * run time with dlopen. Used by the monitor (read-only queries) and the power actuator of
 * src/power, the only caller of the setter. Knows nothing of windows, threads or limits. */
#ifndef ZBSO_NVML_NVML_H
#define ZBSO_NVML_NVML_H

#include "util/err.h"

/* NVML's return codes that zbso tells apart; every other value is an error that
 * nvmlErrorString names. */
#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NO_PERMISSION 4

/* NVML_DEVICE_NAME_V2_BUFFER_SIZE and NVML_DEVICE_UUID_V2_BUFFER_SIZE: the largest name
 * and UUID ("GPU-..." with its NUL) nvmlDeviceGetName and nvmlDeviceGetUUID write. */
#define NVML_NAME_MAX 96
#define NVML_UUID_MAX 96

/* The library loaded when $ZBSO_NVML_LIBRARY is unset or empty. */
#define NVML_DEFAULT_LIBRARY "libnvidia-ml.so.1"

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

/* The loaded library: the dlopen handle and one pointer per function. */
typedef struct nvml_lib {
    void *handle;
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    nvmlReturn_t (*device_get_count)(unsigned int *count);
    nvmlReturn_t (*device_get_handle_by_index)(unsigned int index, nvmlDevice_t *device);
    nvmlReturn_t (*device_get_name)(nvmlDevice_t device, char *name, unsigned int length);
    nvmlReturn_t (*device_get_uuid)(nvmlDevice_t device, char *uuid, unsigned int length);
    nvmlReturn_t (*device_get_total_energy_consumption)(nvmlDevice_t device,
                                                        unsigned long long *energy_mj);
    nvmlReturn_t (*device_get_power_usage)(nvmlDevice_t device, unsigned int *power_mw);
    nvmlReturn_t (*device_get_power_management_limit_constraints)(nvmlDevice_t device,
                                                                  unsigned int *min_mw,
                                                                  unsigned int *max_mw);
    nvmlReturn_t (*device_get_power_management_limit)(nvmlDevice_t device,
                                                      unsigned int *limit_mw);
    nvmlReturn_t (*device_get_power_management_default_limit)(nvmlDevice_t device,
                                                              unsigned int *limit_mw);
    /* Changes a GPU setting: called by src/power alone (SPEC §6.1). */
    nvmlReturn_t (*device_set_power_management_limit)(nvmlDevice_t device,
                                                      unsigned int limit_mw);
    const char *(*error_string)(nvmlReturn_t result);
} nvml_lib;

/* $ZBSO_NVML_LIBRARY when set and not empty, else NVML_DEFAULT_LIBRARY. */
const char *nvml_lib_path(void);

/* Loads the NVML library at path (NULL: nvml_lib_path()) with dlopen, resolves every
 * function (the _v2 variants first) and calls nvmlInit. Returns 0 with *lib ready, or
 * ZBSO_ECONFIG naming the path and what failed (library missing, a symbol missing,
 * nvmlInit's error); on failure *lib holds nothing that needs closing. */
int nvml_lib_open(const char *path, nvml_lib *lib, zbso_err *err);

/* Calls nvmlShutdown and closes the library. A lib that was never opened (handle NULL)
 * is a no-op. */
void nvml_lib_close(nvml_lib *lib);

/* NVML's text for rc ("NVML error <rc>" when the library gives none); never NULL. One
 * buffer per thread. */
const char *nvml_lib_strerror(const nvml_lib *lib, nvmlReturn_t rc);

#endif
