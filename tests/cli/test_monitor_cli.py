"""test_monitor_cli.py: `zbso monitor -- COMMAND` end to end: the real binary runs real
commands and measures them through the fake NVML (tests/fakes/fake_nvml.c, loaded through
ZBSO_NVML_LIBRARY): the figures against what the fake's counters imply, the table and the
JSON report, exit statuses (the command's, 128+signal, 125-127), signals passed on to the
command, and the command's own streams left alone. Standard library only."""

import json
import os
import pty
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ZBSO_BIN = os.environ.get("ZBSO_BIN", "")
FAKE_NVML = os.environ.get("FAKE_NVML", "")


def env(**fake):
    """The environment for zbso monitor: the fake NVML scripted by fake (FAKE_NVML_<KEY>)."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("FAKE_NVML_") and k != "CUDA_VISIBLE_DEVICES"}
    e["ZBSO_NVML_LIBRARY"] = FAKE_NVML
    for k, v in fake.items():
        e["FAKE_NVML_" + k.upper()] = str(v)
    return e


def monitor(args, timeout=60, **fake):
    return subprocess.run([ZBSO_BIN, "monitor", *args], capture_output=True, text=True,
                          env=env(**fake), timeout=timeout)


def table_rows(text):
    """{gpu: (energy_j, time_s, power_w)} from the report's table ("total" included)."""
    rows = {}
    for line in text.splitlines():
        m = re.fullmatch(r"(\d+|total) +([0-9.]+) +([0-9.]+) +([0-9.]+)", line)
        if m:
            rows[m.group(1)] = tuple(float(m.group(i)) for i in (2, 3, 4))
    return rows


