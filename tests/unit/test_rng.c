/* test_rng.c: checks core/rng against every value numpy 1.24.2 produced in
 * testdata/numpy_pcg64_vectors.json (seeding, choice, normal, interleaved bandit draws),
 * plus the state text format. Reads only the test data; a missing file fails the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"

#define VECTORS ZBSO_TESTDATA "/numpy_pcg64_vectors.json"
#define INTERLEAVED_SEED 123456u
#define MAX_ARMS 16

__extension__ typedef unsigned __int128 u128;

/* Returns the loaded vectors file; fails the test when it cannot be read. */
static json_t *load_vectors(void)
{
    json_error_t jerr;
    json_t *root = json_load_file(VECTORS, 0, &jerr);
    if (root == NULL)
        fail_msg("cannot load %s: %s (line %d)", VECTORS, jerr.text, jerr.line);
    return root;
}

/* Returns the json string member key of obj; fails the test when absent. */
static const char *str_of(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    if (s == NULL)
        fail_msg("missing string member \"%s\"", key);
    return s;
}

/* Returns the unsigned integer (decimal, or hex with 0x) in text, up to 128 bits. */
static u128 parse_u128(const char *text)
{
    u128 v = 0;
    int base = 10;
    const char *p = text;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    }
    assert_true(*p != '\0');
    for (; *p; p++) {
        unsigned d = 0;
        if (*p >= '0' && *p <= '9')
            d = (unsigned)(*p - '0');
        else if (base == 16 && *p >= 'a' && *p <= 'f')
            d = (unsigned)(*p - 'a' + 10);
        else if (base == 16 && *p >= 'A' && *p <= 'F')
            d = (unsigned)(*p - 'A' + 10);
        else
            fail_msg("bad number \"%s\"", text);
        v = v * (unsigned)base + d;
    }
    return v;
}

/* Returns the double the decimal text denotes ("inf" included); fails on junk. */
static double parse_double(const char *text)
{
    char *end;
    double d = strtod(text, &end);
    if (end == text || *end != '\0')
        fail_msg("bad double \"%s\"", text);
    return d;
}

