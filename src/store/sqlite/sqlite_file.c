/* sqlite_file.c: the SQLite backend's watch over its files: that the database can be
 * written before it is opened, that the files it writes are still the ones at its path
 * (not deleted or replaced), and the rescue of a database whose file went away while
 * serving. Knows nothing of units of work; sqlite_engine.c decides when to call it. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/sqlite/sqliteInt.h"
#include "util/log.h"

/* Copies path's directory into out ("." for a bare name). */
static void dir_of(const char *path, char *out, size_t cap)
{
    char tmp[SQ_PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    snprintf(out, cap, "%s", dirname(tmp));
}

int sq_file_check_writable(const char *path, zbso_err *err)
{
    char dir[SQ_PATH_MAX];
    dir_of(path, dir, sizeof dir);
    /* No SQLite connection to path exists yet, so closing this descriptor cannot drop
     * anybody's POSIX locks. */
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
    } else if (errno != ENOENT) {
        return err_set(err, ZBSO_ESTORE, "cannot write database file %s: %s; zbso needs to"
                       " write it (check its owner and mode, the file system, or an"
                       " immutable attribute)", path, strerror(errno));
    }
    if (access(dir, W_OK) != 0)
        return err_set(err, ZBSO_ESTORE, "cannot write the directory %s of database file %s:"
                       " %s; zbso needs to create %s-wal and %s-shm there", dir, path,
                       strerror(errno), path, path);
    return 0;
}

int sq_file_id_open(sq_file_id *id, const char *path, zbso_err *err)
{
    char wal[SQ_PATH_MAX + 8];
    struct stat sb;
    snprintf(wal, sizeof wal, "%s-wal", path);
    id->db_fd = open(path, O_RDONLY | O_CLOEXEC);
    id->wal_fd = open(wal, O_RDONLY | O_CLOEXEC);
    if (id->db_fd < 0 || id->wal_fd < 0)
        return err_set(err, ZBSO_ESTORE, "cannot watch database file %s: %s", path,
                       strerror(errno));
    if (fstat(id->db_fd, &sb) != 0)
        return err_set(err, ZBSO_ESTORE, "cannot stat database file %s: %s", path,
                       strerror(errno));
    id->db_dev = sb.st_dev;
    id->db_ino = sb.st_ino;
    if (fstat(id->wal_fd, &sb) != 0)
        return err_set(err, ZBSO_ESTORE, "cannot stat %s: %s", wal, strerror(errno));
    id->wal_dev = sb.st_dev;
    id->wal_ino = sb.st_ino;
    return 0;
}

void sq_file_id_close(sq_file_id *id)
{
    if (id->db_fd >= 0)
        close(id->db_fd);
    if (id->wal_fd >= 0)
        close(id->wal_fd);
    id->db_fd = id->wal_fd = -1;
}

/* What became of one watched file (fd, as opened from path): NULL when path still names
 * it, else the words for the message. */
static const char *file_fate(int fd, dev_t dev, ino_t ino, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno != ENOENT)
            return "made inaccessible";
        return fstat(fd, &sb) == 0 && sb.st_nlink > 0 ? "moved away" : "deleted";
    }
    if (sb.st_dev != dev || sb.st_ino != ino)
        return "replaced by another file";
    return NULL;
}

int sq_file_id_check(const sq_file_id *id, const char *path, zbso_err *err)
{
    char wal[SQ_PATH_MAX + 8];
    const char *fate = file_fate(id->db_fd, id->db_dev, id->db_ino, path);
    if (fate != NULL)
        return err_set(err, ZBSO_EUNAVAIL, "database file %s was %s while zbso was"
                       " running; no change is stored or acknowledged any more, restart"
                       " zbso serve", path, fate);
    snprintf(wal, sizeof wal, "%s-wal", path);
    fate = file_fate(id->wal_fd, id->wal_dev, id->wal_ino, wal);
    if (fate != NULL)
        return err_set(err, ZBSO_EUNAVAIL, "the WAL file %s of database %s was %s while"
                       " zbso was running; no change is stored or acknowledged any more,"
                       " restart zbso serve", wal, path, fate);
    return 0;
}

