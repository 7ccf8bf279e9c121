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

/* memory.c: a unit of work of the memory:// store st begun and ended by separate calls of
 * one thread, as a database server's session runs one (tests/netdb's fake networked
 * driver). begin waits for st's mutex and holds it until end; end commits, or undoes all
 * the unit changed, and frees t. begin returns 0 with *out, or ZBSO_ENOMEM. */
int store_memory_begin(store *st, bool read_only, store_txn **out, zbso_err *err);
void store_memory_end(store_txn *t, bool commit);

/* A power profile's measurements as the SQL backends store them, one text column:
 * "W,TIME,ENERGY" per measurement, in order, separated by ';', doubles in the shortest
 * text that reads back bit for bit (at most STORE_PL_TEXT_MAX bytes with the NUL).
 * store_pl_format writes p's into buf (STORE_PL_TEXT_MAX bytes); store_pl_parse reads
 * text into out->m and out->n: ZBSO_ESTORE naming the job when the text is not such a
 * list (a row this code did not write). */
#define STORE_PL_TEXT_MAX (ZBSO_MAX_POWER_LIMITS * 72 + 1)
void store_pl_format(const zbso_power_profile *p, char *buf);
int store_pl_parse(const char *text, const char *job_id, zbso_power_profile *out,
                   zbso_err *err);

/* The spec's fields beyond Zeus (issue 21) as the SQL backends store them: the policy as
 * its name (spec_policy_name: "zeus", "smart"), warm_start as a boolean, and prior_jobs
 * as one text column, the ids in order separated by '\n', each with '\\' written "\\\\"
 * and '\n' written "\\n" ("" for none; at most STORE_PRIOR_TEXT_MAX bytes with the NUL).
 * store_prior_format writes s's into buf (STORE_PRIOR_TEXT_MAX bytes). store_extras_read
 * fills s's policy (has_policy true: a stored spec holds its resolved policy), warm_start
 * and prior_jobs from those columns, and the carbon intensity (issue 25: a nullable
 * double column, has_intensity false for NULL): ZBSO_ESTORE naming the job when the
 * policy is no policy's name, the text is not such a list or the intensity is outside
 * 0..ZBSO_INTENSITY_MAX (a row this code did not write). */
#define STORE_PRIOR_TEXT_MAX (ZBSO_MAX_PRIOR_JOBS * (2 * ZBSO_ID_MAX + 1) + 1)
void store_prior_format(const zbso_job_spec *s, char *buf);
int store_extras_read(const char *policy, bool warm_start, const char *prior_text,
                      bool has_intensity, double intensity, zbso_job_spec *s, zbso_err *err);

#endif
