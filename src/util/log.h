/* log.h: leveled logging to stderr, one line per call, thread-safe. Levels follow Python's
 * logging names because ZEUS_BSO_LOG_LEVEL uses them. */
#ifndef ZBSO_UTIL_LOG_H
#define ZBSO_UTIL_LOG_H

enum log_level { LOG_NOTSET = 0, LOG_DEBUG = 10, LOG_INFO = 20, LOG_WARN = 30,
                 LOG_ERROR = 40, LOG_CRITICAL = 50 };

/* Parses NOTSET|DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL (any case). Returns the level, or
 * -1 when the name is none of those. */
int log_level_parse(const char *name);

/* Sets the minimum level that is written (default INFO). */
void log_set_level(int level);
int log_get_level(void);

/* Writes "<utc time> <LEVEL> <message>\n" to stderr when level >= the set level. */
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
