/* utf8.h: UTF-8 well-formedness (RFC 3629: shortest forms only, no surrogates, nothing
 * above U+10FFFF), for values that must read back as text: job ids from a query string or
 * a path, and the cells of a terminal table. libc only. */
#ifndef ZBSO_UTIL_UTF8_H
#define ZBSO_UTIL_UTF8_H

#include <stddef.h>

/* The length (1..4) of the well-formed UTF-8 sequence at s, of which at most avail bytes
 * may be read, or 0 when none starts there. Stops at the first byte that does not fit, so
 * a NUL-terminated string may pass avail = SIZE_MAX. */
size_t utf8_seq_len(const unsigned char *s, size_t avail);

/* The offset of the first byte of s[0..len) that does not begin a well-formed sequence, or
 * len when all of it is well formed. */
size_t utf8_bad_at(const unsigned char *s, size_t len);

#endif
