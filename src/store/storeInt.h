/* storeInt.h: private to src/store: the backends that store.c's URL table points at.
 * Nothing outside src/store includes this; callers go through store.h. */
#ifndef ZBSO_STORE_STOREINT_H
#define ZBSO_STORE_STOREINT_H

#include "store/store.h"

/* sqlite_engine.c: "sqlite:///path" and "sqlite+aiosqlite:///path"; the default backend. */
extern const store_backend store_sqlite_backend;

/* pg_engine.c: "postgresql://..." and "postgresql+asyncpg://...", shared by replicas. */
extern const store_backend store_postgresql_backend;

/* memory.c: "memory://", process memory, for tests and the simulator. */
extern const store_backend store_memory_backend;

/* Fills *ro with rw's read operations and, for every write operation, one that changes
 * nothing and fails with ZBSO_EINTERNAL: the operations of a backend's exec_read units. */
void store_ops_read_only(const store_txn_ops *rw, store_txn_ops *ro);

#endif
