/* loadgen.c: zbso-loadgen plays K concurrent recurring training jobs against a running zbso
 * server (SPEC §2 wire protocol) and prints per-endpoint throughput and latency percentiles.
 * A client only: it talks HTTP, never touches the server's database or links server code. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#define MAX_JOBS 1024
#define MAX_BATCH_SIZES 32
#define URL_MAX 1024
#define TEXT_MAX 256             /* job ids, gpu model, token */
#define REQ_MAX 4096             /* request body bytes */
#define RESP_MAX (64 * 1024)     /* response body bytes; more is an error */
#define ERROR_MAX 512
#define SAMPLES_INIT 1024
#define SAMPLES_MAX (1u << 18)   /* latency samples kept per job and endpoint (reservoir) */
#define STATUS_MAX 600
#define TARGET_METRIC 0.5
#define EXTRA_EPOCHS 5           /* reports past max_epochs before the server is at fault */
#define ERRORS_SHOWN 10

enum endpoint { EP_REGISTER, EP_NEXT, EP_REPORT, EP_END, EP_COUNT };
static const char *const ep_names[EP_COUNT] = {
    "POST /jobs", "GET /jobs/batch_size", "POST /report", "PATCH /trials",
};

struct options {
    char url[URL_MAX + 1];
    long jobs;
    double duration_s;
    uint64_t seed;
    char token[TEXT_MAX + 1];
    int64_t batch_sizes[MAX_BATCH_SIZES];
    size_t n_batch_sizes;
    int64_t default_batch_size;
    int64_t max_epochs;
    int has_beta_knob;
    double beta_knob;
    double eta_knob;
    double max_power_w;
    int64_t number_of_gpus;
    char gpu_model[TEXT_MAX + 1];
    int64_t window_size;
};

/* Latencies in microseconds: all of them up to SAMPLES_MAX, then a uniform reservoir. */
struct samples {
    uint32_t *us;
    size_t n, cap;
    uint64_t seen;
};

struct ep_stats {
    struct samples lat;
    uint64_t count;                 /* requests that got an answer */
    uint64_t status[STATUS_MAX];    /* answers by HTTP status */
    uint64_t conn_errors;           /* requests that got no answer */
};

/* One simulated job: its thread, its keep-alive handle, its statistics. */
struct worker {
    int k;
    const struct options *opt;
    char job_id[TEXT_MAX + 1];
    char prefix[TEXT_MAX + 1];
    double job_scale;               /* this job's hardware speed factor */
    uint64_t rng;                   /* splitmix64 state for the synthetic model */
    pthread_t tid;
    int started;
    CURL *curl;
    struct curl_slist *headers;
    char resp[RESP_MAX + 1];
    size_t resp_len;
    int resp_overflow;
    char curl_err[CURL_ERROR_SIZE];
    struct ep_stats ep[EP_COUNT];
    uint64_t trials, converged, not_converged, cut;
    char error[ERROR_MAX];          /* the error that stopped this job, "" when none */
};

static atomic_int stop_requested;
static double deadline_s;

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&stop_requested, 1);
}

