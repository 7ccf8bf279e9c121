"""test_storage_faults.py: `zbso serve` on SQLite when its storage fails (docs/DESIGN.md,
"Storage faults"). A full disk, an I/O error or a database locked by another process
answers 503 with Retry-After and a message naming the cause; nothing acknowledged is lost,
and once the fault clears writes succeed again and /healthz says so. A database it cannot
write (a read-only file or directory) is refused at start. A database file (or its WAL,
or all of x.db*) deleted while clients write: no later change is acknowledged (503), the
log says why, and after a restart every change a client got a 2xx for is in the database.

Faults are injected by tests/fakes/fault_fs.c ($ZBSO_FAULT_LIBRARY), preloaded into the
server and switched by rewriting its control file while the server runs; the fault log
proves each injected fault was hit. Read-only files use real permissions: as root (which
ignores file modes) the server runs as the user nobody."""

import json
import os
import pwd
import shutil
import signal
import sqlite3
import stat
import subprocess
import tempfile
import threading
import time
import unittest

from zbsoserver import ZBSO_BIN, Server, SqliteDatabase, clean_env, job_spec, require_binary
import workload as wl

FAULT_LIBRARY = os.environ.get("ZBSO_FAULT_LIBRARY", "")
BUSY_TIMEOUT_S = 5.0        # SQ_BUSY_TIMEOUT_MS in src/store/sqlite/sqlite_engine.c
LOCK_HOLD_S = BUSY_TIMEOUT_S + 2.5


def fault_env(ctl, log):
    """The server environment that preloads the fault library, driven by ctl."""
    if not FAULT_LIBRARY or not os.path.exists(FAULT_LIBRARY):
        raise AssertionError(f"ZBSO_FAULT_LIBRARY={FAULT_LIBRARY!r} is not the built "
                             "tests/fakes/fault_fs.c")
    asan = os.environ.get("ASAN_OPTIONS", "")
    return {"LD_PRELOAD": FAULT_LIBRARY, "ZBSO_FAULT_CTL": ctl, "ZBSO_FAULT_LOG": log,
            "ASAN_OPTIONS": (asan + ":" if asan else "") + "verify_asan_link_order=0"}


class FaultyServer(unittest.TestCase):
    """A server on tmp/x.db with the fault library preloaded and no fault set."""

    def setUp(self):
        require_binary()
        tmp = tempfile.TemporaryDirectory(prefix="zbso-fault-")
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name
        self.ctl = os.path.join(self.tmp, "fault.ctl")
        self.fault_log = os.path.join(self.tmp, "fault.log")
        self.db = SqliteDatabase(os.path.join(self.tmp, "x.db"))
        self.srv = Server(tmpdir=self.tmp, database=self.db,
                          env=fault_env(self.ctl, self.fault_log))
        self.addCleanup(self.srv.close)
        self.srv.start()

    def set_fault(self, line):
        with open(self.ctl + ".new", "w") as f:
            f.write(line + "\n")
        os.replace(self.ctl + ".new", self.ctl)

    def clear_fault(self):
        self.set_fault("off")

    def faults_hit(self):
        try:
            with open(self.fault_log) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def register(self, job_id):
        return self.srv.request("POST", "/jobs", body=job_spec(job_id=job_id))

    def assert_503(self, r, *words):
        self.assertEqual(r.status, 503, r)
        self.assertEqual(r.headers.get("Retry-After"), "1", r.headers)
        msg = (r.json or {}).get("message", "")
        for w in words:
            self.assertIn(w, msg, r)
        return msg

    def job_ids_after_restart(self):
        """Stops the server (SIGTERM) without the fault library, then reads the jobs."""
        self.assertEqual(self.srv.terminate(), 0, self.srv.log_tail())
        self.srv.env = {}
        self.srv.start()
        self.assertTrue(self.srv.healthy())
        return [row["job_id"] for row in self.srv.rows("jobs", "job_id")]


