/* cudavis.h: CUDA_VISIBLE_DEVICES read as CUDA reads it for NVML indices: which NVML GPU
 * each CUDA index names. Used where NVML meets CUDA indices (src/power). libc only. */
#ifndef ZBSO_UTIL_CUDAVIS_H
#define ZBSO_UTIL_CUDAVIS_H

#include "util/err.h"

/* Parses CUDA_VISIBLE_DEVICES (a comma list of NVML indices) into visible[0..*n_visible),
 * at most ZBSO_MAX_GPUS, checking each against the n_nvml GPUs NVML sees; unset means all
 * of them. CUDA index i is then NVML index visible[i]. Returns 0 or ZBSO_ECONFIG naming
 * the entry: not an integer (UUIDs are not supported), out of range, listed twice, or too
 * many. */
int cuda_visible_devices(unsigned n_nvml, unsigned *visible, unsigned *n_visible,
                         zbso_err *err);

#endif
