/* status.c: the one table from ZBSO_E* codes to HTTP statuses, and error replies built
 * from it. Decides no policy of its own beyond that mapping. */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "http/httpInt.h"

static const struct {
    int code;
    unsigned status;
} status_table[] = {
    {ZBSO_EINVAL, 422},   {ZBSO_ENOTFOUND, 404}, {ZBSO_ECONFLICT, 409},
    {ZBSO_EAUTH, 401},    {ZBSO_ETOOBIG, 413},   {ZBSO_EMETHOD, 405},
    {ZBSO_EUNAVAIL, 503}, {ZBSO_ENOCONV, 500},   {ZBSO_EFORBIDDEN, 403},
};

unsigned http_status_of(int code)
{
    for (size_t i = 0; i < sizeof status_table / sizeof status_table[0]; i++)
        if (status_table[i].code == code)
            return status_table[i].status;
    return 500;
}

/* Served when even the error body cannot be built (out of memory). */
static const char OOM_BODY[] = "{\"message\":\"out of memory while building the reply\"}";

void http_reply_static(http_reply *r, unsigned status, const char *json)
{
    r->status = (int)status;
    r->body = (char *)json;
    r->len = strlen(json);
    r->body_static = true;
}

void http_reply_error(http_reply *r, int code)
{
    r->err.code = code;
    if (!r->err.msg[0])
        err_set(&r->err, code, "%s", zbso_strerror(code));
    r->status = (int)http_status_of(code);
    r->body = codec_error_dump(&r->err, r->status == 422, &r->len);
    r->body_static = false;
    if (!r->body)
        http_reply_static(r, 500, OOM_BODY);
}

void http_reply_status(http_reply *r, unsigned status)
{
    r->status = (int)status;
    r->body = codec_error_dump(&r->err, false, &r->len);
    r->body_static = false;
    if (!r->body)
        http_reply_static(r, 500, OOM_BODY);
}
