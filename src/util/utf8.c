/* utf8.c: see utf8.h. Hand-written: a dozen lines, where a library (ICU, libunistring)
 * would be a dependency for one check. */
#include "util/utf8.h"

size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t n;
    unsigned lo = 0x80, hi = 0xbf;       /* bounds of the second byte */
    if (avail == 0)
        return 0;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;                   /* overlong */
        if (c == 0xed)
            hi = 0x9f;                   /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;                   /* overlong */
        if (c == 0xf4)
            hi = 0x8f;                   /* above U+10FFFF */
    } else {
        return 0;
    }
    if (avail < 2 || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t k = 2; k < n; k++)
        if (avail <= k || s[k] < 0x80 || s[k] > 0xbf)
            return 0;
    return n;
}

size_t utf8_bad_at(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        size_t n = utf8_seq_len(s + i, len - i);
        if (n == 0)
            return i;
        i += n;
    }
    return len;
}
