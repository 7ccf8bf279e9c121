"""test_storage_faults_mysql.py: `zbso serve` on MariaDB when the database takes no writes
or goes away (docs/DESIGN.md, "Storage faults"), as test_storage_faults_pg.py does on
PostgreSQL. Runs under tests/mysql/with_mysql.sh (ZBSO_TEST_BACKEND=mysql).

- A read-only server (SET GLOBAL read_only = ON, as a replica after a failover is): the
  server's user has privileges on its database only (a user with READ ONLY ADMIN or SUPER
  writes through read_only), so writes answer 503 with Retry-After naming the cause, reads
  keep answering, /healthz says so, and writes are taken again once it is writable;
  `zbso serve` refuses to start on it. The pooled connections see the change without
  being cut off.
- A full disk: the system tablespace given a maximum size just past its own
  (innodb_data_file_path ...:max:, innodb_file_per_table=0, so zbso's tables live in it)
  and filled by another table: writes answer 503 with Retry-After ("The table is full",
  1114), reads answer; once the server has room again (restarted without the maximum,
  as an operator who grew the disk would) zbso serve takes writes without a restart of
  its own, and nothing acknowledged is lost.
- The server killed (SIGKILL of mariadbd, InnoDB recovery at the next start): 503 with
  Retry-After while it is down, writes again after it is back, every acknowledged
  registration stored (innodb_flush_log_at_trx_commit=1).
- The database dropped under a running server: every request answers 5xx with a JSON
  message that holds no password, the process stays up, and `zbso serve` refuses to start
  on the missing database naming it; created again, serve makes a fresh schema in it.

Not done here: an I/O error inside mariadbd (its files are written by another process,
which the fault library of test_storage_faults.py cannot reach without being preloaded
into the database server); the translation of those error numbers is the pure
my_errno_code (src/store/netdb/myInt.h)."""

import itertools
import os
import subprocess
import time
import unittest

from zbsoserver import (BACKEND, ZBSO_BIN, MysqlDatabase, Server, clean_env, db_ctl,
                        job_spec, require_backend)

RECOVER_S = 30.0  # the database back -> zbso serve answers 2xx again, at most
_users = itertools.count(1)


class MysqlFaultCase(unittest.TestCase):
    def setUp(self):
        require_backend()
        if BACKEND != "mysql":
            raise AssertionError("run this module with ZBSO_TEST_BACKEND=mysql under "
                                 "tests/mysql/with_mysql.sh")

    def make_db(self, restricted=False):
        """A fresh database and a server on it; restricted: the server connects as a user
        with every privilege on that database and none beyond it."""
        self.db = MysqlDatabase()
        self.addCleanup(self.db.close)
        self.srv = Server(database=self.db)
        self.addCleanup(self.srv.close)
        if restricted:
            user = f"zbso_rw_{os.getpid()}_{next(_users)}"
            password = "Rw" + os.urandom(9).hex()
            self.db.sql(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}';"
                        f"GRANT ALL PRIVILEGES ON `{self.db.name}`.* TO '{user}'@'%'",
                        database=self.db.admin_db)
            self.addCleanup(self.db.sql, f"DROP USER '{user}'@'%'", database=self.db.admin_db)
            self.srv.db_url = (f"mysql://{user}:{password}@{self.db.host}:{self.db.port}/"
                               f"{self.db.name}")
            self.password = password
        else:
            self.password = self.db.password

    def register(self, job_id):
        return self.srv.request("POST", "/jobs", body=job_spec(job_id=job_id))

    def stored_jobs(self):
        return sorted(row["job_id"] for row in self.db.rows("jobs", "job_id"))

    def until_2xx(self, job_id):
        """Registers job_id until it is acknowledged (503s meanwhile); returns the answer."""
        deadline = time.monotonic() + RECOVER_S
        while True:
            self.assertIsNone(self.srv.proc.poll(), "zbso serve died:\n" + self.srv.log_tail())
            r = self.register(job_id)
            if r.status in (200, 201):
                return r
            self.assertEqual(r.status, 503, r)
            self.assertLess(time.monotonic(), deadline,
                            "zbso serve did not take writes again:\n" + self.srv.log_tail())
            time.sleep(0.1)

    def assert_503(self, r, *words):
        self.assertEqual(r.status, 503, r)
        retry = r.headers.get("Retry-After") or ""
        self.assertTrue(retry.isdigit() and int(retry) >= 1, r.headers)
        for w in words:
            self.assertIn(w, r.json["message"])
        self.assertNotIn(self.password, r.body.decode("utf-8", "replace"))


