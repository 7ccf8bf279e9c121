/* monitor.c: the zbso_monitor_* API: choosing the GPUs (CUDA_VISIBLE_DEVICES, one model
 * only), named measurement windows, and turning edge readings into energies. Never
 * changes a GPU setting; never returns a number an NVML failure could have spoiled. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/monitor.h"
#include "monitor/monitorInt.h"
#include "util/cudavis.h"
#include "util/clock.h"
#include "util/mem.h"

int mon_visible_devices(unsigned n_nvml, unsigned *visible, unsigned *n_visible,
                        zbso_err *err)
{
    /* One reading of CUDA_VISIBLE_DEVICES for the monitor and the power-limit actuator. */
    return cuda_visible_devices(n_nvml, visible, n_visible, err);
}

/* Fills mon->gpus[].cuda_index/nvml_index from the caller's CUDA indices (all visible
 * GPUs when n_gpus is 0). Returns 0 (with mon->n_gpus 0 and the reason in
 * mon->gpu_status when all were asked for and none is visible), or ZBSO_ECONFIG: an index
 * out of range or repeated, too many. */
static int choose_gpus(zbso_monitor *mon, const int *gpu_indices, size_t n_gpus,
                       zbso_err *err)
{
    unsigned visible[ZBSO_MAX_GPUS];
    unsigned n_visible = 0;
    unsigned n_nvml = 0;

    nvmlReturn_t nrc = mon->nvml.device_get_count(&n_nvml);
    if (nrc != NVML_SUCCESS)
        return err_set(err, ZBSO_ECONFIG, "nvmlDeviceGetCount failed: %s (NVML error %d)",
                       nvml_lib_strerror(&mon->nvml, nrc), nrc);
    int rc = mon_visible_devices(n_nvml, visible, &n_visible, err);
    if (rc < 0)
        return rc;
    if (n_visible == 0) {
        const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
        snprintf(mon->gpu_status, sizeof mon->gpu_status,
                 "no GPUs to monitor: NVML sees %u GPU(s)%s%s%s", n_nvml,
                 cvd ? " and CUDA_VISIBLE_DEVICES is '" : "", cvd ? cvd : "", cvd ? "'" : "");
        if (n_gpus == 0)
            return 0;
        return err_set(err, ZBSO_ECONFIG, "%s", mon->gpu_status);
    }
    if (n_gpus == 0) {
        for (unsigned i = 0; i < n_visible; i++) {
            mon->gpus[i].cuda_index = (int)i;
            mon->gpus[i].nvml_index = visible[i];
        }
        mon->n_gpus = n_visible;
        return 0;
    }
    if (n_gpus > ZBSO_MAX_GPUS)
        return err_set(err, ZBSO_ECONFIG, "%zu GPU indices given; at most %d", n_gpus,
                       ZBSO_MAX_GPUS);
    for (size_t i = 0; i < n_gpus; i++) {
        int idx = gpu_indices[i];
        if (idx < 0 || (unsigned)idx >= n_visible)
            return err_set(err, ZBSO_ECONFIG,
                           "GPU index %d is out of range: %u GPU(s) visible (0..%u)%s", idx,
                           n_visible, n_visible - 1,
                           getenv("CUDA_VISIBLE_DEVICES") ? " under CUDA_VISIBLE_DEVICES"
                                                          : "");
        for (size_t k = 0; k < i; k++)
            if (gpu_indices[k] == idx)
                return err_set(err, ZBSO_ECONFIG, "GPU index %d is given twice", idx);
        mon->gpus[i].cuda_index = idx;
        mon->gpus[i].nvml_index = visible[idx];
    }
    mon->n_gpus = (unsigned)n_gpus;
    return 0;
}

/* Opens each chosen GPU: handle, model (all must match), whether it has an energy
 * counter, and the first GPU's maximum power limit. Returns 0, ZBSO_ECONFIG naming the two
 * models that differ, or ZBSO_ERUNTIME naming the GPU and NVML's error. */
