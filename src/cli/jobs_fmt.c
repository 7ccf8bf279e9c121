/* jobs_fmt.c: `zbso jobs` output (jobs_fmt.h): the inspection documents as JSON, aligned
 * tables and CSV. Column lists name the documents' fields (the inspection API's shapes);
 * no figure is computed here beyond joining and rounding for a terminal. */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/jobs_fmt.h"
#include "cli/table.h"

#define DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY)

/* How a value is shown in a table (CSV always shows the JSON value itself). */
typedef enum kind {
    K_STR,     /* a string, escaped for the terminal */
    K_INT,     /* an integer */
    K_F1,      /* joules, seconds, costs: one decimal */
    K_G,       /* a metric or a precision: %.6g */
    K_TIME,    /* unix seconds as UTC, "2026-11-23T22:30:05Z" */
    K_BOOL,    /* yes / no */
    K_LIST,    /* an array of integers or strings: "8,16,32" */
    K_PCT,     /* a percentage: one decimal and "%" */
    K_KWH,     /* kWh: three decimals */
    K_BREAK_EVEN, /* the savings object: its break-even recurrence, "not yet" when there is
                   * a baseline but no break-even, else "-" */
} kind;

typedef struct column {
    const char *header;   /* the table's header, with its unit */
    const char *path;     /* the field in the row's object, '.' between levels; the CSV
                           * header */
    kind k;
} column;

/* CO2e and price fields exist only when the server (or, for the intensity, the job) has
 * them configured: a column or row of them is shown only when some row has the field, so
 * none appears without them. */
static bool optional_path(const char *path)
{
    static const char *const tails[] = {"co2e_g", "price", "currency",
                                        "carbon_intensity_g_per_kwh"};
    size_t n = strlen(path);
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        size_t m = strlen(tails[i]);
        if (n >= m && strcmp(path + n - m, tails[i]) == 0 && (n == m || path[n - m - 1] == '.'))
            return true;
    }
    return false;
}

int jobs_format_parse(const char *text, jobs_format *out, zbso_err *err)
{
    static const char *const names[] = {"table", "json", "csv"};
    for (int i = 0; i < 3; i++)
        if (strcmp(text, names[i]) == 0) {
            *out = (jobs_format)i;
            return 0;
        }
    return err_set(err, ZBSO_EINVAL, "--format '%s' is not one of table, json, csv", text);
}

/* The value at a dotted path below v, or NULL when a level is missing. */
static const json_t *at(const json_t *v, const char *path)
{
    char key[64];
    while (v != NULL && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof key)
            return NULL;
        memcpy(key, path, n);
        key[n] = '\0';
        v = json_is_object(v) ? json_object_get(v, key) : NULL;
        path += n + (path[n] == '.');
    }
    return v;
}

/* Writes unix seconds t as UTC into out. */
static void utc(double t, char *out, size_t cap)
{
    struct tm tm;
    time_t s = (time_t)floor(t);
    if (!isfinite(t) || gmtime_r(&s, &tm) == NULL || strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ",
                                                             &tm) == 0)
        snprintf(out, cap, "%.17g", t);
}

/* Appends the table cell of v shown as k: "-" for a missing or null value; a value of
 * another type than k expects is shown as its JSON text. */
static void cell(cli_table *t, const json_t *v, kind k)
{
    char buf[64];
    if (v == NULL || json_is_null(v)) {
        cli_table_cell(t, "-");
        return;
    }
    switch (k) {
    case K_STR:
        if (json_is_string(v)) {
            cli_table_cell(t, json_string_value(v));
            return;
        }
        break;
    case K_INT:
        if (json_is_integer(v)) {
            cli_table_cellf(t, "%" PRId64, (int64_t)json_integer_value(v));
            return;
        }
        break;
    case K_F1:
    case K_G:
    case K_TIME:
    case K_PCT:
    case K_KWH:
        if (json_is_number(v)) {
            double x = json_number_value(v);
            if (k == K_TIME) {
                utc(x, buf, sizeof buf);
                cli_table_cell(t, buf);
            } else if (k == K_PCT) {
                cli_table_cellf(t, "%.1f%%", x);
            } else {
                cli_table_cellf(t, k == K_F1 ? "%.1f" : k == K_KWH ? "%.3f" : "%.6g", x);
            }
            return;
        }
        break;
    case K_BREAK_EVEN:
        if (json_is_object(v)) {
            const json_t *be = json_object_get(v, "break_even_recurrence");
            if (json_is_integer(be))
                cli_table_cellf(t, "%" PRId64, (int64_t)json_integer_value(be));
            else
                cli_table_cell(t, json_is_object(json_object_get(v, "saved")) ? "not yet"
                                                                              : "-");
            return;
        }
        break;
    case K_BOOL:
        if (json_is_boolean(v)) {
            cli_table_cell(t, json_is_true(v) ? "yes" : "no");
            return;
        }
        break;
    case K_LIST:
        if (json_is_array(v)) {
            size_t i;
            const json_t *x;
            char *text = NULL;
            size_t len = 0;
            FILE *m = open_memstream(&text, &len);
            if (m == NULL)
                abort();
            json_array_foreach(v, i, x) {
                if (i > 0)
                    fputc(',', m);
                if (json_is_integer(x))
                    fprintf(m, "%" PRId64, (int64_t)json_integer_value(x));
                else if (json_is_string(x))
                    fputs(json_string_value(x), m);
                else
                    fputc('?', m);
            }
            fclose(m);
            cli_table_cell(t, len > 0 ? text : "-");
            free(text);
            return;
        }
        break;
    }
    char *text = json_dumps(v, DUMP_FLAGS);
    if (text == NULL)
        abort();
    cli_table_cell(t, text);
    free(text);
}

