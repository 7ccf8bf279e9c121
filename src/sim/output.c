/* output.c: the simulator's results: per-workload summaries against the default and the
 * best fixed configuration, and the files runs.csv, summary.csv, savings.csv and cost.svg,
 * each written under a temporary name and renamed only when all are complete. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/sim.h"

#ifndef ZBSO_DATA_DIR
#error "ZBSO_DATA_DIR must name the repository's data directory"
#endif

#define PATH_MAX_LEN 4096

const char *sim_default_data_dir(void)
{
    return ZBSO_DATA_DIR;
}

void sim_summarize(const sim_workload *w, const sim_result *results, size_t n_seeds,
                   double eta, sim_summary *s)
{
    memset(s, 0, sizeof *s);
    s->w = w;
    s->n_seeds = n_seeds;
    const sim_bs *d = sim_workload_bs(w, w->default_batch_size);
    sim_expect_fixed(w, d, sim_max_pl(d), eta, &s->dflt);
    s->best.cost = INFINITY;
    for (size_t i = 0; i < w->n_bs; i++)
        for (size_t k = 0; k < w->bs[i].n_pl; k++) {
            sim_expect e;
            sim_expect_fixed(w, &w->bs[i], k, eta, &e);
            if (e.feasible && e.cost < s->best.cost) {
                s->best = e;
                s->best_bs = w->bs[i].batch_size;
                s->best_pl_w = w->bs[i].pl_w[k];
            }
        }
    if (n_seeds == 0)
        return;
    s->recurrences = results[0].n_recurrences;
    for (size_t i = 0; i < n_seeds; i++) {
        const sim_result *r = &results[i];
        double n = (double)r->n_recurrences;
        s->energy_vs_default += r->energy_j / (n * s->dflt.energy_j);
        s->time_vs_default += r->time_s / (n * s->dflt.time_s);
        s->cost_vs_default += r->cost / (n * s->dflt.cost);
        s->energy_vs_best += r->energy_j / (n * s->best.energy_j);
        s->time_vs_best += r->time_s / (n * s->best.time_s);
        s->cost_vs_best += r->cost / (n * s->best.cost);
        s->n_unrun += r->n_unrun;
    }
    double k = (double)n_seeds;
    s->energy_vs_default /= k;
    s->time_vs_default /= k;
    s->cost_vs_default /= k;
    s->energy_vs_best /= k;
    s->time_vs_best /= k;
    s->cost_vs_best /= k;
}

/* Returns 0 when f has had no write error, else ZBSO_EIO naming what. */
static int check_stream(FILE *f, const char *what, zbso_err *err)
{
    if (ferror(f))
        return err_set(err, ZBSO_EIO, "writing %s failed: %s", what, strerror(errno));
    return 0;
}

int sim_write_runs(FILE *f, sim_workload *const *ws, size_t n_ws, const sim_result *results,
                   size_t n_seeds, zbso_err *err)
{
    fputs("workload,gpu,seed,recurrence,try,bs,pl,energy,time,reached,cost\n", f);
    for (size_t i = 0; i < n_ws; i++)
        for (size_t s = 0; s < n_seeds; s++) {
            const sim_result *r = &results[i * n_seeds + s];
            for (size_t k = 0; k < r->n_rows; k++) {
                const sim_row *row = &r->rows[k];
                fprintf(f, "%s,%s,%llu,%lld,%lld,%lld,%lld,%.17g,%.17g,%s,%.17g\n",
                        ws[i]->preset.name, ws[i]->gpu, (unsigned long long)r->seed,
                        (long long)row->recurrence, (long long)row->try_no,
                        (long long)row->batch_size, (long long)row->pl_w, row->energy_j,
                        row->time_s, row->reached ? "true" : "false", row->cost);
            }
        }
    return check_stream(f, "runs.csv", err);
}

