/* backup.h: copies of a SQLite database file taken while a server writes to it (issue 24,
 * `zbso db backup`), through SQLite's online backup API, and the file check `zbso db
 * restore` runs first. SQLite only: PostgreSQL and MySQL have pg_dump and mariadb-dump. */
#ifndef ZBSO_STORE_BACKUP_H
#define ZBSO_STORE_BACKUP_H

#include <stdbool.h>

#include "util/err.h"

/* Copies the database of url (sqlite:///path or sqlite+aiosqlite:///path) into a new file
 * `file`, in steps of pages_per_step pages (>= 1), all from one read snapshot: the copy
 * holds every transaction committed before the call and none that commits later. Writers
 * are never blocked (WAL: a reader holds no lock they wait for). The copy is written to
 * "file.tmp", checked with PRAGMA integrity_check, synced and renamed to file, so file
 * either does not exist or is whole. progress (may be NULL) is called after each step
 * with the pages left and the total. Returns 0; ZBSO_EINVAL for a URL that is not
 * SQLite's or a file that exists; ZBSO_ESTORE / ZBSO_EIO naming the file otherwise
 * (nothing left at file). */
int store_sqlite_backup(const char *url, const char *file, int pages_per_step,
                        void (*progress)(void *ctx, int remaining, int total), void *ctx,
                        zbso_err *err);

/* Opens the SQLite file path read-only and runs PRAGMA integrity_check. Returns 0, or
 * ZBSO_EINVAL naming the file and the first problem SQLite reports (not a database,
 * missing, corrupt). */
int store_sqlite_check(const char *path, zbso_err *err);

#endif
