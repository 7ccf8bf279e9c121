/* recur.c: the retry policy of recur.h. */
#include "recur/recur.h"

#include <math.h>

void recur_init(recur_policy *p, int64_t default_batch_size, bool has_beta, double beta)
{
    p->default_batch_size = default_batch_size;
    p->has_beta = has_beta;
    p->beta = beta;
    p->has_min_cost = false;
    p->min_cost = 0;
    p->max_tries = RECUR_MAX_TRIES;
}

double recur_cost_bound(const recur_policy *p)
{
    return p->has_beta && p->has_min_cost ? p->beta * p->min_cost : INFINITY;
}

recur_next recur_after_try(recur_policy *p, int64_t rec, int64_t try_no, int64_t batch_size,
                           bool reached, double cost)
{
    if (reached) {
        if (!p->has_min_cost || cost < p->min_cost) {
            p->has_min_cost = true;
            p->min_cost = cost;
        }
        return RECUR_NEXT;
    }
    if (rec == 1 && try_no == 1 && batch_size == p->default_batch_size)
        return RECUR_FAIL_DEFAULT;
    return try_no >= p->max_tries ? RECUR_FAIL_TRIES : RECUR_RETRY;
}
