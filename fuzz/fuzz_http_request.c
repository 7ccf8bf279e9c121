/* fuzz_http_request.c: the request line as the server sees it: the route table
 * (http_route_find) on the method and the decoded path, and the job_id query check
 * (http_query_job_id) on the decoded argument. The input is "METHOD TARGET"; the target is
 * checked raw by http_path_check (no NUL, UTF-8 once decoded), then
 * split and decoded as libmicrohttpd 0.9.75 does before our code runs (checked against the
 * real library: '?' splits path and query, '&' the arguments, the first '=' key and value,
 * '+' is a space in arguments, %XX decodes with MHD_http_unescape itself, keys compare
 * without case by their decoded length, a value keeps a decoded %00 and its length counts
 * it, the first job_id wins and one without '=' has no value). Checks that a route found
 * serves that method and path, that a 405's Allow list names only methods the path serves,
 * that the job_id check accepts exactly the 1..ZBSO_ID_MAX byte values of well-formed
 * UTF-8 without a NUL and copies them whole, and that every error reply (404, 405, 422) is
 * JSON that reads back. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <microhttpd.h>

#include "fuzz.h"
#include "http/httpInt.h"

/* The value of the first argument named job_id in query (decoded in place) and its decoded
 * length in *len, as MHD_lookup_connection_value_n(c, MHD_GET_ARGUMENT_KIND, "job_id", 6,
 * ...) gives them: a decoded %00 stays inside the value and is counted, and a key compares
 * by its decoded length (job_id%00x is another key). NULL when there is none or the first
 * has no '='. */
static char *query_lookup_job_id(char *query, size_t *len)
{
    *len = 0;
    while (query && *query) {
        char *amp = strchr(query, '&');
        if (amp)
            *amp = '\0';
        char *eq = strchr(query, '=');
        if (eq)
            *eq = '\0';
        for (char *p = query; *p; p++)
            if (*p == '+')
                *p = ' ';
        size_t key_len = MHD_http_unescape(query);
        if (key_len == 6 && strncasecmp(query, "job_id", 6) == 0) {
            if (!eq)
                return NULL;
            for (char *p = eq + 1; *p; p++)
                if (*p == '+')
                    *p = ' ';
            *len = MHD_http_unescape(eq + 1);
            return eq + 1;
        }
        query = amp ? amp + 1 : NULL;
    }
    return NULL;
}

/* A reply settled from err with code, as the server builds it (status.c): its status
 * from the table and a body that reads back. */
static void check_error_reply(zbso_err *err, int code, unsigned want_status)
{
    http_reply r;
    memset(&r, 0, sizeof r);
    r.err = *err;
    http_reply_error(&r, code);
    FUZZ_CHECK((unsigned)r.status == want_status);
    FUZZ_CHECK(!r.body_static && r.body != NULL && strlen(r.body) == r.len);
    fuzz_check_error_body(&r.err, r.status == 422);
    free(r.body);
}

static void check_route(const char *method, const char *path)
{
    const char *allow = NULL;
    const http_route *route = http_route_find(method, path, &allow);
    /* A route's path is a pattern ("/jobs/{job_id}"): the one path falls under. */
    const char *pattern = http_path_pattern(path);
    zbso_err err;
    err_clear(&err);
    if (route) {
        FUZZ_CHECK(pattern != NULL && strcmp(route->method, method) == 0 &&
                   strcmp(route->path, pattern) == 0);
        FUZZ_CHECK(route->fn != NULL && route->allow != NULL);
        return;
    }
    if (!allow) {
        /* server.c's 404 for an unknown path. */
        err_set(&err, ZBSO_ENOTFOUND, "no such path: %.200s", path);
        check_error_reply(&err, ZBSO_ENOTFOUND, 404);
        return;
    }
    /* 405: every method in Allow is served on this path, and the request's is not. */
    char *list = strdup(allow);
    FUZZ_CHECK(list != NULL);
    size_t n = 0;
    for (char *save = NULL, *m = strtok_r(list, ", ", &save); m;
         m = strtok_r(NULL, ", ", &save), n++) {
        const char *allow2 = NULL;
        const http_route *other = http_route_find(m, path, &allow2);
        FUZZ_CHECK(other != NULL && pattern != NULL && strcmp(other->path, pattern) == 0);
        FUZZ_CHECK(strcmp(m, method) != 0);
    }
    FUZZ_CHECK(n >= 1);
    free(list);
    err_set(&err, ZBSO_EMETHOD, "method %.16s is not allowed on %.200s (allowed: %s)", method,
            path, allow);
    check_error_reply(&err, ZBSO_EMETHOD, 405);
}

static void check_job_id(const char *v, size_t len)
{
    char job_id[ZBSO_ID_MAX + 1] = "unchanged";
    zbso_err err;
    err_clear(&err);
    int rc = http_query_job_id(v, len, job_id, &err);
    /* jansson's UTF-8 check (json_stringn) is the independent judge of well-formedness. */
    json_t *as_json = v ? json_stringn(v, len) : NULL;
    bool ok = as_json && len >= 1 && len <= ZBSO_ID_MAX && memchr(v, '\0', len) == NULL;
    json_decref(as_json);
    FUZZ_CHECK((rc == 0) == ok);
    if (rc == 0) {
        FUZZ_CHECK(memcmp(job_id, v, len) == 0 && job_id[len] == '\0');
        return;
    }
    FUZZ_CHECK(rc == ZBSO_EINVAL && err.code == rc);
    FUZZ_CHECK(strcmp(job_id, "unchanged") == 0);
    FUZZ_CHECK(strcmp(err.where, "query") == 0 && strcmp(err.loc, "job_id") == 0);
    check_error_reply(&err, rc, 422);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = fuzz_cstr(data, size);
    if (!line)
        return -1;
    char *sp = strchr(line, ' ');
    char *target = sp ? sp + 1 : line + strlen(line);
    if (sp)
        *sp = '\0';
    zbso_err path_err;
    err_clear(&path_err);
    int path_rc = http_path_check(target, &path_err);
    char *query = strchr(target, '?');
    if (query)
        *query++ = '\0';
    size_t job_id_len = 0;
    char *job_id = query_lookup_job_id(query, &job_id_len);
    size_t path_len = MHD_http_unescape(target);
    /* The path check refuses exactly the decoded paths that hold a NUL or are not UTF-8
     * (jansson judges), with a 400 naming the byte. */
    json_t *path_json = json_stringn(target, path_len);
    bool path_ok = path_json && memchr(target, '\0', path_len) == NULL;
    json_decref(path_json);
    FUZZ_CHECK((path_rc == 0) == path_ok);
    FUZZ_CHECK(path_rc == 0 || (path_rc == ZBSO_EINVAL && path_err.msg[0]));
    check_route(line, target);
    check_job_id(job_id, job_id_len);
    free(line);
    return 0;
}
