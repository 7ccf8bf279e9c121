/* hist.h: a duration histogram with fixed buckets that many threads may add to at once,
 * for /metrics (docs/DESIGN.md "Metrics"). Adding is a few relaxed atomic adds on the
 * calling thread's shard: no lock, no allocation, no failure. No I/O, no global state but
 * the shard a thread was given. */
#ifndef ZBSO_UTIL_HIST_H
#define ZBSO_UTIL_HIST_H

#include <stdatomic.h>
#include <stdint.h>

/* Upper bounds of the buckets in seconds (hist_bounds_s), 100 us to 10 s in 1-2-5 steps,
 * plus the +Inf bucket: zbso's requests take from tens of microseconds (a report read
 * from a snapshot) to seconds (a commit on a stalled disk). */
#define HIST_BUCKETS 16
extern const double hist_bounds_s[HIST_BUCKETS];

/* Threads are spread over this many shards (round robin, on a thread's first add), so
 * the 64 request workers rarely add to one cache line at once. */
#define HIST_SHARDS 8

typedef struct hist_shard {
    atomic_uint_least64_t count[HIST_BUCKETS + 1]; /* per bucket, not cumulative; last: +Inf */
    atomic_uint_least64_t sum_ns;
    char pad[48];                                  /* 192 bytes: three cache lines */
} hist_shard;

/* Zero-initialize (static, calloc or memset); no cleanup. */
typedef struct zbso_hist {
    hist_shard shard[HIST_SHARDS];
} zbso_hist;

/* What a scrape reads: cumulative bucket counts (cumulative[HIST_BUCKETS] is the +Inf
 * bucket, equal to count), and the sum in seconds. */
typedef struct hist_snapshot {
    uint64_t cumulative[HIST_BUCKETS + 1];
    uint64_t count;
    double sum_s;
} hist_snapshot;

/* Adds one observation of ns nanoseconds (negative counts as 0). */
void hist_observe_ns(zbso_hist *h, int64_t ns);

/* Reads h into *out. Adds running meanwhile may be partly seen, but the buckets and count
 * always agree with each other (count is the +Inf bucket). */
void hist_read(const zbso_hist *h, hist_snapshot *out);

#endif
