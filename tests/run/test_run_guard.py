"""test_run_guard.py: what outlives `zbso run` (issue 22 items 1 and 2): nothing. The
training command dies with zbso run however zbso run dies (SIGKILL included), whatever it
prints, its process group with it; a Ctrl-C reaches it exactly once; and the GPU power
limits zbso run lowered are put back by its guard within 5 s of a SIGKILL, while a later
run restores the true original from the state file when the guard died too. Against the
fake NVML (FAKE_NVML_STATE: the GPU outlives the processes). Standard library only."""

import os
import signal
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_run_cli import REGEX, ZBSO_BIN, RunCase, spec  # noqa: E402
from test_run_power import JOB, PROGRESS, PowerRunCase  # noqa: E402
from test_run_power import TRAIN as POWER_TRAIN  # noqa: E402

CHILD = [sys.executable, os.path.join(HERE, "sig_child.py")]
# Zero-code profiling 300, 200, 100 W, 3 s a limit: SIGKILL lands while a lower limit is set.
PROFILE = ["--power-limit", "jit", "--metric-regex", REGEX, "--progress-regex", PROGRESS,
           "--pl-step", "100", "--pl-warmup", "0", "--pl-hold", "3"]


def alive(pid):
    """Whether pid runs (a zombie, which nothing reaps here, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_until(cond, timeout):
    """Polls cond every 20 ms; returns the seconds it took, or None after timeout."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if cond():
            return time.monotonic() - start
        time.sleep(0.02)
    return None


class Lifetime(RunCase):
    def start(self, cmd, extra=(), env=None):
        """Starts `zbso run` in a session of its own (as a shell runs a foreground job);
        returns the Popen once the command has written its ready line."""
        import json
        with open(os.path.join(self.dir, "job.json"), "w") as f:
            json.dump(spec(), f)
        e = {k: v for k, v in os.environ.items() if not k.startswith("ZEUS_")}
        e.update(env or {})
        proc = subprocess.Popen([ZBSO_BIN, "run", "--db", "x.db", "--spec", "job.json",
                                 "--recurrences", "1", "--log-dir", "logs", "--grace", "5",
                                 *extra, "--", *cmd],
                                cwd=self.dir, env=e, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.addCleanup(self.reap, proc)
        took = wait_until(lambda: self.ready() is not None, 30)
        if took is None:
            proc.kill()
            out, err = proc.communicate()
            self.fail(f"the command never started: {out} {err}")
        return proc

    def reap(self, proc):
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
        ready = self.ready()
        for pid in (ready or (0, 0, 0))[::2]:
            if pid and alive(pid):
                os.kill(pid, signal.SIGKILL)

    def lines(self):
        try:
            with open(self.record) as f:
                return f.read().split("\n")[:-1]
        except FileNotFoundError:
            return []

    def ready(self):
        """(pid, pgid, grandchild pid) of the command, or None before it started."""
        for line in self.lines():
            if line.startswith("ready "):
                return tuple(int(x) for x in line.split()[1:])
        return None

    def test_ctrl_c_reaches_the_command_once(self):
        proc = self.start([*CHILD, "--record", self.record, "--no-grandchild"],
                          extra=["--no-gpu", "--metric-regex", REGEX])
        pid, pgid, _ = self.ready()
        self.assertEqual(pid, pgid, "the command leads a process group of its own")
        self.assertNotEqual(pgid, os.getpgid(proc.pid))
        # What a terminal does on Ctrl-C: SIGINT to the foreground process group.
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 1, err)
        self.assertIn("interrupted by signal 2", err)
        self.assertEqual([x for x in self.lines() if x in ("INT", "TERM")], ["INT"], err)

    def test_second_ctrl_c_kills_at_once(self):
        proc = self.start([*CHILD, "--record", self.record, "--linger", "30",
                           "--no-grandchild"], extra=["--no-gpu", "--metric-regex", REGEX])
        pid, _, _ = self.ready()
        os.killpg(proc.pid, signal.SIGINT)
        self.assertIsNotNone(wait_until(lambda: "INT" in self.lines(), 10))
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=30)
        # --grace is 5 s; the second signal cut it short.
        self.assertLess(time.monotonic() - t0, 3)
        self.assertFalse(alive(pid))
        self.assertEqual([x for x in self.lines() if x in ("INT", "TERM")], ["INT"])

    def test_sigkill_of_zbso_run_kills_the_command_and_its_group(self):
        for chatty in (False, True):
            with self.subTest(chatty=chatty):
                if os.path.exists(self.record):
                    os.unlink(self.record)
                proc = self.start([*CHILD, "--record", self.record] +
                                  (["--chatty"] if chatty else []),
                                  extra=["--no-gpu", "--metric-regex", REGEX])
                pid, _, grandchild = self.ready()
                self.assertTrue(alive(pid) and alive(grandchild))
                proc.kill()
                proc.communicate(timeout=10)
                took = wait_until(lambda: not alive(pid) and not alive(grandchild), 5)
                self.assertIsNotNone(took, f"command {pid} alive: {alive(pid)}, its "
                                     f"child {grandchild} alive: {alive(grandchild)}")


