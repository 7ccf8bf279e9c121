#!/usr/bin/env python3
"""smart_family.py: the smart policy against Zeus's on a family of synthetic GPUs
(bench/gpu_family.py) and on the shipped traces; prints, per variant and for the tuning
and held-out sets, the issue 21 figures (docs/BENCHMARKS.md, "Smart policy").

usage: smart_family.py ZBSO_BIN FAMILY_DIR [--seeds N] [--blocks K] [--modes plain,noise,warm]
                       [--variants g01,g02,...] [--threads N] [--csv FILE]

FAMILY_DIR is gpu_family.py's OUT_DIR. For each variant (and "shipped": v100 and a40 from
the same directory) and mode, runs `zbso simulate --compare zeus,smart --data-dir
FAMILY_DIR --gpu G --eta 0.5,1 --seeds 1..N` (mode noise adds --noise 0.25; warm adds
--warm-start-from BASE, the real GPU the variant was drawn from; for "shipped",
--warm-start-from other), reads the per-pair lines and prints: mean regret of each, the
mean of per-pair cuts (1 - smart/zeus over pairs where zeus's regret > 0), the worst pair
(smart - zeus, points of T x c*), stops per job and stuck jobs. With --blocks K the seeds
are K blocks of N (1..N, N+1..2N, ...), each pair's figures the mean over the blocks, and
"se" the standard error of the worst pair's smart - zeus (the spread of its block means
over sqrt(K)): a 40-seed pair's difference moves by points from one block of seeds to the
next on the workloads with few, long runs (movielens-1m), so a worst pair is read against
it. Standard library only."""
import argparse
import csv
import re
import subprocess
import sys

ROW = re.compile(r"^(\S+)\s+(\S+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s+([-\d.]+)%\s+([-\d.]+)%\s+\S+"
                 r"\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s*$")


def pairs_of(out):
    """The per-pair rows of a --compare output: dicts."""
    rows = []
    for line in out.splitlines():
        m = ROW.match(line)
        if m:
            rows.append({"workload": m[1], "gpu": m[2], "eta": float(m[3]),
                         "seeds": int(m[4]), "z": float(m[6]), "s": float(m[7]),
                         "stops_z": float(m[8]), "stops_s": float(m[9]),
                         "stuck_z": int(m[10]), "stuck_s": int(m[11])})
    return rows


def merge(blocks):
    """One row per pair from the rows of K blocks of seeds (lists in the same order)."""
    out = []
    for rs in zip(*blocks):
        k = len(rs)
        d = [r["s"] - r["z"] for r in rs]
        m = sum(d) / k
        se = (sum((x - m) ** 2 for x in d) / (k - 1)) ** 0.5 / k ** 0.5 if k > 1 else 0.0
        row = dict(rs[0])
        row["seeds"] = sum(r["seeds"] for r in rs)
        for f in ("z", "s", "stops_z", "stops_s"):
            row[f] = sum(r[f] for r in rs) / k
        for f in ("stuck_z", "stuck_s"):
            row[f] = sum(r[f] for r in rs)
        row["se"] = se if k > 1 else None
        out.append(row)
    return out


def summary(rows):
    """The overall figures of a list of pair rows."""
    cuts = [1 - r["s"] / r["z"] for r in rows if r["z"] > 0]
    worst = max(rows, key=lambda r: r["s"] - r["z"])
    n = len(rows)
    return {
        "se": worst.get("se"),
        "pairs": n,
        "zeus": sum(r["z"] for r in rows) / n,
        "smart": sum(r["s"] for r in rows) / n,
        "cut": 100 * sum(cuts) / len(cuts) if cuts else float("nan"),
        "worst": worst["s"] - worst["z"],
        "worst_at": f"{worst['workload']} {worst['gpu']} {worst['eta']:g}",
        "stops_z": sum(r["stops_z"] for r in rows) / n,
        "stops_s": sum(r["stops_s"] for r in rows) / n,
        "stuck_z": sum(r["stuck_z"] for r in rows),
        "stuck_s": sum(r["stuck_s"] for r in rows),
    }


def fmt(name, s):
    se = f"{s['se']:.2f}" if s["se"] is not None else "-"
    return (f"{name:<22} {s['pairs']:>5} {s['zeus']:>8.3f}% {s['smart']:>8.3f}% "
            f"{s['cut']:>6.1f}% {s['worst']:>+8.3f} {se:>5} {s['worst_at']:<26} "
            f"{s['stops_z']:>6.3f} {s['stops_s']:>6.3f} {s['stuck_z']:>4} {s['stuck_s']:>4}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("zbso")
    ap.add_argument("family")
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--blocks", type=int, default=1)
    ap.add_argument("--modes", default="plain,noise,warm")
    ap.add_argument("--variants", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--csv", default=None)
    a = ap.parse_args()
    with open(f"{a.family}/family.csv", newline="") as f:
        fam = list(csv.DictReader(f))
    chosen = a.variants.split(",") if a.variants else ["shipped"] + [v["name"] for v in fam]
    info = {v["name"]: v for v in fam}
    info["shipped"] = {"name": "shipped", "set": "shipped", "base": "other"}
    all_rows = []
    head = (f"{'variant':<22} {'pairs':>5} {'zeus':>9} {'smart':>9} {'cut':>7} {'worst':>8} {'se':>5} "
            f"{'worst pair':<26} {'stopsZ':>6} {'stopsS':>6} {'stkZ':>4} {'stkS':>4}")
    for mode in a.modes.split(","):
        blocks = f" ({a.blocks} blocks of {a.seeds})" if a.blocks > 1 else ""
        print(f"== mode {mode}: {a.seeds * a.blocks} seeds{blocks}, eta 0.5,1")
        print(head)
        by_set = {}
        for name in chosen:
            v = info[name]
            gpus = "v100,a40" if name == "shipped" else name
            blocks = []
            for k in range(a.blocks):
                cmd = [a.zbso, "simulate", "--compare", "zeus,smart", "--data-dir", a.family,
                       "--gpu", gpus, "--eta", "0.5,1",
                       "--seeds", f"{k * a.seeds + 1}..{(k + 1) * a.seeds}",
                       "--threads", str(a.threads)]
                if mode == "noise":
                    cmd += ["--noise", "0.25"]
                elif mode == "warm":
                    cmd += ["--warm-start-from", v["base"]]
                p = subprocess.run(cmd, capture_output=True, text=True)
                rows = pairs_of(p.stdout)
                if p.returncode != 0 or not rows:
                    sys.exit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
                blocks.append(rows)
            rows = merge(blocks)
            for r in rows:
                r.update(variant=name, set=v["set"], mode=mode)
            all_rows += rows
            by_set.setdefault(v["set"], []).extend(rows)
            print(fmt(f"{name} ({v['set']})", summary(rows)), flush=True)
        for s, rows in by_set.items():
            if s != "shipped":
                print(fmt(f"ALL {s}", summary(rows)))
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(all_rows[0].keys()), lineterminator="\n")
            w.writeheader()
            w.writerows(all_rows)


if __name__ == "__main__":
    main()
