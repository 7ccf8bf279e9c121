"""test_run_cli.py: `zbso run` end to end: the real binary drives fake_train.py (a stand-in
training script) in embedded mode (SQLite file) and against a real `zbso serve`, with
--no-gpu or the fake NVML. Standard library only; each test has its own directory."""

import csv
import glob
import json
import math
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import zbsoserver  # noqa: E402  (the integration tests' server fixture)

ZBSO_BIN = os.environ.get("ZBSO_BIN", "")
FAKE_NVML = os.environ.get("FAKE_NVML", "")
TRAIN = [sys.executable, os.path.join(HERE, "fake_train.py")]
REGEX = "val_acc=([0-9.]+)"
# Batch sizes 16, 32, 64 reach 0.5 within 10 epochs; 128 never does.
RATES = "16:0.2,32:0.25,64:0.2,128:0.04"
STATUS = {0: "Dispatched", 1: "Succeeded", 2: "Failed"}
DROP = object()  # spec(field=DROP) leaves the field out


def spec(**over):
    """A job spec with the GPU facts given (so --no-gpu works), updated with over. beta is
    large so that the optimizer's cost-based stops, which hang on timing, never happen:
    whether a run reaches the target depends on its batch size alone."""
    s = {"job_id": "job-1", "job_id_prefix": "job", "batch_sizes": [16, 32, 64, 128],
         "default_batch_size": 32, "target_metric": 0.5, "max_epochs": 10, "mab_seed": 7,
         "max_power": 300, "number_of_gpus": 1, "gpu_model": "fake", "eta_knob": 0.5,
         "beta_knob": 100}
    s.update(over)
    return {k: v for k, v in s.items() if v is not DROP}


class LossyProxy:
    """A proxy on a free loopback port in front of 127.0.0.1:upstream that forwards each
    request on a new connection and, for the first `drop` GET /jobs/batch_size, reads the
    server's answer (the trial is dispatched) and closes the client's connection instead of
    passing it on. strip_key forwards requests without their Idempotency-Key."""

    def __init__(self, upstream, drop=1, strip_key=False):
        self.upstream, self.drop, self.strip_key = upstream, drop, strip_key
        self.batch_size_requests = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self):
        self.sock.close()
        self.thread.join(10)

    @staticmethod
    def _read_request(conn):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            body += chunk
        return head, body

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                req = self._read_request(conn)
                if req is None:
                    continue
                head, body = req
                lines = [line for line in head.split(b"\r\n")
                         if not line.lower().startswith(b"connection:")
                         and not (self.strip_key
                                  and line.lower().startswith(b"idempotency-key:"))]
                out = b"\r\n".join(lines) + b"\r\nConnection: close\r\n\r\n" + body
                with socket.create_connection(("127.0.0.1", self.upstream)) as up:
                    up.sendall(out)
                    answer = b""
                    while chunk := up.recv(65536):
                        answer += chunk
                if head.startswith(b"GET /jobs/batch_size"):
                    self.batch_size_requests += 1
                    if self.drop > 0:
                        self.drop -= 1
                        continue
                conn.sendall(answer)


