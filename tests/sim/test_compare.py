"""test_compare.py: `zbso simulate --compare zeus,smart` on a reduced sweep (both GPUs, both
etas, a few seeds): the direction of the result (smart's regret below Zeus's, fewer
early-stopped runs, no job stuck), also under --noise and with a warm start; the printed
regret against one recomputed here from --policy smart's runs.csv and an oracle computed
here from the traces; --policy zeus bit-identical to the default; bad options refused.
Standard library only; ZBSO_BIN names the zbso binary. The full sweep's figures are in
docs/BENCHMARKS.md, not here: this checks directions, not numbers."""

import csv
import math
import os
import re
import subprocess
import tempfile
import unittest

ZBSO = os.environ.get("ZBSO_BIN", "zbso")
TRACES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data",
                      "traces")
BASE = ["simulate", "--compare", "zeus,smart", "--gpu", "v100,a40", "--eta", "0.5,1",
        "--seeds", "1..6"]
OVERALL = re.compile(
    r"overall \((\d+) pairs\): mean regret zeus (-?[\d.]+)%, smart (-?[\d.]+)%; mean of "
    r"per-pair cuts (-?[\d.]+)% .* stops per job zeus ([\d.]+), smart ([\d.]+); stuck jobs "
    r"zeus (\d+), smart (\d+); Concurrent trials per job zeus ([\d.]+), smart ([\d.]+)")


