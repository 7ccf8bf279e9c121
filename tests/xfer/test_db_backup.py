"""test_db_backup.py: `zbso db backup` of a running SQLite server under a load of K = 8
clients: no request fails, the backup opens and passes integrity_check, and it holds every
write acknowledged before the backup started; `zbso db restore` puts it into a new database
and refuses a corrupt file. Traffic goes to 127.0.0.1 only, bounded in count and time.
Standard library only."""

import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))

import import_bench  # noqa: E402
import zbsoserver  # noqa: E402

K = 8
MAX_REQUESTS = 4000     # per client
MAX_SECONDS = 60.0


class Client(threading.Thread):
    """Registers its own job, then dispatches and finishes trials until told to stop;
    records every acknowledged write with the monotonic time of its answer."""

    def __init__(self, srv, n, stop):
        super().__init__(daemon=True)
        self.srv, self.n, self.stop = srv, n, stop
        self.acked = []       # (monotonic time, kind, job id, trial number)
        self.failures = []
        self.requests = 0
        self.spans = []       # (start, end) of every request

    def req(self, method, path, body=None):
        self.requests += 1
        t0 = time.monotonic()
        try:
            r = self.srv.request(method, path, body=body)
            self.spans.append((t0, time.monotonic()))
        except OSError as e:
            self.failures.append(f"{method} {path}: {e}")
            return None
        if r.status not in (200, 201):
            self.failures.append(f"{method} {path}: {r.status} {r.body[:200]!r}")
            return None
        return r

    def run(self):
        job = f"load-{self.n}"
        t0 = time.monotonic()
        r = self.req("POST", "/jobs", zbsoserver.job_spec(job_id_prefix="load", job_id=job,
                                                          mab_seed=self.n))
        if r is None:
            return
        self.acked.append((time.monotonic(), "job", job, 0))
        k = 0
        while (not self.stop.is_set() and self.requests < MAX_REQUESTS and
               time.monotonic() - t0 < MAX_SECONDS):
            r = self.req("GET", "/jobs/batch_size?job_id=" + job)
            if r is None:
                return
            t = r.json
            k += 1
            r = self.req("POST", "/report", dict(t, time=50.0 + k % 7, energy=900.0 + k % 11,
                                                  metric=0.9, current_epoch=1))
            if r is None:
                return
            self.acked.append((time.monotonic(), "trial", job, t["trial_number"]))


class DbBackup(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        zbsoserver.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="zbso-backup-")
        d = cls.tmp.name
        zeus = import_bench.make_zeus_db(os.path.join(d, "zeus.db"), 2000, 50)
        cls.db = os.path.join(d, "live.db")
        r = zbsoserver.run_cli(["import", "zeus", zeus, "--db", "sqlite:///" + cls.db,
                                "--quiet"], cwd=d, env={"TZ": "UTC"}, timeout=300)
        assert r.returncode == 0, r.stderr

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def cli(self, *args):
        return zbsoserver.run_cli(list(args), cwd=self.tmp.name, timeout=300)

    def test_backup_under_load_then_restore(self):
        srv = zbsoserver.Server(tmpdir=self.tmp.name,
                                database=zbsoserver.SqliteDatabase(self.db))
        self.addCleanup(srv.close)
        srv.start()
        stop = threading.Event()
        clients = [Client(srv, n, stop) for n in range(K)]
        for c in clients:
            c.start()
        time.sleep(1.5)
        backup = os.path.join(self.tmp.name, "backup.db")
        started = time.monotonic()
        acked_before = sum(len(c.acked) for c in clients)
        r = self.cli("db", "backup", srv.db_url, backup)
        took = time.monotonic() - started
        time.sleep(0.5)
        stop.set()
        for c in clients:
            c.join(MAX_SECONDS + 30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("checked with integrity_check", r.stdout)
        self.assertEqual([f for c in clients for f in c.failures], [])
        self.assertGreater(acked_before, K, "the load had not started")
        after = [a for c in clients for a in c.acked if a[0] > started + took]
        self.assertGreater(len(after), 0, "no write was acknowledged after the backup")
        con = sqlite3.connect(f"file:{backup}?mode=ro", uri=True)
        try:
            self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
            jobs = {row[0] for row in con.execute("SELECT job_id FROM jobs")}
            done = {(row[0], row[1]) for row in con.execute(
                "SELECT job_id, trial_number FROM trials WHERE status = 1")}
            n_jobs = con.execute("SELECT count(*) FROM jobs").fetchone()[0]
        finally:
            con.close()
        missing = [a for c in clients for a in c.acked if a[0] < started and
                   (a[2] not in jobs if a[1] == "job" else (a[2], a[3]) not in done)]
        self.assertEqual(missing, [], "writes acknowledged before the backup are missing")
        self.assertGreaterEqual(n_jobs, 2000)
        during = [e - b for c in clients for b, e in c.spans
                  if b < started + took and e > started]
        self.assertGreater(len(during), 0, "no request overlapped the backup")
        print(f"\nbackup of a {os.path.getsize(self.db) / 2**20:.0f} MiB database in "
              f"{took:.2f} s under K={K}: {acked_before} writes acknowledged before it, "
              f"{sum(c.requests for c in clients)} requests, 0 failed; {len(during)} requests"
              f" overlapped it, the slowest {max(during) * 1000:.0f} ms", file=sys.stderr)

        # A backup never overwrites a file.
        with open(backup, "rb") as f:
            before = f.read()
        r = self.cli("db", "backup", srv.db_url, backup)
        self.assertEqual(r.returncode, 2)
        self.assertIn("exists", r.stderr)
        with open(backup, "rb") as f:
            self.assertEqual(f.read(), before)

        # Restore into a new database; again: nothing new.
        restored = "sqlite:///" + os.path.join(self.tmp.name, "restored.db")
        r = self.cli("db", "restore", backup, restored)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{n_jobs} jobs", r.stdout)
        r = self.cli("db", "restore", backup, restored)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"0 written, {n_jobs} already there", r.stdout)

    def test_backup_and_restore_refusals(self):
        r = self.cli("db", "backup", "postgresql://u@127.0.0.1:1/x",
                     os.path.join(self.tmp.name, "pg.db"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("pg_dump", r.stderr)
        self.assertIn("mariadb-dump", r.stderr)
        r = self.cli("db", "backup", "sqlite:///" + os.path.join(self.tmp.name, "none.db"),
                     os.path.join(self.tmp.name, "none-backup.db"))
        self.assertEqual(r.returncode, 2)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "none-backup.db")))
        bad = os.path.join(self.tmp.name, "corrupt.db")
        with open(self.db, "rb") as f:
            data = bytearray(f.read(1 << 20))
        data[4096:4096 + 8192] = os.urandom(8192)
        with open(bad, "wb") as f:
            f.write(data)
        target = os.path.join(self.tmp.name, "from-corrupt.db")
        r = self.cli("db", "restore", bad, "sqlite:///" + target)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn(bad, r.stderr)
        self.assertFalse(os.path.exists(target))
        r = self.cli("db", "restore")
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    unittest.main()
