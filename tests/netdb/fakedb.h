/* fakedb.h: a networked database that is not one, for the shared database suite: the
 * memory:// backend served through src/store/netdb/netdb.c by a driver of its own (fakedb.c),
 * as a fourth networked database would be. URLs are fakedb://USER:PASSWORD@HOST/NAME; one
 * "server" holds every database, can be stopped and started (connections then break, as
 * a restarted PostgreSQL's do), and injects faults into statements. Its lock is one per
 * database (memory://'s mutex, held from a unit's first statement to its end): coarser
 * than row locks, so a deadlock cannot happen and is injected instead. */
#ifndef ZBSO_TESTS_FAKEDB_H
#define ZBSO_TESTS_FAKEDB_H

#include <stddef.h>

#include "store/store.h"

extern const store_backend fakedb_backend;

/* The password of every fakedb URL fakedb_fresh writes: a message must never show it. */
#define FAKEDB_PASSWORD "fake-S3cret"

/* Creates database name on the server (replacing one of that name) and writes its URL
 * into url. Returns 0, or -1 when out of memory. */
int fakedb_fresh(const char *name, char *url, size_t cap);

/* Controls the server: "stop fast" and "stop immediate" (every connection breaks, new
 * ones are refused; what committed stays), "start". Returns 0, or -1 for another action. */
int fakedb_ctl(const char *action);

/* The nth statement from now (1: the next one), on any connection, fails as a deadlock
 * victim's does (a retryable conflict; the unit is rolled back). */
void fakedb_deadlock_at(int nth);

/* Drops every database (at the end of a test program, for the leak checker). */
void fakedb_cleanup(void);

#endif
