/* ziggurat.h: private to rng.c: numpy's 256-layer ziggurat tables for the standard normal
 * (defined in the generated ziggurat_tables.c). Read-only data; nothing else uses them. */
#ifndef ZBSO_CORE_ZIGGURAT_H
#define ZBSO_CORE_ZIGGURAT_H

#include <stdint.h>

#define RNG_ZIG_LAYERS 256

extern const double rng_zig_nor_r;            /* ziggurat_nor_r: start of the tail */
extern const double rng_zig_nor_inv_r;        /* ziggurat_nor_inv_r = 1 / ziggurat_nor_r */
extern const uint64_t rng_zig_ki[RNG_ZIG_LAYERS]; /* ki_double */
extern const double rng_zig_wi[RNG_ZIG_LAYERS];   /* wi_double */
extern const double rng_zig_fi[RNG_ZIG_LAYERS];   /* fi_double */

#endif
