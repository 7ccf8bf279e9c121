/* hist.c: the sharded duration histogram of hist.h. */
#include "util/hist.h"

#include <stddef.h>

_Static_assert(sizeof(hist_shard) == 192, "a shard is three cache lines");

const double hist_bounds_s[HIST_BUCKETS] = {
    0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02,
    0.05,   0.1,    0.2,    0.5,   1.0,   2.0,   5.0,  10.0,
};

/* hist_bounds_s in nanoseconds, so an add compares integers. */
static const int64_t bounds_ns[HIST_BUCKETS] = {
    100000,     200000,     500000,     1000000,    2000000,    5000000,
    10000000,   20000000,   50000000,   100000000,  200000000,  500000000,
    1000000000, 2000000000, 5000000000, 10000000000,
};

static atomic_uint next_shard;
static _Thread_local unsigned my_shard = HIST_SHARDS;  /* HIST_SHARDS: not given yet */

void hist_observe_ns(zbso_hist *h, int64_t ns)
{
    if (my_shard == HIST_SHARDS)
        my_shard = atomic_fetch_add_explicit(&next_shard, 1, memory_order_relaxed) %
                   HIST_SHARDS;
    if (ns < 0)
        ns = 0;
    size_t b = 0;
    while (b < HIST_BUCKETS && ns > bounds_ns[b])
        b++;
    hist_shard *s = &h->shard[my_shard];
    atomic_fetch_add_explicit(&s->count[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->sum_ns, (uint64_t)ns, memory_order_relaxed);
}

void hist_read(const zbso_hist *h, hist_snapshot *out)
{
    uint64_t per[HIST_BUCKETS + 1] = {0}, sum_ns = 0;
    for (size_t i = 0; i < HIST_SHARDS; i++) {
        const hist_shard *s = &h->shard[i];
        for (size_t b = 0; b <= HIST_BUCKETS; b++)
            per[b] += atomic_load_explicit(&s->count[b], memory_order_relaxed);
        sum_ns += atomic_load_explicit(&s->sum_ns, memory_order_relaxed);
    }
    uint64_t run = 0;
    for (size_t b = 0; b <= HIST_BUCKETS; b++) {
        run += per[b];
        out->cumulative[b] = run;
    }
    out->count = run;
    out->sum_s = (double)sum_ns / 1e9;
}
