#!/bin/bash
# sim_sweep.sh: times the simulation sweep of docs/SIMULATION.md (6 workloads x 2 GPUs
# (v100, a40) x seeds 1..10, default recurrences, eta 0.5, beta 2) end to end, REPS times
# (default 11), and prints each wall time and the median. Output files go to a temp dir.
# usage: bench/sim_sweep.sh [BUILD_DIR] [REPS]
set -eu
build=${1:-build}
reps=${2:-11}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
times=()
for i in $(seq "$reps"); do
    t0=$(date +%s.%N)
    for gpu in v100 a40; do
        "$build/src/cli/zbso" simulate --workload all --gpu "$gpu" --seeds 1..10 --eta 0.5 \
            --beta 2 --out "$dir/$gpu" > /dev/null 2>&1
    done
    t1=$(date +%s.%N)
    times+=("$(echo "$t1 - $t0" | bc -l)")
done
runs=$(( $(wc -l < "$dir/v100/runs.csv") + $(wc -l < "$dir/a40/runs.csv") - 2 ))
printf 'sweep (120 simulations, %d runs) wall seconds:' "$runs"
printf ' %.3f' "${times[@]}"; echo
printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "median %.3f s over %d repetitions, %d cores\n", a[int((NR + 1) / 2)], NR, '"$(nproc)"' }'
