/* value.h: what a job's figures mean to its user (issue 25, SPEC §5 "Savings" and
 * "Stop reasons, projection, footprint"): why each trial stopped, savings as
 * percentages, the projection of the next runs, and energy as kWh, CO2e and money. Pure:
 * the caller hands in the trials and the configuration. */
#ifndef ZBSO_CORE_VALUE_H
#define ZBSO_CORE_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/optimizer.h"
#include "core/types.h"

#define OPT_J_PER_KWH 3.6e6

/* ---- stop reasons ---- */

/* Why trial t of a job with spec ended: its stored reason, or for a trial stored before
 * reasons were (stored NONE but not Dispatched) what its row proves: converged is
 * target_reached; not converged with the metric at the target, or before max_epochs, can
 * only be cost_bound (the report decision ends such a run for nothing else); at max_epochs
 * with no beta_knob, max_epochs. Anything else (a Failed trial: ended or expired; a run at
 * max_epochs that a bound may also have stopped) is ZBSO_STOP_UNKNOWN. NONE while
 * Dispatched. */
zbso_stop_reason opt_trial_stop_reason(const zbso_job_spec *spec, const zbso_trial *t);

/* ---- savings as percentages ---- */

/* The percentages of s->saved against every finished trial at the default batch size
 * (finished * default_mean), per component: has[k] (energy, time, cost) is false where
 * there is no baseline or that denominator is 0. */
typedef struct opt_pct {
    opt_totals pct;
    bool has_energy, has_time, has_cost;
} opt_pct;
void opt_savings_pct(const opt_savings *s, opt_pct *out);

/* ---- projection ---- */

/* What the optimizer now expects of the next runs: the batch size of the best arm (highest
 * posterior mean, the smallest batch size on ties, as the job's best_batch_size), its
 * expected cost (minus the arm's mean) with the arm's sd, the mean energy and time of the
 * finished trials the arm learns from (its window: the last window_size of that batch
 * size, all when 0), and the saving per run against the default's mean (savings'
 * default_mean). */
typedef struct opt_projection {
    bool available;
    const char *why;           /* static text when !available, saying what is missing */
    int64_t batch_size;
    int64_t observations;      /* of the arm */
    int64_t runs;              /* finished trials behind energy and time */
    double cost, cost_sd;      /* sd 0 when the arm's precision is infinite */
    double energy, time;       /* J, s per run */
    opt_totals saving;         /* default_mean - expected, per run */
    opt_pct saving_pct;        /* saving / default_mean * 100 */
} opt_projection;

/* Fills *out for a job in stage with arms[0..n_arms-1] (ascending batch size), its trials
 * in trial-number order and its savings s. Not available (with why) before the MAB stage,
 * without arms, when the best arm has no observation or its batch size no finished trial,
 * or without a baseline (the default batch size has no converged run). */
void opt_projection_compute(const zbso_job_spec *spec, zbso_stage stage,
                            const zbso_arm *arms, size_t n_arms, const zbso_trial *trials,
                            size_t n, const opt_savings *s, opt_projection *out);

/* ---- footprint: kWh, CO2e, money ---- */

/* One point of a grid's carbon intensity: g CO2e per kWh from t (unix seconds) until the
 * next point. */
typedef struct opt_intensity_point {
    double t;
    double g_per_kwh;
} opt_intensity_point;

#define OPT_CURRENCY_MAX 8

/* The server's configuration; all absent by default, and then no figure is shown. */
typedef struct opt_footprint {
    bool has_intensity;                  /* static intensity or a series */
    double intensity_g_per_kwh;          /* static: used when n_series is 0 */
    const opt_intensity_point *series;   /* ascending t, no two equal; not owned */
    size_t n_series;
    bool has_price;
    double price_per_kwh;
    char currency[OPT_CURRENCY_MAX];     /* ISO 4217 code, or "" */
} opt_footprint;

/* The footprint of one job's figures: server's (NULL: none configured) with the spec's
 * own carbon intensity, when it has one, in place of the server's intensity (static or
 * series; the price and currency stay the server's). Writes into *buf when the spec
 * overrides and returns buf; else returns server (NULL included). */
const opt_footprint *opt_footprint_for_job(const opt_footprint *server,
                                           const zbso_job_spec *spec, opt_footprint *buf);

/* The mean intensity over [start, end] of fp (static, or the series as a step function:
 * before the first point its value holds, after the last the last's), time-weighted; at
 * start when the interval is empty. Needs fp->has_intensity. */
double opt_intensity_mean(const opt_footprint *fp, double start, double end);

/* g CO2e of energy_j spent over [start, end]. Needs fp->has_intensity. */
double opt_co2e_g(const opt_footprint *fp, double energy_j, double start, double end);

/* The CO2e figures of a job's savings, summed as opt_savings_compute sums energy (same
 * trials, same order) from each trial's own CO2e over its interval: spent, the default's
 * mean and saved; has_baseline as in s. Needs fp->has_intensity. */
typedef struct opt_co2e_savings {
    double spent_g, default_mean_g, saved_g;
    bool has_baseline;
} opt_co2e_savings;
void opt_co2e_savings_compute(const zbso_job_spec *spec, const zbso_trial *trials, size_t n,
                              const opt_footprint *fp, opt_co2e_savings *out);

/* Parses a CSV of "timestamp,g_per_kwh" lines (text of len bytes; a header line whose
 * first field is not a number is skipped; timestamps are unix seconds or RFC 3339 UTC
 * "YYYY-MM-DDTHH:MM:SSZ"; blank lines and CRLF are allowed) into out[0..*n-1], sorted
 * ascending, at most cap points. ZBSO_EINVAL with a message naming the line and value: a
 * bad timestamp or intensity (not finite, outside 0..ZBSO_INTENSITY_MAX), two points at
 * one time, no point, more than cap. */
int opt_intensity_parse(const char *text, size_t len, opt_intensity_point *out, size_t cap,
                        size_t *n, zbso_err *err);

#endif
