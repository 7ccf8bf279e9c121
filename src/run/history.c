/* history.c: the run's log directory (seed 004's build_logdir) and its history.csv, one
 * row per try, appended and flushed as the run goes so a crash keeps what was done. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "run/runInt.h"

/* mkdir -p path. Returns 0 or ZBSO_EIO naming the directory that could not be made. */
static int make_dirs(const char *path, zbso_err *err)
{
    char buf[RUN_PATH_MAX];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof buf)
        return err_set(err, ZBSO_EIO, "log directory '%s' is empty or too long", path);
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char saved = buf[i];
        buf[i] = '\0';
        struct stat sb;
        if (mkdir(buf, 0777) < 0 && !(errno == EEXIST && stat(buf, &sb) == 0 &&
                                      S_ISDIR(sb.st_mode)))
            return err_set(err, ZBSO_EIO, "cannot create the log directory '%s': %s", buf,
                           errno == EEXIST ? "a file of that name exists" : strerror(errno));
        buf[i] = saved;
    }
    return 0;
}

int run_history_make_base(const char *base, zbso_err *err)
{
    return make_dirs(base, err);
}

int run_history_open(run_history *h, const char *base, const zbso_job_spec *spec,
                     int64_t recurrences, zbso_err *err)
{
    char job[ZBSO_ID_MAX + 1], beta[40], stamp[32], path[RUN_PATH_MAX + 16];
    time_t now = time(NULL);
    struct tm tm;
    int rc, n;

    h->csv = NULL;
    if ((rc = make_dirs(base, err)) < 0)
        return rc;
    /* A job id may hold any character; a '/' would make a subdirectory. */
    snprintf(job, sizeof job, "%s", spec->job_id);
    for (char *p = job; *p; p++)
        if (*p == '/')
            *p = '_';
    if (spec->has_beta_knob)
        snprintf(beta, sizeof beta, "%g", spec->beta_knob);
    else
        snprintf(beta, sizeof beta, "none");
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &tm);
    n = snprintf(h->dir, sizeof h->dir, "%s/%s+x%lld+eta%g+beta%s+%s", base, job,
                 (long long)recurrences, spec->eta_knob, beta, stamp);
    if (n < 0 || (size_t)n >= sizeof h->dir)
        return err_set(err, ZBSO_EIO, "log directory path under '%s' is too long", base);
    if ((rc = make_dirs(h->dir, err)) < 0)
        return rc;
    snprintf(path, sizeof path, "%s/history.csv", h->dir);
    /* "e": close-on-exec, so training commands do not inherit it. */
    if ((h->csv = fopen(path, "ae")) == NULL)
        return err_set(err, ZBSO_EIO, "cannot open '%s': %s", path, strerror(errno));
    if (ftell(h->csv) == 0 &&
        (fputs("recurrence,try,batch_size,time,energy,cost,reached\n", h->csv) < 0 ||
         fflush(h->csv) != 0)) {
        rc = err_set(err, ZBSO_EIO, "cannot write '%s': %s", path, strerror(errno));
        run_history_close(h);
        return rc;
    }
    return 0;
}

int run_history_append(run_history *h, const run_history_row *r, zbso_err *err)
{
    if (fprintf(h->csv, "%lld,%lld,%lld,%.6f,%.6f,%.6f,%s\n", (long long)r->recurrence,
                (long long)r->try_no, (long long)r->batch_size, r->time_s, r->energy_j,
                r->cost, r->reached ? "true" : "false") < 0 ||
        fflush(h->csv) != 0)
        return err_set(err, ZBSO_EIO, "cannot write %s/history.csv: %s", h->dir,
                       strerror(errno));
    return 0;
}

void run_history_close(run_history *h)
{
    if (h->csv != NULL)
        fclose(h->csv);
    h->csv = NULL;
}