static int open_gpus(zbso_monitor *mon, zbso_err *err)
{
    const nvml_lib *nv = &mon->nvml;
    char name[NVML_NAME_MAX];

    for (unsigned i = 0; i < mon->n_gpus; i++) {
        mon_gpu *g = &mon->gpus[i];
        nvmlReturn_t nrc = nv->device_get_handle_by_index(g->nvml_index, &g->dev);
        const char *what = "nvmlDeviceGetHandleByIndex";
        if (nrc == NVML_SUCCESS) {
            what = "nvmlDeviceGetName";
            memset(name, 0, sizeof name);
            nrc = nv->device_get_name(g->dev, name, sizeof name);
            name[sizeof name - 1] = '\0';
        }
        if (nrc != NVML_SUCCESS)
            return err_set(err, ZBSO_ERUNTIME,
                           "GPU %d (NVML index %u): %s failed: %s (NVML error %d)",
                           g->cuda_index, g->nvml_index, what, nvml_lib_strerror(nv, nrc),
                           nrc);
        if (i == 0)
            memcpy(mon->model, name, sizeof name);
        else if (strcmp(mon->model, name) != 0)
            return err_set(err, ZBSO_ECONFIG,
                           "the GPUs are of different models: GPU %d is '%s' and GPU %d is "
                           "'%s'; monitor GPUs of one model (choose GPU indices or set "
                           "CUDA_VISIBLE_DEVICES)",
                           mon->gpus[0].cuda_index, mon->model, g->cuda_index, name);

        unsigned long long mj = 0;
        nrc = nv->device_get_total_energy_consumption(g->dev, &mj);
        if (nrc == NVML_SUCCESS) {
            g->has_counter = true;
        } else if (nrc == NVML_ERROR_NOT_SUPPORTED) {
            g->has_counter = false;
            mon->n_sampled++;
        } else {
            return err_set(err, ZBSO_ERUNTIME,
                           "GPU %d (NVML index %u): reading the energy counter failed: %s "
                           "(NVML error %d)",
                           g->cuda_index, g->nvml_index, nvml_lib_strerror(nv, nrc), nrc);
        }
    }

    unsigned min_mw = 0, max_mw = 0;
    mon_gpu *g0 = &mon->gpus[0];
    nvmlReturn_t nrc = nv->device_get_power_management_limit_constraints(g0->dev, &min_mw,
                                                                         &max_mw);
    if (nrc == NVML_SUCCESS)
        mon->max_limit_mw = max_mw;
    else if (nrc == NVML_ERROR_NOT_SUPPORTED)
        mon->max_limit_mw = 0;
    else
        return err_set(err, ZBSO_ERUNTIME,
                       "GPU %d (NVML index %u): reading the power limit range failed: %s "
                       "(NVML error %d)",
                       g0->cuda_index, g0->nvml_index, nvml_lib_strerror(nv, nrc), nrc);
    return 0;
}

/* Loads NVML and opens the GPUs for zbso_monitor_open (n_gpus != 0). With all GPUs asked
 * for (n_gpus < 0), an NVML that cannot be loaded or sees no GPU leaves the monitor
 * without GPUs and mon->gpu_status saying why; else that is an error. Returns 0 or the
 * error of choose_gpus / open_gpus / nvml_lib_open. */
static int setup_gpus(zbso_monitor *mon, const int *gpu_indices, int n_gpus, zbso_err *err)
{
    int rc = nvml_lib_open(NULL, &mon->nvml, err);
    if (rc < 0 && n_gpus < 0) {
        snprintf(mon->gpu_status, sizeof mon->gpu_status, "%s", err->msg);
        err_clear(err);
        return 0;
    }
    if (rc < 0)
        return rc;
    rc = choose_gpus(mon, gpu_indices, n_gpus < 0 ? 0 : (size_t)n_gpus, err);
    if (rc == 0 && mon->n_gpus == 0)
        nvml_lib_close(&mon->nvml);
    else if (rc == 0)
        rc = open_gpus(mon, err);
    return rc;
}

/* Opens the RAPL zones for zbso_monitor_open (n_cpus != 0): all of them (n_cpus < 0; none
 * when RAPL is absent or unreadable, with mon->cpu_status saying why) or the given ones.
 * Returns 0 or ZBSO_ECONFIG naming the index, the file and the system's error. */
static int setup_cpus(zbso_monitor *mon, const int *cpu_indices, int n_cpus, zbso_err *err)
{
    const char *root = rapl_root();
    int all[RAPL_ZONES_MAX];
    unsigned n = 0;
    int rc;

    if (n_cpus > 0)
        return rapl_open(&mon->rapl, root, cpu_indices, (unsigned)n_cpus, err);
    rc = rapl_list(root, all, &n, mon->cpu_status, sizeof mon->cpu_status, err);
    if (rc < 0 || n == 0)
        return rc;
    rc = rapl_open(&mon->rapl, root, all, n, err);
    if (rc < 0) {
        snprintf(mon->cpu_status, sizeof mon->cpu_status, "RAPL is not readable: %.480s",
                 err->msg);
        err_clear(err);
        memset(&mon->rapl, 0, sizeof mon->rapl);
        rc = 0;
    }
    return rc;
}

