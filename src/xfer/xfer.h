/* xfer.h: moving optimizer state into and between zbso databases (issue 24): reading a Zeus
 * BSO server's database (zeusdb.c), turning its rows into zbso's jobs (zeus_import.c), and
 * copying a whole zbso database between backends (copy.c). Every write goes through
 * store.h, one unit of work per job; nothing here holds zbso's SQL. */
#ifndef ZBSO_XFER_XFER_H
#define ZBSO_XFER_XFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/types.h"
#include "store/store.h"
#include "util/err.h"

/* ---- a Zeus database, read-only (zeusdb.c) ---- */

typedef struct zdb zdb;

/* One value of a row. SQLite gives typed values; PostgreSQL and MySQL give text (or
 * NULL), which the readers of zeus_import.c parse strictly. text is not NUL-terminated
 * by contract: len bytes (a SQLite text may hold a NUL). */
typedef enum zcell_kind { ZC_NULL, ZC_INT, ZC_REAL, ZC_TEXT } zcell_kind;
typedef struct zcell {
    zcell_kind kind;
    int64_t i;
    double d;
    const char *text;
    size_t len;
} zcell;

/* The queries a reader answers; each backend holds its dialect's SQL. */
typedef enum zdb_query_id {
    ZQ_JOB_IDS,      /* job_id, job_id_prefix of every Job row */
    ZQ_JOB,          /* the Job row of ?, ZQ_JOB_COLS columns */
    ZQ_BATCH_SIZES,  /* job_id, batch_size of BatchSize rows of ?, ascending */
    ZQ_TRIALS,       /* job_id + ZQ_TRIAL_COLS of Trial rows of ?, ascending trial_number */
    ZQ_ARMS,         /* job_id + ZQ_ARM_COLS of GaussianTsArmState rows of ?, ascending */
    ZQ_COUNT
} zdb_query_id;

/* The tables and columns zbso reads, in the order of the queries' result columns. */
extern const char *const zdb_tables[4];            /* Job, BatchSize, Trial, GaussianTsArmState */
extern const char *const *const zdb_table_cols[4];  /* NULL-terminated, per table */

/* Called once per row; cells[0..n-1]. A non-zero return stops the query and is returned. */
typedef int (*zdb_row_fn)(void *ctx, const zcell *cells, size_t n);

/* Opens a Zeus database by the URL Zeus's .env holds: sqlite:///path,
 * sqlite+aiosqlite:///path, postgresql(+asyncpg)://..., mysql+asyncmy://... and the other
 * MySQL spellings of SPEC §4; user/password (may be NULL) fill a URL without them. The
 * database is opened read-only and one read snapshot is begun, which every later query
 * sees. Then checks that each table and column zbso reads exists: ZBSO_EINVAL naming the
 * first missing one (a database that is not Zeus's names table Job). Returns 0 with *out
 * set, or a negative code (ZBSO_EINVAL for a bad URL or layout, ZBSO_ESTORE /
 * ZBSO_EUNAVAIL when the database cannot be read) with *out NULL. */
int zdb_open(const char *url, const char *user, const char *password, zdb **out,
             zbso_err *err);
void zdb_close(zdb *db);

/* Runs query q with its one argument (a job id; ignored by ZQ_JOB_IDS), calling fn per
 * row. Returns 0, fn's non-zero return, or ZBSO_ESTORE naming the query. */
int zdb_query(zdb *db, zdb_query_id q, const char *arg, zdb_row_fn fn, void *ctx,
              zbso_err *err);

/* The URL with its password masked, for messages. */
const char *zdb_shown(const zdb *db);

/* ---- a Zeus job as zbso's (zeus_import.c) ---- */

/* A job with everything stored for it: what import writes and copy moves. Owns its
 * arrays (zjob_free). */
typedef struct zjob {
    zbso_job job;
    zbso_trial *trials;   /* ascending trial_number */
    size_t n_trials, cap_trials;
    zbso_arm arms[ZBSO_MAX_BATCH_SIZES];
    size_t n_arms;
    /* copy.c only: curve points per trial (points[i] belongs to trials[i]), profiles. */
    zbso_curve_point **points;
    size_t *n_points;
    zbso_power_profile **profiles;
    size_t n_profiles;
} zjob;