void jobs_csv_field(FILE *to, const char *s, bool text)
{
    /* OWASP's advice against CSV injection: a spreadsheet runs a cell that starts with
     * one of these as a formula (=HYPERLINK(...), +cmd|..., a tab or CR before one), so
     * such a text cell gets a leading quote, which makes the spreadsheet show it as text.
     * Numbers are written as they are: "-3.5" is a number to a spreadsheet, never a
     * formula, and a program reading the CSV must get the number. */
    bool guard = text && s[0] != '\0' && strchr("=+-@\t\r", s[0]) != NULL;
    bool quote = strpbrk(s, ",\"\r\n") != NULL;
    if (quote)
        fputc('"', to);
    if (guard)
        fputc('\'', to);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', to);
        fputc(*s, to);
    }
    if (quote)
        fputc('"', to);
}

/* Writes v as a CSV field: a string as text, null or missing as nothing, anything else
 * as its JSON text (numbers with 17 significant digits, as the documents have them). */
static void csv_value(FILE *to, const json_t *v)
{
    if (v == NULL || json_is_null(v))
        return;
    if (json_is_string(v)) {
        jobs_csv_field(to, json_string_value(v), true);
        return;
    }
    char *text = json_dumps(v, DUMP_FLAGS);
    if (text == NULL)
        abort();
    jobs_csv_field(to, text, false);
    free(text);
}

/* Which of cols to show: all but the optional ones no row of rows (an array, or one
 * object) has. */
static void shown_cols(const column *cols, size_t n, const json_t *rows, bool *shown)
{
    for (size_t i = 0; i < n; i++) {
        shown[i] = !optional_path(cols[i].path);
        if (json_is_object(rows)) {
            shown[i] = shown[i] || at(rows, cols[i].path) != NULL;
            continue;
        }
        size_t r;
        const json_t *row;
        json_array_foreach(rows, r, row)
            shown[i] = shown[i] || at(row, cols[i].path) != NULL;
    }
}

#define COLS_MAX 64  /* columns of one list */

/* The header of cols shown for rows. */
static void csv_header_for(FILE *to, const column *cols, size_t n, const char *prefix,
                           const json_t *rows)
{
    bool shown[COLS_MAX];
    shown_cols(cols, n, rows, shown);
    for (size_t i = 0, k = 0; i < n; i++) {
        if (!shown[i])
            continue;
        if (k++ > 0)
            fputc(',', to);
        fputs(prefix, to);
        jobs_csv_field(to, cols[i].path, true);
    }
}

/* Writes unix seconds t as RFC 3339 UTC with milliseconds ("2026-11-23T22:30:05.250Z"),
 * which spreadsheets and pandas read as a time; a value out of range as its number. */
static void csv_time(FILE *to, double t)
{
    struct tm tm;
    char buf[64];
    double s = floor(t);
    time_t secs = (time_t)s;
    long ms = lround((t - s) * 1000.0);
    if (ms == 1000) {
        secs++;
        ms = 0;
    }
    if (!isfinite(t) || fabs(t) > 1e13 || gmtime_r(&secs, &tm) == NULL ||
        strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
        fprintf(to, "%.17g", t);
        return;
    }
    fprintf(to, "%s.%03ldZ", buf, ms);
}

static void csv_header(FILE *to, const column *cols, size_t n, const char *prefix)
{
    csv_header_for(to, cols, n, prefix, NULL);
}