int zbso_monitor_open(const int *gpu_indices, int n_gpus, const int *cpu_indices,
                      int n_cpus, unsigned flags, zbso_monitor **out, char *errbuf,
                      size_t errbuf_len)
{
    zbso_err err;
    zbso_monitor *mon = NULL;
    int rc;

    err_clear(&err);
    if (out)
        *out = NULL;
    if (out == NULL || (n_gpus > 0 && gpu_indices == NULL) ||
        (n_cpus > 0 && cpu_indices == NULL) || n_gpus < ZBSO_MONITOR_ALL ||
        n_cpus < ZBSO_MONITOR_ALL || (flags & ~ZBSO_MONITOR_APPROX_INSTANT_ENERGY)) {
        rc = err_set(&err, ZBSO_EINVAL,
                     "zbso_monitor_open: bad arguments (out %s, n_gpus %d, n_cpus %d, "
                     "flags 0x%x)",
                     out ? "set" : "NULL", n_gpus, n_cpus, flags);
        goto out;
    }
    if (n_gpus > ZBSO_MAX_GPUS) {
        rc = err_set(&err, ZBSO_ECONFIG, "%d GPU indices given; at most %d", n_gpus,
                     ZBSO_MAX_GPUS);
        goto out;
    }
    mon = mem_calloc(1, sizeof *mon);
    if (mon == NULL) {
        rc = err_set(&err, ZBSO_ENOMEM, "out of memory allocating a monitor (%zu bytes)",
                     sizeof *mon);
        goto out;
    }
    mon->flags = flags;
    rc = n_gpus != 0 ? setup_gpus(mon, gpu_indices, n_gpus, &err) : 0;
    if (rc < 0)
        goto out;
    rc = n_cpus != 0 ? setup_cpus(mon, cpu_indices, n_cpus, &err) : 0;
    if (rc < 0)
        goto out;
    rc = mon_edge_pool_start(mon, &err);
    if (rc < 0)
        goto out;
    rc = mon_sampler_start(mon, &err);
    if (rc < 0)
        goto out;
    rc = rapl_start(&mon->rapl, &err);
    if (rc < 0)
        goto out;
    *out = mon;
    mon = NULL;
out:
    zbso_monitor_free(mon);
    if (errbuf && errbuf_len > 0)
        snprintf(errbuf, errbuf_len, "%s", rc < 0 ? err.msg : "");
    return rc;
}

int zbso_monitor_new(const int *gpu_indices, size_t n_gpus, zbso_monitor **out,
                     char *errbuf, size_t errbuf_len)
{
    zbso_monitor *mon = NULL;
    int rc;

    if (n_gpus > ZBSO_MAX_GPUS) {
        if (out)
            *out = NULL;
        if (errbuf && errbuf_len > 0)
            snprintf(errbuf, errbuf_len, "%zu GPU indices given; at most %d", n_gpus,
                     ZBSO_MAX_GPUS);
        return ZBSO_ECONFIG;
    }
    rc = zbso_monitor_open(gpu_indices, n_gpus == 0 ? ZBSO_MONITOR_ALL : (int)n_gpus, NULL,
                           0, 0, &mon, errbuf, errbuf_len);
    if (rc == 0 && mon->n_gpus == 0) {
        /* Every GPU was asked for and there is none: an error here, unlike for Zeus's
         * monitor, since everything built on this one measures GPUs. */
        if (errbuf && errbuf_len > 0)
            snprintf(errbuf, errbuf_len, "%s", mon->gpu_status);
        rc = ZBSO_ECONFIG;
        zbso_monitor_free(mon);
        mon = NULL;
    }
    if (out)
        *out = mon;
    return rc;
}

void zbso_monitor_free(zbso_monitor *mon)
{
    if (mon == NULL)
        return;
    rapl_close(&mon->rapl);
    mon_sampler_stop(&mon->sampler);
    mon_edge_pool_stop(&mon->pool);
    nvml_lib_close(&mon->nvml);
    mem_free(mon);
}

