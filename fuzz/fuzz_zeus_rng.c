/* fuzz_zeus_rng.c: the generator state a Zeus database holds (zeus_rng_parse), JSON of
 * numpy's PCG64 bit_generator.state, from a hostile or corrupt database. Checks that an
 * accepted state has an odd increment and a 0/1 buffer flag, and that written back as
 * numpy writes it, it reads back the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "xfer/xfer.h"

__extension__ typedef unsigned __int128 u128;

/* v in decimal into out (at least 40 bytes). */
static void dec(u128 v, char *out)
{
    char tmp[48];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    out[n] = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_copy(data, size);
    zbso_rng rng, again;
    zbso_err err;
    char state[48], inc[48], json[256];
    err_clear(&err);
    int rc = zeus_rng_parse(text, size, &rng, &err);
    if (rc == 0) {
        FUZZ_CHECK((rng.inc_lo & 1) == 1);
        FUZZ_CHECK(rng.has_uint32 == 0 || rng.has_uint32 == 1);
        dec(((u128)rng.state_hi << 64) | rng.state_lo, state);
        dec(((u128)rng.inc_hi << 64) | rng.inc_lo, inc);
        int n = snprintf(json, sizeof json, "{\"bit_generator\": \"PCG64\", \"state\": "
                         "{\"state\": %s, \"inc\": %s}, \"has_uint32\": %d, \"uinteger\": %lu}",
                         state, inc, rng.has_uint32, (unsigned long)rng.uinteger);
        FUZZ_CHECK(n > 0 && (size_t)n < sizeof json);
        FUZZ_CHECK(zeus_rng_parse(json, (size_t)n, &again, &err) == 0);
        FUZZ_CHECK(memcmp(&rng, &again, sizeof rng) == 0);
    } else {
        FUZZ_CHECK(rc == ZBSO_EINVAL && err.msg[0] != '\0');
    }
    free(text);
    return 0;
}