void zjob_free(zjob *j);
/* Appends a trial (growing the array); ZBSO_ENOMEM past ZJOB_MAX_TRIALS. */
#define ZJOB_MAX_TRIALS 10000000
int zjob_add_trial(zjob *j, const zbso_trial *t, zbso_err *err);

/* Parses numpy's bit_generator.state as json.dumps writes it for PCG64:
 * {"bit_generator": "PCG64", "state": {"state": N, "inc": N}, "has_uint32": 0|1,
 * "uinteger": N} (keys in any order, each once). Returns 0, or ZBSO_EINVAL with err saying
 * what is wrong (not JSON, another bit generator, a number out of range, an even
 * increment, a missing or unknown key). Pure; safe on any bytes. */
int zeus_rng_parse(const char *text, size_t len, zbso_rng *out, zbso_err *err);

/* Reads Zeus's job job_id from db into *out (a zbso job, its trials and arms) and checks
 * every value as the API would: ZBSO_EINVAL with a message naming table, row and column.
 * Naive Zeus timestamps are read in the local time zone (TZ), as Zeus wrote them
 * (datetime.now()). now is the time given to a job without a trial (created_at).
 * entropy seeds the generator of a job without mab_seed (Zeus draws a new seed at every
 * request for such a job). */
int zeus_job_read(zdb *db, const char *job_id, double now, const uint32_t entropy[4],
                  zjob *out, zbso_err *err);

typedef enum zput_result {
    ZPUT_WRITTEN = 0,    /* the job was not there and has been written */
    ZPUT_SAME = 1,       /* the job was there with the same data: nothing written */
    ZPUT_REPLACED = 2,   /* it was there with other data; replace was asked: rewritten */
} zput_result;

/* Writes j to st in one unit of work. A job of that id already there: with the same data
 * (as zjob_same compares) nothing is written; otherwise ZBSO_ECONFLICT naming the job,
 * unless replace, which deletes it first in the same unit. *res says which. */
int zjob_put(store *st, const zjob *j, bool replace, bool compare_times, zput_result *res,
             zbso_err *err);

/* ---- zjob_put on several threads (pool.c) ---- */

typedef struct xfer_pool xfer_pool;

/* Called once per job put, with the pool's lock held (calls never overlap), after the
 * job's unit of work ended: rc is zjob_put's return, res its result, err its error. A
 * non-zero return stops the pool: the jobs still queued are dropped unwritten. */
typedef int (*xfer_done_fn)(void *ctx, size_t seq, const zjob *job, int rc, zput_result res,
                            const zbso_err *err);

/* Starts threads (1..32) that put the jobs given to xfer_pool_put into st with zjob_put
 * (replace, exact as there). Returns 0 with *out, or ZBSO_ENOMEM / ZBSO_EINTERNAL. */
int xfer_pool_new(store *st, int threads, bool replace, bool exact, xfer_done_fn done,
                  void *ctx, xfer_pool **out, zbso_err *err);
/* Queues *job (the pool takes what it owns; *job is left empty) as number seq, waiting
 * while the queue is full. ZBSO_ECONFLICT when the pool has stopped (the job is freed). */
int xfer_pool_put(xfer_pool *p, zjob *job, size_t seq, zbso_err *err);
/* Waits until every queued job has been put; false when the pool stopped. */
bool xfer_pool_wait(xfer_pool *p);
/* Puts what is queued, stops the threads and frees p (NULL: no-op). */
void xfer_pool_finish(xfer_pool *p);

/* ---- a whole zbso database (copy.c) ---- */

typedef struct xfer_copy_stats {
    int64_t jobs, written, same, trials;
} xfer_copy_stats;

/* Copies every job of src into dst (already open), in one read snapshot of src, one unit
 * of work of dst per job (zjob_put without replace: a job already in dst must hold the
 * same data, else ZBSO_ECONFLICT naming it and the copy stops). progress (may be NULL)
 * is called after each job. Returns 0 or the first error. */
int xfer_copy(store *src, store *dst, void (*progress)(void *ctx, const xfer_copy_stats *s),
              void *ctx, xfer_copy_stats *stats, zbso_err *err);

#endif
