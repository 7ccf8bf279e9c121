/* test_transport.c: the shared HTTP transport (src/transport) against the scripted server
 * of fake_http.h: which failures each retry class retries, the status table (checked
 * against the server's, src/http/status.c), the idempotency key header, the limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake_http.h"
#include "http/httpInt.h"
#include "transport/transport.h"
#include "util/clock.h"

static const char OK_BODY[] = "{\"ok\":true}";

/* A transport to the fake server fs with the given retry budget. */
static transport *open_fake(const fake_server *fs, double retry_s)
{
    char url[64];
    transport *t = NULL;
    zbso_err err;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", fs->port);
    assert_int_equal(transport_new(url, NULL, retry_s, &t, &err), 0);
    return t;
}

/* Runs one GET of class retry against a fresh fake server answering script; returns the
 * transport's code, with err, and the number of requests the server got in *n. */
static int run_script(const fake_reply *script, int n_script, transport_retry retry,
                      double retry_s, double request_s, zbso_err *err, int *n)
{
    static fake_server fs; /* outlives a failed assertion that skips fake_stop */
    transport_req req = {"GET", "/x", NULL, retry, NULL};
    transport_resp resp;
    fake_start(&fs, script, n_script);
    transport *t = open_fake(&fs, retry_s);
    if (request_s > 0)
        transport_set_request_timeout(t, request_s);
    int rc = transport_request(t, &req, &resp, err);
    if (rc == 0) {
        assert_int_equal(resp.status, 200);
        assert_string_equal(resp.body, OK_BODY);
    }
    transport_free(t);
    fake_stop(&fs); /* waits for a delayed answer in progress */
    *n = atomic_load(&fs.n_requests);
    return rc;
}

/* Every status the server sends for a code comes back as that code. */
static void test_status_table(void **state)
{
    const int codes[] = {ZBSO_EINVAL, ZBSO_ENOTFOUND, ZBSO_ECONFLICT, ZBSO_EAUTH,
                         ZBSO_ETOOBIG, ZBSO_EMETHOD,  ZBSO_EUNAVAIL};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        assert_int_equal(transport_code_of_status(http_status_of(codes[i])), codes[i]);
    assert_int_equal(http_status_of(ZBSO_ESTORE), 500);
    assert_int_equal(transport_code_of_status(500), ZBSO_ERUNTIME);
    assert_int_equal(transport_code_of_status(400), ZBSO_ERUNTIME);
    assert_int_equal(transport_code_of_status(502), ZBSO_ERUNTIME);
}

/* A final error status carries its code and the server's message. */
static void test_error_status(void **state)
{
    const fake_reply script[] = {{409, NULL, "{\"message\":\"Job j differs\"}", 0, 0}};
    zbso_err err;
    int n;
    assert_int_equal(run_script(script, 1, TRANSPORT_IDEMPOTENT, 5, 0, &err, &n),
                     ZBSO_ECONFLICT);
    assert_string_equal(err.msg, "the server returned status code 409: Job j differs");
    assert_int_equal(n, 1);
}

/* 503: an idempotent request waits and tries again; one retried only if unsent does not,
 * since the server saw it. */
