/* inspect.c: the inspection documents of inspect.h (SPEC §5). Each answer is one read unit
 * (store_exec_read): the figures of a document come from one snapshot, so a job's counts,
 * savings and arms always agree with each other. The decisions (rounds, savings) are the
 * core's pure functions; this file only loads, calls them and writes JSON. */
#include "inspect/inspect.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "codec/codec.h"
#include "core/optimizer.h"
#include "core/spec.h"
#include "core/value.h"
#include "util/mem.h"
#include "util/utf8.h"

/* ---- requests ---- */

void insp_request_init(insp_request *req, insp_kind kind)
{
    memset(req, 0, sizeof *req);
    req->kind = kind;
    req->limit = INSP_LIMIT_DEFAULT;
}

/* A job id text (prefix or cursor) from the query into out (ZBSO_ID_MAX + 1 bytes). */
static int query_text(const char *name, const char *v, size_t len, char *out, zbso_err *err)
{
    if (memchr(v, '\0', len))
        return err_set_field(err, ZBSO_EINVAL, "query", name,
                             "%s contains a NUL character (%%00); no job id does", name);
    if (utf8_bad_at((const unsigned char *)v, len) < len)
        return err_set_field(err, ZBSO_EINVAL, "query", name, "%s is not valid UTF-8", name);
    if (len > ZBSO_ID_MAX)
        return err_set_field(err, ZBSO_EINVAL, "query", name,
                             "%s is %zu bytes long, over the maximum of %d", name, len,
                             ZBSO_ID_MAX);
    memcpy(out, v, len);
    out[len] = '\0';
    return 0;
}

/* A decimal integer in [lo, hi] from the query into *out. */
static int query_int(const char *name, const char *v, size_t len, int64_t lo, int64_t hi,
                     int64_t *out, zbso_err *err)
{
    char text[32];
    size_t shown = len < 24 ? len : 24;
    bool ok = len > 0 && len < sizeof text && !memchr(v, '\0', len);
    if (ok) {
        memcpy(text, v, len);
        text[len] = '\0';
        for (size_t i = 0; i < len && ok; i++)
            ok = text[i] >= '0' && text[i] <= '9';
    }
    if (ok && len > 18)
        ok = false;                          /* above any bound here; strtoll is exact below */
    int64_t x = ok ? (int64_t)strtoll(text, NULL, 10) : 0;
    if (!ok || x < lo || x > hi) {
        char shown_text[4 * 24 + 1];
        size_t k = 0;
        for (size_t i = 0; i < shown; i++) {
            unsigned char c = (unsigned char)v[i];
            if (c >= 0x20 && c < 0x7f && c != '\'')
                shown_text[k++] = (char)c;
            else
                k += (size_t)snprintf(shown_text + k, sizeof shown_text - k, "\\x%02x", c);
        }
        shown_text[k] = '\0';
        return err_set_field(err, ZBSO_EINVAL, "query", name,
                             "%s must be an integer from %" PRId64 " to %" PRId64 ", got '%s%s'",
                             name, lo, hi, shown_text, len > shown ? "..." : "");
    }
    *out = x;
    return 0;
}

int insp_request_query(insp_request *req, const char *name, const char *value, size_t len,
                       zbso_err *err)
{
    bool paged = req->kind == INSP_JOBS || req->kind == INSP_TRIALS;
    if (paged && strcmp(name, "limit") == 0)
        return query_int(name, value, len, 1, INSP_LIMIT_MAX, &req->limit, err);
    if (req->kind == INSP_JOBS && strcmp(name, "prefix") == 0)
        return query_text(name, value, len, req->prefix, err);
    if (req->kind == INSP_JOBS && strcmp(name, "after") == 0)
        return query_text(name, value, len, req->after_job, err);
    if (req->kind == INSP_TRIALS && strcmp(name, "after") == 0)
        return query_int(name, value, len, 0, INT64_MAX / 2, &req->after_trial, err);
    return err_set_field(err, ZBSO_EINVAL, "query", name,
                         "unknown query argument '%.40s'%s", name,
                         paged ? "" : ": this path takes none");
}

/* ---- loading ---- */

