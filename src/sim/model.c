/* model.c: the arithmetic of one simulated run (epochs allowed, time, energy, cost), the
 * JIT power limit pick (the library's selector) and the expected cost of a fixed
 * configuration. Pure: no I/O, no randomness (the caller picks the path). */
#include <math.h>

#include "core/optimizer.h"
#include "core/powerlimit.h"
#include "sim/sim.h"

size_t sim_jit_pick(const sim_bs *b, double eta)
{
    /* Profiled as Zeus profiles, highest limit first, per epoch rather than per step:
     * the library's selector (ZeusCost, one GPU) then decides, ties to the higher. */
    opt_pl_measurement m[SIM_MAX_PL];
    opt_pl_selector zeus_cost = {.kind = OPT_PL_ZEUS_COST, .eta_knob = eta, .world_size = 1};
    int64_t best_w;
    size_t n = 0;
    for (size_t k = b->n_pl; k-- > 0;)
        m[n++] = (opt_pl_measurement){b->pl_w[k], b->time_per_epoch_s[k],
                                      b->average_power_w[k] * b->time_per_epoch_s[k]};
    /* Traces hold distinct positive limits and positive finite figures (trace.c), and eta
     * is checked by the command line, so the selector cannot refuse them. */
    if (opt_pl_select(&zeus_cost, m, n, &best_w, NULL) < 0)
        return sim_max_pl(b);
    for (size_t k = 0; k < b->n_pl; k++)
        if (b->pl_w[k] == best_w)
            return k;
    return sim_max_pl(b);
}

size_t sim_max_pl(const sim_bs *b)
{
    return b->n_pl - 1;
}

void sim_run_compute(const sim_workload *w, const sim_bs *b, size_t pl, int64_t target_epoch,
                     bool profile, double eta, double cost_ub, sim_run *out)
{
    sim_run_compute_scaled(w, b, pl, target_epoch, profile, eta, cost_ub, 1.0, out);
}

void sim_run_compute_scaled(const sim_workload *w, const sim_bs *b, size_t pl,
                            int64_t target_epoch, bool profile, double eta, double cost_ub,
                            double factor, sim_run *out)
{
    double t_epoch = b->time_per_epoch_s[pl] * factor;
    double e_epoch = b->average_power_w[pl] * b->time_per_epoch_s[pl] * factor;
    int64_t allowed = w->preset.max_epochs;
    if (isfinite(cost_ub)) {
        double per_epoch = opt_cost(e_epoch, t_epoch, eta, w->max_power_w);
        double q = floor(cost_ub / per_epoch);
        if (q < (double)allowed)
            allowed = q > 0 ? (int64_t)q : 0;
    }
    out->reached = target_epoch > 0 && target_epoch <= allowed;
    out->epochs = out->reached ? target_epoch : allowed;
    out->time_s = 0;
    out->energy_j = 0;
    out->cost = 0;
    if (out->epochs == 0)
        return;
    if (profile) {
        /* The first epoch is split evenly over every power limit. */
        double t_sum = 0, e_sum = 0;
        for (size_t k = 0; k < b->n_pl; k++) {
            t_sum += b->time_per_epoch_s[k];
            e_sum += b->average_power_w[k] * b->time_per_epoch_s[k];
        }
        out->time_s = t_sum / (double)b->n_pl * factor + t_epoch * (double)(out->epochs - 1);
        out->energy_j = e_sum / (double)b->n_pl * factor + e_epoch * (double)(out->epochs - 1);
    } else {
        out->time_s = t_epoch * (double)out->epochs;
        out->energy_j = e_epoch * (double)out->epochs;
    }
    out->cost = opt_cost(out->energy_j, out->time_s, eta, w->max_power_w);
}

void sim_expect_fixed(const sim_workload *w, const sim_bs *b, size_t pl, double eta,
                      sim_expect *out)
{
    size_t n_reach = 0;
    double epochs_reach = 0;
    for (size_t i = 0; i < b->n_paths; i++) {
        int64_t e = w->path_epochs[b->path_off + i];
        if (e > 0 && e <= w->preset.max_epochs) {
            n_reach++;
            epochs_reach += (double)e;
        }
    }
    out->feasible = n_reach > 0;
    if (!out->feasible) {
        out->energy_j = out->time_s = out->cost = INFINITY;
        return;
    }
    /* Retrying until success: a geometric number of failed runs, (1 - p) / p on average,
     * each costing max_epochs epochs, then one successful path. */
    double p = (double)n_reach / (double)b->n_paths;
    double epochs = epochs_reach / (double)n_reach +
                    (1 - p) / p * (double)w->preset.max_epochs;
    out->time_s = b->time_per_epoch_s[pl] * epochs;
    out->energy_j = b->average_power_w[pl] * b->time_per_epoch_s[pl] * epochs;
    out->cost = opt_cost(out->energy_j, out->time_s, eta, w->max_power_w);
}
