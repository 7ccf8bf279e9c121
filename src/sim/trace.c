/* trace.c: strict readers of the Zeus trace CSV files (power and train traces): a parser
 * of bytes in memory (what the fuzz target drives) and file readers on top of it. Every
 * error names the file, the line and the value; a file that does not parse leaves nothing
 * behind. Does not interpret the rows (workload.c does). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "util/buf.h"

static const char power_header[] =
    "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power";
static const char train_header[] =
    "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch";

#define MAX_FIELDS 8

/* Parsing state of one file: its name and the current line number, for messages. */
typedef struct reader {
    const char *path;
    size_t line_no;
    zbso_err *err;
} reader;

/* Splits line at commas into exactly n fields (in place). Returns 0, or ZBSO_EINVAL
 * naming how many fields the line has. */
static int split(reader *r, char *line, char **fields, size_t n)
{
    size_t k = 0;
    char *p = line;
    for (;;) {
        char *comma = strchr(p, ',');
        if (k < n)
            fields[k] = p;
        k++;
        if (comma == NULL)
            break;
        *comma = '\0';
        p = comma + 1;
    }
    if (k != n)
        return err_set(r->err, ZBSO_EINVAL, "%s:%zu: %zu fields, expected %zu", r->path,
                       r->line_no, k, n);
    return 0;
}

/* Copies a name field into out (SIM_NAME_MAX bytes). ZBSO_EINVAL when empty or too long. */
static int parse_name(reader *r, const char *col, const char *text, char *out)
{
    size_t len = strlen(text);
    if (len == 0 || len >= SIM_NAME_MAX)
        return err_set(r->err, ZBSO_EINVAL, "%s:%zu: %s '%.80s' must be 1 to %d bytes",
                       r->path, r->line_no, col, text, SIM_NAME_MAX - 1);
    memcpy(out, text, len + 1);
    return 0;
}

/* Parses a positive decimal integer (at most 1e12). ZBSO_EINVAL naming the value. */
static int parse_pos_int(reader *r, const char *col, const char *text, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 || v <= 0 ||
        v > 1000000000000LL)
        return err_set(r->err, ZBSO_EINVAL, "%s:%zu: %s '%.80s' is not a positive integer",
                       r->path, r->line_no, col, text);
    *out = v;
    return 0;
}

/* Parses a finite number; positive when must_be_positive. ZBSO_EINVAL naming the value. */
static int parse_num(reader *r, const char *col, const char *text, bool must_be_positive,
                     double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (text[0] == '\0' || *end != '\0' || errno == ERANGE || !isfinite(v) ||
        (must_be_positive && !(v > 0)))
        return err_set(r->err, ZBSO_EINVAL, "%s:%zu: %s '%.80s' is not a %s number",
                       r->path, r->line_no, col, text,
                       must_be_positive ? "positive finite" : "finite");
    *out = v;
    return 0;
}

/* Parses one power row from its fields. */
static int parse_power(reader *r, char **f, sim_power_row *row)
{
    int rc;
    if ((rc = parse_name(r, "dataset", f[0], row->dataset)) < 0 ||
        (rc = parse_name(r, "network", f[1], row->network)) < 0 ||
        (rc = parse_pos_int(r, "batch_size", f[2], &row->batch_size)) < 0 ||
        (rc = parse_name(r, "optimizer", f[3], row->optimizer)) < 0 ||
        (rc = parse_pos_int(r, "power_limit", f[4], &row->power_limit_w)) < 0 ||
        (rc = parse_num(r, "time_per_epoch", f[5], true, &row->time_per_epoch_s)) < 0 ||
        (rc = parse_num(r, "average_power", f[6], true, &row->average_power_w)) < 0)
        return rc;
    return 0;
}

