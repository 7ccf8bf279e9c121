/* value.c: stop reasons, savings percentages, the projection and the energy footprint
 * (value.h). Pure: no I/O, no clock; every sum runs left to right in trial-number order,
 * as savings.c sums. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/value.h"

zbso_stop_reason opt_trial_stop_reason(const zbso_job_spec *spec, const zbso_trial *t)
{
    if (t->status == ZBSO_TRIAL_DISPATCHED)
        return ZBSO_STOP_NONE;
    if (t->stop_reason != ZBSO_STOP_NONE)
        return t->stop_reason;
    if (t->status != ZBSO_TRIAL_SUCCEEDED)
        return ZBSO_STOP_UNKNOWN;
    if (t->converged)
        return ZBSO_STOP_TARGET_REACHED;
    bool reached = spec->higher_is_better_metric ? spec->target_metric <= t->metric
                                                 : spec->target_metric >= t->metric;
    if (reached || t->epochs < spec->max_epochs)
        return ZBSO_STOP_COST_BOUND;
    if (!spec->has_beta_knob)
        return ZBSO_STOP_MAX_EPOCHS;
    return ZBSO_STOP_UNKNOWN;
}

/* part / whole * 100, when whole is not 0. */
static bool pct_of(double part, double whole, double *out)
{
    if (whole == 0.0 || !isfinite(part / whole))
        return false;
    *out = part / whole * 100.0;
    return true;
}

static void pct_totals(const opt_totals *part, const opt_totals *whole, opt_pct *out)
{
    memset(out, 0, sizeof *out);
    out->has_energy = pct_of(part->energy, whole->energy, &out->pct.energy);
    out->has_time = pct_of(part->time, whole->time, &out->pct.time);
    out->has_cost = pct_of(part->cost, whole->cost, &out->pct.cost);
}

void opt_savings_pct(const opt_savings *s, opt_pct *out)
{
    memset(out, 0, sizeof *out);
    if (!s->has_baseline)
        return;
    double f = (double)s->finished;
    opt_totals all = {f * s->default_mean.energy, f * s->default_mean.time,
                      f * s->default_mean.cost};
    pct_totals(&s->saved, &all, out);
}

static bool finished(const zbso_job_spec *spec, const zbso_trial *t)
{
    return t->status == ZBSO_TRIAL_SUCCEEDED && opt_cost_accepted(opt_trial_cost(spec, t));
}

void opt_projection_compute(const zbso_job_spec *spec, zbso_stage stage,
                            const zbso_arm *arms, size_t n_arms, const zbso_trial *trials,
                            size_t n, const opt_savings *s, opt_projection *out)
{
    memset(out, 0, sizeof *out);
    if (stage != ZBSO_STAGE_MAB) {
        out->why = "the job is still pruning: the optimizer forms its expectations when "
                   "pruning ends";
        return;
    }
    if (n_arms == 0) {
        /* The smart policy refits at every choice and stores no arms. */
        out->why = "the job's policy keeps no arms to project from";
        return;
    }
    const zbso_arm *best = &arms[0];
    for (size_t i = 1; i < n_arms; i++)
        if (arms[i].param_mean > best->param_mean)
            best = &arms[i];
    if (best->num_observations == 0) {
        out->why = "the best arm has no observation yet";
        return;
    }
    if (!s->has_baseline) {
        out->why = "the default batch size has no converged run to compare with";
        return;
    }
    /* The arm's window: the last window_size finished trials of its batch size. */
    size_t first = n;
    int64_t runs = 0;
    for (size_t i = n; i-- > 0;) {
        if (trials[i].batch_size != best->batch_size || !finished(spec, &trials[i]))
            continue;
        if (spec->window_size > 0 && runs == spec->window_size)
            break;
        first = i;
        runs++;
    }
    if (runs == 0) {
        out->why = "the best arm's batch size has no finished trial";
        return;
    }
    double energy = 0, time = 0;
    for (size_t i = first; i < n; i++) {
        if (trials[i].batch_size != best->batch_size || !finished(spec, &trials[i]))
            continue;
        energy += trials[i].energy;
        time += trials[i].time;
    }
    out->available = true;
    out->batch_size = best->batch_size;
    out->observations = best->num_observations;
    out->runs = runs;
    out->cost = -best->param_mean;
    out->cost_sd = isinf(best->param_precision) ? 0.0 : 1.0 / sqrt(best->param_precision);
    out->energy = energy / (double)runs;
    out->time = time / (double)runs;
    out->saving.energy = s->default_mean.energy - out->energy;
    out->saving.time = s->default_mean.time - out->time;
    out->saving.cost = s->default_mean.cost - out->cost;
    pct_totals(&out->saving, &s->default_mean, &out->saving_pct);
}

