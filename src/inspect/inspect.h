/* inspect.h: what the optimizer learned and saved, as the JSON documents of the inspection
 * API (SPEC §5): the job list, a job, its trials, a trial with its curve. One code path
 * answers both GET /jobs/... in zbso serve and `zbso jobs --db` (which reads a database
 * directly), so the two always agree. Reads through store_exec_read only: never writes,
 * never holds a job's lock. */
#ifndef ZBSO_INSPECT_INSPECT_H
#define ZBSO_INSPECT_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "core/types.h"
#include "core/value.h"
#include "store/store.h"
#include "util/err.h"

#define INSP_LIMIT_DEFAULT 100   /* rows of a page when the query gives no limit */
#define INSP_LIMIT_MAX 1000      /* the most rows of a page */

typedef enum insp_kind {
    INSP_JOBS = 0,    /* GET /jobs?prefix=&limit=&after= */
    INSP_JOB = 1,     /* GET /jobs/{job_id} */
    INSP_TRIALS = 2,  /* GET /jobs/{job_id}/trials?limit=&after= */
    INSP_TRIAL = 3,   /* GET /jobs/{job_id}/trials/{n} */
} insp_kind;

typedef struct insp_request {
    insp_kind kind;
    char job_id[ZBSO_ID_MAX + 1];    /* INSP_JOB, INSP_TRIALS, INSP_TRIAL */
    int64_t trial_number;            /* INSP_TRIAL */
    char prefix[ZBSO_ID_MAX + 1];    /* INSP_JOBS: "" for every job */
    char after_job[ZBSO_ID_MAX + 1]; /* INSP_JOBS: the cursor, "" for the first page */
    int64_t after_trial;             /* INSP_TRIALS: the cursor, 0 for the first page */
    int64_t limit;                   /* INSP_JOBS, INSP_TRIALS: 1..INSP_LIMIT_MAX */
    /* NULL, or the CO2e and price configuration (not owned): without one, documents have
     * no CO2e or price field at all. */
    const opt_footprint *footprint;
} insp_request;

/* Sets *req to the first page of kind with the default limit and no filter. */
void insp_request_init(insp_request *req, insp_kind kind);

/* Reads a query value into req: name is "prefix", "after" or "limit" (the ones kind
 * takes), value its decoded text of len bytes. Returns 0, or ZBSO_EINVAL with err->where
 * "query", err->loc the name and a message naming the value (422): a limit that is not an
 * integer in 1..INSP_LIMIT_MAX, a trial cursor that is not a non-negative integer, a
 * prefix or job cursor too long, with a NUL, or not UTF-8; or a name kind does not take. */
int insp_request_query(insp_request *req, const char *name, const char *value, size_t len,
                       zbso_err *err);

/* Answers req from st: *json receives the document (malloc'd, NUL-terminated; the caller
 * frees it) and *len its length. Returns 0; ZBSO_ENOTFOUND with a message naming the job or the
 * trial (404); a store error; ZBSO_ENOMEM. */
int insp_answer(store *st, const insp_request *req, char **json, size_t *len,
                zbso_err *err);

#endif