/* Parses one train row from its fields. */
static int parse_train(reader *r, char **f, sim_train_row *row)
{
    int rc;
    if ((rc = parse_name(r, "dataset", f[0], row->dataset)) < 0 ||
        (rc = parse_name(r, "network", f[1], row->network)) < 0 ||
        (rc = parse_pos_int(r, "batch_size", f[2], &row->batch_size)) < 0 ||
        (rc = parse_name(r, "optimizer", f[3], row->optimizer)) < 0 ||
        (rc = parse_num(r, "learning_rate", f[4], true, &row->learning_rate)) < 0 ||
        (rc = parse_pos_int(r, "run", f[5], &row->run)) < 0 ||
        (rc = parse_num(r, "target_metric", f[6], false, &row->target_metric)) < 0)
        return rc;
    if (strcmp(f[7], "nan") == 0) {
        row->target_epoch = 0;
        return 0;
    }
    return parse_pos_int(r, "target_epoch", f[7], &row->target_epoch);
}

static bool power_same_key(const sim_power_row *a, const sim_power_row *b)
{
    return a->batch_size == b->batch_size && a->power_limit_w == b->power_limit_w &&
           strcmp(a->dataset, b->dataset) == 0 && strcmp(a->network, b->network) == 0 &&
           strcmp(a->optimizer, b->optimizer) == 0;
}

static int power_cmp(const void *pa, const void *pb)
{
    const sim_power_row *a = pa, *b = pb;
    int c;
    if ((c = strcmp(a->dataset, b->dataset)) != 0 || (c = strcmp(a->network, b->network)) != 0 ||
        (c = strcmp(a->optimizer, b->optimizer)) != 0)
        return c;
    if (a->batch_size != b->batch_size)
        return a->batch_size < b->batch_size ? -1 : 1;
    if (a->power_limit_w != b->power_limit_w)
        return a->power_limit_w < b->power_limit_w ? -1 : 1;
    return 0;
}

/* Parses len bytes of CSV text (no NUL needed) the way the files are read: lines of at
 * most SIM_LINE_MAX bytes each ended by a newline (a CR before it is dropped), the header
 * first, then calls parse(r, fields, row) with each line's n_fields fields into a growing
 * array of elem-sized rows. Returns 0 with *rows_out (malloc'd) and *n_out, or a negative
 * code with err (nothing allocated). */
static int parse_csv(const char *name, const char *buf, size_t len, const char *header,
                     size_t n_fields, size_t elem, int (*parse)(reader *, char **, void *),
                     void **rows_out, size_t *n_out, zbso_err *err)
{
    reader r = {name, 0, err};
    char line[SIM_LINE_MAX + 1];
    char *fields[MAX_FIELDS];
    union { sim_power_row power; sim_train_row train; } row;   /* one parsed row */
    zbso_buf rows;
    size_t n = 0, pos = 0;
    int rc = 0;
    if (elem > sizeof row)
        return err_set(err, ZBSO_EINTERNAL, "a trace row of %zu bytes", elem);
    buf_init(&rows, (size_t)SIM_MAX_ROWS * elem);
    while (pos < len) {
        /* A line is what fgets would read into line: up to a newline, at most
         * SIM_LINE_MAX bytes. */
        size_t avail = len - pos < SIM_LINE_MAX ? len - pos : SIM_LINE_MAX;
        const char *nl = memchr(buf + pos, '\n', avail);
        size_t line_len = nl != NULL ? (size_t)(nl - (buf + pos)) + 1 : avail;
        memcpy(line, buf + pos, line_len);
        line[line_len] = '\0';
        pos += line_len;
        r.line_no++;
        if (memchr(line, '\0', line_len) != NULL) {
            rc = err_set(err, ZBSO_EINVAL, "%s:%zu: line contains a NUL byte", name,
                         r.line_no);
            goto out;
        }
        size_t ln = line_len;
        if (line[ln - 1] != '\n') {
            if (ln >= SIM_LINE_MAX)
                rc = err_set(err, ZBSO_EINVAL, "%s:%zu: line longer than %d bytes", name,
                             r.line_no, SIM_LINE_MAX - 1);
            else
                rc = err_set(err, ZBSO_EINVAL,
                             "%s:%zu: last line '%.80s' has no newline (truncated file?)",
                             name, r.line_no, line);
            goto out;
        }
        line[--ln] = '\0';
        if (ln > 0 && line[ln - 1] == '\r')
            line[--ln] = '\0';
        if (r.line_no == 1) {
            if (strcmp(line, header) != 0) {
                rc = err_set(err, ZBSO_EINVAL, "%s:1: header '%.200s' is not '%s'", name,
                             line, header);
                goto out;
            }
            continue;
        }
        if (ln == 0) {
            rc = err_set(err, ZBSO_EINVAL, "%s:%zu: empty line", name, r.line_no);
            goto out;
        }
        /* Checked before the line is parsed, so a file too long is named as such. */
        if (n >= SIM_MAX_ROWS) {
            rc = err_set(err, ZBSO_EINVAL, "%s:%zu: more than %d rows", name, r.line_no,
                         SIM_MAX_ROWS);
            goto out;
        }
        if ((rc = split(&r, line, fields, n_fields)) < 0 ||
            (rc = parse(&r, fields, &row)) < 0)
            goto out;
        if (buf_addn(&rows, &row, elem) < 0) {
            rc = err_set(err, ZBSO_ENOMEM, "out of memory reading %s", name);
            goto out;
        }
        n++;
    }
    if (r.line_no == 0) {
        rc = err_set(err, ZBSO_EINVAL, "%s: empty file (no header '%s')", name, header);
        goto out;
    }
    if (n == 0) {
        rc = err_set(err, ZBSO_EINVAL, "%s: no data rows after the header", name);
        goto out;
    }
    *rows_out = buf_take(&rows, NULL);
    *n_out = n;
out:
    buf_free(&rows);
    return rc;
}

