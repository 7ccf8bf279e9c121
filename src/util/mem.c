/* mem.c: the allocation wrappers of mem.h and their failure countdown. No state but two
 * atomics; thread-safe. */
#include "util/mem.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static atomic_long countdown;   /* > 0: allocations left until the one that fails */
static atomic_long failures;
static _Atomic(void *) failed_site;

/* True when this allocation is the one the countdown fails (errno is then ENOMEM). When
 * two threads race for the last count, exactly one of them gets 1 from the subtraction;
 * the other leaves the countdown below 0, which is disarmed. */
static bool fail_now(void *site)
{
    if (atomic_load_explicit(&countdown, memory_order_relaxed) <= 0)
        return false;
    if (atomic_fetch_sub(&countdown, 1) != 1)
        return false;
    atomic_store(&failed_site, site);
    atomic_fetch_add(&failures, 1);
    errno = ENOMEM;
    return true;
}

#define SITE __builtin_return_address(0)

void *mem_malloc(size_t n) { return fail_now(SITE) ? NULL : malloc(n); }

void *mem_calloc(size_t n, size_t size) { return fail_now(SITE) ? NULL : calloc(n, size); }

void *mem_realloc(void *p, size_t n) { return fail_now(SITE) ? NULL : realloc(p, n); }

char *mem_strdup(const char *s) { return fail_now(SITE) ? NULL : strdup(s); }

void mem_free(void *p) { free(p); }

void mem_fail_nth(long n) { atomic_store(&countdown, n > 0 ? n : 0); }

long mem_failures(void) { return atomic_load(&failures); }

void *mem_failed_site(void) { return atomic_load(&failed_site); }
