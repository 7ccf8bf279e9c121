/* footprint.c: cli_config's CO2e and price texts into an opt_footprint (footprint.h).
 * Reads the intensity CSV, the only file it touches; the parsing is the core's. */
#include "cli/footprint.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A non-negative finite number filling text. */
static bool parse_amount(const char *text, double *out)
{
    char *end;
    if (text[0] == '\0' || text[0] == ' ' || text[0] == '\t')
        return false;
    errno = 0;
    double v = strtod(text, &end);
    if (*end != '\0' || errno == ERANGE || !isfinite(v) || v < 0)
        return false;
    *out = v;
    return true;
}

/* Reads the whole file at path (at most CLI_INTENSITY_FILE_MAX bytes) into *text. */
static int read_file(const char *path, char **text, size_t *len, zbso_err *err)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    if (f == NULL)
        return err_set(err, ZBSO_EIO, "carbon intensity (--carbon-intensity, "
                       "ZBSO_CARBON_INTENSITY) \"%s\" is neither a number of g CO2e "
                       "per kWh nor a readable CSV file: %s", path, strerror(errno));
    for (;;) {
        if (n == cap) {
            if (cap >= CLI_INTENSITY_FILE_MAX) {
                rc = err_set(err, ZBSO_EINVAL, "carbon intensity file %s is over %u bytes",
                             path, CLI_INTENSITY_FILE_MAX);
                goto out;
            }
            cap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, cap + 1);
            if (nb == NULL) {
                rc = err_set(err, ZBSO_ENOMEM, "out of memory reading %s", path);
                goto out;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        rc = err_set(err, ZBSO_EIO, "cannot read carbon intensity file %s", path);
        goto out;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    buf = NULL;
out:
    free(buf);
    fclose(f);
    return rc;
}

static int load_series(const char *path, cli_footprint *out, zbso_err *err)
{
    char *text = NULL;
    size_t len = 0, n = 0;
    zbso_err perr;
    int rc = read_file(path, &text, &len, err);
    if (rc < 0)
        return rc;
    /* A line holds at least "0,0": no more points than half the bytes. */
    size_t cap = len / 2 + 1 < CLI_INTENSITY_POINTS_MAX ? len / 2 + 1
                                                         : CLI_INTENSITY_POINTS_MAX;
    out->series = malloc(cap * sizeof *out->series);
    if (out->series == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory reading %s", path);
        goto out;
    }
    err_clear(&perr);
    if ((rc = opt_intensity_parse(text, len, out->series, cap, &n, &perr)) < 0) {
        rc = err_set(err, ZBSO_EINVAL, "carbon intensity file %s: %s", path, perr.msg);
        goto out;
    }
    out->fp.series = out->series;
    out->fp.n_series = n;
out:
    free(text);
    return rc;
}

int cli_footprint_load(const cli_config *cfg, cli_footprint *out, zbso_err *err)
{
    int rc = 0;
    memset(out, 0, sizeof *out);
    if (cfg->carbon_intensity[0] != '\0') {
        out->fp.has_intensity = true;
        if (!parse_amount(cfg->carbon_intensity, &out->fp.intensity_g_per_kwh) ||
            out->fp.intensity_g_per_kwh > ZBSO_INTENSITY_MAX) {
            /* A number that is not acceptable is a bad value, not a file name. */
            char *end;
            double v = strtod(cfg->carbon_intensity, &end);
            (void)v;
            if (*end == '\0' && end != cfg->carbon_intensity) {
                rc = err_set(err, ZBSO_EINVAL, "carbon intensity (--carbon-intensity, "
                             "ZBSO_CARBON_INTENSITY) \"%s\" is not a number of g CO2e per kWh "
                             "between 0 and %g", cfg->carbon_intensity, ZBSO_INTENSITY_MAX);
                goto out;
            }
            if ((rc = load_series(cfg->carbon_intensity, out, err)) < 0)
                goto out;
        }
    }
    if (cfg->energy_price[0] != '\0') {
        if (!parse_amount(cfg->energy_price, &out->fp.price_per_kwh)) {
            rc = err_set(err, ZBSO_EINVAL, "energy price (--energy-price, ZBSO_ENERGY_PRICE) "
                         "\"%s\" is not a non-negative number (price per kWh)", cfg->energy_price);
            goto out;
        }
        out->fp.has_price = true;
    }
    if (cfg->currency[0] != '\0') {
        const char *c = cfg->currency;
        if (strlen(c) != 3 || c[0] < 'A' || c[0] > 'Z' || c[1] < 'A' || c[1] > 'Z' ||
            c[2] < 'A' || c[2] > 'Z') {
            rc = err_set(err, ZBSO_EINVAL, "currency (--currency, ZBSO_CURRENCY) \"%s\" is "
                         "not an ISO 4217 code of three capital letters (EUR, USD)", c);
            goto out;
        }
        if (!out->fp.has_price) {
            rc = err_set(err, ZBSO_EINVAL, "currency %s is given without an energy price "
                         "(--energy-price or ZBSO_ENERGY_PRICE)", c);
            goto out;
        }
        snprintf(out->fp.currency, sizeof out->fp.currency, "%s", c);
    }
out:
    if (rc < 0)
        cli_footprint_free(out);
    return rc;
}

void cli_footprint_free(cli_footprint *f)
{
    if (f == NULL)
        return;
    free(f->series);
    memset(f, 0, sizeof *f);
}

const opt_footprint *cli_footprint_get(const cli_footprint *f)
{
    return f->fp.has_intensity || f->fp.has_price ? &f->fp : NULL;
}
