"""test_outage.py: the database server (PostgreSQL or MariaDB) stops for 5 s under load
(SPEC §3.7, §4, §6). While it is down `zbso serve` answers 503 with Retry-After (raw HTTP
probes), stays alive, and after the database is back it reconnects by itself. Eight
keep-alive clients play the training protocol throughout, retrying 503s after their
Retry-After; a child process drives the C client libzbso through the Python binding
(python/zbso, fake NVML) with a retry budget of 45 s ($ZBSO_CLIENT_RETRY_TIMEOUT), and its
calls made during the outage succeed once the database is back, without an error reaching
the training script. Nothing acknowledged is lost, and SIGTERM still exits 0. Run under
tests/pg/with_pg.sh (ZBSO_TEST_BACKEND=postgresql) or tests/mysql/with_mysql.sh
(ZBSO_TEST_BACKEND=mysql); SQLite has no server to stop."""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from zbsoserver import BACKEND, Server, db_ctl, new_database, require_backend
import workload as wl

OUTAGE_S = 5.0
PROBE_EVERY_S = 0.2
RECONNECT_LIMIT_S = 30.0   # the database back -> zbso serve answers 2xx again, at most
CLIENT_RETRY_S = 45        # libzbso's retry budget here (covers the outage with margin)
BINDING_CHILDREN = 3       # training scripts on the binding, side by side
WAIT_S = 60.0              # bound of every other wait

# The training script of the child: seed 003's loop over recurrences, through the binding.
# Each call is logged as one JSON line {call, t0, t1, ok, err, ...} (wall-clock times).
CHILD = r'''
import json, os, sys, time
from zbso import JobSpec
from zbso.monitor import ZeusMonitor
from zbso.optimizer.batch_size import BatchSizeOptimizer, ZeusBSOTrainFailError

url, stop_file, log_path, epoch_s = sys.argv[1:5]
log = open(log_path, "a", buffering=1)

def call(name, fn, *args, **extra):
    t0 = time.time()
    out, ok, err, train_fail = None, True, None, False
    try:
        out = fn(*args)
    except ZeusBSOTrainFailError as e:
        train_fail = True
    except Exception as e:
        ok, err = False, f"{type(e).__name__}: {e}"
    log.write(json.dumps(dict(call=name, t0=t0, t1=time.time(), ok=ok, err=err,
                              train_fail=train_fail, **extra)) + "\n")
    if not ok:
        sys.exit(3)
    return out

mon = ZeusMonitor()
job = JobSpec(job_id="outage-binding", job_id_prefix="outage", batch_sizes=[16, 32, 64],
              default_batch_size=32, max_epochs=4, beta_knob=None, mab_seed=3,
              num_pruning_rounds=1)
runs = 0
while not os.path.exists(stop_file):
    runs += 1
    bso = call("create", BatchSizeOptimizer, mon, url, job)
    bs = call("get_batch_size", bso.get_batch_size)
    tn = bso.trial_number
    call("on_train_begin", bso.on_train_begin, run=runs)
    for epoch in range(1, 5):
        time.sleep(float(epoch_s))
        metric = 0.6 if (bs == 32 and epoch >= 2) or (bs == 64 and epoch >= 1) else 0.1
        call("on_evaluate", bso.on_evaluate, metric, run=runs, trial=tn, batch_size=bs,
             epoch=epoch)
        if bso.training_finished:
            break
    log.write(json.dumps(dict(call="trial", trial=tn, batch_size=bs,
                              finished=bso.training_finished)) + "\n")
    del bso
'''


