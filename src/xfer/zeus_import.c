/* zeus_import.c: a Zeus BSO job (rows of zeusdb.c) as a zbso job, its trials and arms,
 * every value checked as the API checks it, and the generator state numpy wrote as JSON
 * turned into zbso's PCG64 state. Refuses rather than guesses: a message names the table,
 * the row and the column. Writes nothing itself (zjob_put, store.h, does). */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/optimizer.h"
#include "core/spec.h"
#include "xfer/xfer.h"

__extension__ typedef unsigned __int128 u128;

/* ---- messages ---- */

/* Writes s (len bytes) into out for a message: printable ASCII as is, other bytes as
 * \xNN, cut at 80 shown bytes with "...". */
static const char *shown_id(const char *s, size_t len, char out[400])
{
    size_t n = 0;
    for (size_t i = 0; i < len && n < 390; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i == 80) {
            n += (size_t)snprintf(out + n, 400 - n, "...");
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '\\')
            out[n++] = (char)c;
        else
            n += (size_t)snprintf(out + n, 400 - n, "\\x%02x", c);
    }
    out[n] = '\0';
    return out;
}

/* Where a value was read: table, row and column, for messages. */
typedef struct where {
    const char *table;
    char row[480];
    zbso_err *err;   /* where the message goes */
} where;

