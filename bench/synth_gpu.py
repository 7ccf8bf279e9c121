#!/usr/bin/env python3
"""synth_gpu.py: writes a synthetic GPU's power trace from a real one, to check that a batch
size policy is not tuned to the GPUs whose traces ship (docs/BENCHMARKS.md, "Smart policy").

usage: synth_gpu.py IN.csv OUT.csv [--time-scale S] [--power-scale S] [--tilt E]
                    [--perturb SIGMA] [--seed N]

Every row's time_per_epoch is multiplied by time-scale x (batch_size / 256)^tilt x a
lognormal factor exp(SIGMA Z) drawn per (workload, batch size) (so all power limits of a
batch size move together, as a faster or slower kernel would), and average_power by
power-scale. tilt > 0 makes large batch sizes relatively slower (the cost valley moves to
smaller sizes), tilt < 0 the opposite. Standard library only; deterministic for a seed."""
import argparse
import csv
import math
import random


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("inp")
    ap.add_argument("out")
    ap.add_argument("--time-scale", type=float, default=1.0)
    ap.add_argument("--power-scale", type=float, default=1.0)
    ap.add_argument("--tilt", type=float, default=0.0)
    ap.add_argument("--perturb", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    factor = {}
    with open(a.inp, newline="") as f, open(a.out, "w", newline="") as g:
        r = csv.DictReader(f)
        w = csv.DictWriter(g, fieldnames=r.fieldnames, lineterminator="\n")
        w.writeheader()
        for row in r:
            key = (row["dataset"], row["network"], row["optimizer"], row["batch_size"])
            if key not in factor:
                factor[key] = math.exp(a.perturb * rng.gauss(0.0, 1.0))
            bs = int(row["batch_size"])
            t = float(row["time_per_epoch"]) * a.time_scale * (bs / 256.0) ** a.tilt
            row["time_per_epoch"] = repr(t * factor[key])
            row["average_power"] = repr(float(row["average_power"]) * a.power_scale)
            w.writerow(row)


if __name__ == "__main__":
    main()
