/* fault_fs.c: an LD_PRELOAD library for tests that makes writes or syncs of chosen files
 * fail with a chosen errno, turned on and off while the process runs. Wraps the libc
 * calls through which SQLite's unix VFS writes and syncs (write, pwrite, pwrite64, fsync,
 * fdatasync); every other call, and every call on a file that does not match, goes to
 * libc unchanged. Never built into zbso.
 *
 * Driven by two environment variables of the process it is preloaded into:
 *   ZBSO_FAULT_CTL=PATH   a control file, read again on each wrapped call on a matching
 *                         file, so a test changes the fault by rewriting it. One line:
 *                             ERRNO CALLS PATTERN
 *                         ERRNO: ENOSPC, EIO, EROFS or EACCES; CALLS: write (write,
 *                         pwrite, pwrite64), sync (fsync, fdatasync) or all; PATTERN:
 *                         a substring of the
 *                         file's path (from /proc/self/fd, so a deleted file still
 *                         matches). A missing or empty file, or the word "off": no fault.
 *   ZBSO_FAULT_LOG=PATH   optional: one line "CALL ERRNO PATH" is appended for each
 *                         failure injected, so a test can tell that its fault was hit.
 * Under ASan the child needs ASAN_OPTIONS=verify_asan_link_order=0 (this library is
 * loaded before the ASan runtime). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define FAULT_PATH_MAX 4096

enum { CALL_WRITE = 1, CALL_SYNC = 2 };

/* libc's calls, resolved on first use. */
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);

/* Resolves libc's name into *slot the first time. */
static void resolve(void **slot, const char *name)
{
    if (*slot == NULL)
        *slot = dlsym(RTLD_NEXT, name);
}
#define RESOLVE(name) resolve((void **)&real_##name, #name)

/* Reads the control file with raw system calls (no wrapped call, no stdio): fills errno_out
 * and calls_out and pattern, or returns 0 when no fault is set. */
static int read_control(int *errno_out, int *calls_out, char *pattern, size_t cap)
{
    const char *ctl = getenv("ZBSO_FAULT_CTL");
    char buf[FAULT_PATH_MAX + 64], name[16], calls[16];
    if (ctl == NULL || ctl[0] == '\0')
        return 0;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, ctl, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = syscall(SYS_read, fd, buf, sizeof buf - 1);
    syscall(SYS_close, fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char fmt[32];
    snprintf(fmt, sizeof fmt, "%%15s %%15s %%%zus", cap - 1);
    if (sscanf(buf, fmt, name, calls, pattern) != 3)
        return 0;
    if (strcmp(name, "ENOSPC") == 0)
        *errno_out = ENOSPC;
    else if (strcmp(name, "EIO") == 0)
        *errno_out = EIO;
    else if (strcmp(name, "EROFS") == 0)
        *errno_out = EROFS;
    else if (strcmp(name, "EACCES") == 0)
        *errno_out = EACCES;
    else
        return 0;
    if (strcmp(calls, "write") == 0)
        *calls_out = CALL_WRITE;
    else if (strcmp(calls, "sync") == 0)
        *calls_out = CALL_SYNC;
    else if (strcmp(calls, "all") == 0)
        *calls_out = CALL_WRITE | CALL_SYNC;
    else
        return 0;
    return 1;
}

/* Appends "CALL ERRNO PATH" to $ZBSO_FAULT_LOG, if set. */
static void note(const char *call, int e, const char *path)
{
    const char *log = getenv("ZBSO_FAULT_LOG");
    char line[FAULT_PATH_MAX + 64];
    if (log == NULL || log[0] == '\0')
        return;
    int n = snprintf(line, sizeof line, "%s %d %s\n", call, e, path);
    if (n <= 0)
        return;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                          0644);
    if (fd < 0)
        return;
    syscall(SYS_write, fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    syscall(SYS_close, fd);
}

/* Returns the errno to fail a call of kind `call` on path with, or 0 to let it through. */
static int fault_for_path(int call, const char *call_name, const char *path)
{
    char pattern[FAULT_PATH_MAX];
    int e = 0, calls = 0;
    if (path == NULL || !read_control(&e, &calls, pattern, sizeof pattern))
        return 0;
    if ((calls & call) == 0 || strstr(path, pattern) == NULL)
        return 0;
    note(call_name, e, path);
    return e;
}

/* The same for an open file descriptor, by its /proc/self/fd link. */
static int fault_for_fd(int call, const char *call_name, int fd)
{
    char link[64], path[FAULT_PATH_MAX];
    if (getenv("ZBSO_FAULT_CTL") == NULL)
        return 0;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return 0;
    path[n] = '\0';
    return fault_for_path(call, call_name, path);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    int e = fault_for_fd(CALL_WRITE, "write", fd);
    if (e != 0) {
        errno = e;
        return -1;
    }
    RESOLVE(write);
    return real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    int e = fault_for_fd(CALL_WRITE, "pwrite", fd);
    if (e != 0) {
        errno = e;
        return -1;
    }
    RESOLVE(pwrite);
    return real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    int e = fault_for_fd(CALL_WRITE, "pwrite64", fd);
    if (e != 0) {
        errno = e;
        return -1;
    }
    RESOLVE(pwrite64);
    return real_pwrite64(fd, buf, n, off);
}

int fsync(int fd)
{
    int e = fault_for_fd(CALL_SYNC, "fsync", fd);
    if (e != 0) {
        errno = e;
        return -1;
    }
    RESOLVE(fsync);
    return real_fsync(fd);
}

int fdatasync(int fd)
{
    int e = fault_for_fd(CALL_SYNC, "fdatasync", fd);
    if (e != 0) {
        errno = e;
        return -1;
    }
    RESOLVE(fdatasync);
    return real_fdatasync(fd);
}
