/* table.h: the text a person reads in a terminal, for `zbso monitor` and `zbso jobs`:
 * aligned columns whose widths come from their widest cell, and terminal-safe cells
 * (control bytes escaped). Writes only to the FILE it is given. */
#ifndef ZBSO_CLI_TABLE_H
#define ZBSO_CLI_TABLE_H

#include <stddef.h>
#include <stdio.h>

typedef struct cli_table cli_table;

/* A table of n_cols columns (1..64); align holds one letter per column, 'l' or 'r'
 * (numbers). The first row added is the header. Aborts when memory runs out (the CLI
 * may). */
cli_table *cli_table_new(size_t n_cols, const char *align);
void cli_table_free(cli_table *t);

/* Appends a cell to the current row: s as it is, but with control characters (C0, DEL,
 * C1) and bytes that are not UTF-8 written as \xNN, so that a job id cannot move the
 * cursor or hide text in a terminal. */
void cli_table_cell(cli_table *t, const char *s);
/* Appends a printf-formatted cell (no escaping: for numbers and fixed words). */
void cli_table_cellf(cli_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Ends the current row; a row with fewer cells than columns is padded with "". */
void cli_table_end_row(cli_table *t);

/* Writes the rows, columns two spaces apart, widths counted in UTF-8 characters, no
 * trailing blanks. Returns 0, or -1 when writing failed (ferror). */
int cli_table_print(const cli_table *t, FILE *to);

/* Writes s to to escaped as cli_table_cell does. */
void cli_table_escape(FILE *to, const char *s);

#endif
