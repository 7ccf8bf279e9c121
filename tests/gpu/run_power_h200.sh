#!/bin/bash
# run_power_h200.sh: the power-limit optimizer in OBSERVER MODE around a real PyTorch training
# loop on one GPU (issue 15's GPU check; not run in CI). Never writes a power limit: observer
# mode sets nothing, and power_observer.py fails if the limit or the set count moved.
# Expects a bundle made by tests/gpu/bundle.sh in $1 (default .gpu-bundle); run from the
# repository root. Prints what docs/GPU.md records.
set -u
# ZBSO_GPU_BATCH (power_observer.py) sets the batch, hence the step length.
bundle=${1:-.gpu-bundle}
export LD_LIBRARY_PATH="$PWD/$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ZBSO_LIBRARY="$PWD/$bundle/libzbso.so" PYTHONPATH="$PWD/python"
export ZBSO_POWER_LIMIT=observe
unset ZEUSD_SOCK_PATH ZEUSD_HOST_PORT
nvidia-smi --query-gpu=name,driver_version,power.limit,power.min_limit,power.max_limit \
    --format=csv
python3 tests/gpu/power_observer.py "${2:-500}"
status=$?
nvidia-smi --query-gpu=power.limit --format=csv
exit $status
