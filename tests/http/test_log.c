/* test_log.c: log_escape (client text in a log line) and log_limited (one line per second
 * of a kind, the next one counting those suppressed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
/* log.h must compile beside <syslog.h> (whose LOG_DEBUG, LOG_INFO... it once redefined). */
#include <syslog.h>
#include <unistd.h>

#include "util/log.h"

static void test_escape_control_quote_backslash_and_non_ascii(void **state)
{
    char out[256];
    static const char in[] = "a\nb\r\"c\\d\x01\x7f\xc3\xa9 e";
    assert_string_equal(log_escape(in, sizeof in - 1, out, sizeof out),
                        "a\\x0ab\\x0d\\x22c\\x5cd\\x01\\x7f\\xc3\\xa9 e");
    /* A NUL inside the given length is escaped too, not an end. */
    assert_string_equal(log_escape("h-b\0x", 5, out, sizeof out), "h-b\\x00x");
    assert_string_equal(log_escape("", 0, out, sizeof out), "");
}

static void test_escape_cuts_at_a_whole_escape(void **state)
{
    char out[12];
    /* "abcdefgh" fits in 12 with its NUL. */
    assert_string_equal(log_escape("abcdefgh", 8, out, sizeof out), "abcdefgh");
    assert_string_equal(log_escape("abcdefghijklmnop", 16, out, sizeof out), "abcdefgh...");
    assert_string_equal(log_escape("ab\n\n\n\n", 6, out, sizeof out), "ab\\x0a...");
    assert_int_equal(strlen(out), 9);
}

/* Runs fn with stderr sent to a temporary file; returns what was written (static). */
static const char *capture(void (*fn)(void))
{
    static char buf[4096];
    FILE *f = tmpfile();
    assert_non_null(f);
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(f), 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void five_in_a_row(void)
{
    static log_limit ll = LOG_LIMIT_INIT;
    for (int i = 0; i < 5; i++)
        log_limited(&ll, ZLOG_WARN, "refused %d", i);
    /* The next window: one line, counting the 4 suppressed. */
    atomic_store(&ll.next_ms, 0);
    log_limited(&ll, ZLOG_WARN, "refused %d", 5);
}

static void test_limited_writes_one_line_per_interval(void **state)
{
    const char *out = capture(five_in_a_row);
    assert_non_null(strstr(out, " WARN refused 0\n"));
    assert_null(strstr(out, "refused 1"));
    assert_null(strstr(out, "refused 4"));
    assert_non_null(strstr(out, " WARN refused 5 (4 more like this suppressed)\n"));
}

static void control_in_message(void)
{
    log_warn("a%sb", "\nforged\r");
}

static void test_every_line_escapes_control_bytes(void **state)
{
    const char *out = capture(control_in_message);
    assert_non_null(strstr(out, " WARN a\\x0aforged\\x0db\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape_control_quote_backslash_and_non_ascii),
        cmocka_unit_test(test_escape_cuts_at_a_whole_escape),
        cmocka_unit_test(test_limited_writes_one_line_per_interval),
        cmocka_unit_test(test_every_line_escapes_control_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
