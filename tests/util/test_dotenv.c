/* test_dotenv.c: util/dotenv: what each kind of line yields, exactly, and what each refusal
 * says (the fuzz target checks the invariants; these pin the results). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "util/dotenv.h"

/* The assignments of a parse, as "KEY=VALUE|KEY=VALUE|...". */
typedef struct pairs {
    char text[4096];
    int stop_after;   /* return 9 after this many calls; 0: never */
    int calls;
} pairs;

static int collect(void *ctx, const char *key, const char *value)
{
    pairs *p = ctx;
    size_t n = strlen(p->text);
    snprintf(p->text + n, sizeof p->text - n, "%s%s=%s", n ? "|" : "", key, value);
    p->calls++;
    return p->stop_after && p->calls == p->stop_after ? 9 : 0;
}

/* Parses text; returns the code, the pairs in *out and the message in *err. */
static int parse(const char *text, pairs *out, zbso_err *err)
{
    memset(out, 0, sizeof *out);
    err_clear(err);
    return dotenv_parse(text, strlen(text), collect, out, err);
}

static void test_lines(void **state)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"", ""},
        {"\n\n  \n# only a comment\n", ""},
        {"A=1", "A=1"},
        {"A=1\nB=two words\n", "A=1|B=two words"},
        {"export A=1\n  export\tB = 2  \n", "A=1|B=2"},
        {"A=x # comment\nB=x#not-a-comment\n", "A=x|B=x#not-a-comment"},
        {"A='single $x \\n'\n", "A=single $x \\n"},
        {"A=\"esc \\n\\t\\\"\\\\\\$ \\q\"\n", "A=esc \n\t\"\\$ \\q"},
        {"A=\"two\nlines\"\nB=3\n", "A=two\nlines|B=3"},
        {"A=\"q\" # after\n", "A=q"},
        {"A=\r\nB=\"\"\n", "A=|B="},
        {"_a.b-c=1\n", "_a.b-c=1"},
        {"A=1\nA=2\n", "A=1|A=2"},
        {"exported=1\n", "exported=1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pairs p;
        zbso_err err;
        int rc = parse(cases[i].text, &p, &err);
        if (rc != 0 || strcmp(p.text, cases[i].want) != 0)
            fail_msg("case %zu: rc %d '%s', want '%s' (%s)", i, rc, p.text, cases[i].want,
                     err.msg);
    }
}

static void test_refusals(void **state)
{
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"A=1\n1A=2\n", ".env line 2: expected KEY=VALUE with KEY made of letters, digits "
                        "and '_' (not starting with a digit)"},
        {"A\n", ".env line 1: 'A' is not followed by '='"},
        {"\n\nA=\"open\n\n", ".env line 3: the double quote is never closed"},
        {"A='open", ".env line 1: the single quote is never closed"},
        {"A=\"q\" x\n", ".env line 1: unexpected text after the closing quote of A"},
        {"A=\"a\nb\" x\n", ".env line 2: unexpected text after the closing quote of A"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pairs p;
        zbso_err err;
        int rc = parse(cases[i].text, &p, &err);
        if (rc != ZBSO_EINVAL || strcmp(err.msg, cases[i].msg) != 0)
            fail_msg("case %zu: rc %d '%s', want '%s'", i, rc, err.msg, cases[i].msg);
    }
}

static void test_limits(void **state)
{
    static char text[DOTENV_VALUE_MAX + 64];
    pairs p;
    zbso_err err;

    /* A value of exactly DOTENV_VALUE_MAX bytes, then one byte more. */
    memcpy(text, "A=", 2);
    memset(text + 2, 'v', DOTENV_VALUE_MAX);
    text[2 + DOTENV_VALUE_MAX] = '\0';
    assert_int_equal(parse(text, &p, &err), 0);
    assert_int_equal(p.calls, 1);
    memcpy(text + 2 + DOTENV_VALUE_MAX, "v\n", 3);
    assert_int_equal(parse(text, &p, &err), ZBSO_EINVAL);
    assert_string_equal(err.msg, ".env line 1: the value is longer than 8191 bytes");

    /* A key of DOTENV_KEY_MAX bytes, then one more. */
    memset(text, 'K', DOTENV_KEY_MAX);
    memcpy(text + DOTENV_KEY_MAX, "=1", 3);
    assert_int_equal(parse(text, &p, &err), 0);
    memset(text, 'K', DOTENV_KEY_MAX + 1);
    memcpy(text + DOTENV_KEY_MAX + 1, "=1", 3);
    assert_int_equal(parse(text, &p, &err), ZBSO_EINVAL);
    assert_string_equal(err.msg, ".env line 1: the key is longer than 255 bytes");

    /* A NUL byte inside a value; len, not the NUL, ends the text. */
    assert_int_equal(dotenv_parse("A=x\0y\n", 6, collect, &p, &err), ZBSO_EINVAL);
    assert_string_equal(err.msg, ".env line 1: the value contains a NUL byte");
    memset(&p, 0, sizeof p);
    assert_int_equal(dotenv_parse("A=1\nB=2", 6, collect, &p, &err), 0);
    assert_string_equal(p.text, "A=1|B=");
}

static void test_callback_stops(void **state)
{
    pairs p;
    zbso_err err;
    memset(&p, 0, sizeof p);
    p.stop_after = 2;
    err_clear(&err);
    const char *text = "A=1\nB=2\nC=3\n";
    assert_int_equal(dotenv_parse(text, strlen(text), collect, &p, &err), 9);
    assert_string_equal(p.text, "A=1|B=2");
    assert_int_equal(err.code, 0);
    /* err may be NULL. */
    memset(&p, 0, sizeof p);
    assert_int_equal(dotenv_parse("1=2", 3, collect, &p, NULL), ZBSO_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_callback_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
