/* table.c: aligned text tables for a terminal (table.h). Cells are kept as escaped
 * strings; widths are counted in UTF-8 characters when the table is printed. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/table.h"
#include "util/utf8.h"

#define TABLE_COLS_MAX 64

struct cli_table {
    size_t n_cols;
    char align[TABLE_COLS_MAX];
    char **cells;          /* row-major, n_rows * n_cols once rows are ended */
    size_t n_cells, cap;
    size_t in_row;         /* cells of the current, unended row */
};

static void *must(void *p)
{
    if (p == NULL) {
        fputs("zbso: out of memory\n", stderr);
        abort();
    }
    return p;
}

cli_table *cli_table_new(size_t n_cols, const char *align)
{
    cli_table *t = must(calloc(1, sizeof *t));
    if (n_cols == 0 || n_cols > TABLE_COLS_MAX)
        abort();
    t->n_cols = n_cols;
    for (size_t i = 0; i < n_cols; i++)
        t->align[i] = align != NULL && i < strlen(align) ? align[i] : 'l';
    return t;
}

void cli_table_free(cli_table *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n_cells; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

/* Takes ownership of s as the next cell of the current row. */
static void push(cli_table *t, char *s)
{
    if (t->in_row == t->n_cols) {
        free(s);
        abort(); /* more cells than columns: a bug of the caller */
    }
    if (t->n_cells == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->cells = must(realloc(t->cells, t->cap * sizeof *t->cells));
    }
    t->cells[t->n_cells++] = s;
    t->in_row++;
}

/* The length of the UTF-8 sequence at s (1..4) when it is a valid, shortest-form
 * encoding of a character that is not a control character (C0, DEL, C1), else 0. */
static size_t printable_seq(const unsigned char *s)
{
    size_t n = utf8_seq_len(s, SIZE_MAX);
    if (n == 1)
        return s[0] >= 0x20 && s[0] < 0x7f ? 1 : 0;
    /* C1 controls, U+0080..U+009F, are 0xc2 0x80..0x9f. */
    return s[0] == 0xc2 && s[1] <= 0x9f ? 0 : n;
}

/* Writes the escaped form of s into out (NULL: only counts). Returns its length. Control
 * characters and bytes that are not UTF-8 become \xNN; invisible characters (bidi
 * controls, zero-width ones: utf8_invisible) become \uXXXX (\UXXXXXXXX above U+FFFF), so
 * ids that differ only by them differ on screen and none reorders the line. */
static size_t escape_into(char *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t len = 0;
    while (*p) {
        size_t n = printable_seq(p);
        uint32_t cp = n > 1 ? utf8_decode(p, n) : 0;
        if (n > 1 && utf8_invisible(cp)) {
            char e[16];
            int k = snprintf(e, sizeof e, cp > 0xffff ? "\\U%08" PRIx32 : "\\u%04" PRIx32,
                             cp);
            if (out)
                memcpy(out + len, e, (size_t)k);
            len += (size_t)k;
            p += n;
        } else if (n > 0) {
            if (out)
                memcpy(out + len, p, n);
            len += n;
            p += n;
        } else {
            if (out)
                snprintf(out + len, 5, "\\x%02x", *p);
            len += 4;
            p++;
        }
    }
    if (out)
        out[len] = '\0';
    return len;
}

void cli_table_cell(cli_table *t, const char *s)
{
    char *e = must(malloc(escape_into(NULL, s) + 1));
    escape_into(e, s);
    push(t, e);
}

void cli_table_cellf(cli_table *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    char *s = must(malloc((size_t)n + 1));
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    push(t, s);
}

void cli_table_end_row(cli_table *t)
{
    while (t->in_row < t->n_cols)
        push(t, must(calloc(1, 1)));
    t->in_row = 0;
}

void cli_table_escape(FILE *to, const char *s)
{
    char *e = must(malloc(escape_into(NULL, s) + 1));
    escape_into(e, s);
    fputs(e, to);
    free(e);
}

/* Characters of the UTF-8 string s (its continuation bytes not counted). */
static size_t width(const char *s)
{
    size_t w = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        w += (*p & 0xc0) != 0x80;
    return w;
}

int cli_table_print(const cli_table *t, FILE *to)
{
    size_t w[TABLE_COLS_MAX] = {0};
    size_t n_rows = t->n_cells / t->n_cols;
    for (size_t i = 0; i < n_rows * t->n_cols; i++) {
        size_t cw = width(t->cells[i]);
        if (cw > w[i % t->n_cols])
            w[i % t->n_cols] = cw;
    }
    for (size_t r = 0; r < n_rows; r++) {
        /* Blanks are held back until a later cell needs them: no trailing blanks. */
        size_t pending = 0;
        for (size_t c = 0; c < t->n_cols; c++) {
            const char *s = t->cells[r * t->n_cols + c];
            size_t pad = w[c] - width(s);
            if (c > 0)
                pending += 2;
            if (t->align[c] == 'r')
                pending += pad;
            if (s[0] != '\0') {
                fprintf(to, "%*s%s", (int)pending, "", s);
                pending = 0;
            }
            if (t->align[c] != 'r')
                pending += pad;
        }
        fputc('\n', to);
    }
    return ferror(to) ? -1 : 0;
}
