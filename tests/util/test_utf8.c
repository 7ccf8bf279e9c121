/* test_utf8.c: util/utf8 on the boundaries RFC 3629 draws: each sequence length, overlong
 * forms, surrogates, code points past U+10FFFF, truncation and stray continuation bytes;
 * decoding, and which code points are invisible. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/utf8.h"

static size_t seq(const char *s, size_t avail)
{
    return utf8_seq_len((const unsigned char *)s, avail);
}

static size_t bad_at(const char *s)
{
    return utf8_bad_at((const unsigned char *)s, strlen(s));
}

static void test_sequences(void **state)
{
    (void)state;
    assert_int_equal(seq("a", 1), 1);
    assert_int_equal(seq("\x7f", 1), 1);
    assert_int_equal(seq("\xc2\x80", 2), 2);            /* U+0080 */
    assert_int_equal(seq("\xdf\xbf", 2), 2);            /* U+07FF */
    assert_int_equal(seq("\xe0\xa0\x80", 3), 3);        /* U+0800 */
    assert_int_equal(seq("\xed\x9f\xbf", 3), 3);        /* U+D7FF */
    assert_int_equal(seq("\xee\x80\x80", 3), 3);        /* U+E000 */
    assert_int_equal(seq("\xf0\x90\x80\x80", 4), 4);    /* U+10000 */
    assert_int_equal(seq("\xf4\x8f\xbf\xbf", 4), 4);    /* U+10FFFF */
    assert_int_equal(seq("\xf4\x8f\xbf\xbf", SIZE_MAX), 4);

    assert_int_equal(seq("\x80", 1), 0);                /* a continuation byte first */
    assert_int_equal(seq("\xc0\xaf", 2), 0);            /* overlong '/' */
    assert_int_equal(seq("\xc1\xbf", 2), 0);
    assert_int_equal(seq("\xe0\x9f\xbf", 3), 0);        /* overlong U+07FF */
    assert_int_equal(seq("\xed\xa0\x80", 3), 0);        /* U+D800, a surrogate */
    assert_int_equal(seq("\xf0\x8f\xbf\xbf", 4), 0);    /* overlong U+FFFF */
    assert_int_equal(seq("\xf4\x90\x80\x80", 4), 0);    /* U+110000 */
    assert_int_equal(seq("\xf5\x80\x80\x80", 4), 0);
    assert_int_equal(seq("\xff", 1), 0);
    assert_int_equal(seq("\xe2\x82", 2), 0);            /* cut short by avail */
    assert_int_equal(seq("\xe2\x82\xac", 2), 0);
    assert_int_equal(seq("\xe2\x82", SIZE_MAX), 0);     /* cut short by the NUL */
    assert_int_equal(seq("\xe2\x28\xa1", 3), 0);        /* a bad second byte */
    assert_int_equal(seq("\xf0\x90\x28\x80", 4), 0);    /* a bad third byte */
    assert_int_equal(seq("a", 0), 0);
}

static void test_bad_at(void **state)
{
    (void)state;
    assert_int_equal(bad_at(""), 0);
    assert_int_equal(bad_at("job-1"), 5);
    assert_int_equal(bad_at("j\xc3\xa9 \xe2\x9c\x93"), 7);
    assert_int_equal(bad_at("ab\xff"), 2);
    assert_int_equal(bad_at("ab\xc3"), 2);
    assert_int_equal(bad_at("\xe2\x82\xac\xe2\x82"), 3);
}

static uint32_t decode(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    return utf8_decode(p, utf8_seq_len(p, SIZE_MAX));
}

static void test_decode_and_invisible(void **state)
{
    (void)state;
    assert_int_equal(decode("a"), 0x61);
    assert_int_equal(decode("\xc3\xa9"), 0xe9);
    assert_int_equal(decode("\xe2\x80\xae"), 0x202e);
    assert_int_equal(decode("\xf4\x8f\xbf\xbf"), 0x10ffff);
    assert_int_equal(decode("\xf0\x9f\x98\x80"), 0x1f600);
    /* Bidi controls, zero-width characters and the other default-ignorables... */
    static const uint32_t hidden[] = {0xad, 0x34f, 0x61c, 0x180e, 0x200b, 0x200c, 0x200d,
                                      0x200e, 0x200f, 0x202a, 0x202e, 0x2060, 0x2066,
                                      0x2069, 0xfe0f, 0xfeff, 0xe0001, 0xe007f, 0xe01ef};
    for (size_t i = 0; i < sizeof hidden / sizeof hidden[0]; i++)
        assert_true(utf8_invisible(hidden[i]));
    /* ...but not their neighbours, nor visible text. */
    static const uint32_t shown[] = {0x20, 0x41, 0xac, 0xae, 0xe9, 0x200a, 0x2010, 0x2029,
                                     0x202f, 0x2070, 0xfdff, 0xfe10, 0xfefe, 0xff00,
                                     0x1f600, 0xdffff, 0xe1000};
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++)
        assert_false(utf8_invisible(shown[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequences),
        cmocka_unit_test(test_bad_at),
        cmocka_unit_test(test_decode_and_invisible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