/* A growable array of trials. */
typedef struct trial_vec {
    zbso_trial *v;
    size_t n, cap;
    bool nomem;
} trial_vec;

static int trial_push(void *ctx, const zbso_trial *t)
{
    trial_vec *tv = ctx;
    if (tv->n == tv->cap) {
        size_t cap = tv->cap ? tv->cap * 2 : 64;
        zbso_trial *v = mem_realloc(tv->v, cap * sizeof *v);
        if (!v) {
            tv->nomem = true;
            return ZBSO_ENOMEM;
        }
        tv->v = v;
        tv->cap = cap;
    }
    tv->v[tv->n++] = *t;
    return 0;
}

/* Loads the trials of job_id that match q, ascending, into *tv. */
static int load_trials(store_txn *t, const char *job_id, const store_trial_query *q,
                       trial_vec *tv, zbso_err *err)
{
    int rc = store_trials_list(t, job_id, q, trial_push, tv, err);
    if (tv->nomem)
        return err_set(err, ZBSO_ENOMEM, "out of memory listing the trials of job %s",
                       job_id);
    return rc;
}

static int load_job(store_txn *t, const char *job_id, zbso_job *job, zbso_err *err)
{
    int rc = store_job_get(t, job_id, false, job, err);
    if (rc == ZBSO_ENOTFOUND)
        return err_set(err, ZBSO_ENOTFOUND, "Unknown job_id: %s", job_id);
    return rc;
}

/* ---- JSON ----
 * Builders return NULL when memory runs out. put always consumes v (json_object_set_new
 * releases it on failure too) and fails on a NULL object or value, so a chain of puts whose
 * values are built inline ends in one check and leaks nothing. */

static bool put(json_t *o, const char *key, json_t *v)
{
    if (!o || !v) {
        json_decref(v);
        return false;
    }
    return json_object_set_new(o, key, v) == 0;
}

/* A finite double, or null. */
static json_t *real_or_null(bool has, double x)
{
    return has && isfinite(x) ? json_real(x) : json_null();
}

/* Adds energy_kwh beside energy_j, and with a footprint configured co2e_g (the given
 * figure; NaN: energy at the static or mean intensity of [start, end]) and price. Nothing
 * of CO2e or price without their configuration (issue 25: absent, never 0). */
static bool put_footprint(json_t *o, const opt_footprint *fp, double energy_j, double co2e_g,
                          double start, double end)
{
    if (!put(o, "energy_kwh", json_real(energy_j / OPT_J_PER_KWH)))
        return false;
    if (fp == NULL)
        return true;
    if (fp->has_intensity) {
        double g = isnan(co2e_g) ? opt_co2e_g(fp, energy_j, start, end) : co2e_g;
        if (!put(o, "co2e_g", real_or_null(true, g)))
            return false;
    }
    if (fp->has_price &&
        !put(o, "price", real_or_null(true, energy_j / OPT_J_PER_KWH * fp->price_per_kwh)))
        return false;
    return true;
}

/* Totals with their footprint; co2e_g as put_footprint takes it. */
static json_t *totals_json(const opt_totals *t, const opt_footprint *fp, double co2e_g)
{
    json_t *o = json_object();
    if (put(o, "energy_j", json_real(t->energy)) && put(o, "time_s", json_real(t->time)) &&
        put(o, "cost", json_real(t->cost)) && put_footprint(o, fp, t->energy, co2e_g, 0, 0))
        return o;
    json_decref(o);
    return NULL;
}

/* Percentages of energy, time and cost (null where there is no denominator). */
static json_t *pct_json(const opt_pct *p)
{
    json_t *o = json_object();
    if (put(o, "energy", real_or_null(p->has_energy, p->pct.energy)) &&
        put(o, "time", real_or_null(p->has_time, p->pct.time)) &&
        put(o, "cost", real_or_null(p->has_cost, p->pct.cost)))
        return o;
    json_decref(o);
    return NULL;
}

