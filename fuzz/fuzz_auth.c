/* fuzz_auth.c: the API token check of an Authorization header value (http_auth_check), as
 * libmicrohttpd hands it over: a C string. The token is "tok:en". Checks that the verdict
 * is success or ZBSO_EAUTH with a message; that an accepted header is "Bearer" and the
 * token, or "Basic" and base64 (checked again by a decoder of this file) of a user name,
 * ':' and the token; and that no message holds the token. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "http/httpInt.h"

static const char TOKEN[] = "tok:en";

/* Decodes padded base64 in[0..n) into out (capacity cap) with a table search; -1 when it
 * is not that. An independent decoder: the alphabet by strchr, groups of four. */
static long decode(const char *in, size_t n, char *out, size_t cap)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t len = 0;
    if (n == 0 || n % 4)
        return -1;
    for (size_t i = 0; i < n; i += 4) {
        unsigned long w = 0;
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            const char *p = in[i + k] ? strchr(abc, in[i + k]) : NULL;
            if (in[i + k] == '=' && i + 4 == n && k >= 2 && (k == 3 || in[i + 3] == '='))
                pad++;
            else if (!p || pad)
                return -1;
            w = w << 6 | (unsigned long)(p ? p - abc : 0);
        }
        for (int k = 0; k < 3 - pad; k++) {
            if (len == cap)
                return -1;
            out[len++] = (char)(w >> (16 - 8 * k));
        }
    }
    return (long)len;
}

/* The value after the scheme word of h ("bearer"/"basic", any case, then a blank), blanks
 * trimmed at both ends, into *v / *n; false when h does not start so. */
static bool after_scheme(const char *h, const char *word, const char **v, size_t *n)
{
    size_t w = strlen(word);
    while (*h == ' ' || *h == '\t')
        h++;
    if (strncasecmp(h, word, w) != 0 || (h[w] != ' ' && h[w] != '\t'))
        return false;
    h += w;
    while (*h == ' ' || *h == '\t')
        h++;
    *n = strlen(h);
    while (*n && (h[*n - 1] == ' ' || h[*n - 1] == '\t'))
        (*n)--;
    *v = h;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *h = fuzz_cstr(data, size);
    zbso_err err;
    const char *v;
    size_t n;
    if (!h)
        return -1;
    err_clear(&err);
    int rc = http_auth_check(TOKEN, sizeof TOKEN - 1, h, &err);
    if (rc == 0) {
        if (after_scheme(h, "bearer", &v, &n)) {
            FUZZ_CHECK(n == sizeof TOKEN - 1 && memcmp(v, TOKEN, n) == 0);
        } else {
            char plain[4096];
            FUZZ_CHECK(after_scheme(h, "basic", &v, &n));
            long len = decode(v, n, plain, sizeof plain);
            FUZZ_CHECK(len >= 0);
            char *colon = memchr(plain, ':', (size_t)len);
            FUZZ_CHECK(colon != NULL);
            size_t pass = (size_t)len - (size_t)(colon + 1 - plain);
            FUZZ_CHECK(pass == sizeof TOKEN - 1 && memcmp(colon + 1, TOKEN, pass) == 0);
        }
    } else {
        FUZZ_CHECK(rc == ZBSO_EAUTH && err.code == ZBSO_EAUTH && err.msg[0]);
        FUZZ_CHECK(strstr(err.msg, TOKEN) == NULL);
        fuzz_check_error_body(&err, false);
    }
    free(h);
    return 0;
}
