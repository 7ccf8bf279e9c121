/* auth.c: the token check of an Authorization header value, pure: "Bearer <token>", or
 * HTTP Basic whose password is the token (any user name; what httpx and curl send for a
 * URL http://user:TOKEN@host), against the server's tokens (the API token, and the scoped
 * read and client tokens of issue 26), and which route scopes each token class may use.
 * Compares in constant time; never puts a secret in a message. */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "http/httpInt.h"

/* Decoded credentials longer than this are refused (MHD's header limit is lower anyway). */
#define BASIC_MAX 4096

/* Compares in time that depends only on the expected token's length, so a wrong guess
 * learns nothing from timing about how much of it matched. */
static bool token_equal(const char *want, size_t want_len, const char *got, size_t got_len)
{
    unsigned char diff = (unsigned char)(want_len != got_len);
    for (size_t i = 0; i < want_len; i++)
        diff |= (unsigned char)want[i] ^ (unsigned char)(i < got_len ? got[i] : 0);
    return diff == 0;
}

/* The value 0..63 of base64 character ch (RFC 4648's standard alphabet), or -1. */
static int b64_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    if (ch == '+')
        return 62;
    if (ch == '/')
        return 63;
    return -1;
}

/* Decodes the base64 text in[0..n) (padded to a multiple of 4, as RFC 7617 credentials
 * are) into out (capacity cap). Returns the decoded length, or -1 for anything else:
 * a length not a multiple of 4, a character outside the alphabet, padding inside the
 * text, or more than cap bytes. */
static long b64_decode(const char *in, size_t n, unsigned char *out, size_t cap)
{
    size_t len = 0;
    if (n == 0 || n % 4 != 0 || n / 4 * 3 > cap)
        return -1;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char ch = (unsigned char)in[i + k];
            if (ch == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
                continue;
            }
            if (pad > 0 || (v[k] = b64_value(ch)) < 0)
                return -1;
        }
        unsigned long w = (unsigned long)v[0] << 18 | (unsigned long)v[1] << 12 |
                          (unsigned long)v[2] << 6 | (unsigned long)v[3];
        out[len++] = (unsigned char)(w >> 16);
        if (pad < 2)
            out[len++] = (unsigned char)(w >> 8);
        if (pad < 1)
            out[len++] = (unsigned char)w;
    }
    return (long)len;
}

/* The span of the value after a scheme word: blanks skipped at both ends. */
static void trim(const char **p, size_t *n)
{
    while (**p == ' ' || **p == '\t')
        (*p)++;
    *n = strlen(*p);
    while (*n && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
        (*n)--;
}

/* True when h starts with the scheme word (any case) followed by a blank. */
static bool scheme_is(const char *h, const char *word)
{
    size_t n = strlen(word);
    return strncasecmp(h, word, n) == 0 && (h[n] == ' ' || h[n] == '\t');
}

/* The class of each of the server's tokens, by its index in http_tokens.t. */
static const http_token_class classes[HTTP_TOKEN_CLASSES] = {HTTP_TOKEN_API, HTTP_TOKEN_READ,
                                                             HTTP_TOKEN_CLIENT};

/* Compares the presented secret got[0..got_len) with every configured token, each in
 * constant time and all of them whatever matched first, so timing tells nothing of which
 * class (if any) a guess was near. Returns the class that matched, or HTTP_TOKEN_NONE. */
static http_token_class match(const http_tokens *tk, const char *got, size_t got_len)
{
    http_token_class found = HTTP_TOKEN_NONE;
    for (size_t i = 0; i < HTTP_TOKEN_CLASSES; i++)
        if (tk->t[i] && token_equal(tk->t[i], tk->len[i], got, got_len) &&
            found == HTTP_TOKEN_NONE)
            found = classes[i];
    return found;
}

int http_auth_identify(const http_tokens *tk, const char *header, http_token_class *cls,
                       zbso_err *err)
{
    static const char need[] = "this server needs \"Authorization: Bearer <token>\" or HTTP "
                               "Basic auth with the token as the password";
    const char *h = header;
    size_t n;
    *cls = HTTP_TOKEN_NONE;
    if (!h)
        return err_set(err, ZBSO_EAUTH, "missing Authorization header: %s", need);
    while (*h == ' ' || *h == '\t')
        h++;
    if (scheme_is(h, "Bearer")) {
        h += 6;
        trim(&h, &n);
        if ((*cls = match(tk, h, n)) == HTTP_TOKEN_NONE)
            return err_set(err, ZBSO_EAUTH, "wrong bearer token in the Authorization header");
        return 0;
    }
    if (!scheme_is(h, "Basic"))
        return err_set(err, ZBSO_EAUTH, "the Authorization header is neither a Bearer token "
                                        "nor Basic credentials: %s", need);
    h += 5;
    trim(&h, &n);
    unsigned char plain[BASIC_MAX];
    long len = b64_decode(h, n, plain, sizeof plain);
    if (len < 0)
        return err_set(err, ZBSO_EAUTH, "the Basic credentials of the Authorization header "
                                        "are not base64 of at most %d bytes", BASIC_MAX);
    const unsigned char *colon = memchr(plain, ':', (size_t)len);
    if (!colon)
        return err_set(err, ZBSO_EAUTH, "the Basic credentials of the Authorization header "
                                        "have no ':' between user name and password");
    const char *pass = (const char *)colon + 1;
    size_t pass_len = (size_t)len - (size_t)(colon + 1 - plain);
    *cls = match(tk, pass, pass_len);
    memset(plain, 0, sizeof plain);
    if (*cls == HTTP_TOKEN_NONE)
        return err_set(err, ZBSO_EAUTH, "wrong password in the Basic credentials of the "
                                        "Authorization header (the password is the token)");
    return 0;
}

int http_auth_check(const char *token, size_t token_len, const char *header, zbso_err *err)
{
    http_tokens tk = {.t = {token}, .len = {token_len}};
    http_token_class cls;
    return http_auth_identify(&tk, header, &cls, err);
}

bool http_scope_allows(http_scope scope, http_token_class cls)
{
    switch (scope) {
    case HTTP_SCOPE_PUBLIC: return true;
    case HTTP_SCOPE_READ: return cls == HTTP_TOKEN_API || cls == HTTP_TOKEN_READ;
    case HTTP_SCOPE_CLIENT: return cls == HTTP_TOKEN_API || cls == HTTP_TOKEN_CLIENT;
    case HTTP_SCOPE_ADMIN: return cls == HTTP_TOKEN_API;
    }
    return false;
}

const char *http_token_class_name(http_token_class cls)
{
    switch (cls) {
    case HTTP_TOKEN_API: return "api";
    case HTTP_TOKEN_READ: return "read";
    case HTTP_TOKEN_CLIENT: return "client";
    case HTTP_TOKEN_NONE: break;
    }
    return "none";
}
