/* err.h: the caller-owned error context every fallible function fills (code + message +
 * the offending field). No allocation; safe to pass NULL where the caller does not care. */
#ifndef ZBSO_UTIL_ERR_H
#define ZBSO_UTIL_ERR_H

#include <stddef.h>
#include "zbso/zbso.h"

#define ZBSO_ERR_MSG_MAX 512
#define ZBSO_ERR_LOC_MAX 64

typedef struct zbso_err {
    int code;                       /* 0 or a negative ZBSO_E* code */
    char loc[ZBSO_ERR_LOC_MAX];     /* field the error is about ("eta_knob"), or "" */
    char where[16];                 /* "body", "query", or "" (FastAPI's loc[0]) */
    char msg[ZBSO_ERR_MSG_MAX];     /* complete sentence naming the offending value */
} zbso_err;

/* Sets err (when not NULL) and returns code, so callers can `return err_set(...)`. */
int err_set(zbso_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like err_set, also recording which field of which part ("body"/"query") is at fault. */
int err_set_field(zbso_err *err, int code, const char *where, const char *field,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Clears err to success. */
void err_clear(zbso_err *err);

#endif
