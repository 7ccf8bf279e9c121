/* httpInt.h: private to src/http. The route table, one reply per request, and the one
 * table from ZBSO_E* codes to HTTP statuses. Handlers never touch sockets or MHD state
 * beyond reading query arguments. */
#ifndef ZBSO_HTTP_HTTPINT_H
#define ZBSO_HTTP_HTTPINT_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#include "core/types.h"
#include "http/http.h"

/* What a handler answers. body is malloc'd JSON unless body_static; the server frees it
 * (or hands it to MHD). err holds the failure when status >= 400. */
typedef struct http_reply {
    int status;
    char *body;
    size_t len;
    bool body_static;
    const char *allow;               /* 405: the Allow header */
    zbso_err err;
    char job_id[ZBSO_ID_MAX + 1];    /* for the request log; "" when none */
    int64_t job_revision;            /* > 0: sent as X-Zbso-Job-Version (service.h) */
    const char *url;                 /* the request's decoded path (MHD's, valid until the
                                      * reply is queued), for routes with path parameters */
    const char *content_type;        /* NULL: application/json */
    const char *const *headers;      /* NULL, or name, value, ..., NULL: more headers */
    bool authorized;                 /* the request carried the API or the read token
                                      * (never when the server has none) */
    char warning[512];               /* POST /jobs: X-Zbso-Warning's value (printable) */
    const char *warning_headers[3];  /* headers pointing at it */
} http_reply;

#define HTTP_HEADER_JOB_VERSION "X-Zbso-Job-Version"
#define HTTP_HEADER_IDEMPOTENCY_KEY "Idempotency-Key"
#define HTTP_HEADER_WARNING "X-Zbso-Warning"


struct http_metrics;

/* The server's state that handlers use. */
typedef struct http_ctx {
    store *st;
    const svc_env *env;
    struct http_metrics *metrics;    /* GET /metrics (metrics.h) */
} http_ctx;

typedef void (*http_handler)(const http_ctx *ctx, struct MHD_Connection *c,
                             const char *body, size_t len, http_reply *r);

/* Who may use a route (issue 26). With no token configured every route is open. */
typedef enum http_scope {
    HTTP_SCOPE_PUBLIC = 0,  /* anyone, no token: /healthz, the dashboard's files */
    HTTP_SCOPE_READ,        /* the read or the API token: the inspection API's GETs,
                             * GET /power_profiles, /metrics, /openapi.json */
    HTTP_SCOPE_CLIENT,      /* the client or the API token: the Zeus protocol (POST /jobs,
                             * GET /jobs/batch_size, POST /report, PATCH /trials) */
    HTTP_SCOPE_ADMIN,       /* the API token alone: DELETE /jobs, PUT /power_profiles */
} http_scope;

typedef struct http_route {
    const char *method;
    const char *path;
    const char *allow;      /* every method this path serves, for 405 */
    bool has_body;          /* the request carries JSON: check its Content-Type */
    http_scope scope;       /* which tokens may use it (auth.c, http_scope_allows) */
    http_handler fn;
    /* Runs on the background workers, below the protocol's in priority (server.c): the
     * read-only views, which a client cannot wait on mid-training. */
    bool background;
} http_route;

/* GET /openapi.json's document (generated from src/http/openapi.json at build time). */
extern const char http_openapi_json[];
extern const size_t http_openapi_json_len;

/* The route pattern that path falls under: the path itself for a fixed route
 * ("/jobs/batch_size" included), "/jobs/{job_id}", "/jobs/{job_id}/trials" or
 * "/jobs/{job_id}/trials/{trial_number}" for the inspection paths (matched from the end,
 * so a job id may hold '/'), NULL for none. For the route table and metric labels. */
const char *http_path_pattern(const char *path);

/* The route table, for tests/http/test_openapi.c: its length and its i-th entry (NULL
 * past the end). */
size_t http_route_count(void);
const http_route *http_route_at(size_t i);

/* Finds the route for method and path. Returns it, or NULL when none: then *allow is the
 * path's methods when the path exists (405) and NULL when it does not (404). */
const http_route *http_route_find(const char *method, const char *path, const char **allow);

/* Checks the job_id query argument v of len bytes (as libmicrohttpd decoded it, len
 * counting any decoded NUL; v NULL when absent) and copies it into job_id (ZBSO_ID_MAX + 1
 * bytes). Returns 0, or ZBSO_EINVAL with loc ["query","job_id"] when it is missing, empty,
 * contains a NUL (%00), is not well-formed UTF-8 or is longer than any job id can be
 * (job_id is then unchanged).
 * Pure, for the fuzz target fuzz/fuzz_http_request.c. */
