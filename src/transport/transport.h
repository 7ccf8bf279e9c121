/* transport.h: the one HTTP client of the zbso protocol, used by libzbso's client and by
 * `zbso run --server`: libcurl with one keep-alive connection per handle, JSON bodies, a
 * retry class per request, one table from HTTP statuses to ZBSO_E* codes, one response
 * size limit and one set of timeouts. Knows URLs, statuses and retries, nothing of the
 * optimizer. Runs inside training processes: never aborts, installs no signal handler. */
#ifndef ZBSO_TRANSPORT_TRANSPORT_H
#define ZBSO_TRANSPORT_TRANSPORT_H

#include <stddef.h>

#include "util/err.h"

#define TRANSPORT_URL_MAX 1024          /* bytes of a base URL, without the NUL */
#define TRANSPORT_TOKEN_MAX 1024        /* bytes of a bearer token */
#define TRANSPORT_BODY_MAX (1 << 20)    /* largest response body accepted */
#define TRANSPORT_KEY_HEX 32            /* hex digits of an idempotency key (128 bits) */
#define TRANSPORT_RETRY_TIMEOUT_S 60.0  /* default retry budget of a request */
#define TRANSPORT_REQUEST_TIMEOUT_S 30.0 /* default limit of one attempt */
#define TRANSPORT_RETRY_ENV "ZBSO_CLIENT_RETRY_TIMEOUT"
#define TRANSPORT_KEY_HEADER "Idempotency-Key"

typedef struct transport transport;

/* When a failed attempt is tried again (within the retry budget). */
typedef enum transport_retry {
    /* Only when the request provably never reached the server: the host did not resolve,
     * the connection was refused or never made, or not one byte of the request was sent.
     * For requests whose repetition could change state twice. */
    TRANSPORT_RETRY_IF_UNSENT,
    /* Also after timeouts, lost connections and 502/503/504 answers (waiting at least
     * Retry-After): for requests the server answers the same when they are repeated. */
    TRANSPORT_IDEMPOTENT,
} transport_retry;

typedef struct transport_req {
    const char *method;          /* "GET", "POST", "PATCH", "DELETE" */
    const char *path;            /* starts with '/'; a query is already escaped */
    const char *body;            /* JSON, or NULL for none */
    transport_retry retry;
    /* NULL, or a key (transport_key_new) sent on every attempt as
     * `Idempotency-Key: "<key>"` (IETF draft-ietf-httpapi-idempotency-key-header: an
     * sf-string). The server answers a repeated key with the first answer's effect. */
    const char *idempotency_key;
} transport_req;

/* A 2xx response: status and body (NUL-terminated, "" when empty; owned by the
 * transport, valid until its next request). */
typedef struct transport_resp {
    long status;
    const char *body;
    size_t len;
    /* The answer's X-Zbso-Warning header (a zbso server's advice, e.g. on a registration
     * that looks like a mistake), cut to TRANSPORT_WARNING_MAX bytes; "" when none. Owned
     * by the transport, valid until its next request. */
    const char *warning;
} transport_resp;
#define TRANSPORT_WARNING_MAX 511
#define TRANSPORT_HEADER_WARNING "X-Zbso-Warning"

/* The last 2xx answer's X-Zbso-Warning ("" when none or before any request). */
const char *transport_warning(const transport *t);

/* Opens a transport to base_url ("http://host:port" or https; trailing '/'s are
 * dropped). token, when not NULL and not empty, is sent as "Authorization: Bearer
 * <token>"; else credentials in the URL (http://user:password@host, percent-escapes
 * decoded) are sent as HTTP Basic auth, as httpx sends them, and every message shows the
 * URL with the password masked (transport_mask_url). A request retries for at most
 * retry_timeout_s seconds (>= 0; 0: one attempt) and each attempt waits at most
 * TRANSPORT_REQUEST_TIMEOUT_S for its answer. Connects on the first request. Returns 0
 * with *out set; ZBSO_ECONFIG naming a URL that is not http(s) or is too long, or a token
 * too long; ZBSO_ERUNTIME when libcurl fails to initialise; ZBSO_ENOMEM. */
int transport_new(const char *base_url, const char *token, double retry_timeout_s,
                  transport **out, zbso_err *err);

/* Closes the connection and frees t. NULL is a no-op. */
void transport_free(transport *t);

/* The retry budget of later requests (seconds >= 0). */
void transport_set_retry_timeout(transport *t, double seconds);
double transport_retry_timeout(const transport *t);

/* Limits each later attempt to seconds (> 0) instead of TRANSPORT_REQUEST_TIMEOUT_S;
 * for short-lived work such as ending trials at process exit. */
void transport_set_request_timeout(transport *t, double seconds);

/* Writes url into out (capacity cap, always NUL-terminated when cap > 0) with the
 * password of its user info replaced by "***": "http://u:***@host/..."; a URL without a
 * password is copied as it is. */
void transport_mask_url(const char *url, char *out, size_t cap);

/* The base URL as normalized by transport_new (with its credentials, if any). */
const char *transport_base_url(const transport *t);

/* Reads the retry budget from $ZBSO_CLIENT_RETRY_TIMEOUT into *out: its value, or
 * TRANSPORT_RETRY_TIMEOUT_S when unset or empty. Returns 0, or ZBSO_ECONFIG naming the
 * value when it is not a number of seconds >= 0 (*out unchanged). */
int transport_retry_timeout_env(double *out, zbso_err *err);

/* Writes a new idempotency key, TRANSPORT_KEY_HEX lowercase hex digits of OS entropy,
 * into key (TRANSPORT_KEY_HEX + 1 bytes). One key per logical call, reused by its
 * retries. Returns 0 or ZBSO_EIO when the OS gives no entropy. */
int transport_key_new(char *key, zbso_err *err);

/* Sends req to base + req->path, retrying as req->retry allows until the retry budget is
 * spent (backoff doubling from 0.1 s to 5 s, with jitter). Returns 0 with *resp set for
 * a 2xx answer. Otherwise the code of the status (transport_code_of_status) with "Zeus
 * server returned status code N: <the server's message>"; ZBSO_ERUNTIME with METHOD URL
 * and libcurl's reason for a network failure, prefixed by how long it tried when it gave
 * up; ZBSO_ERUNTIME for an answer over TRANSPORT_BODY_MAX or a URL too long;
 * ZBSO_ENOMEM. */
int transport_request(transport *t, const transport_req *req, transport_resp *resp,
                      zbso_err *err);

/* The ZBSO_E* code of an HTTP error status: the inverse of src/http/status.c for the
 * statuses it sends (401, 404, 405, 409, 413, 422, 503), ZBSO_ERUNTIME for any other. */
int transport_code_of_status(long status);

/* Escapes s for a query string into a malloc'd string (the caller frees it); NULL when
 * out of memory. */
char *transport_escape(const char *s);

#endif