class DiskFaults(FaultyServer):
    def check_fault(self, line, words, reason, calls):
        self.assertEqual(self.register("itest-before").status, 201)
        self.set_fault(line)
        r = self.register("itest-during")
        self.assert_503(r, *words)
        # Reads do not write: a re-registration of a stored job still answers 200.
        self.assertEqual(self.register("itest-before").status, 200)
        # /healthz, asked without a token, gives the class of the cause, not its message
        # (which names the file); the log has the message.
        h = self.srv.request("GET", "/healthz")
        self.assert_503(h)
        self.assertEqual(h.json, {"status": "unavailable", "reason": reason}, h)
        self.assertIn("GET /healthz 503: ", self.srv.log_tail())
        hit = self.faults_hit()
        self.assertTrue(any(h.split()[0] in calls for h in hit), hit)
        self.assertEqual(self.register("itest-during").status, 503)
        self.clear_fault()
        # The writer rolled the failed groups back and carries on.
        self.assertTrue(self.srv.healthy(), self.srv.log_tail())
        self.assertEqual(self.register("itest-after").status, 201)
        self.assertEqual(self.register("itest-during").status, 201)
        ids = self.job_ids_after_restart()
        self.assertEqual(ids, ["itest-after", "itest-before", "itest-during"])

    def test_disk_full_answers_503_then_recovers(self):
        self.check_fault(f"ENOSPC write {self.db.path}", ["disk is full"], "disk_full",
                         ("write", "pwrite", "pwrite64"))

    def test_io_error_on_write_answers_503_then_recovers(self):
        self.check_fault(f"EIO write {self.db.path}", ["I/O error while writing"], "io_error",
                         ("write", "pwrite", "pwrite64"))

    def test_io_error_on_sync_answers_503_then_recovers(self):
        self.check_fault(f"EIO sync {self.db.path}-wal", ["I/O error while syncing"],
                         "io_error", ("fsync", "fdatasync"))

    def test_full_disk_under_load_loses_nothing_acknowledged(self):
        # Clients that retry 503 after Retry-After, as zbso's own client does, while the
        # disk fills and empties twice: they finish, and every 2xx is stored.
        load = wl.Workload([lambda: (self.srv.host, self.srv.port)],
                           wl.seeded_specs("full", 3), threads=4, duration_s=6.0,
                           max_trials=10 ** 9, seed=5, tolerate_503=True, give_up_s=120.0)
        runner = threading.Thread(target=load.run, daemon=True)
        runner.start()
        for _ in range(2):
            time.sleep(0.7)
            self.set_fault(f"ENOSPC write {self.db.path}")
            time.sleep(1.5)
            self.clear_fault()
        runner.join(300)
        self.assertFalse(runner.is_alive(), "the clients did not finish")
        self.assertEqual(load.errors, [], load.errors[:5])
        figures = load.figures()
        print(f"\n[disk full] {json.dumps(figures, sort_keys=True)}", flush=True)
        self.assertGreater(figures["statuses"].get("503", 0), 0, figures)
        self.assertEqual(figures["5xx"], figures["statuses"].get("503", 0), figures)
        self.assertTrue(self.faults_hit())
        self.assertEqual(self.srv.terminate(), 0, self.srv.log_tail())
        self.srv.env = {}
        self.srv.start()
        # A 503 promises only that nothing was acknowledged: as after a crash, the change
        # of a request answered 503 may still have been committed (one ASan run found job
        # revision 176 committed and never acknowledged), so the log is checked without
        # requiring revisions and trial numbers to be gapless; every 2xx must be stored, no
        # revision or trial number may be given twice.
        problems = (wl.check_acknowledged(load.records, self.db)
                    + wl.check_log(load.records, complete=False))
        problems += [f"integrity: {e}" for e in self.db.integrity_errors()]
        self.assertEqual(problems, [], wl.format_problems(problems))


class LockedDatabase(FaultyServer):
    def test_locked_database_answers_503_then_recovers(self):
        self.assertEqual(self.register("itest-before").status, 201)
        other = sqlite3.connect(self.db.path, timeout=30, isolation_level=None)
        self.addCleanup(other.close)
        other.execute("BEGIN IMMEDIATE")
        t0 = time.monotonic()
        r = self.register("itest-during")
        waited = time.monotonic() - t0
        other.execute("ROLLBACK")
        self.assert_503(r, "locked")
        self.assertGreaterEqual(waited, BUSY_TIMEOUT_S - 0.5, "503 before the busy timeout")
        self.assertEqual(self.register("itest-during").status, 201)
        self.assertEqual(self.job_ids_after_restart(), ["itest-before", "itest-during"])


