#!/bin/bash
# run_campaign.sh: issue 21's real GPU campaign (docs/GPU.md): two `zbso serve`, one per
# policy (ZBSO_POLICY), and tests/gpu/campaign.py against them. Reads the GPU only. Expects a bundle
# made here by tests/gpu/bundle.sh in $1 (default .gpu-bundle); $2 recurrences (default 14).
set -u
bundle=${1:-.gpu-bundle}
n=${2:-14}
export LD_LIBRARY_PATH="$PWD/$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ZBSO_LIBRARY="$PWD/$bundle/libzbso.so" PYTHONPATH="$PWD/python" ZBSO_LOG_LEVEL=WARN
nvidia-smi --query-gpu=name,driver_version,power.limit,power.max_limit --format=csv
dir=$(mktemp -d)
pids=()
for p in zeus smart; do
    ZBSO_POLICY=$p "$bundle/zbso" serve --port 0 --db "sqlite:///$dir/$p.db" --log-level WARN \
        > "$dir/$p.out" 2>&1 &
    pids+=($!)
done
for p in zeus smart; do
    for _ in $(seq 100); do grep -q listening "$dir/$p.out" && break; sleep 0.1; done
done
zurl=$(sed -n 's/.*listening on //p' "$dir/zeus.out")
surl=$(sed -n 's/.*listening on //p' "$dir/smart.out")
PYTHONUNBUFFERED=1 python3 tests/gpu/campaign.py "$zurl" "$surl" "$n" 2>&1 | tee "${OUT:-$dir}/campaign.log"
kill -TERM "${pids[@]}"; wait
python3 - "$dir" <<'PY'
import sqlite3, sys
for p in ("zeus", "smart"):
    c = sqlite3.connect(f"{sys.argv[1]}/{p}.db")
    print(f"== {p}: trials (number, bs, type 0=Exploration 1=Concurrent 2=MAB, status 1=ok 2=failed, epochs, time, energy, converged)")
    for r in c.execute("select trial_number,batch_size,type,status,epochs,time,energy,converged from trials order by job_id,trial_number"):
        print("%5d %5d %d %d %3s %7.2f %9.1f %s" % (r[0], r[1], r[2], r[3], r[4], r[5] or 0, r[6] or 0, r[7]))
PY
