"""campaign.py: the real GPU campaign of issue 21 (not run in CI; reads the GPU only).

One small real PyTorch job (train_torch.py's MLP on teacher-made synthetic data, target
validation accuracy 0.95) is measured once per batch size, run to the target without an
optimizer: the measured oracle. Then N recurrences each under the "zeus" and the "smart"
policy, interleaved (zeus, smart, zeus, ...) so that drift of the GPU's clocks and
temperature falls on both alike, each recurrence a fresh BatchSizeOptimizer as a new
process would make, with fresh job ids per policy and the same mab_seed. The cost of a
recurrence is Zeus's: eta * energy + (1 - eta) * max_power * time, over the whole run.

usage: python3 campaign.py ZEUS_SERVER_URL SMART_SERVER_URL N [JOB_TAG]
The servers are `zbso serve --policy zeus` and `zbso serve --policy smart`."""
import subprocess
import sys
import time

import torch
from torch import nn

from zbso.monitor import ZeusMonitor
from zbso.optimizer.batch_size import BatchSizeOptimizer, JobSpec, ZeusBSOTrainFailError

BATCH_SIZES = [64, 128, 256, 512, 1024, 2048, 4096]
DEFAULT = 256
TARGET = 0.95
MAX_EPOCHS = 20
ETA = 0.5
SEED = 7


def make_data(n, dim, classes, seed):
    g = torch.Generator().manual_seed(seed)
    teacher = torch.randn(dim, classes, generator=g)
    x = torch.randn(n, dim, generator=g)
    y = (x @ teacher).argmax(dim=1)
    return x.cuda(), y.cuda()


X, Y = make_data(262144, 256, 10, seed=1)
VX, VY = make_data(16384, 256, 10, seed=1)


def max_power_w():
    out = subprocess.run(["nvidia-smi", "--id=0", "--query-gpu=power.max_limit",
                          "--format=csv,noheader,nounits"], capture_output=True, text=True)
    return float(out.stdout.strip())


def train(batch_size, bso, monitor, run_id):
    """One run; returns (epochs, seconds, joules, outcome)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3 * (batch_size / 256) ** 0.5)
    loss_fn = nn.CrossEntropyLoss()
    torch.cuda.synchronize()
    monitor.begin_window(run_id)
    if bso is not None:
        bso.on_train_begin()
    outcome, epoch = "max_epochs", 0
    try:
        for epoch in range(1, MAX_EPOCHS + 1):
            perm = torch.randperm(X.shape[0], device="cuda")
            for i in range(0, X.shape[0], batch_size):
                idx = perm[i:i + batch_size]
                opt.zero_grad(set_to_none=True)
                loss_fn(model(X[idx]), Y[idx]).backward()
                opt.step()
            with torch.no_grad():
                acc = (model(VX).argmax(dim=1) == VY).float().mean().item()
            torch.cuda.synchronize()
            if bso is not None:
                bso.on_evaluate(acc)
                if bso.training_finished:
                    outcome = "reached" if acc >= TARGET else "finished"
                    break
            elif acc >= TARGET:
                outcome = "reached"
                break
    except ZeusBSOTrainFailError:
        outcome = "stopped"
    m = monitor.end_window(run_id)
    return epoch, m.time, m.total_energy, outcome


def main():
    urls = {"zeus": sys.argv[1], "smart": sys.argv[2]}
    n = int(sys.argv[3])
    tag = sys.argv[4] if len(sys.argv) > 4 else str(int(time.time()))
    maxp = max_power_w()
    cost = lambda t, e: ETA * e + (1 - ETA) * maxp * t  # noqa: E731
    monitor = ZeusMonitor(gpu_indices=[0])
    train(1024, None, monitor, "warmup")  # CUDA context, kernels, clocks
    print(f"GPU {torch.cuda.get_device_name(0)}, max power {maxp:.0f} W, eta {ETA}")
    print("== oracle: each batch size once to the target, no optimizer")
    oracle = {}
    for bs in BATCH_SIZES:
        ep, t, e, out = train(bs, None, monitor, f"oracle-{bs}")
        oracle[bs] = cost(t, e) if out == "reached" else float("inf")
        print(f"ORACLE bs={bs} epochs={ep} time={t:.2f}s energy={e:.1f}J {out} "
              f"cost={oracle[bs]:.1f}")
    best_bs = min(oracle, key=oracle.get)
    c_best, c_dflt = oracle[best_bs], oracle[DEFAULT]
    print(f"best bs={best_bs} cost={c_best:.1f}; default bs={DEFAULT} cost={c_dflt:.1f}")

    cum = {"zeus": 0.0, "smart": 0.0}
    print("== recurrences (interleaved)")
    print("rec policy    bs  trial epochs  time_s  energy_J     cost  outcome  cum_cost")
    for r in range(1, n + 1):
        for policy in ("zeus", "smart"):
            bso = BatchSizeOptimizer(
                monitor=monitor, server_url=urls[policy],
                job=JobSpec(job_id=f"campaign-{tag}-{policy}", job_id_prefix=f"campaign-{tag}",
                            default_batch_size=DEFAULT, batch_sizes=BATCH_SIZES,
                            max_epochs=MAX_EPOCHS, target_metric=TARGET, mab_seed=SEED,
                            eta_knob=ETA, beta_knob=2.0))
            bs = bso.get_batch_size()
            ep, t, e, out = train(bs, bso, monitor, f"{policy}-{r}")
            c = cost(t, e)
            cum[policy] += c
            print(f"{r:3d} {policy:6s} {bs:5d} {bso.trial_number:6d} {ep:6d} {t:7.2f} "
                  f"{e:9.1f} {c:8.1f}  {out:8s} {cum[policy]:9.1f}", flush=True)
    print("== summary (costs in J-equivalents: eta*E + (1-eta)*maxP*T)")
    print(f"N={n}  N x best ({best_bs}) = {n * c_best:.1f}  N x default ({DEFAULT}) = "
          f"{n * c_dflt:.1f}")
    for p in ("zeus", "smart"):
        print(f"SUMMARY {p}: cumulative {cum[p]:.1f}  regret vs N x best "
              f"{100 * (cum[p] / (n * c_best) - 1):+.1f}%  vs N x default "
              f"{100 * (cum[p] / (n * c_dflt) - 1):+.1f}%")


if __name__ == "__main__":
    main()