/* One row of the cols shown for rows. */
static void csv_row_for(FILE *to, const column *cols, size_t n, const json_t *row,
                        const json_t *rows)
{
    bool shown[COLS_MAX];
    shown_cols(cols, n, rows, shown);
    for (size_t i = 0, k = 0; i < n; i++) {
        if (!shown[i])
            continue;
        if (k++ > 0)
            fputc(',', to);
        const json_t *v = row != NULL ? at(row, cols[i].path) : NULL;
        if (cols[i].k == K_TIME && json_is_number(v))
            csv_time(to, json_number_value(v));
        else
            csv_value(to, v);
    }
}

static void csv_row(FILE *to, const column *cols, size_t n, const json_t *row)
{
    csv_row_for(to, cols, n, row, NULL);
}

/* A table of cols with one row per element of rows (an array). */
static cli_table *rows_table(const column *cols, size_t n, const json_t *rows)
{
    char align[COLS_MAX + 1] = "";
    bool shown[COLS_MAX];
    size_t m = 0;
    shown_cols(cols, n, rows, shown);
    for (size_t i = 0; i < n && m < COLS_MAX; i++)
        if (shown[i])
            align[m++] = cols[i].k == K_STR || cols[i].k == K_TIME || cols[i].k == K_LIST ||
                                 cols[i].k == K_BOOL || cols[i].k == K_BREAK_EVEN
                             ? 'l'
                             : 'r';
    cli_table *t = cli_table_new(m, align);
    for (size_t i = 0; i < n; i++)
        if (shown[i])
            cli_table_cell(t, cols[i].header);
    cli_table_end_row(t);
    size_t r;
    const json_t *row;
    json_array_foreach(rows, r, row) {
        for (size_t i = 0; i < n; i++)
            if (shown[i])
                cell(t, at(row, cols[i].path), cols[i].k);
        cli_table_end_row(t);
    }
    return t;
}

/* Prints t and frees it. */
static void put_table(FILE *to, cli_table *t)
{
    cli_table_print(t, to);
    cli_table_free(t);
}

/* The end of every document: ZBSO_EIO when anything written to `to` failed. */
static int done(FILE *to, zbso_err *err)
{
    if (fflush(to) != 0 || ferror(to))
        return err_set(err, ZBSO_EIO, "cannot write the output");
    return 0;
}

