/* cudavis.c: CUDA_VISIBLE_DEVICES to NVML indices (cudavis.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/cudavis.h"

int cuda_visible_devices(unsigned n_nvml, unsigned *visible, unsigned *n_visible,
                         zbso_err *err)
{
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    char buf[1024];

    *n_visible = 0;
    if (env == NULL) {
        if (n_nvml > ZBSO_MAX_GPUS)
            return err_set(err, ZBSO_ECONFIG,
                           "NVML sees %u GPUs; at most %d can be used, choose them with "
                           "CUDA_VISIBLE_DEVICES or GPU indices", n_nvml, ZBSO_MAX_GPUS);
        for (unsigned i = 0; i < n_nvml; i++)
            visible[(*n_visible)++] = i;
        return 0;
    }
    if (strlen(env) >= sizeof buf)
        return err_set(err, ZBSO_ECONFIG, "CUDA_VISIBLE_DEVICES is %zu bytes long (max %zu)",
                       strlen(env), sizeof buf - 1);
    memcpy(buf, env, strlen(env) + 1);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        char *end = tok + strlen(tok);
        while (end > tok && end[-1] == ' ')
            *--end = '\0';
        if (*tok == '\0')
            continue;
        char *stop = NULL;
        errno = 0;
        long v = strtol(tok, &stop, 10);
        if (*stop != '\0' || errno != 0 || v < 0)
            return err_set(err, ZBSO_ECONFIG, "CUDA_VISIBLE_DEVICES entry '%s' is not a GPU "
                           "index (zbso maps only integer NVML indices, not UUIDs)", tok);
        if ((unsigned long)v >= n_nvml)
            return err_set(err, ZBSO_ECONFIG, "CUDA_VISIBLE_DEVICES lists GPU %ld, but NVML "
                           "sees %u GPU(s) (indices 0..%d)", v, n_nvml, (int)n_nvml - 1);
        for (unsigned k = 0; k < *n_visible; k++)
            if (visible[k] == (unsigned)v)
                return err_set(err, ZBSO_ECONFIG, "CUDA_VISIBLE_DEVICES lists GPU %ld twice",
                               v);
        if (*n_visible == ZBSO_MAX_GPUS)
            return err_set(err, ZBSO_ECONFIG, "CUDA_VISIBLE_DEVICES lists more than %d GPUs",
                           ZBSO_MAX_GPUS);
        visible[(*n_visible)++] = (unsigned)v;
    }
    return 0;
}
