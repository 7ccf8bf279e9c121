/* fuzz_trace.c: Zeus trace CSV text (`zbso simulate --power-trace/--train-trace`) through
 * sim_power_trace_parse and sim_train_trace_parse, and arrival files (`--arrivals FILE`)
 * through sim_arrivals_parse, all on every input (the loaders read the file and call
 * these). Rows that parse obey the value rules of sim.h, count one per data line, and
 * written back as CSV parse to the same rows bit for bit; a power trace has no duplicate
 * key; a refusal names the file and leaves nothing allocated. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sim/sim.h"
#include "util/buf.h"

#define NAME "fuzz.csv"

/* The CSV written back: at most a header and SIM_MAX_ROWS rows of SIM_LINE_MAX bytes. */
#define CSV_MAX ((size_t)SIM_TRACE_MAX_BYTES)

/* Appends s to the CSV being written back; a failure is a finding. */
static void put(zbso_buf *csv, const char *s)
{
    FUZZ_CHECK(buf_add(csv, s) == 0);
}

static void check_name(const char *s)
{
    size_t n = strnlen(s, SIM_NAME_MAX);
    FUZZ_CHECK(n >= 1 && n < SIM_NAME_MAX);
    FUZZ_CHECK(strpbrk(s, ",\n") == NULL);
}

static bool same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Lines of the input that end with a newline, minus the header: an upper bound on rows. */
static size_t data_lines(const uint8_t *data, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < size; i++)
        n += data[i] == '\n';
    return n ? n - 1 : 0;
}

static void check_refused(int rc, const zbso_err *err, const void *rows, size_t n)
{
    FUZZ_CHECK(rc == ZBSO_EINVAL && err->code == rc);
    FUZZ_CHECK(strncmp(err->msg, NAME ":", strlen(NAME) + 1) == 0);
    FUZZ_CHECK(rows == NULL && n == 0);
}

static void check_power(const uint8_t *data, size_t size)
{
    sim_power_trace t, again;
    zbso_err err;
    char line[4 * SIM_NAME_MAX + 128];
    err_clear(&err);
    char *buf = fuzz_copy(data, size);
    int rc = sim_power_trace_parse(NAME, buf, size, &t, &err);
    free(buf);
    if (rc < 0) {
        check_refused(rc, &err, t.rows, t.n);
        return;
    }
    FUZZ_CHECK(rc == 0 && t.n >= 1 && t.n <= data_lines(data, size));
    zbso_buf csv;
    buf_init(&csv, CSV_MAX);
    put(&csv, "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,"
              "average_power\n");
    for (size_t i = 0; i < t.n; i++) {
        const sim_power_row *r = &t.rows[i];
        check_name(r->dataset);
        check_name(r->network);
        check_name(r->optimizer);
        FUZZ_CHECK(r->batch_size > 0 && r->batch_size <= 1000000000000LL);
        FUZZ_CHECK(r->power_limit_w > 0 && r->power_limit_w <= 1000000000000LL);
        FUZZ_CHECK(isfinite(r->time_per_epoch_s) && r->time_per_epoch_s > 0);
        FUZZ_CHECK(isfinite(r->average_power_w) && r->average_power_w > 0);
        for (size_t k = 0; k < i; k++) {
            const sim_power_row *o = &t.rows[k];
            FUZZ_CHECK(!(o->batch_size == r->batch_size &&
                         o->power_limit_w == r->power_limit_w &&
                         strcmp(o->dataset, r->dataset) == 0 &&
                         strcmp(o->network, r->network) == 0 &&
                         strcmp(o->optimizer, r->optimizer) == 0));
        }
        snprintf(line, sizeof line, "%s,%s,%" PRId64 ",%s,%" PRId64 ",%.17g,%.17g\n",
                 r->dataset, r->network, r->batch_size, r->optimizer, r->power_limit_w,
                 r->time_per_epoch_s, r->average_power_w);
        put(&csv, line);
    }
    err_clear(&err);
    char *copy = fuzz_copy(buf_ptr(&csv), buf_len(&csv));
    FUZZ_CHECK(sim_power_trace_parse(NAME, copy, buf_len(&csv), &again, &err) == 0);
    FUZZ_CHECK(again.n == t.n);
    for (size_t i = 0; i < t.n; i++) {
        const sim_power_row *a = &t.rows[i], *b = &again.rows[i];
        FUZZ_CHECK(strcmp(a->dataset, b->dataset) == 0 && strcmp(a->network, b->network) == 0 &&
                   strcmp(a->optimizer, b->optimizer) == 0);
        FUZZ_CHECK(a->batch_size == b->batch_size && a->power_limit_w == b->power_limit_w);
        FUZZ_CHECK(same_double(a->time_per_epoch_s, b->time_per_epoch_s) &&
                   same_double(a->average_power_w, b->average_power_w));
    }
    free(copy);
    buf_free(&csv);
    sim_power_trace_free(&again);
    sim_power_trace_free(&t);
}

