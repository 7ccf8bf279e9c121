/* smart_bench.c: the cost of one smart-policy decision (opt_smart_next, a replay of the
 * job's trials) against the number of trials, in the exploit phase (the longest replay: the
 * walk, the confirmation and every arm's fit). Prints the median of repeated decisions per
 * size. Pure: builds the trials in memory; no store, no I/O in the timed part. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/smart.h"
#include "core/spec.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    char *end = NULL;
    long long nb = argc > 1 ? strtoll(argv[1], &end, 10) : 16;
    if (argc > 1 && (*end != '\0' || nb < 2 || nb > ZBSO_MAX_BATCH_SIZES)) {
        fprintf(stderr, "usage: zbso-smart-bench [BATCH_SIZES (2..%d)]\n",
                ZBSO_MAX_BATCH_SIZES);
        return 2;
    }
    static const size_t sizes[] = {100, 1000, 10000, 100000, 1000000};
    zbso_job job;
    memset(&job, 0, sizeof job);
    spec_defaults(&job.spec);
    snprintf(job.spec.job_id, sizeof job.spec.job_id, "bench");
    for (long long i = 0; i < nb; i++)
        job.spec.batch_sizes[i] = 8 * (i + 1);
    job.spec.n_batch_sizes = (size_t)nb;
    job.spec.default_batch_size = job.spec.batch_sizes[nb / 2];
    job.spec.max_power = 300;
    job.spec.policy = ZBSO_POLICY_SMART;
    job.has_min_cost = true;
    job.min_cost = 1000;
    rng_seed_u64(&job.rng, 1);
    printf("batch sizes %lld; median time of one decision in the exploit phase\n",
           (long long)nb);
    printf("%10s %14s\n", "trials", "decision (ms)");
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        zbso_trial *t = calloc(n, sizeof *t);
        opt_smart_decision *d = malloc(sizeof *d);
        if (t == NULL || d == NULL)
            return 1;
        /* Every size explored twice (walk, confirm), all within the confirm bar, then MAB
         * runs round the sizes; one in ten stopped by the bound. */
        for (size_t j = 0; j < n; j++) {
            size_t i = j % (size_t)nb;
            t[j].trial_number = (int64_t)j + 1;
            t[j].batch_size = job.spec.batch_sizes[i];
            t[j].type = j < 2 * (size_t)nb ? ZBSO_TRIAL_EXPLORATION : ZBSO_TRIAL_MAB;
            t[j].status = ZBSO_TRIAL_SUCCEEDED;
            t[j].converged = j % 10 != 9;
            t[j].epochs = 10;
            t[j].time = 10 + (double)(i % 3) * 0.1 + (double)(j % 7) * 0.01;
        }
        double ms[9];
        int reps = n >= 1000000 ? 3 : 9;
        for (int r = 0; r < reps; r++) {
            zbso_err err;
            zbso_rng rng = job.rng;
            double t0 = now_s();
            if (opt_smart_next(&job, t, n, NULL, &rng, d, &err) != 0) {
                fprintf(stderr, "smart_bench: %s\n", err.msg);
                return 1;
            }
            ms[r] = (now_s() - t0) * 1e3;
        }
        qsort(ms, (size_t)reps, sizeof ms[0], cmp);
        printf("%10zu %14.3f\n", n, ms[reps / 2]);
        free(t);
        free(d);
    }
    return 0;
}
