#!/bin/sh
# jitter_family.sh DATA_DIR OUT_DIR [COUNT]: COUNT (default 16) synthetic GPUs p1..pCOUNT,
# each the shipped a40 (odd k) or v100 (even k) trace with only a 15% per-batch-size jitter
# (bench/synth_gpu.py --perturb 0.15 --seed k), laid out as gpu_family.py's OUT_DIR (traces/
# with the shipped and train traces, family.csv with name,set,base; set "jitter") so that
# bench/smart_family.py runs them (docs/BENCHMARKS.md, "Smart policy"). p1 and p2 are the
# s2 and s3 of the older single-change variants. Deterministic.
set -eu
data=$1 out=$2 count=${3:-16}
here=$(dirname "$0")
mkdir -p "$out/traces"
for f in summary_train.csv summary_power_v100.csv summary_power_a40.csv; do
    cp "$data/traces/$f" "$out/traces/$f"
done
echo "name,set,base" > "$out/family.csv"
k=1
while [ "$k" -le "$count" ]; do
    if [ $((k % 2)) -eq 1 ]; then base=a40; else base=v100; fi
    "$here/synth_gpu.py" "$data/traces/summary_power_$base.csv" \
        "$out/traces/summary_power_p$k.csv" --perturb 0.15 --seed "$k"
    echo "p$k,jitter,$base" >> "$out/family.csv"
    k=$((k + 1))
done
