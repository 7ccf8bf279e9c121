#!/usr/bin/env python3
"""gpu_family.py: writes a family of synthetic GPUs' power traces, drawn from the shipped
v100 and a40 traces with a fixed seed, to check that a batch size policy holds on GPUs
whose traces we do not have (docs/SIMULATION.md, "A family of synthetic GPUs").

usage: gpu_family.py DATA_DIR OUT_DIR [--seed N] [--count N] [--prefix P] [--set S] [--list]

OUT_DIR/traces/ gets summary_power_gNN.csv for each variant, the shipped v100 and a40
traces and summary_train.csv (the train trace is the same on every GPU), so that
`zbso simulate --data-dir OUT_DIR --gpu gNN` reads a variant. --list prints the variants'
parameters (also written to OUT_DIR/family.csv). Standard library only; the same seed
gives the same files, byte for byte.

Each variant starts from one base trace (v100 or a40) and changes, per workload:
- speed: every epoch time x S (a faster or slower GPU), S log-uniform in [0.45, 1.6];
- power draw: average power x P, P log-uniform in [0.75, 1.35];
- power-limit range: the limits mapped linearly onto one of the ranges of real boards
  (70-250, 100-300, 150-400, 200-700, 100-450 W), average power by the same ratio;
- power-limit sensitivity: t(b, p) = t(b, max) x (t(b, p) / t(b, max))^K, K in [0.6, 1.4];
- saturation: epoch time x ((1 + H/b) / (1 + H/b_ref))^A, b_ref the workload's middle
  size, H a multiple in [0.25, 4] of b_ref (A > 0: small batches memory- or launch-bound,
  the GPU saturates at a larger batch size; A < 0: it saturates sooner), A in [-0.5, 0.8];
- large-batch shape: epoch time x (b / b_ref)^T, T in [-0.15, 0.15];
- per-batch-size jitter: x exp(J Z) per (workload, batch size), all limits together (a
  kernel choice that suits one size), J uniform in [0, 0.12]; and x exp(0.02 Z) per row
  (the profile's own measurement noise).
Variants g01..g10 are the tuning set, g11..g16 are held out (decided before any tuning).
--prefix P names the variants PNN instead of gNN and --set S puts every one in set S (a
second family for validation only, e.g. --seed 7 --prefix f --set fresh); the default
seed, prefix and sets give the family above, byte for byte."""
import argparse
import csv
import math
import os
import random
import shutil

PL_RANGES = [(70, 250), (100, 300), (150, 400), (200, 700), (100, 450)]
TUNE = 10


def draw(rng, k, prefix="g", set_name=None):
    """The parameters of variant k (1-based) from rng."""
    return {
        "name": f"{prefix}{k:02d}",
        "set": set_name or ("tune" if k <= TUNE else "held-out"),
        "base": rng.choice(["v100", "a40"]),
        "speed": math.exp(rng.uniform(math.log(0.45), math.log(1.6))),
        "power": math.exp(rng.uniform(math.log(0.75), math.log(1.35))),
        "pl_range": rng.choice(PL_RANGES),
        "pl_sens": rng.uniform(0.6, 1.4),
        "sat_h": math.exp(rng.uniform(math.log(0.25), math.log(4.0))),
        "sat_a": rng.uniform(-0.5, 0.8),
        "tilt": rng.uniform(-0.15, 0.15),
        "jitter": rng.uniform(0.0, 0.12),
        "seed": rng.randrange(1 << 30),
    }


def transform(rows, v):
    """The variant v of the base trace's rows (dicts), in the same order."""
    rng = random.Random(v["seed"])
    by_wl = {}
    for r in rows:
        by_wl.setdefault((r["dataset"], r["network"], r["optimizer"]), []).append(r)
    lo, hi = v["pl_range"]
    out = []
    jit = {}
    for key, rs in by_wl.items():
        sizes = sorted({int(r["batch_size"]) for r in rs})
        b_ref = sizes[len(sizes) // 2]
        pls = sorted({int(r["power_limit"]) for r in rs})
        p_lo, p_hi = pls[0], pls[-1]
        t_max = {int(r["batch_size"]): float(r["time_per_epoch"]) for r in rs
                 if int(r["power_limit"]) == p_hi}
        h = v["sat_h"] * b_ref
        for r in rs:
            b, p = int(r["batch_size"]), int(r["power_limit"])
            if (key, b) not in jit:
                jit[(key, b)] = math.exp(v["jitter"] * rng.gauss(0.0, 1.0))
            t = float(r["time_per_epoch"])
            if b in t_max and t_max[b] > 0:
                t = t_max[b] * (t / t_max[b]) ** v["pl_sens"]
            t *= v["speed"] * ((1 + h / b) / (1 + h / b_ref)) ** v["sat_a"]
            t *= (b / b_ref) ** v["tilt"] * jit[(key, b)] * math.exp(0.02 * rng.gauss(0.0, 1.0))
            p_new = lo + (p - p_lo) * (hi - lo) / (p_hi - p_lo) if p_hi > p_lo else hi
            pw = float(r["average_power"]) * v["power"] * p_new / p
            o = dict(r)
            o["power_limit"] = str(int(round(p_new)))
            o["time_per_epoch"] = repr(t)
            o["average_power"] = repr(pw)
            out.append(o)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--count", type=int, default=16)
    ap.add_argument("--prefix", default="g")
    ap.add_argument("--set", default=None)
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    variants = [draw(rng, k, a.prefix, a.set) for k in range(1, a.count + 1)]
    tdir = os.path.join(a.out_dir, "traces")
    os.makedirs(tdir, exist_ok=True)
    for f in ("summary_train.csv", "summary_power_v100.csv", "summary_power_a40.csv"):
        shutil.copyfile(os.path.join(a.data_dir, "traces", f), os.path.join(tdir, f))
    fields = ["name", "set", "base", "speed", "power", "pl_range", "pl_sens", "sat_h",
              "sat_a", "tilt", "jitter"]
    with open(os.path.join(a.out_dir, "family.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(fields)
        for v in variants:
            w.writerow([v[k] if not isinstance(v[k], float) else f"{v[k]:.3f}"
                        for k in fields[:5]] +
                       [f"{v['pl_range'][0]}-{v['pl_range'][1]}"] +
                       [f"{v[k]:.3f}" for k in fields[6:]])
    for v in variants:
        with open(os.path.join(tdir, f"summary_power_{v['base']}.csv"), newline="") as f:
            r = csv.DictReader(f)
            names, rows = r.fieldnames, list(r)
        with open(os.path.join(tdir, f"summary_power_{v['name']}.csv"), "w", newline="") as g:
            w = csv.DictWriter(g, fieldnames=names, lineterminator="\n")
            w.writeheader()
            w.writerows(transform(rows, v))
    if a.list:
        with open(os.path.join(a.out_dir, "family.csv")) as f:
            print(f.read(), end="")


if __name__ == "__main__":
    main()
