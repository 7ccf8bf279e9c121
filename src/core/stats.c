/* stats.c: the cost formula and numpy-exact float64 sum, mean and variance (pairwise
 * summation as numpy 1.24's pairwise_sum_DOUBLE). Pure arithmetic: no allocation, no I/O. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/optimizer.h"

double opt_cost(double energy_j, double time_s, double eta, double max_power_w)
{
    /* Python evaluates `eta * energy + (1 - eta) * max_power * time` left to right:
     * (eta * energy) + (((1 - eta) * max_power) * time). Keep that order. */
    double energy_term = eta * energy_j;
    double time_term = ((1.0 - eta) * max_power_w) * time_s;
    return energy_term + time_term;
}

double opt_trial_cost(const zbso_job_spec *spec, const zbso_trial *trial)
{
    return opt_cost(trial->energy, trial->time, spec->eta_knob, spec->max_power);
}

/* Why the bounds of optimizer.h keep an arm fit finite. Take n <= N = 2^20 rewards, each 0
 * or in [-C, -c] with C = OPT_COST_MAX = 1e150 and c = OPT_COST_MIN = 1e-100, and a prior
 * with |m0| <= P and 0 <= p0 <= P, P = OPT_PRIOR_MAX = 1e150 (so |p0 * m0| <= 1e300).
 * - sum, mean: the rewards share one sign, so no partial sum exceeds n * C ~ 1e156.
 * - variance: |r - mean| <= C, each square <= 1e300, their sum <= N * 1e300 ~ 1e306: v is
 *   finite (C may not exceed sqrt(DBL_MAX / N) ~ 1.3e151), and q = 1/v >= 1e-300 > 0.
 * - v = 0: the arm is mean(r) with infinite precision, finite.
 * - v > 0 and some reward is 0: its deviation is |m| >= c/n, so v >= m^2/n, q <= n^3/c^2
 *   ~ 1e218: n*q <= n^4/c^2 ~ 1e224 and |q * sum| <= q*n*|m| <= n^3/c ~ 1e118.
 * - v > 0 and none is 0: |m| >= c and one deviation is at least 2^-56 |m| (two distinct
 *   doubles of one sign differ by at least 2^-53 of the smaller; if the smallest reward is
 *   under |m|/2 it lies |m|/2 from the mean), so v >= 2^-112 m^2/n, n*q <= 2^112 n^2/c^2 ~
 *   6e245 and |q * sum| <= 2^112 n^2/|m| ~ 6e145.
 * So precision = p0 + n*q is finite and positive, the numerator p0*m0 + q*sum is finite,
 * and their quotient, a weighted mean of m0 and mean(r), is at most max(P, C) in size.
 * The margins dwarf rounding; the service lists at most N trials for one fit. */
bool opt_cost_accepted(double cost)
{
    return cost == 0.0 || (cost >= OPT_COST_MIN && cost <= OPT_COST_MAX);
}

/* Element i as summed: a[i], or (a[i] - center)^2 when squared deviations are summed, so
 * np.var's `x = arr - mean; x = x * x; sum(x)` needs no temporary array. */
static double elem(const double *a, size_t i, double center, int sq_dev)
{
    if (!sq_dev)
        return a[i];
    double d = a[i] - center;
    return d * d;
}

/* numpy's pairwise_sum_DOUBLE: returns the sum in numpy's exact order of additions. */
static double pairwise(const double *a, size_t n, double center, int sq_dev)
{
    if (n < 8) {
        double res = 0.;
        for (size_t i = 0; i < n; i++)
            res += elem(a, i, center, sq_dev);
        return res;
    }
    if (n <= 128) {
        double r[8];
        size_t i;
        for (size_t j = 0; j < 8; j++)
            r[j] = elem(a, j, center, sq_dev);
        for (i = 8; i < n - (n % 8); i += 8)
            for (size_t j = 0; j < 8; j++)
                r[j] += elem(a, i + j, center, sq_dev);
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            res += elem(a, i, center, sq_dev);
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise(a, n2, center, sq_dev) + pairwise(a + n2, n - n2, center, sq_dev);
}

double opt_sum(const double *a, size_t n)
{
    /* np.add.reduce starts from the identity 0.0 and adds the pairwise sum to it. */
    return 0.0 + pairwise(a, n, 0.0, 0);
}

double opt_mean(const double *a, size_t n)
{
    return opt_sum(a, n) / (double)n;
}

double opt_var(const double *a, size_t n)
{
    double mean = opt_mean(a, n);
    return (0.0 + pairwise(a, n, mean, 1)) / (double)n;
}

char *opt_fmt_double(char *buf, double d)
{
    char sci[40], digits[24];
    size_t nd = 0;
    int exp10;
    char *p = buf;

    if (isnan(d) || isinf(d)) {
        snprintf(buf, OPT_FMT_DOUBLE_MAX, "%s", isnan(d) ? "nan" : d < 0 ? "-inf" : "inf");
        return buf;
    }
    /* The shortest %.*e that reads back exactly: the digits Python's repr picks. */
    for (int prec = 0; prec <= 16; prec++) {
        snprintf(sci, sizeof sci, "%.*e", prec, d);
        if (strtod(sci, NULL) == d)
            break;
    }
    const char *q = sci;
    if (*q == '-')
        *p++ = *q++;
    for (; *q != 'e'; q++) {
        if (*q != '.')
            digits[nd++] = *q;
    }
    exp10 = (int)strtol(q + 1, NULL, 10); /* from %.17e: "e+16", "e-05" */
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    /* Python's float repr: fixed notation for 1e-4 <= |d| < 1e16, else "1.5e+16". */
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            *p++ = '0';
            *p++ = '.';
            for (int i = 0; i < -exp10 - 1; i++)
                *p++ = '0';
            memcpy(p, digits, nd);
            p += nd;
        } else {
            for (int i = 0; i <= exp10; i++)
                *p++ = (size_t)i < nd ? digits[i] : '0';
            *p++ = '.';
            if (nd > (size_t)exp10 + 1) {
                memcpy(p, digits + exp10 + 1, nd - (size_t)exp10 - 1);
                p += nd - (size_t)exp10 - 1;
            } else {
                *p++ = '0';
            }
        }
        *p = '\0';
    } else {
        *p++ = digits[0];
        if (nd > 1) {
            *p++ = '.';
            memcpy(p, digits + 1, nd - 1);
            p += nd - 1;
        }
        snprintf(p, OPT_FMT_DOUBLE_MAX - (size_t)(p - buf), "e%c%02d", exp10 < 0 ? '-' : '+',
                 exp10 < 0 ? -exp10 : exp10);
    }
    return buf;
}
