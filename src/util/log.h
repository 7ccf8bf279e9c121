/* log.h: leveled logging to stderr, one line per call, thread-safe. Levels follow Python's
 * logging names because ZEUS_BSO_LOG_LEVEL uses them. A line never spans lines: control
 * characters in a message are written as \xNN; text a client chose (a path, a job id) goes
 * through log_escape first. Repeated messages can be rate-limited (log_limited). */
#ifndef ZBSO_UTIL_LOG_H
#define ZBSO_UTIL_LOG_H

#include <stdatomic.h>
#include <stddef.h>

#include "util/err.h"

enum log_level { ZLOG_NOTSET = 0, ZLOG_DEBUG = 10, ZLOG_INFO = 20, ZLOG_WARN = 30,
                 ZLOG_ERROR = 40, ZLOG_CRITICAL = 50 };

/* Parses NOTSET|DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL (any case). Returns the level, or
 * -1 when the name is none of those. */
int log_level_parse(const char *name);

/* Sets the minimum level that is written (default INFO). */
void log_set_level(int level);
int log_get_level(void);

/* Writes "<utc time> <LEVEL> <message>\n" to stderr when level >= the set level. Bytes
 * below 0x20 and 0x7f in the formatted message are written as \xNN. */
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(ZLOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(ZLOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(ZLOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(ZLOG_ERROR, __VA_ARGS__)

/* Where lines go instead of stderr (libzbso inside Python hands them to `logging`): fn gets
 * the level and the message, control bytes already escaped, without time or level prefix.
 * Called on the thread that logs; fn must not log itself. */
typedef void (*log_sink_fn)(void *arg, int level, const char *msg);

/* Sends later lines to fn(arg, ...) (NULL: back to stderr). Thread-safe. */
void log_set_sink(log_sink_fn fn, void *arg);

/* Copies the n bytes at s into out (cap >= 4 bytes, always NUL-terminated) with every byte
 * that is not printable ASCII, and '\\' and '"', written as \xNN, so that client-chosen
 * text can neither end a log line nor pass for a field separator it is not. When the
 * escaped text does not fit, it is cut at a whole escape and ends in "...". Returns out. */
const char *log_escape(const char *s, size_t n, char *out, size_t cap);

/* A rate limit for one kind of message: at most one line per LOG_LIMIT_INTERVAL_MS; the
 * next line written says how many were suppressed since the last one. Zero-initialize
 * (LOG_LIMIT_INIT); no cleanup. */
#define LOG_LIMIT_INTERVAL_MS 1000
typedef struct log_limit {
    atomic_llong next_ms;      /* monotonic ms before which lines are suppressed */
    atomic_uint suppressed;    /* lines suppressed since the last one written */
} log_limit;
#define LOG_LIMIT_INIT {0, 0}

/* Like log_msg, through the limit ll. Returns 1 when the line was written, else 0. */
int log_limited(log_limit *ll, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sends every later line (and stderr itself) to the file at path, opened for appending
 * (created 0644 when missing), and remembers path for log_reopen. Returns 0, or ZBSO_EIO
 * with err naming the path and the reason (logging then stays where it was). */
int log_open_file(const char *path, zbso_err *err);

/* Opens the remembered log file again (after logrotate moved it). Returns 0; 1 when no
 * file was opened (logging goes to the inherited stderr, nothing to do); or ZBSO_EIO with
 * err set, logging staying on the old file. */
int log_reopen(zbso_err *err);

#endif