static int put_json(FILE *to, const json_t *doc, zbso_err *err)
{
    char *text = json_dumps(doc, DUMP_FLAGS);
    if (text == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory writing JSON");
    fprintf(to, "%s\n", text);
    free(text);
    return done(to, err);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- GET /jobs ---- */

/* The headline first (issue 25): the cost saved, the optimizer's objective, against
 * every recurrence at the default batch size, with energy and time beside it. */
static const column list_table_cols[] = {
    {"job id", "job_id", K_STR},
    {"stage", "stage", K_STR},
    {"cost saved (J)", "savings.saved.cost", K_F1},
    {"cost saved", "savings.saved_pct.cost", K_PCT},
    {"break-even", "savings", K_BREAK_EVEN},
    {"energy saved (kWh)", "savings.saved.energy_kwh", K_KWH},
    {"energy saved", "savings.saved_pct.energy", K_PCT},
    {"time saved (s)", "savings.saved.time_s", K_F1},
    {"time saved", "savings.saved_pct.time", K_PCT},
    {"CO2e saved (g)", "savings.saved.co2e_g", K_F1},
    {"price saved", "savings.saved.price", K_G},
    {"trials", "trials.total", K_INT},
    {"running", "trials.Dispatched", K_INT},
    {"failed", "trials.Failed", K_INT},
    {"best bs", "best_batch_size", K_INT},
    {"policy", "policy", K_STR},
    {"updated (UTC)", "updated_at", K_TIME},
};

static const column list_csv_cols[] = {
    {"", "job_id", K_STR},
    {"", "job_id_prefix", K_STR},
    {"", "stage", K_STR},
    {"", "created_at", K_TIME},
    {"", "updated_at", K_TIME},
    {"", "trials.total", K_INT},
    {"", "trials.Dispatched", K_INT},
    {"", "trials.Succeeded", K_INT},
    {"", "trials.Failed", K_INT},
    {"", "min_cost", K_F1},
    {"", "min_cost_batch_size", K_INT},
    {"", "best_batch_size", K_INT},
    {"", "savings.finished_trials", K_INT},
    {"", "savings.failed_trials", K_INT},
    {"", "savings.spent.energy_j", K_F1},
    {"", "savings.spent.time_s", K_F1},
    {"", "savings.spent.cost", K_F1},
    {"", "savings.default_batch_size", K_INT},
    {"", "savings.default_runs", K_INT},
    {"", "savings.default_expected.energy_j", K_F1},
    {"", "savings.default_expected.time_s", K_F1},
    {"", "savings.default_expected.cost", K_F1},
    {"", "savings.saved.energy_j", K_F1},
    {"", "savings.saved.time_s", K_F1},
    {"", "savings.saved.cost", K_F1},
    {"", "savings.break_even_recurrence", K_INT},
    {"", "savings.best_batch_size", K_INT},
    {"", "savings.best_expected_cost", K_F1},
    {"", "savings.regret", K_F1},
    {"", "savings.saved_pct.cost", K_PCT},
    {"", "savings.saved_pct.energy", K_PCT},
    {"", "savings.saved_pct.time", K_PCT},
    {"", "savings.spent.energy_kwh", K_KWH},
    {"", "savings.saved.energy_kwh", K_KWH},
    {"", "savings.spent.co2e_g", K_F1},
    {"", "savings.saved.co2e_g", K_F1},
    {"", "savings.spent.price", K_G},
    {"", "savings.saved.price", K_G},
    {"", "savings.currency", K_STR},
    {"", "trials.by_stop_reason.target_reached", K_INT},
    {"", "trials.by_stop_reason.cost_bound", K_INT},
    {"", "trials.by_stop_reason.max_epochs", K_INT},
    {"", "trials.by_stop_reason.ended", K_INT},
    {"", "trials.by_stop_reason.lease_expired", K_INT},
    {"", "trials.by_stop_reason.unknown", K_INT},
    {"", "policy", K_STR},
};

/* The array field name of doc, or NULL when there is none (jansson's array functions
 * take NULL as an empty array). */
static const json_t *array_at(const json_t *doc, const char *name)
{
    const json_t *a = json_is_object(doc) ? json_object_get(doc, name) : NULL;
    return json_is_array(a) ? a : NULL;
}

static void csv_rows(FILE *to, const column *cols, size_t n, const json_t *rows)
{
    size_t r;
    const json_t *row;
    csv_header_for(to, cols, n, "", rows);
    fputs("\r\n", to);
    json_array_foreach(rows, r, row) {
        csv_row_for(to, cols, n, row, rows);
        fputs("\r\n", to);
    }
}

int jobs_fmt_list(FILE *to, jobs_format f, const json_t *doc, zbso_err *err)
{
    const json_t *jobs = array_at(doc, "jobs");
    if (f == JOBS_FMT_JSON)
        return put_json(to, doc, err);
    if (f == JOBS_FMT_CSV)
        csv_rows(to, list_csv_cols, N(list_csv_cols), jobs);
    else
        put_table(to, rows_table(list_table_cols, N(list_table_cols), jobs));
    return done(to, err);
}

/* ---- GET /jobs/{job_id}/trials ---- */

static const column trial_table_cols[] = {
    {"trial", "trial_number", K_INT},
    {"bs", "batch_size", K_INT},
    {"type", "type", K_STR},
    {"status", "status", K_STR},
    {"start (UTC)", "start_time", K_TIME},
    {"end (UTC)", "end_time", K_TIME},
    {"epochs", "epochs", K_INT},
    {"time (s)", "time_s", K_F1},
    {"energy (J)", "energy_j", K_F1},
    {"cost (J)", "cost", K_F1},
    {"metric", "metric", K_G},
    {"converged", "converged", K_BOOL},
    {"stop reason", "stop_reason", K_STR},
    {"energy (kWh)", "energy_kwh", K_KWH},
    {"CO2e (g)", "co2e_g", K_F1},
    {"price", "price", K_G},
};

static const column trial_csv_cols[] = {
    {"", "trial_number", K_INT},
    {"", "batch_size", K_INT},
    {"", "type", K_STR},
    {"", "status", K_STR},
    {"", "start_time", K_TIME},
    {"", "end_time", K_TIME},
    {"", "lease_renewed_at", K_TIME},
    {"", "time_s", K_F1},
    {"", "energy_j", K_F1},
    {"", "metric", K_G},
    {"", "epochs", K_INT},
    {"", "cost", K_F1},
    {"", "converged", K_BOOL},
    {"", "stop_reason", K_STR},
    {"", "energy_kwh", K_KWH},
    {"", "co2e_g", K_F1},
    {"", "price", K_G},
};

int jobs_fmt_trials(FILE *to, jobs_format f, const json_t *doc, zbso_err *err)
{
    const json_t *trials = array_at(doc, "trials");
    if (f == JOBS_FMT_JSON)
        return put_json(to, doc, err);
    if (f == JOBS_FMT_CSV)
        csv_rows(to, trial_csv_cols, N(trial_csv_cols), trials);
    else
        put_table(to, rows_table(trial_table_cols, N(trial_table_cols), trials));
    return done(to, err);
}

/* ---- a job's or a trial's own fields as a two-column table ---- */

/* A field: label, value */
typedef struct kv {
    const char *label;
    const char *path;
    kind k;
} kv;

static void kv_rows(cli_table *t, const json_t *doc, const kv *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (optional_path(rows[i].path) && at(doc, rows[i].path) == NULL)
            continue;
        cli_table_cell(t, rows[i].label);
        cell(t, at(doc, rows[i].path), rows[i].k);
        cli_table_end_row(t);
    }
}

/* ---- GET /jobs/{job_id}/trials/{n} ---- */

static const kv curve_fields[] = {
    {"job id", "job_id", K_STR},
    {"trial", "trial_number", K_INT},
    {"batch size", "batch_size", K_INT},
    {"type", "type", K_STR},
    {"status", "status", K_STR},
    {"start (UTC)", "start_time", K_TIME},
    {"end (UTC)", "end_time", K_TIME},
    {"lease renewed (UTC)", "lease_renewed_at", K_TIME},
    {"epochs", "epochs", K_INT},
    {"time (s)", "time_s", K_F1},
    {"energy (J)", "energy_j", K_F1},
    {"cost (J)", "cost", K_F1},
    {"metric", "metric", K_G},
    {"converged", "converged", K_BOOL},
    {"stop reason", "stop_reason", K_STR},
    {"energy (kWh)", "energy_kwh", K_KWH},
    {"CO2e (g)", "co2e_g", K_F1},
    {"price", "price", K_G},
};

static const column report_table_cols[] = {
    {"epoch", "epoch", K_INT},
    {"time (s)", "time_s", K_F1},
    {"energy (J)", "energy_j", K_F1},
    {"metric", "metric", K_G},
    {"received (UTC)", "received_at", K_TIME},
};

static const column report_csv_cols[] = {
    {"", "epoch", K_INT},
    {"", "time_s", K_F1},
    {"", "energy_j", K_F1},
    {"", "metric", K_G},
    {"", "received_at", K_TIME},
};

int jobs_fmt_curve(FILE *to, jobs_format f, const json_t *doc, zbso_err *err)
{
    const json_t *reports = array_at(doc, "reports");
    if (f == JOBS_FMT_JSON)
        return put_json(to, doc, err);
    if (f == JOBS_FMT_CSV) {
        static const column key[] = {{"", "job_id", K_STR}, {"", "trial_number", K_INT}};
        size_t r;
        const json_t *row;
        csv_header(to, key, N(key), "");
        fputc(',', to);
        csv_header(to, report_csv_cols, N(report_csv_cols), "");
        fputs("\r\n", to);
        json_array_foreach(reports, r, row) {
            csv_row(to, key, N(key), doc);
            fputc(',', to);
            csv_row(to, report_csv_cols, N(report_csv_cols), row);
            fputs("\r\n", to);
        }
        return done(to, err);
    }
    cli_table *t = cli_table_new(2, "ll");
    kv_rows(t, doc, curve_fields, N(curve_fields));
    put_table(to, t);
    fprintf(to, "\nreports (%zu)\n", json_array_size(reports));
    put_table(to, rows_table(report_table_cols, N(report_table_cols), reports));
    return done(to, err);
}

/* ---- GET /jobs/{job_id} ---- */

static const kv job_fields[] = {
    {"job id", "job_id", K_STR},
    {"prefix", "job_id_prefix", K_STR},
    {"stage", "stage", K_STR},
    {"policy", "policy", K_STR},
    {"warm start", "spec.warm_start", K_BOOL},
    {"prior jobs", "spec.prior_jobs", K_LIST},
    {"revision", "revision", K_INT},
    {"created (UTC)", "created_at", K_TIME},
    {"updated (UTC)", "updated_at", K_TIME},
    {"batch sizes", "spec.batch_sizes", K_LIST},
    {"default batch size", "spec.default_batch_size", K_INT},
    {"best batch size", "best_batch_size", K_INT},
    {"min cost (J)", "min_cost", K_F1},
    {"min cost batch size", "min_cost_batch_size", K_INT},
    {"trials", "trials.total", K_INT},
    {"  dispatched", "trials.Dispatched", K_INT},
    {"  succeeded", "trials.Succeeded", K_INT},
    {"  failed", "trials.Failed", K_INT},
    {"eta", "spec.eta_knob", K_G},
    {"beta", "spec.beta_knob", K_G},
    {"target metric", "spec.target_metric", K_G},
    {"higher is better", "spec.higher_is_better_metric", K_BOOL},
    {"max epochs", "spec.max_epochs", K_INT},
    {"pruning rounds", "spec.num_pruning_rounds", K_INT},
    {"window size", "spec.window_size", K_INT},
    {"MAB prior mean", "spec.mab_prior_mean", K_G},
    {"MAB prior precision", "spec.mab_prior_precision", K_G},
    {"MAB explorations", "spec.mab_num_explorations", K_INT},
    {"MAB seed", "spec.mab_seed", K_INT},
    {"max power (W)", "spec.max_power", K_G},
    {"GPUs", "spec.number_of_gpus", K_INT},
    {"GPU model", "spec.gpu_model", K_STR},
    {"carbon intensity (g/kWh)", "spec.carbon_intensity_g_per_kwh", K_G},
};

static const kv savings_fields[] = {
    {"finished trials", "finished_trials", K_INT},
    {"failed trials", "failed_trials", K_INT},
    {"spent energy (J)", "spent.energy_j", K_F1},
    {"spent time (s)", "spent.time_s", K_F1},
    {"spent cost (J)", "spent.cost", K_F1},
    {"default batch size", "default_batch_size", K_INT},
    {"default runs", "default_runs", K_INT},
    {"default expected energy (J)", "default_expected.energy_j", K_F1},
    {"default expected time (s)", "default_expected.time_s", K_F1},
    {"default expected cost (J)", "default_expected.cost", K_F1},
    {"saved energy (J)", "saved.energy_j", K_F1},
    {"saved time (s)", "saved.time_s", K_F1},
    {"saved cost (J)", "saved.cost", K_F1},
    {"saved cost", "saved_pct.cost", K_PCT},
    {"saved energy", "saved_pct.energy", K_PCT},
    {"saved time", "saved_pct.time", K_PCT},
    {"spent energy (kWh)", "spent.energy_kwh", K_KWH},
    {"saved energy (kWh)", "saved.energy_kwh", K_KWH},
    {"spent CO2e (g)", "spent.co2e_g", K_F1},
    {"saved CO2e (g)", "saved.co2e_g", K_F1},
    {"spent price", "spent.price", K_G},
    {"saved price", "saved.price", K_G},
    {"currency", "currency", K_STR},
    {"break-even recurrence", "break_even_recurrence", K_INT},
    {"best batch size in hindsight", "best_batch_size", K_INT},
    {"its expected cost (J)", "best_expected_cost", K_F1},
    {"regret (J)", "regret", K_F1},
};

static const column round_cols[] = {
    {"round", "round", K_INT},
    {"default bs", "default_batch_size", K_INT},
    {"explored", "explored", K_LIST},
    {"converged", "converged", K_LIST},
    {"pruned", "pruned", K_LIST},
    {"complete", "complete", K_BOOL},
};

static const column arm_cols[] = {
    {"bs", "batch_size", K_INT},
    {"mean reward (J)", "mean", K_F1},
    {"sd (J)", "sd", K_F1},
    {"precision (1/J^2)", "precision", K_G},
    {"observations", "observations", K_INT},
};

/* Appends "prefix.key" paths of every scalar below v, with its CSV value, as rows. */
static void csv_flatten(FILE *to, const char *prefix, const json_t *v)
{
    char path[512];
    if (json_is_object(v) && json_object_size(v) > 0) {
        const char *key;
        json_t *x;
        json_object_foreach((json_t *)v, key, x) {
            snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", key);
            csv_flatten(to, path, x);
        }
    } else if (json_is_array(v) && json_array_size(v) > 0 &&
               (json_is_object(json_array_get(v, 0)) || json_is_array(json_array_get(v, 0)))) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            snprintf(path, sizeof path, "%s%s%zu", prefix, prefix[0] ? "." : "", i);
            csv_flatten(to, path, x);
        }
    } else {
        /* Scalars, and arrays of scalars (batch size lists) as one JSON value. */
        jobs_csv_field(to, prefix, true);
        fputc(',', to);
        csv_value(to, v);
        fputs("\r\n", to);
    }
}

