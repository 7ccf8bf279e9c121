/* pwstate.c: the records of GPUs' original power limits (SPEC §6.1): one file per GPU,
 * mode 0600, in a directory of this user's (0700), holding the limit the GPU had before
 * any zbso process lowered it, the boot it belongs to and the process that holds it.
 * A later process restores from the record, never from the limit it finds. No NVML here. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "power/powerInt.h"

#define RECORD_MAGIC "zbso power limit record 1"
#define RECORD_MAX 1024            /* a larger file is not a record of ours */
#define BOOT_ID_FILE "/proc/sys/kernel/random/boot_id"

/* Makes dir (mode 0700) unless it exists; an existing one must be a directory of this
 * user's that nobody else may write (not a symlink), so another user cannot plant
 * records or swap files under us. Returns 0 or ZBSO_ECONFIG naming dir. */
static int make_private_dir(const char *dir, zbso_err *err)
{
    struct stat st;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return err_set(err, ZBSO_ECONFIG, "cannot create the power-limit state directory "
                       "'%s': %s (ZBSO_STATE_DIR chooses another)", dir, strerror(errno));
    if (lstat(dir, &st) < 0)
        return err_set(err, ZBSO_ECONFIG, "cannot read the power-limit state directory "
                       "'%s': %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) != 0)
        return err_set(err, ZBSO_ECONFIG, "the power-limit state directory '%s' is not a "
                       "directory of user %ld that only it may write; refusing to keep GPU "
                       "limits there (ZBSO_STATE_DIR chooses another)", dir,
                       (long)geteuid());
    return 0;
}

int pw_state_dir(char *out, size_t cap, zbso_err *err)
{
    const char *env = getenv("ZBSO_STATE_DIR");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n;
    if (env != NULL && env[0] != '\0')
        n = snprintf(out, cap, "%s", env);
    else if (geteuid() == 0)
        n = snprintf(out, cap, "/run/zbso");
    else if (xdg != NULL && xdg[0] == '/')
        n = snprintf(out, cap, "%s/zbso", xdg);
    else
        n = snprintf(out, cap, "/tmp/zbso-%ld", (long)geteuid());
    if (n < 0 || (size_t)n >= cap)
        return err_set(err, ZBSO_ECONFIG, "the power-limit state directory '%.100s...' is "
                       "over %zu bytes long", out, cap - 1);
    return make_private_dir(out, err);
}

int pw_boot_id(char *out, size_t cap)
{
    FILE *f = fopen(BOOT_ID_FILE, "re");
    if (f == NULL)
        return ZBSO_EIO;
    bool ok = fgets(out, (int)cap, f) != NULL;
    fclose(f);
    if (!ok)
        return ZBSO_EIO;
    out[strcspn(out, "\n")] = '\0';
    return out[0] != '\0' ? 0 : ZBSO_EIO;
}

int pw_proc_start(long pid, unsigned long long *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return ZBSO_ENOTFOUND;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Field 2 is "(comm)", which may hold spaces and parentheses: skip to its last ')'.
     * Then state is field 3 and starttime field 22. */
    char *p = strrchr(buf, ')');
    if (p == NULL)
        return ZBSO_ENOTFOUND;
    p++;
    char state = 0;
    for (int field = 3; field <= 22; field++) {
        while (*p == ' ')
            p++;
        if (*p == '\0')
            return ZBSO_ENOTFOUND;
        if (field == 3)
            state = *p;
        if (field == 22) {
            char *end;
            *start = strtoull(p, &end, 10);
            return end != p && state != 'Z' && state != 'X' ? 0 : ZBSO_ENOTFOUND;
        }
        p += strcspn(p, " ");
    }
    return ZBSO_ENOTFOUND;
}

bool pw_record_owner_alive(const pw_record *r)
{
    unsigned long long start;
    return r->pid > 0 && pw_proc_start(r->pid, &start) == 0 && start == r->pid_start;
}

int pw_state_lock(const char *dir, zbso_err *err)
{
    char path[PW_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return err_set(err, ZBSO_ECONFIG, "cannot open '%s': %s", path, strerror(errno));
    while (flock(fd, LOCK_EX) < 0)
        if (errno != EINTR) {
            int e = errno;
            close(fd);
            return err_set(err, ZBSO_ECONFIG, "cannot lock '%s': %s", path, strerror(e));
        }
    return fd;
}

void pw_state_unlock(int fd)
{
    if (fd >= 0)
        close(fd);
}

/* The record file of GPU uuid: dir/power-limit-<uuid>, the UUID's bytes other than
 * letters, digits and '-' written as '_' (a UUID from NVML is "GPU-" and hex). */
static void record_path(const char *dir, const char *uuid, char *out, size_t cap)
{
    char safe[NVML_UUID_MAX];
    size_t i = 0;
    for (; uuid[i] != '\0' && i < sizeof safe - 1; i++) {
        char c = uuid[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '-';
        safe[i] = ok ? c : '_';
    }
    safe[i] = '\0';
    snprintf(out, cap, "%s/power-limit-%s", dir, safe);
}

int pw_record_load(const char *dir, const char *uuid, pw_record *r, zbso_err *err)
{
    char path[PW_PATH_MAX + NVML_UUID_MAX + 16], buf[RECORD_MAX + 1];
    record_path(dir, uuid, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno == ENOENT ? ZBSO_ENOTFOUND
                               : err_set(err, ZBSO_EINVAL, "cannot read '%s': %s", path,
                                         strerror(errno));
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0 || n == (ssize_t)sizeof buf - 1)
        return err_set(err, ZBSO_EINVAL, "'%s' is not a power-limit record", path);
    buf[n] = '\0';
    memset(r, 0, sizeof *r);
    int got = 0;
    char *save = NULL;
    bool magic = false;
    for (char *line = strtok_r(buf, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char *v = strchr(line, ' ');
        if (!magic) {
            magic = strcmp(line, RECORD_MAGIC) == 0;
            if (!magic)
                break;
            continue;
        }
        if (v == NULL)
            continue;
        *v++ = '\0';
        char *end = NULL;
        if (!strcmp(line, "boot_id") && strlen(v) < sizeof r->boot_id) {
            snprintf(r->boot_id, sizeof r->boot_id, "%s", v);
            got |= 1;
        } else if (!strcmp(line, "uuid") && strlen(v) < sizeof r->uuid) {
            snprintf(r->uuid, sizeof r->uuid, "%s", v);
            got |= 2;
        } else if (!strcmp(line, "original_mw")) {
            unsigned long long mw = strtoull(v, &end, 10);
            if (end != v && *end == '\0' && mw > 0 && mw <= UINT32_MAX) {
                r->original_mw = (unsigned)mw;
                got |= 4;
            }
        } else if (!strcmp(line, "pid")) {
            long pid = strtol(v, &end, 10);
            if (end != v && *end == '\0' && pid > 0) {
                r->pid = pid;
                got |= 8;
            }
        } else if (!strcmp(line, "pid_start")) {
            r->pid_start = strtoull(v, &end, 10);
            if (end != v && *end == '\0')
                got |= 16;
        }
    }
    if (!magic || got != 31)
        return err_set(err, ZBSO_EINVAL, "'%s' is not a power-limit record", path);
    return 0;
}

int pw_record_save(const char *dir, const pw_record *r, zbso_err *err)
{
    char path[PW_PATH_MAX + NVML_UUID_MAX + 16], tmp[sizeof path + 32], text[RECORD_MAX];
    record_path(dir, r->uuid, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    int n = snprintf(text, sizeof text,
                     RECORD_MAGIC "\nboot_id %s\nuuid %s\noriginal_mw %u\npid %ld\n"
                     "pid_start %llu\n",
                     r->boot_id, r->uuid, r->original_mw, r->pid, r->pid_start);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return err_set(err, ZBSO_EIO, "cannot create '%s': %s", tmp, strerror(errno));
    bool ok = n > 0 && write(fd, text, (size_t)n) == n && fsync(fd) == 0;
    int e = errno;
    ok = close(fd) == 0 && ok;
    /* rename: a reader sees the old record or the new one, never half of one. */
    if (!ok || rename(tmp, path) < 0) {
        e = ok ? errno : e;
        unlink(tmp);
        return err_set(err, ZBSO_EIO, "cannot write '%s': %s", path, strerror(e));
    }
    return 0;
}

void pw_record_remove(const char *dir, const char *uuid, long pid)
{
    char path[PW_PATH_MAX + NVML_UUID_MAX + 16];
    pw_record r;
    if (pw_record_load(dir, uuid, &r, NULL) == 0 && r.pid == pid) {
        record_path(dir, uuid, path, sizeof path);
        unlink(path);
    }
}
