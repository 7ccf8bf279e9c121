"""power_observer.py: the power-limit optimizer (zbso.optimizer.power_limit) in OBSERVER MODE
around a real PyTorch training loop on one GPU (not run in CI). Observer mode sets nothing:
this script never writes a power limit. It makes sure of it three times: ZBSO_POWER_LIMIT is
forced to "observe" and zeusd's variables are removed before the optimizer is made, the
optimizer must report the observer actuator, and the GPU's power limit (read through NVML
with pynvml when it is installed, else nvidia-smi) must be the same before and after.

What it prints (docs/GPU.md records it):
- the profile: each power limit from the highest down by PL_STEP W, its time and energy per
  step, measured at the GPU's current limit (observer mode: every window runs at it), and the
  limit ZeusCost(0.5) would choose;
- the callbacks' overhead: the wall time of every on_step_begin() call (percentiles, and
  the calls that open or close a window separately: they read the energy counter and wait
  for the queued GPU work), and their total over the run against the total step time;
- the step time without the optimizer (a second loop of the same length), for comparison.

usage: python3 power_observer.py [--fake] [STEPS_AFTER_PROFILING] (default 500). Steps are
about 60 ms (an MLP of width 8192 on bf16, batch 4096); PL_STEP is 50 W, warm-up 5 and 20
steps measured per limit, so profiling a 700 W GPU down to 200 W takes 11 limits x 25 steps.
--fake: no torch, no GPU: each step is the fake NVML's ($ZBSO_NVML_LIBRARY's
fake_nvml_step), and the limit is read from it; CI runs the script this way
(tests/python/test_power_limit.py) so that the GPU run does not meet a bug first."""
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

os.environ["ZBSO_POWER_LIMIT"] = "observe"   # before the optimizer reads it
for k in ("ZEUSD_SOCK_PATH", "ZEUSD_HOST_PORT", "ZEUS_USE_OPTIMAL_PL", "ZEUS_BSO_SERVER_URL"):
    os.environ.pop(k, None)

FAKE = "--fake" in sys.argv[1:]
if not FAKE:
    import torch  # noqa: E402
    from torch import nn  # noqa: E402

from zbso.monitor import ZeusMonitor  # noqa: E402
from zbso.optimizer.power_limit import GlobalPowerLimitOptimizer, ZeusCost  # noqa: E402

PL_STEP, WARMUP, PROFILE = 50, 5, 20


def power_limit_mw():
    """GPU 0's power limit now (mW), read only."""
    if FAKE:
        nvml = ctypes.CDLL(os.environ["ZBSO_NVML_LIBRARY"])
        dev, mw = ctypes.c_void_p(), ctypes.c_uint()
        nvml.nvmlInit_v2()
        nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev))
        nvml.nvmlDeviceGetPowerManagementLimit(dev, ctypes.byref(mw))
        return mw.value
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        return pynvml.nvmlDeviceGetPowerManagementLimit(h)
    except ImportError:
        out = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=power.limit",
                              "--format=csv,noheader,nounits"], capture_output=True,
                             text=True, check=True).stdout
        return int(round(float(out.strip()) * 1000))