int sim_write_summary(FILE *f, const sim_summary *s, size_t n, zbso_err *err)
{
    fputs("workload,gpu,seeds,recurrences,default_bs,default_pl,best_bs,best_pl,"
          "energy_vs_default,time_vs_default,cost_vs_default,"
          "energy_vs_best,time_vs_best,cost_vs_best,unrun\n", f);
    for (size_t i = 0; i < n; i++) {
        const sim_summary *x = &s[i];
        fprintf(f, "%s,%s,%zu,%lld,%lld,%.0f,%lld,%lld,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%lld\n",
                x->w->preset.name, x->w->gpu, x->n_seeds, (long long)x->recurrences,
                (long long)x->w->default_batch_size, x->w->max_power_w,
                (long long)x->best_bs, (long long)x->best_pl_w, x->energy_vs_default,
                x->time_vs_default, x->cost_vs_default, x->energy_vs_best, x->time_vs_best,
                x->cost_vs_best, (long long)x->n_unrun);
    }
    return check_stream(f, "summary.csv", err);
}

/* Writes ",x" at 17 significant digits, or "," alone when the value does not exist. */
static void csv_num(FILE *f, bool exists, double x)
{
    if (exists)
        fprintf(f, ",%.17g", x);
    else
        fputc(',', f);
}

int sim_write_savings(FILE *f, sim_workload *const *ws, size_t n_ws,
                      const sim_result *results, size_t n_seeds, zbso_err *err)
{
    fputs(SIM_SAVINGS_HEADER "\n", f);
    for (size_t i = 0; i < n_ws; i++)
        for (size_t k = 0; k < n_seeds; k++) {
            const sim_result *r = &results[i * n_seeds + k];
            const opt_savings *s = &r->savings;
            bool base = s->has_baseline;
            fprintf(f, "%s,%s,%llu,%lld,%lld", ws[i]->preset.name, ws[i]->gpu,
                    (unsigned long long)r->seed, (long long)s->finished,
                    (long long)s->failed);
            csv_num(f, true, s->spent.energy);
            csv_num(f, true, s->spent.time);
            csv_num(f, true, s->spent.cost);
            fprintf(f, ",%lld,%lld", (long long)s->default_batch_size,
                    (long long)s->default_runs);
            csv_num(f, base, s->default_mean.energy);
            csv_num(f, base, s->default_mean.time);
            csv_num(f, base, s->default_mean.cost);
            csv_num(f, base, s->saved.energy);
            csv_num(f, base, s->saved.time);
            csv_num(f, base, s->saved.cost);
            if (s->break_even > 0)
                fprintf(f, ",%lld", (long long)s->break_even);
            else
                fputc(',', f);
            if (s->has_best)
                fprintf(f, ",%lld", (long long)s->best_batch_size);
            else
                fputc(',', f);
            csv_num(f, s->has_best, s->best_mean_cost);
            csv_num(f, s->has_best, s->regret);
            fputc('\n', f);
        }
    return check_stream(f, "savings.csv", err);
}

/* Escapes text for SVG character data into buf (cap bytes). */
static const char *svg_text(const char *text, char *buf, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; text[i] != '\0' && j + 7 < cap; i++) {
        const char *rep = text[i] == '&' ? "&amp;" : text[i] == '<' ? "&lt;"
                        : text[i] == '>' ? "&gt;" : NULL;
        if (rep != NULL) {
            memcpy(buf + j, rep, strlen(rep));
            j += strlen(rep);
        } else {
            buf[j++] = text[i];
        }
    }
    buf[j] = '\0';
    return buf;
}

