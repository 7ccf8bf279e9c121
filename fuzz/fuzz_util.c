/* fuzz_util.c: the helpers of fuzz.h shared by the fuzz targets. Test code only. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"

_Noreturn void fuzz_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: invariant failed: %s\n", file, line, what);
    abort();
}

char *fuzz_copy(const void *data, size_t size)
{
    /* malloc(0) gives a 0-byte block (ASan reports any read of it) or NULL, which every
     * parser takes with len 0. */
    char *p = malloc(size);
    if (!p && size)
        abort();
    if (size)
        memcpy(p, data, size);
    return p;
}

char *fuzz_cstr(const void *data, size_t size)
{
    if (size && memchr(data, '\0', size))
        return NULL;
    char *p = malloc(size + 1);
    if (!p)
        abort();
    if (size)
        memcpy(p, data, size);
    p[size] = '\0';
    return p;
}

bool fuzz_is_ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            return false;
    return true;
}

void fuzz_check_error_body(const zbso_err *err, bool detail)
{
    char want[ZBSO_ERR_MSG_MAX + ZBSO_ERR_LOC_MAX + 32];
    char got[sizeof want];
    size_t len = 0;
    FUZZ_CHECK(err->code < 0);
    FUZZ_CHECK(err->msg[0] != '\0');
    char *body = codec_error_dump(err, detail, &len);
    FUZZ_CHECK(body != NULL);
    FUZZ_CHECK(strlen(body) == len);
    char *copy = fuzz_copy(body, len);
    FUZZ_CHECK(codec_error_message(copy, len, got, sizeof got) == 0);
    if (detail)
        snprintf(want, sizeof want, "%s%s%s: %s", err->where[0] ? err->where : "body",
                 err->loc[0] ? "." : "", err->loc, err->msg);
    else
        snprintf(want, sizeof want, "%s", err->msg);
    if (fuzz_is_ascii(want))
        FUZZ_CHECK(strcmp(got, want) == 0);
    else
        FUZZ_CHECK(got[0] != '\0');
    free(copy);
    free(body);
}