/* Returns the monotonic clock in seconds. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* splitmix64: returns the next 64 random bits of *state. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Returns a uniform double in [0, 1). */
static double uniform(uint64_t *state)
{
    return (double)(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* Records one latency. Grows the array up to SAMPLES_MAX (a failed growth keeps the current
 * size), then replaces a uniformly chosen sample (Algorithm R). */
static void samples_add(struct samples *s, uint32_t us, uint64_t *rng)
{
    s->seen++;
    if (s->n == s->cap && s->cap < SAMPLES_MAX) {
        size_t cap = s->cap ? s->cap * 2 : SAMPLES_INIT;
        uint32_t *grown = realloc(s->us, cap * sizeof *grown);
        if (grown != NULL) {
            s->us = grown;
            s->cap = cap;
        }
    }
    if (s->n < s->cap) {
        s->us[s->n++] = us;
        return;
    }
    if (s->n == 0)
        return;
    uint64_t j = splitmix64(rng) % s->seen;
    if (j < s->n)
        s->us[j] = us;
}

/* The synthetic training model of one batch size: seconds per epoch, watts, and the epoch
 * at which the metric reaches the target (0: never). Small batches converge in few epochs
 * but run slowly (16 exceeds beta * min_cost), 128..256 are cheapest, 512 and larger never
 * converge (they run to max_epochs or past beta * min_cost). */
struct bs_model {
    double epoch_s;
    double power_w;
    int epochs_to_target;
};

static struct bs_model model_of(int64_t bs, double job_scale, double max_power_w)
{
    struct bs_model m;
    double b = (double)bs;
    m.epoch_s = (2.0 + 256.0 / b) * job_scale;
    m.power_w = fmin(max_power_w, 120.0 + 180.0 * b / (b + 128.0));
    m.epochs_to_target = bs <= 64 ? 4 : bs <= 128 ? 5 : bs <= 256 ? 6 : 0;
    return m;
}

/* Returns the validation metric after epoch (1-based): rises to the target at
 * epochs_to_target, or levels off below it when the batch size never converges. */
static double model_metric(const struct bs_model *m, int64_t epoch)
{
    double e = (double)epoch;
    if (m->epochs_to_target == 0)
        return 0.9 * TARGET_METRIC * (1.0 - exp(-e / 3.0));
    if (epoch < m->epochs_to_target)
        return TARGET_METRIC * e / (double)m->epochs_to_target;
    return TARGET_METRIC + 0.01 * (e - (double)m->epochs_to_target + 1.0);
}

/* Records the first error of w; the job stops after it and the run exits 1. */
static void worker_fail(struct worker *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void worker_fail(struct worker *w, const char *fmt, ...)
{
    if (w->error[0] != '\0')
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->error, sizeof w->error, fmt, ap);
    va_end(ap);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct worker *w = arg;
    size_t n = size * nmemb;
    if (n > RESP_MAX - w->resp_len) {
        w->resp_overflow = 1;
        return 0;
    }
    memcpy(w->resp + w->resp_len, data, n);
    w->resp_len += n;
    w->resp[w->resp_len] = '\0';
    return n;
}

/* Sets up w's reusable handle. Returns 0, or -1 (error recorded) when curl fails. */
static int worker_open(struct worker *w)
{
    char auth[TEXT_MAX + 32];
    struct curl_slist *h = NULL, *next;
    w->curl = curl_easy_init();
    if (w->curl == NULL) {
        worker_fail(w, "curl_easy_init failed");
        return -1;
    }
    const char *lines[3] = {"Content-Type: application/json", "Expect:", NULL};
    if (w->opt->token[0] != '\0') {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", w->opt->token);
        lines[2] = auth;
    }
    for (size_t i = 0; i < 3; i++) {
        if (lines[i] == NULL)
            continue;
        next = curl_slist_append(h, lines[i]);
        if (next == NULL) {
            curl_slist_free_all(h);
            worker_fail(w, "out of memory building request headers");
            return -1;
        }
        h = next;
    }
    w->headers = h;
    curl_easy_setopt(w->curl, CURLOPT_HTTPHEADER, w->headers);
    curl_easy_setopt(w->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(w->curl, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(w->curl, CURLOPT_ERRORBUFFER, w->curl_err);
    curl_easy_setopt(w->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(w->curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(w->curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(w->curl, CURLOPT_TIMEOUT_MS, 30000L);
    return 0;
}

/* Sends one request on w's handle (body NULL for GET) and records its latency and status
 * under ep. Returns the HTTP status with the body in w->resp, or -1 when no answer came
 * (transport error recorded). A non-2xx status is recorded as w's error. */
static long request(struct worker *w, enum endpoint ep, const char *method, const char *url,
                    const char *body)
{
    struct ep_stats *st = &w->ep[ep];
    long status = 0;
    w->resp_len = 0;
    w->resp[0] = '\0';
    w->resp_overflow = 0;
    w->curl_err[0] = '\0';
    curl_easy_setopt(w->curl, CURLOPT_URL, url);
    curl_easy_setopt(w->curl, CURLOPT_CUSTOMREQUEST, NULL);
    if (body == NULL) {
        curl_easy_setopt(w->curl, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(w->curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(w->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
        if (strcmp(method, "POST") != 0)
            curl_easy_setopt(w->curl, CURLOPT_CUSTOMREQUEST, method);
    }
    double t0 = now_s();
    CURLcode rc = curl_easy_perform(w->curl);
    double dt = now_s() - t0;
    if (rc != CURLE_OK) {
        st->conn_errors++;
        if (w->resp_overflow)
            worker_fail(w, "%s %s: response body over %d bytes", method, url, RESP_MAX);
        else
            worker_fail(w, "%s %s: %s", method, url,
                        w->curl_err[0] ? w->curl_err : curl_easy_strerror(rc));
        return -1;
    }
    curl_easy_getinfo(w->curl, CURLINFO_RESPONSE_CODE, &status);
    st->count++;
    if (status >= 0 && status < STATUS_MAX)
        st->status[status]++;
    double us = dt * 1e6;
    samples_add(&st->lat, us >= 4294967295.0 ? UINT32_MAX : (uint32_t)us, &w->rng);
    if (status < 200 || status > 299)
        worker_fail(w, "%s %s answered %ld: %.300s", method, url, status, w->resp);
    return status;
}

/* Serializes j (taking its reference) into out. Returns 0, or -1 when j is NULL or the text
 * does not fit in REQ_MAX bytes. */
static int dump_json(json_t *j, char out[REQ_MAX])
{
    if (j == NULL)
        return -1;
    size_t n = json_dumpb(j, out, REQ_MAX - 1, JSON_COMPACT);
    json_decref(j);
    if (n == 0 || n >= REQ_MAX - 1)
        return -1;
    out[n] = '\0';
    return 0;
}

/* POST /jobs for w. Returns 0, or -1 with the error recorded. */
static int register_job(struct worker *w)
{
    const struct options *o = w->opt;
    char url[URL_MAX + 64], body[REQ_MAX];
    json_t *bs = json_array();
    for (size_t i = 0; bs != NULL && i < o->n_batch_sizes; i++)
        json_array_append_new(bs, json_integer(o->batch_sizes[i]));
    json_t *spec = bs == NULL ? NULL : json_pack(
        "{s:s, s:s, s:o, s:I, s:f, s:o, s:f, s:b, s:I, s:I, s:I, s:f, s:I, s:s}",
        "job_id", w->job_id, "job_id_prefix", w->prefix, "batch_sizes", bs,
        "default_batch_size", (json_int_t)o->default_batch_size, "eta_knob", o->eta_knob,
        "beta_knob", o->has_beta_knob ? json_real(o->beta_knob) : json_null(),
        "target_metric", TARGET_METRIC, "higher_is_better_metric", 1,
        "max_epochs", (json_int_t)o->max_epochs, "window_size", (json_int_t)o->window_size,
        "mab_seed", (json_int_t)w->k, "max_power", o->max_power_w,
        "number_of_gpus", (json_int_t)o->number_of_gpus, "gpu_model", o->gpu_model);
    if (dump_json(spec, body) != 0) {
        worker_fail(w, "cannot build the job spec body (out of memory or over %d bytes)",
                    REQ_MAX);
        return -1;
    }
    snprintf(url, sizeof url, "%s/jobs", o->url);
    long status = request(w, EP_REGISTER, "POST", url, body);
    return status >= 200 && status <= 299 ? 0 : -1;
}

/* GET /jobs/batch_size. Returns 0 with *bs and *trial set (OUT), or -1 (error recorded). */
static int next_batch_size(struct worker *w, int64_t *bs, int64_t *trial)
{
    char url[URL_MAX + 2 * TEXT_MAX + 64];
    json_error_t jerr;
    json_int_t b = 0, t = 0;
    int ret = -1;
    snprintf(url, sizeof url, "%s/jobs/batch_size?job_id=%s", w->opt->url, w->job_id);
    long status = request(w, EP_NEXT, "GET", url, NULL);
    if (status < 200 || status > 299)
        return -1;
    json_t *root = json_loadb(w->resp, w->resp_len, 0, &jerr);
    if (root == NULL || json_unpack_ex(root, &jerr, 0, "{s:I, s:I}", "batch_size", &b,
                                       "trial_number", &t) != 0) {
        worker_fail(w, "GET /jobs/batch_size: unexpected answer (%s): %.200s", jerr.text,
                    w->resp);
        goto out;
    }
    *bs = b;
    *trial = t;
    ret = 0;
out:
    json_decref(root);
    return ret;
}

/* POST /report. Returns 0 with *stop and *converged set (OUT), or -1 (error recorded). */
static int report(struct worker *w, int64_t bs, int64_t trial, double time_s, double energy_j,
                  double metric, int64_t epoch, int *stop, int *converged)
{
    char url[URL_MAX + 64], body[REQ_MAX];
    json_error_t jerr;
    int ret = -1;
    json_t *j = json_pack("{s:s, s:I, s:I, s:f, s:f, s:f, s:I}", "job_id", w->job_id,
                          "batch_size", (json_int_t)bs, "trial_number", (json_int_t)trial,
                          "time", time_s, "energy", energy_j, "metric", metric,
                          "current_epoch", (json_int_t)epoch);
    if (dump_json(j, body) != 0) {
        worker_fail(w, "cannot build a report body");
        return -1;
    }
    snprintf(url, sizeof url, "%s/report", w->opt->url);
    long status = request(w, EP_REPORT, "POST", url, body);
    if (status < 200 || status > 299)
        return -1;
    json_t *root = json_loadb(w->resp, w->resp_len, 0, &jerr);
    if (root == NULL || json_unpack_ex(root, &jerr, 0, "{s:b, s:b}", "stop_train", stop,
                                       "converged", converged) != 0) {
        worker_fail(w, "POST /report: unexpected answer (%s): %.200s", jerr.text, w->resp);
        goto out;
    }
    ret = 0;
out:
    json_decref(root);
    return ret;
}

/* PATCH /trials. Returns 0, or -1 (error recorded). */
static int end_trial(struct worker *w, int64_t bs, int64_t trial)
{
    char url[URL_MAX + 64], body[REQ_MAX];
    json_t *j = json_pack("{s:s, s:I, s:I}", "job_id", w->job_id, "batch_size", (json_int_t)bs,
                          "trial_number", (json_int_t)trial);
    if (dump_json(j, body) != 0) {
        worker_fail(w, "cannot build a trial id body");
        return -1;
    }
    snprintf(url, sizeof url, "%s/trials", w->opt->url);
    long status = request(w, EP_END, "PATCH", url, body);
    return status >= 200 && status <= 299 ? 0 : -1;
}

/* Runs one training recurrence: reports each epoch until the server says stop, then ends
 * the trial. On SIGINT it ends the trial early (the server marks it Failed). Returns 0, or
 * -1 (error recorded) when the job cannot go on. */
static int run_trial(struct worker *w)
{
    const struct options *o = w->opt;
    int64_t bs, trial;
    double time_s = 0.0, energy_j = 0.0;
    int stop = 0, converged = 0;
    if (next_batch_size(w, &bs, &trial) != 0)
        return -1;
    struct bs_model m = model_of(bs, w->job_scale, o->max_power_w);
    for (int64_t epoch = 1; !stop; epoch++) {
        if (atomic_load(&stop_requested)) {
            w->cut++;
            return end_trial(w, bs, trial);
        }
        if (epoch > o->max_epochs + EXTRA_EPOCHS) {
            worker_fail(w, "trial %" PRId64 " of %s: no stop_train after %" PRId64
                        " epochs (max_epochs %" PRId64 ")", trial, w->job_id, epoch - 1,
                        o->max_epochs);
            return -1;
        }
        double epoch_s = m.epoch_s * (0.95 + 0.1 * uniform(&w->rng));
        time_s += epoch_s;
        energy_j += epoch_s * m.power_w * (double)o->number_of_gpus;
        if (report(w, bs, trial, time_s, energy_j, model_metric(&m, epoch), epoch, &stop,
                   &converged) != 0)
            return -1;
    }
    w->trials++;
    if (converged)
        w->converged++;
    else
        w->not_converged++;
    return end_trial(w, bs, trial);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    if (worker_open(w) != 0 || register_job(w) != 0)
        return NULL;
    while (!atomic_load(&stop_requested) && now_s() < deadline_s)
        if (run_trial(w) != 0)
            break;
    return NULL;
}

static void worker_close(struct worker *w)
{
    if (w->curl != NULL)
        curl_easy_cleanup(w->curl);
    curl_slist_free_all(w->headers);
    for (size_t e = 0; e < EP_COUNT; e++)
        free(w->ep[e].lat.us);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Returns the nearest-rank q-quantile (0 < q <= 1) of n sorted values in milliseconds. */
static double quantile_ms(const uint32_t *sorted, size_t n, double q)
{
    size_t rank = (size_t)ceil(q * (double)n);
    if (rank < 1)
        rank = 1;
    return (double)sorted[rank - 1] / 1000.0;
}

/* Merges the workers' statistics and prints the table. Returns 0, or -1 when out of
 * memory. */
static int print_report(struct worker *ws, long n_workers, double elapsed_s)
{
    uint64_t total = 0, total_conn = 0, total_non2xx = 0;
    uint64_t trials = 0, conv = 0, nconv = 0, cut = 0;
    int ret = -1;
    uint32_t *merged = NULL;
    printf("%-22s %10s %11s %9s %9s %9s %8s %9s\n", "endpoint", "count", "requests/s",
           "p50 ms", "p90 ms", "p99 ms", "non-2xx", "conn-err");
    for (size_t e = 0; e < EP_COUNT; e++) {
        uint64_t count = 0, conn = 0, non2xx = 0;
        size_t n = 0;
        for (long k = 0; k < n_workers; k++) {
            count += ws[k].ep[e].count;
            conn += ws[k].ep[e].conn_errors;
            n += ws[k].ep[e].lat.n;
            for (size_t s = 0; s < STATUS_MAX; s++)
                if (s < 200 || s > 299)
                    non2xx += ws[k].ep[e].status[s];
        }
        free(merged);
        merged = malloc((n ? n : 1) * sizeof *merged);
        if (merged == NULL)
            goto out;
        n = 0;
        for (long k = 0; k < n_workers; k++) {
            if (ws[k].ep[e].lat.n > 0)
                memcpy(merged + n, ws[k].ep[e].lat.us, ws[k].ep[e].lat.n * sizeof *merged);
            n += ws[k].ep[e].lat.n;
        }
        qsort(merged, n, sizeof *merged, cmp_u32);
        printf("%-22s %10" PRIu64 " %11.1f", ep_names[e], count, (double)count / elapsed_s);
        if (n > 0)
            printf(" %9.3f %9.3f %9.3f", quantile_ms(merged, n, 0.50),
                   quantile_ms(merged, n, 0.90), quantile_ms(merged, n, 0.99));
        else
            printf(" %9s %9s %9s", "-", "-", "-");
        printf(" %8" PRIu64 " %9" PRIu64 "\n", non2xx, conn);
        if (n < count)
            printf("%-22s (percentiles from a uniform sample of %zu)\n", "", n);
        total += count;
        total_conn += conn;
        total_non2xx += non2xx;
    }
    printf("%-22s %10" PRIu64 " %11.1f %9s %9s %9s %8" PRIu64 " %9" PRIu64 "\n", "total", total,
           (double)total / elapsed_s, "", "", "", total_non2xx, total_conn);
    for (long k = 0; k < n_workers; k++) {
        trials += ws[k].trials;
        conv += ws[k].converged;
        nconv += ws[k].not_converged;
        cut += ws[k].cut;
    }
    printf("trials: %" PRIu64 " finished (%" PRIu64 " converged, %" PRIu64
           " stopped without converging), %" PRIu64 " cut short by a signal\n",
           trials, conv, nconv, cut);
    if (total_non2xx > 0) {
        printf("non-2xx answers:");
        for (size_t e = 0; e < EP_COUNT; e++)
            for (size_t s = 0; s < STATUS_MAX; s++) {
                uint64_t c = 0;
                if (s >= 200 && s <= 299)
                    continue;
                for (long k = 0; k < n_workers; k++)
                    c += ws[k].ep[e].status[s];
                if (c > 0)
                    printf(" %s %zu x%" PRIu64 ";", ep_names[e], s, c);
            }
        printf("\n");
    }
    ret = 0;
out:
    free(merged);
    return ret;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: zbso-loadgen [options]\n"
            "Plays K concurrent recurring jobs against a running zbso server and prints\n"
            "requests/s and latency percentiles per endpoint. A job stops at its first\n"
            "non-2xx answer, connection error or protocol error, and the run then exits 1\n"
            "(2 on a usage error).\n"
            "  --url URL               server (http://127.0.0.1:8000)\n"
            "  --jobs K                concurrent jobs, one thread each (4; at most %d)\n"
            "  --duration S            seconds to start new trials for (10)\n"
            "  --seed N                seed of the synthetic training model (1)\n"
            "  --token T               bearer token (default: $ZEUS_BSO_API_TOKEN)\n"
            "  --batch-sizes LIST      comma-separated (16,32,64,128,256,512,1024)\n"
            "  --default-batch-size B  (128)\n"
            "  --max-epochs N          (10)\n"
            "  --beta-knob X|none      (2.0)\n"
            "  --eta-knob X            (0.5)\n"
            "  --max-power W           (300)\n"
            "  --number-of-gpus N      (1)\n"
            "  --gpu-model NAME        (sim)\n"
            "  --window-size N         (10)\n"
            "Job k registers job_id load<k>-<run nonce> with job_id_prefix load<k> and\n"
            "mab_seed k.\n",
            MAX_JOBS);
}

/* Parses a whole decimal integer in [lo, hi]. Returns 0, or -1 when text is not one. */
static int parse_int(const char *text, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Parses a whole finite number in [lo, hi]. Returns 0, or -1 when text is not one. */
static int parse_num(const char *text, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Parses "16,32,64" into o->batch_sizes. Returns 0, or -1 when malformed or too many. */
static int parse_batch_sizes(const char *text, struct options *o)
{
    char buf[URL_MAX + 1];
    char *save = NULL;
    long long v;
    if (strlen(text) > URL_MAX)
        return -1;
    strcpy(buf, text);
    o->n_batch_sizes = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (o->n_batch_sizes == MAX_BATCH_SIZES || parse_int(tok, 1, INT32_MAX, &v) != 0)
            return -1;
        o->batch_sizes[o->n_batch_sizes++] = v;
    }
    return o->n_batch_sizes > 0 ? 0 : -1;
}

/* Copies text into a buffer of TEXT_MAX + 1 (or URL_MAX + 1) bytes. Returns 0, or -1 when
 * it does not fit. */
static int copy_text(char *dst, size_t size, const char *text)
{
    if (strlen(text) >= size)
        return -1;
    strcpy(dst, text);
    return 0;
}

/* Fills o from argv. Returns 0 to run, 1 after --help, or -1 after printing a usage error. */
static int parse_options(int argc, char **argv, struct options *o)
{
    enum { O_URL = 256, O_JOBS, O_DURATION, O_SEED, O_TOKEN, O_BS, O_DEFAULT, O_EPOCHS,
           O_BETA, O_ETA, O_POWER, O_GPUS, O_MODEL, O_WINDOW, O_HELP };
    static const struct option longopts[] = {
        {"url", required_argument, NULL, O_URL},
        {"jobs", required_argument, NULL, O_JOBS},
        {"duration", required_argument, NULL, O_DURATION},
        {"seed", required_argument, NULL, O_SEED},
        {"token", required_argument, NULL, O_TOKEN},
        {"batch-sizes", required_argument, NULL, O_BS},
        {"default-batch-size", required_argument, NULL, O_DEFAULT},
        {"max-epochs", required_argument, NULL, O_EPOCHS},
        {"beta-knob", required_argument, NULL, O_BETA},
        {"eta-knob", required_argument, NULL, O_ETA},
        {"max-power", required_argument, NULL, O_POWER},
        {"number-of-gpus", required_argument, NULL, O_GPUS},
        {"gpu-model", required_argument, NULL, O_MODEL},
        {"window-size", required_argument, NULL, O_WINDOW},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    static const int64_t default_bs[] = {16, 32, 64, 128, 256, 512, 1024};
    const char *env_token = getenv("ZEUS_BSO_API_TOKEN");
    long long v;
    int c, bad = 0;

    memset(o, 0, sizeof *o);
    strcpy(o->url, "http://127.0.0.1:8000");
    o->jobs = 4;
    o->duration_s = 10.0;
    o->seed = 1;
    memcpy(o->batch_sizes, default_bs, sizeof default_bs);
    o->n_batch_sizes = sizeof default_bs / sizeof default_bs[0];
    o->default_batch_size = 128;
    o->max_epochs = 10;
    o->has_beta_knob = 1;
    o->beta_knob = 2.0;
    o->eta_knob = 0.5;
    o->max_power_w = 300.0;
    o->number_of_gpus = 1;
    strcpy(o->gpu_model, "sim");
    o->window_size = 10;
    if (env_token != NULL && copy_text(o->token, sizeof o->token, env_token) != 0) {
        fprintf(stderr, "zbso-loadgen: ZEUS_BSO_API_TOKEN is longer than %d bytes\n", TEXT_MAX);
        return -1;
    }
    while (!bad && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case O_URL:
            bad = copy_text(o->url, sizeof o->url, optarg) != 0
                  || strncmp(optarg, "http://", 7) != 0;
            break;
        case O_JOBS:
            bad = parse_int(optarg, 1, MAX_JOBS, &v) != 0;
            o->jobs = (long)v;
            break;
        case O_DURATION:
            bad = parse_num(optarg, 0.001, 86400.0, &o->duration_s) != 0;
            break;
        case O_SEED: {
            char *end;
            errno = 0;
            o->seed = strtoull(optarg, &end, 10);
            bad = end == optarg || *end != '\0' || errno != 0 || optarg[0] == '-';
            break;
        }
        case O_TOKEN:
            bad = copy_text(o->token, sizeof o->token, optarg) != 0;
            break;
        case O_BS:
            bad = parse_batch_sizes(optarg, o) != 0;
            break;
        case O_DEFAULT:
            bad = parse_int(optarg, 1, INT32_MAX, &v) != 0;
            o->default_batch_size = v;
            break;
        case O_EPOCHS:
            bad = parse_int(optarg, 1, 100000, &v) != 0;
            o->max_epochs = v;
            break;
        case O_BETA:
            o->has_beta_knob = strcmp(optarg, "none") != 0;
            bad = o->has_beta_knob && (parse_num(optarg, 0.0, 1e9, &o->beta_knob) != 0
                                       || o->beta_knob <= 0.0);
            break;
        case O_ETA:
            bad = parse_num(optarg, 0.0, 1.0, &o->eta_knob) != 0;
            break;
        case O_POWER:
            bad = parse_num(optarg, 1e-3, 1e7, &o->max_power_w) != 0;
            break;
        case O_GPUS:
            bad = parse_int(optarg, 1, 1024, &v) != 0;
            o->number_of_gpus = v;
            break;
        case O_MODEL:
            bad = copy_text(o->gpu_model, sizeof o->gpu_model, optarg) != 0 || optarg[0] == '\0';
            break;
        case O_WINDOW:
            bad = parse_int(optarg, 0, 1000000, &v) != 0;
            o->window_size = v;
            break;
        case O_HELP:
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return -1;
        }
        if (bad)
            fprintf(stderr, "zbso-loadgen: invalid value \"%s\" for --%s\n", optarg,
                    longopts[c - O_URL].name);
    }
    if (!bad && optind < argc) {
        fprintf(stderr, "zbso-loadgen: unexpected argument \"%s\"\n", argv[optind]);
        bad = 1;
    }
    if (bad)
        return -1;
    size_t len = strlen(o->url);
    while (len > 7 && o->url[len - 1] == '/')
        o->url[--len] = '\0';
    return 0;
}

int main(int argc, char **argv)
{
    struct options opt;
    struct worker *ws = NULL;
    struct sigaction sa;
    char nonce[16];
    int ret = 1, fatal = 0, shown = 0;
    long k;
    int parsed = parse_options(argc, argv, &opt);
    if (parsed != 0)
        return parsed > 0 ? 0 : 2;

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "zbso-loadgen: curl_global_init failed\n");
        return 1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    ws = calloc((size_t)opt.jobs, sizeof *ws);
    if (ws == NULL) {
        fprintf(stderr, "zbso-loadgen: out of memory for %ld jobs\n", opt.jobs);
        goto out;
    }
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t nonce_state = (uint64_t)rt.tv_sec * 1000000000ULL + (uint64_t)rt.tv_nsec
                           + ((uint64_t)getpid() << 32);
    snprintf(nonce, sizeof nonce, "%08" PRIx32, (uint32_t)splitmix64(&nonce_state));
    printf("zbso-loadgen: %ld jobs for %.1f s against %s (seed %" PRIu64 ", run %s)\n",
           opt.jobs, opt.duration_s, opt.url, opt.seed, nonce);
    fflush(stdout);

    double start = now_s();
    deadline_s = start + opt.duration_s;
    for (k = 0; k < opt.jobs; k++) {
        struct worker *w = &ws[k];
        w->k = (int)k;
        w->opt = &opt;
        snprintf(w->prefix, sizeof w->prefix, "load%ld", k);
        snprintf(w->job_id, sizeof w->job_id, "load%ld-%s", k, nonce);
        w->rng = opt.seed * 0x9e3779b97f4a7c15ULL + (uint64_t)k;
        w->job_scale = 0.8 + 0.4 * uniform(&w->rng);
        if (pthread_create(&w->tid, NULL, worker_main, w) != 0) {
            fprintf(stderr, "zbso-loadgen: cannot start thread %ld; stopping\n", k);
            atomic_store(&stop_requested, 1);
            fatal = 1;
            break;
        }
        w->started = 1;
    }
    for (k = 0; k < opt.jobs; k++)
        if (ws[k].started)
            pthread_join(ws[k].tid, NULL);
    double elapsed = now_s() - start;

    printf("elapsed %.3f s\n", elapsed);
    if (print_report(ws, opt.jobs, elapsed) != 0) {
        fprintf(stderr, "zbso-loadgen: out of memory merging latencies\n");
        fatal = 1;
    }
    for (k = 0; k < opt.jobs; k++) {
        if (ws[k].error[0] == '\0')
            continue;
        fatal = 1;
        if (shown++ < ERRORS_SHOWN)
            fprintf(stderr, "zbso-loadgen: job %ld stopped: %s\n", k, ws[k].error);
    }
    if (shown > ERRORS_SHOWN)
        fprintf(stderr, "zbso-loadgen: ... and %d more jobs stopped on errors\n",
                shown - ERRORS_SHOWN);
    ret = fatal ? 1 : 0;
out:
    if (ws != NULL)
        for (k = 0; k < opt.jobs; k++)
            worker_close(&ws[k]);
    free(ws);
    curl_global_cleanup();
    return ret;
}
