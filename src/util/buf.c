/* buf.c: the bounded growable buffer of buf.h. Grows by doubling, never past max + 1
 * bytes (the contents and their NUL); any failure frees the buffer. */
#include "util/buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"
#include "zbso/zbso.h"

#define FIRST_ALLOC 64      /* bytes of a buffer's first allocation, at least */
#define READ_CHUNK 65536    /* bytes buf_add_file asks fread for, at most, per call */

void buf_init(zbso_buf *b, size_t max)
{
    b->p = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max < BUF_MAX_LIMIT ? max : BUF_MAX_LIMIT;
}

void buf_free(zbso_buf *b)
{
    mem_free(b->p);
    b->p = NULL;
    b->len = 0;
    b->cap = 0;
}

void buf_reset(zbso_buf *b)
{
    b->len = 0;
    if (b->p != NULL)
        b->p[0] = '\0';
}

/* Makes room for want bytes of contents (want <= b->max) and their NUL. Returns 0, or
 * ZBSO_ENOMEM with b freed. */
static int reserve(zbso_buf *b, size_t want)
{
    size_t limit = b->max + 1;   /* no overflow: max <= BUF_MAX_LIMIT */
    if (b->p != NULL && want < b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : FIRST_ALLOC;
    while (cap < want + 1)
        cap = cap > limit / 2 ? limit : cap * 2;
    if (cap > limit)
        cap = limit;
    char *p = mem_realloc(b->p, cap);
    if (p == NULL) {
        buf_free(b);
        return ZBSO_ENOMEM;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

int buf_addn(zbso_buf *b, const void *mem, size_t n)
{
    if (n > b->max - b->len) {
        buf_free(b);
        return ZBSO_ETOOBIG;
    }
    int rc = reserve(b, b->len + n);
    if (rc < 0)
        return rc;
    if (n > 0)
        memcpy(b->p + b->len, mem, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int buf_add(zbso_buf *b, const char *s)
{
    return buf_addn(b, s, strlen(s));
}

int buf_vaddf(zbso_buf *b, const char *fmt, va_list ap)
{
    va_list measure;
    va_copy(measure, ap);
    int n = vsnprintf(NULL, 0, fmt, measure);
    va_end(measure);
    if (n < 0) {
        buf_free(b);
        return ZBSO_EINVAL;
    }
    if ((size_t)n > b->max - b->len) {
        buf_free(b);
        return ZBSO_ETOOBIG;
    }
    int rc = reserve(b, b->len + (size_t)n);
    if (rc < 0)
        return rc;
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int buf_addf(zbso_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = buf_vaddf(b, fmt, ap);
    va_end(ap);
    return rc;
}

int buf_add_file(zbso_buf *b, FILE *f)
{
    for (;;) {
        if (b->len == b->max) {
            /* Full: one more byte means the file is over the maximum. */
            int c = fgetc(f);
            if (c == EOF)
                break;
            buf_free(b);
            return ZBSO_ETOOBIG;
        }
        size_t want = b->max - b->len < READ_CHUNK ? b->max - b->len : READ_CHUNK;
        int rc = reserve(b, b->len + want);
        if (rc < 0)
            return rc;
        /* Read into all the room there is (doubling may have made more than want). */
        size_t room = b->cap - 1 - b->len;
        if (room > b->max - b->len)
            room = b->max - b->len;
        size_t got = fread(b->p + b->len, 1, room, f);
        b->len += got;
        b->p[b->len] = '\0';
        if (got < room)
            break;
    }
    if (ferror(f)) {
        int saved = errno;
        buf_free(b);
        errno = saved;
        return ZBSO_EIO;
    }
    return 0;
}

const char *buf_ptr(const zbso_buf *b)
{
    return b->p != NULL ? b->p : "";
}

size_t buf_len(const zbso_buf *b)
{
    return b->len;
}

char *buf_take(zbso_buf *b, size_t *len)
{
    char *p = b->p;
    if (len != NULL)
        *len = b->len;
    b->p = NULL;
    b->len = 0;
    b->cap = 0;
    return p;
}