class ReadOnlyMysql(MysqlFaultCase):
    def set_read_only(self, on):
        self.db.sql(f"SET GLOBAL read_only = {'ON' if on else 'OFF'}",
                    database=self.db.admin_db)

    def setUp(self):
        super().setUp()
        self.make_db(restricted=True)
        self.addCleanup(self.set_read_only, False)

    def test_read_only_answers_503_then_recovers(self):
        self.srv.start()
        self.assertEqual(self.register("itest-before").status, 201)
        self.set_read_only(True)
        r = self.register("itest-during")
        self.assert_503(r, "read-only")
        self.assertEqual(self.register("itest-before").status, 200)
        self.assertEqual(self.srv.request("GET", "/jobs/itest-before").status, 200)
        h = self.srv.request("GET", "/healthz")
        self.assertEqual(h.status, 503, h)
        self.assertEqual(h.json, {"status": "unavailable", "reason": "read_only"}, h)
        self.set_read_only(False)
        self.assertTrue(self.srv.healthy(), self.srv.log_tail())
        self.assertEqual(self.register("itest-during").status, 201)
        self.assertEqual(self.stored_jobs(), ["itest-before", "itest-during"])

    def test_read_only_database_refused_at_start(self):
        self.srv.start()
        self.srv.kill()
        self.set_read_only(True)
        try:
            r = subprocess.run([ZBSO_BIN, "serve", "--port", "0", "--db", self.srv.db_url],
                               cwd=self.srv.tmpdir, env=clean_env(), capture_output=True,
                               text=True, timeout=60)
        except subprocess.TimeoutExpired as e:
            self.fail(f"serve started on a read-only database: {e.stdout!r}")
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("listening", r.stdout)
        self.assertIn("read-only", r.stderr)
        self.assertIn(f"/{self.db.name}", r.stderr)
        self.assertNotIn(self.password, r.stderr)
        self.set_read_only(False)
        self.srv.start()
        self.assertTrue(self.srv.healthy())


class DiskFullMysql(MysqlFaultCase):
    def restart_server(self, *options):
        db_ctl("stop")
        db_ctl("start", *options)
        self.limited = bool(options)

    def undo(self):
        """Runs first among the cleanups: a full tablespace takes not even a DROP."""
        if self.limited:
            self.restart_server()
        self.db.sql(f"DROP TABLE IF EXISTS {self.filler}", database=self.db.admin_db)

    def test_full_tablespace_answers_503_then_recovers(self):
        data = os.environ.get("ZBSO_MYSQL_DATA", "")
        ibdata = os.path.join(data, "ibdata1")
        self.assertTrue(os.path.exists(ibdata), f"{ibdata} not found (ZBSO_MYSQL_DATA)")
        mib = (os.path.getsize(ibdata) + (1 << 20) - 1) >> 20
        self.limited = False
        self.addCleanup(lambda: self.limited and self.restart_server())
        self.restart_server(f"--innodb-data-file-path=ibdata1:12M:autoextend:max:{mib + 6}M",
                            "--innodb-autoextend-increment=1", "--innodb-file-per-table=0")
        self.make_db()
        self.filler = f"filler_{os.getpid()}"
        self.addCleanup(self.undo)
        self.srv.start()
        self.assertEqual(self.register("itest-full-0").status, 201)
        filler = self.filler
        self.db.sql(f"CREATE TABLE {filler} (id INT AUTO_INCREMENT PRIMARY KEY, b LONGBLOB)"
                    " ENGINE=InnoDB", database=self.db.admin_db)
        for size in (1 << 18, 1 << 14, 1 << 10):
            for _ in range(200):
                try:
                    self.db.sql(f"INSERT INTO {filler} (b) VALUES (REPEAT('x', {size}))",
                                database=self.db.admin_db)
                except AssertionError as e:
                    self.assertIn("is full", str(e))
                    break
            else:
                self.fail(f"the tablespace took 200 rows of {size} bytes")
        # Registrations until the jobs table needs a page it cannot have.
        acked = ["itest-full-0"]
        refused = None
        for i in range(1, 2001):
            r = self.register(f"itest-full-{i}")
            if r.status == 503:
                refused = f"itest-full-{i}"
                self.assert_503(r)
                break
            self.assertEqual(r.status, 201, r)
            acked.append(f"itest-full-{i}")
        self.assertIsNotNone(refused, "2000 registrations fitted in a full tablespace")
        self.assertIn("full", r.json["message"].lower() + self.srv.log_tail())
        # Reads answer meanwhile.
        self.assertEqual(self.srv.request("GET", "/jobs/itest-full-0").status, 200)
        self.assertEqual(self.srv.request("GET", "/jobs?limit=5").status, 200)
        # Room again (restarted without the maximum): writes go through, without restarting
        # zbso serve, and nothing acknowledged is lost.
        pid = self.srv.proc.pid
        self.restart_server()
        self.assertEqual(self.until_2xx(refused).status, 201)
        self.assertEqual(self.srv.proc.pid, pid)
        self.assertEqual(self.stored_jobs(), sorted(acked + [refused]))