/* ---- footprint ---- */

/* The index of the series point in force at t: the last with p.t <= t, 0 before the
 * first. */
static size_t point_at(const opt_footprint *fp, double t)
{
    size_t lo = 0, hi = fp->n_series;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (fp->series[mid].t <= t)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

const opt_footprint *opt_footprint_for_job(const opt_footprint *server,
                                           const zbso_job_spec *spec, opt_footprint *buf)
{
    if (!spec->has_carbon_intensity)
        return server;
    if (server != NULL)
        *buf = *server;
    else
        memset(buf, 0, sizeof *buf);
    buf->has_intensity = true;
    buf->intensity_g_per_kwh = spec->carbon_intensity_g_per_kwh;
    buf->series = NULL;
    buf->n_series = 0;
    return buf;
}

double opt_intensity_mean(const opt_footprint *fp, double start, double end)
{
    if (fp->n_series == 0)
        return fp->intensity_g_per_kwh;
    size_t i = point_at(fp, start);
    if (!(end > start))
        return fp->series[i].g_per_kwh;
    double sum = 0, from = start;
    for (; i < fp->n_series && from < end; i++) {
        double to = i + 1 < fp->n_series && fp->series[i + 1].t < end ? fp->series[i + 1].t
                                                                      : end;
        if (to > from)
            sum += fp->series[i].g_per_kwh * (to - from);
        from = to > from ? to : from;
    }
    return sum / (end - start);
}

double opt_co2e_g(const opt_footprint *fp, double energy_j, double start, double end)
{
    return energy_j / OPT_J_PER_KWH * opt_intensity_mean(fp, start, end);
}

void opt_co2e_savings_compute(const zbso_job_spec *spec, const zbso_trial *trials, size_t n,
                              const opt_footprint *fp, opt_co2e_savings *out)
{
    double dflt = 0;
    int64_t f = 0, runs = 0;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        const zbso_trial *t = &trials[i];
        if (!finished(spec, t))
            continue;
        double g = opt_co2e_g(fp, t->energy, t->start_time, t->end_time);
        f++;
        out->spent_g += g;
        if (t->converged && t->batch_size == spec->default_batch_size) {
            runs++;
            dflt += g;
        }
    }
    if (runs == 0)
        return;
    out->has_baseline = true;
    out->default_mean_g = dflt / (double)runs;
    out->saved_g = (double)f * out->default_mean_g - out->spent_g;
}

/* ---- the intensity CSV ---- */

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar (H. Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Reads n digits at *p into *out. */
static bool digits(const char **p, const char *end, int n, int64_t *out)
{
    int64_t v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (*p >= end || **p < '0' || **p > '9')
            return false;
        v = v * 10 + (**p - '0');
    }
    *out = v;
    return true;
}

static bool is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* "YYYY-MM-DDTHH:MM:SS[.fff]Z" (also "+00:00", or a space for T) as unix seconds. */
static bool rfc3339(const char *p, const char *end, double *out)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int64_t y, mo, d, h, mi, s;
    double frac = 0;
    if (!digits(&p, end, 4, &y) || p >= end || *p++ != '-' || !digits(&p, end, 2, &mo) ||
        p >= end || *p++ != '-' || !digits(&p, end, 2, &d) || p >= end ||
        (*p != 'T' && *p != 't' && *p != ' '))
        return false;
    p++;
    if (!digits(&p, end, 2, &h) || p >= end || *p++ != ':' || !digits(&p, end, 2, &mi) ||
        p >= end || *p++ != ':' || !digits(&p, end, 2, &s))
        return false;
    if (p < end && *p == '.') {
        double scale = 0.1;
        p++;
        if (p >= end || *p < '0' || *p > '9')
            return false;
        for (; p < end && *p >= '0' && *p <= '9'; p++, scale /= 10)
            frac += (*p - '0') * scale;
    }
    if (p < end && (*p == 'Z' || *p == 'z'))
        p++;
    else if (end - p == 6 && memcmp(p, "+00:00", 6) == 0)
        p += 6;
    else
        return false;
    if (p != end || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 60)
        return false;
    if (d > mdays[mo - 1] + (mo == 2 && is_leap(y)))
        return false;
    *out = (double)(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s) + frac;
    return true;
}

