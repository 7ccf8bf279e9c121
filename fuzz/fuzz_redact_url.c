/* fuzz_redact_url.c: the database URL that `zbso serve` and `zbso migrate` write to the log
 * (config_redact_url) against the PostgreSQL backend's reading of it (pgurl_parse): for a
 * URL that parses with a password (in the user info or as password= / sslpassword= in the
 * query), the logged form must not parse back to that password. Its regressions are the
 * leaks this target found in the first config_redact_url (docs/FUZZING.md, Findings). */
#include <stdlib.h>
#include <string.h>

#include "cli/config.h"
#include "fuzz.h"
#include "store/netdb/pgurl.h"

static const char *const secrets[] = {"password", "sslpassword"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *url = fuzz_cstr(data, size);
    if (!url)
        return -1;
    pgurl *u = malloc(sizeof *u), *again = malloc(sizeof *again);
    char *shown = malloc(CFG_URL_MAX + 8);
    zbso_err err;
    FUZZ_CHECK(u != NULL && again != NULL && shown != NULL);
    err_clear(&err);
    if (pgurl_parse(url, NULL, NULL, u, &err) == 0) {
        config_redact_url(url, shown, CFG_URL_MAX + 8);
        if (strlen(shown) <= PGURL_URL_MAX && pgurl_parse(shown, NULL, NULL, again, &err) == 0) {
            for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++) {
                const char *was = pgurl_get(u, secrets[i]), *now = pgurl_get(again, secrets[i]);
                if (was && now && strcmp(was, "***") != 0)
                    FUZZ_CHECK(strcmp(was, now) != 0);
            }
        }
    }
    free(shown);
    free(again);
    free(u);
    free(url);
    return 0;
}
