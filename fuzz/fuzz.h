/* fuzz.h: what every fuzz target shares: the libFuzzer entry point, exact-size copies of
 * the input (so ASan sees a read past len) and invariant checks that abort. Used only by
 * the targets in fuzz/, never by the product. */
#ifndef ZBSO_FUZZ_FUZZ_H
#define ZBSO_FUZZ_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* The entry point every target defines; libFuzzer or replay_main.c calls it. Returns 0, or
 * -1 for an input the target does not take (libFuzzer then keeps it out of the corpus). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with file, line and the failed condition when cond is false: an invariant of the
 * code under test did not hold, which is a finding like a crash. */
#define FUZZ_CHECK(cond)                                                                    \
    do {                                                                                    \
        if (!(cond))                                                                        \
            fuzz_fail(__FILE__, __LINE__, #cond);                                           \
    } while (0)

_Noreturn void fuzz_fail(const char *file, int line, const char *what);

/* A malloc'd copy of exactly size bytes, without a NUL after them: reading one byte past
 * the input is then an ASan heap-buffer-overflow. Aborts when memory runs out. */
char *fuzz_copy(const void *data, size_t size);

/* A malloc'd NUL-terminated copy of data, for interfaces that take C strings. Returns NULL
 * when data contains a NUL byte (such an input cannot reach them). */
char *fuzz_cstr(const void *data, size_t size);

/* Checks that err describes a failure (negative code, a message) and that the error body
 * the server would send for it (codec_error_dump; 422's detail shape when detail) is JSON
 * that the client's codec_error_message reads back, with the same text when it is ASCII. */
void fuzz_check_error_body(const zbso_err *err, bool detail);

/* True when s has no byte >= 0x80. */
bool fuzz_is_ascii(const char *s);

#endif
