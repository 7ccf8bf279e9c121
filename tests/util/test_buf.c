/* test_buf.c: util/buf: appends, the bound (exact fit, one byte over, no size_t
 * overflow), growth never past max + 1 bytes, allocation failure (realloc is wrapped at
 * link time, -Wl,--wrap=realloc, so a chosen call fails), reset, take, files. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/buf.h"
#include "zbso/zbso.h"

/* ---- realloc, failing on demand ---- */

void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);

static int fail_in;          /* 0: never; k: the k-th realloc from now fails */
static int n_reallocs;

void *__wrap_realloc(void *p, size_t n)
{
    n_reallocs++;
    if (fail_in > 0 && --fail_in == 0)
        return NULL;
    return __real_realloc(p, n);
}

static int setup(void **state)
{
    fail_in = 0;
    n_reallocs = 0;
    return 0;
}

/* ---- tests ---- */

static void test_append_kinds(void **state)
{
    zbso_buf b;
    buf_init(&b, 1000);
    assert_string_equal(buf_ptr(&b), "");
    assert_int_equal(buf_len(&b), 0);
    assert_int_equal(buf_add(&b, "abc"), 0);
    assert_int_equal(buf_addn(&b, "d\0e", 3), 0);
    assert_int_equal(buf_addf(&b, "-%d-%s", 42, "x"), 0);
    assert_int_equal(buf_addn(&b, NULL, 0), 0);
    assert_int_equal(buf_len(&b), 3 + 3 + 5);
    assert_memory_equal(buf_ptr(&b), "abcd\0e-42-x", 12);   /* with the NUL after */
    buf_free(&b);
    assert_int_equal(buf_len(&b), 0);
    assert_string_equal(buf_ptr(&b), "");
    buf_free(&b);   /* twice is harmless */
}

static void test_bound_exact_fit_and_one_over(void **state)
{
    zbso_buf b;
    buf_init(&b, 10);
    assert_int_equal(buf_add(&b, "0123456789"), 0);
    assert_int_equal(buf_len(&b), 10);
    assert_true(b.cap <= 11);
    assert_int_equal(buf_add(&b, "x"), ZBSO_ETOOBIG);
    /* Failure frees: empty, and usable again under the same bound. */
    assert_null(b.p);
    assert_int_equal(buf_len(&b), 0);
    assert_string_equal(buf_ptr(&b), "");
    assert_int_equal(buf_add(&b, "0123456789"), 0);
    assert_int_equal(buf_addn(&b, "", 0), 0);
    assert_int_equal(buf_addf(&b, "%s", ""), 0);
    assert_int_equal(buf_addf(&b, "%d", 7), ZBSO_ETOOBIG);
    assert_int_equal(buf_len(&b), 0);
    buf_free(&b);

    buf_init(&b, 5);
    assert_int_equal(buf_addf(&b, "%d", 123456), ZBSO_ETOOBIG);
    assert_int_equal(buf_addf(&b, "%d", 12345), 0);
    assert_string_equal(buf_ptr(&b), "12345");
    buf_free(&b);

    buf_init(&b, 0);
    assert_int_equal(buf_addn(&b, "", 0), 0);
    assert_string_equal(buf_ptr(&b), "");
    assert_int_equal(buf_add(&b, "a"), ZBSO_ETOOBIG);
    buf_free(&b);
}

static void test_bound_no_overflow(void **state)
{
    zbso_buf b;
    char byte = 'z';
    buf_init(&b, SIZE_MAX);
    assert_int_equal(b.max, BUF_MAX_LIMIT);
    assert_int_equal(buf_add(&b, "abc"), 0);
    /* len + n would wrap around: refused before anything is read from mem or allocated. */
    n_reallocs = 0;
    assert_int_equal(buf_addn(&b, &byte, SIZE_MAX), ZBSO_ETOOBIG);
    assert_int_equal(buf_len(&b), 0);
    assert_int_equal(buf_add(&b, "abc"), 0);
    n_reallocs = 0;
    assert_int_equal(buf_addn(&b, &byte, BUF_MAX_LIMIT - 2), ZBSO_ETOOBIG);
    assert_int_equal(n_reallocs, 0);
    assert_int_equal(buf_len(&b), 0);
    buf_free(&b);
}

static void test_growth_capped_at_bound(void **state)
{
    zbso_buf b;
    buf_init(&b, 100);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(buf_add(&b, "x"), 0);
        assert_true(b.cap <= 101);
        assert_true(b.len < b.cap);
    }
    /* Doubling from 64 would ask for 128; the bound holds it to 101. */
    assert_int_equal(b.cap, 101);
    assert_int_equal(n_reallocs, 2);
    assert_int_equal(buf_add(&b, "x"), ZBSO_ETOOBIG);
    buf_free(&b);

    /* One large append allocates once, to what it needs. */
    char big[5000];
    memset(big, 'q', sizeof big);
    buf_init(&b, 1 << 20);
    n_reallocs = 0;
    assert_int_equal(buf_addn(&b, big, sizeof big), 0);
    assert_int_equal(n_reallocs, 1);
    assert_true(b.cap >= sizeof big + 1 && b.cap <= 2 * (sizeof big + 1));
    buf_free(&b);
}

