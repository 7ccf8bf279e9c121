/* workload.c: the named workloads of the Zeus evaluation and their resolution against a
 * power trace and a train trace into batch sizes, power limits and training paths.
 * Reads no files (trace.c does) and keeps no global state beyond the constant presets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

static const sim_preset presets[] = {
    {"cifar100", "cifar100", "shufflenetv2", "adadelta", 0.60, true, 100, 1024},
    {"imagenet", "imagenet", "resnet50", "adadelta", 0.65, true, 100, 256},
    {"squad", "squad", "bert_base_uncased", "adamw", 84.0, true, 6, 32},
    {"librispeech", "librispeech", "deepspeech2", "adamw", 40.0, false, 16, 192},
    {"movielens-1m", "movielens-1m", "ncf", "adam", 0.41, true, 100, 1024},
    {"sentiment140", "sentiment140", "bert_base_uncased", "adamw", 0.84, true, 10, 128},
};

const sim_preset *sim_presets(size_t *n)
{
    *n = sizeof presets / sizeof presets[0];
    return presets;
}

const sim_preset *sim_preset_find(const char *name)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

static bool same_job(const sim_preset *p, const char *dataset, const char *network,
                     const char *optimizer)
{
    return strcmp(p->dataset, dataset) == 0 && strcmp(p->network, network) == 0 &&
           strcmp(p->optimizer, optimizer) == 0;
}

/* Index of batch_size in w->bs (ascending), or w->n_bs when absent. */
static size_t bs_index(const sim_workload *w, int64_t batch_size)
{
    size_t lo = 0, hi = w->n_bs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->bs[mid].batch_size < batch_size)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < w->n_bs && w->bs[lo].batch_size == batch_size ? lo : w->n_bs;
}

const sim_bs *sim_workload_bs(const sim_workload *w, int64_t batch_size)
{
    size_t i = bs_index(w, batch_size);
    return i < w->n_bs ? &w->bs[i] : NULL;
}

/* Inserts pl (with its time and power) into b keeping power limits ascending. Returns 0
 * or ZBSO_EINVAL when b already holds SIM_MAX_PL power limits. */
static int bs_add_pl(sim_bs *b, const sim_power_row *row, const char *power_path,
                     zbso_err *err)
{
    if (b->n_pl >= SIM_MAX_PL)
        return err_set(err, ZBSO_EINVAL, "%s: batch size %lld has more than %d power limits",
                       power_path, (long long)b->batch_size, SIM_MAX_PL);
    size_t k = b->n_pl;
    while (k > 0 && b->pl_w[k - 1] > row->power_limit_w) {
        b->pl_w[k] = b->pl_w[k - 1];
        b->time_per_epoch_s[k] = b->time_per_epoch_s[k - 1];
        b->average_power_w[k] = b->average_power_w[k - 1];
        k--;
    }
    b->pl_w[k] = row->power_limit_w;
    b->time_per_epoch_s[k] = row->time_per_epoch_s;
    b->average_power_w[k] = row->average_power_w;
    b->n_pl++;
    return 0;
}

/* Writes the batch sizes of w into buf as "8, 16, 32" (truncated to cap). */
static void list_bs(const sim_workload *w, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < w->n_bs && used < cap; i++) {
        int k = snprintf(buf + used, cap - used, "%s%lld", i ? ", " : "",
                         (long long)w->bs[i].batch_size);
        if (k < 0)
            break;
        used += (size_t)k;
    }
}

