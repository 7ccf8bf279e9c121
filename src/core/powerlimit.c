/* powerlimit.c: power limits to profile, Zeus's GlobalPowerLimitOptimizer state machine
 * and its optimum selectors (zeus/optimizer/power_limit.py), as pure functions: no I/O,
 * no clock, no allocation. */
#include <math.h>
#include <string.h>

#include "core/optimizer.h"
#include "core/powerlimit.h"

int opt_pl_selector_check(const opt_pl_selector *s, zbso_err *err)
{
    char v[OPT_FMT_DOUBLE_MAX];
    switch (s->kind) {
    case OPT_PL_ZEUS_COST:
        if (!(s->eta_knob >= 0 && s->eta_knob <= 1))
            return err_set(err, ZBSO_EINVAL, "eta_knob must be between 0 and 1, inclusive "
                           "both sides; got %s", opt_fmt_double(v, s->eta_knob));
        if (s->world_size < 1)
            return err_set(err, ZBSO_EINVAL, "world_size must be greater than or equal to "
                           "1; got %lld", (long long)s->world_size);
        if (s->world_size > OPT_PL_WORLD_MAX)
            return err_set(err, ZBSO_EINVAL, "world_size must be at most %lld; got %lld",
                           (long long)OPT_PL_WORLD_MAX, (long long)s->world_size);
        return 0;
    case OPT_PL_MAX_SLOWDOWN:
        if (!(s->factor >= 1.0) || !isfinite(s->factor))
            return err_set(err, ZBSO_EINVAL, "max_slowdown_factor must be greater than or "
                           "equal to 1.0. Got %s.", opt_fmt_double(v, s->factor));
        return 0;
    case OPT_PL_ENERGY:
    case OPT_PL_TIME:
        return 0;
    }
    return err_set(err, ZBSO_EINVAL, "unknown optimum selector %d", (int)s->kind);
}

int opt_pl_measurements_check(const opt_pl_measurement *m, size_t n, zbso_err *err)
{
    char v[OPT_FMT_DOUBLE_MAX];
    if (n == 0)
        return err_set(err, ZBSO_EINVAL, "a power profile needs at least one measurement");
    if (n > OPT_PL_MAX)
        return err_set(err, ZBSO_EINVAL, "a power profile holds at most %d measurements, "
                       "not %zu", OPT_PL_MAX, n);
    for (size_t i = 0; i < n; i++) {
        if (m[i].power_limit_w <= 0)
            return err_set(err, ZBSO_EINVAL, "measurement %zu: power_limit %lld W is not "
                           "positive", i, (long long)m[i].power_limit_w);
        if (m[i].power_limit_w > OPT_PL_MAX_W)
            return err_set(err, ZBSO_EINVAL, "measurement %zu: power_limit %lld W is out of "
                           "range: a power limit is 1 to %d W", i,
                           (long long)m[i].power_limit_w, OPT_PL_MAX_W);
        if (!(m[i].time_s > 0) || !isfinite(m[i].time_s))
            return err_set(err, ZBSO_EINVAL, "measurement %zu (%lld W): time %s is not a "
                           "positive finite number", i, (long long)m[i].power_limit_w,
                           opt_fmt_double(v, m[i].time_s));
        if (!(m[i].energy_j >= 0) || !isfinite(m[i].energy_j))
            return err_set(err, ZBSO_EINVAL, "measurement %zu (%lld W): energy %s is not a "
                           "non-negative finite number", i, (long long)m[i].power_limit_w,
                           opt_fmt_double(v, m[i].energy_j));
        for (size_t k = 0; k < i; k++)
            if (m[k].power_limit_w == m[i].power_limit_w)
                return err_set(err, ZBSO_EINVAL, "measurements %zu and %zu both have power "
                               "limit %lld W", k, i, (long long)m[i].power_limit_w);
    }
    return 0;
}

