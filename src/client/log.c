/* log.c: libzbso's log API (zbso_log_*) over util/log, and its level at load time from
 * ZBSO_LOG_LEVEL: a library inside someone else's process says little unless asked
 * (WARNING, as Zeus's Python logger), and a host such as the Python binding takes the
 * lines over. */
#include <stdio.h>
#include <stdlib.h>

#include "util/log.h"
#include "zbso/zbso.h"

/* Runs when libzbso is loaded, before any of its functions can be called. */
__attribute__((constructor)) static void log_level_from_env(void)
{
    const char *v = getenv("ZBSO_LOG_LEVEL");
    int level = v != NULL && v[0] != '\0' ? log_level_parse(v) : ZLOG_WARN;
    if (level < 0) {
        fprintf(stderr, "libzbso: ignoring ZBSO_LOG_LEVEL='%.64s': not one of DEBUG, INFO, "
                        "WARNING, ERROR, CRITICAL (logging at WARNING)\n", v);
        level = ZLOG_WARN;
    }
    log_set_level(level);
}

void zbso_log_set_handler(zbso_log_fn fn, void *arg)
{
    log_set_sink(fn, arg);
}

int zbso_log_set_level(int level)
{
    int old = log_get_level();
    log_set_level(level);
    return old;
}
