/* recur.h: the retry policy of a recurring job (seed 004's ZeusMaster.run), one piece of
 * code for `zbso run` (src/run/driver.c) and `zbso simulate` (src/sim/recurrence.c) so
 * that both decide alike. Pure: no I/O, no clock, no optimizer; the callers run the tries.
 *
 * The rules: a recurrence is retried until a try reaches the target, at most max_tries
 * tries (RECUR_MAX_TRIES unless the caller sets another: `zbso run --max-tries`); the
 * first try of the first recurrence, when it runs the default batch size, must reach it;
 * a try that reached the target at a lower cost lowers the early-stopping bound
 * beta * min_cost that later tries run under. */
#ifndef ZBSO_RECUR_RECUR_H
#define ZBSO_RECUR_RECUR_H

#include <stdbool.h>
#include <stdint.h>

#define RECUR_MAX_TRIES 20    /* default tries per recurrence, as ZeusMaster's range(1, 21) */

/* What comes after a try. */
typedef enum recur_next {
    RECUR_NEXT,           /* the try reached the target: on to the next recurrence */
    RECUR_RETRY,          /* it did not: another try of this recurrence */
    RECUR_FAIL_DEFAULT,   /* the default batch size's first run did not reach the target */
    RECUR_FAIL_TRIES,     /* max_tries tries of one recurrence did not */
} recur_next;

/* The policy's state across the recurrences of one run of a job. */
typedef struct recur_policy {
    int64_t default_batch_size;
    bool has_beta;        /* early stopping: tries run under beta * min_cost */
    double beta;
    bool has_min_cost;    /* a try has reached the target */
    double min_cost;      /* the least cost of such a try */
    int64_t max_tries;    /* tries per recurrence, >= 1; recur_init sets RECUR_MAX_TRIES */
} recur_policy;

/* Starts the policy of a job with this default batch size and beta knob (has_beta false:
 * no early stopping). */
void recur_init(recur_policy *p, int64_t default_batch_size, bool has_beta, double beta);

/* The cost bound the next try runs under: beta * min_cost, or INFINITY without beta or
 * before any try has reached the target. */
double recur_cost_bound(const recur_policy *p);

/* Records try try_no (from 1) of recurrence rec (from 1): it ran batch_size, reached the
 * target or not, and cost this much (reached tries only lower min_cost). Returns what
 * comes next.
 *
 * Why "the first try, with the default batch size" and not ZeusMaster's "any try of the
 * first recurrence": on a new job the two are the same, since the optimizer's first answer
 * is the default (SPEC §3.1) and the run stops at its failure. But `zbso run` may go on
 * with a job that already has trials (the same job_id on a server or in a --db file); its
 * first try may then run another batch size, which is retried like any other try. */
recur_next recur_after_try(recur_policy *p, int64_t rec, int64_t try_no, int64_t batch_size,
                           bool reached, double cost);

#endif