/* The value a selector minimizes for entry i (ZEUS_COST with max_power_w). */
static double key_of(const opt_pl_selector *s, const opt_pl_measurement *e, double max_power_w)
{
    switch (s->kind) {
    case OPT_PL_ENERGY: return e->energy_j;
    case OPT_PL_TIME: return e->time_s;
    default: return opt_cost(e->energy_j, e->time_s, s->eta_knob, max_power_w);
    }
}

int opt_pl_select(const opt_pl_selector *s, const opt_pl_measurement *m, size_t n,
                  int64_t *out_w, zbso_err *err)
{
    int rc = opt_pl_selector_check(s, err);
    if (rc == 0)
        rc = opt_pl_measurements_check(m, n, err);
    if (rc < 0)
        return rc;
    size_t top = 0;
    for (size_t i = 1; i < n; i++)
        if (m[i].power_limit_w > m[top].power_limit_w)
            top = i;
    if (s->kind == OPT_PL_MAX_SLOWDOWN) {
        /* Python's min() over the feasible limits; the highest limit is always feasible. */
        double bound = s->factor * m[top].time_s;
        int64_t best = m[top].power_limit_w;
        for (size_t i = 0; i < n; i++)
            if (m[i].time_s <= bound && m[i].power_limit_w < best)
                best = m[i].power_limit_w;
        *out_w = best;
        return 0;
    }
    /* Zeus: max(power_limit) * world_size, an integer in Python, then zeus_cost. Both
     * factors are bounded (measurements_check, selector_check): the product is at most
     * 2^41, exact in a double. Only ZeusCost has a world_size. */
    double max_power_w =
        s->kind == OPT_PL_ZEUS_COST ? (double)(m[top].power_limit_w * s->world_size) : 0;
    size_t best = 0;
    double best_key = key_of(s, &m[0], max_power_w);
    for (size_t i = 1; i < n; i++) {
        double k = key_of(s, &m[i], max_power_w);
        if (k < best_key) {
            best_key = k;
            best = i;
        }
    }
    *out_w = m[best].power_limit_w;
    return 0;
}

int opt_pl_limits(int64_t min_mw, int64_t max_mw, int64_t pl_step_w, int64_t *out,
                  size_t cap, zbso_err *err)
{
    if (min_mw <= 0 || max_mw < min_mw || max_mw > (int64_t)OPT_PL_MAX_W * 1000)
        return err_set(err, ZBSO_EINVAL, "power limit constraints [%lld, %lld] mW are not a "
                       "range of positive limits up to %d W", (long long)min_mw,
                       (long long)max_mw, OPT_PL_MAX_W);
    if (pl_step_w <= 0)
        return err_set(err, ZBSO_EINVAL, "pl_step must be positive; got %lld",
                       (long long)pl_step_w);
    /* A step too wide to count in mW leaves the highest limit alone, as any step wider
     * than the range does; l - step_mw >= 1 - INT64_MAX cannot overflow. */
    int64_t step_mw;
    if (__builtin_mul_overflow(pl_step_w, 1000, &step_mw))
        step_mw = INT64_MAX;
    size_t n = 0;
    for (int64_t l = max_mw; l >= min_mw; l -= step_mw) {
        if (n == cap)
            return err_set(err, ZBSO_EINVAL, "pl_step %lld W gives more than %zu power "
                           "limits between %lld and %lld W; use a larger pl_step",
                           (long long)pl_step_w, cap, (long long)(min_mw / 1000),
                           (long long)(max_mw / 1000));
        out[n++] = l;
    }
    return (int)n;
}