const char *zbso_monitor_errmsg(const zbso_monitor *mon)
{
    return mon ? mon->errmsg : "no monitor (NULL handle)";
}

/* Records err's message as mon's last error and returns its code. */
static int fail(zbso_monitor *mon, const zbso_err *err)
{
    snprintf(mon->errmsg, sizeof mon->errmsg, "%s", err->msg);
    return err->code;
}

/* The start of every window call: clears mon's last message and checks the window name
 * (non-NULL, 1..MON_NAME_MAX-1 bytes). Returns 0, or ZBSO_EINVAL (for a NULL mon without a
 * message; else recorded in mon->errmsg). */
static int start_call(zbso_monitor *mon, const char *name, zbso_err *err)
{
    if (mon == NULL)
        return ZBSO_EINVAL;
    err_clear(err);
    mon->errmsg[0] = '\0';
    if (name == NULL) {
        err_set(err, ZBSO_EINVAL, "the window name is NULL");
        return fail(mon, err);
    }
    size_t len = strlen(name);
    if (len == 0 || len >= MON_NAME_MAX) {
        err_set(err, ZBSO_EINVAL, "window name '%.40s%s' is %zu bytes; 1 to %d allowed",
                name, len > 40 ? "..." : "", len, MON_NAME_MAX - 1);
        return fail(mon, err);
    }
    return 0;
}

/* The open window called name, or NULL. */
static mon_window *find_window(zbso_monitor *mon, const char *name)
{
    for (unsigned i = 0; i < MON_WINDOWS_MAX; i++)
        if (mon->windows[i].open && strcmp(mon->windows[i].name, name) == 0)
            return &mon->windows[i];
    return NULL;
}

/* The checks of a call on window name: start_call's, then that the window is open.
 * Returns 0 with *out, or the failure's code with mon's message set. */
static int open_window_of(zbso_monitor *mon, const char *name, mon_window **out)
{
    zbso_err err;
    int rc = start_call(mon, name, &err);
    if (rc < 0)
        return rc;
    if ((*out = find_window(mon, name)) == NULL) {
        err_set(&err, ZBSO_EBADOP, "Measurement window '%s' does not exist", name);
        return fail(mon, &err);
    }
    return 0;
}

int zbso_monitor_begin_window(zbso_monitor *mon, const char *name)
{
    zbso_err err;
    mon_window *w = NULL;
    int rc = start_call(mon, name, &err);

    if (rc < 0)
        return rc;
    if (find_window(mon, name)) {
        err_set(&err, ZBSO_EBADOP, "Measurement window '%s' already exists", name);
        return fail(mon, &err);
    }
    for (unsigned i = 0; i < MON_WINDOWS_MAX && w == NULL; i++)
        if (!mon->windows[i].open)
            w = &mon->windows[i];
    if (w == NULL) {
        err_set(&err, ZBSO_EBADOP, "cannot open window '%s': %d windows are open already",
                name, MON_WINDOWS_MAX);
        return fail(mon, &err);
    }

    double now_s = clk_mono_s();
    mon_edge_read(mon, now_s);
    for (unsigned i = 0; i < mon->n_gpus; i++) {
        const mon_reading *r = &mon->gpus[i].edge;
        if (r->rc < 0) {
            err_set(&err, ZBSO_ERUNTIME, "cannot begin window '%s': %s", name, r->msg);
            return fail(mon, &err);
        }
        w->begin[i].counter_mj = r->counter_mj;
        w->begin[i].sampled_j = r->sampled_j;
        w->begin[i].fail_seq = r->fail_seq;
    }
    if (rapl_read(&mon->rapl, w->cpu_begin_uj, w->dram_begin_uj, &w->rapl_fail_seq,
                  &err) < 0) {
        char msg[ZBSO_ERR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err.msg);
        err_set(&err, ZBSO_ERUNTIME, "cannot begin window '%s': %s", name, msg);
        return fail(mon, &err);
    }
    w->open = true;
    w->begin_s = now_s;
    snprintf(w->name, sizeof w->name, "%s", name);
    return 0;
}

/* One GPU's energy over window w from its end reading r. Returns 0 with *j, or
 * ZBSO_ERUNTIME in err naming the window, the GPU and what went wrong. */