class OutageTest(unittest.TestCase):
    def setUp(self):
        require_backend()
        if BACKEND not in ("postgresql", "mysql"):
            raise AssertionError("test_outage needs ZBSO_TEST_BACKEND=postgresql under "
                                 "tests/pg/with_pg.sh or mysql under "
                                 "tests/mysql/with_mysql.sh")
        for k in ("ZBSO_LIBRARY", "ZBSO_NVML_LIBRARY", "ZBSO_PYTHON_DIR"):
            if not os.path.exists(os.environ.get(k, "")):
                raise AssertionError(f"{k}={os.environ.get(k)!r} does not exist")
        tmp = tempfile.TemporaryDirectory(prefix="zbso-outage-")
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name
        self.db = new_database(self.tmp)
        self.addCleanup(self.db.close)
        self.srv = Server(tmpdir=self.tmp, database=self.db)
        self.addCleanup(self.srv.close)
        self.srv.start()
        self.db_down = False
        self.addCleanup(self.db_start_if_down)

    def db_start_if_down(self):
        if self.db_down:
            db_ctl("start", timeout=WAIT_S)
            self.db_down = False

    def alive(self):
        self.assertIsNone(self.srv.proc.poll(), "zbso serve died:\n" + self.srv.log_tail())

    def probe(self):
        """One of each request kind, each on a fresh connection; returns [(what, status,
        Retry-After or None, body)]."""
        out = []
        for what, method, path, body in [
                ("register", "POST", "/jobs", self.specs[0]),
                ("next", "GET", f"/jobs/batch_size?job_id={self.specs[0]['job_id']}", None),
                ("report", "POST", "/report", wl.report_body(self.specs[0]["job_id"], 16, 1, 1)),
                ("end", "PATCH", "/trials", {"job_id": self.specs[0]["job_id"],
                                             "batch_size": 16, "trial_number": 1})]:
            r = self.srv.request(method, path, body=body)
            out.append((what, r.status, r.headers.get("Retry-After"), r))
        return out

    def child_log(self, i):
        try:
            with open(self.children[i]["log"]) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def start_children(self):
        """Starts BINDING_CHILDREN training scripts on the job outage-binding; child i
        sleeps 0.05 * (i + 1) s per epoch, so they are at different calls at any moment."""
        self.stop_file = os.path.join(self.tmp, "stop")
        env = {k: v for k, v in os.environ.items() if not k.startswith("ZEUS_BSO_")}
        env.update({
            "PYTHONPATH": os.environ["ZBSO_PYTHON_DIR"],
            "ZBSO_CLIENT_RETRY_TIMEOUT": str(CLIENT_RETRY_S),
            "FAKE_NVML_GPUS": "1", "FAKE_NVML_MODELS": "NVIDIA H200",
            "FAKE_NVML_POWER_MW": "250000", "FAKE_NVML_MAX_LIMIT_MW": "700000",
        })
        env.pop("CUDA_VISIBLE_DEVICES", None)
        if os.environ.get("ZBSO_CHILD_PRELOAD"):
            # Sanitizer build: the ASan runtime first; the interpreter's own allocations
            # at exit are not ours, so no leak check in this child.
            env["LD_PRELOAD"] = os.environ["ZBSO_CHILD_PRELOAD"]
            env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1"
        url = f"http://{self.srv.host}:{self.srv.port}"
        self.children = []
        for i in range(BINDING_CHILDREN):
            c = {"log": os.path.join(self.tmp, f"child{i}.jsonl"),
                 "err": os.path.join(self.tmp, f"child{i}.err")}
            with open(c["err"], "wb") as err:
                c["proc"] = subprocess.Popen(
                    [sys.executable, "-c", CHILD, url, self.stop_file, c["log"],
                     str(0.05 * (i + 1))], env=env, stdout=err, stderr=err)
            self.children.append(c)

        def reap():
            for c in self.children:
                if c["proc"].poll() is None:
                    c["proc"].kill()
                    c["proc"].wait()
        self.addCleanup(reap)

    def child_stderr(self, i):
        with open(self.children[i]["err"], "rb") as f:
            return f.read()[-3000:].decode("utf-8", "replace")

    def wait_for(self, what, cond):
        deadline = time.monotonic() + WAIT_S
        while not cond():
            self.assertLess(time.monotonic(), deadline, f"waited {WAIT_S} s for {what}")
            self.alive()
            time.sleep(0.05)

    def test_database_down_5_s_under_load(self):
        srv = self.srv
        self.specs = wl.seeded_specs("outage", 3)
        load = wl.Workload([lambda: (srv.host, srv.port)], self.specs, threads=8,
                           duration_s=3600.0, max_trials=10 ** 9, seed=17,
                           tolerate_503=True, give_up_s=WAIT_S)
        runner = threading.Thread(target=load.run, daemon=True)
        runner.start()
        self.addCleanup(lambda: (load.stop(), runner.join(WAIT_S)))
        self.start_children()

        def acked():
            return sum(1 for r in list(load.records) if r.ok)
        self.wait_for("load before the outage", lambda: acked() >= 200)
        self.wait_for("a binding run of every child before the outage",
                      lambda: all(any(e["call"] == "trial" for e in self.child_log(i))
                                  for i in range(BINDING_CHILDREN)))

        # -- the outage ------------------------------------------------------------------
        t_stop0, w_stop0 = time.monotonic(), time.time()
        db_ctl("stop", "fast", timeout=WAIT_S)
        self.db_down = True
        t_stop1, w_stop1 = time.monotonic(), time.time()
        probes = []
        while time.monotonic() < t_stop1 + OUTAGE_S:
            self.alive()
            probes += [(time.monotonic(),) + p for p in self.probe()]
            time.sleep(PROBE_EVERY_S)
        self.alive()
        t_start0, w_start0 = time.monotonic(), time.time()
        db_ctl("start", timeout=WAIT_S)
        self.db_down = False
        t_start1 = time.monotonic()

        # -- recovery without restarting zbso serve --------------------------------------
        pid = srv.proc.pid
        while True:
            self.alive()
            r = srv.request("POST", "/jobs", body=self.specs[0])
            if r.status == 200:
                t_back = time.monotonic()
                break
            self.assertEqual(r.status, 503, r)
            self.assertLess(time.monotonic(), t_start1 + RECONNECT_LIMIT_S,
                            "zbso serve did not reconnect:\n" + srv.log_tail())
            time.sleep(0.05)
        self.assertEqual(srv.proc.pid, pid)
        after = acked()
        self.wait_for("load after the outage", lambda: acked() >= after + 200)
        w_back = time.time()
        self.wait_for("the binding's calls of the outage to finish",
                      lambda: all(any(e.get("t0", 0) >= w_back for e in self.child_log(i))
                                  for i in range(BINDING_CHILDREN)))
        load.stop()
        runner.join(WAIT_S)
        self.assertFalse(runner.is_alive(), "the clients did not stop")
        open(self.stop_file, "w").close()
        child_rcs = []
        for i, c in enumerate(self.children):
            try:
                child_rcs.append(c["proc"].wait(timeout=WAIT_S + CLIENT_RETRY_S))
            except subprocess.TimeoutExpired:
                self.fail(f"binding child {i} did not stop:\n" + self.child_stderr(i))

        figures = {}
        try:
            self.check_outcome(figures, load, probes, child_rcs, t_stop0, t_stop1, t_start0,
                               t_start1, t_back, w_start0)
        finally:
            print(f"\n[outage] backend={BACKEND} " + json.dumps(figures, sort_keys=True),
                  flush=True)
        self.alive()
        self.assertEqual(srv.terminate(), 0, srv.log_tail())

    def check_outcome(self, figures, load, probes, child_rcs, t_stop0, t_stop1, t_start0,
                      t_start1, t_back, w_start0):
        """The checks after the run; fills figures as it goes."""
        # -- what the probes saw ---------------------------------------------------------
        down = [p for p in probes if p[0] >= t_stop1]
        figures.update({"outage_s": round(t_start0 - t_stop1, 2),
                   "db_stop_s": round(t_stop1 - t_stop0, 2),
                   "db_start_s": round(t_start1 - t_start0, 2),
                   "reconnect_after_start_s": round(t_back - t_start1, 2),
                   "probes_while_down": len(down),
                   "probe_statuses": sorted({p[2] for p in down})})
        self.assertGreaterEqual(len(down), 10, figures)
        for _, what, status, retry_after, r in down:
            self.assertEqual(status, 503, f"{what} while the database was down: {r}")
            self.assertIsNotNone(retry_after, f"{what}: 503 without Retry-After: {r}")
            self.assertTrue(retry_after.isdigit() and int(retry_after) >= 1, retry_after)
            self.assertEqual(list(r.json.keys()), ["message"], r)
        self.assertLessEqual(t_back - t_start1, RECONNECT_LIMIT_S)

        # -- the load: only 2xx and 503, nothing acknowledged lost -----------------------
        figures.update(load.figures())
        n503 = [r for r in load.records if r.status == 503]
        figures["load_503"] = len(n503)
        self.assertEqual(load.errors, [], "\n".join(load.errors[:10]))
        other = [r for r in load.records if not r.ok and r.status != 503]
        self.assertEqual(other, [], f"answers other than 2xx/503: {other[:5]}")
        self.assertGreater(len(n503), 0, "the clients never met the outage")
        for r in n503:
            self.assertTrue((r.headers.get("Retry-After") or "").isdigit(), r)
            # A 503 answers a request begun before the database was back.
            self.assertLess(r.t0, t_back, r)
            self.assertGreater(r.t1, t_stop0, r)
        problems = wl.check_log(load.records, complete=False)
        problems += wl.check_acknowledged(load.records, self.db)

        # -- the C client through the binding --------------------------------------------
        trials = {t["trial_number"]: t for t in self.db.rows("trials")
                  if t["job_id"] == "outage-binding"}
        figures.update(binding_calls=0, binding_calls_across_outage=0, binding_trials=0,
                       binding_longest_call_s=0.0)
        kinds = set()
        for i in range(BINDING_CHILDREN):
            log = self.child_log(i)
            calls = [e for e in log if e["call"] != "trial"]
            failed = [e for e in calls if not e["ok"]]
            self.assertEqual(child_rcs[i], 0, f"binding child {i} exit {child_rcs[i]}: "
                             f"{failed[:3]}\n" + self.child_stderr(i))
            self.assertEqual(failed, [])
            # Calls in flight when the database was started again: they were made or retried
            # while it was down and waited the outage out. Each child is always in a call
            # or a sleep of at most 0.15 s, so each has one.
            rode = [e for e in calls if e["t0"] < w_start0 < e["t1"]]
            self.assertGreaterEqual(len(rode), 1, f"child {i}: no call across the outage")
            kinds.update(e["call"] for e in rode)
            figures["binding_calls"] += len(calls)
            figures["binding_calls_across_outage"] += len(rode)
            figures["binding_longest_call_s"] = round(max(
                [figures["binding_longest_call_s"]] + [e["t1"] - e["t0"] for e in calls]), 2)
            for e in log:
                if e["call"] != "trial":
                    continue
                figures["binding_trials"] += 1
                row = trials.get(e["trial"])
                if row is None or row["batch_size"] != e["batch_size"]:
                    problems.append(f"binding trial {e} stored as {row}")
                elif e["finished"] and row["status"] != wl.STATUS_SUCCEEDED:
                    problems.append(f"binding trial {e} finished but stored as {row}")
        figures["binding_calls_across_outage_by_kind"] = sorted(kinds)
        self.assertEqual(problems, [], wl.format_problems(problems))


if __name__ == "__main__":
    unittest.main()
