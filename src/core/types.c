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
