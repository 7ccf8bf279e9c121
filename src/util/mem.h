/* mem.h: the allocation functions of the code that runs inside users' processes
 * (libzbso: client, transport, monitor, codec, util/buf): malloc, calloc, realloc, strdup
 * and free, plus a countdown that makes the Nth allocation fail, for the out-of-memory
 * torture test (tests/client/test_torture.c; docs/internals/MEM.md). libc only.
 * What mem_* allocates is malloc's: mem_free and free are interchangeable. */
#ifndef ZBSO_UTIL_MEM_H
#define ZBSO_UTIL_MEM_H

#include <stddef.h>

/* As malloc, calloc, realloc and strdup: NULL (errno ENOMEM) when memory runs out or the
 * countdown says this allocation fails. A failed mem_realloc leaves p as it was. */
void *mem_malloc(size_t n);
void *mem_calloc(size_t n, size_t size);
void *mem_realloc(void *p, size_t n);
char *mem_strdup(const char *s);

/* As free: NULL is a no-op. */
void mem_free(void *p);

/* Test hook: the nth allocation from now (1: the next one), counted over every mem_*
 * allocation of every thread, fails; the ones after it succeed again. 0 disarms. The
 * countdown costs one relaxed atomic load per allocation while disarmed. libzbso.so
 * does not export it (its version script keeps every mem_* local), so only a program
 * linked with the static libraries can arm it. */
void mem_fail_nth(long n);

/* How many allocations the countdown has failed since the process started. */
long mem_failures(void);

/* The return address of the mem_* call the countdown failed last (the code that asked
 * for the memory: in jansson or libcurl when a test routes their allocations here), or
 * NULL. */
void *mem_failed_site(void);

#endif
