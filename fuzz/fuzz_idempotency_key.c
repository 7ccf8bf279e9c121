/* fuzz_idempotency_key.c: GET /jobs/batch_size's Idempotency-Key header value
 * (http_idempotency_key), as libmicrohttpd hands it over: a C string. Checks that an
 * accepted key is 1..SVC_KEY_MAX printable ASCII bytes that, written back as an RFC 8941
 * sf-string, read back the same; and that a refusal is a 422 at header.idempotency-key
 * whose body reads back. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "http/httpInt.h"

/* key as an sf-string: quoted, with '"' and '\' escaped. */
static void quote(const char *key, char *out)
{
    *out++ = '"';
    for (; *key; key++) {
        if (*key == '"' || *key == '\\')
            *out++ = '\\';
        *out++ = *key;
    }
    *out++ = '"';
    *out = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *v = fuzz_cstr(data, size);
    char key[SVC_KEY_MAX + 1], again[SVC_KEY_MAX + 1], quoted[2 * SVC_KEY_MAX + 3];
    zbso_err err;
    if (!v)
        return -1;
    err_clear(&err);
    int rc = http_idempotency_key(v, key, &err);
    if (rc == 0) {
        size_t n = strlen(key);
        FUZZ_CHECK(n >= 1 && n <= SVC_KEY_MAX);
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK(key[i] >= 0x20 && key[i] <= 0x7e);
        quote(key, quoted);
        FUZZ_CHECK(http_idempotency_key(quoted, again, &err) == 0);
        FUZZ_CHECK(strcmp(key, again) == 0);
    } else {
        FUZZ_CHECK(rc == ZBSO_EINVAL && err.code == ZBSO_EINVAL);
        FUZZ_CHECK(strcmp(err.where, "header") == 0);
        FUZZ_CHECK(strcmp(err.loc, "idempotency-key") == 0);
        fuzz_check_error_body(&err, true);
    }
    /* No header at all: no key, never an error. */
    FUZZ_CHECK(http_idempotency_key(NULL, key, &err) == 0 && key[0] == '\0');
    free(v);
    return 0;
}
