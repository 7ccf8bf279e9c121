/* fuzz_intensity.c: a grid intensity CSV (`zbso serve --carbon-intensity FILE`, SPEC §5
 * "Footprint") through opt_intensity_parse. Points that parse are sorted, distinct in time,
 * finite and non-negative, at most the capacity; a refusal has a message; the same text
 * parses to the same points again; every interval's mean intensity lies between the
 * series' least and greatest value and a trial's CO2e is finite. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/value.h"
#include "fuzz.h"

#define CAP 64  /* a small capacity, so that "more than cap points" is reached too */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_copy(data, size);
    opt_intensity_point pts[CAP], again[CAP];
    size_t n = 0, m = 0;
    zbso_err err;
    err_clear(&err);
    int rc = opt_intensity_parse(text, size, pts, CAP, &n, &err);
    if (rc < 0) {
        FUZZ_CHECK(rc == ZBSO_EINVAL);
        FUZZ_CHECK(err.msg[0] != '\0');
        FUZZ_CHECK(n == 0);
        free(text);
        return 0;
    }
    FUZZ_CHECK(n >= 1 && n <= CAP);
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(isfinite(pts[i].t) && isfinite(pts[i].g_per_kwh));
        FUZZ_CHECK(pts[i].g_per_kwh >= 0 && pts[i].g_per_kwh <= ZBSO_INTENSITY_MAX);
        FUZZ_CHECK(i == 0 || pts[i - 1].t < pts[i].t);
        lo = fmin(lo, pts[i].g_per_kwh);
        hi = fmax(hi, pts[i].g_per_kwh);
    }
    FUZZ_CHECK(opt_intensity_parse(text, size, again, CAP, &m, &err) == 0);
    FUZZ_CHECK(m == n && memcmp(pts, again, n * sizeof pts[0]) == 0);

    opt_footprint fp;
    memset(&fp, 0, sizeof fp);
    fp.has_intensity = true;
    fp.series = pts;
    fp.n_series = n;
    /* Intervals around, between and beyond the points. */
    double edges[] = {pts[0].t - 1e3, pts[0].t, pts[n / 2].t, pts[n - 1].t,
                      pts[n - 1].t + 1e3};
    for (size_t a = 0; a < 5; a++) {
        for (size_t b = a; b < 5; b++) {
            double mean = opt_intensity_mean(&fp, edges[a], edges[b]);
            /* Sums of products may round a hair past the extremes. */
            double slack = 1e-9 * (hi > 1 ? hi : 1);
            if (isfinite(mean)) {
                FUZZ_CHECK(mean >= lo - slack && mean <= hi + slack);
                FUZZ_CHECK(isfinite(opt_co2e_g(&fp, 3.6e6, edges[a], edges[b])));
            } else {
                /* Only a span too wide for a double (times near +-1e308) may give one. */
                FUZZ_CHECK(!isfinite(edges[b] - edges[a]) || !isfinite(hi * (edges[b] -
                                                                             edges[a])));
            }
        }
    }
    free(text);
    return 0;
}