/* The number at path below v, or NaN. */
static double num_at(const json_t *v, const char *path)
{
    const json_t *x = at(v, path);
    return json_is_number(x) ? json_number_value(x) : NAN;
}

/* The projection as a sentence for the top of `zbso jobs show` (issue 25): what to do
 * next and what it is expected to save per run, or why there is no projection yet. */
static void put_projection(FILE *to, const json_t *doc)
{
    const json_t *p = at(doc, "projection");
    if (!json_is_object(p)) {
        const json_t *why = at(doc, "projection_reason");
        fprintf(to, "Projection: none yet (%s).\n\n",
                json_is_string(why) ? json_string_value(why) : "not enough data");
        return;
    }
    double pct = num_at(p, "saving_per_run_pct.cost");
    fprintf(to, "Projection: use batch size %" PRId64 ": expected cost %.1f J (sd %.1f) per "
            "run, %.1f J (%.1f%%) %s than the default batch size %" PRId64 "; energy %.3f "
            "kWh, time %.1f s per run (from %" PRId64 " run%s).\n\n",
            (int64_t)json_integer_value(json_object_get(p, "batch_size")), num_at(p, "cost"),
            num_at(p, "cost_sd"), fabs(num_at(p, "saving_per_run.cost")), fabs(pct),
            pct >= 0 ? "less" : "more",
            (int64_t)json_integer_value(at(doc, "savings.default_batch_size")),
            num_at(p, "energy_j") / 3.6e6, num_at(p, "time_s"),
            (int64_t)json_integer_value(json_object_get(p, "runs")),
            json_integer_value(json_object_get(p, "runs")) == 1 ? "" : "s");
}