static json_t *savings_json(const opt_savings *s, const opt_co2e_savings *c,
                            const opt_footprint *fp)
{
    opt_pct pct;
    opt_savings_pct(s, &pct);
    json_t *o = json_object();
    bool ok = put(o, "finished_trials", json_integer(s->finished)) &&
              put(o, "failed_trials", json_integer(s->failed)) &&
              put(o, "spent", totals_json(&s->spent, fp, c->spent_g)) &&
              put(o, "default_batch_size", json_integer(s->default_batch_size)) &&
              put(o, "default_runs", json_integer(s->default_runs)) &&
              put(o, "default_expected",
                  s->has_baseline ? totals_json(&s->default_mean, fp, c->default_mean_g)
                                  : json_null()) &&
              put(o, "saved", s->has_baseline ? totals_json(&s->saved, fp, c->saved_g)
                                              : json_null()) &&
              put(o, "saved_pct", s->has_baseline ? pct_json(&pct) : json_null()) &&
              put(o, "break_even_recurrence",
                  s->has_baseline && s->break_even > 0 ? json_integer(s->break_even)
                                                       : json_null()) &&
              put(o, "best_batch_size",
                  s->has_best ? json_integer(s->best_batch_size) : json_null()) &&
              put(o, "best_expected_cost", real_or_null(s->has_best, s->best_mean_cost)) &&
              put(o, "regret", real_or_null(s->has_best, s->regret));
    if (ok && fp != NULL && fp->has_price)
        ok = put(o, "currency", fp->currency[0] ? json_string(fp->currency) : json_null());
    if (ok)
        return o;
    json_decref(o);
    return NULL;
}

static const zbso_trial_status STATUSES[] = {ZBSO_TRIAL_DISPATCHED, ZBSO_TRIAL_SUCCEEDED,
                                             ZBSO_TRIAL_FAILED};
static const zbso_trial_type TYPES[] = {ZBSO_TRIAL_EXPLORATION, ZBSO_TRIAL_CONCURRENT,
                                        ZBSO_TRIAL_MAB};

/* The figures of one job that both the list and the job document show. */
typedef struct job_figures {
    int64_t by[3][3];            /* [type][status] */
    int64_t by_reason[ZBSO_STOP_REASONS]; /* finished trials by opt_trial_stop_reason */
    opt_savings savings;
    opt_co2e_savings co2e;       /* NaN figures without a configured intensity */
    int64_t best_batch_size;     /* the arm with the highest posterior mean, else min cost */
    zbso_arm arms[ZBSO_MAX_BATCH_SIZES];
    size_t n_arms;
} job_figures;

/* Loads the job's trials into *tv and computes *f. */
static int job_figures_load(store_txn *t, const zbso_job *job, const opt_footprint *fp,
                            trial_vec *tv, job_figures *f, zbso_err *err)
{
    store_trial_query all = {0};
    int rc = load_trials(t, job->spec.job_id, &all, tv, err);
    if (rc < 0)
        return rc;
    memset(f->by, 0, sizeof f->by);
    for (size_t i = 0; i < tv->n; i++)
        if ((unsigned)tv->v[i].type < 3 && (unsigned)tv->v[i].status < 3)
            f->by[tv->v[i].type][tv->v[i].status]++;
    memset(f->by_reason, 0, sizeof f->by_reason);
    for (size_t i = 0; i < tv->n; i++)
        f->by_reason[opt_trial_stop_reason(&job->spec, &tv->v[i])]++;
    opt_savings_compute(&job->spec, tv->v, tv->n, &f->savings);
    if (fp != NULL && fp->has_intensity) {
        opt_co2e_savings_compute(&job->spec, tv->v, tv->n, fp, &f->co2e);
    } else {
        f->co2e.spent_g = f->co2e.default_mean_g = f->co2e.saved_g = NAN;
        f->co2e.has_baseline = false;
    }
    f->n_arms = 0;
    f->best_batch_size = job->min_cost_batch_size;
    if (job->stage != ZBSO_STAGE_MAB)
        return 0;
    rc = store_arms_get(t, job->spec.job_id, f->arms, ZBSO_MAX_BATCH_SIZES, &f->n_arms, err);
    if (rc < 0)
        return rc;
    /* Arms come ascending: a strict > keeps the smallest batch size on ties. */
    double best = -INFINITY;
    for (size_t i = 0; i < f->n_arms; i++) {
        if (f->arms[i].param_mean > best) {
            best = f->arms[i].param_mean;
            f->best_batch_size = f->arms[i].batch_size;
        }
    }
    return 0;
}

