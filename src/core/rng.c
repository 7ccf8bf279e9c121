/* rng.c: numpy 1.24 Generator(PCG64) bit for bit: SeedSequence, PCG64 (XSL-RR), the bounded
 * integer draws behind choice(replace=False), and the ziggurat normal. Pure: no I/O, no
 * global mutable state, no allocation; the caller owns the state. */
#include "core/rng.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/ziggurat.h"

__extension__ typedef unsigned __int128 u128;

/* numpy/random/bit_generator.pyx SeedSequence constants. */
#define SS_POOL_SIZE 4
#define SS_INIT_A 0x43b0d7e5u
#define SS_MULT_A 0x931e8875u
#define SS_INIT_B 0x8b51f9ddu
#define SS_MULT_B 0x58f38dedu
#define SS_MIX_MULT_L 0xca01f9ddu
#define SS_MIX_MULT_R 0x4973f715u
#define SS_XSHIFT 16
#define SS_MAX_WORDS 64
#define SS_MAX_OUT_U64 8
#define PERM_MAX 4096

/* PCG_DEFAULT_MULTIPLIER_128 */
#define PCG_MULT_HI 2549297995355413924ULL
#define PCG_MULT_LO 4865540595714422341ULL

static u128 make_u128(uint64_t hi, uint64_t lo)
{
    return ((u128)hi << 64) | lo;
}

/* SeedSequence hashmix: returns the hashed word and advances *hash_const. */
static uint32_t hashmix(uint32_t value, uint32_t *hash_const)
{
    value ^= *hash_const;
    *hash_const *= SS_MULT_A;
    value *= *hash_const;
    value ^= value >> SS_XSHIFT;
    return value;
}

/* SeedSequence mix: returns the combination of x and y. */
static uint32_t mix(uint32_t x, uint32_t y)
{
    uint32_t result = SS_MIX_MULT_L * x - SS_MIX_MULT_R * y;
    result ^= result >> SS_XSHIFT;
    return result;
}

/* SeedSequence.mix_entropy into pool (OUT: SS_POOL_SIZE words). Words beyond
 * SS_MAX_WORDS are ignored (callers are documented to pass at most that many). */
static void seedseq_pool(const uint32_t *words, size_t n_words, uint32_t pool[SS_POOL_SIZE])
{
    uint32_t hash_const = SS_INIT_A;
    if (n_words > SS_MAX_WORDS)
        n_words = SS_MAX_WORDS;
    for (size_t i = 0; i < SS_POOL_SIZE; i++)
        pool[i] = hashmix(i < n_words ? words[i] : 0u, &hash_const);
    for (size_t src = 0; src < SS_POOL_SIZE; src++)
        for (size_t dst = 0; dst < SS_POOL_SIZE; dst++)
            if (src != dst)
                pool[dst] = mix(pool[dst], hashmix(pool[src], &hash_const));
    for (size_t src = SS_POOL_SIZE; src < n_words; src++)
        for (size_t dst = 0; dst < SS_POOL_SIZE; dst++)
            pool[dst] = mix(pool[dst], hashmix(words[src], &hash_const));
}

void rng_seedseq_generate_u64(const uint32_t *words, size_t n_words, uint64_t *out, size_t n)
{
    uint32_t pool[SS_POOL_SIZE];
    uint32_t hash_const = SS_INIT_B;
    seedseq_pool(words, n_words, pool);
    if (n > SS_MAX_OUT_U64)
        n = SS_MAX_OUT_U64;
    /* generate_state makes 2n uint32 words cycling over the pool, then reads each pair
     * little-endian as one uint64. */
    for (size_t i = 0; i < 2 * n; i++) {
        uint32_t v = pool[i % SS_POOL_SIZE];
        v ^= hash_const;
        hash_const *= SS_MULT_B;
        v *= hash_const;
        v ^= v >> SS_XSHIFT;
        if (i % 2 == 0)
            out[i / 2] = v;
        else
            out[i / 2] |= (uint64_t)v << 32;
    }
}

static u128 state_get(const zbso_rng *rng)
{
    return make_u128(rng->state_hi, rng->state_lo);
}

static void state_put(zbso_rng *rng, u128 s)
{
    rng->state_hi = (uint64_t)(s >> 64);
    rng->state_lo = (uint64_t)s;
}

