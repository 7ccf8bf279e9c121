/* workload_file.c: `zbso simulate --workload-file FILE`: a custom workload described in a
 * small JSON file (its job and its own train and power traces, in the columns of
 * data/traces/README.md) instead of one of the six presets. Reads that one file; the
 * traces are read by trace.c. */
#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/sim.h"

#define WORKLOAD_FILE_MAX (64u * 1024u)   /* bytes of the JSON file */

/* Copies the string field name of the file (what) into out (cap bytes). Returns 0, or
 * ZBSO_EINVAL naming the file, the field and the value. */
static int copy_name(const char *what, const char *field, const char *v, char *out,
                     size_t cap, zbso_err *err)
{
    size_t n = strlen(v);
    if (n == 0 || n >= cap || strchr(v, ',') != NULL || strchr(v, '"') != NULL)
        return err_set(err, ZBSO_EINVAL, "%s: %s '%.80s' must be 1 to %zu bytes without ',' "
                       "or '\"' (as the trace CSVs have it)", what, field, v, cap - 1);
    memcpy(out, v, n + 1);
    return 0;
}

/* out = the path v, relative to dir unless absolute. */
static int resolve(const char *what, const char *field, const char *dir, const char *v,
                   char *out, size_t cap, zbso_err *err)
{
    int n = v[0] == '/' ? snprintf(out, cap, "%s", v) : snprintf(out, cap, "%s/%s", dir, v);
    if (v[0] == '\0' || n < 0 || (size_t)n >= cap)
        return err_set(err, ZBSO_EINVAL, "%s: %s '%.80s' is empty or too long a path", what,
                       field, v);
    return 0;
}

int sim_workload_file_load(const char *path, sim_workload_file *out, zbso_err *err)
{
    json_error_t je;
    json_t *doc = NULL;
    const char *name, *dataset, *network, *optimizer, *train, *power, *gpu = "custom";
    double target;
    json_int_t max_epochs, default_bs;
    int higher = 1, rc;
    char dir[SIM_WORKLOAD_PATH_MAX];

    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return err_set(err, ZBSO_EINVAL, "cannot open --workload-file '%s': %s", path,
                       strerror(errno));
    doc = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    long size = ftell(f);
    fclose(f);
    if (doc == NULL)
        return err_set(err, ZBSO_EINVAL, "--workload-file %s:%d:%d: %s", path, je.line,
                       je.column, je.text);
    if (size > (long)WORKLOAD_FILE_MAX) {
        json_decref(doc);
        return err_set(err, ZBSO_EINVAL, "--workload-file %s is over %u bytes", path,
                       WORKLOAD_FILE_MAX);
    }
    if (json_unpack_ex(doc, &je, JSON_STRICT,
                       "{s:s, s:s, s:s, s:s, s:F, s?b, s:I, s:I, s:s, s:s, s?s}",
                       "name", &name, "dataset", &dataset, "network", &network,
                       "optimizer", &optimizer, "target_metric", &target,
                       "higher_is_better", &higher, "max_epochs", &max_epochs,
                       "default_batch_size", &default_bs, "train_trace", &train,
                       "power_trace", &power, "gpu", &gpu) < 0) {
        rc = err_set(err, ZBSO_EINVAL, "--workload-file %s: %s (fields: name, dataset, "
                     "network, optimizer, target_metric, higher_is_better, max_epochs, "
                     "default_batch_size, train_trace, power_trace, gpu)", path, je.text);
        goto out;
    }
    snprintf(dir, sizeof dir, "%s", path);
    const char *base = dirname(dir);
    if ((rc = copy_name(path, "name", name, out->name, sizeof out->name, err)) < 0 ||
        (rc = copy_name(path, "dataset", dataset, out->dataset, sizeof out->dataset, err)) < 0 ||
        (rc = copy_name(path, "network", network, out->network, sizeof out->network, err)) < 0 ||
        (rc = copy_name(path, "optimizer", optimizer, out->optimizer, sizeof out->optimizer,
                        err)) < 0 ||
        (rc = copy_name(path, "gpu", gpu, out->gpu, sizeof out->gpu, err)) < 0 ||
        (rc = resolve(path, "train_trace", base, train, out->train_trace,
                      sizeof out->train_trace, err)) < 0 ||
        (rc = resolve(path, "power_trace", base, power, out->power_trace,
                      sizeof out->power_trace, err)) < 0)
        goto out;
    if (!isfinite(target)) {
        rc = err_set(err, ZBSO_EINVAL, "--workload-file %s: target_metric %g is not a finite "
                     "number", path, target);
        goto out;
    }
    if (max_epochs < 1 || max_epochs > 1000000 || default_bs < 1 || default_bs > (1LL << 40)) {
        rc = err_set(err, ZBSO_EINVAL, "--workload-file %s: max_epochs %lld and "
                     "default_batch_size %lld must be >= 1 (at most 1000000 and 2^40)", path,
                     (long long)max_epochs, (long long)default_bs);
        goto out;
    }
    out->preset = (sim_preset){out->name, out->dataset, out->network, out->optimizer, target,
                               higher != 0, (int64_t)max_epochs, (int64_t)default_bs};
    rc = 0;
out:
    json_decref(doc);
    if (rc < 0)
        memset(out, 0, sizeof *out);
    return rc;
}
