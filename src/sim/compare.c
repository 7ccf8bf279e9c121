/* compare.c: `zbso simulate --compare`: two policies on the same (workload, GPU, eta)
 * pairs and seeds, their regret against the trace oracle and their early stops, and the
 * table that prints them. Runs nothing itself: the caller sweeps (sweep.c) and hands the
 * results in. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/sim.h"

double sim_oracle_cost(const sim_workload *w, double eta)
{
    double best = INFINITY;
    for (size_t i = 0; i < w->n_bs; i++)
        for (size_t k = 0; k < w->bs[i].n_pl; k++) {
            sim_expect e;
            sim_expect_fixed(w, &w->bs[i], k, eta, &e);
            if (e.feasible && e.cost < best)
                best = e.cost;
        }
    return best;
}

void sim_cmp_fill(const sim_workload *w, double eta, const sim_result *r, size_t n_seeds,
                  int which, sim_cmp_pair *pair)
{
    sim_cmp_policy *p = &pair->p[which];
    pair->w = w;
    pair->eta = eta;
    pair->n_seeds = n_seeds;
    pair->cstar = sim_oracle_cost(w, eta);
    pair->recurrences = n_seeds > 0 ? r[0].n_recurrences : 0;
    memset(p, 0, sizeof *p);
    const sim_bs *dflt = sim_workload_bs(w, w->default_batch_size);
    sim_expect de;
    sim_expect_fixed(w, dflt, sim_max_pl(dflt), eta, &de);
    for (size_t s = 0; s < n_seeds; s++) {
        double opt = (double)r[s].n_recurrences * pair->cstar;
        double cost = r[s].cost;
        /* A stuck job's owner trains at the default from the recurrence it stuck in on. */
        if (r[s].stuck)
            cost += (double)(r[s].n_recurrences - r[s].stuck_at + 1) * de.cost;
        p->regret_pct += (cost - opt) / opt * 100.0;
        p->stopped_per_job += (double)r[s].n_stopped;
        p->stuck += r[s].stuck;
        p->concurrent_per_job += (double)r[s].n_concurrent;
    }
    if (n_seeds > 0) {
        p->regret_pct /= (double)n_seeds;
        p->stopped_per_job /= (double)n_seeds;
        p->concurrent_per_job /= (double)n_seeds;
    }
}

void sim_cmp_overall(const sim_cmp_pair *pairs, size_t n, sim_cmp_total *t)
{
    size_t n_cut = 0;
    memset(t, 0, sizeof *t);
    t->worst = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        const sim_cmp_pair *p = &pairs[i];
        for (int k = 0; k < 2; k++) {
            t->regret_pct[k] += p->p[k].regret_pct / (double)n;
            t->stopped_per_job[k] += p->p[k].stopped_per_job / (double)n;
            t->stuck[k] += p->p[k].stuck;
            t->concurrent_per_job[k] += p->p[k].concurrent_per_job / (double)n;
        }
        double diff = p->p[1].regret_pct - p->p[0].regret_pct;
        if (diff > t->worst) {
            t->worst = diff;
            t->worst_pair = i;
        }
        if (p->p[0].regret_pct > 0) {
            t->mean_cut_pct += (1.0 - p->p[1].regret_pct / p->p[0].regret_pct) * 100.0;
            n_cut++;
        }
    }
    t->n_cut = n_cut;
    if (n_cut > 0)
        t->mean_cut_pct /= (double)n_cut;
}

void sim_cmp_print(FILE *f, const char *const names[2], const sim_cmp_pair *pairs, size_t n)
{
    sim_cmp_total t;
    fprintf(f, "regret = cost over all recurrences - recurrences x c* (c*: the trace oracle's "
               "best fixed batch size and power limit), %% of recurrences x c*, mean over "
               "seeds; stops = runs per job that did not converge\n");
    fprintf(f, "%-13s %-6s %4s %5s %4s  %9s %9s %7s  %7s %7s  %5s %5s\n", "workload", "gpu",
            "eta", "seeds", "recs", names[0], names[1], "cut%", "stops0", "stops1", "stk0",
            "stk1");
    for (size_t i = 0; i < n; i++) {
        const sim_cmp_pair *p = &pairs[i];
        char cut[16] = "-";
        if (p->p[0].regret_pct > 0)
            snprintf(cut, sizeof cut, "%.1f",
                     (1.0 - p->p[1].regret_pct / p->p[0].regret_pct) * 100.0);
        fprintf(f, "%-13s %-6s %4.2g %5zu %4lld  %8.3f%% %8.3f%% %7s  %7.2f %7.2f  %5zu %5zu\n",
                p->w->preset.name, p->w->gpu, p->eta, p->n_seeds, (long long)p->recurrences,
                p->p[0].regret_pct, p->p[1].regret_pct, cut, p->p[0].stopped_per_job,
                p->p[1].stopped_per_job, p->p[0].stuck, p->p[1].stuck);
    }
    if (n == 0)
        return;
    sim_cmp_overall(pairs, n, &t);
    fprintf(f, "overall (%zu pairs): mean regret %s %.3f%%, %s %.3f%%; mean of per-pair cuts "
               "%.1f%% (%zu pairs with %s regret > 0); worst pair %s-%s %+.3f points "
               "(%s %s eta %g); stops per job %s %.3f, %s %.3f; stuck jobs %s %zu, %s %zu; "
               "Concurrent trials per job %s %.2f, %s %.2f\n",
            n, names[0], t.regret_pct[0], names[1], t.regret_pct[1], t.mean_cut_pct, t.n_cut,
            names[0], names[1], names[0], t.worst, pairs[t.worst_pair].w->preset.name,
            pairs[t.worst_pair].w->gpu, pairs[t.worst_pair].eta, names[0],
            t.stopped_per_job[0], names[1], t.stopped_per_job[1], names[0], t.stuck[0],
            names[1], t.stuck[1], names[0], t.concurrent_per_job[0], names[1],
            t.concurrent_per_job[1]);
}
