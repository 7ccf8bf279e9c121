/* monitorInt.h: the monitor's private state, shared by monitor.c (API, GPU set, windows),
 * edge.c (reading all GPUs in parallel at a window edge), sampler.c (the power-sampling
 * thread) and rapl.c (CPU and DRAM energy). Not included outside src/monitor. */
#ifndef ZBSO_MONITOR_MONITORINT_H
#define ZBSO_MONITOR_MONITORINT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "nvml/nvml.h"
#include "monitor/rapl.h"
#include "zbso/zbso.h"

#define MON_WINDOWS_MAX 64   /* windows open at once */
#define MON_NAME_MAX 128     /* bytes of a window name, with its NUL */
#define MON_GPU_ERR_MAX 160  /* bytes of one GPU's error text */
#define MON_SAMPLE_PERIOD_S 0.010

/* One GPU's reading at a window edge. For a counter GPU, counter_mj is NVML's total
 * energy; for a sampled GPU, sampled_j is the power integral since the sampler started
 * and fail_seq the sampler's failure count at that moment. rc < 0 means the read failed
 * and msg says why (naming the GPU and NVML's error). */
typedef struct mon_reading {
    int rc;
    unsigned long long counter_mj;
    double sampled_j;
    unsigned long fail_seq;
    char msg[MON_GPU_ERR_MAX];
} mon_reading;

/* Power-sampling state of one GPU without an energy counter; guarded by mon_sampler.mu. */
typedef struct mon_sample_state {
    bool valid;           /* the last sample succeeded: last_t_s/last_w hold it */
    double last_t_s;      /* CLOCK_MONOTONIC of the last good sample */
    double last_w;        /* its power */
    double integral_j;    /* trapezoid integral of power up to last_t_s */
    unsigned long fail_seq; /* failed samples so far; a window spanning a change fails */
    char msg[MON_GPU_ERR_MAX]; /* the last failure */
} mon_sample_state;

typedef struct mon_gpu {
    int cuda_index;       /* index as the caller named it */
    unsigned nvml_index;
    nvmlDevice_t dev;
    bool has_counter;     /* nvmlDeviceGetTotalEnergyConsumption is supported */
    bool pooled;          /* a pool thread reads it at edges (else the caller does) */
    mon_sample_state sample;
    mon_reading edge;     /* written by whoever reads this GPU at the current edge */
} mon_gpu;

struct mon_edge_pool;

/* What one pool thread needs: its pool, the GPU it reads and the library. */
typedef struct mon_worker {
    struct mon_edge_pool *pool;
    mon_gpu *gpu;
    const nvml_lib *nvml;
} mon_worker;

/* The threads that read counter GPUs at an edge: one per such GPU but the first, which
 * the caller reads itself (so one GPU needs no thread at all). Woken per edge. */
typedef struct mon_edge_pool {
    pthread_mutex_t mu;
    pthread_cond_t go_cv;
    pthread_cond_t done_cv;
    unsigned long gen;    /* bumped per edge; a worker runs when it changes */
    unsigned pending;     /* workers still reading this edge */
    bool stop;
    bool started;         /* mu and the condition variables are initialised */
    unsigned n_threads;
    pthread_t threads[ZBSO_MAX_GPUS];
    mon_worker workers[ZBSO_MAX_GPUS];
} mon_edge_pool;

/* The background thread integrating power of the GPUs without an energy counter. */
typedef struct mon_sampler {
    pthread_mutex_t mu;
    pthread_cond_t stop_cv; /* on CLOCK_MONOTONIC, so stopping does not wait a period */
    bool stop;
    bool started;
    pthread_t thread;
} mon_sampler;

/* What a window keeps of its begin edge, per GPU (mon_reading without the message). */
typedef struct mon_mark {
    unsigned long long counter_mj;
    double sampled_j;
    unsigned long fail_seq;
} mon_mark;

typedef struct mon_window {
    bool open;
    char name[MON_NAME_MAX];
    double begin_s;
    mon_mark begin[ZBSO_MAX_GPUS];
    uint64_t cpu_begin_uj[ZBSO_MAX_CPUS];   /* RAPL totals at the begin edge */
    uint64_t dram_begin_uj[ZBSO_MAX_CPUS];
    unsigned long rapl_fail_seq;            /* the RAPL poller's failures then */
} mon_window;

struct zbso_monitor {
    unsigned flags;       /* ZBSO_MONITOR_* */
    nvml_lib nvml;
    unsigned n_gpus;
    mon_gpu gpus[ZBSO_MAX_GPUS];
    unsigned n_sampled;   /* GPUs without a counter */
    char model[NVML_NAME_MAX];
    unsigned max_limit_mw;
    mon_edge_pool pool;
    mon_sampler sampler;
    rapl_set rapl;        /* the CPU packages measured (rapl.n may be 0) */
    char gpu_status[ZBSO_ERRBUF_MAX]; /* why no GPU is measured, or "" */
    char cpu_status[ZBSO_ERRBUF_MAX]; /* why no CPU is measured, or "" */
    mon_window windows[MON_WINDOWS_MAX];
    char errmsg[ZBSO_ERRBUF_MAX];
};

/* Parses CUDA_VISIBLE_DEVICES (a comma list of NVML indices) into visible[0..*n_visible),
 * checking each against the n_nvml GPUs NVML sees. Unset means all of them. Returns 0 or
 * ZBSO_ECONFIG naming the entry: not an integer (UUIDs are not supported), out of range,
 * listed twice, or too many. */
int mon_visible_devices(unsigned n_nvml, unsigned *visible, unsigned *n_visible,
                        zbso_err *err);

/* Starts the edge pool for mon's counter GPUs. Returns 0, or ZBSO_ERUNTIME when a thread
 * cannot be started (the pool is then stopped again). */
int mon_edge_pool_start(struct zbso_monitor *mon, zbso_err *err);
/* Stops and joins the pool's threads; a pool never started is a no-op. */
void mon_edge_pool_stop(mon_edge_pool *pool);
/* Reads every GPU of mon at time now_s into gpus[i].edge, counter GPUs in parallel.
 * Always completes; each reading's rc says whether that GPU's read worked. */
void mon_edge_read(struct zbso_monitor *mon, double now_s);

/* Takes a first sample of every sampled GPU (synchronously, so a GPU whose power cannot
 * be read is refused at once) and starts the sampling thread. Returns 0, ZBSO_ERUNTIME
 * naming the GPU and NVML's error, or ZBSO_ERUNTIME when the thread cannot start. */
int mon_sampler_start(struct zbso_monitor *mon, zbso_err *err);
/* Stops and joins the sampling thread; never started is a no-op. */
void mon_sampler_stop(mon_sampler *s);
/* Fills *out with g's power integral extrapolated to now_s (the last power held since the
 * last sample) and its failure count; out->msg is the last sampling failure ("" if none)
 * and out->rc is ZBSO_ERUNTIME when the latest sample failed. Called with nothing locked. */
void mon_sampler_read(struct zbso_monitor *mon, mon_gpu *g, double now_s, mon_reading *out);

#endif
