/* test_health.c: the reason class GET /healthz gives a caller without the token
 * (http_health_reason): each store's messages for each kind of fault, and the fallback.
 * The messages are those the stores write (src/store), paths and hosts included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "http/httpInt.h"

static void test_reasons(void **state)
{
    static const struct {
        const char *msg, *reason;
    } cases[] = {
        {"sqlite: commit failed on /var/lib/zbso/x.db: the disk is full: No space left on "
         "device (database or disk is full, code 13)", "disk_full"},
        {"mysql: The table 'trials' is full (error 1114)", "disk_full"},
        {"sqlite: commit failed on /srv/x.db: the database cannot be written (attempt to "
         "write a readonly database, code 8)", "read_only"},
        {"postgresql: the database is read-only (a standby, or default_transaction_read_only)"
         " on postgresql://zbso:***@db.internal:5432/zbso", "read_only"},
        {"sqlite: begin failed on /srv/x.db: the database is locked by another connection "
         "or process (database is locked, code 5)", "locked"},
        {"sqlite: commit failed on /srv/x.db: I/O error while syncing to disk: "
         "Input/output error (disk I/O error, code 1034)", "io_error"},
        {"database file /srv/x.db was deleted while zbso was running; restart zbso serve",
         "database_gone"},
        {"the WAL file /srv/x.db-wal of database /srv/x.db was replaced by another file "
         "while zbso was running", "database_gone"},
        {"cannot connect to PostgreSQL at postgresql://zbso:***@10.0.0.7:5432/zbso: "
         "Connection refused", "unreachable"},
        {"mysql: Lost connection to server during query (error 2013) on mysql://db/zbso",
         "unreachable"},
        {"sqlite: probe failed on /srv/x.db: something else (code 11)", "storage_error"},
        {"", "storage_error"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_string_equal(http_health_reason(cases[i].msg), cases[i].reason);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reasons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
