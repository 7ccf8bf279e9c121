"""test_storage_faults_pg.py: `zbso serve` on PostgreSQL when the database takes no writes
(docs/DESIGN.md, "Storage faults"): a read-only database (default_transaction_read_only,
as a hot standby after a failover would be) answers writes 503 with Retry-After naming
the cause, keeps answering reads, says so on /healthz, and takes writes again once
writable; `zbso serve` refuses to start on it. Runs under tests/pg/with_pg.sh; the
SQLSTATE table of the other faults (disk full, I/O errors) is pinned in tests/pg."""

import subprocess
import unittest

from zbsoserver import (BACKEND, ZBSO_BIN, PgDatabase, Server, clean_env, job_spec,
                        require_backend)


class ReadOnlyPg(unittest.TestCase):
    def setUp(self):
        require_backend()
        if BACKEND != "postgresql":
            raise AssertionError("run this module with ZBSO_TEST_BACKEND=postgresql")
        self.db = PgDatabase()
        self.addCleanup(self.db.close)
        self.srv = Server(database=self.db)
        self.addCleanup(self.srv.close)

    def set_read_only(self, on):
        """Switches the database, from the admin database, and ends its sessions so that
        new ones see it (the server reconnects by itself)."""
        what = "SET default_transaction_read_only = on" if on else \
            "RESET default_transaction_read_only"
        self.db.psql(f"ALTER DATABASE {self.db.name} {what}", url=self.db.admin_url)
        self.db.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                     f"WHERE datname = '{self.db.name}'", url=self.db.admin_url)

    def register(self, job_id):
        return self.srv.request("POST", "/jobs", body=job_spec(job_id=job_id))

    def test_read_only_answers_503_then_recovers(self):
        self.srv.start()
        self.assertEqual(self.register("itest-before").status, 201)
        self.set_read_only(True)
        r = self.register("itest-during")
        self.assertEqual(r.status, 503, r)
        self.assertEqual(r.headers.get("Retry-After"), "1", r.headers)
        self.assertIn("read-only", r.json["message"])
        self.assertEqual(self.register("itest-before").status, 200)
        h = self.srv.request("GET", "/healthz")
        self.assertEqual(h.status, 503, h)
        self.assertEqual(h.json, {"status": "unavailable", "reason": "read_only"}, h)
        self.set_read_only(False)
        self.assertTrue(self.srv.healthy(), self.srv.log_tail())
        self.assertEqual(self.register("itest-during").status, 201)
        self.assertEqual([row["job_id"] for row in self.srv.rows("jobs", "job_id")],
                         ["itest-before", "itest-during"])

    def test_read_only_database_refused_at_start(self):
        self.srv.start()
        self.srv.kill()
        self.set_read_only(True)
        try:
            r = subprocess.run([ZBSO_BIN, "serve", "--port", "0", "--db", self.db.url],
                               cwd=self.srv.tmpdir, env=clean_env(), capture_output=True,
                               text=True, timeout=60)
        except subprocess.TimeoutExpired as e:
            self.fail(f"serve started on a read-only database: {e.stdout!r}")
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("listening", r.stdout)
        self.assertIn("read-only", r.stderr)
        self.assertIn(f"/{self.db.name}", r.stderr)
        self.set_read_only(False)
        self.srv.start()
        self.assertTrue(self.srv.healthy())


if __name__ == "__main__":
    unittest.main()
