/* pwnvml.c: NVML for the actuator: the few functions that read and set a GPU's power
 * limit, loaded with dlopen like the monitor's (no NVML headers at build time). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "power/powerInt.h"

#define DEFAULT_NVML_LIBRARY "libnvidia-ml.so.1"

/* Resolves the first of names that the library exports into *fn; 0 or ZBSO_ECONFIG. */
static int resolve(pw_nvml *lib, const char *path, const char *const *names, size_t n,
                   void **fn, zbso_err *err)
{
    for (size_t i = 0; i < n; i++)
        if ((*fn = dlsym(lib->handle, names[i])) != NULL)
            return 0;
    return err_set(err, ZBSO_ECONFIG, "NVML library '%s' does not export %s", path,
                   names[0]);
}

int pw_nvml_open(pw_nvml *lib, zbso_err *err)
{
    static const char *const init_names[] = {"nvmlInit_v2", "nvmlInit"};
    static const char *const shutdown_names[] = {"nvmlShutdown"};
    static const char *const count_names[] = {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"};
    static const char *const handle_names[] = {"nvmlDeviceGetHandleByIndex_v2",
                                               "nvmlDeviceGetHandleByIndex"};
    static const char *const get_names[] = {"nvmlDeviceGetPowerManagementLimit"};
    static const char *const cons_names[] = {"nvmlDeviceGetPowerManagementLimitConstraints"};
    static const char *const set_names[] = {"nvmlDeviceSetPowerManagementLimit"};
    static const char *const errstr_names[] = {"nvmlErrorString"};
    const char *path = getenv("ZBSO_NVML_LIBRARY");
    int rc;

    if (path == NULL || path[0] == '\0')
        path = DEFAULT_NVML_LIBRARY;
    memset(lib, 0, sizeof *lib);
    lib->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib->handle == NULL) {
        const char *why = dlerror();
        return err_set(err, ZBSO_ECONFIG, "cannot load the NVML library '%s' (%s); is the "
                       "NVIDIA driver installed? ZBSO_NVML_LIBRARY overrides the path", path,
                       why ? why : "unknown reason");
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
    RESOLVE(get_names, get_limit);
    RESOLVE(cons_names, get_constraints);
    RESOLVE(set_names, set_limit);
    RESOLVE(errstr_names, error_string);
#undef RESOLVE
    pw_nvml_ret nrc = lib->init();
    if (nrc != PW_NVML_SUCCESS) {
        rc = err_set(err, ZBSO_ECONFIG, "nvmlInit failed in '%s': %s (NVML error %d)", path,
                     pw_nvml_strerror(lib, nrc), nrc);
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

void pw_nvml_close(pw_nvml *lib)
{
    if (lib == NULL || lib->handle == NULL)
        return;
    lib->shutdown();
    dlclose(lib->handle);
    memset(lib, 0, sizeof *lib);
}

const char *pw_nvml_strerror(const pw_nvml *lib, pw_nvml_ret rc)
{
    static _Thread_local char buf[32];
    const char *s = lib->error_string ? lib->error_string(rc) : NULL;
    if (s)
        return s;
    snprintf(buf, sizeof buf, "NVML error %d", rc);
    return buf;
}