static int bad(const where *w, const char *col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(const where *w, const char *col, const char *fmt, ...)
{
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return err_set(w->err, ZBSO_EINVAL, "table %s, row %s, column %s: %s", w->table, w->row,
                   col, what);
}

/* ---- cells ---- */

static const char *kind_name(const zcell *c)
{
    return c->kind == ZC_NULL ? "NULL" : c->kind == ZC_INT ? "an integer"
                                       : c->kind == ZC_REAL ? "a real" : "text";
}

/* A cell's text, NUL-terminated and shortened for a message. */
static const char *cell_shown(const zcell *c, char out[400])
{
    if (c->kind == ZC_INT) {
        snprintf(out, 400, "%lld", (long long)c->i);
        return out;
    }
    if (c->kind == ZC_REAL) {
        return opt_fmt_double(out, c->d);
    }
    if (c->kind == ZC_NULL)
        return "NULL";
    char tmp[400];
    snprintf(out, 400, "'%s'", shown_id(c->text, c->len, tmp));
    return out;
}

/* A row's key column for a message: an integer as it is, even when it arrives as text
 * (PostgreSQL, MySQL); anything else as cell_shown shows it. */
static const char *key_shown(const zcell *c, char out[400])
{
    if (c->kind == ZC_TEXT && c->len > 0 && c->len < 24 &&
        strspn(c->text, "-0123456789") >= c->len) {
        memcpy(out, c->text, c->len);
        out[c->len] = '\0';
        return out;
    }
    return cell_shown(c, out);
}

/* An integer in [lo, hi]: a SQLite integer, or text of decimal digits (PostgreSQL,
 * MySQL); a real is refused (no coercion). */
static int cell_int(const zcell *c, const where *w, const char *col, int64_t lo, int64_t hi,
                    int64_t *out)
{
    char buf[400];
    if (c->kind == ZC_INT) {
        *out = c->i;
    } else if (c->kind == ZC_TEXT && c->len > 0 && c->len < 24) {
        char tmp[24];
        memcpy(tmp, c->text, c->len);
        tmp[c->len] = '\0';
        char *end = NULL;
        errno = 0;
        long long v = strtoll(tmp, &end, 10);
        if (errno != 0 || *end != '\0' || !(isdigit((unsigned char)tmp[0]) || tmp[0] == '-'))
            return bad(w, col, "%s is not an integer", cell_shown(c, buf));
        *out = v;
    } else {
        return bad(w, col, "%s is not an integer (found %s)", cell_shown(c, buf),
                   kind_name(c));
    }
    if (*out < lo || *out > hi)
        return bad(w, col, "%lld is out of range (%lld to %lld)", (long long)*out,
                   (long long)lo, (long long)hi);
    return 0;
}

/* A double: a SQLite real or integer, or text strtod reads whole (PostgreSQL writes
 * Infinity, -Infinity and NaN). allow_inf admits +inf only; NaN is never taken. */
static int cell_real(const zcell *c, const where *w, const char *col, bool allow_inf,
                     double *out)
{
    char buf[400];
    if (c->kind == ZC_REAL) {
        *out = c->d;
    } else if (c->kind == ZC_INT) {
        *out = (double)c->i;
    } else if (c->kind == ZC_TEXT && c->len > 0 && c->len < 64) {
        char tmp[64];
        memcpy(tmp, c->text, c->len);
        tmp[c->len] = '\0';
        char *end = NULL;
        *out = strtod(tmp, &end);
        if (*end != '\0' || isspace((unsigned char)tmp[0]))
            return bad(w, col, "%s is not a number", cell_shown(c, buf));
    } else {
        return bad(w, col, "%s is not a number", cell_shown(c, buf));
    }
    if (isnan(*out) || (isinf(*out) && !(allow_inf && *out > 0)))
        return bad(w, col, "%s is not a finite number", cell_shown(c, buf));
    return 0;
}

/* A boolean: SQLite and MySQL write 0/1, PostgreSQL t/f. */
static int cell_bool(const zcell *c, const where *w, const char *col, bool *out)
{
    char buf[400];
    if (c->kind == ZC_INT && (c->i == 0 || c->i == 1)) {
        *out = c->i == 1;
        return 0;
    }
    if (c->kind == ZC_TEXT && c->len == 1 && strchr("01tf", c->text[0]) != NULL) {
        *out = c->text[0] == '1' || c->text[0] == 't';
        return 0;
    }
    return bad(w, col, "%s is not a boolean", cell_shown(c, buf));
}

/* Text without NUL, valid UTF-8, at most max bytes, into out (max + 1 bytes). */
static int cell_text(const zcell *c, const where *w, const char *col, size_t max, char *out)
{
    char buf[400];
    if (c->kind != ZC_TEXT)
        return bad(w, col, "%s is not text", cell_shown(c, buf));
    if (c->len > max)
        return bad(w, col, "%s is %zu bytes long, over the limit of %zu", cell_shown(c, buf),
                   c->len, max);
    if (memchr(c->text, '\0', c->len) != NULL)
        return bad(w, col, "%s holds a NUL byte", cell_shown(c, buf));
    const unsigned char *p = (const unsigned char *)c->text, *e = p + c->len;
    while (p < e) {
        size_t n = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3
                                                     : (*p >> 3) == 30 ? 4 : 0;
        if (n == 0 || (size_t)(e - p) < n)
            return bad(w, col, "%s is not UTF-8", cell_shown(c, buf));
        for (size_t i = 1; i < n; i++)
            if ((p[i] & 0xc0) != 0x80)
                return bad(w, col, "%s is not UTF-8", cell_shown(c, buf));
        p += n;
    }
    memcpy(out, c->text, c->len);
    out[c->len] = '\0';
    return 0;
}

/* One of names[] (SQLAlchemy's Enum stores the member's name); *out its index. */
static int cell_enum(const zcell *c, const where *w, const char *col,
                     const char *const *names, size_t n, int *out)
{
    char buf[400];
    if (c->kind == ZC_TEXT)
        for (size_t i = 0; i < n; i++)
            if (strlen(names[i]) == c->len && memcmp(names[i], c->text, c->len) == 0) {
                *out = (int)i;
                return 0;
            }
    char list[128] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                 names[i]);
    return bad(w, col, "%s is not a value Zeus writes (%s)", cell_shown(c, buf), list);
}

/* A naive timestamp as SQLAlchemy writes DateTime ("YYYY-MM-DD HH:MM:SS[.ffffff]"; 'T'
 * also taken), in the local time zone, as unix seconds. */
