/* fuzz_client_response.c: what the C client and `zbso run` parse from the network: a
 * ReportResponse (codec_report_response_parse) and the message of an error body of either
 * shape (codec_error_message), both on every input. The message buffers are heap blocks
 * of exactly their capacity, so a write or read past one is an ASan report; a message is
 * always NUL-terminated within its capacity; a ReportResponse round-trips. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "codec/codec.h"
#include "fuzz.h"

/* Capacities the client uses (ZBSO_ERRBUF_MAX, TRANSPORT_MSG_MAX) and edge ones. */
static const size_t caps[] = {0, 1, 2, 16, 512};

static void check_report_response(const char *buf, size_t size)
{
    zbso_report_response resp, again;
    zbso_err err;
    err_clear(&err);
    int rc = codec_report_response_parse(buf, size, &resp, &err);
    if (rc < 0) {
        FUZZ_CHECK(rc == ZBSO_EINVAL && err.code == rc && err.msg[0] != '\0');
        return;
    }
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(memchr(resp.message, '\0', sizeof resp.message) != NULL);
    size_t len = 0;
    char *text = codec_report_response_dump(&resp, &len);
    FUZZ_CHECK(text != NULL && strlen(text) == len);
    char *copy = fuzz_copy(text, len);
    err_clear(&err);
    FUZZ_CHECK(codec_report_response_parse(copy, len, &again, &err) == 0);
    FUZZ_CHECK(again.stop_train == resp.stop_train && again.converged == resp.converged);
    /* A message cut inside a UTF-8 sequence is sent with '?' for its non-ASCII bytes. */
    json_t *probe = json_string(resp.message);
    if (probe)
        FUZZ_CHECK(strcmp(again.message, resp.message) == 0);
    else
        FUZZ_CHECK(strlen(again.message) == strlen(resp.message) &&
                   fuzz_is_ascii(again.message));
    json_decref(probe);
    free(copy);
    free(text);
}

static void check_error_message(const char *buf, size_t size)
{
    char whole[4096];
    int rc = codec_error_message(buf, size, whole, sizeof whole);
    FUZZ_CHECK(rc == 0 || rc == ZBSO_EINVAL);
    FUZZ_CHECK(memchr(whole, '\0', sizeof whole) != NULL);
    FUZZ_CHECK(rc == 0 || whole[0] == '\0');
    /* A smaller buffer gives a prefix of the same message and the same verdict; with
     * capacity 0 nothing is written (the block may even be NULL). */
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        size_t cap = caps[i];
        char *msg = malloc(cap);
        if (!msg && cap)
            abort();
        FUZZ_CHECK(codec_error_message(buf, size, msg, cap) == rc);
        if (cap) {
            FUZZ_CHECK(memchr(msg, '\0', cap) != NULL);
            FUZZ_CHECK(strncmp(msg, whole, strlen(msg)) == 0);
        }
        free(msg);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = fuzz_copy(data, size);
    check_report_response(buf, size);
    check_error_message(buf, size);
    free(buf);
    return 0;
}
