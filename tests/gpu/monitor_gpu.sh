#!/bin/sh
# monitor_gpu.sh: checks the energy monitor against the real NVML on a GPU machine (not run
# in CI): builds zbso-monitor-bench with gcc alone (a GPU box need not have the server's
# libraries), times window edges, and checks that a window reads a plausible power on
# every GPU. Reads only; changes no GPU setting.
# usage: tests/gpu/monitor_gpu.sh [OUT_DIR]   (default: build-gpu)
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$src/build-gpu}
mkdir -p "$out"
cflags="-std=c17 -O2 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE"
gcc $cflags -shared -fPIC "$src/tests/fakes/fake_nvml.c" -o "$out/libfake_nvml.so"
gcc $cflags -I"$src/include" -I"$src/src" -DZBSO_FAKE_NVML_PATH="\"$out/libfake_nvml.so\"" \
    "$src/bench/monitor_bench.c" "$src"/src/monitor/*.c "$src/src/util/err.c" \
    "$src/src/util/log.c" "$src/src/util/clock.c" "$src/src/util/mem.c" \
    -o "$out/zbso-monitor-bench" -ldl -lpthread
res=$("$out/zbso-monitor-bench" --nvml "${ZBSO_NVML_LIBRARY:-libnvidia-ml.so.1}" \
      --pairs 30 --window-s 2)
echo "$res"
# Every GPU of the window must read between 1 W and the max power limit.
echo "$res" | awk '
    /max power limit/ { for (i = 1; i <= NF; i++) if ($i == "mW)") limit = $(i - 1) / 1000 }
    /^  GPU / { n++; w = $(NF - 1); if (w < 1 || w > limit) { bad = 1; print "implausible: " $0 } }
    END { if (n == 0) { print "no GPU readings"; exit 1 } exit bad }'
echo "monitor_gpu: OK"