/* Reads the whole file at path into *out (malloc'd, caller frees) and its size into
 * *len. A file over SIM_TRACE_MAX_BYTES cannot be a valid trace and is refused. Returns 0,
 * ZBSO_EIO (cannot open or read), ZBSO_EINVAL (too large) or ZBSO_ENOMEM. */
static int read_file(const char *path, char **out, size_t *len, zbso_err *err)
{
    zbso_buf b;
    int rc = 0;
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return err_set(err, ZBSO_EIO, "cannot read trace %s: %s", path, strerror(errno));
    buf_init(&b, (size_t)SIM_TRACE_MAX_BYTES);
    switch (buf_add_file(&b, f)) {
    case 0:
        *out = buf_take(&b, len);
        break;
    case ZBSO_ETOOBIG:
        rc = err_set(err, ZBSO_EINVAL, "%s: larger than %lld bytes, too large for a trace",
                     path, (long long)SIM_TRACE_MAX_BYTES);
        break;
    case ZBSO_ENOMEM:
        rc = err_set(err, ZBSO_ENOMEM, "out of memory reading %s", path);
        break;
    default:
        rc = err_set(err, ZBSO_EIO, "cannot read trace %s: %s", path, strerror(errno));
    }
    fclose(f);
    return rc;
}

static int parse_power_cb(reader *r, char **f, void *row)
{
    return parse_power(r, f, row);
}

static int parse_train_cb(reader *r, char **f, void *row)
{
    return parse_train(r, f, row);
}

int sim_power_trace_parse(const char *name, const char *buf, size_t len,
                          sim_power_trace *out, zbso_err *err)
{
    void *rows = NULL;
    size_t n = 0;
    sim_power_row *sorted = NULL;
    memset(out, 0, sizeof *out);
    int rc = parse_csv(name, buf, len, power_header, 7, sizeof(sim_power_row),
                       parse_power_cb, &rows, &n, err);
    if (rc < 0)
        goto out;
    /* Duplicates are found on a sorted copy so the rows keep the file's order; the
     * message then names the line of the second occurrence. */
    sorted = malloc(n * sizeof *sorted);
    if (sorted == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory reading %s", name);
        goto out;
    }
    memcpy(sorted, rows, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, power_cmp);
    for (size_t i = 1; i < n; i++) {
        if (!power_same_key(&sorted[i - 1], &sorted[i]))
            continue;
        const sim_power_row *all = rows;
        size_t second = 0;
        for (size_t k = 0, seen = 0; k < n; k++)
            if (power_same_key(&all[k], &sorted[i]) && ++seen == 2) {
                second = k;
                break;
            }
        rc = err_set(err, ZBSO_EINVAL,
                     "%s:%zu: duplicate row for %s,%s,%lld,%s at power limit %lld", name,
                     second + 2, sorted[i].dataset, sorted[i].network,
                     (long long)sorted[i].batch_size, sorted[i].optimizer,
                     (long long)sorted[i].power_limit_w);
        goto out;
    }
    out->rows = rows;
    out->n = n;
    rows = NULL;
out:
    free(sorted);
    free(rows);
    return rc;
}

