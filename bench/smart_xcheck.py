#!/usr/bin/env python3
"""smart_xcheck.py: checks zbso's smart policy (src/core/smart.c) trial by trial against an
independent numpy model of its rules, built on the numpy prototype of issue 21 (zsim.py,
policies.py' SmartPrune; not part of the repository).

STALE: the model is of the FIRST version of the smart policy only (the walk ending at the
first size past 1.2 x the best, confirmation, Thompson sampling with Zeus's per-arm fit,
the warm start's jump). It does not model the rules added since (one bump allowed, the
second run of a size an outlier epoch count explains, the pooled bound on the arms' noise,
the warm walk's pruning: SPEC 3.8), so against the current `zbso simulate --policy smart`
it reports differences that are not bugs. It agreed run for run with the first version
(docs/BENCHMARKS.md, "Smart policy"); updating it needs the prototype, which is not here.

usage: smart_xcheck.py DECISION_DIR ZBSO_BIN [SEEDS]

For v100 and a40, eta 0.5 and 1, every workload and seeds 1..SEEDS (default 10), runs
`zbso simulate --policy smart` and the model, and compares every run: batch size, cost
(1e-9 relative) and converged. Prints the first difference of each job that differs and a
count. Needs python3-numpy and python3-pandas (Debian) for the prototype."""
import collections
import csv
import math
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, sys.argv[1])
import numpy as np
from zsim import WORKLOADS, load_workload, simulate
from policies import REGISTRY

Base = REGISTRY["smart_naive_ec"]

class SmartC(Base):
    name = "smart_c"
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.all_runs = []
    def mean_min(self):
        d = collections.defaultdict(list)
        for bs, c, conv in self.all_runs:
            if conv: d[bs].append(c)
        means = []
        for bs in sorted(d):
            s = 0.0
            for x in d[bs]: s += x
            means.append(s / len(d[bs]))
        return min(means) if means else None
    def cost_ub(self):
        m = self.mean_min()
        return self.beta * m if m is not None else math.inf
    def _end_walk(self):
        self.walk_dir += 1
        self.walk_pos = 0
        self.prev = self.A(self.start)
        if self.walk_dir == 1:
            B = self.best(); s = self.A(self.start)
            if B is not None and B.i < s.i and s.obs and self.steady(B) < 0.5 * self.steady(s):
                self.walk_dir = 2
    def observe(self, run):
        # zbso's cost per epoch is the run's cost over its epochs, at every use
        from policies import _copy_run
        self.all_runs.append((run.bs, run.cost, run.converged))
        if run.epochs > 0:
            run = _copy_run(run, epoch_cost=run.cost / run.epochs, profiled=False)
        super().observe(run)
    def _mab_next(self):
        mc = self.mean_min()
        best, best_s = None, None
        for b in sorted(self.arms):
            o = np.array([-c if conv else -(c + mc) for bs, c, conv in self.all_runs if bs == b])
            from zeus_policy import fit_arm
            mean, prec = fit_arm(o)
            s = self.rng.normal(mean, np.sqrt(np.reciprocal(prec)))
            if best is None or s > best_s:
                best, best_s = b, s
        return best

Z = sys.argv[2]
seeds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
OUT = tempfile.mkdtemp(prefix="zbso-smart-xcheck-")
jobs = rows_n = bad = 0
for gpu in ("v100", "a40"):
    for eta in (0.5, 1.0):
        subprocess.run([Z, "simulate", "--policy", "smart", "--gpu", gpu, "--eta", str(eta),
                        "--seeds", f"1..{seeds}", "--out", OUT], capture_output=True, check=True)
        ref = collections.defaultdict(list)
        for r in csv.DictReader(open(OUT + "/runs.csv")):
            ref[(r["workload"], int(r["seed"]))].append(r)
        for wl in WORKLOADS:
            w = load_workload(wl, gpu, eta)
            for s in range(1, seeds + 1):
                runs, _, _ = simulate(SmartC(w, eta, 2.0, s, {}), w, s, eta)
                rr = ref[(wl, s)]
                jobs += 1
                first = None
                for i, (a, b) in enumerate(zip(runs, rr)):
                    rows_n += 1
                    if a.bs != int(b["bs"]) or abs(a.cost - float(b["cost"])) > 1e-9 * a.cost or \
                            bool(a.converged) != (b["reached"] == "true"):
                        first = i; break
                if first is None and len(runs) != len(rr):
                    first = min(len(runs), len(rr))
                if first is not None:
                    bad += 1
                    print(f"DIFF {wl} {gpu} eta {eta} seed {s} at run {first}: model "
                          f"{[(x.bs, x.converged) for x in runs[max(0,first-2):first+2]]} vs zbso "
                          f"{[(x['bs'], x['reached']) for x in rr[max(0,first-2):first+2]]}")
shutil.rmtree(OUT)
print(f"{jobs} jobs, {rows_n} runs compared, {bad} jobs differing")
sys.exit(1 if bad else 0)