int jobs_fmt_job(FILE *to, jobs_format f, const json_t *doc, zbso_err *err)
{
    if (f == JOBS_FMT_JSON)
        return put_json(to, doc, err);
    if (f == JOBS_FMT_CSV) {
        fputs("field,value\r\n", to);
        csv_flatten(to, "", doc);
        return done(to, err);
    }
    put_projection(to, doc);
    cli_table *t = cli_table_new(2, "ll");
    kv_rows(t, doc, job_fields, N(job_fields));
    put_table(to, t);

    fputs("\nsavings\n", to);
    t = cli_table_new(2, "ll");
    const json_t *savings = json_object_get(doc, "savings");
    kv_rows(t, savings, savings_fields, N(savings_fields));
    put_table(to, t);

    fputs("\nexploration\n", to);
    put_table(to, rows_table(round_cols, N(round_cols), array_at(at(doc, "exploration"),
                                                                 "rounds")));
    fputs("\narms\n", to);
    put_table(to, rows_table(arm_cols, N(arm_cols), array_at(doc, "arms")));

    fputs("\ntrials by type\n", to);
    static const char *const types[] = {"Exploration", "Concurrent", "MAB"};
    t = cli_table_new(4, "lrrr");
    cli_table_cell(t, "type");
    cli_table_cell(t, "dispatched");
    cli_table_cell(t, "succeeded");
    cli_table_cell(t, "failed");
    cli_table_end_row(t);
    const json_t *counts = json_object_get(doc, "counts");
    for (size_t i = 0; i < N(types); i++) {
        const json_t *c = json_object_get(counts, types[i]);
        cli_table_cell(t, types[i]);
        cell(t, json_object_get(c, "Dispatched"), K_INT);
        cell(t, json_object_get(c, "Succeeded"), K_INT);
        cell(t, json_object_get(c, "Failed"), K_INT);
        cli_table_end_row(t);
    }
    put_table(to, t);

    fputs("\ntrials by stop reason\n", to);
    t = cli_table_new(2, "lr");
    cli_table_cell(t, "stop reason");
    cli_table_cell(t, "trials");
    cli_table_end_row(t);
    const char *reason;
    const json_t *n;
    json_object_foreach(json_object_get(at(doc, "trials"), "by_stop_reason"), reason, n) {
        cli_table_cell(t, reason);
        cell(t, n, K_INT);
        cli_table_end_row(t);
    }
    put_table(to, t);
    return done(to, err);
}

