/* test_conntrack.c: the connection tracker's decisions (src/http/conntrack.h): when a
 * request head begins, when it or a body is too slow, when a drain closes a connection, and when a
 * closing connection is owed the answer libmicrohttpd never gave. Pure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "http/conntrack.h"

#define TIMEOUT_MS 10000
#define BODY_MS 30000

static ct_state idle_since(int64_t since_ms, uint64_t rx, uint64_t tx)
{
    ct_state s = {.phase = CT_IDLE, .since_ms = since_ms, .rx_base = rx, .tx_base = tx};
    return s;
}

static void test_idle_connection_waits_for_bytes(void **state)
{
    ct_state s = idle_since(1000, 500, 900);
    /* No new byte: nothing, however long (the idle timeout is libmicrohttpd's). */
    assert_int_equal(conntrack_judge(&s, 500, 1000 + 3600000, TIMEOUT_MS, BODY_MS, false), CT_KEEP);
    /* One new byte: a head began. */
    assert_int_equal(conntrack_judge(&s, 501, 1001, TIMEOUT_MS, BODY_MS, false), CT_HEAD_STARTED);
}

static void test_head_times_out_at_the_header_timeout(void **state)
{
    ct_state s = {.phase = CT_HEAD, .since_ms = 5000, .rx_base = 500, .tx_base = 900};
    assert_int_equal(conntrack_judge(&s, 600, 5000 + TIMEOUT_MS - 1, TIMEOUT_MS, BODY_MS, false),
                     CT_KEEP);
    assert_int_equal(conntrack_judge(&s, 600, 5000 + TIMEOUT_MS, TIMEOUT_MS, BODY_MS, false),
                     CT_SHUT_SLOW_HEAD);
    /* Disabled: never. */
    assert_int_equal(conntrack_judge(&s, 600, 5000 + 100 * TIMEOUT_MS, 0, BODY_MS, false), CT_KEEP);
    /* Draining does not shorten a head's time. */
    assert_int_equal(conntrack_judge(&s, 600, 5001, TIMEOUT_MS, BODY_MS, true), CT_KEEP);
}

static void test_busy_or_shut_is_left_alone(void **state)
{
    ct_state busy = {.phase = CT_BUSY};
    assert_int_equal(conntrack_judge(&busy, 999, 100 * TIMEOUT_MS, TIMEOUT_MS, BODY_MS, true),
                     CT_KEEP);
    ct_state shut = {.phase = CT_HEAD, .shut = true};
    assert_int_equal(conntrack_judge(&shut, 999, 100 * TIMEOUT_MS, TIMEOUT_MS, BODY_MS, true),
                     CT_KEEP);
}

static void test_body_times_out_at_the_body_timeout(void **state)
{
    /* The head was complete at 5000: the body has BODY_MS from then, whatever the bytes
     * say (a byte a second is no excuse) and whether or not the server drains. */
    ct_state s = {.phase = CT_BODY, .since_ms = 5000, .rx_base = 500, .line_seen = true};
    assert_int_equal(conntrack_judge(&s, 600, 5000 + BODY_MS - 1, TIMEOUT_MS, BODY_MS, false),
                     CT_KEEP);
    assert_int_equal(conntrack_judge(&s, 601, 5000 + BODY_MS, TIMEOUT_MS, BODY_MS, false),
                     CT_SHUT_SLOW_BODY);
    assert_int_equal(conntrack_judge(&s, 601, 5000 + BODY_MS, TIMEOUT_MS, BODY_MS, true),
                     CT_SHUT_SLOW_BODY);
    /* The header timeout does not apply to a body, and 0 disables the body timeout. */
    assert_int_equal(conntrack_judge(&s, 600, 5000 + TIMEOUT_MS, TIMEOUT_MS, BODY_MS, false),
                     CT_KEEP);
    assert_int_equal(conntrack_judge(&s, 600, 5000 + 100 * BODY_MS, TIMEOUT_MS, 0, false),
                     CT_KEEP);
    /* Once shut (answered 408), or once the body is complete (busy), never again. */
    ct_state shut = s;
    shut.shut = true;
    assert_int_equal(conntrack_judge(&shut, 600, 5000 + 2 * BODY_MS, TIMEOUT_MS, BODY_MS,
                                     false), CT_KEEP);
    ct_state busy = s;
    busy.phase = CT_BUSY;
    assert_int_equal(conntrack_judge(&busy, 600, 5000 + 2 * BODY_MS, TIMEOUT_MS, BODY_MS,
                                     false), CT_KEEP);
    /* A connection reading a body is never owed a 400 for an unparsed line. */
    assert_false(conntrack_owes_answer(&s, 700, 0, false));
}

static void test_drain_closes_idle_connections_after_a_pause(void **state)
{
    ct_state s = idle_since(1000, 500, 900);
    assert_int_equal(conntrack_judge(&s, 500, 1000 + CT_DRAIN_IDLE_MS - 1, TIMEOUT_MS,
                                     BODY_MS, true),
                     CT_KEEP);
    assert_int_equal(conntrack_judge(&s, 500, 1000 + CT_DRAIN_IDLE_MS, TIMEOUT_MS, BODY_MS, true),
                     CT_SHUT_IDLE);
    /* Bytes arrived: a request is coming and must be answered, not cut off. */
    assert_int_equal(conntrack_judge(&s, 510, 1000 + CT_DRAIN_IDLE_MS, TIMEOUT_MS, BODY_MS, true),
                     CT_HEAD_STARTED);
}

static void test_owed_answer_only_for_an_unparsed_line(void **state)
{
    ct_state s = idle_since(0, 100, 2000);
    /* "HELLO\r\n\r\n" arrived, nothing parsed, nothing written: owed. */
    assert_true(conntrack_owes_answer(&s, 109, 2000, false));
    /* libmicrohttpd wrote its own error (a bad version, a line too long): not owed. */
    assert_false(conntrack_owes_answer(&s, 109, 2140, false));
    /* No byte since the last request (the client closed an idle connection): not owed. */
    assert_false(conntrack_owes_answer(&s, 100, 2000, false));
    /* The server is stopping, zbso shut it down, or a line was parsed: not owed. */
    assert_false(conntrack_owes_answer(&s, 109, 2000, true));
    ct_state shut = s;
    shut.shut = true;
    assert_false(conntrack_owes_answer(&shut, 109, 2000, false));
    ct_state parsed = s;
    parsed.line_seen = true;
    parsed.phase = CT_HEAD;
    assert_false(conntrack_owes_answer(&parsed, 109, 2000, false));
    ct_state busy = s;
    busy.phase = CT_BUSY;
    assert_false(conntrack_owes_answer(&busy, 109, 2000, false));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idle_connection_waits_for_bytes),
        cmocka_unit_test(test_head_times_out_at_the_header_timeout),
        cmocka_unit_test(test_busy_or_shut_is_left_alone),
        cmocka_unit_test(test_body_times_out_at_the_body_timeout),
        cmocka_unit_test(test_drain_closes_idle_connections_after_a_pause),
        cmocka_unit_test(test_owed_answer_only_for_an_unparsed_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