class HealthzDetails(unittest.TestCase):
    """GET /healthz of a store that failed (its database file deleted) names the file only
    to a caller with the API token; without it, only the reason class (issue 22 item 8)."""

    TOKEN = "healthz-details-token-0123"
    READ = "healthz-read-token-4567"
    CLIENT = "healthz-client-token-89ab"

    def test_cause_only_with_the_token(self):
        require_binary()
        tmp = tempfile.TemporaryDirectory(prefix="zbso-health-")
        self.addCleanup(tmp.cleanup)
        db = SqliteDatabase(os.path.join(tmp.name, "x.db"))
        srv = Server(tmpdir=tmp.name, database=db, env={"ZEUS_BSO_API_TOKEN": self.TOKEN,
                                                         "ZBSO_READ_TOKEN": self.READ,
                                                         "ZBSO_CLIENT_TOKEN": self.CLIENT})
        self.addCleanup(srv.close)
        srv.start()
        self.assertEqual(srv.request("GET", "/healthz").json, {"status": "ok"})
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db.path + suffix):
                os.unlink(db.path + suffix)
        deadline = time.monotonic() + 10
        while srv.request("GET", "/healthz").status == 200:
            self.assertLess(time.monotonic(), deadline, "the deletion was not noticed")
            time.sleep(0.1)
        # The training clients' token is no operator's: it gets the class only, too.
        for headers in ({}, {"Authorization": "Bearer wrong-token-wrong-token"},
                        {"Authorization": "Basic " + "eDp3cm9uZw=="},
                        {"Authorization": f"Bearer {self.CLIENT}"}):
            h = srv.request("GET", "/healthz", headers=headers)
            self.assertEqual(h.status, 503, h)
            self.assertEqual(h.json, {"status": "unavailable", "reason": "database_gone"}, h)
            self.assertNotIn(tmp.name.encode(), h.body)
            self.assertEqual(h.headers.get("Retry-After"), "1", h.headers)
        for token in (self.TOKEN, self.READ):
            h = srv.request("GET", "/healthz", headers={"Authorization": f"Bearer {token}"})
            self.assertEqual(h.status, 503, h)
            self.assertEqual((h.json["status"], h.json["reason"]),
                             ("unavailable", "database_gone"))
            self.assertIn(db.path, h.json["message"])
            self.assertIn("deleted", h.json["message"])
        self.assertIn(db.path, srv.log_tail(10 ** 6))


# -- a database the server cannot write ---------------------------------------------------

NOBODY = "nobody"


def as_unprivileged(cmd):
    """cmd run so that file modes apply: as is for a normal user; as nobody for root."""
    if os.geteuid() != 0:
        return cmd, None
    pw = pwd.getpwnam(NOBODY)
    return ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups",
            *cmd], pw