def run(args, check=True):
    p = subprocess.run([ZBSO] + args, capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"zbso {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p


def overall(stdout):
    m = OVERALL.search(stdout)
    if m is None:
        raise AssertionError(f"no overall line in:\n{stdout}")
    g = m.groups()
    return {"pairs": int(g[0]), "zeus": float(g[1]), "smart": float(g[2]), "cut": float(g[3]),
            "stops_zeus": float(g[4]), "stops_smart": float(g[5]), "stuck_zeus": int(g[6]),
            "stuck_smart": int(g[7]), "concurrent_zeus": float(g[8]),
            "concurrent_smart": float(g[9])}


def oracle_cost(workload, gpu, eta):
    """c* of squad (bert_base_uncased, adamw, target 84, 6 epochs): the least expected cost
    of a recurrence at a fixed (batch size, power limit), retrying failed paths."""
    assert workload == "squad"
    ds, net, opt, target, max_epochs = "squad", "bert_base_uncased", "adamw", 84.0, 6
    paths = {}
    with open(os.path.join(TRACES, "summary_train.csv")) as f:
        for r in csv.DictReader(f):
            if (r["dataset"], r["network"], r["optimizer"]) == (ds, net, opt) and \
                    float(r["target_metric"]) == target:
                te = r["target_epoch"]
                paths.setdefault(int(r["batch_size"]), []).append(
                    0 if te in ("", "nan") else int(float(te)))
    rows = []
    with open(os.path.join(TRACES, f"summary_power_{gpu}.csv")) as f:
        for r in csv.DictReader(f):
            if (r["dataset"], r["network"], r["optimizer"]) == (ds, net, opt):
                rows.append(r)
    max_power = max(float(r["power_limit"]) for r in rows)
    best = math.inf
    for r in rows:
        p = paths.get(int(r["batch_size"]), [])
        reach = [e for e in p if 0 < e <= max_epochs]
        if not reach:
            continue
        q = len(reach) / len(p)
        epochs = sum(float(e) for e in reach) / len(reach) + (1 - q) / q * max_epochs
        t = float(r["time_per_epoch"]) * epochs
        e = float(r["average_power"]) * float(r["time_per_epoch"]) * epochs
        best = min(best, eta * e + (1 - eta) * max_power * t)
    return best


class CompareTest(unittest.TestCase):
    def test_direction(self):
        o = overall(run(BASE).stdout)
        self.assertEqual(o["pairs"], 24)
        self.assertLess(o["smart"], o["zeus"])
        self.assertGreater(o["cut"], 0)
        self.assertLess(o["stops_smart"], o["stops_zeus"])
        self.assertEqual(o["stuck_smart"], 0)

    def test_noise(self):
        o = overall(run(BASE + ["--noise", "0.25"]).stdout)
        self.assertLess(o["smart"], o["zeus"])
        self.assertEqual(o["stuck_smart"], 0)

    def test_warm_start(self):
        o = overall(run(BASE + ["--warm-start-from", "other"]).stdout)
        self.assertLess(o["smart"], o["zeus"])
        self.assertEqual(o["stuck_smart"], 0)

    def test_arrivals_poisson(self):
        """Overlapping recurrences reach the optimizer as Concurrent trials; smart keeps
        its lead and no job sticks."""
        plain = overall(run(BASE).stdout)
        self.assertEqual(plain["concurrent_zeus"], 0)
        o = overall(run(BASE + ["--arrivals", "poisson:600"]).stdout)
        self.assertGreater(o["concurrent_zeus"], 0)
        self.assertGreater(o["concurrent_smart"], 0)
        self.assertLess(o["smart"], o["zeus"])
        self.assertEqual(o["stuck_smart"], 0)

    def test_arrivals_file(self):
        with tempfile.TemporaryDirectory() as d:
            with open(f"{d}/arr.csv", "w") as f:
                f.write("submit_time_s\r\n0\r\n100\r\n100.5\r\n20000\r\n")
            run(["simulate", "--workload", "squad", "--seeds", "1..2", "--policy", "smart",
                 "--arrivals", f"{d}/arr.csv", "--out", f"{d}/out"])
            with open(f"{d}/out/runs.csv") as f:
                rows = list(csv.DictReader(f))
            self.assertEqual({int(r["recurrence"]) for r in rows}, {1, 2, 3, 4})
            # Recurrences 2 and 3 arrive while 1 runs: they finish first.
            self.assertEqual(int(rows[0]["recurrence"]), 2)
            for body, word in [("0\n5\n3\n", ":3: submit time '3'"),
                               ("x\n0\n-1\n", ":3: submit time '-1'"),
                               ("0\nnan\n", ":2: submit time 'nan'"),
                               ("t\n", "no submit times"),
                               ("0\n\n4\n", ":2: submit time ''")]:
                with open(f"{d}/bad.csv", "w") as f:
                    f.write(body)
                p = run(["simulate", "--workload", "squad", "--arrivals", f"{d}/bad.csv"],
                        check=False)
                self.assertEqual(p.returncode, 1, body)
                self.assertIn(word, p.stderr, body)
                self.assertEqual(p.stdout, "", body)

    def test_warm_start_with_power_trace(self):
        """--power-trace names the simulated GPU's trace only: the warm start's source is
        still read from the data directory."""
        args = ["--compare", "zeus,smart", "--workload", "movielens-1m", "--eta", "0.5",
                "--seeds", "1..4", "--warm-start-from", "a40"]
        shipped = run(["simulate", "--gpu", "v100"] + args).stdout
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(TRACES, "summary_power_v100.csv"), "rb") as f, \
                    open(f"{d}/mine.csv", "wb") as g:
                g.write(f.read())
            mine = run(["simulate", "--gpu", "mine", "--power-trace", f"{d}/mine.csv"] +
                       args).stdout
        self.assertEqual(overall(shipped), overall(mine))
        p = run(["simulate", "--gpu", "v100"] + args[:-1] + ["nosuch"], check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no power trace for GPU 'nosuch'", p.stderr)

    def test_regret_recomputed(self):
        """The table's smart regret of squad on v100 at eta 0.5 equals the one computed
        here from the same seeds' runs.csv and this file's oracle."""
        out = run(["simulate", "--compare", "zeus,smart", "--workload", "squad", "--gpu",
                   "v100", "--eta", "0.5", "--seeds", "1..5"]).stdout
        line = [x for x in out.splitlines() if x.startswith("squad ")]
        self.assertEqual(len(line), 1, out)
        printed = float(line[0].split()[6].rstrip("%"))
        with tempfile.TemporaryDirectory() as d:
            run(["simulate", "--policy", "smart", "--workload", "squad", "--gpu", "v100",
                 "--eta", "0.5", "--seeds", "1..5", "--out", d])
            cost, recs = {}, {}
            with open(os.path.join(d, "runs.csv")) as f:
                for r in csv.DictReader(f):
                    cost[r["seed"]] = cost.get(r["seed"], 0.0) + float(r["cost"])
                    recs[r["seed"]] = max(recs.get(r["seed"], 0), int(r["recurrence"]))
        cstar = oracle_cost("squad", "v100", 0.5)
        mine = sum((cost[s] - recs[s] * cstar) / (recs[s] * cstar) * 100 for s in cost) / 5
        self.assertAlmostEqual(printed, mine, delta=0.0006)

    def test_zeus_policy_is_the_default(self):
        with tempfile.TemporaryDirectory() as d:
            run(["simulate", "--workload", "cifar100", "--seeds", "1..3", "--out", d + "/a"])
            run(["simulate", "--workload", "cifar100", "--seeds", "1..3", "--policy", "zeus",
                 "--out", d + "/b"])
            for name in ("runs.csv", "summary.csv", "savings.csv"):
                with open(f"{d}/a/{name}", "rb") as a, open(f"{d}/b/{name}", "rb") as b:
                    self.assertEqual(a.read(), b.read(), name)

    def test_bad_options(self):
        for args, word in [
            (["--compare", "zeus"], "'zeus'"),
            (["--compare", "zeus,greedy"], "'greedy'"),
            (["--policy", "Smart"], "'Smart'"),
            (["--eta", "0.5,1"], "--compare"),
            (["--gpu", "v100,a40"], "--compare"),
            (["--noise", "-1"], "'-1'"),
            (["--noise", "nan"], "'nan'"),
            (["--warm-start-from", "a40"], "--policy smart"),
            (["--policy", "smart", "--warm-start-from", "../etc"], "'../etc'"),
            (["--compare", "zeus,smart", "--warm-start-from", "other"], "list of GPUs"),
            (["--arrivals", "poisson:0"], "'poisson:0'"),
            (["--arrivals", "poisson:"], "'poisson:'"),
        ]:
            p = run(["simulate", "--workload", "squad"] + args, check=False)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(word, p.stderr, args)
            self.assertEqual(p.stdout, "", args)


if __name__ == "__main__":
    unittest.main()
