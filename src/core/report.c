/* report.c: the decision on a training report (SPEC §3.2, Zeus's report_training_result):
 * keep training, end the trial, or answer a repeated report. Stores nothing itself. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/optimizer.h"

/* Refuses a result whose cost is not accepted (opt_cost_accepted): ZBSO_EINVAL at
 * body.time or body.energy, whichever term of the cost is the larger, naming both values,
 * the cost and the accepted range. */
static int cost_refused(const zbso_job_spec *spec, const zbso_training_result *result,
                        double cost, zbso_err *err)
{
    char time_buf[OPT_FMT_DOUBLE_MAX], energy_buf[OPT_FMT_DOUBLE_MAX];
    char cost_buf[OPT_FMT_DOUBLE_MAX], eta_buf[OPT_FMT_DOUBLE_MAX];
    char power_buf[OPT_FMT_DOUBLE_MAX];
    double energy_term = spec->eta_knob * result->energy;
    double time_term = ((1.0 - spec->eta_knob) * spec->max_power) * result->time;
    return err_set_field(err, ZBSO_EINVAL, "body", time_term > energy_term ? "time" : "energy",
                         "time %s s and energy %s J give cost %s (eta_knob %s, max_power %s "
                         "W); a cost must be 0 or between %g and %g so that the arm's sums, "
                         "means and variances stay finite",
                         opt_fmt_double(time_buf, result->time),
                         opt_fmt_double(energy_buf, result->energy),
                         opt_fmt_double(cost_buf, cost), opt_fmt_double(eta_buf, spec->eta_knob),
                         opt_fmt_double(power_buf, spec->max_power), OPT_COST_MIN,
                         OPT_COST_MAX);
}

int opt_report_decide(const zbso_job *job, const zbso_trial *trial,
                      const zbso_training_result *result, double now,
                      opt_report_decision *out, zbso_err *err)
{
    const zbso_job_spec *spec = &job->spec;
    char cost_buf[OPT_FMT_DOUBLE_MAX], beta_buf[OPT_FMT_DOUBLE_MAX];
    char min_buf[OPT_FMT_DOUBLE_MAX];
    int rc = 0;

    memset(out, 0, sizeof *out);
    out->trial = *trial;
    if (trial->batch_size != result->trial.batch_size) {
        rc = err_set(err, ZBSO_ENOTFOUND,
                     "Trial %lld of job %s has batch size %lld, not %lld",
                     (long long)trial->trial_number, spec->job_id,
                     (long long)trial->batch_size, (long long)result->trial.batch_size);
        goto out;
    }
    if (trial->status == ZBSO_TRIAL_FAILED) {
        rc = err_set(err, ZBSO_ECONFLICT,
                     "Trial %lld of job %s has already failed (ended or timed out); "
                     "its results are not accepted",
                     (long long)trial->trial_number, spec->job_id);
        goto out;
    }
    if (trial->status == ZBSO_TRIAL_SUCCEEDED) {
        out->kind = OPT_REPORT_REPEATED;
        out->response.stop_train = true;
        out->response.converged = trial->converged;
        snprintf(out->response.message, sizeof out->response.message,
                 "Result for this trial(%lld) is already reported.",
                 (long long)trial->trial_number);
        goto out;
    }

    double cost_ub = INFINITY;
    if (spec->has_beta_knob && job->has_min_cost)
        cost_ub = spec->beta_knob * job->min_cost;
    double cost = opt_cost(result->energy, result->time, spec->eta_knob, spec->max_power);
    if (!opt_cost_accepted(cost)) {
        rc = cost_refused(spec, result, cost, err);
        goto out;
    }
    bool within = cost_ub >= cost;
    bool converged = spec->higher_is_better_metric ? spec->target_metric <= result->metric
                                                   : spec->target_metric >= result->metric;
    out->cost = cost;

    if (within && result->current_epoch < spec->max_epochs && !converged) {
        out->kind = OPT_REPORT_CONTINUE;
        out->response.stop_train = false;
        out->response.converged = false;
        snprintf(out->response.message, sizeof out->response.message, "%s", OPT_MSG_CONTINUE);
        /* A lease rewrite per epoch would make every report a write; once a minute keeps
         * continuing reports cheap while still far inside any sensible timeout. */
        if (now - trial->lease_renewed_at >= ZBSO_LEASE_RENEW_S) {
            out->renew_lease = true;
            out->trial.lease_renewed_at = now;
        }
        goto out;
    }

    out->kind = OPT_REPORT_END;
    bool final_converged = converged && within;
    if (final_converged) {
        snprintf(out->response.message, sizeof out->response.message, "Train succeeded");
    } else if (!within) {
        snprintf(out->response.message, sizeof out->response.message,
                 "Batch Size(%lld) exceeded the cost upper bound: current cost(%s) > "
                 "beta_knob(%s)*min_cost(%s)",
                 (long long)trial->batch_size, opt_fmt_double(cost_buf, cost),
                 opt_fmt_double(beta_buf, spec->beta_knob),
                 opt_fmt_double(min_buf, job->min_cost));
    } else {
        snprintf(out->response.message, sizeof out->response.message,
                 "Train failed to converge within max_epoch(%lld)",
                 (long long)spec->max_epochs);
    }
    out->response.stop_train = true;
    out->response.converged = final_converged;
    out->trial.status = ZBSO_TRIAL_SUCCEEDED;
    out->trial.end_time = now;
    out->trial.lease_renewed_at = now;
    out->trial.time = result->time;
    out->trial.energy = result->energy;
    out->trial.metric = result->metric;
    out->trial.epochs = result->current_epoch;
    out->trial.converged = final_converged;
    /* The same order as the message: a run over the bound stops for the bound even when
     * it reached the target or its last epoch. */
    out->trial.stop_reason = final_converged ? ZBSO_STOP_TARGET_REACHED
                             : !within       ? ZBSO_STOP_COST_BOUND
                                             : ZBSO_STOP_MAX_EPOCHS;
    /* Beyond Zeus: only a converged run may set the bar that early-stops later runs. */
    out->update_min_cost = final_converged && (!job->has_min_cost || cost < job->min_cost);
out:
    return rc;
}
