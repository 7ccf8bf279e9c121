"""train_torch.py: one recurrence of a small real PyTorch training job that uses the zbso
Python binding exactly as seed 003 shows for Zeus (not run in CI). Synthetic data: a
classification task made by a fixed random teacher network, so every run sees the same
data; the batch size changes how fast the target accuracy is reached.

Besides seed 003's calls, one more window of the same monitor spans the whole run and its
Measurement is printed: GPU energy next to CPU package and DRAM energy from RAPL (every
package, as Zeus's monitor measures by default), or why RAPL cannot be read. The windows
synchronize PyTorch's CUDA stream at their edges (sync_execution), as Zeus's do.

usage: python3 train_torch.py SERVER_URL JOB_ID"""
import sys
import time

import torch
from torch import nn

from zbso.monitor import ZeusMonitor
from zbso.optimizer.batch_size import BatchSizeOptimizer, JobSpec, ZeusBSOTrainFailError


def make_data(n, dim, classes, seed):
    g = torch.Generator().manual_seed(seed)
    teacher = torch.randn(dim, classes, generator=g)
    x = torch.randn(n, dim, generator=g)
    y = (x @ teacher).argmax(dim=1)
    return x.cuda(), y.cuda()


def main():
    server_url, job_id = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    x, y = make_data(262144, 256, 10, seed=1)
    vx, vy = make_data(16384, 256, 10, seed=1)
    vx, vy = vx[:16384], vy[:16384]

    monitor = ZeusMonitor(gpu_indices=[0])
    bso = BatchSizeOptimizer(
        monitor=monitor,
        server_url=server_url,
        job=JobSpec(job_id=job_id, job_id_prefix="h200-mlp", default_batch_size=256,
                    batch_sizes=[64, 128, 256, 512, 1024, 4096], max_epochs=20,
                    target_metric=0.95, mab_seed=7, num_pruning_rounds=1),
    )
    batch_size = bso.get_batch_size()
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3 * (batch_size / 256) ** 0.5)
    loss_fn = nn.CrossEntropyLoss()

    monitor.begin_window("run")
    bso.on_train_begin()
    start = time.monotonic()
    epoch = 0
    try:
        for epoch in range(1, 21):
            perm = torch.randperm(x.shape[0], device="cuda")
            for i in range(0, x.shape[0], batch_size):
                idx = perm[i:i + batch_size]
                opt.zero_grad(set_to_none=True)
                loss_fn(model(x[idx]), y[idx]).backward()
                opt.step()
            with torch.no_grad():
                acc = (model(vx).argmax(dim=1) == vy).float().mean().item()
            torch.cuda.synchronize()
            bso.on_evaluate(acc)
            print(f"  epoch {epoch}: val_acc={acc:.4f}")
            if bso.training_finished:
                break
        outcome = "converged"
    except ZeusBSOTrainFailError as e:
        outcome = f"stopped: {e}"
    run = monitor.end_window("run")
    print(f"RESULT batch_size={batch_size} trial={bso.trial_number} epochs={epoch} "
          f"wall={time.monotonic() - start:.1f}s {outcome}")
    print(f"ENERGY time={run.time:.2f}s gpu={run.total_energy:.1f}J "
          f"(reported to the server: {bso.consumed_energy:.1f}J over {bso.running_time:.2f}s) "
          + cpu_text(monitor, run))


def cpu_text(monitor, m):
    """The CPU and DRAM energy of Measurement m per RAPL package, or why there is none."""
    if m.cpu_energy is None:
        return f"cpu=unavailable ({monitor.cpu_unavailable_reason})"
    parts = [f"cpu{i}={j:.1f}J" for i, j in m.cpu_energy.items()]
    parts += [f"dram{i}={j:.1f}J" for i, j in (m.dram_energy or {}).items()]
    return " ".join(parts)


if __name__ == "__main__":
    main()
