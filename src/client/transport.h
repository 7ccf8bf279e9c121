/* transport.h: the client's HTTP transport over libcurl: one keep-alive connection per
 * handle, JSON bodies, bounded retries of network failures and 502/503/504 with exponential
 * backoff, jitter and Retry-After. Knows URLs and status codes, nothing of the optimizer. */
#ifndef ZBSO_CLIENT_TRANSPORT_H
#define ZBSO_CLIENT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#define TRANSPORT_URL_MAX 1024        /* bytes of a base URL, without the NUL */
#define TRANSPORT_TOKEN_MAX 1024      /* bytes of a bearer token */
#define TRANSPORT_BODY_MAX (1 << 20)  /* largest response body accepted */
#define TRANSPORT_MSG_MAX 512

typedef struct transport transport;

/* A response: status and body (NUL-terminated, owned by the transport, valid until the
 * next request on it). */
typedef struct transport_resp {
    long status;
    const char *body;
    size_t len;
} transport_resp;

/* Opens a transport to base_url ("http://host:port", a trailing '/' is dropped). token,
 * when not NULL and not empty, is sent as "Authorization: Bearer <token>". Each request
 * retries for at most retry_timeout_s seconds and waits at most request_timeout_s for an
 * answer. Returns 0 with *out set, ZBSO_ECONFIG for a URL that is not http(s) or too long
 * or a token too long, ZBSO_ENOMEM; msg (cap bytes) holds the reason. */
int transport_new(const char *base_url, const char *token, double retry_timeout_s,
                  double request_timeout_s, transport **out, char *msg, size_t cap);

/* Closes the connection. NULL is a no-op. */
void transport_free(transport *t);

/* Sets the retry budget of later requests (seconds, >= 0; 0 means one attempt). */
void transport_set_retry_timeout(transport *t, double seconds);
double transport_retry_timeout(const transport *t);

/* The base URL, as normalized by transport_new. */
const char *transport_base_url(const transport *t);

/* Sends method ("GET", "POST", "PATCH") to base + path (path starts with '/' and is
 * already escaped) with body (JSON, may be NULL). Retries connection failures, timeouts
 * and 502/503/504 (waiting at least Retry-After) until the retry budget is spent. Returns
 * 0 with *resp set for any 2xx; ZBSO_ERUNTIME with msg "Zeus server returned status code
 * N: <server's message>" for other statuses, or with how long it tried and the last
 * error when it gave up; ZBSO_ENOMEM. */
int transport_request(transport *t, const char *method, const char *path, const char *body,
                      transport_resp *resp, char *msg, size_t cap);

/* Escapes s for a query string into a malloc'd string (caller frees); NULL on no memory. */
char *transport_escape(transport *t, const char *s);

#endif
