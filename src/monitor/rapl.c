/* rapl.c: reading RAPL energy counters through powercap files, folding their wraps into
 * 64-bit totals, and the thread that reads them often enough to see every wrap. Only
 * reads files; a file that cannot be read is an error naming it, never a guessed value. */
#include "monitor/rapl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/clock.h"

#define VALUE_MAX 64 /* bytes of a counter file's text */

const char *rapl_root(void)
{
    const char *r = getenv("ZBSO_POWERCAP_ROOT");
    return r && r[0] ? r : RAPL_DEFAULT_ROOT;
}

uint64_t rapl_fold(uint64_t last_uj, uint64_t cur_uj, uint64_t range_uj)
{
    if (cur_uj >= last_uj)
        return cur_uj - last_uj;
    /* A counter above its own range is the kernel's odd report, not a wrap past it. */
    return (range_uj > last_uj ? range_uj - last_uj : 0) + cur_uj;
}

/* The text a permission failure adds: what makes RAPL unreadable and what to do. */
static const char *errno_hint(int e)
{
    if (e == EACCES || e == EPERM)
        return " (RAPL counters are readable only by root on kernels with the CVE-2020-8694 "
               "fix: run as root, or make the energy_uj files readable)";
    return "";
}

/* Reads the whole small file path (at most VALUE_MAX - 1 bytes) into buf as a string.
 * Returns 0, or ZBSO_ERUNTIME naming the file and the system's error. */
static int read_text(const char *path, char *buf, size_t len, zbso_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return err_set(err, ZBSO_ERUNTIME, "cannot open %s: %s%s", path, strerror(e),
                       errno_hint(e));
    }
    ssize_t got;
    do
        got = read(fd, buf, len - 1);
    while (got < 0 && errno == EINTR);
    int e = errno;
    close(fd);
    if (got < 0)
        return err_set(err, ZBSO_ERUNTIME, "cannot read %s: %s%s", path, strerror(e),
                       errno_hint(e));
    buf[got] = '\0';
    return 0;
}

/* Reads the unsigned decimal number in file path. Returns 0 with *out, or ZBSO_ERUNTIME
 * naming the file and what it held. */
static int read_u64(const char *path, uint64_t *out, zbso_err *err)
{
    char buf[VALUE_MAX];
    int rc = read_text(path, buf, sizeof buf, err);
    if (rc < 0)
        return rc;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    while (end && (*end == '\n' || *end == ' '))
        end++;
    if (end == buf || !end || *end != '\0' || errno != 0 || buf[0] == '-')
        return err_set(err, ZBSO_ERUNTIME, "%s holds '%.40s', not an energy in uJ", path,
                       buf);
    *out = (uint64_t)v;
    return 0;
}

/* N when name is "intel-rapl:N" (a package zone), else -1. */
static int zone_number(const char *name)
{
    static const char prefix[] = "intel-rapl:";
    if (strncmp(name, prefix, sizeof prefix - 1) != 0)
        return -1;
    const char *p = name + sizeof prefix - 1;
    if (*p < '0' || *p > '9')
        return -1;
    char *end = NULL;
    long v = strtol(p, &end, 10);
    if (*end != '\0' || v < 0 || v > 1000000)
        return -1;
    return (int)v;
}

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int rapl_list(const char *root, int *indices, unsigned *n, char *why, size_t why_len,
              zbso_err *err)
{
    *n = 0;
    if (why && why_len)
        why[0] = '\0';
    DIR *d = opendir(root);
    if (!d) {
        if (why && why_len)
            snprintf(why, why_len, "RAPL is not available: cannot read %s: %s", root,
                     strerror(errno));
        return 0;
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int z = zone_number(de->d_name);
        if (z < 0)
            continue;
        if (*n == RAPL_ZONES_MAX) {
            rc = err_set(err, ZBSO_ECONFIG, "%s has more than %d RAPL package zones", root,
                         RAPL_ZONES_MAX);
            break;
        }
        indices[(*n)++] = z;
    }
    closedir(d);
    if (rc < 0) {
        *n = 0;
        return rc;
    }
    qsort(indices, *n, sizeof *indices, int_cmp);
    if (*n == 0 && why && why_len)
        snprintf(why, why_len, "RAPL is not available: %s has no intel-rapl:N zone", root);
    return 0;
}