static int gpu_energy(const mon_window *w, unsigned i, const mon_gpu *g, const mon_reading *r,
                      double *j, zbso_err *err)
{
    const mon_mark *b = &w->begin[i];
    if (r->rc < 0)
        return err_set(err, ZBSO_ERUNTIME, "window '%s': %s", w->name, r->msg);
    if (g->has_counter) {
        if (r->counter_mj < b->counter_mj)
            return err_set(err, ZBSO_ERUNTIME,
                           "window '%s': GPU %d (NVML index %u): the energy counter went "
                           "backwards from %llu mJ to %llu mJ (driver reloaded?)",
                           w->name, g->cuda_index, g->nvml_index, b->counter_mj,
                           r->counter_mj);
        *j = (double)(r->counter_mj - b->counter_mj) / 1000.0;
        return 0;
    }
    if (r->fail_seq != b->fail_seq)
        return err_set(err, ZBSO_ERUNTIME,
                       "window '%s': power sampling failed %lu time(s) during the window; "
                       "last: %s",
                       w->name, r->fail_seq - b->fail_seq, r->msg);
    *j = r->sampled_j - b->sampled_j;
    if (*j < 0.0)
        *j = 0.0;
    return 0;
}

/* A GPU's power now times time_s, for a window whose energy read 0 under
 * ZBSO_MONITOR_APPROX_INSTANT_ENERGY. Returns 0 with *j, or ZBSO_ERUNTIME in err. */
static int instant_energy(const zbso_monitor *mon, const mon_window *w, const mon_gpu *g,
                          double time_s, double *j, zbso_err *err)
{
    unsigned mw = 0;
    nvmlReturn_t nrc = mon->nvml.device_get_power_usage(g->dev, &mw);
    if (nrc != NVML_SUCCESS)
        return err_set(err, ZBSO_ERUNTIME,
                       "window '%s': GPU %d (NVML index %u): reading the power to "
                       "approximate a zero energy failed: %s (NVML error %d)",
                       w->name, g->cuda_index, g->nvml_index,
                       nvml_lib_strerror(&mon->nvml, nrc), nrc);
    *j = (double)mw / 1000.0 * time_s;
    return 0;
}

/* The CPU and DRAM energy of window w into *cpu from a fresh RAPL reading. Returns 0, or
 * ZBSO_ERUNTIME in err when a counter cannot be read or the poller failed meanwhile. */
static int cpu_energy(zbso_monitor *mon, const mon_window *w, zbso_cpu_measurement *cpu,
                      zbso_err *err)
{
    uint64_t pkg[ZBSO_MAX_CPUS], dram[ZBSO_MAX_CPUS];
    unsigned long fail_seq = 0;
    char msg[ZBSO_ERR_MSG_MAX];

    memset(cpu, 0, sizeof *cpu);
    if (rapl_read(&mon->rapl, pkg, dram, &fail_seq, err) < 0) {
        snprintf(msg, sizeof msg, "%s", err->msg);
        return err_set(err, ZBSO_ERUNTIME, "window '%s': %s", w->name, msg);
    }
    if (fail_seq != w->rapl_fail_seq) {
        pthread_mutex_lock(&mon->rapl.mu);
        snprintf(msg, sizeof msg, "%s", mon->rapl.fail_msg);
        pthread_mutex_unlock(&mon->rapl.mu);
        return err_set(err, ZBSO_ERUNTIME,
                       "window '%s': reading the RAPL counters failed %lu time(s) during "
                       "the window, so a wrap-around may have been missed; last: %s",
                       w->name, fail_seq - w->rapl_fail_seq, msg);
    }
    cpu->n_cpus = mon->rapl.n;
    for (unsigned i = 0; i < mon->rapl.n; i++) {
        const rapl_zone *z = &mon->rapl.zones[i];
        cpu->cpu_indices[i] = z->index;
        cpu->cpu_energy_j[i] = (double)(pkg[i] - w->cpu_begin_uj[i]) / 1e6;
        cpu->has_dram[i] = z->has_dram;
        if (z->has_dram)
            cpu->dram_energy_j[i] = (double)(dram[i] - w->dram_begin_uj[i]) / 1e6;
    }
    return 0;
}

