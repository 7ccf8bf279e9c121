"""test_policy_backends.py: the contract of smart-policy jobs across backends (issue 21, Done
when 5): one `zbso serve --policy smart` on SQLite, one on PostgreSQL and one on MariaDB get
the same scripted sequence of requests (registrations, dispatches, per-epoch reports that
converge, stop early or run out of epochs, overlapping recurrences, a trial ended by PATCH,
re-registrations) and must answer it identically: statuses, batch sizes, trial numbers, stop
decisions, messages, job revisions and the inspection documents (times left out, since
they come from each server's clock). The backends are compared with each other, not with
recorded answers, so the test holds whatever the smart policy decides.

Needs all three databases at once: run it under tests/pg/with_pg.sh and
tests/mysql/with_mysql.sh together (ctest integration/policy_backends does); a missing
database server is a failure, never a skip."""

import os
import tempfile
import time
import unittest

from zbsoserver import MysqlDatabase, PgDatabase, Server, SqliteDatabase

# Fields whose values come from a server's clock.
CLOCK_FIELDS = {"created_at", "updated_at", "start_time", "end_time", "lease_renewed_at",
                "received_at"}

# Per job: the spec, and per batch size (epochs to reach the target or None when it never
# does, seconds and joules per epoch).
JOBS = [
    ({"job_id": "pol-a", "job_id_prefix": "pol", "policy": "smart",
      "batch_sizes": [8, 16, 32, 64], "default_batch_size": 32, "target_metric": 0.8,
      "max_epochs": 6, "mab_seed": 7, "max_power": 300.0, "number_of_gpus": 1,
      "gpu_model": "NVIDIA H100 80GB HBM3"},
     {8: (None, 4.0, 900.0), 16: (4, 2.5, 600.0), 32: (3, 2.0, 520.0), 64: (5, 1.5, 480.0)}),
    # No policy: the server's default (smart).
    ({"job_id": "pol-b", "job_id_prefix": "pol", "batch_sizes": [16, 32, 64, 128],
      "default_batch_size": 64, "eta_knob": 0.8, "beta_knob": 1.5, "target_metric": 0.9,
      "max_epochs": 8, "mab_seed": 11, "max_power": 700.0, "number_of_gpus": 2,
      "gpu_model": "NVIDIA H200"},
     {16: (6, 3.0, 1500.0), 32: (4, 2.0, 1200.0), 64: (3, 1.8, 1100.0),
      128: (7, 1.0, 900.0)}),
    # A warm start from pol-a: the same training on another GPU.
    ({"job_id": "pol-c", "job_id_prefix": "pol", "policy": "smart", "prior_jobs": ["pol-a"],
      "batch_sizes": [8, 16, 32, 64], "default_batch_size": 32, "target_metric": 0.8,
      "max_epochs": 6, "mab_seed": 3, "num_pruning_rounds": 1, "max_power": 400.0,
      "number_of_gpus": 1, "gpu_model": "NVIDIA A40"},
     {8: (5, 3.0, 700.0), 16: (3, 2.5, 650.0), 32: (3, 2.0, 640.0), 64: (None, 1.5, 500.0)}),
]
RECURRENCES = 16
OVERLAP = {1, 2, 9}  # recurrences during which a second run of the job starts
FAIL = {5}           # recurrences whose run is ended by PATCH /trials after one epoch


def strip_clock(v):
    """v without the fields that hold a server's clock readings."""
    if isinstance(v, dict):
        return {k: strip_clock(x) for k, x in v.items() if k not in CLOCK_FIELDS}
    if isinstance(v, list):
        return [strip_clock(x) for x in v]
    return v


