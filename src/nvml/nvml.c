/* nvml.c: loading NVML with dlopen and resolving the functions nvml.h declares, for the
 * monitor and the power actuator alike. Calls nvmlInit and nvmlShutdown, nothing else. */
#include "nvml/nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *nvml_lib_path(void)
{
    const char *p = getenv("ZBSO_NVML_LIBRARY");
    return p != NULL && p[0] != '\0' ? p : NVML_DEFAULT_LIBRARY;
}

/* Resolves the first of names[0..n) that the library exports into *fn. Returns 0, or
 * ZBSO_ECONFIG naming the library path and the symbol when none is exported. */
static int resolve(nvml_lib *lib, const char *path, const char *const *names, size_t n,
                   void **fn, zbso_err *err)
{
    for (size_t i = 0; i < n; i++) {
        *fn = dlsym(lib->handle, names[i]);
        if (*fn)
            return 0;
    }
    return err_set(err, ZBSO_ECONFIG, "NVML library '%s' does not export %s", path,
                   names[0]);
}

int nvml_lib_open(const char *path, nvml_lib *lib, zbso_err *err)
{
    /* Older drivers lack the _v2 entry points; the _v2 ones are preferred because the
     * originals skip devices the caller may not access (nvtop does the same). */
    static const char *const init_names[] = {"nvmlInit_v2", "nvmlInit"};
    static const char *const count_names[] = {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"};
    static const char *const handle_names[] = {"nvmlDeviceGetHandleByIndex_v2",
                                               "nvmlDeviceGetHandleByIndex"};
    static const char *const shutdown_names[] = {"nvmlShutdown"};
    static const char *const name_names[] = {"nvmlDeviceGetName"};
    static const char *const uuid_names[] = {"nvmlDeviceGetUUID"};
    static const char *const energy_names[] = {"nvmlDeviceGetTotalEnergyConsumption"};
    static const char *const power_names[] = {"nvmlDeviceGetPowerUsage"};
    static const char *const cons_names[] = {"nvmlDeviceGetPowerManagementLimitConstraints"};
    static const char *const limit_names[] = {"nvmlDeviceGetPowerManagementLimit"};
    static const char *const default_names[] = {"nvmlDeviceGetPowerManagementDefaultLimit"};
    static const char *const set_names[] = {"nvmlDeviceSetPowerManagementLimit"};
    static const char *const errstr_names[] = {"nvmlErrorString"};
    int rc;

    if (path == NULL)
        path = nvml_lib_path();
    memset(lib, 0, sizeof *lib);
    lib->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib->handle == NULL) {
        const char *why = dlerror();
        return err_set(err, ZBSO_ECONFIG,
                       "cannot load the NVML library '%s' (%s); is the NVIDIA driver "
                       "installed? ZBSO_NVML_LIBRARY overrides the path",
                       path, why ? why : "unknown reason");
    }
#define RESOLVE(names, field)                                                             \
    do {                                                                                  \
        rc = resolve(lib, path, names, sizeof names / sizeof names[0],                    \
                     (void **)&lib->field, err);                                          \
        if (rc < 0)                                                                       \
            goto out;                                                                     \
    } while (0)
    RESOLVE(init_names, init);
    RESOLVE(shutdown_names, shutdown);
    RESOLVE(count_names, device_get_count);
    RESOLVE(handle_names, device_get_handle_by_index);
    RESOLVE(name_names, device_get_name);
    RESOLVE(uuid_names, device_get_uuid);
    RESOLVE(energy_names, device_get_total_energy_consumption);
    RESOLVE(power_names, device_get_power_usage);
    RESOLVE(cons_names, device_get_power_management_limit_constraints);
    RESOLVE(limit_names, device_get_power_management_limit);
    RESOLVE(default_names, device_get_power_management_default_limit);
    RESOLVE(set_names, device_set_power_management_limit);
    RESOLVE(errstr_names, error_string);
#undef RESOLVE

    nvmlReturn_t nrc = lib->init();
    if (nrc != NVML_SUCCESS) {
        rc = err_set(err, ZBSO_ECONFIG, "nvmlInit failed in '%s': %s (NVML error %d)", path,
                     nvml_lib_strerror(lib, nrc), nrc);
        goto out;
    }
    rc = 0;
out:
    if (rc < 0) {
        dlclose(lib->handle);
        memset(lib, 0, sizeof *lib);
    }
    return rc;
}

void nvml_lib_close(nvml_lib *lib)
{
    if (lib == NULL || lib->handle == NULL)
        return;
    lib->shutdown();
    dlclose(lib->handle);
    memset(lib, 0, sizeof *lib);
}

const char *nvml_lib_strerror(const nvml_lib *lib, nvmlReturn_t rc)
{
    /* One buffer per thread: the sampler and edge readers format errors concurrently. */
    static _Thread_local char buf[32];
    const char *s = lib->error_string ? lib->error_string(rc) : NULL;
    if (s)
        return s;
    snprintf(buf, sizeof buf, "NVML error %d", rc);
    return buf;
}
