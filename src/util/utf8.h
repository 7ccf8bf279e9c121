/* utf8.h: UTF-8 well-formedness (RFC 3629: shortest forms only, no surrogates, nothing
 * above U+10FFFF), for values that must read back as text: job ids from a query string or
 * a path, and the cells of a terminal table; and which code points are invisible. libc
 * only. */
#ifndef ZBSO_UTIL_UTF8_H
#define ZBSO_UTIL_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The length (1..4) of the well-formed UTF-8 sequence at s, of which at most avail bytes
 * may be read, or 0 when none starts there. Stops at the first byte that does not fit, so
 * a NUL-terminated string may pass avail = SIZE_MAX. */
size_t utf8_seq_len(const unsigned char *s, size_t avail);

/* The offset of the first byte of s[0..len) that does not begin a well-formed sequence, or
 * len when all of it is well formed. */
size_t utf8_bad_at(const unsigned char *s, size_t len);

/* The code point of the well-formed sequence of n bytes at s (n from utf8_seq_len). */
uint32_t utf8_decode(const unsigned char *s, size_t n);

/* Whether code point cp is drawn as nothing: Unicode's default-ignorable code points
 * (zero-width spaces and joiners, the bidi controls U+202A..U+202E and U+2066..U+2069,
 * U+200E/U+200F, variation selectors, tags, U+FEFF, ...). Two job ids that differ only by
 * these look the same, and a bidi control reorders the text around it (Trojan Source), so
 * they are shown escaped where ids are shown to people (tables, the dashboard). */
bool utf8_invisible(uint32_t cp);

#endif
