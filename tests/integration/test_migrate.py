"""test_migrate.py: `zbso migrate` and the schema check of `zbso serve` (SPEC §4): --sql
touches no database, an older schema is refused with a message naming `zbso migrate`,
migrating (or serve --migrate) fixes it, a newer schema and a database of someone else's
tables are refused, unsupported URL schemes name the supported ones. On the backend of
$ZBSO_TEST_BACKEND (a SQLite file, or a fresh PostgreSQL or MariaDB database).

MariaDB's schema history starts at version 1 and has one step after it (power profiles,
BeforeProfiles, which every backend runs); the tests of the older versions with data in
them (OlderVersions) run on SQLite and PostgreSQL, and MariaDB runs FirstVersion instead:
an empty database (version 0) migrated to the latest, and `zbso migrate --sql`'s output
applied by the mariadb client."""

import os
import re
import sqlite3
import subprocess
import tempfile
import unittest

from zbsoserver import BACKEND, ZBSO_BIN, Server, clean_env, job_spec, new_database, run_cli

SCHEMA_TABLES = {"jobs", "trials", "arms"}
# The schema version before trials.request_key (the idempotency keys), per backend.
PREVIOUS_VERSION = {"sqlite": 3, "postgresql": 2}
# The schema version before jobs.updated_at and the reports table (curve points).
BEFORE_CURVES = {"sqlite": 4, "postgresql": 3}
# The schema version before power_profiles (power-limit profiles per batch size).
BEFORE_PROFILES = {"sqlite": 5, "postgresql": 4, "mysql": 1}


def latest_version(url, cwd):
    """The newest schema version the binary knows for url's backend, from the binary itself
    (the message of `zbso migrate --to` past it), so that no test holds the number."""
    r = run_cli(["migrate", "--to", "1000000", "--db", url], cwd=cwd)
    m = re.search(r"is beyond the latest \w+ schema version (\d+)", r.stderr)
    if r.returncode != 2 or m is None:
        raise AssertionError(f"zbso migrate --to 1000000 did not name the latest version: "
                             f"{r.returncode} {r.stderr!r}")
    return int(m.group(1))


# A URL of each backend for `zbso migrate --sql`, which connects to nothing.
SQL_URLS = {"sqlite": "sqlite:///unused.db", "postgresql": "postgresql://u@127.0.0.1:1/d",
            "mysql": "mysql://u@127.0.0.1:1/d"}
VERSION_SET = re.compile(r"(?:user_version = |SET version = |\(version\) VALUES \()(\d+)")


def schema_sql(kind):
    """The whole schema history of backend kind as this binary prints it."""
    r = run_cli(["migrate", "--sql", "--db", SQL_URLS[kind]], cwd=tempfile.gettempdir())
    if r.returncode != 0:
        raise AssertionError(f"zbso migrate --sql for {kind}: {r.stderr}")
    return r.stdout


def version_after(kind, needle):
    """The schema version whose step holds needle (the first version set after it)."""
    sql = schema_sql(kind)
    at = sql.index(needle)
    return int(VERSION_SET.search(sql, at).group(1))


class _Latest(dict):
    """The latest schema version per backend, read from the binary (the last version its
    schema history sets), so that a new schema step needs no edit here."""

    def __missing__(self, kind):
        self[kind] = int(VERSION_SET.findall(schema_sql(kind))[-1])
        return self[kind]


LATEST_VERSION = _Latest()


