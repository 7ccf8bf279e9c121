/* footprint.h: the server's CO2e and price configuration (issue 25) from cli_config's
 * texts into the core's opt_footprint: the grid intensity (a number, or a CSV file of
 * timestamp,g_per_kwh read here), the energy price and its currency. */
#ifndef ZBSO_CLI_FOOTPRINT_H
#define ZBSO_CLI_FOOTPRINT_H

#include <stdbool.h>

#include "cli/config.h"
#include "core/value.h"
#include "util/err.h"

#define CLI_INTENSITY_POINTS_MAX 1000000 /* points of an intensity CSV (a year at 1/min) */
#define CLI_INTENSITY_FILE_MAX (64u << 20) /* bytes of an intensity CSV */

typedef struct cli_footprint {
    opt_footprint fp;
    opt_intensity_point *series;     /* owned; NULL without a CSV */
} cli_footprint;

/* Fills *out from cfg's carbon_intensity, energy_price and currency ("" = absent).
 * Returns 0, or ZBSO_EINVAL / ZBSO_EIO with a message naming the setting (what_* as the
 * user gave it: a flag or a variable) and the value: an intensity or price that is
 * negative or not a finite number (an intensity text that is not a number is a file
 * path: unreadable, too large, or a bad CSV line), a currency that is not three letters
 * A-Z, a currency without a price. cli_footprint_free releases it. */
int cli_footprint_load(const cli_config *cfg, cli_footprint *out, zbso_err *err);
void cli_footprint_free(cli_footprint *f);

/* &f->fp when something is configured, else NULL (what the documents take). */
const opt_footprint *cli_footprint_get(const cli_footprint *f);

#endif
