/* test_auth.c: http_auth_check, the API token check: a bearer token, HTTP Basic whose
 * password is the token with any user name (the header httpx and curl build from
 * http://user:TOKEN@host), and every malformed or wrong header refused with a message that
 * holds no secret. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "http/httpInt.h"

#define TOKEN "s3cr:et"

static int check(const char *header, zbso_err *err)
{
    err_clear(err);
    return http_auth_check(TOKEN, strlen(TOKEN), header, err);
}

static void test_accepted(void **state)
{
    (void)state;
    zbso_err err;
    /* base64("zrso:s3cr:et"), base64(":s3cr:et"), base64("user name:s3cr:et"): the password
     * is everything after the first ':' (RFC 7617), so a token may hold ':' too. */
    const char *const ok[] = {
        "Bearer s3cr:et", "bearer \t s3cr:et \t", "  BEARER s3cr:et",
        "Basic enJzbzpzM2NyOmV0", "Basic OnMzY3I6ZXQ=", "basic  dXNlciBuYW1lOnMzY3I6ZXQ= ",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int rc = check(ok[i], &err);
        if (rc != 0)
            fail_msg("'%s' refused: %s", ok[i], err.msg);
    }
}

static void test_refused(void **state)
{
    (void)state;
    zbso_err err;
    const struct {
        const char *header;
        const char *says;
    } bad[] = {
        {NULL, "missing Authorization header"},
        {"", "neither a Bearer token nor Basic"},
        {"Bearer", "neither a Bearer token nor Basic"},
        {"Bearer s3cr:e", "wrong bearer token"},
        {"Bearer s3cr:et2", "wrong bearer token"},
        {"Bearer ", "wrong bearer token"},
        {"Token s3cr:et", "neither a Bearer token nor Basic"},
        {"Basic", "neither a Bearer token nor Basic"},
        {"Basic ", "not base64"},
        {"Basic enJzbzpzM2NyOmV0=", "not base64"},      /* length not a multiple of 4 */
        {"Basic enJzbzpzM2Ny!mV0", "not base64"},       /* outside the alphabet */
        {"Basic OnM=zY3I6ZXQ=", "not base64"},          /* padding inside */
        {"Basic enJzbw==", "no ':'"},                   /* "zrso" */
        {"Basic enJzbzpzM2NyOmU=", "wrong password"},   /* "zrso:s3cr:e" */
        {"Basic czNjcjpldDp4", "wrong password"},       /* "s3cr:et:x": user s3cr */
        {"Basic czNjcjpldA==", "wrong password"},       /* "s3cr:et": the token as user */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = check(bad[i].header, &err);
        if (rc != ZBSO_EAUTH)
            fail_msg("'%s' gave %d, not ZBSO_EAUTH", bad[i].header, rc);
        if (!strstr(err.msg, bad[i].says))
            fail_msg("'%s': message '%s' lacks '%s'", bad[i].header, err.msg, bad[i].says);
        if (strstr(err.msg, "s3cr"))
            fail_msg("'%s': message '%s' shows a secret", bad[i].header, err.msg);
    }
}

/* Credentials decoding to more than 4096 bytes are refused, not truncated. */
static void test_too_long(void **state)
{
    (void)state;
    zbso_err err;
    static char h[6 + 5468 + 1];
    memcpy(h, "Basic ", 6);
    memset(h + 6, 'A', 5468); /* 4101 bytes decoded */
    assert_int_equal(check(h, &err), ZBSO_EAUTH);
    assert_non_null(strstr(err.msg, "at most 4096 bytes"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepted),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_too_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