def make_model():
    if FAKE:
        nvml = ctypes.CDLL(os.environ["ZBSO_NVML_LIBRARY"])
        return nvml, None, None
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8192, 8192), nn.GELU(), nn.Linear(8192, 8192), nn.GELU(),
                          nn.Linear(8192, 8192)).cuda().to(torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    # ZBSO_GPU_BATCH: the batch (default 4096); an H100 runs 4096 in ~8 ms a step, 32768 in
    # ~59 ms, the step length the overhead target is stated for.
    x = torch.randn(int(os.environ.get("ZBSO_GPU_BATCH", "4096")), 8192, device="cuda",
                    dtype=torch.bfloat16)
    return model, opt, x


def step(model, opt, x):
    if FAKE:
        return model.fake_nvml_step(0)
    opt.zero_grad(set_to_none=True)
    loss = model(x).float().pow(2).mean()
    loss.backward()
    opt.step()
    return loss.item()   # a real loop's per-step sync (logging the loss)


def sync():
    if not FAKE:
        torch.cuda.synchronize()


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def main():
    args = [a for a in sys.argv[1:] if a != "--fake"]
    after = int(args[0]) if args else 500
    limit_before = power_limit_mw()
    model, opt, x = make_model()
    for _ in range(5):
        step(model, opt, x)   # CUDA and cuBLAS warm-up, outside every measurement
    sync()

    monitor = ZeusMonitor(gpu_indices=[0])
    plo = GlobalPowerLimitOptimizer(monitor, ZeusCost(eta_knob=0.5, world_size=1),
                                    wait_steps=1, warmup_steps=WARMUP, profile_steps=PROFILE,
                                    pl_step=PL_STEP)
    if plo.actuator != "observer mode (nothing is set)":
        sys.exit(f"refusing to run: the optimizer's actuator is {plo.actuator!r}")
    calls, edges, steps_s = [], [], []
    n = 0
    start = time.perf_counter()
    while plo.state != "Done" or n < plo.profiling_steps + after:
        before = (plo.state, len(plo.measurements))
        t0 = time.perf_counter()
        plo.on_step_begin()
        t1 = time.perf_counter()
        step(model, opt, x)
        t2 = time.perf_counter()
        # A call that moved the state machine opened or closed a window (or would have set
        # a limit): those read the energy counter and wait for the GPU's queued work.
        changed = (plo.state, len(plo.measurements)) != before
        (edges if changed else calls).append(t1 - t0)
        steps_s.append(t2 - t0)
        n += 1
    total = time.perf_counter() - start
    plo.on_epoch_end()

    # The same number of steps without the optimizer.
    sync()
    bare = []
    for _ in range(n):
        t0 = time.perf_counter()
        step(model, opt, x)
        bare.append(time.perf_counter() - t0)

    limit_after = power_limit_mw()
    overhead = sum(calls) + sum(edges)
    print("== GPU", "fake NVML" if FAKE else torch.cuda.get_device_name(0), "power limit",
          limit_before / 1000, "W")
    print("== profile (observer mode: every window at the current limit)")
    print("limit_W  time_per_step_ms  energy_per_step_J  avg_power_W")
    for m in plo.measurements:
        t, e = m.time / PROFILE, m.energy / PROFILE
        print(f"{m.power_limit:7d}  {t * 1e3:16.2f}  {e:17.2f}  {e / t:11.1f}")
    print(f"chosen (ZeusCost 0.5, as if set): {plo.optimal_power_limit // 1000} W; "
          f"profiling took {plo.profiling_steps} steps")
    acc_steps, acc_t, acc_e = plo.accounted
    print(f"accounted after profiling (as if at the chosen limit): {acc_steps} steps, "
          f"{acc_t:.2f} s, {acc_e:.1f} J")
    print("== callback overhead: on_step_begin() wall time")
    us = [c * 1e6 for c in calls]
    print(f"plain calls: {len(calls)}, median {statistics.median(us):.1f} us, "
          f"p99 {pct(us, 99):.1f} us, max {max(us):.1f} us")
    es = [c * 1e3 for c in edges]
    if es:
        print(f"calls that changed state (set a limit, opened or closed a window): {len(es)}, "
              f"median {statistics.median(es):.2f} ms, max {max(es):.2f} ms")
    print(f"steps: {n}, median step {statistics.median(steps_s) * 1e3:.2f} ms "
          f"(without the optimizer: {statistics.median(bare) * 1e3:.2f} ms)")
    print(f"all callbacks together: {overhead:.3f} s of {total:.2f} s = "
          f"{100 * overhead / total:.3f}% of the run "
          f"({overhead / n * 1e3:.3f} ms per step, "
          f"{100 * overhead / n / statistics.median(bare):.3f}% of a step)")
    print(f"set calls: {plo.set_count}; power limit before {limit_before} mW, after "
          f"{limit_after} mW")
    print("RESULT " + json.dumps({
        "profile": [[m.power_limit, m.time / PROFILE, m.energy / PROFILE]
                    for m in plo.measurements],
        "optimal_w": plo.optimal_power_limit // 1000, "steps": n,
        "median_step_ms": statistics.median(steps_s) * 1e3,
        "median_bare_step_ms": statistics.median(bare) * 1e3,
        "overhead_pct_of_step": 100 * overhead / n / statistics.median(bare),
        "set_count": plo.set_count, "limit_before_mw": limit_before,
        "limit_after_mw": limit_after}))
    if plo.set_count != 0 or limit_after != limit_before:
        sys.exit("a power limit changed: this must never happen in observer mode")


if __name__ == "__main__":
    main()