int sim_write_svg(FILE *f, sim_workload *const *ws, size_t n_ws, const sim_result *results,
                  size_t n_seeds, const sim_summary *s, zbso_err *err)
{
    static const char *colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
    const double W = 860, H = 520, L = 78, R = 200, T = 62, B = 50;
    const double pw = W - L - R, ph = H - T - B;
    int64_t max_rec = 1;
    double max_y = 1.0;
    char esc[2 * SIM_NAME_MAX * 6];

    for (size_t i = 0; i < n_ws; i++)
        for (size_t sd = 0; sd < n_seeds; sd++) {
            const sim_result *r = &results[i * n_seeds + sd];
            if (r->n_recurrences > max_rec)
                max_rec = r->n_recurrences;
            for (int64_t k = 0; k < r->n_recurrences; k++) {
                double y = r->rec_cost[k] / s[i].dflt.cost;
                if (y > max_y)
                    max_y = y;
            }
        }
    /* The y axis in steps of 0.5, capped so one exploration spike cannot flatten all. */
    if (max_y > 6)
        max_y = 6;
    max_y = ceil(max_y * 2) / 2;

    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
            W, H, W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    /* Title and subtitle on lines of their own, so neither is clipped at 860 px. */
    fprintf(f, "<text x=\"%.0f\" y=\"24\" font-size=\"16\" font-weight=\"bold\">zbso "
               "simulate: cost of each recurrence</text>\n", L);
    fprintf(f, "<text x=\"%.0f\" y=\"44\" fill=\"#444\">relative to the default batch "
               "size's expected cost at the highest power limit (1 = as costly); mean over "
               "%zu seed%s</text>\n", L, n_seeds, n_seeds == 1 ? "" : "s");
    /* y ticks every 0.5 up to 3, else every 1; x ticks every 1, 2, 5, 10, 20, 50, ...
     * recurrences, at most 10 of them, on multiples of the step (and at 1). */
    double ystep = max_y <= 3 ? 0.5 : 1.0;
    for (int k = 0; k * ystep <= max_y + 1e-9; k++) {
        double v = k * ystep, y = T + ph - v / max_y * ph;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n",
                L, y, L + pw, y, v == 1.0 ? "#999" : "#eee");
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.1f</text>\n", L - 6,
                y + 4, v);
    }
    int64_t step = 1;
    for (int64_t m = 1; (max_rec - 1) / step >= 10; m *= 10)
        step = (max_rec - 1) / m < 20 ? 2 * m : (max_rec - 1) / m < 50 ? 5 * m : 10 * m;
    for (int64_t x = 1; x <= max_rec; x = x == 1 && step > 1 ? step : x + step) {
        double px = L + (max_rec == 1 ? 0 : (double)(x - 1) / (double)(max_rec - 1) * pw);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>"
                   "\n", px, T + ph, px, T + ph + 4);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%lld</text>\n", px,
                T + ph + 17, (long long)x);
    }
    fprintf(f, "<text transform=\"translate(20 %.1f) rotate(-90)\" text-anchor=\"middle\">"
               "cost / default's expected cost (ratio)</text>\n", T + ph / 2);
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
               "stroke=\"black\"/>\n", L, T, pw, ph);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">recurrence of the job "
               "(1 = first run)</text>\n", L + pw / 2, H - 12);
    for (size_t i = 0; i < n_ws; i++) {
        const char *color = colors[i % (sizeof colors / sizeof colors[0])];
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                color);
        int64_t n = n_seeds > 0 ? results[i * n_seeds].n_recurrences : 0;
        for (int64_t k = 0; k < n; k++) {
            double mean = 0;
            for (size_t sd = 0; sd < n_seeds; sd++)
                mean += results[i * n_seeds + sd].rec_cost[k];
            mean /= (double)n_seeds * s[i].dflt.cost;
            if (mean > max_y)
                mean = max_y;
            double px = L + (max_rec == 1 ? 0 : (double)k / (double)(max_rec - 1) * pw);
            fprintf(f, "%s%.1f,%.1f", k ? " " : "", px, T + ph - mean / max_y * ph);
        }
        fprintf(f, "\"/>\n");
        char label[2 * SIM_NAME_MAX + 4];
        snprintf(label, sizeof label, "%s (%s)", ws[i]->preset.name, ws[i]->gpu);
        double ly = T + 10 + (double)i * 18;
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"3\"/>\n", L + pw + 12, ly, L + pw + 32, ly, color);
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\">%s</text>\n", L + pw + 38, ly + 4,
                svg_text(label, esc, sizeof esc));
    }
    fprintf(f, "</svg>\n");
    return check_stream(f, "cost.svg", err);
}