/* ---- zbso jobs compare ---- */

/* One row per job, from its job document: what one recurrence costs at the default and at
 * the projected batch size, and what each job saved (issue 25). */
static const column compare_cols[] = {
    {"job id", "job_id", K_STR},
    {"GPU", "spec.gpu_model", K_STR},
    {"GPUs", "spec.number_of_gpus", K_INT},
    {"stage", "stage", K_STR},
    {"finished", "savings.finished_trials", K_INT},
    {"default bs", "savings.default_batch_size", K_INT},
    {"best bs", "best_batch_size", K_INT},
    {"cost/run at default (J)", "savings.default_expected.cost", K_F1},
    {"projected bs", "projection.batch_size", K_INT},
    {"projected cost/run (J)", "projection.cost", K_F1},
    {"projected saving/run", "projection.saving_per_run_pct.cost", K_PCT},
    {"cost saved (J)", "savings.saved.cost", K_F1},
    {"cost saved", "savings.saved_pct.cost", K_PCT},
    {"break-even", "savings", K_BREAK_EVEN},
    {"energy saved (kWh)", "savings.saved.energy_kwh", K_KWH},
    {"time saved (s)", "savings.saved.time_s", K_F1},
    {"CO2e saved (g)", "savings.saved.co2e_g", K_F1},
    {"price saved", "savings.saved.price", K_G},
};

