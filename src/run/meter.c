/* meter.c: time and GPU energy of one try for `zbso run --metric-regex`, as cumulative
 * sums of one zbso_monitor window per epoch; time only (energy 0) with --no-gpu; and the
 * windows of power-limit time slices. */
#include <stdlib.h>
#include <string.h>

#include "run/runInt.h"
#include "util/clock.h"
#include "zbso/zbso.h"

#define WINDOW "zbso-run-epoch"

struct run_meter {
    zbso_monitor *mon;         /* NULL with --no-gpu */
    bool open;                 /* a window is open */
    double start_s;            /* monotonic time of run_meter_start (no monitor) */
    double time_s, energy_j;   /* sums of the closed windows */
};

int run_meter_open(bool no_gpu, run_meter **out, zbso_err *err)
{
    char msg[ZBSO_ERRBUF_MAX] = "";
    run_meter *m = calloc(1, sizeof *m);
    int rc = 0;

    *out = NULL;
    if (m == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory opening the GPU monitor");
    if (!no_gpu && (rc = zbso_monitor_new(NULL, 0, &m->mon, msg, sizeof msg)) < 0) {
        free(m);
        return err_set(err, ZBSO_ECONFIG,
                       "cannot measure GPU energy: %s; pass --no-gpu to measure time only "
                       "(energy 0)", msg[0] ? msg : zbso_strerror(rc));
    }
    *out = m;
    return 0;
}

void run_meter_free(run_meter *m)
{
    if (m == NULL)
        return;
    zbso_monitor_free(m->mon);
    free(m);
}

unsigned run_meter_gpu_count(const run_meter *m)
{
    return m->mon != NULL ? zbso_monitor_gpu_count(m->mon) : 0;
}

unsigned run_meter_max_power_limit_mw(const run_meter *m)
{
    return m->mon != NULL ? zbso_monitor_max_power_limit_mw(m->mon) : 0;
}

const char *run_meter_gpu_model(const run_meter *m)
{
    return m->mon != NULL ? zbso_monitor_gpu_model(m->mon) : "";
}

/* Opens the epoch window. ZBSO_ERUNTIME with the monitor's message on failure. */
static int begin(run_meter *m, zbso_err *err)
{
    m->start_s = clk_mono_s();
    if (m->mon != NULL && zbso_monitor_begin_window(m->mon, WINDOW) < 0)
        return err_set(err, ZBSO_ERUNTIME, "GPU monitor: %s", zbso_monitor_errmsg(m->mon));
    m->open = true;
    return 0;
}

int run_meter_start(run_meter *m, zbso_err *err)
{
    zbso_measurement unused;
    if (m->open && m->mon != NULL)
        zbso_monitor_end_window(m->mon, WINDOW, &unused);
    m->open = false;
    m->time_s = m->energy_j = 0;
    return begin(m, err);
}

int run_meter_lap(run_meter *m, bool restart, double *time_s, double *energy_j,
                  zbso_err *err)
{
    if (m->open) {
        m->open = false;
        if (m->mon != NULL) {
            zbso_measurement w;
            if (zbso_monitor_end_window(m->mon, WINDOW, &w) < 0)
                return err_set(err, ZBSO_ERUNTIME, "GPU monitor: %s",
                               zbso_monitor_errmsg(m->mon));
            m->time_s += w.time_s;
            m->energy_j += w.total_energy_j;
        } else {
            m->time_s += clk_mono_s() - m->start_s;
        }
    }
    *time_s = m->time_s;
    *energy_j = m->energy_j;
    return restart ? begin(m, err) : 0;
}

int run_meter_window_begin(run_meter *m, const char *name, zbso_err *err)
{
    if (m->mon == NULL)
        return err_set(err, ZBSO_EBADOP, "no GPU is measured (--no-gpu)");
    if (zbso_monitor_begin_window(m->mon, name) < 0)
        return err_set(err, ZBSO_ERUNTIME, "GPU monitor: %s", zbso_monitor_errmsg(m->mon));
    return 0;
}

int run_meter_window_end(run_meter *m, const char *name, bool cancel, double *time_s,
                         double *energy_j, zbso_err *err)
{
    zbso_measurement w;
    if (m->mon == NULL)
        return err_set(err, ZBSO_EBADOP, "no GPU is measured (--no-gpu)");
    int rc = zbso_monitor_end_window(m->mon, name, &w);
    if (cancel)
        return 0;
    if (rc < 0)
        return err_set(err, ZBSO_ERUNTIME, "GPU monitor: %s", zbso_monitor_errmsg(m->mon));
    *time_s = w.time_s;
    *energy_j = w.total_energy_j;
    return 0;
}
