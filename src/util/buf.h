/* buf.h: a bounded growable byte buffer (after curl's dynbuf; the one-page note is
 * docs/internals/BUF.md). Every buffer has a maximum length, fixed by buf_init; an append
 * that would pass it, or whose allocation fails, frees the buffer and returns an error,
 * so a buffer is never left half-appended. The contents are always NUL-terminated.
 * No I/O but buf_add_file; no global state; not thread-safe (one owner at a time). */
#ifndef ZBSO_UTIL_BUF_H
#define ZBSO_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* The largest maximum a buffer may have; buf_init lowers a larger one to this. */
#define BUF_MAX_LIMIT ((size_t)-1 / 4)

/* The fields are the module's own: use the functions below. */
typedef struct zbso_buf {
    char *p;        /* NULL until something was appended */
    size_t len;     /* bytes held, without the terminating NUL */
    size_t cap;     /* bytes allocated; len < cap once p != NULL */
    size_t max;     /* the most bytes len may reach */
} zbso_buf;

/* Makes b an empty buffer that may hold up to max bytes (at most BUF_MAX_LIMIT). Cannot
 * fail and allocates nothing. */
void buf_init(zbso_buf *b, size_t max);

/* Frees b's memory; b is empty again (same maximum) and may be appended to. */
void buf_free(zbso_buf *b);

/* Empties b but keeps its memory for the next appends. */
void buf_reset(zbso_buf *b);

/* Appends n bytes at mem (may contain NULs; mem may be NULL when n is 0). Returns 0;
 * ZBSO_ETOOBIG when b would pass its maximum, ZBSO_ENOMEM when memory runs out: in both
 * cases b has been freed (empty, reusable). */
int buf_addn(zbso_buf *b, const void *mem, size_t n);

/* Appends the C string s; as buf_addn. */
int buf_add(zbso_buf *b, const char *s);

/* Appends printf-style text; as buf_addn, and ZBSO_EINVAL (b freed) when the format
 * cannot be expanded (an encoding error, over INT_MAX bytes). */
int buf_addf(zbso_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vaddf(zbso_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Appends everything f has left to read. Returns 0 at end of file; ZBSO_ETOOBIG when f
 * holds more than b may, ZBSO_ENOMEM, or ZBSO_EIO when reading fails (errno says why): in
 * those cases b has been freed. */
int buf_add_file(zbso_buf *b, FILE *f);

/* The contents: always a NUL-terminated string ("" when empty). Valid until the next
 * call that changes b. */
const char *buf_ptr(const zbso_buf *b);

/* The number of bytes held, without the terminating NUL. */
size_t buf_len(const zbso_buf *b);

/* Hands the contents to the caller, who frees them with free(): NUL-terminated, *len (may
 * be NULL) receives their length; NULL when nothing was ever allocated (len 0). b is
 * empty again (same maximum). */
char *buf_take(zbso_buf *b, size_t *len);

#endif