class KilledMysql(MysqlFaultCase):
    def test_sigkill_of_the_database_server(self):
        self.make_db()
        self.srv.start()
        acked = []
        for i in range(20):
            self.assertEqual(self.register(f"itest-kill-{i}").status, 201)
            acked.append(f"itest-kill-{i}")
        down = [True]
        db_ctl("stop", "immediate")
        self.addCleanup(lambda: down[0] and db_ctl("start"))
        for i in range(3):
            self.assert_503(self.register(f"itest-down-{i}"))
            self.assert_503(self.srv.request("GET", "/jobs/batch_size?job_id=itest-kill-0"))
        h = self.srv.request("GET", "/healthz")
        self.assertEqual(h.status, 503, h)
        db_ctl("start")
        down[0] = False
        self.until_2xx("itest-down-0")
        self.assertEqual(self.stored_jobs(), sorted(acked + ["itest-down-0"]))
        self.assertEqual(self.srv.terminate(), 0, self.srv.log_tail())


class DroppedMysql(MysqlFaultCase):
    def test_dropped_database(self):
        self.make_db()
        self.srv.start()
        self.assertEqual(self.register("itest-drop").status, 201)
        db_ctl("dropdb", self.db.name)
        self.db.dropped = True
        for method, path, body in (("POST", "/jobs", job_spec(job_id="itest-after")),
                                   ("GET", "/jobs/batch_size?job_id=itest-drop", None),
                                   ("GET", "/jobs/itest-drop", None),
                                   ("GET", "/healthz", None)):
            r = self.srv.request(method, path, body=body)
            self.assertIn(r.status, (500, 503), (method, path, r))
            self.assertIsInstance(r.json, dict, r)
            # /healthz says only the reason class to a caller without the token.
            self.assertIn("reason" if path == "/healthz" else "message", r.json, r)
            self.assertNotIn(self.password, r.body.decode("utf-8", "replace"))
        self.assertIsNone(self.srv.proc.poll(), "zbso serve died:\n" + self.srv.log_tail())
        self.srv.kill()
        r = subprocess.run([ZBSO_BIN, "serve", "--port", "0", "--db", self.db.url],
                           cwd=self.srv.tmpdir, env=clean_env(), capture_output=True,
                           text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("listening", r.stdout)
        self.assertIn(f"/{self.db.name}", r.stderr)
        self.assertNotIn(self.password, r.stderr)
        # Created again (empty): serve makes the schema, the old job is gone.
        self.db.sql(f"CREATE DATABASE {self.db.name}", database=self.db.admin_db)
        self.db.dropped = False
        self.srv.start()
        self.assertEqual(self.register("itest-drop").status, 201)
        self.assertEqual(self.stored_jobs(), ["itest-drop"])


if __name__ == "__main__":
    unittest.main()