static int cell_time(const zcell *c, const where *w, const char *col, double *out)
{
    char buf[400], tmp[40];
    if (c->kind != ZC_TEXT || c->len < 19 || c->len >= sizeof tmp)
        return bad(w, col, "%s is not a timestamp (YYYY-MM-DD HH:MM:SS)", cell_shown(c, buf));
    memcpy(tmp, c->text, c->len);
    tmp[c->len] = '\0';
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int y, mo, d, h, mi, s, used = 0;
    char sep;
    if (sscanf(tmp, "%4d-%2d-%2d%c%2d:%2d:%2d%n", &y, &mo, &d, &sep, &h, &mi, &s, &used) != 7 ||
        used != 19 || (sep != ' ' && sep != 'T') || mo < 1 || mo > 12 || d < 1 || d > 31 ||
        h > 23 || mi > 59 || s > 60 || y < 1970 || y > 9999 || tmp[4] != '-' || tmp[7] != '-')
        return bad(w, col, "%s is not a timestamp (YYYY-MM-DD HH:MM:SS)", cell_shown(c, buf));
    double frac = 0;
    if (tmp[19] != '\0') {
        size_t digits = strspn(tmp + 20, "0123456789");
        if (tmp[19] != '.' || digits == 0 || digits > 9 || tmp[20 + digits] != '\0')
            return bad(w, col, "%s is not a timestamp (YYYY-MM-DD HH:MM:SS[.ffffff])",
                       cell_shown(c, buf));
        frac = strtod(tmp + 19, NULL);
    }
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    tm.tm_isdst = -1;
    time_t t = mktime(&tm);
    if (t == (time_t)-1 || tm.tm_mday != d)
        return bad(w, col, "%s is not a date", cell_shown(c, buf));
    *out = (double)t + frac;
    return 0;
}

/* ---- numpy's generator state ---- */

typedef struct jp {
    const char *p, *e;
} jp;