class RunCase(unittest.TestCase):
    def setUp(self):
        if not ZBSO_BIN or not os.access(ZBSO_BIN, os.X_OK):
            raise AssertionError(f"ZBSO_BIN={ZBSO_BIN!r} is not an executable zbso binary")
        self._tmp = tempfile.TemporaryDirectory(prefix="zbso-run-")
        self.dir = self._tmp.name
        self.record = os.path.join(self.dir, "record.jsonl")

    def tearDown(self):
        self._tmp.cleanup()

    def run_zbso(self, job, n, cmd, mode=("--db", "x.db"), extra=(), env=None, timeout=120):
        """Runs `zbso run` to completion in self.dir; returns the CompletedProcess."""
        with open(os.path.join(self.dir, "job.json"), "w") as f:
            json.dump(job, f)
        e = {k: v for k, v in os.environ.items() if not k.startswith("ZEUS_")}
        e.update(env or {})
        args = [ZBSO_BIN, "run", *mode, "--spec", "job.json", "--recurrences", str(n),
                "--log-dir", "logs", *extra, "--", *cmd]
        return subprocess.run(args, cwd=self.dir, env=e, capture_output=True, text=True,
                              timeout=timeout)

    def run_dir(self):
        dirs = glob.glob(os.path.join(self.dir, "logs", "*"))
        self.assertEqual(len(dirs), 1, dirs)
        return dirs[0]

    def history(self):
        with open(os.path.join(self.run_dir(), "history.csv")) as f:
            rows = list(csv.DictReader(f))
        for r in rows:
            self.assertEqual(list(r), ["recurrence", "try", "batch_size", "time", "energy",
                                       "cost", "reached"])
        return rows

    def decisions(self):
        return [(int(r["recurrence"]), int(r["try"]), int(r["batch_size"]), r["reached"])
                for r in self.history()]

    def records(self):
        with open(self.record) as f:
            return [json.loads(line) for line in f]

    def trials(self, job_id="job-1"):
        con = sqlite3.connect(os.path.join(self.dir, "x.db"))
        try:
            rows = con.execute("SELECT trial_number, batch_size, status FROM trials "
                               "WHERE job_id = ? ORDER BY trial_number", (job_id,)).fetchall()
        finally:
            con.close()
        return [(n, bs, STATUS[s]) for n, bs, s in rows]

    def assertOk(self, p):
        self.assertEqual(p.returncode, 0, f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")

    def nvml_env(self, **over):
        if not FAKE_NVML or not os.path.exists(FAKE_NVML):
            raise AssertionError(f"FAKE_NVML={FAKE_NVML!r} is not the fake NVML library")
        env = {"ZBSO_NVML_LIBRARY": FAKE_NVML, "FAKE_NVML_GPUS": "2",
               "FAKE_NVML_POWER_MW": "100000", "CUDA_VISIBLE_DEVICES": ""}
        env.pop("CUDA_VISIBLE_DEVICES")
        env.update(over)
        return env


class TestEmbedded(RunCase):
    def test_convergence_retry_history_and_logs(self):
        p = self.run_zbso(spec(), 6, [*TRAIN, "--bs", "{bs}", "--rates", RATES],
                          extra=["--no-gpu", "--metric-regex", REGEX])
        self.assertOk(p)
        # Pruning from the default down then up; 128 does not converge and the
        # recurrence is retried with another batch size.
        self.assertEqual(self.decisions()[:5],
                         [(1, 1, 32, "true"), (2, 1, 16, "true"), (3, 1, 64, "true"),
                          (4, 1, 128, "false"), (4, 2, self.decisions()[4][2], "true")])
        rows = self.history()
        for rec in range(1, 7):
            last = [r for r in rows if int(r["recurrence"]) == rec][-1]
            self.assertEqual(last["reached"], "true", rows)
        for r in rows:
            t, e, c = float(r["time"]), float(r["energy"]), float(r["cost"])
            self.assertGreater(t, 0)
            self.assertEqual(e, 0.0)
            self.assertAlmostEqual(c, 0.5 * e + 0.5 * 300 * t, delta=1e-3)
            log = os.path.join(self.run_dir(), f"rec{int(r['recurrence']):02d}+"
                                               f"try{int(r['try']):02d}.log")
            with open(log) as f:
                self.assertIn("val_acc=", f.read())
        # The optimizer's stop ended the script: batch size 32 reaches 0.5 at epoch 2 and
        # would have printed 100 epochs.
        with open(os.path.join(self.run_dir(), "rec01+try01.log")) as f:
            text = f.read()
        self.assertIn("epoch 2 val_acc=0.5000", text)
        self.assertNotIn("epoch 20 ", text)
        self.assertTrue(all(s == "Succeeded" for _, _, s in self.trials()), self.trials())
        self.assertEqual(len(self.trials()), len(rows))
        self.assertRegex(os.path.basename(self.run_dir()), r"^job-1\+x6\+eta0\.5\+beta100\+\d{14}$")
        self.assertIn("rec 04 try 01: batch size 128 did not reach the target", p.stdout)

    def test_placeholders_lr_and_environment(self):
        job = spec(learning_rate=0.001, optimizer="Adam", seed=40)
        cmd = [*TRAIN, "--bs", "{bs}", "--rates", RATES, "--record", self.record,
               "lr={lr}", "{learning_rate}", "b={batch_size}", "s={seed}", "e={epochs}",
               "t={target_metric}", "{other}", '{"k":{bs}}']
        p = self.run_zbso(job, 3, cmd, extra=["--no-gpu", "--metric-regex", REGEX],
                          env={"ZEUS_BSO_SERVER_URL": "http://stray:1"})
        self.assertOk(p)
        recs = self.records()
        self.assertEqual([int(r["argv"][1]) for r in recs], [32, 16, 64])
        for i, r in enumerate(recs):
            bs = int(r["argv"][1])
            lr = 0.001 * math.sqrt(bs / 32)  # square-root scaling for Adam
            extra = r["argv"][6:]
            self.assertAlmostEqual(float(extra[0][3:]), lr, delta=1e-12)
            self.assertAlmostEqual(float(extra[1]), lr, delta=1e-12)
            self.assertEqual(extra[2:], [f"b={bs}", f"s={40 + 20 * i}", "e=10", "t=0.5",
                                         "{other}", '{"k":%d}' % bs])
            env = r["env"]
            self.assertNotIn("ZEUS_BSO_SERVER_URL", env)  # embedded: no server to talk to
            self.assertEqual(env["ZEUS_BSO_JOB_ID"], "job-1")
            self.assertEqual(env["ZEUS_BSO_TRIAL_NUMBER"], str(i + 1))
            self.assertEqual(env["ZEUS_BATCH_SIZE"], str(bs))
            self.assertEqual(env["ZEUS_JOB_ID"], f"rec{i + 1:02d}+try01")
            self.assertEqual(env["ZEUS_LOG_DIR"], os.path.relpath(self.run_dir(), self.dir))
            self.assertEqual(env["ZEUS_ETA_KNOB"], "0.5")
            self.assertEqual(env["ZEUS_TARGET_METRIC"], "0.5")
        # The cost threshold: none before a run reached the target, then beta * min cost.
        self.assertEqual(recs[0]["env"]["ZEUS_COST_THRESH"], "inf")
        costs = [float(r["cost"]) for r in self.history()]
        self.assertAlmostEqual(float(recs[1]["env"]["ZEUS_COST_THRESH"]), 100 * costs[0],
                               delta=1e-2)
        self.assertAlmostEqual(float(recs[2]["env"]["ZEUS_COST_THRESH"]),
                               100 * min(costs[:2]), delta=1e-2)

    def test_linear_lr_and_seed_flag(self):
        job = spec(learning_rate=0.1, optimizer="sgd")
        p = self.run_zbso(job, 2, [*TRAIN, "--bs", "{bs}", "--rates", RATES, "--record",
                                   self.record, "{lr}", "{seed}"],
                          extra=["--no-gpu", "--metric-regex", REGEX, "--seed", "9"])
        self.assertOk(p)
        got = [(r["argv"][-2], r["argv"][-1]) for r in self.records()]
        self.assertEqual(got, [("0.1", "9"), ("0.05", "29")])

    def test_lr_placeholder_without_learning_rate(self):
        p = self.run_zbso(spec(), 1, [*TRAIN, "--lr={lr}"], extra=["--no-gpu"])
        self.assertEqual(p.returncode, 1)
        self.assertIn("--lr={lr}", p.stderr)
        self.assertIn("learning_rate", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "x.db")))

    def test_sigkill_after_grace(self):
        # Reaches the target at epoch 1, ignores SIGTERM and never ends by itself.
        cmd = [*TRAIN, "--bs", "{bs}", "--rates", "32:0.6", "--epochs", "3", "--ignore-term",
               "--record", self.record]
        start = time.monotonic()
        p = self.run_zbso(spec(), 1, cmd, extra=["--no-gpu", "--metric-regex", REGEX,
                                                 "--grace", "0.7"])
        took = time.monotonic() - start
        self.assertOk(p)
        self.assertGreaterEqual(took, 0.7)
        self.assertEqual(self.decisions(), [(1, 1, 32, "true")])
        with open(os.path.join(self.run_dir(), "rec01+try01.log")) as f:
            self.assertIn("got SIGTERM, ignoring it", f.read())
        pid = self.records()[0]["pid"]
        with self.assertRaises(ProcessLookupError):
            os.kill(pid, 0)

    def test_missing_command(self):
        for cmd, why in ((os.path.join(self.dir, "no-such-train"), "No such file"),
                         ("zbso-no-such-command-xyz", "not found in PATH")):
            with self.subTest(cmd=cmd):
                for d in glob.glob(os.path.join(self.dir, "logs", "*")):
                    for f in os.listdir(d):
                        os.unlink(os.path.join(d, f))
                    os.rmdir(d)
                job_id = f"job-{len(why)}"
                p = self.run_zbso(spec(job_id=job_id), 3, [cmd, "{bs}"],
                                  extra=["--no-gpu", "--metric-regex", REGEX])
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn(f"cannot run the command '{cmd}'", p.stderr)
                self.assertIn(why, p.stderr)
                self.assertEqual(self.decisions(), [(1, 1, 32, "false")])
                self.assertEqual(self.trials(job_id), [(1, 32, "Failed")])

    def test_command_fails(self):
        cmd = [*TRAIN, "--rates", RATES, "--fail-epoch", "1", "--exit-code", "3"]
        p = self.run_zbso(spec(), 3, cmd, extra=["--no-gpu", "--metric-regex", REGEX])
        self.assertEqual(p.returncode, 1)
        self.assertIn("exited with status 3 before the optimizer stopped it", p.stderr)
        self.assertIn("rec01+try01.log", p.stderr)
        self.assertEqual(self.decisions(), [(1, 1, 32, "false")])
        self.assertEqual(self.trials(), [(1, 32, "Failed")])
        with open(os.path.join(self.run_dir(), "rec01+try01.log")) as f:
            self.assertIn("failing at epoch 1", f.read())

    def test_default_batch_size_must_converge(self):
        p = self.run_zbso(spec(), 3, [*TRAIN, "--rates", "32:0.01"],
                          extra=["--no-gpu", "--metric-regex", REGEX])
        self.assertEqual(p.returncode, 1)
        self.assertIn("default batch size 32 did not reach the target metric 0.5", p.stderr)
        self.assertEqual(self.decisions(), [(1, 1, 32, "false")])
        self.assertEqual(self.trials(), [(1, 32, "Succeeded")])

    def test_continued_job_may_start_with_another_batch_size(self):
        # The default must reach the target only as the job's first run: a second `zbso
        # run` of the same job on the same file starts where pruning stands (16, which
        # never reaches the target) and retries it like any other try (recur/recur.h).
        cmd = [*TRAIN, "--bs", "{bs}", "--rates", "16:0.01,32:0.25,64:0.2,128:0.04"]
        self.assertOk(self.run_zbso(spec(), 1, cmd, extra=["--no-gpu", "--metric-regex", REGEX]))
        self.assertEqual(self.decisions(), [(1, 1, 32, "true")])
        p = self.run_zbso(spec(), 1, cmd,
                          extra=["--no-gpu", "--metric-regex", REGEX, "--log-dir", "logs2"])
        self.assertOk(p)
        (again,) = glob.glob(os.path.join(self.dir, "logs2", "*", "history.csv"))
        with open(again) as f:
            rows = [(int(r["recurrence"]), int(r["try"]), int(r["batch_size"]), r["reached"])
                    for r in csv.DictReader(f)]
        self.assertEqual(rows, [(1, 1, 16, "false"), (1, 2, 64, "true")])
        self.assertEqual(self.trials(), [(1, 32, "Succeeded"), (2, 16, "Succeeded"),
                                         (3, 64, "Succeeded")])

    def test_script_exits_early_is_retried_up_to_20_times(self):
        # 64 stops printing after 2 epochs (0.2, below the target) and exits 0: not
        # reached, its trial ended as Failed, so pruning explores 64 again; after 20 tries
        # the recurrence fails.
        cmd = [*TRAIN, "--bs", "{bs}", "--rates", "32:0.6,64:0.1", "--epochs", "2"]
        p = self.run_zbso(spec(batch_sizes=[32, 64]), 3, cmd,
                          extra=["--no-gpu", "--metric-regex", REGEX])
        self.assertEqual(p.returncode, 1)
        self.assertIn("recurrence 2 did not reach the target metric 0.5 in 20 tries", p.stderr)
        self.assertIn("before the optimizer stopped it", p.stderr)
        self.assertEqual(self.decisions(),
                         [(1, 1, 32, "true")] + [(2, t, 64, "false") for t in range(1, 21)])
        self.assertEqual(self.trials(), [(1, 32, "Succeeded")] +
                         [(n, 64, "Failed") for n in range(2, 22)])

    def test_interrupted_run_stops_the_command_and_ends_the_trial(self):
        with open(os.path.join(self.dir, "job.json"), "w") as f:
            json.dump(spec(), f)
        e = {k: v for k, v in os.environ.items() if not k.startswith("ZEUS_")}
        cmd = [*TRAIN, "--rates", "32:0.001", "--sleep-ms", "50", "--record", self.record]
        proc = subprocess.Popen([ZBSO_BIN, "run", "--db", "x.db", "--spec", "job.json",
                                 "--recurrences", "2", "--log-dir", "logs", "--no-gpu",
                                 "--metric-regex", REGEX, "--", *cmd],
                                cwd=self.dir, env=e, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.record) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 1, err)
        self.assertIn("interrupted by signal 15", err)
        self.assertEqual(self.decisions(), [(1, 1, 32, "false")])
        self.assertEqual(self.trials(), [(1, 32, "Failed")])
        with self.assertRaises(ProcessLookupError):
            os.kill(self.records()[0]["pid"], 0)

    def test_bad_arguments(self):
        cases = [
            (["--spec", "job.json", "--recurrences", "0", "--", "x"], "--recurrences '0'"),
            (["--spec", "job.json", "--recurrences", "1"], "no training command"),
            (["--server", "http://a", "--db", "b", "--spec", "j", "--recurrences", "1",
              "--", "x"], "not both"),
            (["--spec", "job.json", "--recurrences", "1", "--grace", "-1", "--", "x"],
             "--grace '-1'"),
        ]
        for args, msg in cases:
            with self.subTest(args=args):
                p = subprocess.run([ZBSO_BIN, "run", *args], cwd=self.dir, capture_output=True,
                                   text=True, timeout=30)
                self.assertEqual(p.returncode, 2)
                self.assertIn(msg, p.stderr)
        p = self.run_zbso(spec(eta_knob=3), 1, ["true"], extra=["--no-gpu"])
        self.assertEqual(p.returncode, 1)
        self.assertIn("job file job.json", p.stderr)
        self.assertIn("eta_knob", p.stderr)
        p = self.run_zbso(spec(), 1, ["true"], extra=["--no-gpu", "--metric-regex", "(["])
        self.assertEqual(p.returncode, 1)
        self.assertIn("--metric-regex '(['", p.stderr)

    def test_policy_in_the_job_file(self):
        """The job file's policy, warm_start and prior_jobs are the job's (issue 21); a bad
        one stops the run naming the file and the field."""
        cmd = [*TRAIN, "--bs", "{bs}", "--rates", RATES]
        p = self.run_zbso(spec(policy="smart", prior_jobs=["job-0"]), 2, cmd,
                          extra=["--no-gpu", "--metric-regex", REGEX])
        self.assertOk(p)
        con = sqlite3.connect(os.path.join(self.dir, "x.db"))
        try:
            row = con.execute("SELECT policy, warm_start, prior_jobs FROM jobs").fetchall()
        finally:
            con.close()
        self.assertEqual(row, [("smart", 1, "job-0")])
        self.assertEqual(len(self.trials()), 2)
        for job, field in ((spec(job_id="job-2", policy="fast"), "policy"),
                           (spec(job_id="job-3", policy="zeus", warm_start=True), "policy"),
                           (spec(job_id="job-4", prior_jobs="job-0"), "prior_jobs")):
            with self.subTest(job):
                p = self.run_zbso(job, 1, ["true"], extra=["--no-gpu"])
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn(f"job file job.json: {field}", p.stderr)

    def test_default_policy(self):
        """A job file without "policy" takes ZBSO_POLICY, or --policy over it, as a job
        registered with `zbso serve` takes the server's default; the job file's own policy
        wins over both. A bad value is a usage error naming its source."""
        cmd = [*TRAIN, "--bs", "{bs}", "--rates", RATES]

        def policy(job_id):
            p = subprocess.run([ZBSO_BIN, "jobs", "show", job_id, "--db", "sqlite:///x.db",
                                "--format", "json"], cwd=self.dir, capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
            return json.loads(p.stdout)["policy"]

        smart = {"ZBSO_POLICY": "smart"}
        for job, extra, env, want in (
                (spec(job_id="job-1"), [], smart, "smart"),
                (spec(job_id="job-2"), ["--policy", "zeus"], smart, "zeus"),
                (spec(job_id="job-3"), ["--policy", "smart"], {}, "smart"),
                (spec(job_id="job-4", policy="zeus"), ["--policy", "smart"], smart, "zeus"),
                (spec(job_id="job-5"), [], {}, "zeus")):
            with self.subTest(job=job["job_id"]):
                p = self.run_zbso(job, 1, cmd, extra=["--no-gpu", "--metric-regex", REGEX,
                                                      *extra], env=env)
                self.assertOk(p)
                self.assertEqual(policy(job["job_id"]), want)
        for extra, env, msg in (
                (["--policy", "fast"], {}, "--policy 'fast' is not a batch size policy"),
                ([], {"ZBSO_POLICY": "Smart"}, "ZBSO_POLICY 'Smart' is not a batch size"),
                (["--server", "http://127.0.0.1:9", "--policy", "smart"], {},
                 "with --server the server's default applies"),
                # the lease comes from the same configuration (ZEUS_BSO_TRIAL_TIMEOUT)
                ([], {"ZEUS_BSO_TRIAL_TIMEOUT": "-3"}, "ZEUS_BSO_TRIAL_TIMEOUT")):
            with self.subTest(extra=extra, env=env):
                p = self.run_zbso(spec(), 1, ["true"], mode=(), extra=extra, env=env)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(msg, p.stderr)

    def test_job_file_carbon_intensity(self):
        """A job file's own carbon_intensity_g_per_kwh (issue 25) registers with the job and
        weighs its CO2e figures; a bad value stops the run naming it."""
        cmd = [*TRAIN, "--bs", "{bs}", "--rates", RATES]
        p = self.run_zbso(spec(job_id="job-c", carbon_intensity_g_per_kwh=250.0), 1, cmd,
                          extra=["--no-gpu", "--metric-regex", REGEX])
        self.assertOk(p)
        p = subprocess.run([ZBSO_BIN, "jobs", "show", "job-c", "--db", "sqlite:///x.db",
                            "--format", "json"], cwd=self.dir, capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["spec"]["carbon_intensity_g_per_kwh"], 250.0)
        self.assertEqual(doc["footprint"], {"carbon_intensity_g_per_kwh": 250.0,
                                            "carbon_intensity_source": "job"})
        spent = doc["savings"]["spent"]
        self.assertAlmostEqual(spent["co2e_g"], spent["energy_j"] / 3.6e6 * 250.0, places=9)
        p = self.run_zbso(spec(job_id="job-d", carbon_intensity_g_per_kwh=-1), 1, cmd,
                          extra=["--no-gpu", "--metric-regex", REGEX])
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("carbon_intensity_g_per_kwh", p.stderr)

    def test_job_file_limit_and_read_errors(self):
        def run_spec(path):
            e = {k: v for k, v in os.environ.items() if not k.startswith("ZEUS_")}
            return subprocess.run([ZBSO_BIN, "run", "--db", "x.db", "--spec", path,
                                   "--recurrences", "1", "--log-dir", "logs", "--no-gpu",
                                   "--", "true"], cwd=self.dir, env=e, capture_output=True,
                                  text=True, timeout=60)
        text = json.dumps(spec())
        limit = 1 << 20
        with open(os.path.join(self.dir, "full.json"), "w") as f:
            f.write(text + " " * (limit - len(text)))   # exactly the limit: read
        p = run_spec("full.json")
        self.assertEqual(p.returncode, 1)
        self.assertIn("without finishing its trial", p.stderr)   # it got as far as a try
        with open(os.path.join(self.dir, "over.json"), "w") as f:
            f.write(text + " " * (limit + 1 - len(text)))
        p = run_spec("over.json")
        self.assertEqual(p.returncode, 1)
        self.assertIn("the job file 'over.json' is over 1048576 bytes", p.stderr)
        os.mkdir(os.path.join(self.dir, "adir"))
        p = run_spec("adir")
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot read the job file 'adir': Is a directory", p.stderr)
        p = run_spec("missing.json")
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot open the job file 'missing.json'", p.stderr)

    def test_unwritable_log_dir(self):
        with open(os.path.join(self.dir, "afile"), "w") as f:
            f.write("x")
        p = self.run_zbso(spec(), 1, ["true"],
                          extra=["--no-gpu", "--log-dir", "afile/sub"])
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot create the log directory 'afile'", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "x.db")))

    def test_client_mode_unreported_trial(self):
        # Without --metric-regex the command must finish its trial through the client; a
        # command that exits 0 having reported nothing stops the run after that one try
        # (it would end alike every time), on a job that already learned something too.
        for cmd, rec in ((["true"], 2),
                         ([*TRAIN, "--epochs", "3", "--record", self.record], 3)):
            with self.subTest(cmd=cmd[-1]):
                shutil.rmtree(os.path.join(self.dir, "logs"), ignore_errors=True)
                for f in glob.glob(os.path.join(self.dir, "x.db*")):
                    os.remove(f)
                p = self.run_zbso(spec(), rec, cmd, extra=["--no-gpu"])
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn("without finishing its trial 1: it reported nothing", p.stderr)
                self.assertIn("stopped after this first try", p.stderr)
                self.assertIn("hint: without --metric-regex", p.stderr)
                self.assertIn("--metric-regex 'RE'", p.stderr)
                self.assertNotIn("did not reach the target metric", p.stderr)
                self.assertEqual(self.decisions(), [(1, 1, 32, "false")])
                self.assertEqual(self.trials(), [(1, 32, "Failed")])
                self.assertEqual(len(glob.glob(os.path.join(self.run_dir(), "rec*.log"))), 1)

    def test_regex_that_never_matches_stops_after_one_try(self):
        # A later recurrence (the job already succeeded once) whose output never matches.
        p = self.run_zbso(spec(), 1, [*TRAIN, "--bs", "{bs}", "--rates", RATES],
                          extra=["--no-gpu", "--metric-regex", REGEX])
        self.assertOk(p)
        shutil.rmtree(os.path.join(self.dir, "logs"))
        p = self.run_zbso(spec(), 3, [*TRAIN, "--bs", "{bs}", "--rates", RATES],
                          extra=["--no-gpu", "--metric-regex", "accuracy: ([0-9.]+)"])
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("without printing a metric that --metric-regex matches", p.stderr)
        self.assertIn("hint: no line of the command's output matched --metric-regex "
                      "'accuracy: ([0-9.]+)'", p.stderr)
        self.assertEqual(len(self.decisions()), 1)
        trials = self.trials()
        self.assertEqual(len(trials), 2)
        self.assertEqual(trials[1][2], "Failed")

    def test_max_tries(self):
        cmd = [*TRAIN, "--bs", "{bs}", "--rates", "32:0.6,64:0.1", "--epochs", "2"]
        p = self.run_zbso(spec(batch_sizes=[32, 64]), 3, cmd,
                          extra=["--no-gpu", "--metric-regex", REGEX, "--max-tries", "3"])
        self.assertEqual(p.returncode, 1)
        self.assertIn("recurrence 2 did not reach the target metric 0.5 in 3 tries", p.stderr)
        self.assertEqual(self.decisions(),
                         [(1, 1, 32, "true")] + [(2, t, 64, "false") for t in range(1, 4)])
        for bad in ("0", "1001", "x", ""):
            with self.subTest(bad=bad):
                p = self.run_zbso(spec(), 1, ["true"], extra=["--max-tries", bad])
                self.assertEqual(p.returncode, 2)
                self.assertIn(f"--max-tries '{bad}' is not an integer in [1, 1000]",
                              p.stderr)

    def test_db_takes_a_url_or_a_path(self):
        cmd = [*TRAIN, "--bs", "{bs}", "--rates", RATES]
        for db in ("sqlite:///x.db", "sqlite+aiosqlite:///x.db", "x.db"):
            with self.subTest(db=db):
                p = self.run_zbso(spec(), 1, cmd, mode=("--db", db),
                                  extra=["--no-gpu", "--metric-regex", REGEX])
                self.assertOk(p)
        self.assertEqual(len(self.trials()), 3)
        p = self.run_zbso(spec(), 1, cmd, mode=("--db", "redis://h/0"),
                          extra=["--no-gpu", "--metric-regex", REGEX])
        self.assertEqual(p.returncode, 1)
        self.assertIn('unsupported database URL scheme "redis"', p.stderr)
        p = self.run_zbso(spec(), 1, cmd, mode=("--db", ""), extra=["--no-gpu"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("--db '' is empty", p.stderr)


class TestFakeNvml(RunCase):
    def test_energy_and_gpu_facts_from_the_monitor(self):
        job = spec(max_power=DROP, number_of_gpus=DROP, gpu_model=DROP)
        p = self.run_zbso(job, 3, [*TRAIN, "--bs", "{bs}", "--rates", RATES],
                          extra=["--metric-regex", REGEX], env=self.nvml_env())
        self.assertOk(p)
        for r in self.history():
            t, e, c = float(r["time"]), float(r["energy"]), float(r["cost"])
            # Two GPUs at 100 W each for the measured time (the energy and time windows are
            # read a moment apart: up to 50 ms of skew on a loaded machine, 10 J).
            self.assertAlmostEqual(e, 200.0 * t, delta=0.05 * 200 * t + 10.0)
            # max_power = floor(700000 mW / 1000) W * 2 GPUs.
            self.assertAlmostEqual(c, 0.5 * e + 0.5 * 1400 * t, delta=1e-3)
        con = sqlite3.connect(os.path.join(self.dir, "x.db"))
        try:
            cols = [d[1] for d in con.execute("PRAGMA table_info(jobs)")]
            row = dict(zip(cols, con.execute("SELECT * FROM jobs").fetchone()))
        finally:
            con.close()
        self.assertEqual(row.get("max_power"), 1400)
        self.assertEqual(row.get("number_of_gpus"), 2)
        self.assertEqual(row.get("gpu_model"), "NVIDIA H200")

    def test_no_nvml_is_a_clear_error(self):
        p = self.run_zbso(spec(), 1, ["true"], extra=["--metric-regex", REGEX],
                          env=self.nvml_env(ZBSO_NVML_LIBRARY="/nonexistent/libnvml.so"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot measure GPU energy", p.stderr)
        self.assertIn("--no-gpu", p.stderr)


class TestServer(RunCase):
    def setUp(self):
        super().setUp()
        self.server = zbsoserver.Server()
        self.server.start()

    def tearDown(self):
        self.server.terminate()
        self.server.close()  # its temporary directory
        super().tearDown()

    def url(self):
        return f"http://{self.server.host}:{self.server.port}"

    def test_same_decisions_as_embedded(self):
        # The two runs must be given the same costs: a cost that includes measured time
        # (mostly the script's start-up, which varies by hundreds of ms on a loaded
        # machine) lets Thompson sampling choose differently by chance. So the cost is
        # energy alone (eta 1) and the fake NVML's counter follows a fixed list of steps
        # per read instead of the clock: each epoch window measures the next step whatever
        # the timing. The list has an odd length so that the windows (every other read)
        # go through all of it, and its steps differ, so each arm's costs differ and its
        # posterior has a finite variance.
        rates = "16:0.1,32:0.25,64:0.6,128:0.04"
        cmd = [*TRAIN, "--bs", "{bs}", "--rates", rates]
        job = spec(num_pruning_rounds=1, mab_num_explorations=2, beta_knob=None,
                   eta_knob=1.0)
        extra = ["--metric-regex", REGEX]
        env = self.nvml_env(FAKE_NVML_GPUS="1",
                            FAKE_NVML_ENERGY_STEPS_MJ="937,1411,1103,689,1297,1061,1583,823,1187")
        p = self.run_zbso(job, 8, cmd, mode=("--server", self.url()), extra=extra, env=env)
        self.assertOk(p)
        served = self.decisions()
        served_costs = [(r["energy"], r["cost"]) for r in self.history()]
        for d in glob.glob(os.path.join(self.dir, "logs", "*")):
            for f in os.listdir(d):
                os.unlink(os.path.join(d, f))
            os.rmdir(d)
        p = self.run_zbso(job, 8, cmd, extra=extra, env=env)
        self.assertOk(p)
        self.assertEqual(self.decisions(), served)
        self.assertEqual([(r["energy"], r["cost"]) for r in self.history()], served_costs)
        self.assertEqual(len({bs for _, _, bs, _ in served}), 4, served)
        costs = {}
        for (_, _, bs, _), (_, cost) in zip(served, served_costs):
            costs.setdefault(bs, []).append(cost)
        for bs, c in costs.items():
            self.assertTrue(len(c) == 1 or len(set(c)) > 1, (bs, served_costs))

    def test_policy_reaches_the_server(self):
        cmd = [*TRAIN, "--bs", "{bs}", "--rates", RATES]
        p = self.run_zbso(spec(policy="smart", warm_start=True), 1, cmd,
                          mode=("--server", self.url()),
                          extra=["--no-gpu", "--metric-regex", REGEX])
        self.assertOk(p)
        doc = self.server.request("GET", "/jobs/job-1").json
        self.assertEqual((doc["policy"], doc["spec"]["warm_start"]), ("smart", True))

    def test_client_mode_through_the_server(self):
        cmd = [*TRAIN, "--client", "--rates", RATES, "--record", self.record]
        p = self.run_zbso(spec(), 3, cmd, mode=("--server", self.url() + "/"),
                          extra=["--no-gpu"])
        self.assertOk(p)
        self.assertEqual(self.decisions(), [(1, 1, 32, "true"), (2, 1, 16, "true"),
                                            (3, 1, 64, "true")])
        for r in self.records():
            self.assertEqual(r["env"]["ZEUS_BSO_SERVER_URL"], self.url())

    def test_lost_batch_size_answer_dispatches_once(self):
        # The first GET /jobs/batch_size is answered by the server but the answer is lost;
        # `zbso run` retries it with the same Idempotency-Key and gets the trial already
        # dispatched: two recurrences leave two trials, both Succeeded. With the key
        # stripped (a client without keys) the lost answer's trial is left Dispatched.
        for strip in (False, True):
            with self.subTest(strip_key=strip):
                job_id = f"job-lossy-{int(strip)}"
                proxy = LossyProxy(self.server.port, drop=1, strip_key=strip)
                try:
                    p = self.run_zbso(spec(job_id=job_id), 2,
                                      [*TRAIN, "--bs", "{bs}", "--rates", RATES],
                                      mode=("--server", f"http://127.0.0.1:{proxy.port}"),
                                      extra=["--no-gpu", "--metric-regex", REGEX])
                finally:
                    proxy.close()
                self.assertOk(p)
                self.assertEqual(proxy.batch_size_requests, 3)  # lost, retried, next
                self.assertIn("Empty reply from server", p.stderr)
                got = [(t["trial_number"], STATUS[t["status"]])
                       for t in self.server.rows("trials", "job_id, trial_number")
                       if t["job_id"] == job_id]
                want = [(1, "Succeeded"), (2, "Succeeded")]
                if strip:
                    want = [(1, "Dispatched"), (2, "Succeeded"), (3, "Succeeded")]
                self.assertEqual(got, want)
                for d in glob.glob(os.path.join(self.dir, "logs", "*")):
                    for f in os.listdir(d):
                        os.unlink(os.path.join(d, f))
                    os.rmdir(d)

    def test_unreachable_server(self):
        # The retry budget is libzbso's (the shared transport): $ZBSO_CLIENT_RETRY_TIMEOUT.
        start = time.monotonic()
        p = self.run_zbso(spec(), 1, ["true"], mode=("--server", "http://127.0.0.1:1"),
                          extra=["--no-gpu"], env={"ZBSO_CLIENT_RETRY_TIMEOUT": "2"},
                          timeout=60)
        took = time.monotonic() - start
        self.assertEqual(p.returncode, 1)
        self.assertIn("http://127.0.0.1:1/jobs", p.stderr)
        self.assertIn("gave up after 2.", p.stderr)
        self.assertIn("retry timeout 2 s", p.stderr)
        self.assertGreaterEqual(took, 1.9)
        self.assertLess(took, 30)

    def test_bad_retry_timeout(self):
        p = self.run_zbso(spec(), 1, ["true"], mode=("--server", self.url()),
                          extra=["--no-gpu"], env={"ZBSO_CLIENT_RETRY_TIMEOUT": "-1"})
        self.assertEqual(p.returncode, 1)
        self.assertIn("ZBSO_CLIENT_RETRY_TIMEOUT='-1'", p.stderr)


if __name__ == "__main__":
    unittest.main()
