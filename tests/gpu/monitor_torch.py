"""monitor_torch.py: the zbso energy monitor around a real PyTorch workload on a GPU
(not run in CI). Reads only; changes no GPU setting.

Checks: energy > 0; average power above the idle reading and below the max power limit;
the monitor's energy (NVML's energy counter) agrees within 5% with an independent
integration of NVML power samples (pynvml, every 10 ms) over the same window; a window
ending after 200 queued (asynchronous) products waits for them (sync_execution) and is
more than 5 times longer than the same window without the wait. Prints the CPU package and
DRAM energy of the window (RAPL) where it can be read, or why not."""
import sys
import threading
import time

import pynvml
import torch

from zbso import ZeusMonitor


def sample_power(handle, stop, samples):
    while not stop.is_set():
        samples.append((time.monotonic(), pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0))
        time.sleep(0.01)


def integrate(samples, t0, t1):
    pts = [(t, p) for t, p in samples if t0 <= t <= t1]
    return sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(pts, pts[1:])), pts


def main():
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    limit_w = pynvml.nvmlDeviceGetPowerManagementLimitConstraints(handle)[1] / 1000.0
    mon = ZeusMonitor(gpu_indices=[0])

    mon.begin_window("idle")
    time.sleep(2.0)
    idle = mon.end_window("idle")
    idle_w = idle.total_energy / idle.time
    print(f"idle: {idle.time:.3f} s, {idle.total_energy:.1f} J, {idle_w:.1f} W")

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()

    # NVML's power reading is averaged over about a second on this GPU, so it lags a change
    # of load; the window therefore opens and closes while the GPU is in a steady state
    # (products running for 2 s before and 1 s after it), where the lag cancels out.
    samples, stop = [], threading.Event()
    sampler = threading.Thread(target=sample_power, args=(handle, stop, samples))
    sampler.start()
    start = time.monotonic()
    n = 0
    m = None
    t0 = t1 = None
    while True:
        for _ in range(25):
            a @ b
        torch.cuda.synchronize()
        now = time.monotonic()
        if t0 is None and now - start >= 2.0:
            mon.begin_window("matmul")
            t0 = time.monotonic()
        elif t0 is not None and m is None:
            n += 25
            if now - t0 >= 8.0:
                t1 = time.monotonic()
                m = mon.end_window("matmul")
        elif m is not None and now - t1 >= 1.0:
            break
    stop.set()
    sampler.join()

    avg_w = m.total_energy / m.time
    sampled_j, pts = integrate(samples, t0, t1)
    diff = abs(m.total_energy - sampled_j) / sampled_j
    tflops = 2 * 8192 ** 3 * n / m.time / 1e12
    print(f"matmul: {n} bf16 8192^3 products, {tflops:.0f} TFLOP/s")
    print(f"monitor: {m.time:.3f} s, {m.total_energy:.1f} J, average {avg_w:.1f} W "
          f"(idle {idle_w:.1f} W, max power limit {limit_w:.0f} W)")
    print(f"power sampling: {len(pts)} samples, {sampled_j:.1f} J, difference {diff * 100:.2f}%")
    if m.cpu_energy is None:
        print(f"cpu: not measured ({mon.cpu_unavailable_reason})")
    else:
        print(f"cpu: {m.cpu_energy} J, dram: {m.dram_energy} J over the same window")

    # sync_execution: products queued inside a window are waited for at its end.
    torch.cuda.synchronize()
    mon.begin_window("sync")
    for _ in range(200):
        a @ b
    synced = mon.end_window("sync")
    torch.cuda.synchronize()
    mon.begin_window("nosync", sync_execution=False)
    for _ in range(200):
        a @ b
    unsynced = mon.end_window("nosync", sync_execution=False)
    torch.cuda.synchronize()
    print(f"sync_execution: 200 queued products: window {synced.time * 1e3:.1f} ms, "
          f"{synced.total_energy:.1f} J; without the wait {unsynced.time * 1e3:.1f} ms, "
          f"{unsynced.total_energy:.1f} J")
    ok = m.total_energy > 0 and idle_w < avg_w < limit_w and diff <= 0.05
    ok = ok and synced.time > 5 * unsynced.time
    print("monitor_torch:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