int http_query_job_id(const char *v, size_t len, char *job_id, zbso_err *err);

/* Checks a request target as it came on the request line (percent-escapes not yet
 * decoded; the path ends at '?'): its decoded path must hold no NUL (%00) and be
 * well-formed UTF-8, since libmicrohttpd hands the path on as a C string (GET /%00 would
 * be GET /, DELETE /jobs%00x DELETE /jobs). Returns 0, or ZBSO_EINVAL saying which byte
 * is wrong (ZBSO_ENOMEM when out of memory). Pure, for fuzz/fuzz_http_request.c. */
int http_path_check(const char *target, zbso_err *err);

/* Reads an Idempotency-Key header value v (NULL when absent) into key (SVC_KEY_MAX + 1
 * bytes): an RFC 8941 sf-string as IETF draft-ietf-httpapi-idempotency-key-header has it,
 * e.g. "8e03978e-40d5". Returns 0 with the unescaped key ("" when absent), or
 * ZBSO_EINVAL with loc ["header","idempotency-key"] when it is not a quoted string of
 * printable ASCII, is empty or longer than SVC_KEY_MAX. Pure, for fuzz/. */
int http_idempotency_key(const char *v, char *key, zbso_err *err);

/* The HTTP status of a ZBSO_E* code (src/http/status.c): EINVAL 422, ENOTFOUND 404,
 * ECONFLICT 409, EAUTH 401, ETOOBIG 413, EMETHOD 405, EUNAVAIL 503, others 500. */
/* Checks an Authorization header value (NULL: none) against the API token
 * token[0..token_len): "Bearer <token>", or "Basic base64(user:password)" whose password is
 * the token, any user name (RFC 7617, what a URL http://user:TOKEN@host makes httpx and
 * curl send). Returns 0, or ZBSO_EAUTH with a message saying what is missing, malformed or
 * wrong; the message never holds the token nor anything decoded from the header. Pure,
 * for the fuzz target fuzz/fuzz_auth.c. */
int http_auth_check(const char *token, size_t token_len, const char *header, zbso_err *err);

/* The server's tokens: t[i] NULL when that class is not configured. Index 0 is the API
 * token (ZEUS_BSO_API_TOKEN, every route), 1 the read token (ZBSO_READ_TOKEN), 2 the
 * client token (ZBSO_CLIENT_TOKEN). */
typedef enum http_token_class {
    HTTP_TOKEN_NONE = 0, HTTP_TOKEN_API, HTTP_TOKEN_READ, HTTP_TOKEN_CLIENT,
} http_token_class;
#define HTTP_TOKEN_CLASSES 3
typedef struct http_tokens {
    const char *t[HTTP_TOKEN_CLASSES];
    size_t len[HTTP_TOKEN_CLASSES];
} http_tokens;

/* As http_auth_check, against every configured token of tk; *cls is the class of the one
 * presented (HTTP_TOKEN_NONE on failure). Each token is compared in constant time, all of
 * them every time. Pure. */
int http_auth_identify(const http_tokens *tk, const char *header, http_token_class *cls,
                       zbso_err *err);

/* True when a request authenticated as cls may use a route of scope (auth.c's table). */
bool http_scope_allows(http_scope scope, http_token_class cls);

/* "api", "read", "client" or "none": for the audit log, never the token itself. */
const char *http_token_class_name(http_token_class cls);

unsigned http_status_of(int code);

/* The class of a store failure, from its message (store_health's): "disk_full",
 * "read_only", "locked", "io_error", "database_gone" (its file deleted or replaced),
 * "unreachable" (a database server that cannot be reached) or "storage_error". For
 * GET /healthz, which tells a caller without the token only this, never the message with
 * its path, URL or host. Pure. */
const char *http_health_reason(const char *msg);

/* Turns r->err (with code) into an error reply: status from the table, 422 in FastAPI's
 * detail shape, others {"message"}. Fills a missing message from zbso_strerror. */
void http_reply_error(http_reply *r, int code);

/* A reply with a static body (not freed). */
void http_reply_static(http_reply *r, unsigned status, const char *json);

/* An error reply with status (400, 414: HTTP-level errors no ZBSO_E* code names) and the
 * body {"message": r->err.msg}. */
void http_reply_status(http_reply *r, unsigned status);

#endif