static void test_503_by_class(void **state)
{
    const fake_reply script[] = {
        {503, NULL, "{\"message\":\"database unavailable\"}", 0, 0},
        {200, NULL, OK_BODY, 0, 0},
    };
    zbso_err err;
    int n;
    assert_int_equal(run_script(script, 2, TRANSPORT_IDEMPOTENT, 5, 0, &err, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(run_script(script, 2, TRANSPORT_RETRY_IF_UNSENT, 5, 0, &err, &n),
                     ZBSO_EUNAVAIL);
    assert_string_equal(err.msg, "the server returned status code 503: database unavailable");
    assert_int_equal(n, 1);
}

/* An answer slower than the request timeout: retried only when idempotent. */
static void test_timeout_by_class(void **state)
{
    const fake_reply script[] = {
        {200, NULL, OK_BODY, 800, 0},
        {200, NULL, OK_BODY, 0, 0},
    };
    zbso_err err;
    int n;
    assert_int_equal(run_script(script, 2, TRANSPORT_IDEMPOTENT, 10, 0.3, &err, &n), 0);
    assert_true(n >= 2);
    assert_int_equal(run_script(script, 2, TRANSPORT_RETRY_IF_UNSENT, 10, 0.3, &err, &n),
                     ZBSO_ERUNTIME);
    assert_non_null(strstr(err.msg, "timed out"));
    assert_non_null(strstr(err.msg, "GET http://127.0.0.1:"));
    assert_null(strstr(err.msg, "gave up"));
    assert_int_equal(n, 1);
}

/* The server read the request and closed the connection without answering. */
static void test_dropped_answer_by_class(void **state)
{
    const fake_reply script[] = {{0, NULL, "", 0, 0}, {200, NULL, OK_BODY, 0, 0}};
    zbso_err err;
    int n;
    assert_int_equal(run_script(script, 2, TRANSPORT_IDEMPOTENT, 5, 0, &err, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(run_script(script, 2, TRANSPORT_RETRY_IF_UNSENT, 5, 0, &err, &n),
                     ZBSO_ERUNTIME);
    assert_non_null(strstr(err.msg, "Empty reply"));
    assert_int_equal(n, 1);
}

/* A refused connection never reached the server: both classes retry it until the retry
 * budget is spent. */
static void test_refused_retried_by_both_classes(void **state)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    transport_retry classes[] = {TRANSPORT_RETRY_IF_UNSENT, TRANSPORT_IDEMPOTENT};
    transport_req req = {"POST", "/jobs", "{}", TRANSPORT_RETRY_IF_UNSENT, NULL};
    transport_resp resp;
    zbso_err err;
    char url[64];
    /* A port that was free a moment ago and that nobody listens on. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    for (size_t i = 0; i < 2; i++) {
        transport *t = NULL;
        assert_int_equal(transport_new(url, NULL, 1.0, &t, &err), 0);
        req.retry = classes[i];
        double t0 = clk_mono_s();
        assert_int_equal(transport_request(t, &req, &resp, &err), ZBSO_ERUNTIME);
        double took = clk_mono_s() - t0;
        assert_true(took >= 0.95 && took < 5);
        assert_true(strncmp(err.msg, "gave up after 1.", 16) == 0);
        assert_null(strstr(err.msg, "and 1 attempts"));
        assert_non_null(strstr(err.msg, "POST "));
        assert_non_null(strstr(err.msg, url));
        transport_free(t);
    }
    close(fd);
}

/* A connection that is never accepted (the listen queue is full, so the SYN is dropped)
 * times out before one byte was sent: retried even when only unsent requests may be. */
static void test_connect_timeout_is_unsent(void **state)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    transport_req req = {"POST", "/jobs", "{}", TRANSPORT_RETRY_IF_UNSENT, NULL};
    transport_resp resp;
    zbso_err err;
    char url[64];
    int fillers[4], n_fill = 0;
    transport *t = NULL;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 0), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    /* Fill the accept queue (backlog 0 holds one); later SYNs go unanswered. */
    for (; n_fill < 2; n_fill++) {
        fillers[n_fill] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fillers[n_fill], (struct sockaddr *)&a, sizeof a);
    }
    clk_sleep_s(0.100);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    assert_int_equal(transport_new(url, NULL, 1.5, &t, &err), 0);
    /* "gave up" means it was to be retried (the connect timeout takes the whole budget,
     * so one attempt is all there is time for); a request the server saw is not. */
    assert_int_equal(transport_request(t, &req, &resp, &err), ZBSO_ERUNTIME);
    assert_true(strncmp(err.msg, "gave up after ", 14) == 0);
    assert_non_null(strstr(err.msg, "Failed to connect"));
    transport_free(t);
    for (int i = 0; i < n_fill; i++)
        close(fillers[i]);
    close(fd);
}

/* The key goes on every attempt, as an sf-string; no key, no header. */
static void test_idempotency_key_header(void **state)
{
    const fake_reply script[] = {
        {503, NULL, "{\"message\":\"busy\"}", 0, 0},
        {200, NULL, OK_BODY, 0, 0},
    };
    static fake_server fs;
    char key[TRANSPORT_KEY_HEX + 1], other[TRANSPORT_KEY_HEX + 1], line[128];
    transport_req req = {"GET", "/jobs/batch_size?job_id=a", NULL, TRANSPORT_IDEMPOTENT, key};
    transport_resp resp;
    zbso_err err;
    assert_int_equal(transport_key_new(key, &err), 0);
    assert_int_equal(transport_key_new(other, &err), 0);
    assert_int_equal(strlen(key), TRANSPORT_KEY_HEX);
    assert_int_equal(strspn(key, "0123456789abcdef"), TRANSPORT_KEY_HEX);
    assert_string_not_equal(key, other);

    fake_start(&fs, script, 2);
    transport *t = open_fake(&fs, 5);
    assert_int_equal(transport_request(t, &req, &resp, &err), 0);
    req.idempotency_key = NULL;
    assert_int_equal(transport_request(t, &req, &resp, &err), 0);
    transport_free(t);
    fake_stop(&fs);
    assert_int_equal(atomic_load(&fs.n_requests), 3);
    snprintf(line, sizeof line, "\r\nIdempotency-Key: \"%s\"\r\n", key);
    assert_non_null(strstr(fs.requests[0], line));
    assert_non_null(strstr(fs.requests[1], line));
    assert_null(strstr(fs.requests[2], "Idempotency-Key"));

    req.idempotency_key = "0123456789abcdef0123456789abcdef0"; /* one digit too many */
    fake_start(&fs, script + 1, 1);
    t = open_fake(&fs, 5);
    assert_int_equal(transport_request(t, &req, &resp, &err), ZBSO_ERUNTIME);
    assert_non_null(strstr(err.msg, "idempotency key"));
    transport_free(t);
    fake_stop(&fs);
    assert_int_equal(atomic_load(&fs.n_requests), 0);
}

/* Credentials in the URL go out as HTTP Basic auth, exactly the header httpx builds
 * (percent-escapes decoded); a bearer token wins over them; no message shows the password. */
static void test_url_credentials(void **state)
{
    const fake_reply script[] = {
        {401, NULL, "{\"message\":\"wrong password\"}", 0, 0},
        {200, NULL, OK_BODY, 0, 0},
    };
    static fake_server fs;
    char url[128], shown[128];
    transport_req req = {"GET", "/x", NULL, TRANSPORT_IDEMPOTENT, NULL};
    transport_resp resp;
    transport *t = NULL;
    zbso_err err;
    fake_start(&fs, script, 2);
    /* user zbso, password "t0k:en@/x" */
    snprintf(url, sizeof url, "http://zbso:t0k%%3Aen%%40%%2Fx@127.0.0.1:%d", fs.port);
    assert_int_equal(transport_new(url, NULL, 0, &t, &err), 0);
    assert_int_equal(transport_request(t, &req, &resp, &err), ZBSO_EAUTH);
    assert_null(strstr(err.msg, "t0k"));
    assert_int_equal(transport_request(t, &req, &resp, &err), 0);
    transport_free(t);
    assert_int_equal(transport_new(url, "bear", 0, &t, &err), 0);
    assert_int_equal(transport_request(t, &req, &resp, &err), 0);
    transport_free(t);
    fake_stop(&fs);
    /* base64("zbso:t0k:en@/x") */
    assert_non_null(strstr(fs.requests[0], "\r\nAuthorization: Basic emJzbzp0MGs6ZW5AL3g=\r\n"));
    assert_non_null(strstr(fs.requests[1], "\r\nAuthorization: Basic emJzbzp0MGs6ZW5AL3g=\r\n"));
    assert_non_null(strstr(fs.requests[2], "\r\nAuthorization: Bearer bear\r\n"));
    assert_null(strstr(fs.requests[2], "Basic"));

    /* Nobody listens on port 1: the network error names the URL, password masked. */
    assert_int_equal(transport_new("http://u:pw-secret@127.0.0.1:1", NULL, 0, &t, &err), 0);
    assert_int_equal(transport_request(t, &req, &resp, &err), ZBSO_ERUNTIME);
    assert_non_null(strstr(err.msg, "http://u:***@127.0.0.1:1/x"));
    assert_null(strstr(err.msg, "pw-secret"));
    transport_free(t);
    assert_int_equal(transport_new("ftp://u:pw-secret@h", NULL, 0, &t, &err), ZBSO_ECONFIG);
    assert_null(strstr(err.msg, "pw-secret"));

    const struct {
        const char *in, *out;
    } masks[] = {
        {"http://h:1", "http://h:1"},
        {"http://u@h:1/p", "http://u@h:1/p"},
        {"http://u:p@h:1/p?q=a@b", "http://u:***@h:1/p?q=a@b"},
        {"https://:tok@h", "https://:***@h"},
        {"http://u:p@ss@h", "http://u:***@h"},
        {"u:p@h", "u:***@h"},
    };
    for (size_t i = 0; i < sizeof masks / sizeof masks[0]; i++) {
        transport_mask_url(masks[i].in, shown, sizeof shown);
        assert_string_equal(shown, masks[i].out);
    }
    transport_mask_url("http://u:secret@h", shown, 12);
    assert_string_equal(shown, "http://u:**");
}

/* An answer over the limit is refused at once, whatever the class. */
static void test_body_limit(void **state)
{
    const fake_reply script[] = {{200, NULL, "", 0, TRANSPORT_BODY_MAX + 1},
                                 {200, NULL, OK_BODY, 0, 0}};
    const fake_reply exact[] = {{200, NULL, "", 0, TRANSPORT_BODY_MAX}};
    static fake_server fs;
    transport_req req = {"GET", "/x", NULL, TRANSPORT_IDEMPOTENT, NULL};
    transport_resp resp;
    zbso_err err;
    int n;
    assert_int_equal(run_script(script, 2, TRANSPORT_IDEMPOTENT, 5, 0, &err, &n),
                     ZBSO_ERUNTIME);
    assert_non_null(strstr(err.msg, "over the 1048576 byte limit"));
    assert_int_equal(n, 1);
    fake_start(&fs, exact, 1);
    transport *t = open_fake(&fs, 5);
    assert_int_equal(transport_request(t, &req, &resp, &err), 0);
    assert_int_equal(resp.len, TRANSPORT_BODY_MAX);
    assert_int_equal(strlen(resp.body), TRANSPORT_BODY_MAX);
    transport_free(t);
    fake_stop(&fs);
}

static void test_config(void **state)
{
    transport *t = NULL;
    zbso_err err;
    double s = -1;
    char url[TRANSPORT_URL_MAX + 32];
    unsetenv(TRANSPORT_RETRY_ENV);
    assert_int_equal(transport_retry_timeout_env(&s, &err), 0);
    assert_true(s == TRANSPORT_RETRY_TIMEOUT_S);
    setenv(TRANSPORT_RETRY_ENV, "2.5", 1);
    assert_int_equal(transport_retry_timeout_env(&s, &err), 0);
    assert_true(s == 2.5);
    setenv(TRANSPORT_RETRY_ENV, "-1", 1);
    assert_int_equal(transport_retry_timeout_env(&s, &err), ZBSO_ECONFIG);
    assert_string_equal(err.msg, "ZBSO_CLIENT_RETRY_TIMEOUT='-1' is not a number of seconds >= 0");
    assert_true(s == 2.5);
    unsetenv(TRANSPORT_RETRY_ENV);

    assert_int_equal(transport_new("ftp://h", NULL, 1, &t, &err), ZBSO_ECONFIG);
    assert_non_null(strstr(err.msg, "'ftp://h'"));
    assert_null(t);
    assert_int_equal(transport_new("http://h:1///", NULL, 1, &t, &err), 0);
    assert_string_equal(transport_base_url(t), "http://h:1");
    transport_free(t);
    memset(url, 'a', sizeof url);
    memcpy(url, "http://", 7);
    url[TRANSPORT_URL_MAX + 1] = '\0';
    assert_int_equal(transport_new(url, NULL, 1, &t, &err), ZBSO_ECONFIG);
    assert_non_null(strstr(err.msg, "1025 bytes"));
    char *e = transport_escape("a b&c");
    assert_string_equal(e, "a%20b%26c");
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_table),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_error_status),
        cmocka_unit_test(test_503_by_class),
        cmocka_unit_test(test_timeout_by_class),
        cmocka_unit_test(test_dropped_answer_by_class),
        cmocka_unit_test(test_refused_retried_by_both_classes),
        cmocka_unit_test(test_connect_timeout_is_unsent),
        cmocka_unit_test(test_idempotency_key_header),
        cmocka_unit_test(test_body_limit),
        cmocka_unit_test(test_url_credentials),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