class MigrateCase(unittest.TestCase):
    """A fresh database of the backend per test, and ways to touch it behind zbso's back."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="zbso-mig-")
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name
        self.database = new_database(self.tmp, "old.db")
        self.addCleanup(self.database.close)
        self.url = self.database.url

    def assert_untouched(self):
        """Nothing was written: no file in the directory, no SQLite file, no table."""
        self.assertEqual(os.listdir(self.tmp), [])
        if self.database.kind != "sqlite":
            self.assertEqual(self.database.tables(), [])

    def serve_once(self, *args):
        """Runs serve expecting it to exit by itself; a server that starts is a failure."""
        try:
            return subprocess.run([ZBSO_BIN, "serve", "--port", "0", "--db", self.url, *args],
                                  cwd=self.tmp, env=clean_env(), capture_output=True,
                                  text=True, timeout=30)
        except subprocess.TimeoutExpired as e:
            self.fail(f"serve kept running on an old schema: {e.stdout!r}")

    def write_sql(self, sql):
        """Runs sql on the test's database, behind zbso's back."""
        if self.database.kind == "postgresql":
            self.database.psql(sql)
            return
        if self.database.kind == "mysql":
            self.database.sql(sql)
            return
        conn = sqlite3.connect(self.database.path)
        try:
            conn.executescript(sql)
        finally:
            conn.close()

    def set_version(self, version):
        """Writes schema version into the database, as a zbso of that version would."""
        if self.database.kind == "sqlite":
            self.write_sql(f"PRAGMA user_version = {version};")
        else:
            self.write_sql(f"UPDATE zbso_schema SET version = {version};")


class MigrateTest(MigrateCase):
    def test_sql_prints_schema_and_touches_nothing(self):
        r = run_cli(["migrate", "--sql"], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("CREATE TABLE", r.stdout)
        self.assertEqual(os.listdir(self.tmp), [])
        r = run_cli(["migrate", "--sql", "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("CREATE TABLE", r.stdout)
        self.assert_untouched()

    def test_sql_to_and_from_versions(self):
        for db in ([], ["--db", self.url]):
            with self.subTest(" ".join(db) or "default backend"):
                full = run_cli(["migrate", "--sql", "--to", "1", *db], cwd=self.tmp)
                self.assertEqual(full.returncode, 0, full.stderr)
                self.assertIn("CREATE TABLE", full.stdout)
                rest = run_cli(["migrate", "--sql", "--from", "1", *db], cwd=self.tmp)
                self.assertEqual(rest.returncode, 0, rest.stderr)
                self.assertNotEqual(rest.stdout, full.stdout)
                self.assert_untouched()

    def test_newer_schema_refused(self):
        """A database of a newer zbso (its schema version past this binary's) is refused
        by serve and by migrate, naming both versions, and left as it was."""
        latest = latest_version(self.url, self.tmp)
        r = run_cli(["migrate", "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.set_version(latest + 1)
        before = self.database.snapshot()
        r = self.serve_once()
        self.assertNotEqual(r.returncode, 0)
        self.assertNotIn("listening", r.stdout)
        want = f"has schema version {latest + 1}, newer than this binary's {latest}"
        self.assertIn(want, r.stderr)
        self.assertIn("use a newer zbso", r.stderr)
        r = run_cli(["migrate", "--db", self.url], cwd=self.tmp)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn(want, r.stderr)
        self.assertEqual(self.database.snapshot(), before)

    def test_foreign_tables_refused(self):
        """A database that holds tables but no zbso schema is someone else's: serve and
        migrate refuse it and create nothing in it."""
        self.write_sql("CREATE TABLE other (x INTEGER);")
        r = self.serve_once()
        self.assertNotEqual(r.returncode, 0)
        self.assertNotIn("listening", r.stdout)
        self.assertIn("holds tables but no zbso schema", r.stderr)
        r = run_cli(["migrate", "--db", self.url], cwd=self.tmp)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("holds tables but no zbso schema", r.stderr)
        self.assertEqual(self.database.tables(), ["other"])

    def test_new_database_created_by_serve(self):
        srv = Server(tmpdir=self.tmp, db_name="fresh.db")
        self.addCleanup(srv.close)
        self.assertEqual(srv.db.tables() if srv.db.kind != "sqlite" else [], [])
        srv.start()
        if srv.db.kind == "sqlite":
            self.assertTrue(os.path.exists(os.path.join(self.tmp, "fresh.db")))
        self.assertEqual(SCHEMA_TABLES - set(srv.db.tables()), set())
        self.assertEqual(srv.request("POST", "/jobs", body=job_spec(job_id="itest-n")).status,
                         201)
        self.assertEqual([j["job_id"] for j in srv.rows("jobs")], ["itest-n"])

    def test_unsupported_scheme_names_supported_ones(self):
        url = "mssql+pyodbc://u:p@localhost/zeus"
        for args in (["migrate", "--db", url], ["migrate", "--sql", "--db", url],
                     ["serve", "--port", "0", "--db", url]):
            with self.subTest(" ".join(args[:2])):
                r = run_cli(args, cwd=self.tmp, timeout=30)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("mssql+pyodbc", r.stderr)
                self.assertIn("sqlite:///", r.stderr)
                self.assertIn("postgresql://", r.stderr)
                self.assertIn("mysql://", r.stderr)
        self.assertEqual(os.listdir(self.tmp), [])

    def test_bad_versions(self):
        for args, word in ((["migrate", "--to", "x"], "'x'"),
                           (["migrate", "--to", "-1"], "'-1'"),
                           (["migrate", "--to", "999", "--db", self.url], "999"),
                           (["migrate", "--from", "1"], "--from")):
            with self.subTest(" ".join(args)):
                r = run_cli(args, cwd=self.tmp)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(word, r.stderr)
        self.assert_untouched()


class OlderVersions:
    """SQLite and PostgreSQL: databases at older versions, with data in them."""

    def test_old_schema_refused_then_migrated(self):
        r = run_cli(["migrate", "--to", "1", "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(SCHEMA_TABLES - set(self.database.tables()), set())

        r = self.serve_once()
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("zbso migrate", r.stderr)
        self.assertNotIn("listening", r.stdout)

        r = run_cli(["migrate", "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        srv = Server(tmpdir=self.tmp, database=self.database)
        self.addCleanup(srv.close)
        srv.start()
        self.assertEqual(srv.request("POST", "/jobs", body=job_spec()).status, 201)
        self.assertEqual(srv.terminate(), 0)
        # Migrating a current database again is a no-op that succeeds.
        r = run_cli(["migrate", "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_previous_version_keeps_its_data_and_gains_request_key(self):
        """A database one version behind (before trials.request_key) with a job and a trial
        in it: serve refuses it naming `zbso migrate`; migrate keeps both rows and adds the
        column, NULL for the old trial; the server then takes idempotency keys."""
        previous = PREVIOUS_VERSION[self.database.kind]
        r = run_cli(["migrate", "--to", str(previous), "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        bs = "{8,16}" if self.database.kind == "postgresql" else "8,16"
        self.write_sql(
            "INSERT INTO jobs (job_id, job_id_prefix, batch_sizes, default_batch_size,"
            " eta_knob, beta_knob, target_metric, higher_is_better_metric, max_epochs,"
            " num_pruning_rounds, window_size, mab_prior_mean, mab_prior_precision,"
            " mab_num_explorations, mab_seed, max_power, number_of_gpus, gpu_model, stage,"
            " exp_default_batch_size, min_cost, min_cost_batch_size, rng_state, num_trials,"
            f" created_at, version) VALUES ('old-1', 'old', '{bs}', 8, 0.5, NULL, 0.9, TRUE,"
            " 10, 2, 0, 0, 0, 2, NULL, 300, 1, 'A40', 0, 8, NULL, 8, 'x', 1, 1.5, 2);"
            "INSERT INTO trials (job_id, trial_number, batch_size, type, status, start_time,"
            " end_time, lease_renewed_at, time, energy, metric, epochs, converged) VALUES"
            " ('old-1', 1, 8, 0, 0, 5.5, 0, 5.5, NULL, NULL, NULL, 0, FALSE);")
        self.assertNotIn("request_key", self.database.rows("trials")[0])

        r = self.serve_once()
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("zbso migrate", r.stderr)
        self.assertIn(f"version {previous}", r.stderr)

        r = run_cli(["migrate", "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        latest = latest_version(self.url, self.tmp)
        self.assertIn(f"schema version {previous} -> {latest}", r.stdout + r.stderr)
        trials = self.database.rows("trials")
        self.assertEqual([(t["job_id"], t["trial_number"], t["start_time"], t["request_key"])
                          for t in trials], [("old-1", 1, 5.5, None)])
        self.assertEqual([j["job_id"] for j in self.database.rows("jobs")], ["old-1"])

        srv = Server(tmpdir=self.tmp, database=self.database)
        self.addCleanup(srv.close)
        srv.start()
        jid = srv.request("POST", "/jobs", body=job_spec(job_id="itest-new")).json["job_id"]
        key = {"Idempotency-Key": '"k"'}
        first = srv.request("GET", f"/jobs/batch_size?job_id={jid}", headers=key)
        again = srv.request("GET", f"/jobs/batch_size?job_id={jid}", headers=key)
        self.assertEqual(first.status, 200, first)
        self.assertEqual(again.json, first.json)
        keyed = [t["request_key"] for t in self.database.rows("trials") if t["job_id"] == jid]
        self.assertEqual(keyed, ["k"])

    def test_version_before_curves_gains_updated_at_and_reports(self):
        """A database at the version before curve points, with jobs and trials: migrate
        keeps them, gives each job updated_at = the latest of its creation and its trials'
        start, end and lease renewal (its creation when it has none), and adds the reports
        table; the server then stores the points of reports, the final one at once."""
        before = BEFORE_CURVES[self.database.kind]
        r = run_cli(["migrate", "--to", str(before), "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        bs = "{8,16}" if self.database.kind == "postgresql" else "8,16"
        jobs = []
        for jid, created in (("old-c", 1.5), ("old-bare", 2.5), ("old-end", 3.5)):
            jobs.append(
                "INSERT INTO jobs (job_id, job_id_prefix, batch_sizes, default_batch_size,"
                " eta_knob, beta_knob, target_metric, higher_is_better_metric, max_epochs,"
                " num_pruning_rounds, window_size, mab_prior_mean, mab_prior_precision,"
                " mab_num_explorations, mab_seed, max_power, number_of_gpus, gpu_model,"
                " stage, exp_default_batch_size, min_cost, min_cost_batch_size, rng_state,"
                f" num_trials, created_at, version) VALUES ('{jid}', 'old', '{bs}', 8, 0.5,"
                " NULL, 0.9, TRUE, 10, 2, 0, 0, 0, 2, NULL, 300, 1, 'A40', 0, 8, NULL, 8,"
                f" 'x', 2, {created}, 2);")
        trial = ("INSERT INTO trials (job_id, trial_number, batch_size, type, status,"
                 " start_time, end_time, lease_renewed_at, time, energy, metric, epochs,"
                 " converged) VALUES ")
        self.write_sql("".join(jobs) + trial +
                       "('old-c', 1, 8, 0, 0, 5.5, 0, 7.25, NULL, NULL, NULL, 0, FALSE),"
                       " ('old-c', 2, 8, 0, 0, 6.5, 0, 6.5, NULL, NULL, NULL, 0, FALSE),"
                       " ('old-end', 1, 8, 0, 1, 4.5, 9.75, 8.5, 1, 2, 0.5, 3, TRUE);")
        self.assertNotIn("reports", self.database.tables())
        self.assertNotIn("updated_at", self.database.rows("jobs")[0])

        r = self.serve_once()
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("zbso migrate", r.stderr)
        self.assertIn(f"version {before}", r.stderr)
        r = run_cli(["migrate", "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        latest = latest_version(self.url, self.tmp)
        self.assertIn(f"schema version {before} -> {latest}", r.stdout + r.stderr)
        self.assertEqual({j["job_id"]: j["updated_at"] for j in self.database.rows("jobs")},
                         {"old-c": 7.25, "old-bare": 2.5, "old-end": 9.75})
        self.assertEqual(len(self.database.rows("trials")), 3)
        self.assertEqual(self.database.rows("reports"), [])

        srv = Server(tmpdir=self.tmp, database=self.database)
        self.addCleanup(srv.close)
        srv.start()
        jid = srv.request("POST", "/jobs", body=job_spec(
            job_id="itest-c", target_metric=0.9, max_epochs=10)).json["job_id"]
        tid = srv.request("GET", f"/jobs/batch_size?job_id={jid}").json
        base = {"job_id": jid, "batch_size": tid["batch_size"],
                "trial_number": tid["trial_number"], "time": 1.5}
        r = srv.request("POST", "/report", body={**base, "energy": 10.0, "metric": 0.5,
                                                 "current_epoch": 1})
        self.assertEqual(r.status, 200, r)
        self.assertFalse(r.json["stop_train"], r)
        r = srv.request("POST", "/report", body={**base, "time": 3.0, "energy": 20.0,
                                                 "metric": 0.95, "current_epoch": 2})
        self.assertTrue(r.json["stop_train"], r)
        # The trial's result is stored by the unit that ended it.
        trial = [t for t in self.database.rows("trials") if t["job_id"] == jid][0]
        self.assertEqual((trial["time"], trial["energy"], trial["epochs"]), (3.0, 20.0, 2))
        # Both points are buffered, and written by the time the server has stopped.
        self.assertEqual(srv.terminate(), 0)
        self.assertEqual([(p["epoch"], p["time"], p["energy"], p["metric"])
                          for p in self.database.rows("reports", "epoch")],
                         [(1, 1.5, 10.0, 0.5), (2, 3.0, 20.0, 0.95)])

    def test_serve_migrate_flag_upgrades(self):
        r = run_cli(["migrate", "--to", "1", "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        srv = Server(tmpdir=self.tmp, database=self.database, args=["--migrate"])
        self.addCleanup(srv.close)
        srv.start()
        self.assertEqual(srv.request("POST", "/jobs", body=job_spec()).status, 201)
        srv.kill()
        # Upgraded for good: a plain serve now starts.
        srv.args = []
        srv.start()
        self.assertTrue(srv.healthy())


class BeforeProfiles:
    """Every backend: the version before power profiles."""

    def test_version_before_profiles_gains_power_profiles(self):
        """A database at the version before power profiles: migrate keeps its job and adds
        the power_profiles table, and the server then stores and reads a profile."""
        before = BEFORE_PROFILES[self.database.kind]
        r = run_cli(["migrate", "--to", str(before), "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("power_profiles", self.database.tables())
        srv = Server(tmpdir=self.tmp, database=self.database, args=["--migrate"])
        self.addCleanup(srv.close)
        srv.start()
        latest = latest_version(self.url, self.tmp)
        self.assertIn("power_profiles", self.database.tables())
        jid = srv.request("POST", "/jobs", body=job_spec(job_id="itest-p")).json["job_id"]
        body = {"job_id": jid, "batch_size": 8,
                "measurements": [{"power_limit": 300, "time": 0.5, "energy": 100.0}]}
        self.assertEqual(srv.request("PUT", "/power_profiles", body=body).status, 200)
        r = srv.request("GET", f"/power_profiles?job_id={jid}&batch_size=8")
        self.assertEqual(r.json["measurements"], body["measurements"])
        srv.kill()
        r = run_cli(["migrate", "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"schema version {latest} -> {latest}", r.stdout + r.stderr)



class BeforePolicy:
    """Every backend: the version before the policy step (issue 21), found in the binary's
    own SQL so that the step may move to another number."""

    def policy_step(self):
        latest = latest_version(self.url, self.tmp)
        for v in range(1, latest + 1):
            r = run_cli(["migrate", "--sql", "--from", str(v - 1), "--to", str(v),
                         "--db", self.url], cwd=self.tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            if "ADD COLUMN policy" in r.stdout:
                return v, latest
        self.fail("no schema step adds jobs.policy")

    def test_version_before_policy_gains_zeus_jobs(self):
        """A job stored before the step is a zeus job without a warm start after it, and
        stays one on a server whose default is smart: a re-registration without the field
        matches it, one naming smart is a 409; new jobs take the default."""
        step, latest = self.policy_step()
        before = step - 1
        r = run_cli(["migrate", "--to", str(before), "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        bs = "{8,16}" if self.database.kind == "postgresql" else "8,16"
        rng = "0" * 31 + "1:" + "0" * 31 + "1:0:00000000"
        self.write_sql(
            "INSERT INTO jobs (job_id, job_id_prefix, batch_sizes, default_batch_size,"
            " eta_knob, beta_knob, target_metric, higher_is_better_metric, max_epochs,"
            " num_pruning_rounds, window_size, mab_prior_mean, mab_prior_precision,"
            " mab_num_explorations, mab_seed, max_power, number_of_gpus, gpu_model, stage,"
            " exp_default_batch_size, min_cost, min_cost_batch_size, rng_state, num_trials,"
            " created_at, version, updated_at) VALUES ('old-1', 'old', '" + bs + "', 8, 0.5,"
            " NULL, 0.9, TRUE, 10, 2, 0, 0, 0, 2, NULL, 300, 1, 'A40', 0, 8, NULL, 8,"
            f" '{rng}', 0, 1.5, 1, 1.5);")
        self.assertNotIn("policy", self.database.rows("jobs")[0])
        r = self.serve_once()
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"version {before}", r.stderr)
        r = run_cli(["migrate", "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"schema version {before} -> {latest}", r.stdout + r.stderr)
        row = self.database.rows("jobs")[0]
        self.assertEqual((row["job_id"], row["policy"], bool(row["warm_start"])),
                         ("old-1", "zeus", False))
        self.assertIn(row["prior_jobs"], ("", b""))

        srv = Server(tmpdir=self.tmp, database=self.database, args=["--policy", "smart"])
        self.addCleanup(srv.close)
        srv.start()
        self.assertEqual(srv.request("GET", "/jobs/old-1").json["policy"], "zeus")
        old = {"job_id": "old-1", "job_id_prefix": "old", "batch_sizes": [8, 16],
               "default_batch_size": 8, "beta_knob": None, "target_metric": 0.9,
               "max_epochs": 10, "max_power": 300, "number_of_gpus": 1, "gpu_model": "A40"}
        r = srv.request("POST", "/jobs", body=old)
        self.assertEqual(r.status, 200, r)
        self.assertNotIn("policy", r.json)
        self.assertEqual(srv.request("POST", "/jobs", body={**old, "policy": "smart"}).status,
                         409)
        r = srv.request("POST", "/jobs", body=job_spec(job_id="itest-new", prior_jobs=["old-1"]))
        self.assertEqual(r.status, 201, r)
        self.assertEqual((r.json["policy"], r.json["warm_start"], r.json["prior_jobs"]),
                         ("smart", True, ["old-1"]))
        rows = {j["job_id"]: j for j in self.database.rows("jobs")}
        self.assertEqual((rows["itest-new"]["policy"], bool(rows["itest-new"]["warm_start"])),
                         ("smart", True))
        self.assertIn(rows["itest-new"]["prior_jobs"], ("old-1", b"old-1"))


class FirstVersion:
    """MariaDB: what its schema history has from version 0 (an empty database)."""

    def test_empty_database_migrated_to_latest(self):
        latest = latest_version(self.url, self.tmp)
        r = run_cli(["migrate", "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"schema version 0 -> {latest}", r.stdout + r.stderr)
        self.assertEqual(SCHEMA_TABLES - set(self.database.tables()), set())
        self.assertEqual(self.database.rows("zbso_schema"), [{"version": latest}])
        # Again: nothing to do, nothing changed.
        before = self.database.snapshot()
        r = run_cli(["migrate", "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"schema version {latest} -> {latest}", r.stdout + r.stderr)
        self.assertEqual(self.database.snapshot(), before)
        srv = Server(tmpdir=self.tmp, database=self.database)
        self.addCleanup(srv.close)
        srv.start()
        self.assertEqual(srv.request("POST", "/jobs", body=job_spec()).status, 201)
        self.assertEqual(srv.terminate(), 0)
        # The latest is the last; --to one beyond does not exist and touches nothing.
        r = run_cli(["migrate", "--to", str(latest + 1), "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"--to {latest + 1} is beyond the latest mysql schema version {latest}",
                      r.stderr)
        self.assertEqual([j["job_id_prefix"] for j in self.database.rows("jobs")], ["itest"])

    def test_sql_applied_by_the_client_is_the_schema(self):
        """`zbso migrate --sql` (from 0) run by the mariadb client makes the schema zbso
        expects: migrate then finds the latest version and the server starts on it."""
        latest = latest_version(self.url, self.tmp)
        r = run_cli(["migrate", "--sql", "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("GET_LOCK", r.stdout)
        self.assert_untouched()
        self.database.sql(r.stdout)
        self.assertEqual(self.database.rows("zbso_schema"), [{"version": latest}])
        r = run_cli(["migrate", "--db", self.url], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"schema version {latest} -> {latest}", r.stdout + r.stderr)
        srv = Server(tmpdir=self.tmp, database=self.database)
        self.addCleanup(srv.close)
        srv.start()
        self.assertEqual(srv.request("POST", "/jobs", body=job_spec()).status, 201)
        # --sql --from the latest: nothing left to create.
        r = run_cli(["migrate", "--sql", "--from", str(latest), "--db", self.url],
                    cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("CREATE TABLE", r.stdout)


class VersionsTest(MigrateCase, BeforeProfiles, BeforePolicy,
                   FirstVersion if BACKEND == "mysql" else OlderVersions):
    """The version tests of this backend's schema history."""


if __name__ == "__main__":
    unittest.main()
