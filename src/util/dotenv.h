/* dotenv.h: the parser of `.env` text (KEY=VALUE lines, as python-dotenv reads them for
 * Zeus's settings). Pure: no I/O, no environment; the CLI's config_load reads the file and
 * decides what the keys mean. Bounded, so it can take untrusted bytes. */
#ifndef ZBSO_UTIL_DOTENV_H
#define ZBSO_UTIL_DOTENV_H

#include <stddef.h>

#include "util/err.h"

#define DOTENV_VALUE_MAX 8191    /* bytes of one value after unquoting */
#define DOTENV_KEY_MAX 255

/* Called by dotenv_parse once per assignment, in file order. key and value are
 * NUL-terminated and valid only during the call. A non-zero return stops parsing and is
 * returned by dotenv_parse. */
typedef int (*dotenv_fn)(void *ctx, const char *key, const char *value);

/* Parses `.env` text (len bytes, need not be NUL-terminated): lines `KEY=VALUE` with an
 * optional `export ` prefix; blank lines and `#` comments are skipped; VALUE may be
 * 'single quoted' (literal), "double quoted" (\n \t \" \\ escapes, may span lines) or bare
 * (trailing ` # comment` and surrounding blanks removed). Returns 0, fn's non-zero code,
 * ZBSO_ENOMEM, or ZBSO_EINVAL with err naming the line number and the problem (no `=`, a
 * bad key, an unterminated quote, text after a closing quote, a value over
 * DOTENV_VALUE_MAX). */
int dotenv_parse(const char *text, size_t len, dotenv_fn fn, void *ctx, zbso_err *err);

#endif
