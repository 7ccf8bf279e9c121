/* sqlite_backup.c: online copies of a SQLite store (backup.h) for `zbso db backup`, and
 * the integrity check of a file before `zbso db restore`. Its own connections: it never
 * touches a running server's writer. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/backup.h"

#define CHECK_MSG_MAX 200

/* Runs integrity_check on db: 0, or -1 with the first line SQLite reports in msg. */
static int integrity(sqlite3 *db, char *msg, size_t cap)
{
    sqlite3_stmt *s = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, NULL) != SQLITE_OK) {
        snprintf(msg, cap, "%s", sqlite3_errmsg(db));
        goto out;
    }
    int step = sqlite3_step(s);
    if (step != SQLITE_ROW) {
        snprintf(msg, cap, "%s", sqlite3_errmsg(db));
        goto out;
    }
    const char *first = (const char *)sqlite3_column_text(s, 0);
    if (first != NULL && strcmp(first, "ok") == 0)
        rc = 0;
    else
        snprintf(msg, cap, "%.*s", CHECK_MSG_MAX, first != NULL ? first : "(no answer)");
out:
    sqlite3_finalize(s);
    return rc;
}

int store_sqlite_check(const char *path, zbso_err *err)
{
    sqlite3 *db = NULL;
    char msg[CHECK_MSG_MAX + 32];
    int rc = 0;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return err_set(err, ZBSO_EINVAL, "%s: %s", path, strerror(errno));
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        rc = err_set(err, ZBSO_EINVAL, "%s: %s", path,
                     db != NULL ? sqlite3_errmsg(db) : "out of memory");
        goto out;
    }
    if (integrity(db, msg, sizeof msg) < 0)
        rc = err_set(err, ZBSO_EINVAL, "%s fails SQLite's integrity check: %s", path, msg);
out:
    sqlite3_close(db);
    return rc;
}

/* Flushes path's data to disk (and, for a rename, its directory's entry). */
static int sync_path(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static void dir_of(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(out, cap, ".");
    else if (slash == path)
        snprintf(out, cap, "/");
    else
        snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

int store_sqlite_backup(const char *url, const char *file, int pages_per_step,
                        void (*progress)(void *ctx, int remaining, int total), void *ctx,
                        zbso_err *err)
{
    sqlite3 *src = NULL, *dst = NULL;
    sqlite3_backup *b = NULL;
    char tmp[4096 + 8], dir[4096], msg[CHECK_MSG_MAX + 32];
    int rc = 0;
    bool made = false;
    const char *sep = strstr(url, ":///");
    const char *path = sep != NULL ? sep + 4 : "";
    if (strncmp(url, "sqlite:///", 10) != 0 && strncmp(url, "sqlite+aiosqlite:///", 20) != 0)
        return err_set(err, ZBSO_EINVAL, "zbso db backup copies SQLite databases only (got"
                       " \"%.100s\"); for PostgreSQL use pg_dump, for MySQL/MariaDB"
                       " mariadb-dump, or zbso db copy URL sqlite:///FILE", url);
    if (path[0] == '\0' || strlen(file) >= sizeof dir || file[0] == '\0')
        return err_set(err, ZBSO_EINVAL, "no file path in \"%.200s\" or the backup file", url);
    if (pages_per_step < 1)
        pages_per_step = 1;
    if (access(file, F_OK) == 0)
        return err_set(err, ZBSO_EINVAL, "%s exists: a backup never overwrites a file"
                       " (remove it, or name another)", file);
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    if (access(path, F_OK) != 0)
        return err_set(err, ZBSO_EINVAL, "%s: %s", path, strerror(errno));
    /* Read-write without CREATE: a WAL database needs its -shm file written even to read. */
    if (sqlite3_open_v2(path, &src, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        rc = err_set(err, ZBSO_ESTORE, "cannot open %s: %s", path,
                     src != NULL ? sqlite3_errmsg(src) : "out of memory");
        goto out;
    }
    sqlite3_busy_timeout(src, 5000);
    /* One read transaction across every step: the backup copies one snapshot, and a
     * writer's commit meanwhile does not restart it. */
    if (sqlite3_exec(src, "BEGIN; SELECT count(*) FROM sqlite_master;", NULL, NULL, NULL) !=
        SQLITE_OK) {
        rc = err_set(err, ZBSO_ESTORE, "cannot read %s: %s", path, sqlite3_errmsg(src));
        goto out;
    }
    unlink(tmp);
    if (sqlite3_open_v2(tmp, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        rc = err_set(err, ZBSO_EIO, "cannot create %s: %s", tmp,
                     dst != NULL ? sqlite3_errmsg(dst) : "out of memory");
        goto out;
    }
    made = true;
    if ((b = sqlite3_backup_init(dst, "main", src, "main")) == NULL) {
        rc = err_set(err, ZBSO_ESTORE, "cannot back up %s: %s", path, sqlite3_errmsg(dst));
        goto out;
    }
    int step;
    while ((step = sqlite3_backup_step(b, pages_per_step)) == SQLITE_OK ||
           step == SQLITE_BUSY || step == SQLITE_LOCKED) {
        if (progress != NULL)
            progress(ctx, sqlite3_backup_remaining(b), sqlite3_backup_pagecount(b));
        if (step != SQLITE_OK)
            sqlite3_sleep(10);
    }
    if (progress != NULL)
        progress(ctx, sqlite3_backup_remaining(b), sqlite3_backup_pagecount(b));
    int fin = sqlite3_backup_finish(b);
    b = NULL;
    if (step != SQLITE_DONE || fin != SQLITE_OK) {
        rc = err_set(err, ZBSO_ESTORE, "backing up %s into %s failed: %s", path, tmp,
                     sqlite3_errstr(step != SQLITE_DONE ? step : fin));
        goto out;
    }
    /* The copy keeps the source's WAL mode; fold its WAL into the file and leave one
     * self-contained file behind. */
    if (sqlite3_exec(dst, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL) != SQLITE_OK ||
        integrity(dst, msg, sizeof msg) < 0) {
        rc = err_set(err, ZBSO_ESTORE, "the backup %s fails its check: %s", tmp,
                     sqlite3_errmsg(dst));
        goto out;
    }
    if (sqlite3_close(dst) != SQLITE_OK) {
        dst = NULL;
        rc = err_set(err, ZBSO_EIO, "cannot close %s", tmp);
        goto out;
    }
    dst = NULL;
    dir_of(file, dir, sizeof dir);
    if (sync_path(tmp) != 0 || rename(tmp, file) != 0 || sync_path(dir) != 0) {
        rc = err_set(err, ZBSO_EIO, "cannot write %s: %s", file, strerror(errno));
        goto out;
    }
    made = false;
out:
    if (b != NULL)
        sqlite3_backup_finish(b);
    sqlite3_close(dst);
    if (src != NULL) {
        sqlite3_exec(src, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close(src);
    }
    if (made)
        unlink(tmp);
    return rc;
}
