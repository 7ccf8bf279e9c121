/* fake_asan_lib.c: stands in for a sanitizer build's libzbso.so in
 * tests/python/test_install.py. Loading it ends the process at once with status 86, as an
 * AddressSanitizer library loaded into an unsanitized python3 does (the ASan runtime
 * refuses to start), and it holds the AddressSanitizer symbol name zbso looks for. */
#include <unistd.h>

const char zbso_fake_asan_mark[] = "__asan_init";

__attribute__((constructor)) static void die_on_load(void)
{
    _exit(86);
}