class MonitorTest(unittest.TestCase):
    def setUp(self):
        self.assertTrue(ZBSO_BIN and FAKE_NVML, "ZBSO_BIN and FAKE_NVML must be set")
        tmp = tempfile.TemporaryDirectory(prefix="zbso-monitor-")
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name

    def test_sleep_one_second_table(self):
        # Two GPUs at 250 W and 100 W: the fake's counters grow by power x elapsed time.
        r = monitor(["--", "sleep", "1"], gpus=2, power_mw="250000,100000")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertIn("'sleep 1' exited with status 0; 2 x NVIDIA H200", r.stderr)
        self.assertRegex(r.stderr, r"GPU +energy \(J\) +time \(s\) +avg power \(W\)\n")
        rows = table_rows(r.stderr)
        self.assertEqual(sorted(rows), ["0", "1", "total"], r.stderr)
        t = rows["total"][1]
        self.assertGreaterEqual(t, 1.0)
        self.assertLess(t, 3.0)  # a loaded machine may start sleep late
        for gpu, watts in (("0", 250.0), ("1", 100.0)):
            e, t_gpu, p = rows[gpu]
            self.assertEqual(t_gpu, t)
            # The window's clock and the fake's counter reads are microseconds apart.
            self.assertAlmostEqual(e, watts * t, delta=0.02 * watts * t)
            self.assertAlmostEqual(p, watts, delta=0.02 * watts)
        self.assertAlmostEqual(rows["total"][0], rows["0"][0] + rows["1"][0], delta=0.0015)

    def test_exact_energy_from_counter_steps(self):
        # Counter reads: one when the monitor opens each GPU, then the window's two edges,
        # so the window measures the second step, whatever the timing.
        r = monitor(["--json", "--", "true"], gpus=3, energy_steps_mj="5000,123456,9")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stderr)
        self.assertEqual([g["index"] for g in doc["gpus"]], [0, 1, 2])
        for g in doc["gpus"]:
            self.assertEqual(g["energy_j"], 123.456)
        self.assertAlmostEqual(doc["energy_j"], 3 * 123.456, places=9)
        r = monitor(["--gpus", "2,0", "--", "true"], gpus=3, energy_steps_mj="5000,7777")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = table_rows(r.stderr)
        self.assertEqual(sorted(rows), ["0", "2", "total"], r.stderr)
        self.assertEqual(rows["0"][0], 7.777)
        self.assertEqual(rows["2"][0], 7.777)
        self.assertEqual(rows["total"][0], 15.554)

    def test_json_report_and_output_file(self):
        out = os.path.join(self.tmp, "m.json")
        r = monitor(["--json", "--gpus", "1", "--output", out, "--", "sh", "-c",
                     "echo to-stdout; echo to-stderr >&2; sleep 0.5"],
                    gpus=2, power_mw="300000,120000")
        self.assertEqual(r.returncode, 0, r.stderr)
        # The command's streams are its own; the report went to the file.
        self.assertEqual(r.stdout, "to-stdout\n")
        self.assertEqual(r.stderr, "to-stderr\n")
        with open(out, encoding="utf-8") as f:
            text = f.read()
        self.assertTrue(text.endswith("\n") and text.count("\n") == 1, text)
        doc = json.loads(text)
        self.assertEqual(sorted(doc), ["command", "energy_j", "exit_status", "gpu_count",
                                       "gpu_model", "gpus", "signal", "time_s"])
        self.assertEqual(doc["command"],
                         ["sh", "-c", "echo to-stdout; echo to-stderr >&2; sleep 0.5"])
        self.assertEqual(doc["gpu_model"], "NVIDIA H200")
        self.assertEqual(doc["gpu_count"], 1)
        self.assertEqual(doc["exit_status"], 0)
        self.assertIsNone(doc["signal"])
        self.assertEqual([g["index"] for g in doc["gpus"]], [1])
        self.assertGreaterEqual(doc["time_s"], 0.5)
        self.assertAlmostEqual(doc["energy_j"], 120.0 * doc["time_s"],
                               delta=0.02 * 120.0 * doc["time_s"])
        self.assertEqual(doc["energy_j"], doc["gpus"][0]["energy_j"])

    def test_exit_status_passed_through(self):
        r = monitor(["--json", "--", "sh", "-c", "exit 3"])
        self.assertEqual(r.returncode, 3, r.stderr)
        doc = json.loads(r.stderr)
        self.assertEqual((doc["exit_status"], doc["signal"]), (3, None))
        r = monitor(["--", "sh", "-c", "exit 3"])
        self.assertEqual(r.returncode, 3)
        self.assertIn("exited with status 3", r.stderr)
        self.assertIn("total", r.stderr)

    def test_killed_by_signal_is_128_plus_signal(self):
        r = monitor(["--json", "--", "sh", "-c", "kill -TERM $$"])
        self.assertEqual(r.returncode, 128 + signal.SIGTERM, r.stderr)
        doc = json.loads(r.stderr)
        self.assertEqual((doc["exit_status"], doc["signal"]), (143, 15))
        r = monitor(["--", "sh", "-c", "kill -KILL $$"])
        self.assertEqual(r.returncode, 137, r.stderr)
        self.assertIn("was killed by signal 9", r.stderr)

    def test_signals_are_passed_to_the_command(self):
        ready = os.path.join(self.tmp, "ready")
        script = (f"trap 'echo got-$SIG; exit 7' TERM INT; touch {ready}; "
                  "while :; do sleep 0.05; done")
        for sig, name in ((signal.SIGTERM, "TERM"), (signal.SIGINT, "INT")):
            with self.subTest(name):
                if os.path.exists(ready):
                    os.unlink(ready)
                p = subprocess.Popen([ZBSO_BIN, "monitor", "--", "sh", "-c",
                                      script.replace("$SIG", name)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env())
                deadline = time.monotonic() + 30
                while not os.path.exists(ready) and time.monotonic() < deadline:
                    time.sleep(0.02)
                self.assertTrue(os.path.exists(ready), "the command never started")
                p.send_signal(sig)
                out, err = p.communicate(timeout=30)
                self.assertEqual(p.returncode, 7, err)
                self.assertEqual(out, f"got-{name}\n")
                self.assertIn("exited with status 7", err)
                self.assertIn("total", err)

    def test_terminal_interrupt_reaches_the_command_once(self):
        # ^C on a terminal: the kernel signals the whole foreground process group, the
        # command included, so zbso monitor must not send it a second SIGINT. The
        # command's handler sleeps, so a second signal during it runs the handler again.
        ready = os.path.join(self.tmp, "ready")
        code = ("import os, signal, sys, time\n"
                "n = 0\n"
                "def on_int(sig, frame):\n"
                "    global n\n"
                "    n += 1\n"
                "    time.sleep(0.5)\n"
                "signal.signal(signal.SIGINT, on_int)\n"
                f"open({ready!r}, 'w').close()\n"
                "end = time.monotonic() + 30\n"
                "while n == 0 and time.monotonic() < end:\n"
                "    time.sleep(0.01)\n"
                "time.sleep(1.0)\n"
                "print('interrupts', n, flush=True)\n"
                "sys.exit(5)\n")
        pid, master = pty.fork()
        if pid == 0:
            try:
                os.execve(ZBSO_BIN, [ZBSO_BIN, "monitor", "--", sys.executable, "-c", code],
                          env())
            finally:
                os._exit(99)
        out = b""
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(ready) and time.monotonic() < deadline:
                time.sleep(0.02)
            self.assertTrue(os.path.exists(ready), "the command never started")
            os.write(master, b"\x03")
            while True:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: every process of the terminal has exited
                    break
                if not chunk:
                    break
                out += chunk
        finally:
            _, status = os.waitpid(pid, 0)
            os.close(master)
        text = out.decode(errors="replace")
        self.assertEqual(os.waitstatus_to_exitcode(status), 5, text)
        self.assertIn("interrupts 1\r\n", text)
        self.assertIn("exited with status 5", text)

    def test_command_that_cannot_run(self):
        r = monitor(["--", "zbso-no-such-command-xyz", "arg"])
        self.assertEqual(r.returncode, 127)
        self.assertIn("zbso-no-such-command-xyz", r.stderr)
        self.assertIn("not found", r.stderr)
        self.assertNotIn("total", r.stderr)
        path = os.path.join(self.tmp, "not-executable")
        with open(path, "w", encoding="utf-8") as f:
            f.write("#!/bin/sh\n")
        r = monitor(["--", path])
        self.assertEqual(r.returncode, 126)
        self.assertIn(path, r.stderr)

    def test_own_failures_are_125_and_run_nothing(self):
        marker = os.path.join(self.tmp, "ran")
        cmd = ["--", "touch", marker]
        for args, fake, words in [
            ([], {}, ["no command"]),
            (["--gpus", "x"], {}, ["--gpus", "'x'"]),
            (["--gpus", "0,-1"], {}, ["--gpus", "'-1'"]),
            (["--gpus", ""], {}, ["--gpus"]),
            (["--interval", "0.01"], {}, ["--interval", "0.01"]),
            (["--interval", "soon"], {}, ["--interval", "soon"]),
            (["--bogus"], {}, ["--bogus"]),
            (["--gpus", "5"], {"gpus": 2}, ["GPU index 5"]),
            ([], {"gpus": 0}, ["no GPUs"]),
            ([], {"init_fail": 1}, ["cannot measure GPU energy"]),
            (["--output", os.path.join(self.tmp, "no", "such", "dir")], {}, ["--output"]),
        ]:
            with self.subTest(args=args, fake=fake):
                r = monitor(args + ([] if args == [] and not fake else cmd), **fake)
                self.assertEqual(r.returncode, 125, r.stderr)
                for w in words:
                    self.assertIn(w, r.stderr)
                self.assertFalse(os.path.exists(marker))
        r = subprocess.run([ZBSO_BIN, "monitor", "--help"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0)
        self.assertIn("--interval", r.stdout)

    def test_measurement_failure(self):
        # The energy counter fails after the monitor opened and the window began: a
        # command that succeeded gets 125, one that failed keeps its status.
        r = monitor(["--", "true"], fail_after="energy:2")
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn("exited with status 0, but measuring it failed", r.stderr)
        r = monitor(["--", "sh", "-c", "exit 4"], fail_after="energy:2")
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("measuring it failed", r.stderr)

    def test_interval_progress_lines(self):
        r = monitor(["--interval", "0.2", "--", "sleep", "1"], power_mw="200000")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = re.findall(r"zbso monitor: ([0-9.]+) s, ([0-9.]+) J so far \(([0-9.]+) W",
                           r.stderr)
        self.assertGreaterEqual(len(lines), 3, r.stderr)
        for t, e, w in lines:
            self.assertAlmostEqual(float(w), 200.0, delta=4.0)
            self.assertAlmostEqual(float(e), 200.0 * float(t), delta=0.05 * 200 * float(t) + 1)
        # The final figures come from the one window around the command's life.
        total = table_rows(r.stderr)["total"]
        self.assertGreater(total[1], float(lines[-1][0]))

    def test_interval_with_json_output_file(self):
        # The progress lines stay on stderr: the file holds one JSON document.
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.json")
            r = monitor(["--json", "--interval", "0.2", "--output", out, "--", "sleep", "1"],
                        power_mw="200000")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("J so far", r.stderr)
            with open(out) as f:
                doc = json.load(f)
            self.assertAlmostEqual(doc["energy_j"], 200.0 * doc["time_s"], delta=4.0)


if __name__ == "__main__":
    unittest.main()