/* Opens the counter in directory dir: range and a first reading. Returns 0 or
 * ZBSO_ECONFIG with the file's error. */
static int open_counter(rapl_counter *c, const char *dir, zbso_err *err)
{
    char path[RAPL_PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/max_energy_range_uj", dir);
    if (n < 0 || (size_t)n >= sizeof path ||
        snprintf(c->path, sizeof c->path, "%s/energy_uj", dir) >= (int)sizeof c->path)
        return err_set(err, ZBSO_ECONFIG, "RAPL path '%.200s...' is too long", dir);
    if (read_u64(path, &c->range_uj, err) < 0 || read_u64(c->path, &c->last_uj, err) < 0) {
        err->code = ZBSO_ECONFIG;
        return ZBSO_ECONFIG;
    }
    if (c->range_uj == 0)
        return err_set(err, ZBSO_ECONFIG, "%s is 0: the counter's range is unknown", path);
    c->first_uj = c->last_uj;
    c->total_uj = 0;
    return 0;
}

/* Finds zone z's DRAM subzone (a directory intel-rapl:N:M in it whose name file says
 * "dram") and opens it. A subzone that cannot be read is skipped, as Zeus skips it.
 * Returns 0 (has_dram says whether one was found) or ZBSO_ECONFIG (path too long). */
static int open_dram(rapl_zone *z, const char *zdir, zbso_err *err)
{
    char prefix[32];
    snprintf(prefix, sizeof prefix, "intel-rapl:%d:", z->index);
    DIR *d = opendir(zdir);
    if (!d)
        return 0;
    struct dirent *de;
    int rc = 0;
    while (!z->has_dram && (de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char sub[RAPL_PATH_MAX], name_path[RAPL_PATH_MAX], name[VALUE_MAX];
        int n = snprintf(sub, sizeof sub, "%s/%s", zdir, de->d_name);
        if (n < 0 || (size_t)n >= sizeof sub ||
            snprintf(name_path, sizeof name_path, "%s/name", sub) >= (int)sizeof name_path) {
            rc = err_set(err, ZBSO_ECONFIG, "RAPL path '%.200s...' is too long", zdir);
            break;
        }
        zbso_err ignored;
        if (read_text(name_path, name, sizeof name, &ignored) < 0)
            continue;
        name[strcspn(name, "\n")] = '\0';
        if (strcmp(name, "dram") == 0 && open_counter(&z->dram, sub, &ignored) == 0)
            z->has_dram = true;
    }
    closedir(d);
    return rc;
}

int rapl_open(rapl_set *s, const char *root, const int *indices, unsigned n, zbso_err *err)
{
    memset(s, 0, sizeof *s);
    if (n > RAPL_ZONES_MAX)
        return err_set(err, ZBSO_ECONFIG, "%u CPU indices given; at most %d", n,
                       RAPL_ZONES_MAX);
    for (unsigned i = 0; i < n; i++) {
        rapl_zone *z = &s->zones[i];
        char zdir[RAPL_PATH_MAX];
        z->index = indices[i];
        for (unsigned k = 0; k < i; k++)
            if (indices[k] == indices[i])
                return err_set(err, ZBSO_ECONFIG, "CPU index %d is given twice", indices[i]);
        if (indices[i] < 0)
            return err_set(err, ZBSO_ECONFIG, "CPU index %d is negative", indices[i]);
        int len = snprintf(zdir, sizeof zdir, "%s/intel-rapl:%d", root, indices[i]);
        if (len < 0 || (size_t)len >= sizeof zdir)
            return err_set(err, ZBSO_ECONFIG, "RAPL root '%.200s...' is too long", root);
        if (access(zdir, F_OK) != 0)
            return err_set(err, ZBSO_ECONFIG,
                           "CPU index %d: no RAPL zone %s (%s)", indices[i], zdir,
                           strerror(errno));
        int rc = open_counter(&z->pkg, zdir, err);
        if (rc == 0)
            rc = open_dram(z, zdir, err);
        if (rc < 0) {
            char msg[ZBSO_ERR_MSG_MAX];
            snprintf(msg, sizeof msg, "%s", err->msg);
            return err_set(err, ZBSO_ECONFIG, "CPU index %d: %s", indices[i], msg);
        }
    }
    s->n = n;
    return 0;
}

/* Reads counter c and folds the reading in. Called with s->mu held. */
static int read_counter(rapl_counter *c, zbso_err *err)
{
    uint64_t cur;
    int rc = read_u64(c->path, &cur, err);
    if (rc < 0)
        return rc;
    c->total_uj += rapl_fold(c->last_uj, cur, c->range_uj);
    c->last_uj = cur;
    return 0;
}

/* Reads every counter of s. Called with s->mu held. */
static int read_all(rapl_set *s, zbso_err *err)
{
    for (unsigned i = 0; i < s->n; i++) {
        rapl_zone *z = &s->zones[i];
        int rc = read_counter(&z->pkg, err);
        if (rc == 0 && z->has_dram)
            rc = read_counter(&z->dram, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Locks s->mu when the thread's mutex exists (rapl_read works before rapl_start too). */
static void lock(rapl_set *s)
{
    if (s->started)
        pthread_mutex_lock(&s->mu);
}

static void unlock(rapl_set *s)
{
    if (s->started)
        pthread_mutex_unlock(&s->mu);
}

int rapl_read(rapl_set *s, uint64_t *pkg_uj, uint64_t *dram_uj, unsigned long *fail_seq,
              zbso_err *err)
{
    lock(s);
    int rc = read_all(s, err);
    for (unsigned i = 0; rc == 0 && i < s->n; i++) {
        if (pkg_uj)
            pkg_uj[i] = s->zones[i].pkg.total_uj;
        if (dram_uj)
            dram_uj[i] = s->zones[i].has_dram ? s->zones[i].dram.total_uj : 0;
    }
    if (fail_seq)
        *fail_seq = s->fail_seq;
    unlock(s);
    return rc;
}

void rapl_poll_once(rapl_set *s)
{
    zbso_err err;
    lock(s);
    if (read_all(s, &err) < 0) {
        s->fail_seq++;
        snprintf(s->fail_msg, sizeof s->fail_msg, "%s", err.msg);
    }
    s->polls++;
    unlock(s);
}

/* The thread: a round every period until told to stop, periods counted from a fixed start
 * (a late round does not push the later ones back, nor do rounds pile up after a stall). */
static void *poll_main(void *arg)
{
    rapl_set *s = arg;
    struct timespec next = clk_now(CLOCK_MONOTONIC);
    for (;;) {
        next = clk_ts_add(next, s->period_s);
        pthread_mutex_lock(&s->mu);
        int wrc = 0;
        while (!s->stop && wrc != ETIMEDOUT)
            wrc = pthread_cond_timedwait(&s->stop_cv, &s->mu, &next);
        bool stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop)
            break;
        rapl_poll_once(s);
        struct timespec cur = clk_now(CLOCK_MONOTONIC);
        if (cur.tv_sec > next.tv_sec + 1)
            next = cur;
    }
    return NULL;
}

int rapl_start(rapl_set *s, zbso_err *err)
{
    double period = RAPL_PERIOD_MAX_S;
    for (unsigned i = 0; i < s->n; i++) {
        const rapl_zone *z = &s->zones[i];
        double p = (double)z->pkg.range_uj / 1e6 / RAPL_POWER_BOUND_W / 4.0;
        if (p < period)
            period = p;
        if (z->has_dram) {
            p = (double)z->dram.range_uj / 1e6 / RAPL_POWER_BOUND_W / 4.0;
            if (p < period)
                period = p;
        }
    }
    s->period_s = period < RAPL_PERIOD_MIN_S ? RAPL_PERIOD_MIN_S : period;
    pthread_mutex_init(&s->mu, NULL);
    clk_cond_init_mono(&s->stop_cv);
    s->started = true;
    if (s->n == 0)
        return 0;
    int prc = pthread_create(&s->thread, NULL, poll_main, s);
    if (prc != 0) {
        rapl_close(s);
        return err_set(err, ZBSO_ERUNTIME, "cannot start the RAPL polling thread: %s",
                       strerror(prc));
    }
    s->running = true;
    return 0;
}

void rapl_close(rapl_set *s)
{
    if (!s->started)
        return;
    if (s->running) {
        pthread_mutex_lock(&s->mu);
        s->stop = true;
        pthread_cond_signal(&s->stop_cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
        s->running = false;
    }
    pthread_cond_destroy(&s->stop_cv);
    pthread_mutex_destroy(&s->mu);
    s->started = false;
}
