/* placeholders.c: the training command's placeholders ({bs}, {lr}, ...) and the learning
 * rate scaling of seed 004. Pure: no I/O. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "run/runInt.h"

double run_lr_scale(double lr, const char *optimizer, int64_t default_bs, int64_t bs)
{
    static const char *const sqrt_scaled[] = {"adam", "adamw", "adadelta"};
    double ratio = (double)bs / (double)default_bs;
    for (size_t i = 0; i < sizeof sqrt_scaled / sizeof sqrt_scaled[0]; i++)
        if (optimizer != NULL && strcasecmp(optimizer, sqrt_scaled[i]) == 0)
            return lr * sqrt(ratio);
    return lr * ratio;
}

void run_fmt_double(double v, char *out, size_t cap)
{
    snprintf(out, cap, "%.10g", v);
}

/* Appends n bytes of s to out at *pos. Returns 0, or ZBSO_EINVAL when out (capacity cap,
 * one byte kept for the NUL) would overflow. */
static int append(char *out, size_t cap, size_t *pos, const char *s, size_t n,
                  const char *in, zbso_err *err)
{
    if (n >= cap - *pos)
        return err_set(err, ZBSO_EINVAL,
                       "the argument '%.60s...' is longer than %zu bytes once its "
                       "placeholders are replaced", in, cap - 1);
    memcpy(out + *pos, s, n);
    *pos += n;
    return 0;
}

int run_subst_arg(const char *in, const run_subst *s, char *out, size_t cap, zbso_err *err)
{
    static const char *const names[] = {"bs", "batch_size", "lr", "learning_rate", "seed",
                                        "epochs", "target_metric"};
    size_t pos = 0;
    int rc = 0;
    const char *p = in;

    if (cap == 0)
        return err_set(err, ZBSO_EINVAL, "no room for the argument '%.60s'", in);
    while (*p != '\0') {
        const char *open = strchr(p, '{');
        const char *close = open != NULL ? strchr(open, '}') : NULL;
        if (close == NULL) {
            rc = append(out, cap, &pos, p, strlen(p), in, err);
            break;
        }
        size_t name_len = (size_t)(close - open - 1);
        size_t k = 0;
        for (; k < sizeof names / sizeof names[0]; k++)
            if (strlen(names[k]) == name_len && strncmp(open + 1, names[k], name_len) == 0)
                break;
        if (k == sizeof names / sizeof names[0]) {
            /* Not ours (a JSON argument, a shell-style {x}): copy up to and including the
             * '{' and look for placeholders after it. */
            if ((rc = append(out, cap, &pos, p, (size_t)(open - p) + 1, in, err)) < 0)
                break;
            p = open + 1;
            continue;
        }
        if ((rc = append(out, cap, &pos, p, (size_t)(open - p), in, err)) < 0)
            break;
        char val[64];
        switch (k) {
        case 0: case 1:
            snprintf(val, sizeof val, "%lld", (long long)s->batch_size);
            break;
        case 2: case 3:
            if (!s->has_lr) {
                rc = err_set(err, ZBSO_EINVAL,
                             "the argument '%.60s' uses {%s} but the job file has no "
                             "\"learning_rate\" to scale", in, names[k]);
                goto out;
            }
            run_fmt_double(s->lr, val, sizeof val);
            break;
        case 4:
            snprintf(val, sizeof val, "%llu", (unsigned long long)s->seed);
            break;
        case 5:
            snprintf(val, sizeof val, "%lld", (long long)s->epochs);
            break;
        default:
            run_fmt_double(s->target_metric, val, sizeof val);
            break;
        }
        if ((rc = append(out, cap, &pos, val, strlen(val), in, err)) < 0)
            break;
        p = close + 1;
    }
out:
    out[rc < 0 ? 0 : pos] = '\0';
    return rc;
}
