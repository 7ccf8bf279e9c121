/* types.c: the names of the domain enums (SPEC §3), as Zeus spells them on the wire and in
 * its database. Pure lookup tables. */
#include "core/types.h"

const char *zbso_stage_name(zbso_stage s)
{
    switch (s) {
    case ZBSO_STAGE_PRUNING: return "Pruning";
    case ZBSO_STAGE_MAB: return "MAB";
    }
    return "Unknown";
}

const char *zbso_trial_type_name(zbso_trial_type t)
{
    switch (t) {
    case ZBSO_TRIAL_EXPLORATION: return "Exploration";
    case ZBSO_TRIAL_CONCURRENT: return "Concurrent";
    case ZBSO_TRIAL_MAB: return "MAB";
    }
    return "Unknown";
}

const char *zbso_trial_status_name(zbso_trial_status s)
{
    switch (s) {
    case ZBSO_TRIAL_DISPATCHED: return "Dispatched";
    case ZBSO_TRIAL_SUCCEEDED: return "Succeeded";
    case ZBSO_TRIAL_FAILED: return "Failed";
    }
    return "Unknown";
}

const char *zbso_stop_reason_name(zbso_stop_reason r)
{
    switch (r) {
    case ZBSO_STOP_NONE: return NULL;
    case ZBSO_STOP_TARGET_REACHED: return "target_reached";
    case ZBSO_STOP_COST_BOUND: return "cost_bound";
    case ZBSO_STOP_MAX_EPOCHS: return "max_epochs";
    case ZBSO_STOP_ENDED: return "ended";
    case ZBSO_STOP_LEASE_EXPIRED: return "lease_expired";
    case ZBSO_STOP_UNKNOWN: return "unknown";
    }
    return "unknown";
}

zbso_stop_reason zbso_stop_reason_of_code(int64_t code)
{
    if (code == 0)
        return ZBSO_STOP_NONE;
    if (code >= ZBSO_STOP_TARGET_REACHED && code <= ZBSO_STOP_LEASE_EXPIRED)
        return (zbso_stop_reason)code;
    return ZBSO_STOP_UNKNOWN;
}
