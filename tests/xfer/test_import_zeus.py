"""test_import_zeus.py: `zbso import zeus` against Zeus databases built with Zeus's DDL
(tests/xfer/zeusdb.py): after the import, `zbso serve` gives each job the next 10 decisions
Zeus's server gives from that state (tests/testdata/zeus_import_reference.json, made by
tests/xfer/make_zeus_reference.py); what is imported is what Zeus stored; a second import
changes nothing; a job that differs is refused unless --replace.

The Zeus database lives on $ZBSO_TEST_BACKEND (sqlite by default; postgresql under
tests/pg/with_pg.sh, mysql under tests/mysql/with_mysql.sh) and is imported into a zbso
database of the same backend. Standard library only."""

import datetime
import hashlib
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import zbsoserver  # noqa: E402
import zeusdb  # noqa: E402

BACKEND = zbsoserver.BACKEND
VARIANT = "mysql" if BACKEND == "mysql" else "exact"
ENV = {"TZ": "UTC"}  # the naive timestamps of the reference are UTC


def unix(text):
    return datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()


class ImportZeus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        zbsoserver.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="zbso-import-")
        cls.ref = zeusdb.reference(VARIANT)
        if BACKEND == "sqlite":
            cls.zeus_url = zeusdb.build_sqlite(os.path.join(cls.tmp.name, "zeus.db"),
                                               cls.ref["jobs"])
        else:
            zbsoserver.require_backend()
            cls.zeus_url = zeusdb.build_server(BACKEND, "zeus_ref", cls.ref["jobs"])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def import_into(self, db, *args):
        return zbsoserver.run_cli(["import", "zeus", self.zeus_url, "--db", db.url, *args],
                                  cwd=self.tmp.name, env=ENV, timeout=300)

    def new_db(self, name):
        return zbsoserver.new_database(self.tmp.name, name)

    def test_next_ten_decisions_are_zeus(self):
        db = self.new_db("decide.db")
        r = self.import_into(db)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        self.assertIn("no per-epoch reports", r.stdout)
        srv = zbsoserver.Server(tmpdir=self.tmp.name, database=db, env=ENV,
                                args=["--trial-timeout", "0"])
        self.addCleanup(srv.close)
        srv.start()
        checked = 0
        for job_id, steps in self.ref["replay"].items():
            for i, step in enumerate(steps):
                where = f"job {job_id}, recurrence {i + 1} after the import"
                r = srv.request("GET", "/jobs/batch_size?job_id=" + job_id)
                self.assertEqual(r.status, 200, f"{where}: {r}")
                self.assertEqual((r.json["batch_size"], r.json["trial_number"]),
                                 (step["batch_size"], step["trial_number"]), where)
                body = dict(step["report"], job_id=job_id, batch_size=step["batch_size"],
                            trial_number=step["trial_number"])
                r = srv.request("POST", "/report", body=body)
                self.assertEqual(r.status, 200, f"{where}: {r}")
                self.assertEqual((r.json["stop_train"], r.json["converged"]),
                                 (step["stop_train"], step["converged"]), where)
                r = srv.request("GET", "/jobs/" + job_id)
                self.assertEqual(r.json["stage"], step["stage_after"], where)
                trials = srv.request("GET", f"/jobs/{job_id}/trials/{step['trial_number']}")
                self.assertEqual(trials.json["type"], step["type"], where)
                checked += 1
        self.assertEqual(checked, 10 * len(self.ref["jobs"]))

    def test_imported_state_is_what_zeus_stored(self):
        db = self.new_db("state.db")
        r = self.import_into(db)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        srv = zbsoserver.Server(tmpdir=self.tmp.name, database=db, env=ENV,
                                args=["--trial-timeout", "0"])
        self.addCleanup(srv.close)
        srv.start()
        for job in self.ref["jobs"]:
            z = job["Job"]
            doc = srv.request("GET", "/jobs/" + z["job_id"]).json
            self.assertEqual(doc["stage"], z["stage"])
            self.assertEqual(doc["min_cost"], z["min_cost"])
            self.assertEqual(doc["min_cost_batch_size"], z["min_cost_batch_size"])
            spec = doc["spec"]
            for k in ("job_id_prefix", "default_batch_size", "eta_knob", "beta_knob",
                      "target_metric", "max_epochs", "num_pruning_rounds", "window_size",
                      "max_power", "number_of_gpus", "gpu_model", "mab_prior_mean",
                      "mab_prior_precision", "mab_num_explorations", "mab_seed",
                      "higher_is_better_metric"):
                self.assertEqual(spec[k], z[k], f"{z['job_id']} {k}")
            self.assertEqual(spec["batch_sizes"], [b["batch_size"] for b in job["BatchSize"]])
            arms = {a["batch_size"]: a for a in doc["arms"]}
            self.assertEqual(sorted(arms), sorted(a["batch_size"] for a in
                                                  job["GaussianTsArmState"]))
            for a in job["GaussianTsArmState"]:
                got = arms[a["batch_size"]]
                self.assertEqual(got["mean"], a["param_mean"])
                prec = a["param_precision"]
                self.assertEqual(got["precision"], None if prec == float("inf") else prec)
                self.assertEqual(got["observations"], a["num_observations"])
            trials = srv.request("GET", f"/jobs/{z['job_id']}/trials?limit=1000").json
            self.assertEqual(len(trials["trials"]), len(job["Trial"]))
            for got, t in zip(trials["trials"], job["Trial"]):
                self.assertEqual((got["trial_number"], got["batch_size"], got["type"],
                                  got["status"]),
                                 (t["trial_number"], t["batch_size"], t["type"], t["status"]))
                self.assertEqual(got["start_time"], unix(t["start_timestamp"]))
                if t["status"] == "Succeeded":
                    self.assertEqual((got["time_s"], got["energy_j"], got["converged"]),
                                     (t["time"], t["energy"], t["converged"]))
                    self.assertEqual(got["end_time"], unix(t["end_timestamp"]))
                    self.assertIsNone(got["metric"])
                if t["status"] == "Dispatched":
                    self.assertIsNone(got["end_time"])

    def test_second_import_changes_nothing(self):
        db = self.new_db("again.db")
        r = self.import_into(db)
        self.assertEqual(r.returncode, 0, r.stderr)
        before = db.snapshot()
        r = self.import_into(db)
        self.assertEqual(r.returncode, 0, r.stderr)
        n = len(self.ref["jobs"])
        self.assertIn(f"0 imported, {n} unchanged, 0 replaced, 0 refused", r.stdout)
        self.assertEqual(db.snapshot(), before)

    def test_changed_job_is_refused_unless_replace(self):
        db = self.new_db("conflict.db")
        r = self.import_into(db, "--jobs", "mab-w0")
        self.assertEqual(r.returncode, 0, r.stderr)
        srv = zbsoserver.Server(tmpdir=self.tmp.name, database=db, env=ENV,
                                args=["--trial-timeout", "0"])
        srv.start()
        r = srv.request("GET", "/jobs/batch_size?job_id=mab-w0")
        self.assertEqual(r.status, 200)
        srv.close()
        before = db.snapshot()
        r = self.import_into(db, "--jobs", "mab-w0")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("refused job mab-w0", r.stderr)
        self.assertIn("already in the target database with other data", r.stderr)
        self.assertEqual(db.snapshot(), before)
        r = self.import_into(db, "--jobs", "mab-w0", "--replace")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("replaced mab-w0", r.stdout)
        fresh = self.new_db("fresh.db")
        self.assertEqual(self.import_into(fresh, "--jobs", "mab-w0").returncode, 0)
        strip = lambda snap: {t: [row for row in rows] for t, rows in snap.items()
                              if t not in ("jobs",)}
        self.assertEqual(strip(db.snapshot()), strip(fresh.snapshot()))

    def test_dry_run_and_selection_write_nothing_else(self):
        db = self.new_db("dry.db")
        # A prefix (prune0: prune0-a, prune0-b) and an id; neither is a byte prefix match.
        r = self.import_into(db, "--dry-run", "--jobs", "prune0", "--jobs", "mab-w4",
                             "--jobs", "mab-w", "--jobs", "prune0-")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("would import prune0-a (Pruning", r.stdout)
        self.assertIn("would import prune0-b (Pruning", r.stdout)
        self.assertIn("would import mab-w4 (MAB", r.stdout)
        self.assertIn("3 jobs", r.stdout)
        self.assertNotIn("mab-w0", r.stdout)
        if BACKEND == "sqlite":
            self.assertFalse(os.path.exists(db.path))
        r = self.import_into(db, "--jobs", "prunend-w0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("1 jobs", r.stdout)
        ids = [row["job_id"] for row in db.rows("jobs")]
        self.assertEqual([bytes(i).decode() if isinstance(i, (bytes, bytearray)) else i
                          for i in ids], ["prunend-w0"])

    def test_dispatched_trials_keep_their_lease(self):
        # The reference's Dispatched exploration of prune0-b started on 2026-03-01: under
        # the default lease (86400 s) it is stale, so the next request fails it and
        # explores its batch size again instead of answering a Concurrent trial.
        job = next(j for j in self.ref["jobs"] if j["Job"]["job_id"] == "prune0-b")
        stale = [t for t in job["Trial"] if t["status"] == "Dispatched"]
        self.assertEqual(len(stale), 1)
        db = self.new_db("lease.db")
        self.assertEqual(self.import_into(db, "--jobs", "prune0-b").returncode, 0)
        srv = zbsoserver.Server(tmpdir=self.tmp.name, database=db, env=ENV)
        self.addCleanup(srv.close)
        srv.start()
        n = stale[0]["trial_number"]
        r = srv.request("GET", f"/jobs/prune0-b/trials/{n}")
        self.assertEqual(r.json["status"], "Dispatched")
        self.assertEqual(r.json["lease_renewed_at"], unix(stale[0]["start_timestamp"]))
        r = srv.request("GET", "/jobs/batch_size?job_id=prune0-b")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["batch_size"], stale[0]["batch_size"])
        self.assertEqual(srv.request("GET", f"/jobs/prune0-b/trials/{n}").json["status"],
                         "Failed")
        got = srv.request("GET", f"/jobs/prune0-b/trials/{r.json['trial_number']}").json
        self.assertEqual(got["type"], "Exploration")

    def test_url_spellings_and_credentials(self):
        db = self.new_db("spell.db")
        if BACKEND == "sqlite":
            url = self.zeus_url.replace("sqlite:///", "sqlite+aiosqlite:///")
            r = zbsoserver.run_cli(["import", "zeus", url, "--db", db.url, "--dry-run"],
                                   cwd=self.tmp.name, env=ENV)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(f"{len(self.ref['jobs'])} to import", r.stdout)
            return
        # Zeus's .env keeps the password apart: ZEUS_BSO_DB_PASSWORD fills it in.
        scheme, rest = self.zeus_url.split("://", 1)
        cred, host = rest.split("@", 1)
        user, password = cred.split(":", 1)
        bare = f"{scheme}://{user}@{host}"
        r = zbsoserver.run_cli(["import", "zeus", bare, "--dry-run"], cwd=self.tmp.name,
                               env=dict(ENV, ZEUS_BSO_DB_PASSWORD=password))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn(password, r.stdout + r.stderr)
        r = zbsoserver.run_cli(["import", "zeus", bare, "--dry-run"], cwd=self.tmp.name,
                               env=dict(ENV, ZEUS_BSO_DB_PASSWORD="wrong"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot connect to Zeus database", r.stderr)

    def test_unseeded_job(self):
        # A job without mab_seed: Zeus keeps no generator for it (it draws a clock-seeded
        # one per request), so zbso seeds one and a second import still finds it unchanged.
        job = json.loads(json.dumps(next(j for j in self.ref["jobs"]
                                         if j["Job"]["job_id"] == "mab-w0")))
        job["Job"]["mab_seed"] = None
        job["Job"]["mab_random_generator_state"] = None
        if BACKEND == "sqlite":
            url = zeusdb.build_sqlite(os.path.join(self.tmp.name, "unseeded.db"), [job])
        else:
            url = zeusdb.build_server(BACKEND, "zeus_unseeded", [job])
        db = self.new_db("unseeded-target.db")
        for expect in ("imported mab-w0 (MAB, 12 trials, 4 arms)\n", "unchanged mab-w0"):
            r = zbsoserver.run_cli(["import", "zeus", url, "--db", db.url], cwd=self.tmp.name,
                                   env=ENV)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(expect, r.stdout)
        srv = zbsoserver.Server(tmpdir=self.tmp.name, database=db, env=ENV,
                                args=["--trial-timeout", "0"])
        self.addCleanup(srv.close)
        srv.start()
        self.assertIsNone(srv.request("GET", "/jobs/mab-w0").json["spec"]["mab_seed"])
        r = srv.request("GET", "/jobs/batch_size?job_id=mab-w0")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["trial_number"], 13)

    def test_usage_errors(self):
        for args, text in ((["import"], "what to import is missing"),
                           (["import", "optuna", "x"], "only 'zeus'"),
                           (["import", "zeus"], "Zeus database URL is missing"),
                           (["import", "zeus", "a", "b"], "unexpected argument 'b'"),
                           (["import", "zeus", "ftp://x"], "ftp"),
                           (["import", "zeus", self.zeus_url, "--jobs", ""], "--jobs"),
                           (["import", "zeus", self.zeus_url, "--bogus"], "--bogus")):
            r = zbsoserver.run_cli(args, cwd=self.tmp.name, env=ENV)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(text, r.stderr, args)


if __name__ == "__main__":
    unittest.main()