/* A finite decimal number filling [p, end). */
static bool number(const char *p, const char *end, double *out)
{
    char buf[64];
    size_t len = (size_t)(end - p);
    if (len == 0 || len >= sizeof buf || memchr(p, '\0', len) != NULL)
        return false;
    memcpy(buf, p, len);
    buf[len] = '\0';
    char *stop;
    double v = strtod(buf, &stop);
    if (*stop != '\0' || !isfinite(v) || buf[0] == ' ' || buf[0] == '\t')
        return false;
    *out = v;
    return true;
}

static void trim(const char **b, const char **e)
{
    while (*b < *e && (**b == ' ' || **b == '\t'))
        (*b)++;
    while (*e > *b && ((*e)[-1] == ' ' || (*e)[-1] == '\t' || (*e)[-1] == '\r'))
        (*e)--;
}

static int point_cmp(const void *a, const void *b)
{
    double x = ((const opt_intensity_point *)a)->t, y = ((const opt_intensity_point *)b)->t;
    return (x > y) - (x < y);
}

int opt_intensity_parse(const char *text, size_t len, opt_intensity_point *out, size_t cap,
                        size_t *n, zbso_err *err)
{
    const char *p = text, *end = text + len;
    size_t line = 0, got = 0;
    *n = 0;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end, *lb = p;
        p = eol ? eol + 1 : end;
        line++;
        trim(&lb, &le);
        if (lb == le)
            continue;
        const char *comma = memchr(lb, ',', (size_t)(le - lb));
        if (comma == NULL)
            return err_set(err, ZBSO_EINVAL, "line %zu: \"%.*s\" is not timestamp,g_per_kwh",
                           line, (int)(le - lb > 80 ? 80 : le - lb), lb);
        const char *tb = lb, *te = comma, *vb = comma + 1, *ve = le;
        trim(&tb, &te);
        trim(&vb, &ve);
        double t, v;
        bool t_ok = number(tb, te, &t) || rfc3339(tb, te, &t);
        if (!t_ok && got == 0 && line == 1 && !number(vb, ve, &v))
            continue;                                     /* a header line */
        if (!t_ok)
            return err_set(err, ZBSO_EINVAL,
                           "line %zu: timestamp \"%.*s\" is neither unix seconds nor RFC "
                           "3339 UTC (2026-11-27T14:00:00Z)",
                           line, (int)(te - tb > 80 ? 80 : te - tb), tb);
        if (!number(vb, ve, &v) || v < 0 || v > ZBSO_INTENSITY_MAX)
            return err_set(err, ZBSO_EINVAL,
                           "line %zu: intensity \"%.*s\" is not a number of g CO2e per kWh "
                           "between 0 and %g",
                           line, (int)(ve - vb > 80 ? 80 : ve - vb), vb, ZBSO_INTENSITY_MAX);
        if (got == cap)
            return err_set(err, ZBSO_EINVAL, "more than %zu points (line %zu)", cap, line);
        out[got].t = t;
        out[got].g_per_kwh = v;
        got++;
    }
    if (got == 0)
        return err_set(err, ZBSO_EINVAL, "no timestamp,g_per_kwh point");
    qsort(out, got, sizeof *out, point_cmp);
    for (size_t i = 1; i < got; i++)
        if (out[i].t == out[i - 1].t)
            return err_set(err, ZBSO_EINVAL, "two points at timestamp %.17g", out[i].t);
    *n = got;
    return 0;
}
