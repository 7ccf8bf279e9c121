/* powerlimit.h: the pure decisions of GPU power-limit optimization (SPEC §6.1): the limits
 * to profile, the state machine of Zeus's GlobalPowerLimitOptimizer and its optimum
 * selectors. No I/O and no clock: the caller measures, sets limits and keeps time. One
 * selector function decides for libzbso (src/power), `zbso run` and the simulator. */
#ifndef ZBSO_CORE_POWERLIMIT_H
#define ZBSO_CORE_POWERLIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/types.h"
#include "util/err.h"

#define OPT_PL_MAX ZBSO_MAX_POWER_LIMITS   /* power limits of one profile, at most */
/* The largest power limit a profile may hold, in W. GPU boards draw at most a few kW; the
 * bound keeps every product of a limit (W -> mW, times world_size) far from overflow and a
 * limit in mW within NVML's unsigned int. */
#define OPT_PL_MAX_W 100000

/* One power limit's profile: Zeus's PowerLimitMeasurement, per step (core/types.h). */
typedef zbso_pl_measurement opt_pl_measurement;

/* Zeus's OptimumSelector subclasses (zeus.optimizer.power_limit). */
typedef enum opt_pl_selector_kind {
    OPT_PL_ZEUS_COST = 0,     /* ZeusCost(eta_knob, world_size): least eta*E + (1-eta)*P*T */
    OPT_PL_ENERGY = 1,        /* Energy: least energy */
    OPT_PL_TIME = 2,          /* Time: least time */
    OPT_PL_MAX_SLOWDOWN = 3,  /* MaxSlowdownConstraint(factor): lowest limit whose time is
                               * at most factor times the time at the highest limit */
} opt_pl_selector_kind;

/* The most GPUs a ZeusCost selector may count (world_size): with OPT_PL_MAX_W, P stays an
 * exact integer in a double. */
#define OPT_PL_WORLD_MAX (INT64_C(1) << 24)

typedef struct opt_pl_selector {
    opt_pl_selector_kind kind;
    double eta_knob;          /* ZEUS_COST: in [0, 1] */
    int64_t world_size;       /* ZEUS_COST: GPUs of the job, >= 1; P = highest limit (W) *
                               * world_size */
    double factor;            /* MAX_SLOWDOWN: >= 1 */
} opt_pl_selector;

/* Checks a selector's parameters as Zeus's constructors do, and world_size against
 * OPT_PL_WORLD_MAX. Returns 0, or ZBSO_EINVAL naming the parameter and its value (an
 * unknown kind too). */
int opt_pl_selector_check(const opt_pl_selector *s, zbso_err *err);

/* Checks measurements m[0..n-1]: 1 to OPT_PL_MAX of them, power limits distinct and
 * between 1 and OPT_PL_MAX_W W, time positive and energy non-negative, both finite.
 * Returns 0 or ZBSO_EINVAL naming the entry, the field and the value. */
int opt_pl_measurements_check(const opt_pl_measurement *m, size_t n, zbso_err *err);

/* The optimum power limit (W) among m[0..n-1] under s, exactly as Zeus's select(): the
 * first entry in m's order wins a tie (profiles list the highest limit first).
 * MAX_SLOWDOWN measures against the first entry with the highest limit. Returns 0 with
 * *out_w set, or what opt_pl_selector_check and opt_pl_measurements_check return. */
int opt_pl_select(const opt_pl_selector *s, const opt_pl_measurement *m, size_t n,
                  int64_t *out_w, zbso_err *err);

/* ---- the state machine of GlobalPowerLimitOptimizer ----------------------------------
 * READY -> WARMUP on the wait'th step (then after an interrupted limit, on the next step);
 * WARMUP -> PROFILING after warmup_steps steps at the limit; PROFILING -> WARMUP of the
 * next lower limit, or DONE after the last one, profile_steps steps later; an epoch's end
 * during WARMUP or PROFILING drops that limit's window and goes back to READY for it. The
 * caller turns each call's action into monitor windows and limit settings. */
typedef enum opt_plo_state {
    OPT_PLO_READY = 0,
    OPT_PLO_WARMUP = 1,
    OPT_PLO_PROFILING = 2,
    OPT_PLO_DONE = 3,
} opt_plo_state;

/* The most steps wait_steps, warmup_steps and profile_steps may each count (2^53: a count
 * of steps stays exact in a double and the sums of the state machine cannot overflow). */
#define OPT_PLO_STEPS_MAX (INT64_C(1) << 53)

