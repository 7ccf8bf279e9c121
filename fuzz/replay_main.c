/* replay_main.c: a main for a fuzz target without libFuzzer (like oss-fuzz's
 * StandaloneFuzzTargetMain): feeds every file named on the command line, and every file
 * directly inside a named directory (sorted, dot files skipped), to LLVMFuzzerTestOneInput
 * once. ctest runs it over each target's corpus and regressions in the gcc builds. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "util/buf.h"

#define REPLAY_MAX_BYTES ((size_t)16 << 20) /* larger than any input worth keeping */
#define REPLAY_MAX_FILES ((size_t)1 << 20)  /* files in one directory */

/* Runs the target on the file at path. Returns 0, or -1 when it cannot be read. */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    zbso_buf buf;
    int rc = -1;
    if (!f) {
        fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    buf_init(&buf, REPLAY_MAX_BYTES);
    int brc = buf_add_file(&buf, f);
    if (brc == ZBSO_ENOMEM) {
        fprintf(stderr, "replay: out of memory reading %s\n", path);
        goto out;
    }
    if (brc < 0) {
        fprintf(stderr, "replay: cannot read %s (or it is over %zu bytes)\n", path,
                REPLAY_MAX_BYTES);
        goto out;
    }
    /* An exact-size copy, so a read past the input is caught as it would be in libFuzzer. */
    size_t n = buf_len(&buf);
    char *input = malloc(n);
    if (!input && n) {
        fprintf(stderr, "replay: out of memory reading %s\n", path);
        goto out;
    }
    if (n)
        memcpy(input, buf_ptr(&buf), n);
    LLVMFuzzerTestOneInput((const uint8_t *)input, n);
    free(input);
    rc = 0;
out:
    buf_free(&buf);
    fclose(f);
    return rc;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs the target on every regular file directly in dir, in name order; *count grows by
 * how many ran. Returns 0, or -1 when the directory or one of its files cannot be read. */
static int run_dir(const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    if (!d) {
        fprintf(stderr, "replay: cannot open %s: %s\n", dir, strerror(errno));
        return -1;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown) {
                rc = -1;
                goto out;
            }
            names = grown;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!(names[n] = malloc(len))) {
            rc = -1;
            goto out;
        }
        snprintf(names[n++], len, "%s/%s", dir, e->d_name);
    }
    if (n > 1)
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct stat st;
        if (stat(names[i], &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        rc = run_file(names[i]);
        (*count)++;
    }
out:
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
    size_t count = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        int rc = S_ISDIR(st.st_mode) ? run_dir(argv[i], &count) : run_file(argv[i]);
        if (!S_ISDIR(st.st_mode))
            count++;
        if (rc < 0)
            return 1;
    }
    if (count == 0) {
        fprintf(stderr, "replay: no inputs found in the given paths\n");
        return 1;
    }
    printf("replay: %zu inputs, no failure\n", count);
    return 0;
}
