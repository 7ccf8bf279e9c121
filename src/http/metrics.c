/* metrics.c: GET /metrics (SPEC §5, docs/DESIGN.md "Metrics"): the registry of requests
 * (a count per route, method and status, and a duration histogram per route and method,
 * all fixed at start) and the Prometheus text exposition, format 0.0.4, of it with the
 * store's, the service's and the process's figures. Counting takes relaxed atomic adds
 * only; the database is read only by a scrape, in one read unit. Labels are bounded: the
 * route table, 8 methods, statuses 100-599, and job ids only with --metrics-per-job. */
#include "http/metrics.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/optimizer.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/hist.h"
#include "util/log.h"

#define STATUS_MIN 100
#define STATUS_MAX 599
#define N_STATUSES (STATUS_MAX - STATUS_MIN + 1)

/* Methods of requests no route matched; any other method is counted as "other". */
static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH",
                                      "OPTIONS", "other"};
#define N_METHODS (sizeof methods / sizeof methods[0])

/* Requests of one route (or of no route, under one method). */
typedef struct req_slot {
    atomic_uint_least64_t by_status[N_STATUSES];
    zbso_hist duration;
} req_slot;

struct http_metrics {
    const http_route *routes;
    size_t n_routes;
    char version[64];
    bool per_job;
    double start_time_s;          /* unix seconds the process started */
    log_limit read_log;
    req_slot slot[];              /* the routes', then no route under each of methods[] */
};

/* ---- process start time ---- */

/* Reads at most cap - 1 bytes of the file at path into buf, NUL-terminated. Returns the
 * length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n >= 0)
        buf[n] = '\0';
    return n;
}

/* The boot time in unix seconds ("btime" of /proc/stat), or -1. */
static double boot_time_s(void)
{
    char line[256];
    double out = -1;
    bool line_start = true;
    FILE *f = fopen("/proc/stat", "re");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        if (line_start && strncmp(line, "btime ", 6) == 0) {
            char *end = NULL;
            unsigned long long v = strtoull(line + 6, &end, 10);
            if (end != line + 6)
                out = (double)v;
            break;
        }
        line_start = strchr(line, '\n') != NULL;   /* long lines come in pieces */
    }
    fclose(f);
    return out;
}

/* The process's start time in unix seconds: boot time plus field 22 of /proc/self/stat
 * (clock ticks after boot), as Prometheus client libraries compute it; now when /proc
 * cannot tell. */