static const column compare_csv_cols[] = {
    {"", "job_id", K_STR},
    {"", "spec.gpu_model", K_STR},
    {"", "spec.number_of_gpus", K_INT},
    {"", "stage", K_STR},
    {"", "savings.finished_trials", K_INT},
    {"", "savings.default_batch_size", K_INT},
    {"", "best_batch_size", K_INT},
    {"", "savings.default_expected.cost", K_F1},
    {"", "savings.default_expected.energy_j", K_F1},
    {"", "savings.default_expected.time_s", K_F1},
    {"", "projection.batch_size", K_INT},
    {"", "projection.cost", K_F1},
    {"", "projection.cost_sd", K_F1},
    {"", "projection.energy_j", K_F1},
    {"", "projection.time_s", K_F1},
    {"", "projection.saving_per_run.cost", K_F1},
    {"", "projection.saving_per_run_pct.cost", K_PCT},
    {"", "savings.saved.cost", K_F1},
    {"", "savings.saved_pct.cost", K_PCT},
    {"", "savings.saved.energy_j", K_F1},
    {"", "savings.saved.energy_kwh", K_KWH},
    {"", "savings.saved_pct.energy", K_PCT},
    {"", "savings.saved.time_s", K_F1},
    {"", "savings.saved_pct.time", K_PCT},
    {"", "savings.break_even_recurrence", K_INT},
    {"", "savings.saved.co2e_g", K_F1},
    {"", "savings.saved.price", K_G},
    {"", "savings.currency", K_STR},
};

int jobs_fmt_compare(FILE *to, jobs_format f, const json_t *jobs, zbso_err *err)
{
    if (f == JOBS_FMT_JSON) {
        json_t *doc = json_pack("{s:O}", "jobs", jobs);
        if (doc == NULL)
            return err_set(err, ZBSO_ENOMEM, "out of memory writing JSON");
        int rc = put_json(to, doc, err);
        json_decref(doc);
        return rc;
    }
    if (f == JOBS_FMT_CSV)
        csv_rows(to, compare_csv_cols, N(compare_csv_cols), jobs);
    else
        put_table(to, rows_table(compare_cols, N(compare_cols), jobs));
    return done(to, err);
}

/* ---- zbso jobs export ---- */

int jobs_fmt_export(FILE *to, jobs_format f, const json_t *job, const json_t *trials,
                    zbso_err *err)
{
    if (f == JOBS_FMT_TABLE)
        return err_set(err, ZBSO_EINVAL, "export writes csv or json, not a table");
    if (f == JOBS_FMT_JSON) {
        json_t *doc = json_pack("{s:O,s:O}", "job", job, "trials", trials);
        if (doc == NULL)
            return err_set(err, ZBSO_ENOMEM, "out of memory writing JSON");
        int rc = put_json(to, doc, err);
        json_decref(doc);
        return rc;
    }
    static const column key[] = {{"", "job_id", K_STR}};
    csv_header(to, key, N(key), "");
    fputc(',', to);
    csv_header_for(to, trial_csv_cols, N(trial_csv_cols), "", trials);
    fputc(',', to);
    csv_header(to, report_csv_cols, N(report_csv_cols), "report_");
    fputs("\r\n", to);
    size_t i, r;
    const json_t *trial, *report;
    json_array_foreach(trials, i, trial) {
        const json_t *reports = array_at(trial, "reports");
        size_t n = json_array_size(reports);
        for (r = 0; r < (n > 0 ? n : 1); r++) {
            report = json_array_get(reports, r);
            csv_row(to, key, N(key), job);
            fputc(',', to);
            csv_row_for(to, trial_csv_cols, N(trial_csv_cols), trial, trials);
            fputc(',', to);
            csv_row(to, report_csv_cols, N(report_csv_cols), report);
            fputs("\r\n", to);
        }
    }
    return done(to, err);
}