static void check_train(const uint8_t *data, size_t size)
{
    sim_train_trace t, again;
    zbso_err err;
    char line[4 * SIM_NAME_MAX + 128], epoch[32];
    err_clear(&err);
    char *buf = fuzz_copy(data, size);
    int rc = sim_train_trace_parse(NAME, buf, size, &t, &err);
    free(buf);
    if (rc < 0) {
        check_refused(rc, &err, t.rows, t.n);
        return;
    }
    FUZZ_CHECK(rc == 0 && t.n >= 1 && t.n <= data_lines(data, size));
    zbso_buf csv;
    buf_init(&csv, CSV_MAX);
    put(&csv, "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,"
              "target_epoch\n");
    for (size_t i = 0; i < t.n; i++) {
        const sim_train_row *r = &t.rows[i];
        check_name(r->dataset);
        check_name(r->network);
        check_name(r->optimizer);
        FUZZ_CHECK(r->batch_size > 0 && r->batch_size <= 1000000000000LL);
        FUZZ_CHECK(isfinite(r->learning_rate) && r->learning_rate > 0);
        FUZZ_CHECK(r->run > 0 && r->run <= 1000000000000LL);
        FUZZ_CHECK(isfinite(r->target_metric));
        FUZZ_CHECK(r->target_epoch >= 0 && r->target_epoch <= 1000000000000LL);
        if (r->target_epoch == 0)
            snprintf(epoch, sizeof epoch, "nan");
        else
            snprintf(epoch, sizeof epoch, "%" PRId64, r->target_epoch);
        snprintf(line, sizeof line, "%s,%s,%" PRId64 ",%s,%.17g,%" PRId64 ",%.17g,%s\n",
                 r->dataset, r->network, r->batch_size, r->optimizer, r->learning_rate, r->run,
                 r->target_metric, epoch);
        put(&csv, line);
    }
    err_clear(&err);
    char *copy = fuzz_copy(buf_ptr(&csv), buf_len(&csv));
    FUZZ_CHECK(sim_train_trace_parse(NAME, copy, buf_len(&csv), &again, &err) == 0);
    FUZZ_CHECK(again.n == t.n);
    for (size_t i = 0; i < t.n; i++) {
        const sim_train_row *a = &t.rows[i], *b = &again.rows[i];
        FUZZ_CHECK(strcmp(a->dataset, b->dataset) == 0 && strcmp(a->network, b->network) == 0 &&
                   strcmp(a->optimizer, b->optimizer) == 0);
        FUZZ_CHECK(a->batch_size == b->batch_size && a->run == b->run &&
                   a->target_epoch == b->target_epoch);
        FUZZ_CHECK(same_double(a->learning_rate, b->learning_rate) &&
                   same_double(a->target_metric, b->target_metric));
    }
    free(copy);
    buf_free(&csv);
    sim_train_trace_free(&again);
    sim_train_trace_free(&t);
}

/* Submit times parse to n >= 1 finite, non-negative, non-decreasing values, at most one
 * per line; written back one per line (%.17g) they parse to the same doubles. */
static void check_arrivals(const uint8_t *data, size_t size)
{
    double *t = NULL, *again = NULL;
    size_t n = 0, n2 = 0;
    zbso_err err;
    err_clear(&err);
    char *buf = fuzz_copy(data, size);
    int rc = sim_arrivals_parse(NAME, buf, size, &t, &n, &err);
    free(buf);
    if (rc < 0) {
        check_refused(rc, &err, t, n);
        return;
    }
    size_t lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    FUZZ_CHECK(rc == 0 && n >= 1 && n <= lines);
    zbso_buf csv;
    char line[64];
    buf_init(&csv, CSV_MAX);
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(isfinite(t[i]) && t[i] >= 0 && (i == 0 || t[i] >= t[i - 1]));
        snprintf(line, sizeof line, "%.17g\n", t[i]);
        put(&csv, line);
    }
    char *copy = fuzz_copy(buf_ptr(&csv), buf_len(&csv));
    FUZZ_CHECK(sim_arrivals_parse(NAME, copy, buf_len(&csv), &again, &n2, &err) == 0);
    FUZZ_CHECK(n2 == n);
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(same_double(t[i], again[i]));
    free(copy);
    buf_free(&csv);
    free(again);
    free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_power(data, size);
    check_train(data, size);
    check_arrivals(data, size);
    return 0;
}