int sim_workload_build(const sim_preset *p, int64_t default_bs_override, const char *gpu,
                       const sim_power_trace *power, const char *power_path,
                       const sim_train_trace *train, const char *train_path,
                       sim_workload **out, zbso_err *err)
{
    int rc = 0;
    sim_workload *w = calloc(1, sizeof *w);
    sim_bs *all = NULL;
    size_t n_all = 0;
    int64_t pls[SIM_MAX_PL * 4];
    size_t n_pls = 0;
    char list[512];

    *out = NULL;
    all = calloc(ZBSO_MAX_BATCH_SIZES, sizeof *all);
    if (w == NULL || all == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory building workload %s", p->name);
        goto out;
    }
    w->preset = *p;
    snprintf(w->gpu, sizeof w->gpu, "%s", gpu);

    /* Batch sizes and power limits from the power trace. */
    for (size_t i = 0; i < power->n; i++) {
        const sim_power_row *row = &power->rows[i];
        if (!same_job(p, row->dataset, row->network, row->optimizer))
            continue;
        size_t k = 0;
        while (k < n_all && all[k].batch_size != row->batch_size)
            k++;
        if (k == n_all) {
            if (n_all >= ZBSO_MAX_BATCH_SIZES) {
                rc = err_set(err, ZBSO_EINVAL, "%s: workload %s has more than %d batch sizes",
                             power_path, p->name, ZBSO_MAX_BATCH_SIZES);
                goto out;
            }
            all[n_all++].batch_size = row->batch_size;
        }
        if ((rc = bs_add_pl(&all[k], row, power_path, err)) < 0)
            goto out;
        size_t j = 0;
        while (j < n_pls && pls[j] != row->power_limit_w)
            j++;
        if (j == n_pls && n_pls < sizeof pls / sizeof pls[0])
            pls[n_pls++] = row->power_limit_w;
        if (row->power_limit_w > w->max_power_w)
            w->max_power_w = (double)row->power_limit_w;
    }
    if (n_all == 0) {
        rc = err_set(err, ZBSO_EINVAL,
                     "workload %s: the power trace %s has no rows for dataset %s, network %s, "
                     "optimizer %s", p->name, power_path, p->dataset, p->network, p->optimizer);
        goto out;
    }
    w->n_pl_all = n_pls;

    /* Training paths at the target: count per batch size, then lay them out. */
    size_t counts[ZBSO_MAX_BATCH_SIZES] = {0};
    size_t total = 0;
    for (size_t i = 0; i < train->n; i++) {
        const sim_train_row *row = &train->rows[i];
        if (!same_job(p, row->dataset, row->network, row->optimizer) ||
            row->target_metric != p->target_metric)
            continue;
        for (size_t k = 0; k < n_all; k++)
            if (all[k].batch_size == row->batch_size) {
                counts[k]++;
                total++;
                break;
            }
    }
    if (total == 0) {
        rc = err_set(err, ZBSO_EINVAL,
                     "workload %s: the train trace %s has no rows for dataset %s, network %s, "
                     "optimizer %s at target_metric %g with a batch size of the power trace",
                     p->name, train_path, p->dataset, p->network, p->optimizer,
                     p->target_metric);
        goto out;
    }
    w->path_epochs = calloc(total, sizeof *w->path_epochs);
    if (w->path_epochs == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory building workload %s", p->name);
        goto out;
    }
    /* Feasible batch sizes in ascending order; the others are reported as dropped. */
    for (;;) {
        size_t pick = n_all;
        for (size_t k = 0; k < n_all; k++)
            if (all[k].batch_size > 0 &&
                (pick == n_all || all[k].batch_size < all[pick].batch_size))
                pick = k;
        if (pick == n_all)
            break;
        if (counts[pick] == 0) {
            w->dropped[w->n_dropped++] = all[pick].batch_size;
        } else {
            sim_bs *b = &w->bs[w->n_bs++];
            *b = all[pick];
            b->path_off = w->n_paths;
            for (size_t i = 0; i < train->n; i++) {
                const sim_train_row *row = &train->rows[i];
                if (row->batch_size == b->batch_size &&
                    row->target_metric == p->target_metric &&
                    same_job(p, row->dataset, row->network, row->optimizer))
                    w->path_epochs[w->n_paths++] = row->target_epoch;
            }
            b->n_paths = w->n_paths - b->path_off;
        }
        all[pick].batch_size = 0;
    }

    /* The default batch size, capped at the largest batch size the power trace has. */
    int64_t largest = w->dropped[0];
    for (size_t i = 0; i < w->n_dropped; i++)
        if (w->dropped[i] > largest)
            largest = w->dropped[i];
    if (w->n_bs > 0 && w->bs[w->n_bs - 1].batch_size > largest)
        largest = w->bs[w->n_bs - 1].batch_size;
    int64_t dflt = default_bs_override > 0 ? default_bs_override : p->default_batch_size;
    if (dflt > largest)
        dflt = largest;
    if (sim_workload_bs(w, dflt) == NULL) {
        list_bs(w, list, sizeof list);
        rc = err_set(err, ZBSO_EINVAL,
                     "workload %s: default batch size %lld is not a feasible batch size of "
                     "%s with %s (feasible: %s)", p->name, (long long)dflt, power_path,
                     train_path, list);
        goto out;
    }
    w->default_batch_size = dflt;
    *out = w;
    w = NULL;
out:
    free(all);
    sim_workload_free(w);
    return rc;
}

void sim_workload_free(sim_workload *w)
{
    if (w == NULL)
        return;
    free(w->path_epochs);
    free(w);
}
