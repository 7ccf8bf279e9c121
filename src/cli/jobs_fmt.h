/* jobs_fmt.h: the three output formats of `zbso jobs` from the inspection API's JSON
 * documents (SPEC §5): JSON (the document, compact, one line), an aligned table for a
 * terminal (units in the headers) and RFC 4180 CSV. Formats documents only: it neither
 * fetches nor computes a figure, so what it prints is what the server or the database
 * answered. Documents are jansson values; a missing or null field prints as "-" in a
 * table and as an empty CSV field. */
#ifndef ZBSO_CLI_JOBS_FMT_H
#define ZBSO_CLI_JOBS_FMT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "util/err.h"

typedef enum jobs_format { JOBS_FMT_TABLE = 0, JOBS_FMT_JSON = 1, JOBS_FMT_CSV = 2 } jobs_format;

/* Parses "table", "json" or "csv" into *out. Returns 0 or ZBSO_EINVAL naming the value. */
int jobs_format_parse(const char *text, jobs_format *out, zbso_err *err);

/* Each writes one document to `to` in format f and returns 0, or ZBSO_EIO when writing
 * failed (err says so) or ZBSO_ENOMEM. */

/* GET /jobs: {"jobs": [JobSummary...], "next": ...}; one row per job. */
int jobs_fmt_list(FILE *to, jobs_format f, const json_t *doc, zbso_err *err);
/* GET /jobs/{job_id}: the job's fields, savings, exploration rounds, arms and counts (a
 * table per part); as CSV one "field,value" row per scalar, named by its path
 * ("savings.spent.energy_j", "arms.0.mean"). */
int jobs_fmt_job(FILE *to, jobs_format f, const json_t *doc, zbso_err *err);
/* GET /jobs/{job_id}/trials: {"job_id", "trials": [Trial...], "next"}; one row per trial. */
int jobs_fmt_trials(FILE *to, jobs_format f, const json_t *doc, zbso_err *err);
/* GET /jobs/{job_id}/trials/{n}: the trial, then one row per report (its curve). */
int jobs_fmt_curve(FILE *to, jobs_format f, const json_t *doc, zbso_err *err);
/* `zbso jobs compare`: jobs is an array of job documents (GET /jobs/{job_id}); one row
 * per job with what a recurrence costs at the default and projected batch sizes and what
 * each job saved. JSON: {"jobs": [job...]}, the documents themselves. */
int jobs_fmt_compare(FILE *to, jobs_format f, const json_t *jobs, zbso_err *err);
/* `zbso jobs export`: the job document and the trial documents (each with its reports)
 * of the job. JSON: {"job": job, "trials": [trial...]}. CSV: one row per report, the
 * trial's columns repeated on each (a trial without reports: one row, report columns
 * empty). A table is refused (ZBSO_EINVAL): export is for programs. */
int jobs_fmt_export(FILE *to, jobs_format f, const json_t *job, const json_t *trials,
                    zbso_err *err);

/* Writes s as one RFC 4180 field: quoted (with '"' doubled) when it holds a comma, a
 * quote, CR or LF; as it is otherwise. Records end with CRLF. A text cell (text true: any
 * string of a document, a header) that starts with '=', '+', '-', '@', tab or CR gets a
 * leading "'" so that a spreadsheet shows it instead of running it as a formula (OWASP,
 * CSV injection); a number's JSON text (text false) is written as it is. The one CSV
 * escaping of zbso's C code. */
void jobs_csv_field(FILE *to, const char *s, bool text);

#endif
