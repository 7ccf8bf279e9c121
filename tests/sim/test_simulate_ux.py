"""test_simulate_ux.py: `zbso simulate` as a user reads it: --seeds N means seeds 1..N,
--data-dir takes the data directory or its traces/ folder, --workload-file runs a custom
workload on its own traces (and refuses a bad file naming what is wrong), the tables carry
a legend and readable units (Wh/kWh/MWh, s/min/h, never 1.2e+07), and cost.svg has its
title, subtitle and both axis labels. Standard library only."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

ZBSO_BIN = os.environ.get("ZBSO_BIN", "")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRACES = os.path.join(REPO, "data", "traces")


def simulate(*args, cwd=None):
    return subprocess.run([ZBSO_BIN, "simulate", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def seeds_of(stdout):
    """The seed column of the savings table."""
    part = stdout.split("savings per job", 1)[1]
    return [int(m) for m in re.findall(r"^\S+ +\S+ +(\d+) +\d+ +\d+ ", part, re.M)]


class TestSimulateUx(unittest.TestCase):
    def setUp(self):
        self.assertTrue(os.access(ZBSO_BIN, os.X_OK), ZBSO_BIN)
        self.tmp = tempfile.mkdtemp(prefix="zbso-sim-ux-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_seeds_count_and_range(self):
        p = simulate("--workload", "squad", "--seeds", "3", "--recurrences", "5")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(seeds_of(p.stdout), [1, 2, 3])
        p = simulate("--workload", "squad", "--seeds", "4..5", "--recurrences", "5")
        self.assertEqual(seeds_of(p.stdout), [4, 5])
        for bad in ("0", "x", "3..1", "-2"):
            p = simulate("--workload", "squad", "--seeds", bad)
            self.assertEqual(p.returncode, 2, bad)
            self.assertIn(f"--seeds '{bad}' is neither a count N >= 1", p.stderr)

    def test_legend_and_units(self):
        p = simulate("--workload", "all", "--seeds", "2", "--out", os.path.join(self.tmp, "o"))
        self.assertEqual(p.returncode, 0, p.stderr)
        for words in ("E, T, C: energy, time and cost", "/dflt to always training the default",
                      "best: the cheapest fixed batch size", "saved E, T, C:", "break-even:",
                      "regret:", "trials: finished trials"):
            self.assertIn(words, p.stdout)
        savings = p.stdout.split("savings per job", 1)[1]
        self.assertNotRegex(savings, r"\de[+-]\d")            # no 1.08626e+07
        self.assertRegex(savings, r" -?[0-9.]+ (Wh|kWh|MWh) ")
        self.assertRegex(savings, r" -?[0-9.]+ (s|min|h|d) ")
        with open(os.path.join(self.tmp, "o", "cost.svg")) as f:
            svg = f.read()
        self.assertIn(">zbso simulate: cost of each recurrence</text>", svg)
        self.assertIn("relative to the default batch size's expected cost", svg)
        self.assertIn("rotate(-90)\" text-anchor=\"middle\">cost / default's expected cost "
                      "(ratio)</text>", svg)
        self.assertIn(">recurrence of the job (1 = first run)</text>", svg)
        ticks = [int(t) for t in re.findall(r'text-anchor="middle">(\d+)</text>', svg)]
        self.assertLessEqual(len(ticks), 11)
        self.assertEqual(ticks[0], 1)
        self.assertTrue(all(t % ticks[1] == 0 for t in ticks[1:]), ticks)

    def test_data_dir_or_its_traces_folder(self):
        args = ("--workload", "squad", "--seeds", "1", "--recurrences", "8")
        ref = simulate(*args, "--data-dir", os.path.join(REPO, "data"))
        self.assertEqual(ref.returncode, 0, ref.stderr)
        p = simulate(*args, "--data-dir", TRACES)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, ref.stdout)
        p = simulate(*args, "--data-dir", self.tmp)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"{self.tmp}/traces/summary_power_v100.csv does not exist", p.stderr)

    def workload(self, **over):
        """A custom workload: squad's rows of the Zeus traces under other names."""
        with open(os.path.join(TRACES, "summary_train.csv")) as f:
            train = [line for i, line in enumerate(f) if i == 0 or line.startswith("squad,")]
        with open(os.path.join(TRACES, "summary_power_a40.csv")) as f:
            power = [line for i, line in enumerate(f) if i == 0 or line.startswith("squad,")]
        os.makedirs(os.path.join(self.tmp, "traces"), exist_ok=True)
        for name, lines in (("train.csv", train), ("power.csv", power)):
            with open(os.path.join(self.tmp, "traces", name), "w") as f:
                f.write("".join(line.replace("squad,bert_base_uncased", "myqa,mybert")
                                for line in lines))
        doc = {"name": "my-qa", "dataset": "myqa", "network": "mybert", "optimizer": "adamw",
               "target_metric": 84.0, "higher_is_better": True, "max_epochs": 6,
               "default_batch_size": 32, "train_trace": "traces/train.csv",
               "power_trace": "traces/power.csv", "gpu": "a40x"}
        doc.update(over)
        path = os.path.join(self.tmp, "w.json")
        with open(path, "w") as f:
            json.dump({k: v for k, v in doc.items() if v is not None}, f)
        return path

    def test_workload_file(self):
        path = self.workload()
        out = os.path.join(self.tmp, "out")
        p = simulate("--workload-file", path, "--seeds", "2", "--out", out, cwd="/")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIsNotNone(re.search(r"^my-qa +a40x +2 ", p.stdout, re.M), p.stdout)
        with open(os.path.join(out, "runs.csv")) as f:
            rows = f.read().splitlines()
        self.assertTrue(rows[1].startswith("my-qa,a40x,1,1,1,32,"), rows[1])
        # The same traces under squad's name (the preset: the same job) give the same runs.
        ref_out = os.path.join(self.tmp, "ref")
        ref = simulate("--workload", "squad", "--gpu", "a40", "--seeds", "2", "--out", ref_out)
        self.assertEqual(ref.returncode, 0, ref.stderr)
        with open(os.path.join(ref_out, "runs.csv")) as f:
            ref_rows = f.read().splitlines()
        self.assertGreater(len(rows), 100)
        self.assertEqual([r.replace("my-qa,a40x,", "squad,a40,", 1) for r in rows], ref_rows)

    def test_bad_workload_files(self):
        cases = [
            ({"max_epochs": None}, "item not found: max_epochs"),
            ({"epochs": 3}, "epochs"),
            ({"target_metric": "high"}, "target_metric"),
            ({"max_epochs": 0}, "max_epochs 0"),
            ({"dataset": "a,b"}, "dataset 'a,b' must be"),
            ({"power_trace": "nope.csv"}, "nope.csv"),
        ]
        for over, msg in cases:
            with self.subTest(over=over):
                p = simulate("--workload-file", self.workload(**over), "--seeds", "1")
                self.assertNotEqual(p.returncode, 0)
                self.assertIn(msg, p.stderr)
        with open(os.path.join(self.tmp, "broken.json"), "w") as f:
            f.write('{"name": "x",\n  "dataset": }')
        p = simulate("--workload-file", os.path.join(self.tmp, "broken.json"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("broken.json:2:", p.stderr)
        p = simulate("--workload-file", os.path.join(self.tmp, "missing.json"))
        self.assertIn("cannot open --workload-file", p.stderr)
        p = simulate("--workload-file", self.workload(), "--workload", "squad")
        self.assertEqual(p.returncode, 2)
        self.assertIn("give --workload or --workload-file, not both", p.stderr)


if __name__ == "__main__":
    unittest.main()