static json_t *trial_totals_json(const job_figures *f)
{
    int64_t total = 0, by_status[3] = {0, 0, 0};
    for (size_t ty = 0; ty < 3; ty++)
        for (size_t st = 0; st < 3; st++) {
            by_status[st] += f->by[ty][st];
            total += f->by[ty][st];
        }
    json_t *o = json_object(), *reasons = json_object();
    bool ok = put(o, "total", json_integer(total));
    for (size_t st = 0; st < 3 && ok; st++)
        ok = put(o, zbso_trial_status_name(STATUSES[st]), json_integer(by_status[st]));
    /* Every reason, 0 included, so that a client reads a fixed shape. */
    for (int r = ZBSO_STOP_TARGET_REACHED; r < ZBSO_STOP_REASONS && ok; r++)
        ok = put(reasons, zbso_stop_reason_name((zbso_stop_reason)r),
                 json_integer(f->by_reason[r]));
    if (ok && put(o, "by_stop_reason", reasons))
        return o;
    if (!ok)
        json_decref(reasons);
    json_decref(o);
    return NULL;
}

/* Appends the object o, built whole when ok, to the array a. When it was not, or the append
 * fails, frees o (unless the append took it) and a, and returns false. */
static bool append_or_drop(json_t *a, json_t *o, bool ok)
{
    if (ok && json_array_append_new(a, o) == 0)
        return true;
    if (!ok)
        json_decref(o);
    json_decref(a);
    return false;
}

/* The fields of a job summary (GET /jobs rows; the job document starts with them). */
static bool put_summary(json_t *o, const zbso_job *job, const job_figures *f,
                        const opt_footprint *fp)
{
    return put(o, "job_id", json_string(job->spec.job_id)) &&
           put(o, "job_id_prefix", json_string(job->spec.job_id_prefix)) &&
           put(o, "stage", json_string(zbso_stage_name(job->stage))) &&
           put(o, "policy", json_string(spec_policy_name(job->spec.policy))) &&
           put(o, "created_at", json_real(job->created_at)) &&
           put(o, "updated_at", json_real(job->updated_at)) &&
           put(o, "trials", trial_totals_json(f)) &&
           put(o, "min_cost", real_or_null(job->has_min_cost, job->min_cost)) &&
           put(o, "min_cost_batch_size", json_integer(job->min_cost_batch_size)) &&
           put(o, "best_batch_size", json_integer(f->best_batch_size)) &&
           put(o, "savings", savings_json(&f->savings, &f->co2e, fp));
}