/* pcg_setseq_128_step_r */
static void pcg_step(zbso_rng *rng)
{
    u128 inc = make_u128(rng->inc_hi, rng->inc_lo);
    state_put(rng, state_get(rng) * make_u128(PCG_MULT_HI, PCG_MULT_LO) + inc);
}

void rng_seed_words(zbso_rng *rng, const uint32_t *words, size_t n_words)
{
    uint64_t w[4];
    rng_seedseq_generate_u64(words, n_words, w, 4);
    /* pcg64_set_seed -> pcg_setseq_128_srandom_r(seed = w0:w1, initseq = w2:w3) */
    u128 inc = (make_u128(w[2], w[3]) << 1) | 1u;
    rng->inc_hi = (uint64_t)(inc >> 64);
    rng->inc_lo = (uint64_t)inc;
    rng->state_hi = 0;
    rng->state_lo = 0;
    pcg_step(rng);
    state_put(rng, state_get(rng) + make_u128(w[0], w[1]));
    pcg_step(rng);
    rng->has_uint32 = 0;
    rng->uinteger = 0;
}

void rng_seed_u64(zbso_rng *rng, uint64_t seed)
{
    /* numpy's _int_to_uint32_array: 0 is the single word 0; otherwise the significant
     * 32-bit words, least significant first. */
    uint32_t words[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    rng_seed_words(rng, words, words[1] != 0 ? 2 : 1);
}

uint64_t rng_next_u64(zbso_rng *rng)
{
    pcg_step(rng);
    uint64_t hi = rng->state_hi, lo = rng->state_lo;
    unsigned rot = (unsigned)(hi >> 58);
    uint64_t x = hi ^ lo;
    return (x >> rot) | (x << ((64u - rot) & 63u));
}

/* pcg64_next32: returns the buffered upper half when there is one, else draws 64 bits,
 * returns the lower half and buffers the upper. */
static uint32_t next_u32(zbso_rng *rng)
{
    if (rng->has_uint32) {
        rng->has_uint32 = 0;
        return rng->uinteger;
    }
    uint64_t next = rng_next_u64(rng);
    rng->has_uint32 = 1;
    rng->uinteger = (uint32_t)(next >> 32);
    return (uint32_t)next;
}

/* next_double: returns a uniform double in [0, 1) from 53 bits. */
static double next_double(zbso_rng *rng)
{
    return (double)(rng_next_u64(rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* buffered_bounded_lemire_uint32: returns a uniform value in [0, range]; range < 2^32-1. */
static uint32_t bounded_lemire_u32(zbso_rng *rng, uint32_t range)
{
    const uint32_t excl = range + 1;
    uint64_t m = (uint64_t)next_u32(rng) * excl;
    uint32_t leftover = (uint32_t)m;
    if (leftover < excl) {
        const uint32_t threshold = (UINT32_MAX - range) % excl;
        while (leftover < threshold) {
            m = (uint64_t)next_u32(rng) * excl;
            leftover = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

/* bounded_lemire_uint64: returns a uniform value in [0, range]; range < 2^64-1. */
static uint64_t bounded_lemire_u64(zbso_rng *rng, uint64_t range)
{
    const uint64_t excl = range + 1;
    u128 m = (u128)rng_next_u64(rng) * excl;
    uint64_t leftover = (uint64_t)m;
    if (leftover < excl) {
        const uint64_t threshold = (UINT64_MAX - range) % excl;
        while (leftover < threshold) {
            m = (u128)rng_next_u64(rng) * excl;
            leftover = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

/* random_bounded_uint64(off = 0, rng = range, use_masked = false): returns a uniform value
 * in [0, range], consuming nothing when range is 0. */
static uint64_t bounded_u64(zbso_rng *rng, uint64_t range)
{
    if (range == 0)
        return 0;
    if (range <= 0xFFFFFFFFu) {
        if (range == 0xFFFFFFFFu)
            return next_u32(rng);
        return bounded_lemire_u32(rng, (uint32_t)range);
    }
    if (range == UINT64_MAX)
        return rng_next_u64(rng);
    return bounded_lemire_u64(rng, range);
}

/* numpy's _gen_mask: returns the smallest all-ones mask >= v. */
static uint64_t gen_mask(uint64_t v)
{
    v |= v >> 1;
    v |= v >> 2;
    v |= v >> 4;
    v |= v >> 8;
    v |= v >> 16;
    v |= v >> 32;
    return v;
}

void rng_permutation(zbso_rng *rng, size_t n, size_t *perm)
{
    /* Generator.choice(n, n, replace=False, shuffle=True) for n <= 10000: Floyd's
     * algorithm with numpy's open-addressing hash set, then _shuffle_int(n, 1). The set
     * holds at most 2 * 1.2 * PERM_MAX slots. */
    enum { SET_MAX = 8192 };
    uint64_t set[SET_MAX];
    if (n > PERM_MAX)
        n = PERM_MAX;
    uint64_t mask = gen_mask((uint64_t)(1.2 * (double)n));
    for (uint64_t i = 0; i <= mask; i++)
        set[i] = UINT64_MAX;
    for (uint64_t j = 0; j < n; j++) {
        uint64_t val = bounded_u64(rng, j);
        uint64_t loc = val & mask;
        while (set[loc] != UINT64_MAX && set[loc] != val)
            loc = (loc + 1) & mask;
        if (set[loc] == UINT64_MAX) {
            set[loc] = val;
            perm[j] = (size_t)val;
        } else {
            loc = j & mask;
            while (set[loc] != UINT64_MAX)
                loc = (loc + 1) & mask;
            set[loc] = j;
            perm[j] = (size_t)j;
        }
    }
    for (size_t i = n; i-- > 1;) {
        size_t j = (size_t)bounded_u64(rng, i);
        size_t tmp = perm[j];
        perm[j] = perm[i];
        perm[i] = tmp;
    }
}

/* random_standard_normal: returns one N(0, 1) sample by numpy's 256-layer ziggurat. */
static double standard_normal(zbso_rng *rng)
{
    for (;;) {
        uint64_t r = rng_next_u64(rng);
        int idx = (int)(r & 0xff);
        r >>= 8;
        int sign = (int)(r & 1u);
        uint64_t rabs = (r >> 1) & 0x000fffffffffffffULL;
        double x = (double)rabs * rng_zig_wi[idx];
        if (sign)
            x = -x;
        if (rabs < rng_zig_ki[idx])
            return x;
        if (idx == 0) {
            for (;;) {
                double xx = -rng_zig_nor_inv_r * log1p(-next_double(rng));
                double yy = -log1p(-next_double(rng));
                if (yy + yy > xx * xx)
                    return ((rabs >> 8) & 1u) ? -(rng_zig_nor_r + xx) : rng_zig_nor_r + xx;
            }
        }
        if ((rng_zig_fi[idx - 1] - rng_zig_fi[idx]) * next_double(rng) + rng_zig_fi[idx]
            < exp(-0.5 * x * x))
            return x;
    }
}

double rng_normal(zbso_rng *rng, double loc, double scale)
{
    return loc + scale * standard_normal(rng);
}

void rng_format(const zbso_rng *rng, char out[96])
{
    snprintf(out, 96, "%016llx%016llx:%016llx%016llx:%d:%08lx",
             (unsigned long long)rng->state_hi, (unsigned long long)rng->state_lo,
             (unsigned long long)rng->inc_hi, (unsigned long long)rng->inc_lo,
             rng->has_uint32 ? 1 : 0, (unsigned long)rng->uinteger);
}

/* Parses 1..max_digits hex digits at *p into *out (OUT: the value) and advances *p past
 * them. Returns 0, or -1 when there are no digits or too many. */
static int parse_hex(const char **p, size_t max_digits, u128 *out)
{
    u128 v = 0;
    size_t n = 0;
    for (;;) {
        char c = (*p)[n];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            break;
        if (++n > max_digits)
            return -1;
        v = (v << 4) | d;
    }
    if (n == 0)
        return -1;
    *p += n;
    *out = v;
    return 0;
}

int rng_parse(zbso_rng *rng, const char *text)
{
    u128 state, inc, uinteger;
    const char *p = text;
    int has;
    if (text == NULL || parse_hex(&p, 32, &state) != 0 || *p++ != ':'
        || parse_hex(&p, 32, &inc) != 0 || *p++ != ':')
        return -1;
    if (p[0] != '0' && p[0] != '1')
        return -1;
    has = p[0] - '0';
    p++;
    if (*p++ != ':' || parse_hex(&p, 8, &uinteger) != 0 || *p != '\0')
        return -1;
    state_put(rng, state);
    rng->inc_hi = (uint64_t)(inc >> 64);
    rng->inc_lo = (uint64_t)inc;
    rng->has_uint32 = has;
    rng->uinteger = (uint32_t)uinteger;
    return 0;
}