class Script:
    """Drives one server through the scripted sequence and records every answer."""

    def __init__(self, srv):
        self.srv = srv
        self.log = []
        self.dead = set()  # jobs whose pruning ended with no batch size converged

    def call(self, method, path, body=None):
        r = self.srv.request(method, path, body=body)
        self.log.append((method, path, body, r.status, strip_clock(r.json),
                         r.headers.get("X-Zbso-Job-Version")))
        return r

    def dispatch(self, job_id):
        r = self.call("GET", f"/jobs/batch_size?job_id={job_id}")
        if r.status == 500:
            self.dead.add(job_id)
            return None
        if r.status != 200:
            raise AssertionError(f"dispatch for {job_id}: {r}")
        return r.json

    def train(self, job_id, model, trial, recurrence, epochs=None):
        """Reports epoch by epoch until the server says stop (or `epochs` are done)."""
        reach, per_s, per_j = model[trial["batch_size"]]
        # a deterministic spread of +-10% between runs of one batch size
        spread = 1.0 + 0.05 * ((trial["trial_number"] * 7 + recurrence) % 5 - 2)
        epoch = 0
        while True:
            epoch += 1
            metric = 0.99 if reach is not None and epoch >= reach else 0.1 * epoch
            body = {"job_id": job_id, "batch_size": trial["batch_size"],
                    "trial_number": trial["trial_number"], "time": epoch * per_s * spread,
                    "energy": epoch * per_j * spread, "metric": metric,
                    "current_epoch": epoch}
            r = self.call("POST", "/report", body)
            if r.status != 200:
                raise AssertionError(f"report {body}: {r}")
            if r.json["stop_train"] or (epochs is not None and epoch >= epochs):
                return
            if epoch > 100:
                raise AssertionError(f"{job_id} trial {trial} never stopped")

    def curves_written(self, timeout=30.0):
        """Per-epoch report points are written behind the answers (SPEC §5, curve points):
        waits, without logging, until the server holds none in memory, so that the
        documents read next show every point on every backend."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.srv.request("GET", "/metrics").body.decode()
            if "\nzbso_curve_points_buffered 0\n" in text:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"curve points still buffered after {timeout} s")
            time.sleep(0.05)

    def run(self):
        for spec, _ in JOBS:
            r = self.call("POST", "/jobs", spec)
            if r.status != 201:
                raise AssertionError(f"register {spec['job_id']}: {r}")
        for rec in range(RECURRENCES):
            for spec, model in JOBS:
                jid = spec["job_id"]
                if jid in self.dead:
                    continue
                # Zeus's client registers again at every recurrence.
                self.call("POST", "/jobs", {k: v for k, v in spec.items() if k != "policy"})
                first = self.dispatch(jid)
                if first is None:
                    continue
                second = self.dispatch(jid) if rec in OVERLAP else None
                if rec in FAIL:
                    self.train(jid, model, first, rec, epochs=1)
                    self.call("PATCH", "/trials", {k: first[k] for k in
                                                   ("job_id", "batch_size", "trial_number")})
                else:
                    self.train(jid, model, first, rec)
                if second is not None:
                    self.train(jid, model, second, rec)
            self.call("POST", "/jobs", {**JOBS[0][0], "policy": "zeus"})  # a 409
        self.curves_written()
        for spec, _ in JOBS:
            jid = spec["job_id"]
            self.call("GET", f"/jobs/{jid}")
            self.call("GET", f"/jobs/{jid}/trials?limit=1000")
            self.call("GET", f"/jobs/{jid}/trials/1")
        self.call("GET", "/jobs")
        return self.log


class PolicyBackendsTest(unittest.TestCase):
    def run_on(self, database):
        self.addCleanup(database.close)
        srv = Server(database=database, args=["--policy", "smart"])
        self.addCleanup(srv.close)
        srv.start()
        return Script(srv).run()

    def test_backends_answer_identically(self):
        for var in ("ZBSO_PG_URL", "ZBSO_MYSQL_URL"):
            if not os.environ.get(var):
                raise AssertionError(f"{var} is not set: run this test under tests/pg/"
                                     "with_pg.sh and tests/mysql/with_mysql.sh together")
        tmp = tempfile.TemporaryDirectory(prefix="zbso-pol-")
        self.addCleanup(tmp.cleanup)
        logs = {
            "sqlite": self.run_on(SqliteDatabase(os.path.join(tmp.name, "p.db"))),
            "postgresql": self.run_on(PgDatabase()),
            "mysql": self.run_on(MysqlDatabase()),
        }
        base = logs["sqlite"]
        for name in ("postgresql", "mysql"):
            other = logs[name]
            for i, (a, b) in enumerate(zip(base, other)):
                if a != b:
                    self.fail(f"request {i} differs between sqlite and {name}:\n"
                              f"  sqlite: {a}\n  {name}: {b}")
            self.assertEqual(len(base), len(other), name)

        # The sequence did what it is meant to exercise (whatever policy decides).
        docs = {e[4]["job_id"]: e[4] for e in base
                if e[0] == "GET" and e[3] == 200 and e[1].count("/") == 2
                and not e[1].startswith("/jobs/batch_size") and e[1] != "/jobs"}
        self.assertEqual(sorted(docs), ["pol-a", "pol-b", "pol-c"])
        for jid, doc in docs.items():
            self.assertEqual((doc["policy"], doc["spec"]["policy"]), ("smart", "smart"), jid)
        self.assertEqual(docs["pol-c"]["spec"]["prior_jobs"], ["pol-a"])
        self.assertTrue(docs["pol-c"]["spec"]["warm_start"])
        trials = [t for e in base if e[1].endswith("/trials?limit=1000")
                  for t in e[4]["trials"]]
        self.assertIn("Concurrent", {t["type"] for t in trials})
        self.assertIn("Failed", {t["status"] for t in trials})
        stops = [e[4] for e in base if e[1] == "/report" and e[4]["stop_train"]]
        self.assertTrue(any(not s["converged"] for s in stops), "no run stopped unconverged")
        self.assertTrue(any(s["converged"] for s in stops), "no run converged")
        self.assertEqual(sum(1 for e in base if e[3] == 409), RECURRENCES)
        self.assertGreater(len(base), 300)


if __name__ == "__main__":
    unittest.main()