int zbso_monitor_end_window_cpu(zbso_monitor *mon, const char *name, zbso_measurement *out,
                                zbso_cpu_measurement *cpu_out)
{
    zbso_err err;
    zbso_measurement m;
    zbso_cpu_measurement cpu;
    mon_window *w;
    int rc = open_window_of(mon, name, &w);

    if (rc < 0)
        return rc;

    double now_s = clk_mono_s();
    mon_edge_read(mon, now_s);
    memset(&m, 0, sizeof m);
    m.time_s = now_s - w->begin_s;
    m.n_gpus = mon->n_gpus;
    for (unsigned i = 0; i < mon->n_gpus && rc == 0; i++) {
        const mon_gpu *g = &mon->gpus[i];
        rc = gpu_energy(w, i, g, &g->edge, &m.gpu_energy_j[i], &err);
        if (rc == 0 && m.gpu_energy_j[i] == 0.0 &&
            (mon->flags & ZBSO_MONITOR_APPROX_INSTANT_ENERGY))
            rc = instant_energy(mon, w, g, m.time_s, &m.gpu_energy_j[i], &err);
        m.gpu_indices[i] = g->cuda_index;
        m.total_energy_j += m.gpu_energy_j[i];
    }
    if (rc == 0)
        rc = cpu_energy(mon, w, &cpu, &err);
    /* The window is closed even when its measurement failed: the number is lost, and the
     * caller can open a window of the same name again. */
    w->open = false;
    if (rc < 0)
        return fail(mon, &err);
    if (out)
        *out = m;
    if (cpu_out)
        *cpu_out = cpu;
    return 0;
}

int zbso_monitor_end_window(zbso_monitor *mon, const char *name, zbso_measurement *out)
{
    return zbso_monitor_end_window_cpu(mon, name, out, NULL);
}

int zbso_monitor_cancel_window(zbso_monitor *mon, const char *name)
{
    mon_window *w;
    int rc = open_window_of(mon, name, &w);

    if (rc < 0)
        return rc;
    w->open = false;
    return 0;
}

unsigned zbso_monitor_reset_windows(zbso_monitor *mon)
{
    unsigned n = 0;
    if (mon == NULL)
        return 0;
    mon->errmsg[0] = '\0';
    for (unsigned i = 0; i < MON_WINDOWS_MAX; i++)
        if (mon->windows[i].open) {
            mon->windows[i].open = false;
            n++;
        }
    return n;
}

unsigned zbso_monitor_gpu_count(const zbso_monitor *mon)
{
    return mon ? mon->n_gpus : 0;
}

const char *zbso_monitor_gpu_model(const zbso_monitor *mon)
{
    return mon ? mon->model : "";
}

unsigned zbso_monitor_max_power_limit_mw(const zbso_monitor *mon)
{
    return mon ? mon->max_limit_mw : 0;
}

const char *zbso_monitor_gpu_status(const zbso_monitor *mon)
{
    return mon ? mon->gpu_status : "";
}

unsigned zbso_monitor_cpu_count(const zbso_monitor *mon)
{
    return mon ? mon->rapl.n : 0;
}

int zbso_monitor_cpu_index(const zbso_monitor *mon, unsigned i)
{
    return mon && i < mon->rapl.n ? mon->rapl.zones[i].index : -1;
}

int zbso_monitor_cpu_has_dram(const zbso_monitor *mon, unsigned i)
{
    return mon && i < mon->rapl.n && mon->rapl.zones[i].has_dram;
}

const char *zbso_monitor_cpu_status(const zbso_monitor *mon)
{
    return mon ? mon->cpu_status : "";
}

int zbso_monitor_cpu_energy(zbso_monitor *mon, zbso_cpu_measurement *out)
{
    zbso_err err;
    uint64_t pkg[ZBSO_MAX_CPUS], dram[ZBSO_MAX_CPUS];

    if (mon == NULL || out == NULL)
        return ZBSO_EINVAL;
    mon->errmsg[0] = '\0';
    memset(out, 0, sizeof *out);
    if (rapl_read(&mon->rapl, pkg, dram, NULL, &err) < 0)
        return fail(mon, &err);
    out->n_cpus = mon->rapl.n;
    for (unsigned i = 0; i < mon->rapl.n; i++) {
        const rapl_zone *z = &mon->rapl.zones[i];
        out->cpu_indices[i] = z->index;
        out->cpu_energy_j[i] = (double)(z->pkg.first_uj + pkg[i]) / 1e6;
        out->has_dram[i] = z->has_dram;
        if (z->has_dram)
            out->dram_energy_j[i] = (double)(z->dram.first_uj + dram[i]) / 1e6;
    }
    return 0;
}

double mon_job_max_power_w(unsigned max_power_limit_mw, unsigned n_gpus)
{
    return (double)(max_power_limit_mw / 1000u) * (double)n_gpus;
}
