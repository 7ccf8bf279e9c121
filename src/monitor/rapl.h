/* rapl.h: CPU package and DRAM energy from the Linux powercap RAPL interface
 * (ROOT/intel-rapl:N/energy_uj, ROOT = $ZBSO_POWERCAP_ROOT or /sys/class/powercap) as
 * 64-bit totals that survive counter wrap-around. Reads files only; never writes one. */
#ifndef ZBSO_MONITOR_RAPL_H
#define ZBSO_MONITOR_RAPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"
#include "zbso/zbso.h"

#define RAPL_DEFAULT_ROOT "/sys/class/powercap"
#define RAPL_ZONES_MAX ZBSO_MAX_CPUS
#define RAPL_PATH_MAX 512
/* The most power one counter is assumed to see: the poller reads every counter at least
 * four times per wrap at this power (and at least once a second, as Zeus polls). */
#define RAPL_POWER_BOUND_W 4000.0
#define RAPL_PERIOD_MIN_S 0.01
#define RAPL_PERIOD_MAX_S 1.0

/* One energy_uj file. A counter counts up to range_uj and starts again from 0; total_uj
 * adds every step between two readings, a wrap included, so it only ever grows. */
typedef struct rapl_counter {
    char path[RAPL_PATH_MAX];   /* the energy_uj file */
    uint64_t range_uj;          /* max_energy_range_uj */
    uint64_t first_uj;          /* the first raw reading */
    uint64_t last_uj;           /* the last raw reading */
    uint64_t total_uj;          /* energy since the set was opened */
} rapl_counter;

/* A package zone (intel-rapl:N, Zeus's CPU index N) and its DRAM subzone if it has one. */
typedef struct rapl_zone {
    int index;
    bool has_dram;
    rapl_counter pkg;
    rapl_counter dram;
} rapl_zone;

/* The zones a monitor measures, and the thread that reads them often enough that no
 * counter wraps twice between two readings. Every reading goes through mu. */
typedef struct rapl_set {
    unsigned n;
    rapl_zone zones[RAPL_ZONES_MAX];
    double period_s;
    pthread_mutex_t mu;
    pthread_cond_t stop_cv;     /* on CLOCK_MONOTONIC */
    pthread_t thread;
    bool started;               /* mu and stop_cv are initialised */
    bool running;               /* the thread runs */
    bool stop;
    unsigned long polls;        /* rounds the thread completed */
    unsigned long fail_seq;     /* rounds of the thread that failed; a window spanning one
                                 * fails, since a wrap may have been missed */
    char fail_msg[ZBSO_ERR_MSG_MAX];
} rapl_set;

/* The powercap root: $ZBSO_POWERCAP_ROOT when set and not empty, else RAPL_DEFAULT_ROOT. */
const char *rapl_root(void);

/* Lists the package zones under root (entries intel-rapl:N, N a number) into
 * indices[0..*n), ascending. Returns 0 (with *n 0 when there is none or root cannot be
 * read: RAPL is absent, and *why says so), or ZBSO_ECONFIG when there are more than
 * RAPL_ZONES_MAX. why (may be NULL) gets the reason when *n is 0. */
int rapl_list(const char *root, int *indices, unsigned *n, char *why, size_t why_len,
              zbso_err *err);

/* Opens zones indices[0..n) under root into s (not started): each package's energy_uj and
 * max_energy_range_uj, and its "dram" subzone (intel-rapl:N:M whose name is dram) where
 * there is one, with a first reading. Returns 0, or ZBSO_ECONFIG naming the zone, the file
 * and the system's error (a missing zone, a file that cannot be read: RAPL needs root on
 * most kernels, a value that is not a number); s then holds nothing to close. */
int rapl_open(rapl_set *s, const char *root, const int *indices, unsigned n, zbso_err *err);

/* Starts the polling thread (period from the smallest range: RAPL_POWER_BOUND_W, clamped
 * to RAPL_PERIOD_MIN_S..RAPL_PERIOD_MAX_S). Returns 0 or ZBSO_ERUNTIME. */
int rapl_start(rapl_set *s, zbso_err *err);

/* Stops the thread (if running). A set never opened or already closed is a no-op. */
void rapl_close(rapl_set *s);

/* Reads every counter now and folds the readings into the totals; pkg_uj and dram_uj (may
 * be NULL) get the totals per zone (dram_uj 0 for a zone without DRAM), and *fail_seq (may
 * be NULL) the thread's failure count. Returns 0, or ZBSO_ERUNTIME naming the file (the
 * counters read before it are folded in; the totals are not written). */
int rapl_read(rapl_set *s, uint64_t *pkg_uj, uint64_t *dram_uj, unsigned long *fail_seq,
              zbso_err *err);

/* One round of the polling thread: rapl_read, counting the round, and a failure into
 * fail_seq / fail_msg. For tests that drive the rounds themselves. */
void rapl_poll_once(rapl_set *s);

/* The energy from raw reading last to raw reading cur of a counter of range range_uj:
 * cur - last, or when cur < last (the counter wrapped) range_uj - last + cur. */
uint64_t rapl_fold(uint64_t last_uj, uint64_t cur_uj, uint64_t range_uj);

#endif
