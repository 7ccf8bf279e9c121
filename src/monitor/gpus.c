/* gpus.c: the zbso_gpus_* API, read-only queries of the visible GPUs (Zeus's
 * zeus.device.get_gpus without its setters): names, power limit range, power, energy
 * counter. Loads NVML like the monitor; starts no thread; changes no GPU setting. */
#include <stdio.h>
#include <string.h>

#include "monitor/monitorInt.h"
#include "util/mem.h"

struct zbso_gpus {
    nvml_lib nvml;
    unsigned n;
    unsigned nvml_index[ZBSO_MAX_GPUS];   /* by CUDA index */
    nvmlDevice_t dev[ZBSO_MAX_GPUS];
    char errmsg[ZBSO_ERRBUF_MAX];
};

int zbso_gpus_open(zbso_gpus **out, char *errbuf, size_t errbuf_len)
{
    zbso_err err;
    zbso_gpus *g = NULL;
    unsigned n_nvml = 0;
    int rc;

    err_clear(&err);
    if (out)
        *out = NULL;
    if (!out) {
        rc = err_set(&err, ZBSO_EINVAL, "zbso_gpus_open: out is NULL");
        goto out;
    }
    if (!(g = mem_calloc(1, sizeof *g))) {
        rc = err_set(&err, ZBSO_ENOMEM, "out of memory opening the GPUs");
        goto out;
    }
    if ((rc = nvml_lib_open(NULL, &g->nvml, &err)) < 0)
        goto out;
    nvmlReturn_t nrc = g->nvml.device_get_count(&n_nvml);
    if (nrc != NVML_SUCCESS) {
        rc = err_set(&err, ZBSO_ECONFIG, "nvmlDeviceGetCount failed: %s (NVML error %d)",
                     nvml_lib_strerror(&g->nvml, nrc), nrc);
        goto out;
    }
    if ((rc = mon_visible_devices(n_nvml, g->nvml_index, &g->n, &err)) < 0)
        goto out;
    for (unsigned i = 0; i < g->n; i++) {
        nrc = g->nvml.device_get_handle_by_index(g->nvml_index[i], &g->dev[i]);
        if (nrc != NVML_SUCCESS) {
            rc = err_set(&err, ZBSO_ERUNTIME,
                         "GPU %u (NVML index %u): nvmlDeviceGetHandleByIndex failed: %s "
                         "(NVML error %d)",
                         i, g->nvml_index[i], nvml_lib_strerror(&g->nvml, nrc), nrc);
            goto out;
        }
    }
    *out = g;
    g = NULL;
out:
    zbso_gpus_free(g);
    if (errbuf && errbuf_len > 0)
        snprintf(errbuf, errbuf_len, "%s", rc < 0 ? err.msg : "");
    return rc;
}

void zbso_gpus_free(zbso_gpus *g)
{
    if (!g)
        return;
    nvml_lib_close(&g->nvml);
    mem_free(g);
}

const char *zbso_gpus_errmsg(const zbso_gpus *g)
{
    return g ? g->errmsg : "no GPUs (NULL handle)";
}

unsigned zbso_gpus_count(const zbso_gpus *g)
{
    return g ? g->n : 0;
}

/* The start of every per-GPU query: clears the last message and checks the index.
 * Returns 0, or ZBSO_EINVAL (recorded in g->errmsg unless g is NULL). */
static int start_query(zbso_gpus *g, unsigned index)
{
    if (!g)
        return ZBSO_EINVAL;
    g->errmsg[0] = '\0';
    if (index >= g->n) {
        snprintf(g->errmsg, sizeof g->errmsg, "GPU index %u is out of range: %u GPU(s) visible",
                 index, g->n);
        return ZBSO_EINVAL;
    }
    return 0;
}

/* Records NVML's failure of what on GPU index and returns ZBSO_ERUNTIME. */
static int nvml_failed(zbso_gpus *g, unsigned index, const char *what, nvmlReturn_t nrc)
{
    snprintf(g->errmsg, sizeof g->errmsg, "GPU %u (NVML index %u): %s failed: %s (NVML error %d)",
             index, g->nvml_index[index], what, nvml_lib_strerror(&g->nvml, nrc), nrc);
    return ZBSO_ERUNTIME;
}

int zbso_gpus_name(zbso_gpus *g, unsigned index, char *buf, size_t len)
{
    char name[NVML_NAME_MAX];
    int rc = start_query(g, index);
    if (rc < 0)
        return rc;
    memset(name, 0, sizeof name);
    nvmlReturn_t nrc = g->nvml.device_get_name(g->dev[index], name, sizeof name);
    if (nrc != NVML_SUCCESS)
        return nvml_failed(g, index, "nvmlDeviceGetName", nrc);
    name[sizeof name - 1] = '\0';
    if (buf && len)
        snprintf(buf, len, "%s", name);
    return 0;
}

int zbso_gpus_power_limit_constraints_mw(zbso_gpus *g, unsigned index, unsigned *min_mw,
                                         unsigned *max_mw)
{
    unsigned lo = 0, hi = 0;
    int rc = start_query(g, index);
    if (rc < 0)
        return rc;
    nvmlReturn_t nrc =
        g->nvml.device_get_power_management_limit_constraints(g->dev[index], &lo, &hi);
    if (nrc != NVML_SUCCESS)
        return nvml_failed(g, index, "nvmlDeviceGetPowerManagementLimitConstraints", nrc);
    if (min_mw)
        *min_mw = lo;
    if (max_mw)
        *max_mw = hi;
    return 0;
}

int zbso_gpus_power_mw(zbso_gpus *g, unsigned index, unsigned *mw)
{
    unsigned v = 0;
    int rc = start_query(g, index);
    if (rc < 0)
        return rc;
    nvmlReturn_t nrc = g->nvml.device_get_power_usage(g->dev[index], &v);
    if (nrc != NVML_SUCCESS)
        return nvml_failed(g, index, "nvmlDeviceGetPowerUsage", nrc);
    if (mw)
        *mw = v;
    return 0;
}

int zbso_gpus_energy_mj(zbso_gpus *g, unsigned index, unsigned long long *mj)
{
    unsigned long long v = 0;
    int rc = start_query(g, index);
    if (rc < 0)
        return rc;
    nvmlReturn_t nrc = g->nvml.device_get_total_energy_consumption(g->dev[index], &v);
    if (nrc == NVML_ERROR_NOT_SUPPORTED) {
        snprintf(g->errmsg, sizeof g->errmsg, "GPU %u (NVML index %u) has no energy counter",
                 index, g->nvml_index[index]);
        return ZBSO_EBADOP;
    }
    if (nrc != NVML_SUCCESS)
        return nvml_failed(g, index, "nvmlDeviceGetTotalEnergyConsumption", nrc);
    if (mj)
        *mj = v;
    return 0;
}
