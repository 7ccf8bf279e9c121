/* dotenv.c: the `.env` text parser of dotenv.h. Pure and bounded: it parses untrusted
 * bytes (fuzz/fuzz_dotenv.c), reads no file and no environment. */
#include "util/dotenv.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool is_blank(char c) { return c == ' ' || c == '\t'; }
static bool is_eol(char c) { return c == '\n' || c == '\r'; }
static bool is_key_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool is_key_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-';
}

/* The parser's cursor over the text: position, line number for messages, and where the
 * unquoted value goes (bounded by DOTENV_VALUE_MAX). */
typedef struct dotenv_cursor {
    const char *s;
    size_t len, i;
    unsigned line;
    char val[DOTENV_VALUE_MAX + 1];
    size_t n_val;
} dotenv_cursor;

static int val_push(dotenv_cursor *c, char ch, zbso_err *err)
{
    if (ch == '\0')
        return err_set(err, ZBSO_EINVAL, ".env line %u: the value contains a NUL byte", c->line);
    if (c->n_val >= DOTENV_VALUE_MAX)
        return err_set(err, ZBSO_EINVAL, ".env line %u: the value is longer than %u bytes",
                       c->line, (unsigned)DOTENV_VALUE_MAX);
    c->val[c->n_val++] = ch;
    return 0;
}

static void skip_to_eol(dotenv_cursor *c)
{
    while (c->i < c->len && !is_eol(c->s[c->i]))
        c->i++;
}

/* Reads a quoted value starting at the opening quote. Returns 0 or ZBSO_EINVAL. */
static int read_quoted(dotenv_cursor *c, zbso_err *err)
{
    char q = c->s[c->i++];
    unsigned start_line = c->line;
    while (c->i < c->len) {
        char ch = c->s[c->i++];
        if (ch == q)
            return 0;
        if (ch == '\n')
            c->line++;
        if (q == '"' && ch == '\\' && c->i < c->len) {
            char e = c->s[c->i++];
            switch (e) {
            case 'n': ch = '\n'; break;
            case 't': ch = '\t'; break;
            case 'r': ch = '\r'; break;
            case '"': case '\\': case '$': ch = e; break;
            default:
                /* Unknown escapes stay as written, as python-dotenv keeps them. */
                if (val_push(c, '\\', err) < 0)
                    return err->code;
                ch = e;
                if (e == '\n')
                    c->line++;
            }
        }
        if (val_push(c, ch, err) < 0)
            return err->code;
    }
    return err_set(err, ZBSO_EINVAL, ".env line %u: the %s quote is never closed", start_line,
                   q == '"' ? "double" : "single");
}

/* Reads a bare value up to the end of the line, dropping a ` # comment` and the blanks
 * around the value. Returns 0 or ZBSO_EINVAL. */
static int read_bare(dotenv_cursor *c, zbso_err *err)
{
    while (c->i < c->len && !is_eol(c->s[c->i])) {
        char ch = c->s[c->i];
        if (ch == '#' && (c->n_val == 0 || is_blank(c->val[c->n_val - 1]))) {
            skip_to_eol(c);
            break;
        }
        if (val_push(c, ch, err) < 0)
            return err->code;
        c->i++;
    }
    while (c->n_val > 0 && is_blank(c->val[c->n_val - 1]))
        c->n_val--;
    return 0;
}

int dotenv_parse(const char *text, size_t len, dotenv_fn fn, void *ctx, zbso_err *err)
{
    zbso_err local;
    if (!err)
        err = &local;
    int rc = 0;
    dotenv_cursor *c = calloc(1, sizeof *c);
    if (!c)
        return err_set(err, ZBSO_ENOMEM, "out of memory parsing .env text");
    c->s = text;
    c->len = len;
    c->line = 1;
    char key[DOTENV_KEY_MAX + 1];

    while (c->i < c->len) {
        while (c->i < c->len && is_blank(c->s[c->i]))
            c->i++;
        if (c->i >= c->len)
            break;
        char ch = c->s[c->i];
        if (is_eol(ch)) {
            if (ch == '\n')
                c->line++;
            c->i++;
            continue;
        }
        if (ch == '#') {
            skip_to_eol(c);
            continue;
        }
        if (c->len - c->i > 7 && memcmp(c->s + c->i, "export", 6) == 0 &&
            is_blank(c->s[c->i + 6])) {
            c->i += 6;
            while (c->i < c->len && is_blank(c->s[c->i]))
                c->i++;
        }
        size_t n_key = 0;
        if (c->i >= c->len || !is_key_start(c->s[c->i])) {
            rc = err_set(err, ZBSO_EINVAL,
                         ".env line %u: expected KEY=VALUE with KEY made of letters, digits "
                         "and '_' (not starting with a digit)", c->line);
            goto out;
        }
        while (c->i < c->len && is_key_char(c->s[c->i])) {
            if (n_key >= DOTENV_KEY_MAX) {
                rc = err_set(err, ZBSO_EINVAL, ".env line %u: the key is longer than %u bytes",
                             c->line, (unsigned)DOTENV_KEY_MAX);
                goto out;
            }
            key[n_key++] = c->s[c->i++];
        }
        key[n_key] = '\0';
        while (c->i < c->len && is_blank(c->s[c->i]))
            c->i++;
        if (c->i >= c->len || c->s[c->i] != '=') {
            rc = err_set(err, ZBSO_EINVAL, ".env line %u: '%s' is not followed by '='",
                         c->line, key);
            goto out;
        }
        c->i++;
        while (c->i < c->len && is_blank(c->s[c->i]))
            c->i++;
        c->n_val = 0;
        if (c->i < c->len && (c->s[c->i] == '"' || c->s[c->i] == '\'')) {
            rc = read_quoted(c, err);
            if (rc < 0)
                goto out;
            while (c->i < c->len && is_blank(c->s[c->i]))
                c->i++;
            if (c->i < c->len && c->s[c->i] == '#')
                skip_to_eol(c);
            if (c->i < c->len && !is_eol(c->s[c->i])) {
                rc = err_set(err, ZBSO_EINVAL,
                             ".env line %u: unexpected text after the closing quote of %s",
                             c->line, key);
                goto out;
            }
        } else {
            rc = read_bare(c, err);
            if (rc < 0)
                goto out;
        }
        c->val[c->n_val] = '\0';
        rc = fn(ctx, key, c->val);
        if (rc != 0)
            goto out;
    }
out:
    free(c);
    return rc;
}
