"""test_run_power.py: `zbso run --power-limit` (SPEC §7.1) end to end against the fake NVML,
whose limit file (FAKE_NVML_STATE) records every set call: time-sliced profiling in
zero-code mode (the limits set in order, the choice, the profile stored on the job and
reused by the next try of that batch size with no profiling), no progress counter, observer
and max modes, the client mode's environment, and the limits put back after a command
killed by SIGKILL. Standard library only; each test has its own directory."""

import json
import os
import sqlite3
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_run_cli import FAKE_NVML, RunCase, spec  # noqa: E402

TRAIN = [sys.executable, os.path.join(HERE, "fake_power_train.py")]
REGEX = "val_acc=([0-9.]+)"
PROGRESS = "^step ([0-9]+)$"
# One batch size, so every recurrence trains it; eta 1: the least energy per step wins.
JOB = spec(batch_sizes=[32], default_batch_size=32, eta_knob=1.0, max_epochs=4,
           number_of_gpus=1, max_power=300)


class PowerRunCase(RunCase):
    def setUp(self):
        super().setUp()
        self.state = os.path.join(self.dir, "limits")

    def env(self, **over):
        if not FAKE_NVML or not os.path.exists(FAKE_NVML):
            raise AssertionError(f"FAKE_NVML={FAKE_NVML!r} is not the fake NVML library")
        # 300 W down to 100 W by 100; the GPU would draw 250 W; 20 ms a step at full power.
        env = {"ZBSO_NVML_LIBRARY": FAKE_NVML, "FAKE_NVML_GPUS": "1",
               "FAKE_NVML_MIN_LIMIT_MW": "100000", "FAKE_NVML_MAX_LIMIT_MW": "300000",
               "FAKE_NVML_POWER_MW": "250000", "FAKE_NVML_STEP_MS": "20",
               "FAKE_NVML_STATE": self.state,
               "ZBSO_STATE_DIR": os.path.join(self.dir, "state")}
        # The sanitizer build: the command (python3 loading the ASan-built fake NVML) needs
        # the ASan runtime first; python3's own allocations at exit are not leaks of ours.
        if os.environ.get("ZBSO_CHILD_PRELOAD"):
            env["LD_PRELOAD"] = os.environ["ZBSO_CHILD_PRELOAD"]
            env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1"
        env.update(over)
        return env

    def sets(self):
        """GPU 0's limits set, in W, in order."""
        if not os.path.exists(self.state):
            return []
        with open(self.state) as f:
            return [int(line.split()[2]) // 1000 for line in f if line.startswith("set 0 ")]

    def profiles(self):
        con = sqlite3.connect(os.path.join(self.dir, "x.db"))
        try:
            return con.execute("SELECT batch_size, trial_number, observer, measurements "
                               "FROM power_profiles ORDER BY batch_size").fetchall()
        finally:
            con.close()

    def power_run(self, n, mode, extra=(), cmd=(), env=None):
        return self.run_zbso(JOB, n, [*TRAIN, *cmd], extra=["--power-limit", mode, *extra],
                             env=self.env(**(env or {})), timeout=300)


class ZeroCode(PowerRunCase):
    def test_time_slices_choose_store_and_reuse(self):
        p = self.power_run(2, "jit", ["--metric-regex", REGEX, "--progress-regex", PROGRESS,
                                      "--pl-step", "100", "--pl-warmup", "0", "--pl-hold", "1"],
                           ["--steps", "200", "--rate", "0.5"])
        self.assertOk(p)
        # Recurrence 1: 300 W (already set: no call), 200 W, 100 W measured for 1 s each;
        # per step 100 W uses the least energy (3.2 J against 4.5 and 5.0) and stays (no
        # call either); back to 300 W after the try. Recurrence 2 finds the job's profile
        # of batch size 32: its optimum at once, no other limit, then back to 300 W.
        self.assertEqual(self.sets(), [200, 100, 300, 100, 300])
        self.assertIn("power limit of batch size 32: 100 W (profiled 3 limits)", p.stdout)
        self.assertIn("power limit of batch size 32: 100 W (the job's profile, no "
                      "profiling)", p.stdout)
        self.assertEqual(p.stdout.count("GPU power limits put back to 300 W"), 2)
        [(bs, trial, observer, text)] = self.profiles()
        self.assertEqual((bs, trial, observer), (32, 1, 0))
        figures = [m.split(",") for m in text.split(";")]
        self.assertEqual([int(f[0]) for f in figures], [300, 200, 100])
        # Per step, as the fake's model predicts: at 100 W a step takes at least
        # 20 ms * sqrt(250 / 100) = 31.6 ms (the counter is read every 0.1 s, so a window
        # of 1 s may count a few steps more or less: 15% of margin) and its energy is 100 W
        # times its time (the fake integrates exactly that; the energy and time windows are
        # read a moment apart, which a loaded machine stretches: 8% of margin, still far
        # from the 250 W the GPU would draw without its limit).
        t100, e100 = float(figures[2][1]), float(figures[2][2])
        self.assertGreaterEqual(t100, 0.0316 * 0.85)
        self.assertAlmostEqual(e100 / t100, 100.0, delta=8.0)
        t300, e300 = float(figures[0][1]), float(figures[0][2])
        self.assertAlmostEqual(e300 / t300, 250.0, delta=20.0)
        # The trials' reports are what the runs really spent.
        rows = self.history()
        self.assertTrue(all(float(r["energy"]) > 0 for r in rows), rows)

    def test_no_progress_counter_leaves_the_limits(self):
        p = self.power_run(1, "jit", ["--metric-regex", REGEX], ["--steps", "5", "--rate", "1"])
        self.assertOk(p)
        self.assertIn("without --progress-regex: nothing counts the command's progress",
                      p.stderr)
        self.assertEqual(self.sets(), [])
        self.assertEqual(self.profiles(), [])

    def test_observe_sets_nothing_and_stores_an_observer_profile(self):
        p = self.power_run(1, "observe", ["--metric-regex", REGEX, "--progress-regex",
                                          PROGRESS, "--pl-step", "100", "--pl-warmup", "0",
                                          "--pl-hold", "1"], ["--steps", "200", "--rate", "1"])
        self.assertOk(p)
        self.assertEqual(self.sets(), [])
        [(bs, trial, observer, text)] = self.profiles()
        self.assertEqual((bs, observer), (32, 1))
        # Every slice ran at 300 W, whatever limit it stands for.
        for m in text.split(";"):
            w, t, e = m.split(",")
            self.assertAlmostEqual(float(e) / float(t), 250.0, delta=20.0)

    def test_max_sets_the_highest_for_the_try(self):
        p = self.power_run(1, "max", ["--metric-regex", REGEX],
                           ["--steps", "5", "--rate", "1"],
                           env={"FAKE_NVML_LIMIT_MW": "200000",
                                "FAKE_NVML_DEFAULT_LIMIT_MW": "200000"})
        self.assertOk(p)
        self.assertEqual(self.sets(), [300, 200])


class ClientMode(PowerRunCase):
    def test_environment_and_sigkill_restored_by_the_parent(self):
        p = self.power_run(1, "jit", ["--profile-params", "3,7"],
                           ["--record", self.record, "--set-limit", "150000", "--sigkill"])
        # The command died without finishing its trial: the run fails, but only after the
        # limit it left (150 W) was put back.
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn("killed by signal 9", p.stderr)
        self.assertEqual(self.sets(), [150, 300])
        self.assertIn("GPU power limits put back to 300 W (the try left GPU 0 at 150 W)",
                      p.stdout)
        [env] = self.records()
        self.assertEqual((env["ZBSO_POWER_LIMIT"], env["ZEUS_PROFILE_PARAMS"]), ("jit", "3,7"))

    def test_without_power_limit_the_environment_is_left_alone(self):
        p = self.run_zbso(JOB, 1, [*TRAIN, "--record", self.record, "--set-limit", "150000",
                                   "--sigkill"], env=self.env(ZBSO_POWER_LIMIT="observe"))
        self.assertNotEqual(p.returncode, 0)
        # Nothing is put back without --power-limit; an inherited variable passes through.
        self.assertEqual(self.sets(), [150])
        self.assertEqual(self.records()[0]["ZBSO_POWER_LIMIT"], "observe")
        self.assertNotIn("ZEUS_PROFILE_PARAMS", self.records()[0])

    def test_bad_arguments(self):
        cases = [(["--power-limit", "fast"], "--power-limit 'fast' is not jit, max or observe"),
                 (["--power-limit", "jit", "--no-gpu"], "--power-limit jit needs the GPUs"),
                 (["--progress-regex", "x"], "--progress-regex needs --power-limit"),
                 (["--power-limit", "jit", "--pl-hold", "0"], "--pl-hold '0' is not an integer"),
                 (["--power-limit", "jit", "--profile-params", "3"],
                  "--profile-params '3' is not WARMUP,MEASURE"),
                 (["--power-limit", "jit", "--metric-regex", REGEX, "--progress-regex", "("],
                  "--progress-regex '(' is not a valid")]
        for extra, msg in cases:
            with self.subTest(extra=extra):
                p = self.run_zbso(JOB, 1, TRAIN, extra=extra, env=self.env())
                self.assertNotEqual(p.returncode, 0)
                self.assertIn(msg, p.stderr)
        self.assertEqual(self.sets(), [])


if __name__ == "__main__":
    unittest.main()
