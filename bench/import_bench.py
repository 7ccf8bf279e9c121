#!/usr/bin/env python3
"""import_bench.py: how long `zbso import zeus` takes for a large Zeus database. Builds a
Zeus SQLite database with Zeus's DDL (tests/xfer/zeusdb.py) holding JOBS jobs of TRIALS
Succeeded trials each (MAB stage, four arms, a seeded generator), imports it into a new zbso
SQLite database RUNS times and prints the median wall time and the rates. Standard library
only.

    bench/import_bench.py --zbso build/src/cli/zbso [--jobs 10000] [--trials 100] [--runs 3]

make_zeus_db() is also how tests/xfer/test_db_backup.py fills a database quickly."""

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "xfer"))

import zeusdb  # noqa: E402

BATCH_SIZES = (8, 16, 32, 64)


def make_zeus_db(path, jobs, trials, prefix="bench"):
    """A Zeus SQLite database at path with jobs x trials rows; returns its URL."""
    state = zeusdb.reference("exact")["jobs"][0]["Job"]["mab_random_generator_state"]
    con = sqlite3.connect(path)
    con.executescript(zeusdb.ddl("sqlite"))
    job_rows, bs_rows, trial_rows, arm_rows = [], [], [], []
    for j in range(jobs):
        jid = f"{prefix}-{j:08x}"
        job_rows.append((jid, prefix, 16, 1, 0.5, 2.0, 0.5, 100, 2, 0, 300.0, 1, "A100",
                         0.0, 0.0, 2, j, state, 16, "MAB", 41000.0, 16))
        for b in BATCH_SIZES:
            bs_rows.append((jid, b))
            arm_rows.append((jid, b, -41000.0 - b, 1e-6, 1e-6, trials // 4))
        for n in range(1, trials + 1):
            b = BATCH_SIZES[n % 4]
            start = f"2026-03-01 12:{n // 60 % 60:02d}:{n % 60:02d}.000000"
            end = f"2026-03-01 13:{n // 60 % 60:02d}:{n % 60:02d}.000000"
            trial_rows.append((jid, b, n, start, "Exploration" if n <= 8 else "MAB",
                               "Succeeded", end, 100.0 + n % 7, 40000.0 + b * n % 997, 1))
    q = ",".join
    con.executemany(f'INSERT INTO "Job" VALUES ({q("?" * 22)})', job_rows)
    con.executemany('INSERT INTO "BatchSize" VALUES (?, ?)', bs_rows)
    con.executemany('INSERT INTO "GaussianTsArmState" VALUES (?, ?, ?, ?, ?, ?)', arm_rows)
    con.executemany(f'INSERT INTO "Trial" VALUES ({q("?" * 10)})', trial_rows)
    con.commit()
    con.close()
    return "sqlite:///" + path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--zbso", required=True)
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="zbso-import-bench-") as d:
        t0 = time.monotonic()
        url = make_zeus_db(os.path.join(d, "zeus.db"), a.jobs, a.trials)
        print(f"built a Zeus database of {a.jobs} jobs x {a.trials} trials in "
              f"{time.monotonic() - t0:.1f} s ({os.path.getsize(url[10:]) / 2**20:.0f} MiB)")
        times = []
        for i in range(a.runs):
            target = os.path.join(d, f"zbso{i}.db")
            t0 = time.monotonic()
            r = subprocess.run([a.zbso, "import", "zeus", url, "--db", "sqlite:///" + target,
                                "--quiet"], capture_output=True, text=True,
                               env=dict(os.environ, TZ="UTC"))
            dt = time.monotonic() - t0
            if r.returncode != 0:
                sys.exit(f"import failed: {r.stderr}")
            times.append(dt)
            print(f"run {i + 1}: {dt:.2f} s ({r.stdout.splitlines()[0]})")
            os.unlink(target)
        med = statistics.median(times)
        print(json.dumps({"jobs": a.jobs, "trials_per_job": a.trials, "runs": a.runs,
                          "median_s": round(med, 2), "jobs_per_s": round(a.jobs / med),
                          "trials_per_s": round(a.jobs * a.trials / med)}))


if __name__ == "__main__":
    main()