class ReadOnlyDatabase(unittest.TestCase):
    def setUp(self):
        require_binary()
        tmp = tempfile.TemporaryDirectory(prefix="zbso-ro-")
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name
        os.chmod(self.tmp, 0o755)
        self.dir = os.path.join(self.tmp, "data")
        os.mkdir(self.dir)
        self.path = os.path.join(self.dir, "x.db")
        _, self.pw = as_unprivileged([])
        # A valid database with a job, made by a server that may write.
        srv = Server(tmpdir=self.tmp, database=SqliteDatabase(self.path))
        with srv:
            self.assertEqual(srv.request("POST", "/jobs", body=job_spec(job_id="itest-ro")
                                         ).status, 201)
        self.addCleanup(self.make_writable)

    def make_writable(self):
        os.chmod(self.dir, 0o755)
        for name in os.listdir(self.dir):
            os.chmod(os.path.join(self.dir, name), 0o644)

    def give_to_server(self, path):
        """The server's user owns path (a no-op unless running as root)."""
        if self.pw is not None:
            os.chown(path, self.pw.pw_uid, self.pw.pw_gid)

    def serve_once(self):
        cmd, _ = as_unprivileged([ZBSO_BIN, "serve", "--port", "0", "--db",
                                  "sqlite:///" + self.path])
        try:
            return subprocess.run(cmd, cwd=self.tmp, env=clean_env(), capture_output=True,
                                  text=True, timeout=30)
        except subprocess.TimeoutExpired as e:
            self.fail(f"serve started on a database it cannot write: {e.stdout!r}")

    def check_refused(self, *words):
        r = self.serve_once()
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("listening", r.stdout)
        for w in [self.path, *words]:
            self.assertIn(w, r.stderr)
        return r

    def test_read_only_file_refused(self):
        self.give_to_server(self.dir)
        os.chmod(self.path, 0o444)
        self.check_refused("Permission denied")

    def test_read_only_directory_refused(self):
        for name in os.listdir(self.dir):
            self.give_to_server(os.path.join(self.dir, name))
        os.chmod(self.dir, 0o555)
        self.check_refused(self.dir, "Permission denied")

    def test_new_database_in_read_only_directory_refused(self):
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        os.chmod(self.dir, 0o555)
        self.check_refused(self.dir, "Permission denied")
        self.assertEqual(os.listdir(self.dir), [])

    def test_writable_as_the_same_user_starts(self):
        # The control case: the same user, the same files, made writable, starts.
        self.give_to_server(self.dir)
        for name in os.listdir(self.dir):
            self.give_to_server(os.path.join(self.dir, name))
        cmd, _ = as_unprivileged([ZBSO_BIN, "serve", "--port", "0", "--db",
                                  "sqlite:///" + self.path])
        p = subprocess.Popen(cmd, cwd=self.tmp, env=clean_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            line = p.stdout.readline()
            self.assertIn("listening", line, p.stderr.read() if p.poll() is not None else "")
        finally:
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=30)
        self.assertEqual(p.returncode, 0)


# -- the database deleted while serving ---------------------------------------------------

