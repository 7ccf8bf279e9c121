"""test_migrate.py: `zbso migrate` and the schema check of `zbso serve` (SPEC §4): --sql
touches no database, an older schema is refused with a message naming `zbso migrate`,
migrating (or serve --migrate) fixes it, unsupported URL schemes name the supported ones.
On the backend of $ZBSO_TEST_BACKEND (a SQLite file or a fresh PostgreSQL database)."""

import os
import subprocess
import tempfile
import unittest

from zbsoserver import ZBSO_BIN, Server, clean_env, job_spec, new_database, run_cli

SCHEMA_TABLES = {"jobs", "trials", "arms"}


class MigrateTest(unittest.TestCase):
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
        if self.database.kind == "postgresql":
            self.assertEqual(self.database.tables(), [])

    def serve_once(self, *args):
        """Runs serve expecting it to exit by itself; a server that starts is a failure."""
        try:
            return subprocess.run([ZBSO_BIN, "serve", "--port", "0", "--db", self.url, *args],
                                  cwd=self.tmp, env=clean_env(), capture_output=True,
                                  text=True, timeout=30)
        except subprocess.TimeoutExpired as e:
            self.fail(f"serve kept running on an old schema: {e.stdout!r}")

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

    def test_new_database_created_by_serve(self):
        srv = Server(tmpdir=self.tmp, db_name="fresh.db")
        self.addCleanup(srv.close)
        self.assertEqual(srv.db.tables() if srv.db.kind == "postgresql" else [], [])
        srv.start()
        if srv.db.kind == "sqlite":
            self.assertTrue(os.path.exists(os.path.join(self.tmp, "fresh.db")))
        self.assertEqual(SCHEMA_TABLES - set(srv.db.tables()), set())
        self.assertEqual(srv.request("POST", "/jobs", body=job_spec(job_id="itest-n")).status,
                         201)
        self.assertEqual([j["job_id"] for j in srv.rows("jobs")], ["itest-n"])

    def test_unsupported_scheme_names_supported_ones(self):
        for args in (["migrate", "--db", "mysql://u:p@localhost/zeus"],
                     ["migrate", "--sql", "--db", "mysql://u:p@localhost/zeus"],
                     ["serve", "--port", "0", "--db", "mysql://u:p@localhost/zeus"]):
            with self.subTest(" ".join(args[:2])):
                r = run_cli(args, cwd=self.tmp, timeout=30)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("mysql", r.stderr)
                self.assertIn("sqlite:///", r.stderr)
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


if __name__ == "__main__":
    unittest.main()