static void jws(jp *j)
{
    while (j->p < j->e && (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r'))
        j->p++;
}

static bool jlit(jp *j, char c)
{
    jws(j);
    if (j->p < j->e && *j->p == c) {
        j->p++;
        return true;
    }
    return false;
}

/* A JSON string of plain characters (no escapes needed for any key numpy writes). */
static bool jstr(jp *j, char *out, size_t cap)
{
    jws(j);
    if (j->p >= j->e || *j->p != '"')
        return false;
    j->p++;
    size_t n = 0;
    while (j->p < j->e && *j->p != '"') {
        if (*j->p == '\\' || (unsigned char)*j->p < 0x20 || n + 1 >= cap)
            return false;
        out[n++] = *j->p++;
    }
    if (j->p >= j->e)
        return false;
    j->p++;
    out[n] = '\0';
    return true;
}

/* A non-negative JSON integer below 2^128 (numpy writes Python ints in full). */
static bool jint(jp *j, u128 *out)
{
    jws(j);
    const char *start = j->p;
    u128 v = 0;
    while (j->p < j->e && *j->p >= '0' && *j->p <= '9') {
        u128 d = (u128)(*j->p - '0');
        if (v > (~(u128)0 - d) / 10)
            return false;
        v = v * 10 + d;
        j->p++;
    }
    if (j->p == start || (j->p - start > 1 && *start == '0'))
        return false;
    if (j->p < j->e && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
        return false;
    *out = v;
    return true;
}

int zeus_rng_parse(const char *text, size_t len, zbso_rng *out, zbso_err *err)
{
    jp j = {text, text + len};
    char key[32], name[32];
    u128 state = 0, inc = 0, has = 0, uint = 0;
    unsigned seen = 0; /* bits: bit_generator, state, has_uint32, uinteger, state.state, inc */
    if (!jlit(&j, '{'))
        return err_set(err, ZBSO_EINVAL, "not a JSON object");
    if (!jlit(&j, '}')) {
        do {
            if (!jstr(&j, key, sizeof key) || !jlit(&j, ':'))
                return err_set(err, ZBSO_EINVAL, "not JSON of numpy's generator state");
            unsigned bit = strcmp(key, "bit_generator") == 0 ? 1u : strcmp(key, "state") == 0 ? 2u
                           : strcmp(key, "has_uint32") == 0 ? 4u
                           : strcmp(key, "uinteger") == 0 ? 8u : 0u;
            if (bit == 0)
                return err_set(err, ZBSO_EINVAL, "unknown key \"%s\"", key);
            if (seen & bit)
                return err_set(err, ZBSO_EINVAL, "key \"%s\" given twice", key);
            seen |= bit;
            if (bit == 1) {
                if (!jstr(&j, name, sizeof name))
                    return err_set(err, ZBSO_EINVAL, "bit_generator is not a string");
                if (strcmp(name, "PCG64") != 0)
                    return err_set(err, ZBSO_EINVAL, "bit_generator \"%s\" is not PCG64, the"
                                   " generator of np.random.default_rng", name);
            } else if (bit == 2) {
                if (!jlit(&j, '{'))
                    return err_set(err, ZBSO_EINVAL, "state is not an object");
                do {
                    u128 v;
                    if (!jstr(&j, key, sizeof key) || !jlit(&j, ':'))
                        return err_set(err, ZBSO_EINVAL, "state is not an object of integers");
                    unsigned b2 = strcmp(key, "state") == 0 ? 16u : strcmp(key, "inc") == 0 ? 32u
                                                                                        : 0u;
                    if (b2 == 0)
                        return err_set(err, ZBSO_EINVAL, "unknown key \"state.%s\"", key);
                    if (seen & b2)
                        return err_set(err, ZBSO_EINVAL, "key \"state.%s\" given twice", key);
                    seen |= b2;
                    if (!jint(&j, &v))
                        return err_set(err, ZBSO_EINVAL, "state.%s is not an integer from 0 to"
                                       " 2^128 - 1", key);
                    *(b2 == 16u ? &state : &inc) = v;
                } while (jlit(&j, ','));
                if (!jlit(&j, '}'))
                    return err_set(err, ZBSO_EINVAL, "state is not an object of integers");
            } else {
                u128 v;
                if (!jint(&j, &v) || v > (bit == 4 ? 1u : 0xffffffffu))
                    return err_set(err, ZBSO_EINVAL, "%s is not an integer from 0 to %s", key,
                                   bit == 4 ? "1" : "2^32 - 1");
                *(bit == 4 ? &has : &uint) = v;
            }
        } while (jlit(&j, ','));
        if (!jlit(&j, '}'))
            return err_set(err, ZBSO_EINVAL, "not JSON of numpy's generator state");
    }
    jws(&j);
    if (j.p != j.e)
        return err_set(err, ZBSO_EINVAL, "text after the JSON object");
    const char *missing = !(seen & 1) ? "bit_generator" : !(seen & 2) ? "state"
                        : !(seen & 16) ? "state.state" : !(seen & 32) ? "state.inc"
                        : !(seen & 4) ? "has_uint32" : !(seen & 8) ? "uinteger" : NULL;
    if (missing != NULL)
        return err_set(err, ZBSO_EINVAL, "key \"%s\" is missing", missing);
    /* PCG's increment is odd; numpy never writes another (its seeding sets the low bit). */
    if ((inc & 1) == 0)
        return err_set(err, ZBSO_EINVAL, "state.inc is even: not a PCG64 stream numpy makes");
    out->state_hi = (uint64_t)(state >> 64);
    out->state_lo = (uint64_t)state;
    out->inc_hi = (uint64_t)(inc >> 64);
    out->inc_lo = (uint64_t)inc;
    out->has_uint32 = (int)has;
    out->uinteger = (uint32_t)uint;
    return 0;
}

/* ---- jobs ---- */

void zjob_free(zjob *j)
{
    if (j == NULL)
        return;
    if (j->points != NULL)
        for (size_t i = 0; i < j->n_trials; i++)
            free(j->points[i]);
    for (size_t i = 0; i < j->n_profiles; i++)
        free(j->profiles[i]);
    free(j->points);
    free(j->n_points);
    free(j->profiles);
    free(j->trials);
    memset(j, 0, sizeof *j);
}

int zjob_add_trial(zjob *j, const zbso_trial *t, zbso_err *err)
{
    if (j->n_trials == j->cap_trials) {
        size_t cap = j->cap_trials ? 2 * j->cap_trials : 64;
        if (cap > ZJOB_MAX_TRIALS)
            return err_set(err, ZBSO_ENOMEM, "job %s has more than %d trials",
                           j->job.spec.job_id, ZJOB_MAX_TRIALS);
        zbso_trial *n = realloc(j->trials, cap * sizeof *n);
        if (n == NULL)
            return err_set(err, ZBSO_ENOMEM, "out of memory reading job %s", j->job.spec.job_id);
        j->trials = n;
        j->cap_trials = cap;
    }
    j->trials[j->n_trials++] = *t;
    return 0;
}

typedef struct read_ctx {
    zjob *j;
    const char *job_id;
    int rows;
    zbso_err *err;
} read_ctx;

static const char *const STAGES[] = {"Pruning", "MAB"};
static const char *const TYPES[] = {"Exploration", "Concurrent", "MAB"};
static const char *const STATUSES[] = {"Dispatched", "Succeeded", "Failed"};

/* The job's Job row: spec and state (generator state parsed later, with the seed). */
static int job_row(void *arg, const zcell *c, size_t n)
{
    read_ctx *r = arg;
    zbso_job *job = &r->j->job;
    zbso_job_spec *s = &job->spec;
    where w = {"Job", "", r->err};
    char idbuf[400];
    int rc;
    int64_t v;
    if (n < 22)
        return err_set(r->err, ZBSO_EINTERNAL, "Job query returned %zu columns", n);
    if (c[0].kind != ZC_TEXT || c[0].len != strlen(r->job_id) ||
        memcmp(c[0].text, r->job_id, c[0].len) != 0)
        return 0; /* a collation's match (MySQL's case-insensitive ids), not this job */
    if (r->rows++ > 0)
        return err_set(r->err, ZBSO_EINVAL, "table Job holds job_id %s twice",
                       shown_id(r->job_id, strlen(r->job_id), idbuf));
    snprintf(w.row, sizeof w.row, "job_id=%s", shown_id(r->job_id, strlen(r->job_id), idbuf));
    if ((rc = cell_text(&c[0], &w, "job_id", ZBSO_ID_MAX, s->job_id)) < 0 ||
        (rc = cell_text(&c[1], &w, "job_id_prefix", ZBSO_ID_MAX, s->job_id_prefix)) < 0 ||
        (rc = cell_int(&c[2], &w, "default_batch_size", 1, INT64_MAX,
                       &s->default_batch_size)) < 0 ||
        (rc = cell_bool(&c[3], &w, "higher_is_better_metric", &s->higher_is_better_metric)) < 0 ||
        (rc = cell_real(&c[4], &w, "eta_knob", false, &s->eta_knob)) < 0)
        return rc;
    s->has_beta_knob = c[5].kind != ZC_NULL;
    if (s->has_beta_knob && (rc = cell_real(&c[5], &w, "beta_knob", false, &s->beta_knob)) < 0)
        return rc;
    if ((rc = cell_real(&c[6], &w, "target_metric", false, &s->target_metric)) < 0 ||
        (rc = cell_int(&c[7], &w, "max_epochs", 1, INT64_MAX, &s->max_epochs)) < 0 ||
        (rc = cell_int(&c[8], &w, "num_pruning_rounds", 0, INT64_MAX,
                       &s->num_pruning_rounds)) < 0 ||
        (rc = cell_int(&c[9], &w, "window_size", 0, INT64_MAX, &s->window_size)) < 0 ||
        (rc = cell_real(&c[10], &w, "max_power", false, &s->max_power)) < 0 ||
        (rc = cell_int(&c[11], &w, "number_of_gpus", 1, INT64_MAX, &s->number_of_gpus)) < 0 ||
        (rc = cell_text(&c[12], &w, "gpu_model", ZBSO_GPU_MODEL_MAX, s->gpu_model)) < 0 ||
        (rc = cell_real(&c[13], &w, "mab_prior_mean", false, &s->mab_prior_mean)) < 0 ||
        (rc = cell_real(&c[14], &w, "mab_prior_precision", false,
                        &s->mab_prior_precision)) < 0 ||
        (rc = cell_int(&c[15], &w, "mab_num_explorations", 0, INT64_MAX,
                       &s->mab_num_explorations)) < 0)
        return rc;
    s->has_mab_seed = c[16].kind != ZC_NULL;
    if (s->has_mab_seed) {
        if ((rc = cell_int(&c[16], &w, "mab_seed", 0, INT64_MAX, &v)) < 0)
            return rc;
        s->mab_seed = (uint64_t)v;
        if (c[17].kind == ZC_NULL)
            return bad(&w, "mab_random_generator_state", "NULL while mab_seed is %lld: Zeus"
                       " keeps the generator state of every seeded job", (long long)v);
        zbso_err perr;
        if (c[17].kind != ZC_TEXT ||
            zeus_rng_parse(c[17].text, c[17].len, &job->rng, &perr) < 0) {
            char buf[400];
            return bad(&w, "mab_random_generator_state", "%s: %s", cell_shown(&c[17], buf),
                       c[17].kind != ZC_TEXT ? "not text" : perr.msg);
        }
    }
    if ((rc = cell_int(&c[18], &w, "exp_default_batch_size", 1, INT64_MAX,
                       &job->exp_default_batch_size)) < 0)
        return rc;
    int stage = 0;
    if ((rc = cell_enum(&c[19], &w, "stage", STAGES, 2, &stage)) < 0)
        return rc;
    job->stage = (zbso_stage)stage;
    job->has_min_cost = c[20].kind != ZC_NULL;
    if (job->has_min_cost) {
        if ((rc = cell_real(&c[20], &w, "min_cost", false, &job->min_cost)) < 0)
            return rc;
        if (!opt_cost_accepted(job->min_cost)) {
            char b[OPT_FMT_DOUBLE_MAX];
            return bad(&w, "min_cost", "%s is outside the costs zbso accepts (0, or %g to %g)",
                       opt_fmt_double(b, job->min_cost), OPT_COST_MIN, OPT_COST_MAX);
        }
    }
    return cell_int(&c[21], &w, "min_cost_batch_size", 1, INT64_MAX,
                    &job->min_cost_batch_size);
}

/* For the rows keyed (job_id, batch_size): true when row c belongs to the job being read,
 * with w->row naming the row for messages; false for another job's row. */
static bool keyed_row(const read_ctx *r, const zcell *c, where *w)
{
    char idbuf[400], vb[400];
    if (c[0].kind != ZC_TEXT || c[0].len != strlen(r->job_id) ||
        memcmp(c[0].text, r->job_id, c[0].len) != 0)
        return false;
    snprintf(w->row, sizeof w->row, "(job_id=%s, batch_size=%s)",
             shown_id(r->job_id, strlen(r->job_id), idbuf), key_shown(&c[1], vb));
    return true;
}

static int bs_row(void *arg, const zcell *c, size_t n)
{
    read_ctx *r = arg;
    zbso_job_spec *s = &r->j->job.spec;
    where w = {"BatchSize", "", r->err};
    int64_t bs;
    int rc;
    (void)n;
    if (!keyed_row(r, c, &w))
        return 0;
    if ((rc = cell_int(&c[1], &w, "batch_size", 1, INT64_MAX, &bs)) < 0)
        return rc;
    if (s->n_batch_sizes == ZBSO_MAX_BATCH_SIZES)
        return bad(&w, "batch_size", "the job has more than %d batch sizes",
                   ZBSO_MAX_BATCH_SIZES);
    s->batch_sizes[s->n_batch_sizes++] = bs;
    return 0;
}

static bool has_bs(const zbso_job_spec *s, int64_t bs)
{
    for (size_t i = 0; i < s->n_batch_sizes; i++)
        if (s->batch_sizes[i] == bs)
            return true;
    return false;
}

static int trial_row(void *arg, const zcell *c, size_t n)
{
    read_ctx *r = arg;
    zjob *j = r->j;
    where w = {"Trial", "", r->err};
    char idbuf[400], vb[400];
    zbso_trial t;
    int rc, ty = 0, stv = 0;
    (void)n;
    memset(&t, 0, sizeof t);
    if (c[0].kind != ZC_TEXT || c[0].len != strlen(r->job_id) ||
        memcmp(c[0].text, r->job_id, c[0].len) != 0)
        return 0;
    snprintf(w.row, sizeof w.row, "(job_id=%s, trial_number=%s)",
             shown_id(r->job_id, strlen(r->job_id), idbuf), key_shown(&c[2], vb));
    if ((rc = cell_int(&c[2], &w, "trial_number", 1, INT32_MAX, &t.trial_number)) < 0 ||
        (rc = cell_int(&c[1], &w, "batch_size", 1, INT64_MAX, &t.batch_size)) < 0 ||
        (rc = cell_time(&c[3], &w, "start_timestamp", &t.start_time)) < 0 ||
        (rc = cell_enum(&c[4], &w, "type", TYPES, 3, &ty)) < 0 ||
        (rc = cell_enum(&c[5], &w, "status", STATUSES, 3, &stv)) < 0)
        return rc;
    t.type = (zbso_trial_type)ty;
    t.status = (zbso_trial_status)stv;
    if (!has_bs(&j->job.spec, t.batch_size))
        return bad(&w, "batch_size", "%lld is not a batch size of the job (table BatchSize)",
                   (long long)t.batch_size);
    if (j->n_trials > 0 && j->trials[j->n_trials - 1].trial_number == t.trial_number)
        return bad(&w, "trial_number", "%lld is given twice", (long long)t.trial_number);
    if (t.type == ZBSO_TRIAL_MAB && j->job.stage != ZBSO_STAGE_MAB)
        return bad(&w, "type", "'MAB' in a job whose stage is Pruning: Zeus dispatches MAB"
                   " trials only after pruning");
    t.lease_renewed_at = t.start_time;
    t.metric = NAN; /* Zeus stores neither the last metric nor the epochs */
    switch (t.status) {
    case ZBSO_TRIAL_DISPATCHED:
        if (c[6].kind != ZC_NULL || c[7].kind != ZC_NULL || c[8].kind != ZC_NULL ||
            c[9].kind != ZC_NULL)
            return bad(&w, c[6].kind != ZC_NULL ? "end_timestamp" : c[7].kind != ZC_NULL ?
                       "time" : c[8].kind != ZC_NULL ? "energy" : "converged",
                       "set on a Dispatched trial: Zeus sets it only when the trial ends");
        break;
    case ZBSO_TRIAL_FAILED:
        t.end_time = t.start_time;
        if (c[6].kind != ZC_NULL && (rc = cell_time(&c[6], &w, "end_timestamp",
                                                    &t.end_time)) < 0)
            return rc;
        break;
    case ZBSO_TRIAL_SUCCEEDED:
        if ((rc = cell_time(&c[6], &w, "end_timestamp", &t.end_time)) < 0 ||
            (rc = cell_real(&c[7], &w, "time", false, &t.time)) < 0 ||
            (rc = cell_real(&c[8], &w, "energy", false, &t.energy)) < 0 ||
            (rc = cell_bool(&c[9], &w, "converged", &t.converged)) < 0)
            return rc;
        if (t.time < 0 || t.energy < 0)
            return bad(&w, t.time < 0 ? "time" : "energy", "%s is negative",
                       opt_fmt_double(vb, t.time < 0 ? t.time : t.energy));
        double cost = opt_trial_cost(&j->job.spec, &t);
        if (!opt_cost_accepted(cost)) {
            char cb[OPT_FMT_DOUBLE_MAX];
            bool time_term = (1 - j->job.spec.eta_knob) * j->job.spec.max_power * t.time >
                             j->job.spec.eta_knob * t.energy;
            return bad(&w, time_term ? "time" : "energy", "the trial's cost %s is outside the"
                       " costs zbso accepts (0, or %g to %g)", opt_fmt_double(cb, cost),
                       OPT_COST_MIN, OPT_COST_MAX);
        }
        break;
    }
    return zjob_add_trial(j, &t, r->err);
}

static int arm_row(void *arg, const zcell *c, size_t n)
{
    read_ctx *r = arg;
    zjob *j = r->j;
    where w = {"GaussianTsArmState", "", r->err};
    char vb[400];
    zbso_arm a;
    int rc;
    (void)n;
    if (!keyed_row(r, c, &w))
        return 0;
    if ((rc = cell_int(&c[1], &w, "batch_size", 1, INT64_MAX, &a.batch_size)) < 0 ||
        (rc = cell_real(&c[2], &w, "param_mean", false, &a.param_mean)) < 0 ||
        (rc = cell_real(&c[3], &w, "param_precision", true, &a.param_precision)) < 0 ||
        (rc = cell_int(&c[5], &w, "num_observations", 0, INT32_MAX, &a.num_observations)) < 0)
        return rc;
    if (a.param_precision < 0)
        return bad(&w, "param_precision", "%s is negative", opt_fmt_double(vb, a.param_precision));
    if (!has_bs(&j->job.spec, a.batch_size))
        return bad(&w, "batch_size", "%lld is not a batch size of the job (table BatchSize)",
                   (long long)a.batch_size);
    if (j->job.stage != ZBSO_STAGE_MAB)
        return bad(&w, "batch_size", "an arm of a job in the Pruning stage: Zeus makes the"
                   " arms when pruning ends");
    if (j->n_arms == ZBSO_MAX_BATCH_SIZES)
        return bad(&w, "batch_size", "too many arms");
    j->arms[j->n_arms++] = a;
    return 0;
}

int zeus_job_read(zdb *db, const char *job_id, double now, const uint32_t entropy[4],
                  zjob *out, zbso_err *err)
{
    read_ctx r = {out, job_id, 0, err};
    char idbuf[400];
    int rc;
    memset(out, 0, sizeof *out);
    spec_defaults(&out->job.spec);
    out->job.spec.n_batch_sizes = 0;
    if ((rc = zdb_query(db, ZQ_JOB, job_id, job_row, &r, err)) != 0)
        goto out;
    if (r.rows == 0) {
        rc = err_set(err, ZBSO_ENOTFOUND, "table Job has no job_id %s",
                     shown_id(job_id, strlen(job_id), idbuf));
        goto out;
    }
    if ((rc = zdb_query(db, ZQ_BATCH_SIZES, job_id, bs_row, &r, err)) != 0)
        goto out;
    zbso_job *job = &out->job;
    where w = {"Job", "", err};
    snprintf(w.row, sizeof w.row, "job_id=%s", shown_id(job_id, strlen(job_id), idbuf));
    if (job->spec.n_batch_sizes == 0) {
        rc = err_set(err, ZBSO_EINVAL, "table BatchSize has no row for job_id %s: a Zeus job"
                     " has at least one batch size", shown_id(job_id, strlen(job_id), idbuf));
        goto out;
    }
    zbso_err verr;
    err_clear(&verr);
    if (spec_validate(&job->spec, &verr) < 0) {
        if (strcmp(verr.loc, "batch_sizes") == 0)
            rc = err_set(err, ZBSO_EINVAL, "table BatchSize, rows of job_id %s, column"
                         " batch_size: %s", idbuf, verr.msg);
        else
            rc = bad(&w, verr.loc[0] ? verr.loc : "job_id", "%s", verr.msg);
        goto out;
    }
    if (!has_bs(&job->spec, job->exp_default_batch_size)) {
        rc = bad(&w, "exp_default_batch_size", "%lld is not a batch size of the job",
                 (long long)job->exp_default_batch_size);
        goto out;
    }
    if (!has_bs(&job->spec, job->min_cost_batch_size)) {
        rc = bad(&w, "min_cost_batch_size", "%lld is not a batch size of the job",
                 (long long)job->min_cost_batch_size);
        goto out;
    }
    if ((rc = zdb_query(db, ZQ_TRIALS, job_id, trial_row, &r, err)) != 0)
        goto out;
    if ((rc = zdb_query(db, ZQ_ARMS, job_id, arm_row, &r, err)) != 0)
        goto out;
    if (job->stage == ZBSO_STAGE_MAB && out->n_arms == 0 && job->spec.num_pruning_rounds > 0) {
        rc = bad(&w, "stage", "'MAB' but table GaussianTsArmState holds no arm of the job");
        goto out;
    }
    if (!job->spec.has_mab_seed)
        rng_seed_words(&job->rng, entropy, 4);
    job->num_trials = out->n_trials ? out->trials[out->n_trials - 1].trial_number : 0;
    job->created_at = now;
    job->updated_at = now;
    for (size_t i = 0; i < out->n_trials; i++) {
        const zbso_trial *t = &out->trials[i];
        if (t->start_time < job->created_at)
            job->created_at = t->start_time;
    }
    if (out->n_trials > 0) {
        job->updated_at = job->created_at;
        for (size_t i = 0; i < out->n_trials; i++) {
            const zbso_trial *t = &out->trials[i];
            double last = t->end_time > t->start_time ? t->end_time : t->start_time;
            if (last > job->updated_at)
                job->updated_at = last;
        }
    }
    job->revision = 1;
    rc = 0;
out:
    if (rc != 0)
        zjob_free(out);
    return rc;
}