typedef struct opt_plo_config {
    int64_t wait_steps;       /* >= 0: steps before the first limit is set */
    int64_t warmup_steps;     /* >= 0: steps at a limit before it is measured */
    int64_t profile_steps;    /* > 0: steps measured at a limit */
    int64_t pl_step_w;        /* > 0: W between the limits profiled */
    int64_t min_limit_mw;     /* the GPUs' constraints (NVML), 0 < min <= max */
    int64_t max_limit_mw;
} opt_plo_config;

/* What the caller does after a call, in this order: cancel or end the window (end: then
 * pass its per-step figures to opt_plo_measured, whose action follows), set the limit,
 * begin the window. */
typedef struct opt_plo_action {
    bool cancel_window;       /* drop the open profiling window */
    bool end_window;          /* close the profiling window and call opt_plo_measured */
    int64_t set_limit_mw;     /* > 0: set every GPU to this limit; 0: leave them */
    bool begin_window;        /* open the profiling window of the current limit */
    bool done;                /* profiling just ended: optimal_mw is chosen (store it) */
} opt_plo_action;

typedef struct opt_plo {
    int64_t limits_mw[OPT_PL_MAX];    /* to profile, highest first */
    size_t n_limits;
    int64_t warmup_steps, profile_steps;
    opt_plo_state state;
    int64_t steps;                    /* READY, WARMUP, PROFILING: steps left */
    size_t index;                     /* READY: the next limit; WARMUP, PROFILING: the
                                       * current one (into limits_mw) */
    int64_t optimal_mw;               /* DONE: the limit chosen */
    bool awaiting;                    /* a window was ended: opt_plo_measured is due */
    opt_pl_measurement meas[OPT_PL_MAX]; /* per step, in profiling order */
    size_t n_meas;
} opt_plo;

/* The limits to profile: Zeus's range(max, min - 1, -pl_step) in mW, highest first.
 * Returns the count (>= 1), or ZBSO_EINVAL when there would be more than cap, for
 * constraints that are not a range within 1 mW..OPT_PL_MAX_W W or a step that is not
 * positive (a step wider than the range gives the highest limit alone, as in Zeus). */
int opt_pl_limits(int64_t min_mw, int64_t max_mw, int64_t pl_step_w, int64_t *out,
                  size_t cap, zbso_err *err);

/* Starts profiling: READY with wait_steps + 1 steps to go; *act sets the highest limit.
 * Returns 0, or ZBSO_EINVAL naming a bad config value (the messages of Zeus's
 * ValueErrors; a count of steps over OPT_PLO_STEPS_MAX too) or too many limits. */
int opt_plo_init(opt_plo *p, const opt_plo_config *c, opt_plo_action *act, zbso_err *err);

/* Starts DONE from a profile made before (Zeus's profile_path, zbso's stored profile):
 * the optimum of m[0..n-1] under s; *act sets it. The config is checked as
 * opt_plo_init does; a profiled limit outside the constraints is ZBSO_EINVAL (profile
 * again). Returns 0 or what opt_pl_select returns. */
int opt_plo_init_done(opt_plo *p, const opt_plo_config *c, const opt_pl_selector *s,
                      const opt_pl_measurement *m, size_t n, opt_plo_action *act,
                      zbso_err *err);

/* A training step begins (Zeus's on_step_begin). Fills *act. */
void opt_plo_step_begin(opt_plo *p, opt_plo_action *act);

/* A training epoch ended (on_epoch_end). Fills *act. */
void opt_plo_epoch_end(opt_plo *p, opt_plo_action *act);

/* The figures of the window that the last action ended, per step: records the current
 * limit's measurement and moves on (the next limit's warm-up, or DONE with the optimum
 * under s). Fills *act. Returns 0; ZBSO_EINTERNAL when no window was ended; ZBSO_EINVAL
 * for a time that is not positive and finite or an energy that is negative or not
 * finite (nothing changes: the caller may end the window again after a retry) or what
 * opt_pl_select returns. */
int opt_plo_measured(opt_plo *p, const opt_pl_selector *s, double time_s, double energy_j,
                     opt_plo_action *act, zbso_err *err);

/* The limit the state machine is at: the one being warmed up or profiled, the optimum
 * once DONE, else the highest. */
int64_t opt_plo_current_mw(const opt_plo *p);

const char *opt_plo_state_name(opt_plo_state s);   /* "Ready" | "Warmup" | ... */

#endif
