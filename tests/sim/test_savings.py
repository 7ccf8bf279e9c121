"""test_savings.py: `zbso simulate`'s savings (savings.csv and the table on stdout) against
the savings recomputed here, independently, from its own runs.csv with the definition of
docs/SPEC.md section 5 ("Savings"): the server and the simulator share one definition
(opt_savings_compute), and this checks the simulator's use of it on real simulations.
Standard library only; ZBSO_BIN names the zbso binary."""

import csv
import math
import os
import subprocess
import tempfile
import unittest

ZBSO = os.environ.get("ZBSO_BIN", "zbso")
ETA = 0.5


def opt_cost(energy, time, max_power):
    # Zeus's cost, evaluated as Python evaluates eta * energy + (1 - eta) * max_power * time.
    return ETA * energy + (1 - ETA) * max_power * time


def recompute(runs, default_bs, n_failed):
    """The savings of one job from its runs (runs.csv rows in file order, which is the
    job's trial order), following docs/SPEC.md: plain left-to-right sums from 0.0 in
    trial order, means = sum / count. Figures that do not exist are None."""
    finished = len(runs)
    spent_e = spent_t = spent_c = 0.0
    for r in runs:
        spent_e += r["energy"]
        spent_t += r["time"]
        spent_c += r["cost"]
    out = {"finished_trials": finished, "failed_trials": n_failed,
           "spent_energy": spent_e, "spent_time": spent_t, "spent_cost": spent_c,
           "default_bs": default_bs}
    # Best in hindsight: lowest mean cost of converged runs, smallest batch size on ties.
    sums = {}
    for r in runs:
        if r["reached"]:
            s = sums.setdefault(r["bs"], [0.0, 0])
            s[0] += r["cost"]
            s[1] += 1
    best = None
    for bs in sorted(sums):
        mean = sums[bs][0] / sums[bs][1]
        if best is None or mean < best[1]:
            best = (bs, mean)
    out["best_bs"] = best[0] if best else None
    out["best_cost"] = best[1] if best else None
    out["regret"] = spent_c - finished * best[1] if best else None
    # Baseline: the default batch size's converged runs.
    de = dt = dc = 0.0
    dn = 0
    for r in runs:
        if r["bs"] == default_bs and r["reached"]:
            de += r["energy"]
            dt += r["time"]
            dc += r["cost"]
            dn += 1
    out["default_runs"] = dn
    if dn == 0:
        for k in ("default_energy", "default_time", "default_cost", "saved_energy",
                  "saved_time", "saved_cost", "break_even"):
            out[k] = None
        return out
    me, mt, mc = de / dn, dt / dn, dc / dn
    out.update(default_energy=me, default_time=mt, default_cost=mc,
               saved_energy=finished * me - spent_e, saved_time=finished * mt - spent_t,
               saved_cost=finished * mc - spent_c)
    # Break-even: the smallest k with cumulative cost <= j * mean default cost for every
    # j from k to the last; none when the last one is above.
    cum, above = 0.0, []
    for j, r in enumerate(runs, 1):
        cum += r["cost"]
        above.append(cum > j * mc)
    k = finished
    while k >= 1 and not above[k - 1]:
        k -= 1
    out["break_even"] = None if k == finished else k + 1
    return out


class SimulateSavings(unittest.TestCase):
    def simulate(self, *args):
        d = tempfile.mkdtemp(prefix="zbso-sim-savings-")
        self.addCleanup(subprocess.run, ["rm", "-rf", d])
        p = subprocess.run([ZBSO, "simulate", "--out", d, "--eta", str(ETA), *args],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)

        def read(name):
            with open(os.path.join(d, name), newline="") as f:
                return list(csv.DictReader(f))
        return read("runs.csv"), read("summary.csv"), read("savings.csv"), p.stdout

    def check(self, *args):
        runs, summary, savings, stdout = self.simulate(*args)
        jobs = {}
        for r in runs:
            jobs.setdefault((r["workload"], r["gpu"], r["seed"]), []).append(r)
        by_workload = {(s["workload"], s["gpu"]): s for s in summary}
        self.assertEqual(len(savings), len(jobs))
        table = {}
        for line in stdout.splitlines():
            f = line.split()
            if len(f) >= 10 and (f[0], f[1]) in by_workload and f[2].isdigit():
                # Quantities carry a unit ("2.2 kWh") or are "-": break-even is the
                # field before the last quantity (regret).
                be = f[-2] if f[-1] == "-" else f[-3]
                table[(f[0], f[1], f[2])] = f[:5] + [be]
        failed_by_workload = {}
        seen = {"never": 0, "later": 0, "retries": 0}
        for s in savings:
            key = (s["workload"], s["gpu"], s["seed"])
            summ = by_workload[key[:2]]
            max_power = float(summ["default_pl"])  # the workload's max power limit (W)
            rows = []
            for r in jobs[key]:
                row = {"bs": int(r["bs"]), "energy": float(r["energy"]),
                       "time": float(r["time"]), "cost": float(r["cost"]),
                       "reached": {"true": True, "false": False}[r["reached"]]}
                # runs.csv's cost is the trial's cost: Zeus's formula on its energy/time.
                self.assertTrue(math.isclose(row["cost"], opt_cost(row["energy"], row["time"],
                                                                   max_power), rel_tol=1e-12),
                                r)
                seen["retries"] += r["try"] != "1"
                rows.append(row)
            want = recompute(rows, int(summ["default_bs"]), int(s["failed_trials"]))
            failed_by_workload[key[:2]] = (failed_by_workload.get(key[:2], 0)
                                           + int(s["failed_trials"]))
            for name, w in want.items():
                got = s[name]
                if w is None:
                    self.assertEqual(got, "", f"{key} {name}")
                elif isinstance(w, int):
                    self.assertEqual(int(got), w, f"{key} {name}")
                else:
                    self.assertTrue(math.isclose(float(got), w, rel_tol=1e-9, abs_tol=0),
                                    f"{key} {name}: {got} != {w!r}")
            seen["never"] += want["break_even"] is None and want["default_runs"] > 0
            seen["later"] += (want["break_even"] or 0) > 1
            # The table on stdout shows the same job: trials, failed, break-even.
            t = table[key]
            self.assertEqual(int(t[3]), want["finished_trials"], t)
            self.assertEqual(int(t[4]), want["failed_trials"], t)
            self.assertEqual(t[5], str(want["break_even"] or "-"), t)
        # Failed trials are the runs summary.csv counts as unrun.
        for wk, s in by_workload.items():
            self.assertEqual(failed_by_workload.get(wk, 0), int(s["unrun"]), wk)
        return seen

    def test_all_workloads(self):
        seen = self.check("--workload", "all", "--gpu", "v100", "--seeds", "1..3")
        # The data exercise the definition: jobs that never broke even, jobs that broke
        # even after trial 1, and recurrences retried (several trials per recurrence).
        self.assertGreater(seen["never"], 0, seen)
        self.assertGreater(seen["later"], 0, seen)
        self.assertGreater(seen["retries"], 0, seen)

    def test_short_jobs_no_early_stop(self):
        self.check("--workload", "all", "--gpu", "a40", "--seeds", "4..5", "--recurrences",
                   "12", "--beta", "none", "--power-limit", "max")


if __name__ == "__main__":
    unittest.main()
