/* db_test.h: what the database test programs share (tests/netdb/test_netdb_suite.c,
 * tests/pg/test_pg_store.c, tests/mysql/test_my_store.c): a job to store, the units that
 * insert and read one, and the clock. Header only (static inline); cmocka's headers come
 * first in the including file. */
#ifndef ZBSO_TESTS_DB_TEST_H
#define ZBSO_TESTS_DB_TEST_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/rng.h"
#include "core/spec.h"
#include "store/store.h"

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* A job with id, three batch sizes (8, 16, 32; default 16), seed 7, revision 1. */
static inline void make_job(zbso_job *j, const char *id)
{
    memset(j, 0, sizeof *j);
    spec_defaults(&j->spec);
    snprintf(j->spec.job_id, sizeof j->spec.job_id, "%s", id);
    j->spec.n_batch_sizes = 3;
    j->spec.batch_sizes[0] = 8;
    j->spec.batch_sizes[1] = 16;
    j->spec.batch_sizes[2] = 32;
    j->spec.default_batch_size = 16;
    j->min_cost_batch_size = 16;
    j->exp_default_batch_size = 16;
    rng_seed_u64(&j->rng, 7);
    j->revision = 1;
}

/* Unit of work: inserts the job arg. */
static inline int u_insert(store_txn *t, void *arg, zbso_err *err)
{
    return store_job_insert(t, arg, err);
}

typedef struct get_arg {
    const char *id;
    zbso_job job;
} get_arg;

/* Unit of work: reads job a->id into a->job. */
static inline int u_get(store_txn *t, void *arg, zbso_err *err)
{
    get_arg *a = arg;
    return store_job_get(t, a->id, false, &a->job, err);
}

#endif