/* Zeus's constructor checks, then the limits. */
static int setup(opt_plo *p, const opt_plo_config *c, zbso_err *err)
{
    if (c->wait_steps < 0)
        return err_set(err, ZBSO_EINVAL, "wait_steps must be non-negative; got %lld",
                       (long long)c->wait_steps);
    if (c->warmup_steps < 0)
        return err_set(err, ZBSO_EINVAL, "warmup_steps must be non-negative; got %lld",
                       (long long)c->warmup_steps);
    if (c->profile_steps <= 0)
        return err_set(err, ZBSO_EINVAL, "profile_steps must be positive; got %lld",
                       (long long)c->profile_steps);
    /* wait_steps + 1 below, and counts of steps turned into doubles by the callers. */
    if (c->wait_steps > OPT_PLO_STEPS_MAX || c->warmup_steps > OPT_PLO_STEPS_MAX ||
        c->profile_steps > OPT_PLO_STEPS_MAX)
        return err_set(err, ZBSO_EINVAL, "%s must be at most %lld; got %lld",
                       c->wait_steps > OPT_PLO_STEPS_MAX     ? "wait_steps"
                       : c->warmup_steps > OPT_PLO_STEPS_MAX ? "warmup_steps"
                                                             : "profile_steps",
                       (long long)OPT_PLO_STEPS_MAX,
                       (long long)(c->wait_steps > OPT_PLO_STEPS_MAX     ? c->wait_steps
                                   : c->warmup_steps > OPT_PLO_STEPS_MAX ? c->warmup_steps
                                                                         : c->profile_steps));
    memset(p, 0, sizeof *p);
    int n = opt_pl_limits(c->min_limit_mw, c->max_limit_mw, c->pl_step_w, p->limits_mw,
                          OPT_PL_MAX, err);
    if (n < 0)
        return n;
    p->n_limits = (size_t)n;
    p->warmup_steps = c->warmup_steps;
    p->profile_steps = c->profile_steps;
    return 0;
}

/* The limit in mW of a measurement's w (1..OPT_PL_MAX_W, checked by opt_pl_select): the
 * profiled limit it came from (which need not be a whole number of W), else w W within
 * the constraints. */
static int64_t limit_mw_of(const opt_plo *p, int64_t w)
{
    for (size_t i = 0; i < p->n_limits; i++)
        if (p->limits_mw[i] / 1000 == w)
            return p->limits_mw[i];
    int64_t mw = w * 1000;
    int64_t lo = p->limits_mw[p->n_limits - 1], hi = p->limits_mw[0];
    return mw < lo ? lo : mw > hi ? hi : mw;
}

static void act_clear(opt_plo_action *act)
{
    memset(act, 0, sizeof *act);
}

int opt_plo_init(opt_plo *p, const opt_plo_config *c, opt_plo_action *act, zbso_err *err)
{
    act_clear(act);
    int rc = setup(p, c, err);
    if (rc < 0)
        return rc;
    p->state = OPT_PLO_READY;
    p->steps = c->wait_steps + 1;
    p->index = 0;
    act->set_limit_mw = p->limits_mw[0];
    return 0;
}

int opt_plo_init_done(opt_plo *p, const opt_plo_config *c, const opt_pl_selector *s,
                      const opt_pl_measurement *m, size_t n, opt_plo_action *act,
                      zbso_err *err)
{
    int64_t best_w;
    act_clear(act);
    int rc = setup(p, c, err);
    if (rc == 0)
        rc = opt_pl_select(s, m, n, &best_w, err);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        /* 1..OPT_PL_MAX_W W (opt_pl_select checked): no overflow in mW. */
        int64_t mw = m[i].power_limit_w * 1000;
        /* A limit stored in whole W may sit up to 999 mW under a constraint in mW. */
        if (mw > c->max_limit_mw || mw + 999 < c->min_limit_mw)
            return err_set(err, ZBSO_EINVAL, "the profile's power limit %lld W is outside "
                           "the GPUs' constraints [%lld, %lld] mW",
                           (long long)m[i].power_limit_w, (long long)c->min_limit_mw,
                           (long long)c->max_limit_mw);
    }
    memcpy(p->meas, m, n * sizeof *m);
    p->n_meas = n;
    p->state = OPT_PLO_DONE;
    p->optimal_mw = limit_mw_of(p, best_w);
    act->set_limit_mw = p->optimal_mw;
    act->done = true;
    return 0;
}