int sim_check_out_dir(const char *dir, zbso_err *err)
{
    char probe[PATH_MAX_LEN];
    struct stat sb;
    if (strlen(dir) == 0 || strlen(dir) > PATH_MAX_LEN - 64)
        return err_set(err, ZBSO_EIO, "--out '%.200s' is not a usable directory path", dir);
    if (stat(dir, &sb) != 0) {
        if (errno != ENOENT || mkdir(dir, 0777) != 0)
            return err_set(err, ZBSO_EIO, "cannot create --out directory %s: %s", dir,
                           strerror(errno));
    } else if (!S_ISDIR(sb.st_mode)) {
        return err_set(err, ZBSO_EIO, "--out %s is not a directory", dir);
    }
    /* access() would say yes to root on a read-only mount: create a file to be sure. */
    snprintf(probe, sizeof probe, "%s/.zbso-sim-probe-%ld", dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return err_set(err, ZBSO_EIO, "--out directory %s is not writable: %s", dir,
                       strerror(errno));
    close(fd);
    unlink(probe);
    return 0;
}

enum { OUT_RUNS, OUT_SUMMARY, OUT_SAVINGS, OUT_SVG, N_OUT };

int sim_write_outputs(const char *dir, sim_workload *const *ws, size_t n_ws,
                      const sim_result *results, size_t n_seeds, const sim_summary *s,
                      zbso_err *err)
{
    static const char *names[N_OUT] = {"runs.csv", "summary.csv", "savings.csv", "cost.svg"};
    char tmp[N_OUT][PATH_MAX_LEN], final[N_OUT][PATH_MAX_LEN];
    bool made[N_OUT] = {false};
    int rc = 0;

    if ((rc = sim_check_out_dir(dir, err)) < 0)
        return rc;
    for (int i = 0; i < N_OUT; i++) {
        snprintf(tmp[i], sizeof tmp[i], "%s/.%s.tmp-%ld", dir, names[i], (long)getpid());
        snprintf(final[i], sizeof final[i], "%s/%s", dir, names[i]);
    }
    for (int i = 0; i < N_OUT; i++) {
        FILE *f = fopen(tmp[i], "w");
        if (f == NULL) {
            rc = err_set(err, ZBSO_EIO, "cannot create %s: %s", tmp[i], strerror(errno));
            goto out;
        }
        made[i] = true;
        if (i == OUT_RUNS)
            rc = sim_write_runs(f, ws, n_ws, results, n_seeds, err);
        else if (i == OUT_SUMMARY)
            rc = sim_write_summary(f, s, n_ws, err);
        else if (i == OUT_SAVINGS)
            rc = sim_write_savings(f, ws, n_ws, results, n_seeds, err);
        else
            rc = sim_write_svg(f, ws, n_ws, results, n_seeds, s, err);
        if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
            if (rc == 0)
                rc = err_set(err, ZBSO_EIO, "writing %s failed: %s", tmp[i], strerror(errno));
        }
        if (fclose(f) != 0 && rc == 0)
            rc = err_set(err, ZBSO_EIO, "writing %s failed: %s", tmp[i], strerror(errno));
        if (rc < 0)
            goto out;
    }
    for (int i = 0; i < N_OUT; i++) {
        if (rename(tmp[i], final[i]) != 0) {
            rc = err_set(err, ZBSO_EIO, "cannot rename %s to %s: %s", tmp[i], final[i],
                         strerror(errno));
            goto out;
        }
        made[i] = false;
    }
out:
    for (int i = 0; i < N_OUT; i++)
        if (made[i])
            unlink(tmp[i]);
    return rc;
}