int sim_train_trace_parse(const char *name, const char *buf, size_t len,
                          sim_train_trace *out, zbso_err *err)
{
    void *rows = NULL;
    size_t n = 0;
    memset(out, 0, sizeof *out);
    int rc = parse_csv(name, buf, len, train_header, 8, sizeof(sim_train_row),
                       parse_train_cb, &rows, &n, err);
    if (rc < 0)
        return rc;
    out->rows = rows;
    out->n = n;
    return 0;
}

int sim_power_trace_load(const char *path, sim_power_trace *out, zbso_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    memset(out, 0, sizeof *out);
    int rc = read_file(path, &buf, &len, err);
    if (rc == 0)
        rc = sim_power_trace_parse(path, buf, len, out, err);
    free(buf);
    return rc;
}

int sim_train_trace_load(const char *path, sim_train_trace *out, zbso_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    memset(out, 0, sizeof *out);
    int rc = read_file(path, &buf, &len, err);
    if (rc == 0)
        rc = sim_train_trace_parse(path, buf, len, out, err);
    free(buf);
    return rc;
}

void sim_power_trace_free(sim_power_trace *t)
{
    if (t == NULL)
        return;
    free(t->rows);
    t->rows = NULL;
    t->n = 0;
}

void sim_train_trace_free(sim_train_trace *t)
{
    if (t == NULL)
        return;
    free(t->rows);
    t->rows = NULL;
    t->n = 0;
}

/* ---- arrivals (--arrivals FILE) ---- */

int sim_arrivals_parse(const char *name, const char *buf, size_t len, double **times,
                       size_t *n, zbso_err *err)
{
    size_t cap = 0, line_no = 0;
    double *v = NULL;
    int rc = 0;
    *times = NULL;
    *n = 0;
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - buf) : len;
        char line[SIM_LINE_MAX];
        size_t l = end - pos;
        line_no++;
        if (l > 0 && buf[pos + l - 1] == '\r')
            l--;
        if (l >= sizeof line || memchr(buf + pos, '\0', l) != NULL) {
            rc = err_set(err, ZBSO_EINVAL, "%s:%zu: a line longer than %d bytes or with a NUL "
                         "byte", name, line_no, SIM_LINE_MAX - 1);
            goto out;
        }
        memcpy(line, buf + pos, l);
        line[l] = '\0';
        pos = end + 1;
        char *stop;
        double t = strtod(line, &stop);
        if (line_no == 1 && stop == line && l > 0 && strchr(line, ',') == NULL)
            continue;  /* a header (one name) */
        if (stop == line || *stop != '\0' || !isfinite(t) || t < 0 ||
            (*n > 0 && t < v[*n - 1])) {
            rc = err_set(err, ZBSO_EINVAL, "%s:%zu: submit time '%.40s' is not a number of "
                         "seconds >= 0 and >= the one before (one per line)", name, line_no,
                         line);
            goto out;
        }
        if (*n == SIM_MAX_RECURRENCES) {
            rc = err_set(err, ZBSO_EINVAL, "%s: more than %d submit times", name,
                         SIM_MAX_RECURRENCES);
            goto out;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            double *nv = realloc(v, cap * sizeof *nv);
            if (nv == NULL) {
                rc = err_set(err, ZBSO_ENOMEM, "out of memory reading %s", name);
                goto out;
            }
            v = nv;
        }
        v[(*n)++] = t;
    }
    if (*n == 0)
        rc = err_set(err, ZBSO_EINVAL, "%s: no submit times", name);
out:
    if (rc < 0) {
        free(v);
        *n = 0;
    } else {
        *times = v;
    }
    return rc;
}

int sim_arrivals_load(const char *path, double **times, size_t *n, zbso_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    *times = NULL;
    *n = 0;
    int rc = read_file(path, &buf, &len, err);
    if (rc == 0)
        rc = sim_arrivals_parse(path, buf, len, times, n, err);
    free(buf);
    return rc;
}
