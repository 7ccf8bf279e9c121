/* storeInt.h: private to src/store: the backends that store.c's URL table points at.
 * Nothing outside src/store includes this; callers go through store.h. */
#ifndef ZBSO_STORE_STOREINT_H
#define ZBSO_STORE_STOREINT_H

#include "store/store.h"

/* sqlite_engine.c: "sqlite:///path" and "sqlite+aiosqlite:///path"; the default backend. */
extern const store_backend store_sqlite_backend;

/* pg_engine.c: "postgresql://..." and "postgresql+asyncpg://...", shared by replicas. */
extern const store_backend store_postgresql_backend;

/* mysql_engine.c: "mysql://...", "mysql+asyncmy://...", "mariadb://..." and the other
 * spellings of myurl.h, shared by replicas. */
extern const store_backend store_mysql_backend;

/* memory.c: "memory://", process memory, for tests and the simulator. */
extern const store_backend store_memory_backend;

#endif