/* Warm-up of limit i starts with this step (or its measuring, without warm-up). */
static void start_limit(opt_plo *p, size_t i, opt_plo_action *act)
{
    p->index = i;
    act->set_limit_mw = p->limits_mw[i];
    if (p->warmup_steps > 0) {
        p->state = OPT_PLO_WARMUP;
        p->steps = p->warmup_steps;
        return;
    }
    /* Zeus cannot take warmup_steps 0 (its Warmup state needs a positive count); zbso
     * measures from the step the limit is set. */
    p->state = OPT_PLO_PROFILING;
    p->steps = p->profile_steps;
    act->begin_window = true;
}

void opt_plo_step_begin(opt_plo *p, opt_plo_action *act)
{
    act_clear(act);
    switch (p->state) {
    case OPT_PLO_READY:
        if (--p->steps == 0)
            start_limit(p, p->index, act);
        break;
    case OPT_PLO_WARMUP:
        if (--p->steps == 0) {
            p->state = OPT_PLO_PROFILING;
            p->steps = p->profile_steps;
            act->begin_window = true;
        }
        break;
    case OPT_PLO_PROFILING:
        if (--p->steps == 0) {
            act->end_window = true;
            p->awaiting = true;
        }
        break;
    case OPT_PLO_DONE:
        break;
    }
}

void opt_plo_epoch_end(opt_plo *p, opt_plo_action *act)
{
    act_clear(act);
    if (p->state != OPT_PLO_WARMUP && p->state != OPT_PLO_PROFILING)
        return;
    act->cancel_window = p->state == OPT_PLO_PROFILING;
    p->state = OPT_PLO_READY;
    p->steps = 1;
    act->set_limit_mw = p->limits_mw[0];
}

int opt_plo_measured(opt_plo *p, const opt_pl_selector *s, double time_s, double energy_j,
                     opt_plo_action *act, zbso_err *err)
{
    char v[OPT_FMT_DOUBLE_MAX];
    act_clear(act);
    if (!p->awaiting || p->state != OPT_PLO_PROFILING)
        return err_set(err, ZBSO_EINTERNAL, "opt_plo_measured: no profiling window was "
                       "ended (state %s)", opt_plo_state_name(p->state));
    if (!(time_s > 0) || !isfinite(time_s))
        return err_set(err, ZBSO_EINVAL, "the profile of %lld W measured a time of %s s per "
                       "step, not a positive finite number",
                       (long long)(p->limits_mw[p->index] / 1000), opt_fmt_double(v, time_s));
    if (!(energy_j >= 0) || !isfinite(energy_j))
        return err_set(err, ZBSO_EINVAL, "the profile of %lld W measured an energy of %s J "
                       "per step, not a non-negative finite number",
                       (long long)(p->limits_mw[p->index] / 1000),
                       opt_fmt_double(v, energy_j));
    p->meas[p->n_meas++] =
        (opt_pl_measurement){p->limits_mw[p->index] / 1000, time_s, energy_j};
    if (p->index + 1 < p->n_limits) {
        p->awaiting = false;
        start_limit(p, p->index + 1, act);
        return 0;
    }
    int64_t best_w;
    int rc = opt_pl_select(s, p->meas, p->n_meas, &best_w, err);
    if (rc < 0) {
        p->n_meas--;
        return rc;
    }
    p->awaiting = false;
    p->state = OPT_PLO_DONE;
    p->optimal_mw = limit_mw_of(p, best_w);
    act->set_limit_mw = p->optimal_mw;
    act->done = true;
    return 0;
}

int64_t opt_plo_current_mw(const opt_plo *p)
{
    switch (p->state) {
    case OPT_PLO_WARMUP:
    case OPT_PLO_PROFILING: return p->limits_mw[p->index];
    case OPT_PLO_DONE: return p->optimal_mw;
    default: return p->limits_mw[0];
    }
}

const char *opt_plo_state_name(opt_plo_state s)
{
    switch (s) {
    case OPT_PLO_READY: return "Ready";
    case OPT_PLO_WARMUP: return "Warmup";
    case OPT_PLO_PROFILING: return "Profiling";
    case OPT_PLO_DONE: return "Done";
    }
    return "?";
}