static void test_allocation_failure(void **state)
{
    zbso_buf b;
    buf_init(&b, 1 << 20);
    fail_in = 1;   /* the first allocation */
    assert_int_equal(buf_add(&b, "abc"), ZBSO_ENOMEM);
    assert_null(b.p);
    assert_int_equal(buf_len(&b), 0);
    assert_int_equal(buf_add(&b, "abc"), 0);

    /* A failed growth frees what was held (ASan's leak check sees any leak). */
    char big[200];
    memset(big, 'q', sizeof big);
    fail_in = 1;
    assert_int_equal(buf_addn(&b, big, sizeof big), ZBSO_ENOMEM);
    assert_null(b.p);
    assert_int_equal(buf_len(&b), 0);
    assert_string_equal(buf_ptr(&b), "");

    fail_in = 1;
    assert_int_equal(buf_addf(&b, "%s", "abc"), ZBSO_ENOMEM);
    assert_int_equal(buf_len(&b), 0);
    assert_int_equal(buf_addf(&b, "%s-%d", "abc", 1), 0);
    assert_string_equal(buf_ptr(&b), "abc-1");
    buf_free(&b);
}

static void test_reset_keeps_memory(void **state)
{
    zbso_buf b;
    buf_init(&b, 100);
    assert_int_equal(buf_add(&b, "hello"), 0);
    char *p = b.p;
    buf_reset(&b);
    assert_int_equal(buf_len(&b), 0);
    assert_string_equal(buf_ptr(&b), "");
    n_reallocs = 0;
    assert_int_equal(buf_add(&b, "bye"), 0);
    assert_int_equal(n_reallocs, 0);
    assert_ptr_equal(b.p, p);
    assert_string_equal(buf_ptr(&b), "bye");
    buf_free(&b);
    buf_reset(&b);   /* on a freed buffer too */
    assert_string_equal(buf_ptr(&b), "");
}

static void test_take(void **state)
{
    zbso_buf b;
    size_t len = 99;
    buf_init(&b, 100);
    assert_null(buf_take(&b, &len));
    assert_int_equal(len, 0);
    assert_int_equal(buf_addf(&b, "%s=%d", "k", 5), 0);
    char *s = buf_take(&b, &len);
    assert_non_null(s);
    assert_int_equal(len, 3);
    assert_string_equal(s, "k=5");
    assert_null(b.p);
    assert_int_equal(buf_len(&b), 0);
    assert_int_equal(b.max, 100);
    free(s);
    assert_int_equal(buf_add(&b, "again"), 0);
    s = buf_take(&b, NULL);
    assert_string_equal(s, "again");
    free(s);
}

/* A temporary file holding n bytes of a repeating pattern, rewound. */
static FILE *file_of(size_t n)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    for (size_t i = 0; i < n; i++)
        assert_int_not_equal(fputc('a' + (int)(i % 26), f), EOF);
    rewind(f);
    return f;
}

static void check_pattern(const zbso_buf *b, size_t n)
{
    assert_int_equal(buf_len(b), n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(buf_ptr(b)[i], 'a' + (int)(i % 26));
    assert_int_equal(buf_ptr(b)[n], '\0');
}

static void test_add_file(void **state)
{
    const size_t n = 200001;   /* several reads of 64 KiB */
    zbso_buf b;

    FILE *f = file_of(n);
    buf_init(&b, n);          /* exactly the file */
    assert_int_equal(buf_add_file(&b, f), 0);
    check_pattern(&b, n);
    assert_true(b.cap <= n + 1);
    buf_free(&b);

    rewind(f);
    buf_init(&b, n - 1);      /* one byte short */
    assert_int_equal(buf_add_file(&b, f), ZBSO_ETOOBIG);
    assert_null(b.p);
    assert_int_equal(buf_len(&b), 0);

    rewind(f);
    buf_init(&b, 1 << 20);    /* after what is there already */
    assert_int_equal(buf_add(&b, "head:"), 0);
    assert_int_equal(buf_add_file(&b, f), 0);
    assert_int_equal(buf_len(&b), n + 5);
    assert_memory_equal(buf_ptr(&b), "head:abc", 8);
    buf_free(&b);

    rewind(f);
    buf_init(&b, 1 << 20);
    fail_in = 2;              /* the first allocation works, a later one fails */
    assert_int_equal(buf_add_file(&b, f), ZBSO_ENOMEM);
    assert_null(b.p);
    fclose(f);

    f = file_of(0);
    buf_init(&b, 10);
    assert_int_equal(buf_add_file(&b, f), 0);
    assert_int_equal(buf_len(&b), 0);
    assert_string_equal(buf_ptr(&b), "");
    buf_free(&b);
    fclose(f);

    /* A stream that cannot be read: ZBSO_EIO, errno kept for the message. */
    f = fopen("/dev/null", "w");
    assert_non_null(f);
    buf_init(&b, 10);
    errno = 0;
    assert_int_equal(buf_add_file(&b, f), ZBSO_EIO);
    assert_int_equal(errno, EBADF);
    assert_null(b.p);
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_append_kinds, setup),
        cmocka_unit_test_setup(test_bound_exact_fit_and_one_over, setup),
        cmocka_unit_test_setup(test_bound_no_overflow, setup),
        cmocka_unit_test_setup(test_growth_capped_at_bound, setup),
        cmocka_unit_test_setup(test_allocation_failure, setup),
        cmocka_unit_test_setup(test_reset_keeps_memory, setup),
        cmocka_unit_test_setup(test_take, setup),
        cmocka_unit_test_setup(test_add_file, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
