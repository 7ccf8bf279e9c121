/* log.c: leveled stderr logging. One write per line so lines from threads never mix, and
 * no line ever holds a line break of its own (control bytes come out as \xNN). */
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"

#define MSG_MAX 4096              /* bytes of a formatted message */
#define LINE_MAX_BYTES (MSG_MAX * 4 + 64)
#define LOG_PATH_MAX 4096

static int min_level = ZLOG_INFO;
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static log_sink_fn sink;          /* NULL: stderr */
static void *sink_arg;
static char log_path[LOG_PATH_MAX + 1]; /* "" while logging goes to the inherited stderr */

int log_level_parse(const char *name)
{
    static const struct { const char *name; int level; } names[] = {
        {"NOTSET", ZLOG_NOTSET}, {"DEBUG", ZLOG_DEBUG}, {"INFO", ZLOG_INFO},
        {"WARN", ZLOG_WARN}, {"WARNING", ZLOG_WARN}, {"ERROR", ZLOG_ERROR},
        {"CRITICAL", ZLOG_CRITICAL},
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
    if (level >= ZLOG_CRITICAL) return "CRITICAL";
    if (level >= ZLOG_ERROR) return "ERROR";
    if (level >= ZLOG_WARN) return "WARN";
    if (level >= ZLOG_INFO) return "INFO";
    return "DEBUG";
}

static const char hex_digits[] = "0123456789abcdef";

const char *log_escape(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool plain = c >= 0x20 && c < 0x7f && c != '\\' && c != '"';
        size_t need = plain ? 1 : 4;
        /* Keep room for "..." and the NUL unless this is the last byte and it fits. */
        size_t room = i + 1 == n ? 1 : 4;
        if (o + need + room > cap) {
            if (o + 4 > cap)
                o = cap >= 4 ? cap - 4 : 0;
            memcpy(out + o, "...", 3);
            out[o + 3] = '\0';
            return out;
        }
        if (plain) {
            out[o++] = (char)c;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex_digits[c >> 4];
            out[o++] = hex_digits[c & 15];
        }
    }
    out[o] = '\0';
    return out;
}

void log_set_sink(log_sink_fn fn, void *arg)
{
    pthread_mutex_lock(&sink_lock);
    sink = fn;
    sink_arg = arg;
    pthread_mutex_unlock(&sink_lock);
}

/* Appends msg to line (cap bytes, o used) with bytes below 0x20 and 0x7f as \xNN, leaving
 * room for a newline and a NUL. Returns the new length. */
static size_t add_escaped(char *line, size_t cap, size_t o, const char *msg)
{
    for (const char *p = msg; *p && o + 6 < cap; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f) {
            line[o++] = '\\';
            line[o++] = 'x';
            line[o++] = hex_digits[c >> 4];
            line[o++] = hex_digits[c & 15];
        } else {
            line[o++] = (char)c;
        }
    }
    return o;
}

/* Writes one finished line: the prefix, then msg with its control bytes escaped; or hands
 * the escaped msg to the sink. */
static void emit(int level, const char *msg)
{
    char line[LINE_MAX_BYTES];
    pthread_mutex_lock(&sink_lock);
    log_sink_fn fn = sink;
    void *arg = sink_arg;
    pthread_mutex_unlock(&sink_lock);
    if (fn != NULL) {
        line[add_escaped(line, sizeof line, 0, msg)] = '\0';
        fn(arg, level, line);
        return;
    }
    struct timespec ts = clk_now(CLOCK_REALTIME);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, level_name(level));
    size_t o = add_escaped(line, sizeof line, n > 0 ? (size_t)n : 0, msg);
    line[o++] = '\n';
    /* stderr is unbuffered: one fwrite is one write(2), so lines never interleave. */
    fwrite(line, 1, o, stderr);
}

void log_msg(int level, const char *fmt, ...)
{
    if (level < min_level)
        return;
    char msg[MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emit(level, msg);
}

static long long now_ms(void)
{
    return clk_mono_ns() / 1000000;
}

int log_limited(log_limit *ll, int level, const char *fmt, ...)
{
    if (level < min_level)
        return 0;
    long long now = now_ms();
    long long next = atomic_load(&ll->next_ms);
    if (now < next ||
        !atomic_compare_exchange_strong(&ll->next_ms, &next, now + LOG_LIMIT_INTERVAL_MS)) {
        atomic_fetch_add(&ll->suppressed, 1);
        return 0;
    }
    unsigned skipped = atomic_exchange(&ll->suppressed, 0);
    char msg[MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (skipped && n >= 0 && (size_t)n < sizeof msg)
        snprintf(msg + n, sizeof msg - (size_t)n, " (%u more like this suppressed)", skipped);
    emit(level, msg);
    return 1;
}

/* Points stderr at path (appending). Returns 0 or ZBSO_EIO. */
static int redirect(const char *path, zbso_err *err)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return err_set(err, ZBSO_EIO, "cannot open log file %s: %s", path, strerror(errno));
    fflush(stderr);
    if (fd != STDERR_FILENO && dup2(fd, STDERR_FILENO) < 0) {
        int e = errno;
        close(fd);
        return err_set(err, ZBSO_EIO, "cannot send the log to %s: %s", path, strerror(e));
    }
    if (fd != STDERR_FILENO)
        close(fd);
    return 0;
}

int log_open_file(const char *path, zbso_err *err)
{
    size_t n = strlen(path);
    if (n == 0 || n > LOG_PATH_MAX)
        return err_set(err, ZBSO_EIO, "log file name of %zu bytes: give 1 to %d bytes", n,
                       LOG_PATH_MAX);
    int rc = redirect(path, err);
    if (rc == 0)
        memcpy(log_path, path, n + 1);
    return rc;
}

int log_reopen(zbso_err *err)
{
    if (!log_path[0])
        return 1;
    return redirect(log_path, err);
}
