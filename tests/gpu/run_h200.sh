#!/bin/bash
# run_h200.sh: the GPU checks of the client issue, on a machine with an NVIDIA GPU and
# PyTorch (not run in CI; reads the GPU only, changes no setting). Expects a bundle made
# here by tests/gpu/bundle.sh (zbso, libzbso.so and the shared libraries they need) in
# $1 (default .gpu-bundle). Prints everything docs/GPU.md records: with the Python binding,
# GPU energy and, where the machine's RAPL files can be read, CPU and DRAM energy.
set -u
bundle=${1:-.gpu-bundle}
export LD_LIBRARY_PATH="$PWD/$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ZBSO_LIBRARY="$PWD/$bundle/libzbso.so" PYTHONPATH="$PWD/python"
nvidia-smi --query-gpu=name,driver_version,power.limit,power.max_limit --format=csv
echo "== RAPL (CPU and DRAM energy): user $(id -un), ${ZBSO_POWERCAP_ROOT:-/sys/class/powercap}"
for z in "${ZBSO_POWERCAP_ROOT:-/sys/class/powercap}"/intel-rapl:*; do
    [ -e "$z/energy_uj" ] || continue
    printf '%s %s: ' "$(basename "$z")" "$(cat "$z/name" 2>/dev/null)"
    cat "$z/energy_uj" 2>&1 | head -1
done
python3 - <<'PY'
from zbso.monitor import ZeusMonitor
m = ZeusMonitor(gpu_indices=[])
print("zbso cpu_indices:", m.cpu_indices, "|", m.cpu_unavailable_reason or "readable")
PY
echo "== window edge cost, real NVML"
"$bundle/zbso-monitor-bench" --nvml libnvidia-ml.so.1 --gpus 1 --pairs 30 --window-s 2
echo "== monitor around a PyTorch workload"
python3 tests/gpu/monitor_torch.py
echo "== zbso serve + PyTorch training recurrences through the Python binding"
db=$(mktemp -d)/gpu.db
"$bundle/zbso" serve --port 0 --db "sqlite:///$db" --log-level WARN > /tmp/serve.out &
srv=$!
for _ in $(seq 50); do grep -q listening /tmp/serve.out && break; sleep 0.1; done
url=$(sed -n 's/.*listening on //p' /tmp/serve.out)
for rec in 1 2 3 4 5 6; do
    echo "-- recurrence $rec"
    python3 tests/gpu/train_torch.py "$url" "h200-mlp-1" | grep -E "RESULT|epoch"
done
kill -TERM $srv; wait $srv; echo "server exit $?"
python3 - "$db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print("trial  bs    type  status  epochs  time_s  energy_J  converged")
for r in c.execute("select trial_number,batch_size,type,status,epochs,time,energy,converged from trials order by trial_number"):
    print("%5d %5d %5d %7d %7s %7.1f %9.1f %s" % (r[0], r[1], r[2], r[3], r[4], r[5] or 0, r[6] or 0, r[7]))
PY
