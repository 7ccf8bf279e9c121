/* rng.h: numpy-compatible random stream (SPEC §3.6): SeedSequence seeding, PCG64, and
 * Generator.choice(a, n, replace=False) / Generator.normal(loc, scale) bit for bit as numpy
 * 1.24 computes them. Pure: the state is a value the caller owns and stores. */
#ifndef ZBSO_CORE_RNG_H
#define ZBSO_CORE_RNG_H

#include <stddef.h>
#include <stdint.h>

/* numpy's PCG64 bit generator state: 128-bit state and increment plus the 32-bit buffer
 * (has_uint32, uinteger) that numpy keeps for 32-bit draws. */
typedef struct zbso_rng {
    uint64_t state_hi, state_lo;
    uint64_t inc_hi, inc_lo;
    int has_uint32;
    uint32_t uinteger;
} zbso_rng;

/* np.random.default_rng(seed) for a non-negative integer seed given as little-endian
 * 32-bit words (numpy's _coerce_to_uint32_array order); n_words >= 1, at most 64. */
void rng_seed_words(zbso_rng *rng, const uint32_t *words, size_t n_words);

/* np.random.default_rng(seed) for a seed that fits in 64 bits. */
void rng_seed_u64(zbso_rng *rng, uint64_t seed);

/* The SeedSequence(seed).generate_state(n, uint64) words, for tests; n at most 8. */
void rng_seedseq_generate_u64(const uint32_t *words, size_t n_words, uint64_t *out, size_t n);

/* Next raw 64-bit output (bit_generator.random_raw()). */
uint64_t rng_next_u64(zbso_rng *rng);

/* Generator.choice(range(n), n, replace=False): writes a permutation of 0..n-1 to perm.
 * n at most 4096. */
void rng_permutation(zbso_rng *rng, size_t n, size_t *perm);

/* Generator.normal(loc, scale). scale may be 0 (returns loc, still consumes the draw)
 * or +INFINITY. */
double rng_normal(zbso_rng *rng, double loc, double scale);

/* Formats the state as "state_hex:inc_hex:has_uint32:uinteger_hex" (fits in 96 bytes)
 * and parses it back. rng_parse returns 0, or -1 when text is not in that form. */
void rng_format(const zbso_rng *rng, char out[96]);
int rng_parse(zbso_rng *rng, const char *text);

#endif
