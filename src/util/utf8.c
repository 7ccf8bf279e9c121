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

uint32_t utf8_decode(const unsigned char *s, size_t n)
{
    static const unsigned char lead_mask[5] = {0, 0x7f, 0x1f, 0x0f, 0x07};
    uint32_t cp = s[0] & lead_mask[n < 5 ? n : 0];
    for (size_t k = 1; k < n; k++)
        cp = cp << 6 | (s[k] & 0x3fu);
    return cp;
}

bool utf8_invisible(uint32_t cp)
{
    /* Unicode 15's Default_Ignorable_Code_Point ranges (DerivedCoreProperties.txt). */
    static const uint32_t ranges[][2] = {
        {0x00ad, 0x00ad}, {0x034f, 0x034f}, {0x061c, 0x061c}, {0x115f, 0x1160},
        {0x17b4, 0x17b5}, {0x180b, 0x180f}, {0x200b, 0x200f}, {0x202a, 0x202e},
        {0x2060, 0x206f}, {0x3164, 0x3164}, {0xfe00, 0xfe0f}, {0xfeff, 0xfeff},
        {0xffa0, 0xffa0}, {0xfff0, 0xfff8}, {0x1bca0, 0x1bca3}, {0x1d173, 0x1d17a},
        {0xe0000, 0xe0fff},
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if (cp >= ranges[i][0] && cp <= ranges[i][1])
            return true;
    return false;
}