static json_t *i64_array(const int64_t *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n && a; i++) {
        if (json_array_append_new(a, json_integer(v[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *rounds_json(const opt_prune_round *r, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n && a; i++) {
        json_t *o = json_object();
        bool ok = put(o, "round", json_integer(r[i].round)) &&
                  put(o, "default_batch_size", json_integer(r[i].default_batch_size)) &&
                  put(o, "explored", i64_array(r[i].explored, r[i].n_explored)) &&
                  put(o, "converged", i64_array(r[i].converged, r[i].n_converged)) &&
                  put(o, "pruned", i64_array(r[i].pruned, r[i].n_pruned)) &&
                  put(o, "complete", json_boolean(r[i].complete));
        if (!append_or_drop(a, o, ok))
            return NULL;
    }
    return a;
}

static json_t *exploration_json(const opt_prune_round *r, size_t n)
{
    json_t *o = json_object();
    if (put(o, "rounds", rounds_json(r, n)))
        return o;
    json_decref(o);
    return NULL;
}

static json_t *arms_json(const zbso_arm *arms, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n && a; i++) {
        double p = arms[i].param_precision;
        bool exact = isinf(p);
        json_t *o = json_object();
        bool ok = put(o, "batch_size", json_integer(arms[i].batch_size)) &&
                  put(o, "mean", json_real(arms[i].param_mean)) &&
                  put(o, "precision", exact ? json_null() : json_real(p)) &&
                  put(o, "sd", json_real(exact ? 0.0 : 1.0 / sqrt(p))) &&
                  put(o, "observations", json_integer(arms[i].num_observations));
        if (!append_or_drop(a, o, ok))
            return NULL;
    }
    return a;
}

static json_t *counts_json(int64_t (*by)[3])
{
    json_t *o = json_object();
    for (size_t ty = 0; ty < 3 && o; ty++) {
        json_t *c = json_object();
        bool ok = true;
        for (size_t st = 0; st < 3 && ok; st++)
            ok = put(c, zbso_trial_status_name(STATUSES[st]), json_integer(by[ty][st]));
        if (!ok)
            json_decref(c);
        if (!ok || !put(o, zbso_trial_type_name(TYPES[ty]), c)) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

/* A trial's row: null for what a trial without a result does not have. */
static json_t *trial_json(const zbso_job_spec *spec, const zbso_trial *t,
                          const opt_footprint *fp)
{
    const char *reason = zbso_stop_reason_name(opt_trial_stop_reason(spec, t));
    bool done = t->status == ZBSO_TRIAL_SUCCEEDED;
    bool ended = t->status != ZBSO_TRIAL_DISPATCHED;
    json_t *o = json_object();
    bool ok = put(o, "trial_number", json_integer(t->trial_number)) &&
              put(o, "batch_size", json_integer(t->batch_size)) &&
              put(o, "type", json_string(zbso_trial_type_name(t->type))) &&
              put(o, "status", json_string(zbso_trial_status_name(t->status))) &&
              put(o, "start_time", json_real(t->start_time)) &&
              put(o, "end_time", real_or_null(ended, t->end_time)) &&
              put(o, "lease_renewed_at", json_real(t->lease_renewed_at)) &&
              put(o, "time_s", real_or_null(done, t->time)) &&
              put(o, "energy_j", real_or_null(done, t->energy)) &&
              put(o, "metric", real_or_null(done, t->metric)) &&
              put(o, "epochs", done ? json_integer(t->epochs) : json_null()) &&
              put(o, "cost", real_or_null(done, done ? opt_trial_cost(spec, t) : 0.0)) &&
              put(o, "converged", json_boolean(done && t->converged)) &&
              put(o, "stop_reason", reason ? json_string(reason) : json_null());
    /* The footprint of what the trial measured, over its own interval. */
    if (ok && done)
        ok = put_footprint(o, fp, t->energy, NAN, t->start_time, t->end_time);
    if (ok)
        return o;
    json_decref(o);
    return NULL;
}

/* The projection, or null when it is not available. */
static json_t *projection_json(const opt_projection *p, const opt_footprint *fp)
{
    if (!p->available)
        return json_null();
    json_t *o = json_object();
    bool ok = put(o, "batch_size", json_integer(p->batch_size)) &&
              put(o, "cost", json_real(p->cost)) && put(o, "cost_sd", json_real(p->cost_sd)) &&
              put(o, "energy_j", json_real(p->energy)) && put(o, "time_s", json_real(p->time)) &&
              put(o, "observations", json_integer(p->observations)) &&
              put(o, "runs", json_integer(p->runs)) &&
              put(o, "saving_per_run", totals_json(&p->saving, fp, NAN)) &&
              put(o, "saving_per_run_pct", pct_json(&p->saving_pct));
    if (ok && fp != NULL && fp->has_price)
        ok = put(o, "currency", json_string(fp->currency));
    if (ok)
        return o;
    json_decref(o);
    return NULL;
}

/* What the job's figures use (only what is configured): the server's configuration, the
 * intensity the job's own when job_intensity (carbon_intensity_source "job", else
 * "server"). */
static json_t *footprint_json(const opt_footprint *fp, bool job_intensity)
{
    json_t *o = json_object();
    bool ok = true;
    if (fp->has_intensity)
        ok = (fp->n_series > 0
                  ? put(o, "carbon_intensity_series_points",
                        json_integer((json_int_t)fp->n_series))
                  : put(o, "carbon_intensity_g_per_kwh", json_real(fp->intensity_g_per_kwh))) &&
             put(o, "carbon_intensity_source", json_string(job_intensity ? "job" : "server"));
    if (ok && fp->has_price)
        ok = put(o, "energy_price_per_kwh", json_real(fp->price_per_kwh)) &&
             put(o, "currency", fp->currency[0] ? json_string(fp->currency) : json_null());
    if (ok)
        return o;
    json_decref(o);
    return NULL;
}

/* ---- the four documents ---- */

typedef struct answer_work {
    const insp_request *req;
    json_t *doc;                 /* OUT */
} answer_work;

#define NOMEM(what) err_set(err, ZBSO_ENOMEM, "out of memory writing %s", what)

/* Jobs collected by store_jobs_list: at most limit + 1 (the extra one says "more"). */
typedef struct job_vec {
    zbso_job *v;
    size_t n, cap;
} job_vec;

static int job_push(void *ctx, const zbso_job *job)
{
    job_vec *jv = ctx;
    if (jv->n == jv->cap)
        return 1;                            /* cannot happen: the query's limit is cap */
    jv->v[jv->n++] = *job;
    return 0;
}

static int jobs_doc(store_txn *t, const insp_request *req, json_t **out, zbso_err *err)
{
    job_vec jv = {NULL, 0, (size_t)req->limit + 1};
    store_job_query q = {req->prefix, req->after_job, req->limit + 1};
    trial_vec tv = {0};
    job_figures *f = mem_malloc(sizeof *f);
    json_t *doc = json_object(), *rows = json_array();
    int rc = 0;
    jv.v = mem_calloc(jv.cap, sizeof *jv.v);
    if (!jv.v || !f || !doc || !rows) {
        rc = NOMEM("the job list");
        goto out;
    }
    if ((rc = store_jobs_list(t, &q, job_push, &jv, err)) < 0)
        goto out;
    rc = 0;
    bool more = jv.n > (size_t)req->limit;
    size_t shown = more ? (size_t)req->limit : jv.n;
    for (size_t i = 0; i < shown; i++) {
        tv.n = 0;
        opt_footprint own;
        const opt_footprint *fp = opt_footprint_for_job(req->footprint, &jv.v[i].spec, &own);
        if ((rc = job_figures_load(t, &jv.v[i], fp, &tv, f, err)) < 0)
            goto out;
        json_t *row = json_object();
        bool ok = put_summary(row, &jv.v[i], f, fp);
        if (!ok)
            json_decref(row);
        if (!ok || json_array_append_new(rows, row) != 0) {
            rc = NOMEM("the job list");
            goto out;
        }
    }
    if (!put(doc, "jobs", json_incref(rows)) ||
        !put(doc, "next", more ? json_string(jv.v[shown - 1].spec.job_id) : json_null())) {
        rc = NOMEM("the job list");
        goto out;
    }
    *out = doc;
    doc = NULL;
out:
    json_decref(rows);
    json_decref(doc);
    mem_free(tv.v);
    mem_free(f);
    mem_free(jv.v);
    return rc;
}

/* The explorations that pruning decides from: not Failed, in trial-number order. */
static size_t live_explorations(const trial_vec *tv, zbso_trial *out)
{
    size_t n = 0;
    for (size_t i = 0; i < tv->n; i++)
        if (tv->v[i].type == ZBSO_TRIAL_EXPLORATION && tv->v[i].status != ZBSO_TRIAL_FAILED)
            out[n++] = tv->v[i];
    return n;
}

/* profiles_list's callback: appends the profile to the array ctx; -1 when memory runs
 * out (the listing stops and returns it). */
static int profile_add(void *ctx, const zbso_power_profile *p)
{
    json_t *v = codec_power_profile_json(p);
    if (!v || json_array_append_new(ctx, v) != 0)
        return -1;
    return 0;
}

/* The job's power-limit profiles (SPEC §6.1), ascending batch size, into *out. */
static int profiles_json(store_txn *t, const char *job_id, json_t **out, zbso_err *err)
{
    json_t *list = json_array();
    int rc = list ? store_profiles_list(t, job_id, profile_add, list, err) : -1;
    if (rc == -1)
        rc = NOMEM("the job's power profiles");
    if (rc < 0) {
        json_decref(list);
        return rc;
    }
    *out = list;
    return 0;
}

static int job_doc(store_txn *t, const insp_request *req, json_t **out, zbso_err *err)
{
    zbso_job job;
    trial_vec tv = {0};
    job_figures *f = mem_malloc(sizeof *f);
    zbso_trial *expl = NULL;
    opt_prune_round *rounds = NULL;
    size_t n_rounds = 0;
    json_t *doc = NULL;
    int rc;
    if (!f) {
        rc = NOMEM("the job");
        goto out;
    }
    opt_footprint own;
    const opt_footprint *fp = NULL;
    if ((rc = load_job(t, req->job_id, &job, err)) < 0)
        goto out;
    fp = opt_footprint_for_job(req->footprint, &job.spec, &own);
    if ((rc = job_figures_load(t, &job, fp, &tv, f, err)) < 0)
        goto out;
    /* Every round started holds an exploration, so there are at most n + 1 of them, and
     * never more than the spec's rounds. */
    expl = mem_malloc((tv.n ? tv.n : 1) * sizeof *expl);
    size_t n_expl = expl ? live_explorations(&tv, expl) : 0;
    size_t cap = n_expl + 1;
    if (job.spec.num_pruning_rounds >= 0 && (uint64_t)job.spec.num_pruning_rounds < cap)
        cap = (size_t)job.spec.num_pruning_rounds;
    rounds = mem_malloc((cap ? cap : 1) * sizeof *rounds);
    if (!expl || !rounds) {
        rc = NOMEM("the job");
        goto out;
    }
    if ((rc = opt_prune_rounds(&job, expl, n_expl, rounds, cap, &n_rounds, err)) < 0)
        goto out;
    json_t *profiles = NULL;
    if ((rc = profiles_json(t, job.spec.job_id, &profiles, err)) < 0)
        goto out;
    opt_projection proj;
    opt_projection_compute(&job.spec, job.stage, f->arms, f->n_arms, tv.v, tv.n, &f->savings,
                           &proj);
    doc = json_object();
    bool ok = put_summary(doc, &job, f, fp) &&
              put(doc, "projection", projection_json(&proj, fp)) &&
              put(doc, "projection_reason",
                  proj.available ? json_null() : json_string(proj.why)) &&
              (fp == NULL || (!fp->has_intensity && !fp->has_price) ||
               put(doc, "footprint", footprint_json(fp, job.spec.has_carbon_intensity))) &&
              put(doc, "revision", json_integer(job.revision)) &&
              put(doc, "spec", codec_job_spec_json(&job.spec)) &&
              put(doc, "exploration", exploration_json(rounds, n_rounds)) &&
              put(doc, "arms", arms_json(f->arms, f->n_arms)) &&
              put(doc, "counts", counts_json(f->by));
    /* put consumes profiles; after a failure above nothing else would. */
    if (ok)
        ok = put(doc, "power_profiles", profiles);
    else
        json_decref(profiles);
    if (!ok) {
        rc = NOMEM("the job");
        goto out;
    }
    *out = doc;
    doc = NULL;
out:
    json_decref(doc);
    mem_free(rounds);
    mem_free(expl);
    mem_free(tv.v);
    mem_free(f);
    return rc;
}

static int trials_doc(store_txn *t, const insp_request *req, json_t **out, zbso_err *err)
{
    zbso_job job;
    trial_vec tv = {0};
    store_trial_query q = {.after = req->after_trial, .limit = req->limit + 1};
    json_t *doc = json_object(), *rows = json_array();
    int rc;
    if ((rc = load_job(t, req->job_id, &job, err)) < 0 ||
        (rc = load_trials(t, req->job_id, &q, &tv, err)) < 0)
        goto out;
    bool more = tv.n > (size_t)req->limit;
    size_t shown = more ? (size_t)req->limit : tv.n;
    bool ok = doc && rows;
    opt_footprint own;
    const opt_footprint *fp = opt_footprint_for_job(req->footprint, &job.spec, &own);
    for (size_t i = 0; i < shown && ok; i++) {
        json_t *row = trial_json(&job.spec, &tv.v[i], fp);
        ok = row && json_array_append_new(rows, row) == 0;
    }
    ok = ok && put(doc, "job_id", json_string(job.spec.job_id)) &&
         put(doc, "trials", json_incref(rows)) &&
         put(doc, "next", more ? json_integer(tv.v[shown - 1].trial_number) : json_null());
    if (!ok) {
        rc = NOMEM("the trial list");
        goto out;
    }
    *out = doc;
    doc = NULL;
out:
    json_decref(rows);
    json_decref(doc);
    mem_free(tv.v);
    return rc;
}

static int point_push(void *ctx, const zbso_curve_point *p)
{
    json_t *o = json_object();
    if (!(put(o, "epoch", json_integer(p->epoch)) && put(o, "time_s", json_real(p->time)) &&
          put(o, "energy_j", json_real(p->energy)) && put(o, "metric", json_real(p->metric)) &&
          put(o, "received_at", json_real(p->received_at)))) {
        json_decref(o);
        return ZBSO_ENOMEM;
    }
    return json_array_append_new((json_t *)ctx, o) == 0 ? 0 : ZBSO_ENOMEM;
}

static int trial_doc(store_txn *t, const insp_request *req, json_t **out, zbso_err *err)
{
    zbso_job job;
    zbso_trial trial;
    json_t *doc = NULL, *points = json_array();
    int rc;
    if ((rc = load_job(t, req->job_id, &job, err)) < 0)
        goto out;
    rc = store_trial_get(t, req->job_id, req->trial_number, &trial, err);
    if (rc == ZBSO_ENOTFOUND)
        rc = err_set(err, ZBSO_ENOTFOUND, "Unknown trial: job %s has no trial number %" PRId64,
                     req->job_id, req->trial_number);
    if (rc < 0)
        goto out;
    if (!points) {
        rc = NOMEM("the trial");
        goto out;
    }
    rc = store_reports_list(t, req->job_id, req->trial_number, point_push, points, err);
    if (rc == ZBSO_ENOMEM)
        rc = NOMEM("the trial's reports");
    if (rc < 0)
        goto out;
    opt_footprint own;
    doc = trial_json(&job.spec, &trial, opt_footprint_for_job(req->footprint, &job.spec, &own));
    if (!put(doc, "job_id", json_string(job.spec.job_id)) ||
        !put(doc, "reports", json_incref(points))) {
        rc = NOMEM("the trial");
        goto out;
    }
    *out = doc;
    doc = NULL;
out:
    json_decref(points);
    json_decref(doc);
    return rc;
}

static int answer_fn(store_txn *t, void *arg, zbso_err *err)
{
    answer_work *w = arg;
    switch (w->req->kind) {
    case INSP_JOBS:
        return jobs_doc(t, w->req, &w->doc, err);
    case INSP_JOB:
        return job_doc(t, w->req, &w->doc, err);
    case INSP_TRIALS:
        return trials_doc(t, w->req, &w->doc, err);
    case INSP_TRIAL:
        return trial_doc(t, w->req, &w->doc, err);
    }
    return err_set(err, ZBSO_EINTERNAL, "unknown inspection request kind %d",
                   (int)w->req->kind);
}

int insp_answer(store *st, const insp_request *req, char **json, size_t *len, zbso_err *err)
{
    answer_work w = {req, NULL};
    *json = NULL;
    *len = 0;
    if ((req->kind == INSP_JOBS || req->kind == INSP_TRIALS) &&
        (req->limit < 1 || req->limit > INSP_LIMIT_MAX))
        return err_set(err, ZBSO_EINVAL, "limit %" PRId64 " is outside 1..%d", req->limit,
                       INSP_LIMIT_MAX);
    int rc = store_exec_read(st, answer_fn, &w, err);
    if (rc < 0) {
        json_decref(w.doc);
        return rc;
    }
    *json = codec_json_text(w.doc, len);
    if (!*json)
        return err_set(err, ZBSO_ENOMEM, "out of memory writing the answer");
    return 0;
}
