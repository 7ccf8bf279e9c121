/* err.c: filling zbso_err and naming error codes. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void vset(zbso_err *err, int code, const char *fmt, va_list ap)
{
    err->code = code;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
}

int err_set(zbso_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vset(err, code, fmt, ap);
        va_end(ap);
        err->loc[0] = '\0';
        err->where[0] = '\0';
    }
    return code;
}

int err_set_field(zbso_err *err, int code, const char *where, const char *field,
                  const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vset(err, code, fmt, ap);
        va_end(ap);
        snprintf(err->where, sizeof err->where, "%s", where ? where : "");
        snprintf(err->loc, sizeof err->loc, "%s", field ? field : "");
    }
    return code;
}

void err_clear(zbso_err *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

const char *zbso_strerror(int code)
{
    switch (code) {
    case ZBSO_OK: return "success";
    case ZBSO_EINVAL: return "invalid input";
    case ZBSO_ENOTFOUND: return "not found";
    case ZBSO_ECONFLICT: return "conflict with stored state";
    case ZBSO_ENOMEM: return "out of memory";
    case ZBSO_ESTORE: return "database error";
    case ZBSO_EUNAVAIL: return "database unavailable";
    case ZBSO_EAUTH: return "not authorized";
    case ZBSO_ETOOBIG: return "request too large";
    case ZBSO_ENOCONV: return "no batch size converged";
    case ZBSO_ESCHEMA: return "database schema version mismatch";
    case ZBSO_EMETHOD: return "method not allowed";
    case ZBSO_EIO: return "I/O error";
    case ZBSO_EINTERNAL: return "internal error";
    case ZBSO_ECONFIG: return "configuration error";
    case ZBSO_EORDER: return "operation out of order";
    case ZBSO_EBADOP: return "bad operation";
    case ZBSO_ERUNTIME: return "runtime error";
    case ZBSO_ETRAINFAIL: return "training failed to converge";
    case ZBSO_EPERM: return "no permission to change a GPU setting";
    case ZBSO_EFORBIDDEN: return "forbidden for this token";
    default: return "unknown error";
    }
}