def guards_of(pid):
    """The zbso-guard processes that process pid started."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                comm_end = f.read().rsplit(")", 1)
            comm = comm_end[0].split("(", 1)[1]
            ppid = int(comm_end[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and comm == "zbso-guard":
            found.append(int(entry))
    return found


class PowerLimits(PowerRunCase):
    """kill -9 of `zbso run --power-limit jit` mid-profiling (the issue's case)."""

    def start_profiling(self, env=None):
        import json
        with open(os.path.join(self.dir, "job.json"), "w") as f:
            json.dump(JOB, f)
        e = {k: v for k, v in os.environ.items() if not k.startswith("ZEUS_")}
        e.update(self.env(**(env or {})))
        proc = subprocess.Popen([ZBSO_BIN, "run", "--db", "x.db", "--spec", "job.json",
                                 "--recurrences", "1", "--log-dir", "logs", *PROFILE, "--",
                                 *POWER_TRAIN, "--steps", "100000", "--rate", "0.001"],
                                cwd=self.dir, env=e, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        if wait_until(lambda: 200 in self.sets(), 60) is None:
            proc.kill()
            out, err = proc.communicate()
            self.fail(f"profiling never set 200 W: {self.sets()} {out} {err}")
        return proc

    def test_sigkill_mid_profiling_restored_within_5s(self):
        proc = self.start_profiling()
        self.assertEqual(self.sets()[-1], 200)
        t0 = time.monotonic()
        proc.kill()
        proc.wait()
        took = wait_until(lambda: self.sets()[-1] == 300, 5)
        self.assertIsNotNone(took, f"the limit stayed at {self.sets()[-1]} W")
        proc.communicate()
        print(f"\nlimit back {time.monotonic() - t0:.2f} s after SIGKILL", file=sys.stderr)

    def test_guard_killed_too_next_run_restores_the_true_original(self):
        # A cgroup's OOM kill takes the guard with zbso run: the GPU stays at 200 W.
        proc = self.start_profiling()
        guards = guards_of(proc.pid)
        self.assertTrue(guards, "zbso run started no guard")
        for g in guards:
            os.kill(g, signal.SIGKILL)
        proc.kill()
        proc.communicate()
        time.sleep(0.5)
        self.assertEqual(self.sets()[-1], 200)
        # The next run finds 200 W but restores 300 W, the record's original, at once and
        # after its try; before, it took 200 W for the original and put that back.
        p = self.power_run(1, "max", ["--metric-regex", REGEX],
                           ["--steps", "5", "--rate", "1"])
        self.assertOk(p)
        self.assertIn("was left at 200 W by process", p.stderr)
        self.assertIn("putting back its original 300 W", p.stderr)
        self.assertEqual(self.sets()[-1], 300)
        self.assertNotIn(200, self.sets()[self.sets().index(200) + 1:])

    def test_sigkill_in_client_mode_restored_and_command_dead(self):
        # The command's own optimizer lowered the limit (here: NVML straight from the
        # script); zbso run holds the record, so its guard restores, and the command dies.
        import json
        with open(os.path.join(self.dir, "job.json"), "w") as f:
            json.dump(JOB, f)
        e = {k: v for k, v in os.environ.items() if not k.startswith("ZEUS_")}
        e.update(self.env())
        proc = subprocess.Popen([ZBSO_BIN, "run", "--db", "x.db", "--spec", "job.json",
                                 "--recurrences", "1", "--log-dir", "logs", "--power-limit",
                                 "jit", "--", *POWER_TRAIN, "--set-limit", "150000",
                                 "--steps", "100000", "--record", self.record],
                                cwd=self.dir, env=e, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        self.assertIsNotNone(wait_until(lambda: 150 in self.sets(), 60), self.sets())
        children = [int(x) for x in open(f"/proc/{proc.pid}/task/{proc.pid}/children")
                    .read().split()]
        proc.kill()
        proc.communicate()
        self.assertIsNotNone(wait_until(lambda: self.sets()[-1] == 300, 5), self.sets())
        self.assertIsNotNone(wait_until(lambda: not any(alive(c) for c in children), 5))

    def test_no_record_restores_the_default_not_the_limit_found(self):
        # A GPU left at 200 W by a process that kept no record (Zeus, an older zbso):
        # its default, 300 W, is what comes back, never the 200 W found.
        p = self.power_run(1, "max", ["--metric-regex", REGEX],
                           ["--steps", "5", "--rate", "1"],
                           env={"FAKE_NVML_LIMIT_MW": "200000"})
        self.assertOk(p)
        self.assertIn("is 200 W, not its default 300 W", p.stderr)
        self.assertEqual(self.sets(), [300])


if __name__ == "__main__":
    unittest.main()
