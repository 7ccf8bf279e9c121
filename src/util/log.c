/* log.c: leveled stderr logging. One fprintf per line so lines from threads never mix. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <strings.h>
#include <time.h>

static int min_level = LOG_INFO;

int log_level_parse(const char *name)
{
    static const struct { const char *name; int level; } names[] = {
        {"NOTSET", LOG_NOTSET}, {"DEBUG", LOG_DEBUG}, {"INFO", LOG_INFO},
        {"WARN", LOG_WARN}, {"WARNING", LOG_WARN}, {"ERROR", LOG_ERROR},
        {"CRITICAL", LOG_CRITICAL},
    };
    if (!name)
        return -1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(name, names[i].name) == 0)
            return names[i].level;
    return -1;
}

void log_set_level(int level) { min_level = level; }
int log_get_level(void) { return min_level; }

static const char *level_name(int level)
{
    if (level >= LOG_CRITICAL) return "CRITICAL";
    if (level >= LOG_ERROR) return "ERROR";
    if (level >= LOG_WARN) return "WARN";
    if (level >= LOG_INFO) return "INFO";
    return "DEBUG";
}

void log_msg(int level, const char *fmt, ...)
{
    if (level < min_level)
        return;
    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, level_name(level));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}