class DeletedDatabase(unittest.TestCase):
    """Clients write while x.db (or x.db-wal, or every x.db* file) is deleted. The server
    must stop acknowledging, say so, and keep every acknowledged change for the restart."""

    ACKS_BEFORE = 80

    def setUp(self):
        require_binary()
        tmp = tempfile.TemporaryDirectory(prefix="zbso-del-")
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name
        self.db = SqliteDatabase(os.path.join(self.tmp, "x.db"))
        self.srv = Server(tmpdir=self.tmp, database=self.db)
        self.addCleanup(self.srv.close)
        self.srv.start()

    def acked(self, load):
        with load._lock:
            return sum(1 for r in load.records if r.ok)

    def delete_while_writing(self, suffixes, restart, empty_wal=False):
        srv = self.srv
        load = wl.Workload([lambda: (srv.host, srv.port)], wl.seeded_specs("del", 4),
                           threads=6, duration_s=3600.0, max_trials=10 ** 9, seed=3,
                           give_up_s=60.0)
        runner = threading.Thread(target=load.run, daemon=True)
        runner.start()
        deadline = time.monotonic() + 120
        while self.acked(load) < self.ACKS_BEFORE:
            self.assertLess(time.monotonic(), deadline, load.errors[:3])
            self.assertTrue(runner.is_alive(), load.errors[:3])
            time.sleep(0.01)
        for s in suffixes:
            try:
                os.unlink(self.db.path + s)
            except FileNotFoundError:
                pass
        if empty_wal:
            open(self.db.path + "-wal", "wb").close()
        # Every client stops at its first non-2xx answer: the server refuses from the
        # first commit after the deletion on.
        runner.join(120)
        load.stop()
        self.assertFalse(runner.is_alive(), "the clients did not stop")
        answers = [r for r in load.records if r.status is not None and not r.ok]
        self.assertTrue(answers, "no client was refused after the deletion")
        # A read connection opened after the deletion creates a fresh x.db-wal, which the
        # writer's check then finds in place of its own: "replaced by another file" says
        # that as truly as "deleted" (docs/DESIGN.md, "Storage faults").
        for r in answers:
            self.assertEqual(r.status, 503, r)
            msg = (r.json or {}).get("message", "")
            self.assertTrue("deleted" in msg or "replaced by another file" in msg, r)
        self.assertEqual(len(load.errors), load.threads, load.errors)
        h = srv.request("GET", "/healthz")
        self.assertEqual(h.status, 503, h)
        # The acknowledged changes lived only in the deleted files until the writer has
        # written the database back (milliseconds after it noticed); a SIGKILL before that
        # loses them with the process, which nothing can prevent. Kill only after it.
        deadline = time.monotonic() + 20
        while "written back" not in srv.log_tail(10 ** 7):
            self.assertLess(time.monotonic(), deadline, srv.log_tail(3000))
            time.sleep(0.02)
        restart()
        log = srv.log_tail(20000)
        self.assertTrue("deleted" in log or "replaced by another file" in log, log[-3000:])
        self.assertIn("written back", log)
        problems = wl.check_acknowledged(load.records, self.db)
        problems += wl.check_log(load.records, complete=False)
        problems += [f"integrity: {e}" for e in self.db.integrity_errors()]
        self.assertEqual(problems, [], wl.format_problems(problems))
        figures = load.figures()
        print(f"\n[deleted {'+'.join(suffixes)}] " + json.dumps(figures, sort_keys=True),
              flush=True)
        # The restarted server serves the database as it was: the jobs answer again.
        jid = sorted(load.specs)[0]
        self.assertEqual(srv.request("GET", f"/jobs/batch_size?job_id={jid}").status, 200)

    def sigterm_restart(self):
        self.assertEqual(self.srv.terminate(), 0, self.srv.log_tail())
        self.srv.start()

    def test_db_file_deleted(self):
        self.delete_while_writing([""], self.sigterm_restart)

    def test_wal_file_deleted(self):
        self.delete_while_writing(["-wal"], self.sigterm_restart)

    def test_wal_file_deleted_and_made_anew_empty(self):
        # What a read connection opened after the deletion does: SQLite creates an empty
        # x.db-wal. It holds nothing, so the copy still goes back to x.db; SIGKILL then, so
        # that no checkpoint at close can bring the deleted WAL's changes back instead.
        self.delete_while_writing(["-wal"], self.srv.restart, empty_wal=True)

    def test_all_files_deleted(self):
        self.delete_while_writing(["", "-wal", "-shm"], self.sigterm_restart)

    def test_all_files_deleted_then_sigkill(self):
        self.delete_while_writing(["", "-wal", "-shm"], self.srv.restart)

    def test_deleted_while_idle_then_sigkill(self):
        # Nobody writes after the deletion; the server notices within its check period
        # and writes the database back before it is killed.
        self.assertEqual(self.srv.request("POST", "/jobs", body=job_spec(job_id="itest-idle")
                                          ).status, 201)
        for s in ("", "-wal", "-shm"):
            os.unlink(self.db.path + s)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.db.path):
            self.assertLess(time.monotonic(), deadline, self.srv.log_tail())
            time.sleep(0.1)
        self.assertIn("written back", self.srv.log_tail())
        self.srv.restart()
        self.assertEqual([r["job_id"] for r in self.srv.rows("jobs")], ["itest-idle"])

    def test_replaced_file_is_left_alone(self):
        # Someone moves another database over x.db: the server stops acknowledging and
        # saves its own data beside it, never over it.
        self.assertEqual(self.srv.request("POST", "/jobs", body=job_spec(job_id="itest-mine")
                                          ).status, 201)
        other = os.path.join(self.tmp, "other.db")
        conn = sqlite3.connect(other)
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
        conn.close()
        os.replace(other, self.db.path)
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id="itest-late"))
        self.assertEqual(r.status, 503, r)
        self.assertIn("replaced", r.json["message"])
        deadline = time.monotonic() + 30
        while "written back" not in self.srv.log_tail():
            self.assertLess(time.monotonic(), deadline, self.srv.log_tail())
            time.sleep(0.05)
        saved = [n for n in os.listdir(self.tmp)
                 if n.startswith("x.db.zbso-saved-") and n[16:].isdigit()]
        self.assertEqual(len(saved), 1, os.listdir(self.tmp))
        self.srv.kill()
        conn = sqlite3.connect(self.db.path)
        self.assertEqual(conn.execute("SELECT name FROM sqlite_master").fetchall(), [("t",)])
        conn.close()
        ids = [row["job_id"] for row in
               SqliteDatabase(os.path.join(self.tmp, saved[0])).rows("jobs")]
        self.assertIn("itest-mine", ids)


if __name__ == "__main__":
    unittest.main()
