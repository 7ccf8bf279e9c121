#!/bin/bash
# monitor_cli.sh: `zbso monitor -- COMMAND` on a machine with an NVIDIA GPU (not run in CI;
# reads the GPU only, changes no setting). Prints what docs/GPU.md records: an idle
# command, a PyTorch workload (when torch is installed) with the energy NVML's counter
# moved by around the whole zbso process (pynvml, when installed), and the exit statuses.
# Fails when a figure is implausible (power outside 1 W .. the max power limit) or a
# status is wrong.
# usage: tests/gpu/monitor_cli.sh [BUNDLE]   (default .gpu-bundle, from tests/gpu/bundle.sh;
#        ZBSO=path/to/zbso overrides the binary)
set -u
bundle=${1:-.gpu-bundle}
export LD_LIBRARY_PATH="$PWD/$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
zbso=${ZBSO:-$bundle/zbso}
fail=0
nvidia-smi --query-gpu=index,name,driver_version,power.limit,power.max_limit --format=csv

# Checks one --json report: every GPU's average power between 1 W and max_w.
check_json() {
    python3 - "$1" "$2" <<'PY' || fail=1
import json, sys
doc = json.loads(open(sys.argv[1]).read())
max_w = float(sys.argv[2])
print(f"time {doc['time_s']:.3f} s, energy {doc['energy_j']:.1f} J on "
      f"{doc['gpu_count']} x {doc['gpu_model']}, exit status {doc['exit_status']}")
bad = False
for g in doc["gpus"]:
    w = g["energy_j"] / doc["time_s"]
    print(f"  GPU {g['index']}: {g['energy_j']:.1f} J, average {w:.1f} W")
    bad |= not (1.0 <= w <= max_w)
sys.exit(1 if bad else 0)
PY
}

max_w=$(nvidia-smi --query-gpu=power.max_limit --format=csv,noheader,nounits | sort -n | tail -1)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== zbso monitor -- sleep 2 (idle), table"
"$zbso" monitor -- sleep 2 || fail=1
echo "== zbso monitor --json -- sleep 2"
"$zbso" monitor --json --output "$out/idle.json" -- sleep 2 || fail=1
check_json "$out/idle.json" "$max_w"

if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    echo "== zbso monitor --interval 2 -- 8 s of bf16 8192x8192 matrix products on GPU 0"
    cat > "$out/work.py" <<'PY'
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
end, n = time.monotonic() + 8.0, 0
while time.monotonic() < end:
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
    n += 20
print(f"{n} products, {n * 2 * 8192**3 / 8.0 / 1e12:.0f} TFLOP/s")
PY
    # pynvml's counter read just before and after the zbso process: an upper bound of what
    # zbso monitor's window (inside that span) can measure on GPU 0.
    python3 - "$zbso" "$out" <<'PY' || fail=1
import json, subprocess, sys
zbso, out = sys.argv[1], sys.argv[2]
try:
    import pynvml
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    read = lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(h) / 1000.0
except Exception as e:  # pynvml missing: the zbso figures alone
    print("no pynvml cross-check:", e)
    read = None
before = read() if read else None
r = subprocess.run([zbso, "monitor", "--json", "--gpus", "0", "--interval", "2",
                    "--output", out + "/work.json", "--", sys.executable, out + "/work.py"])
after = read() if read else None
doc = json.load(open(out + "/work.json"))
print(f"zbso monitor: {doc['time_s']:.3f} s, {doc['energy_j']:.1f} J, "
      f"{doc['energy_j'] / doc['time_s']:.1f} W, exit status {r.returncode}")
if read:
    print(f"NVML counter around the whole zbso process: {after - before:.1f} J "
          f"(zbso monitor's window is {100 * doc['energy_j'] / (after - before):.1f}% of it)")
sys.exit(r.returncode)
PY
    check_json "$out/work.json" "$max_w"
else
    echo "== no PyTorch with CUDA here: the workload is skipped"
fi

echo "== exit statuses"
"$zbso" monitor --json --output "$out/e.json" -- sh -c 'exit 3'; rc=$?
echo "exit 3 -> $rc"; [ "$rc" = 3 ] || fail=1
"$zbso" monitor --json --output "$out/e.json" -- sh -c 'kill -TERM $$'; rc=$?
echo "killed by SIGTERM -> $rc"; [ "$rc" = 143 ] || fail=1
"$zbso" monitor -- zbso-no-such-command 2>/dev/null; rc=$?
echo "missing command -> $rc"; [ "$rc" = 127 ] || fail=1

[ "$fail" = 0 ] && echo "monitor_cli: OK" || echo "monitor_cli: FAILED"
exit "$fail"