static uint64_t bits_of(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

/* Sets rng from a JSON state object {state, inc, has_uint32, uinteger}. */
static void state_from_json(zbso_rng *rng, const json_t *obj)
{
    u128 s = parse_u128(str_of(obj, "state"));
    u128 inc = parse_u128(str_of(obj, "inc"));
    json_t *has = json_object_get(obj, "has_uint32");
    assert_true(json_is_integer(has));
    rng->state_hi = (uint64_t)(s >> 64);
    rng->state_lo = (uint64_t)s;
    rng->inc_hi = (uint64_t)(inc >> 64);
    rng->inc_lo = (uint64_t)inc;
    rng->has_uint32 = (int)json_integer_value(has);
    rng->uinteger = (uint32_t)parse_u128(str_of(obj, "uinteger"));
}

/* Asserts that rng equals the JSON state object, field by field. */
static void assert_state(const zbso_rng *rng, const json_t *obj)
{
    zbso_rng want;
    state_from_json(&want, obj);
    assert_int_equal(rng->state_hi, want.state_hi);
    assert_int_equal(rng->state_lo, want.state_lo);
    assert_int_equal(rng->inc_hi, want.inc_hi);
    assert_int_equal(rng->inc_lo, want.inc_lo);
    assert_int_equal(rng->has_uint32, want.has_uint32);
    assert_int_equal(rng->uinteger, want.uinteger);
}

/* Splits a decimal seed into little-endian 32-bit words (numpy's order); returns the count. */
static size_t seed_words(const char *text, uint32_t words[8])
{
    u128 v = parse_u128(text);
    size_t n = 0;
    if (v == 0)
        words[n++] = 0;
    while (v != 0) {
        words[n++] = (uint32_t)v;
        v >>= 32;
    }
    return n;
}

static void test_seeding(void **unused)
{
    json_t *root = load_vectors();
    json_t *cases = json_object_get(root, "seeding");
    size_t i, checked = 0, words_checked = 0;
    json_t *c;
    json_array_foreach(cases, i, c) {
        uint32_t words[8];
        uint64_t got[4];
        zbso_rng rng;
        size_t k;
        json_t *v;
        const char *seed = str_of(c, "seed");
        size_t nw = seed_words(seed, words);

        rng_seedseq_generate_u64(words, nw, got, 4);
        json_t *gs = json_object_get(c, "generate_state_4_uint64");
        assert_int_equal(json_array_size(gs), 4);
        json_array_foreach(gs, k, v) {
            assert_int_equal(got[k], (uint64_t)parse_u128(json_string_value(v)));
        }

        rng_seed_words(&rng, words, nw);
        assert_state(&rng, json_object_get(c, "initial_state"));
        if (nw <= 2) {
            zbso_rng r64;
            rng_seed_u64(&r64, (uint64_t)parse_u128(seed));
            assert_memory_equal(&r64, &rng, sizeof rng);
        }
        json_t *raw = json_object_get(c, "first_raw_uint64");
        assert_true(json_array_size(raw) > 0);
        json_array_foreach(raw, k, v) {
            assert_int_equal(rng_next_u64(&rng), (uint64_t)parse_u128(json_string_value(v)));
            words_checked++;
        }
        checked++;
    }
    assert_int_equal(checked, 7);
    assert_int_equal(words_checked, 7 * 8);
    json_decref(root);
}

static void test_choice(void **unused)
{
    json_t *root = load_vectors();
    json_t *cases = json_object_get(root, "choice");
    size_t i, checked = 0;
    json_t *c;
    json_array_foreach(cases, i, c) {
        json_t *arr = json_object_get(c, "array");
        json_t *res = json_object_get(c, "result");
        size_t n = json_array_size(arr);
        size_t perm[128];
        zbso_rng rng;
        assert_true(n > 0 && n <= 128);
        assert_int_equal(json_array_size(res), n);
        state_from_json(&rng, json_object_get(c, "state_before"));
        rng_permutation(&rng, n, perm);
        for (size_t k = 0; k < n; k++) {
            assert_true(perm[k] < n);
            assert_int_equal(json_integer_value(json_array_get(arr, perm[k])),
                             json_integer_value(json_array_get(res, k)));
        }
        assert_state(&rng, json_object_get(c, "state_after"));
        checked++;
    }
    assert_int_equal(checked, 19);
    json_decref(root);
}

static void test_normal(void **unused)
{
    json_t *root = load_vectors();
    json_t *cases = json_object_get(root, "normal");
    size_t i, checked = 0, samples = 0;
    json_t *c;
    json_array_foreach(cases, i, c) {
        zbso_rng rng;
        size_t k;
        json_t *v;
        json_t *seed = json_object_get(c, "seed");
        double loc = json_number_value(json_object_get(c, "loc"));
        double scale = json_number_value(json_object_get(c, "scale"));
        assert_true(json_is_integer(seed) && json_integer_value(seed) >= 0);
        rng_seed_u64(&rng, (uint64_t)json_integer_value(seed));
        json_array_foreach(json_object_get(c, "samples"), k, v) {
            double want = parse_double(json_string_value(v));
            double got = rng_normal(&rng, loc, scale);
            if (bits_of(got) != bits_of(want))
                fail_msg("normal case %zu sample %zu: got %.17g want %.17g", i, k, got, want);
            samples++;
        }
        assert_state(&rng, json_object_get(c, "state_after"));
        checked++;
    }
    assert_int_equal(checked, 4);
    assert_int_equal(samples, 3000 + 200 + 5 + 200);
    json_decref(root);
}

/* The interleaved cases are consecutive bandit decisions of one generator seeded with
 * 123456: each case continues from the state the previous one left. */
static void test_interleaved(void **unused)
{
    json_t *root = load_vectors();
    json_t *arms = json_object_get(root, "interleaved_arms");
    json_t *cases = json_object_get(root, "interleaved");
    size_t n_arms = json_array_size(arms);
    int64_t bs[MAX_ARMS];
    double mean[MAX_ARMS], scale[MAX_ARMS];
    size_t i, checked = 0;
    json_t *c, *a;
    zbso_rng rng;

    assert_true(n_arms > 0 && n_arms <= MAX_ARMS);
    json_array_foreach(arms, i, a) {
        double precision = parse_double(str_of(a, "precision"));
        bs[i] = json_integer_value(json_object_get(a, "batch_size"));
        mean[i] = json_number_value(json_object_get(a, "mean"));
        scale[i] = isinf(precision) ? 0.0 : 1.0 / sqrt(precision);
        assert_true(i == 0 || bs[i] > bs[i - 1]);
    }
    rng_seed_u64(&rng, INTERLEAVED_SEED);
    json_array_foreach(cases, i, c) {
        size_t perm[MAX_ARMS];
        json_t *order = json_object_get(c, "choice_order");
        json_t *normals = json_object_get(c, "normals_in_arm_order");
        assert_int_equal(json_array_size(order), n_arms);
        assert_int_equal(json_array_size(normals), n_arms);
        rng_permutation(&rng, n_arms, perm);
        for (size_t k = 0; k < n_arms; k++)
            assert_int_equal(bs[perm[k]], json_integer_value(json_array_get(order, k)));
        for (size_t k = 0; k < n_arms; k++) {
            double got = rng_normal(&rng, mean[k], scale[k]);
            double want = parse_double(json_string_value(json_array_get(normals, k)));
            if (bits_of(got) != bits_of(want))
                fail_msg("interleaved case %zu arm %zu: got %.17g want %.17g", i, k, got, want);
        }
        assert_state(&rng, json_object_get(c, "state_after"));
        checked++;
    }
    assert_int_equal(checked, 30);
    json_decref(root);
}

static void test_format_parse_round_trip(void **unused)
{
    zbso_rng rng, back;
    char text[96];
    rng_seed_u64(&rng, 42);
    (void)rng_next_u64(&rng);
    rng.has_uint32 = 1; /* a buffered 32-bit half, as an odd number of 32-bit draws leaves */
    rng.uinteger = 0x0000beefu;
    rng_format(&rng, text);
    assert_int_equal(strlen(text), 32 + 1 + 32 + 1 + 1 + 1 + 8);
    memset(&back, 0xab, sizeof back);
    assert_int_equal(rng_parse(&back, text), 0);
    assert_memory_equal(&back, &rng, sizeof rng);
    assert_int_equal(rng_next_u64(&back), rng_next_u64(&rng));
    assert_non_null(strstr(text, ":1:0000beef"));

    assert_int_equal(rng_parse(&back, "1:3:0:0"), 0);
    assert_int_equal(back.state_hi, 0);
    assert_int_equal(back.state_lo, 1);
    assert_int_equal(back.inc_lo, 3);
    assert_int_equal(back.has_uint32, 0);

    rng_seed_u64(&rng, 0);
    rng_format(&rng, text);
    assert_string_equal(text, "1aa1b5345996452d09585eb7a69561e3:"
                              "418ddadb3af71a82588133bc447873a9:0:00000000");
}

static void test_parse_rejects(void **unused)
{
    static const char *const bad[] = {
        "",
        "1:3:0",
        "1:3:2:0",
        "1:3:0:0 ",
        "x:3:0:0",
        "1::0:0",
        "1:3:0:123456789",
        "1:3:00:0",
        "0x1:3:0:0",
        "123456789012345678901234567890123:3:0:0",
        "1;3;0;0",
    };
    zbso_rng rng, before;
    rng_seed_u64(&rng, 7);
    before = rng;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (rng_parse(&rng, bad[i]) != -1)
            fail_msg("rng_parse accepted \"%s\"", bad[i]);
        assert_memory_equal(&rng, &before, sizeof rng);
    }
    assert_int_equal(rng_parse(&rng, NULL), -1);
}

/* A permutation of a large n is still a permutation and leaves the same state as a
 * second run from the same seed (exercises the hash-set collision paths). */
static void test_permutation_large(void **unused)
{
    static size_t perm[4096], again[4096];
    static unsigned char seen[4096];
    zbso_rng a, b;
    rng_seed_u64(&a, 5);
    rng_seed_u64(&b, 5);
    rng_permutation(&a, 4096, perm);
    rng_permutation(&b, 4096, again);
    memset(seen, 0, sizeof seen);
    for (size_t i = 0; i < 4096; i++) {
        assert_true(perm[i] < 4096);
        assert_int_equal(seen[perm[i]], 0);
        seen[perm[i]] = 1;
    }
    assert_memory_equal(perm, again, sizeof perm);
    assert_memory_equal(&a, &b, sizeof a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seeding),
        cmocka_unit_test(test_choice),
        cmocka_unit_test(test_normal),
        cmocka_unit_test(test_interleaved),
        cmocka_unit_test(test_format_parse_round_trip),
        cmocka_unit_test(test_parse_rejects),
        cmocka_unit_test(test_permutation_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