static double process_start_s(void)
{
    char stat[1024];
    double boot = boot_time_s();
    long ticks = sysconf(_SC_CLK_TCK);
    if (boot < 0 || ticks <= 0 || read_small("/proc/self/stat", stat, sizeof stat) <= 0)
        return clk_real_s();
    /* The command name (field 2) may hold spaces and parentheses: count from its end. */
    char *p = strrchr(stat, ')');
    if (!p)
        return clk_real_s();
    p++;
    for (int field = 3; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    char *end = NULL;
    unsigned long long start = p ? strtoull(p, &end, 10) : 0;
    if (!p || end == p)
        return clk_real_s();
    return boot + (double)start / (double)ticks;
}

/* ---- the registry ---- */

int http_metrics_new(const http_route *routes, size_t n_routes, const char *version,
                     bool per_job, http_metrics **out, zbso_err *err)
{
    http_metrics *m = calloc(1, sizeof *m + (n_routes + N_METHODS) * sizeof m->slot[0]);
    *out = NULL;
    if (!m)
        return err_set(err, ZBSO_ENOMEM, "out of memory creating the /metrics registry");
    m->routes = routes;
    m->n_routes = n_routes;
    snprintf(m->version, sizeof m->version, "%s", version ? version : "unknown");
    m->per_job = per_job;
    m->start_time_s = process_start_s();
    *out = m;
    return 0;
}

void http_metrics_free(http_metrics *m)
{
    free(m);
}

static size_t method_index(const char *method)
{
    for (size_t i = 0; method && i + 1 < N_METHODS; i++)
        if (strcmp(method, methods[i]) == 0)
            return i;
    return N_METHODS - 1;
}

void http_metrics_request(http_metrics *m, const http_route *route, const char *method,
                          unsigned status, int64_t duration_ns)
{
    size_t i = route ? (size_t)(route - m->routes) : m->n_routes + method_index(method);
    req_slot *s = &m->slot[i];
    if (status >= STATUS_MIN && status <= STATUS_MAX)
        atomic_fetch_add_explicit(&s->by_status[status - STATUS_MIN], 1, memory_order_relaxed);
    hist_observe_ns(&s->duration, duration_ns);
}

/* ---- the text ---- */

/* The exposition being built; after the first failure nothing more is appended. */
typedef struct text {
    zbso_buf b;
    int rc;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    if (t->rc < 0)
        return;
    va_start(ap, fmt);
    t->rc = buf_vaddf(&t->b, fmt, ap);
    va_end(ap);
}

/* Appends s as a label value: backslash, double quote and newline escaped (the format's
 * only escapes); job ids are UTF-8 (they came in JSON), as the format wants. */
static void put_label_value(text *t, const char *s)
{
    while (t->rc >= 0 && *s) {
        size_t n = strcspn(s, "\\\"\n");
        if (n > 0 && (t->rc = buf_addn(&t->b, s, n)) < 0)
            return;
        s += n;
        if (!*s)
            return;
        t->rc = buf_add(&t->b, *s == '\n' ? "\\n" : *s == '"' ? "\\\"" : "\\\\");
        s++;
    }
}

static void family(text *t, const char *name, const char *type, const char *help)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A sample value: the shortest text that reads back to v; +Inf, -Inf, NaN as the format
 * spells them. buf holds OPT_FMT_DOUBLE_MAX bytes. */
static const char *num(char *buf, double v)
{
    if (isnan(v))
        return "NaN";
    if (isinf(v))
        return v > 0 ? "+Inf" : "-Inf";
    return opt_fmt_double(buf, v);
}

static uint64_t load(const atomic_uint_least64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* A histogram's samples; labels is the label text before le ("" or `a="x",`). */
static void put_hist(text *t, const char *name, const char *labels, const hist_snapshot *h)
{
    char le[OPT_FMT_DOUBLE_MAX], v[OPT_FMT_DOUBLE_MAX];
    for (size_t b = 0; b < HIST_BUCKETS; b++)
        put(t, "%s_bucket{%sle=\"%s\"} %" PRIu64 "\n", name, labels,
            num(le, hist_bounds_s[b]), h->cumulative[b]);
    put(t, "%s_bucket{%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, h->cumulative[HIST_BUCKETS]);
    size_t n = strlen(labels);
    /* _sum and _count carry the same labels without the trailing comma. */
    put(t, "%s_sum{%.*s} %s\n", name, (int)(n ? n - 1 : 0), labels, num(v, h->sum_s));
    put(t, "%s_count{%.*s} %" PRIu64 "\n", name, (int)(n ? n - 1 : 0), labels, h->count);
}

/* The route and method labels of slot i. Route patterns and method names are ours, with
 * nothing the format escapes. */
static void slot_labels(const http_metrics *m, size_t i, char *out, size_t cap)
{
    if (i < m->n_routes)
        snprintf(out, cap, "route=\"%s\",method=\"%s\",", m->routes[i].path,
                 m->routes[i].method);
    else
        snprintf(out, cap, "route=\"other\",method=\"%s\",", methods[i - m->n_routes]);
}

static void put_requests(text *t, const http_metrics *m)
{
    char labels[256];
    size_t n = m->n_routes + N_METHODS;
    family(t, "zbso_http_requests_total", "counter",
           "HTTP requests answered, by route pattern (\"other\": no route matched), method "
           "and status code.");
    for (size_t i = 0; i < n; i++) {
        slot_labels(m, i, labels, sizeof labels);
        for (unsigned s = 0; s < N_STATUSES; s++) {
            uint64_t c = load(&m->slot[i].by_status[s]);
            if (c)
                put(t, "zbso_http_requests_total{%scode=\"%u\"} %" PRIu64 "\n", labels,
                    s + STATUS_MIN, c);
        }
    }
    family(t, "zbso_http_request_duration_seconds", "histogram",
           "Time from a request's complete head to its answer queued, by route pattern and "
           "method.");
    for (size_t i = 0; i < n; i++) {
        hist_snapshot h;
        hist_read(&m->slot[i].duration, &h);
        if (i >= m->n_routes && h.count == 0)
            continue;   /* a route's series always; no-route ones once they happen */
        slot_labels(m, i, labels, sizeof labels);
        put_hist(t, "zbso_http_request_duration_seconds", labels, &h);
    }
}

/* ---- what a scrape reads from the database ---- */

typedef struct job_row {
    char job_id[ZBSO_ID_MAX + 1];
    zbso_stage stage;
    bool has_min_cost;
    double min_cost;
    int64_t trials[3];           /* by zbso_trial_status */
    double energy_j, time_s;     /* sums over the Succeeded trials */
} job_row;

typedef struct scrape {
    bool per_job;
    store_counts counts;
    job_row *jobs;               /* per_job: the first METRICS_JOBS_MAX jobs by id */
    size_t n_jobs, cap_jobs;
} scrape;

static int keep_job(void *ctx, const zbso_job *job)
{
    scrape *s = ctx;
    if (s->n_jobs == s->cap_jobs) {
        size_t cap = s->cap_jobs ? 2 * s->cap_jobs : 64;
        if (cap > METRICS_JOBS_MAX)
            cap = METRICS_JOBS_MAX;
        job_row *v = realloc(s->jobs, cap * sizeof *v);
        if (!v)
            return ZBSO_ENOMEM;
        s->jobs = v;
        s->cap_jobs = cap;
    }
    job_row *r = &s->jobs[s->n_jobs++];
    memset(r, 0, sizeof *r);
    memcpy(r->job_id, job->spec.job_id, sizeof r->job_id);
    r->stage = job->stage;
    r->has_min_cost = job->has_min_cost;
    r->min_cost = job->min_cost;
    return 0;
}

static int count_trial(void *ctx, const zbso_trial *t)
{
    job_row *r = ctx;
    if ((unsigned)t->status < 3)
        r->trials[t->status]++;
    if (t->status == ZBSO_TRIAL_SUCCEEDED) {
        r->energy_j += t->energy;
        r->time_s += t->time;
    }
    return 0;
}

/* The read unit of a scrape: the counts, and with per_job each listed job's trials. May
 * run again (PostgreSQL), so it starts from nothing each time. */
static int scrape_fn(store_txn *t, void *arg, zbso_err *err)
{
    scrape *s = arg;
    s->n_jobs = 0;
    memset(&s->counts, 0, sizeof s->counts);
    int rc = store_counts_get(t, &s->counts, err);
    if (rc < 0 || !s->per_job)
        return rc;
    store_job_query q = {.prefix = NULL, .after = NULL, .limit = METRICS_JOBS_MAX};
    rc = store_jobs_list(t, &q, keep_job, s, err);
    if (rc == ZBSO_ENOMEM)
        return err_set(err, rc, "out of memory listing jobs for /metrics");
    store_trial_query all = {0};
    for (size_t i = 0; rc == 0 && i < s->n_jobs; i++)
        rc = store_trials_list(t, s->jobs[i].job_id, &all, count_trial, &s->jobs[i], err);
    return rc;
}

static const char *const status_names[3] = {"Dispatched", "Succeeded", "Failed"};
static const char *const type_names[3] = {"Exploration", "Concurrent", "MAB"};

static void put_counts(text *t, const scrape *s, bool readable)
{
    family(t, "zbso_store_readable", "gauge",
           "1 when this scrape read the job and trial counts from the database, 0 when "
           "that failed (zbso_jobs and zbso_trials are then left out).");
    put(t, "zbso_store_readable %d\n", readable ? 1 : 0);
    if (!readable)
        return;
    family(t, "zbso_jobs", "gauge", "Jobs in the database.");
    put(t, "zbso_jobs %" PRId64 "\n", s->counts.jobs);
    family(t, "zbso_trials", "gauge", "Trials in the database, by type and status.");
    for (int ty = 0; ty < 3; ty++)
        for (int st = 0; st < 3; st++)
            put(t, "zbso_trials{type=\"%s\",status=\"%s\"} %" PRId64 "\n", type_names[ty],
                status_names[st], s->counts.trials[ty][st]);
}

/* Starts a per-job sample: `name{job_id="<escaped>"`; the caller ends it. */
static void job_sample(text *t, const char *name, const job_row *r)
{
    put(t, "%s{job_id=\"", name);
    put_label_value(t, r->job_id);
    put(t, "\"");
}

static void put_per_job(text *t, const scrape *s)
{
    char v[OPT_FMT_DOUBLE_MAX];
    family(t, "zbso_metrics_jobs_omitted", "gauge",
           "Jobs left out of the per-job series (at most 10000 jobs, the first by id, have "
           "them).");
    put(t, "zbso_metrics_jobs_omitted %" PRId64 "\n",
        s->counts.jobs > (int64_t)s->n_jobs ? s->counts.jobs - (int64_t)s->n_jobs : 0);
    family(t, "zbso_job_info", "gauge", "One per job, with its stage (Pruning or MAB).");
    for (size_t i = 0; i < s->n_jobs; i++) {
        job_sample(t, "zbso_job_info", &s->jobs[i]);
        put(t, ",stage=\"%s\"} 1\n", zbso_stage_name(s->jobs[i].stage));
    }
    family(t, "zbso_job_trials", "gauge", "A job's trials by status.");
    for (size_t i = 0; i < s->n_jobs; i++)
        for (int st = 0; st < 3; st++) {
            job_sample(t, "zbso_job_trials", &s->jobs[i]);
            put(t, ",status=\"%s\"} %" PRId64 "\n", status_names[st], s->jobs[i].trials[st]);
        }
    family(t, "zbso_job_min_cost", "gauge",
           "A job's lowest cost of a converged trial (jobs that have one).");
    for (size_t i = 0; i < s->n_jobs; i++) {
        if (!s->jobs[i].has_min_cost)
            continue;
        job_sample(t, "zbso_job_min_cost", &s->jobs[i]);
        put(t, "} %s\n", num(v, s->jobs[i].min_cost));
    }
    family(t, "zbso_job_energy_joules", "gauge",
           "Energy of a job's Succeeded trials as reported, summed.");
    for (size_t i = 0; i < s->n_jobs; i++) {
        job_sample(t, "zbso_job_energy_joules", &s->jobs[i]);
        put(t, "} %s\n", num(v, s->jobs[i].energy_j));
    }
    family(t, "zbso_job_training_seconds", "gauge",
           "Training time of a job's Succeeded trials as reported, summed.");
    for (size_t i = 0; i < s->n_jobs; i++) {
        job_sample(t, "zbso_job_training_seconds", &s->jobs[i]);
        put(t, "} %s\n", num(v, s->jobs[i].time_s));
    }
}

static void put_store(text *t, store *st)
{
    store_stats ss;
    uint64_t written = 0, dropped = 0, buffered = 0;
    store_stats_get(st, &ss);
    store_curve_stats(st, &written, &dropped, &buffered);
    family(t, "zbso_store_unit_duration_seconds", "histogram",
           "Time a unit of work took as its request saw it: kind=\"write\" (queueing for "
           "the writer and the durable commit included) or \"read\" (a snapshot).");
    put_hist(t, "zbso_store_unit_duration_seconds", "kind=\"write\",", &ss.write);
    put_hist(t, "zbso_store_unit_duration_seconds", "kind=\"read\",", &ss.read);
    family(t, "zbso_store_reruns_total", "counter",
           "Units of work run again after a serialization failure, a deadlock or a "
           "concurrent insert (PostgreSQL; always 0 on SQLite).");
    put(t, "zbso_store_reruns_total %" PRIu64 "\n", ss.reruns);
    family(t, "zbso_curve_points_written_total", "counter",
           "Per-epoch report points written to the database.");
    put(t, "zbso_curve_points_written_total %" PRIu64 "\n", written);
    family(t, "zbso_curve_points_dropped_total", "counter",
           "Per-epoch report points dropped: the buffer was full or their write failed.");
    put(t, "zbso_curve_points_dropped_total %" PRIu64 "\n", dropped);
    family(t, "zbso_curve_points_buffered", "gauge",
           "Per-epoch report points waiting in memory to be written.");
    put(t, "zbso_curve_points_buffered %" PRIu64 "\n", buffered);
}

/* The lease figures that let an alert find trials held past their lease: the timeout
 * itself, and the least recent renewal of a Dispatched trial (absent when none is). */
static void put_lease(text *t, const scrape *s, bool readable, double lease_timeout_s)
{
    char v[OPT_FMT_DOUBLE_MAX];
    family(t, "zbso_trial_lease_timeout_seconds", "gauge",
           "How long a Dispatched trial's lease lasts without a report "
           "(ZEUS_BSO_TRIAL_TIMEOUT); 0: leases are off.");
    put(t, "zbso_trial_lease_timeout_seconds %s\n", num(v, lease_timeout_s));
    if (!readable || !s->counts.has_oldest_lease)
        return;
    family(t, "zbso_trial_oldest_lease_renewal_timestamp_seconds", "gauge",
           "Unix time of the least recent lease renewal (dispatch or report) of any "
           "Dispatched trial; absent when no trial is Dispatched. time() minus this, over "
           "zbso_trial_lease_timeout_seconds, is a trial held past its lease.");
    put(t, "zbso_trial_oldest_lease_renewal_timestamp_seconds %" PRId64 "\n",
        s->counts.oldest_lease_renewed_at);
}

static void put_service(text *t, const svc_stats *ss, const opt_footprint *footprint)
{
    char v[OPT_FMT_DOUBLE_MAX];
    family(t, "zbso_trials_dispatched_total", "counter", "Trials dispatched, by type.");
    for (int ty = 0; ty < 3; ty++)
        put(t, "zbso_trials_dispatched_total{type=\"%s\"} %" PRIu64 "\n", type_names[ty],
            load(&ss->dispatched[ty]));
    family(t, "zbso_trials_finished_total", "counter",
           "Trials ended, by status and why: Succeeded by their final report (target_reached, "
           "cost_bound, max_epochs), Failed by PATCH /trials (ended) or the lease timeout "
           "(lease_expired).");
    for (int r = ZBSO_STOP_TARGET_REACHED; r <= ZBSO_STOP_LEASE_EXPIRED; r++) {
        int st = r <= ZBSO_STOP_MAX_EPOCHS ? ZBSO_TRIAL_SUCCEEDED : ZBSO_TRIAL_FAILED;
        put(t, "zbso_trials_finished_total{status=\"%s\",stop_reason=\"%s\"} %" PRIu64 "\n",
            status_names[st], zbso_stop_reason_name((zbso_stop_reason)r),
            load(&ss->stopped[r]));
    }
    family(t, "zbso_trial_lease_expiries_total", "counter",
           "Dispatched trials Failed because their lease ran out (ZEUS_BSO_TRIAL_TIMEOUT).");
    put(t, "zbso_trial_lease_expiries_total %" PRIu64 "\n", load(&ss->lease_expiries));
    family(t, "zbso_reported_energy_joules_total", "counter",
           "Final energy of every trial that Succeeded, as reported; rate() over a window "
           "longer than a trial is the average power of the training this server steers.");
    put(t, "zbso_reported_energy_joules_total %s\n",
        num(v, atomic_load_explicit(&ss->energy_j, memory_order_relaxed)));
    family(t, "zbso_energy_joules_total", "counter",
           "Energy of every trial that Succeeded, in joules (the same sum as "
           "zbso_reported_energy_joules_total, under the name of issue 25).");
    put(t, "zbso_energy_joules_total %s\n",
        num(v, atomic_load_explicit(&ss->energy_j, memory_order_relaxed)));
    /* Absent without an intensity anywhere: from the start with the server's, else from
     * the first trial of a job with its own. */
    if ((footprint != NULL && footprint->has_intensity) || load(&ss->co2e_trials) > 0) {
        family(t, "zbso_co2e_grams_total", "counter",
               "CO2e of the energy of every trial that Succeeded, in grams, at its job's "
               "grid intensity (the job's own, else the server's) over its interval.");
        put(t, "zbso_co2e_grams_total %s\n",
            num(v, atomic_load_explicit(&ss->co2e_g, memory_order_relaxed)));
    }
    family(t, "zbso_reported_training_seconds_total", "counter",
           "Final training time of every trial that Succeeded, as reported.");
    put(t, "zbso_reported_training_seconds_total %s\n",
        num(v, atomic_load_explicit(&ss->time_s, memory_order_relaxed)));
}

/* The number of open descriptors (entries of /proc/self/fd but the one reading it), or
 * -1. */
static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    long n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1;
}

static void put_process(text *t, const http_metrics *m)
{
    char v[OPT_FMT_DOUBLE_MAX], statm[256];
    struct rusage ru;
    struct rlimit rl;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
        family(t, "process_cpu_seconds_total", "counter",
               "Total user and system CPU time spent in seconds.");
        put(t, "process_cpu_seconds_total %s\n", num(v, cpu));
    }
    unsigned long long vm_pages, rss_pages;
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0 && read_small("/proc/self/statm", statm, sizeof statm) > 0 &&
        sscanf(statm, "%llu %llu", &vm_pages, &rss_pages) == 2) {
        family(t, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
        put(t, "process_resident_memory_bytes %llu\n", rss_pages * (unsigned long long)page);
        family(t, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
        put(t, "process_virtual_memory_bytes %llu\n", vm_pages * (unsigned long long)page);
    }
    long fds = open_fds();
    if (fds >= 0) {
        family(t, "process_open_fds", "gauge", "Number of open file descriptors.");
        put(t, "process_open_fds %ld\n", fds);
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        family(t, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
        put(t, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
    }
    family(t, "process_start_time_seconds", "gauge",
           "Start time of the process since unix epoch in seconds.");
    put(t, "process_start_time_seconds %s\n", num(v, m->start_time_s));
}

int http_metrics_render(http_metrics *m, store *st, const svc_env *env, char **out,
                        size_t *len, zbso_err *err)
{
    text t = {.rc = 0};
    scrape s = {.per_job = m->per_job};
    zbso_err rerr;
    int rc;
    buf_init(&t.b, METRICS_TEXT_MAX);
    err_clear(&rerr);
    bool readable = store_exec_read(st, scrape_fn, &s, &rerr) == 0;
    if (!readable)
        log_limited(&m->read_log, ZLOG_WARN, "GET /metrics: cannot read the job and trial "
                    "counts: %s", rerr.msg);

    family(&t, "zbso_build_info", "gauge", "1, with the zbso version and the store backend.");
    put(&t, "zbso_build_info{version=\"");
    put_label_value(&t, m->version);
    put(&t, "\",backend=\"%s\"} 1\n", st->backend->name);
    put_requests(&t, m);
    put_store(&t, st);
    put_counts(&t, &s, readable);
    put_lease(&t, &s, readable, env ? env->trial_timeout_s : 0.0);
    if (readable && m->per_job)
        put_per_job(&t, &s);
    if (env && env->stats)
        put_service(&t, env->stats, env->footprint);
    put_process(&t, m);
    free(s.jobs);

    if (t.rc == ZBSO_ETOOBIG) {
        rc = err_set(err, t.rc, "the /metrics text is over %zu bytes%s", METRICS_TEXT_MAX,
                     m->per_job ? " (--metrics-per-job with many jobs)" : "");
        goto out;
    }
    if (t.rc < 0) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory building the /metrics text");
        goto out;
    }
    *out = buf_take(&t.b, len);
    rc = 0;
out:
    buf_free(&t.b);
    return rc;
}

void http_metrics_get(const http_ctx *ctx, struct MHD_Connection *c, const char *body,
                      size_t len, http_reply *r)
{
    char *doc = NULL;
    size_t n = 0;
    int rc = http_metrics_render(ctx->metrics, ctx->st, ctx->env, &doc, &n, &r->err);
    if (rc < 0) {
        http_reply_error(r, rc);
        return;
    }
    r->status = 200;
    r->body = doc;
    r->len = n;
    r->body_static = false;
    r->content_type = METRICS_CONTENT_TYPE;
}