/* fsyncs the file or directory at path. Returns 0 or -1 with errno. */
static int sync_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* Writes a standalone copy (rollback-journal mode, synced) of what db has committed to
 * the new file `to`. Returns 0 or ZBSO_ESTORE with err. */
static int copy_database(sqlite3 *db, const char *to, zbso_err *err)
{
    sqlite3 *dst = NULL;
    int rc = sqlite3_open_v2(to, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                             SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(dst, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_backup *b = sqlite3_backup_init(dst, "main", db, "main");
        if (b == NULL) {
            rc = sqlite3_errcode(dst);
        } else {
            rc = sqlite3_backup_step(b, -1);
            int fin = sqlite3_backup_finish(b);
            rc = rc == SQLITE_DONE ? fin : rc;
        }
    }
    /* The copy carries the WAL mode of its source; a file that needs no -wal beside it
     * is safer to hand over (zbso turns WAL on again when it opens it). */
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(dst, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        err_set(err, ZBSO_ESTORE, "cannot copy the database to %s: %s", to,
                dst != NULL ? sqlite3_errmsg(dst) : "out of memory");
        sqlite3_close(dst);
        return ZBSO_ESTORE;
    }
    if (sqlite3_close(dst) != SQLITE_OK || sync_path(to) != 0)
        return err_set(err, ZBSO_ESTORE, "cannot sync the copy %s: %s", to, strerror(errno));
    return 0;
}

/* True when path names the file of (dev, ino); false when absent or another file. */
static bool is_file(const char *path, dev_t dev, ino_t ino)
{
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_dev == dev && sb.st_ino == ino;
}

int sq_file_rescue(sqlite3 *db, const sq_file_id *id, const char *path, char *where,
                   size_t cap, zbso_err *err)
{
    char tmp[SQ_PATH_MAX + 64], wal[SQ_PATH_MAX + 8], dir[SQ_PATH_MAX];
    struct stat sb;
    snprintf(tmp, sizeof tmp, "%s.zbso-saved-%ld", path, (long)getpid());
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(tmp);
    int rc = copy_database(db, tmp, err);
    if (rc < 0)
        return rc;
    snprintf(where, cap, "%s", tmp);
    bool db_free = stat(path, &sb) != 0 && errno == ENOENT;
    bool db_ours = is_file(path, id->db_dev, id->db_ino);
    bool wal_ours = is_file(wal, id->wal_dev, id->wal_ino);
    /* Our -wal belongs to our old file: beside any other file at path (the copy, or one
     * that replaced ours) SQLite would replay it onto that file at the next open. The
     * copy holds all of it. */
    if (wal_ours && !db_ours && unlink(wal) == 0)
        wal_ours = false;
    bool wal_free = stat(wal, &sb) != 0 && errno == ENOENT;
    /* An empty -wal that is not ours holds nothing of anyone: the one that a read
     * connection of this process creates when it opens after the deletion (SQLite makes the
     * file at the first read). It must not keep the copy from going back. */
    if (!wal_free && !wal_ours && sb.st_size == 0 && unlink(wal) == 0)
        wal_free = true;
    /* The copy goes to path only where it replaces nothing but this database's own
     * files: anything else stays untouched, and the copy beside it. */
    if (!(db_free || db_ours) || !(wal_free || wal_ours) || rename(tmp, path) != 0)
        return 0;
    snprintf(where, cap, "%s", path);
    if (wal_ours)
        unlink(wal);
    dir_of(path, dir, sizeof dir);
    if (sync_path(dir) != 0)
        log_warn("database %s: cannot sync directory %s after writing the database back: %s",
                 path, dir, strerror(errno));
    return 0;
}
