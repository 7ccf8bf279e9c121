#!/usr/bin/env python3
"""fake_power_train.py: a stand-in training script for `zbso run --power-limit` tests.
Standard library only. Each step sleeps as long as the fake NVML says a step takes at GPU
0's current power limit (fake_nvml_step, from $ZBSO_NVML_LIBRARY), and prints "step N"
(N counting every step so far); each epoch ends with "epoch E val_acc=X", X = E * rate.

Options: --steps N (steps per epoch, 100) --epochs N (10) --rate R (0.5)
  --record FILE   append the ZEUS_/ZBSO_ environment as one JSON line
  --set-limit MW  set GPU 0's power limit through NVML first (as a power-limit optimizer
                  in the script would)
  --sigkill       then kill itself with SIGKILL (nothing in the process can restore)"""

import ctypes
import json
import os
import signal
import sys


def main():
    opts = {"steps": 100, "epochs": 10, "rate": 0.5, "record": None, "set_limit": 0,
            "sigkill": False}
    args = sys.argv[1:]
    i = 0
    while i < len(args):
        key = args[i][2:].replace("-", "_")
        if key == "sigkill":
            opts[key] = True
        else:
            opts[key] = type(opts[key])(args[i + 1]) if opts[key] is not None else args[i + 1]
            i += 1
        i += 1
    if opts["record"]:
        env = {k: v for k, v in os.environ.items() if k.startswith(("ZEUS_", "ZBSO_P"))}
        with open(opts["record"], "a") as f:
            f.write(json.dumps(env) + "\n")
    nvml = ctypes.CDLL(os.environ["ZBSO_NVML_LIBRARY"])
    nvml.fake_nvml_step.argtypes = [ctypes.c_uint]
    if nvml.nvmlInit_v2() != 0:
        sys.exit("fake_power_train: nvmlInit failed")
    if opts["set_limit"]:
        dev = ctypes.c_void_p()
        if (nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) != 0 or
                nvml.nvmlDeviceSetPowerManagementLimit(dev, opts["set_limit"]) != 0):
            sys.exit("fake_power_train: could not set the power limit")
        print(f"set GPU 0 to {opts['set_limit']} mW", flush=True)
    if opts["sigkill"]:
        os.kill(os.getpid(), signal.SIGKILL)
    step = 0
    for epoch in range(1, opts["epochs"] + 1):
        for _ in range(opts["steps"]):
            nvml.fake_nvml_step(0)
            step += 1
            print(f"step {step}", flush=True)
        print(f"epoch {epoch} val_acc={min(1.0, epoch * opts['rate']):.4f}", flush=True)


if __name__ == "__main__":
    main()
