"""test_db_copy.py: `zbso db copy` round-trips a zbso database SQLite -> PostgreSQL ->
MariaDB -> SQLite with every inspection document (GET /jobs, /jobs/{id}, its trials and
every trial's curve) byte-identical, is idempotent (a second copy writes nothing), and
stops naming a job the target holds with other data. Runs under tests/pg/with_pg.sh and
tests/mysql/with_mysql.sh together (each starts its server; missing ones fail the test).
Standard library only."""

import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import zbsoserver  # noqa: E402
import zeusdb  # noqa: E402

ARGS = ["--trial-timeout", "0"]


def fresh(kind, name):
    ctl = os.environ["ZBSO_PG_CTL" if kind == "pg" else "ZBSO_MYSQL_CTL"]
    return subprocess.run([ctl, "createdb", name], check=True, capture_output=True, text=True,
                          timeout=120).stdout.strip()


class Db:
    """A database the Server class can run on: only its URL matters here."""

    def __init__(self, url, path=None):
        self.url = url
        self.path = path

    def close(self):
        pass


def workload(srv):
    """Jobs with every kind of state: pruning and MAB, Failed and Dispatched trials,
    curves of several points, a power profile, odd job ids, a job's own carbon intensity
    (issue 25; its documents show it and CO2e figures at it)."""
    ids = []
    for n, (prefix, seed) in enumerate((("copy", 3), ("copy", 4), ("odd/id é", 5))):
        own = {"carbon_intensity_g_per_kwh": 123.456789012345} if n == 1 else {}
        r = srv.request("POST", "/jobs", body=zbsoserver.job_spec(
            job_id_prefix=prefix, job_id=f"{prefix}-{n}", mab_seed=seed, eta_knob=0.25 + n / 8,
            window_size=n, beta_knob=None if n == 2 else 2.0, **own))
        assert r.status == 201, r
        ids.append(r.json["job_id"])
    for k in range(9):
        for job_id in ids:
            r = srv.request("GET", "/jobs/batch_size?job_id=" + urlq(job_id))
            assert r.status == 200, r
            t = r.json
            if k == 4:
                srv.request("PATCH", "/trials", body=t)
                continue
            if k == 8 and job_id == ids[0]:
                continue  # stays Dispatched
            for epoch in (1, 2, 3):
                body = dict(t, time=10.0 * epoch + t["batch_size"] / 7,
                            energy=1000.0 * epoch + t["batch_size"] * 3.3 + k / 3,
                            metric=0.1 + 0.2 * epoch - (0.3 if t["batch_size"] == 32 else 0),
                            current_epoch=epoch)
                r = srv.request("POST", "/report", body=body)
                assert r.status == 200, r
                if r.json["stop_train"]:
                    break
    r = srv.request("PUT", "/power_profiles", body={
        "job_id": ids[0], "batch_size": 16, "trial_number": 1, "observer": False,
        "profile_steps": 40, "measurements": [
            {"power_limit": 300, "time": 0.1, "energy": 30.000000000000004},
            {"power_limit": 250, "time": 0.11, "energy": 26.5}]})
    assert r.status == 200, r
    return ids


def urlq(s):
    import urllib.parse
    return urllib.parse.quote(s, safe="")


def documents(srv):
    """Every inspection document, raw bytes, by path."""
    docs = {}
    after = ""
    while True:
        path = "/jobs?limit=2" + ("&after=" + urlq(after) if after else "")
        r = srv.request("GET", path)
        assert r.status == 200, r
        docs[path] = r.body
        for job in r.json["jobs"]:
            jid = urlq(job["job_id"])
            for p in (f"/jobs/{jid}", f"/jobs/{jid}/trials?limit=1000"):
                docs[p] = srv.request("GET", p).body
            for t in srv.request("GET", f"/jobs/{jid}/trials?limit=1000").json["trials"]:
                p = f"/jobs/{jid}/trials/{t['trial_number']}"
                docs[p] = srv.request("GET", p).body
        if r.json["next"] is None:
            break
        after = r.json["next"]
    return docs


class DbCopy(unittest.TestCase):
    def setUp(self):
        zbsoserver.require_binary()
        for var in ("ZBSO_PG_CTL", "ZBSO_MYSQL_CTL"):
            if not os.environ.get(var):
                self.fail(f"{var} is not set: run under tests/pg/with_pg.sh and "
                          "tests/mysql/with_mysql.sh")
        self.tmp = tempfile.TemporaryDirectory(prefix="zbso-copy-")
        self.addCleanup(self.tmp.cleanup)

    def serve(self, url):
        srv = zbsoserver.Server(tmpdir=self.tmp.name, database=Db(url), args=ARGS)
        srv.start()
        return srv

    def docs_of(self, url):
        srv = self.serve(url)
        try:
            return documents(srv)
        finally:
            srv.close()

    def copy(self, src, dst):
        return zbsoserver.run_cli(["db", "copy", src, dst], cwd=self.tmp.name, timeout=300)

    def test_round_trip_and_idempotence(self):
        first = "sqlite:///" + os.path.join(self.tmp.name, "first.db")
        srv = self.serve(first)
        try:
            ids = workload(srv)
        finally:
            srv.close()  # flushes the buffered curve points
        want = self.docs_of(first)
        self.assertGreater(len(want), 20)
        self.assertIn(b'"carbon_intensity_g_per_kwh":123.4567890123', want["/jobs/copy-1"])
        self.assertIn(b'"carbon_intensity_source":"job"', want["/jobs/copy-1"])
        self.assertNotIn(b"carbon", want["/jobs/copy-0"])
        pg, my = fresh("pg", "copy_pg"), fresh("mysql", "copy_my")
        last = "sqlite:///" + os.path.join(self.tmp.name, "last.db")
        for src, dst in ((first, pg), (pg, my), (my, last)):
            r = self.copy(src, dst)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(f"{len(ids)} jobs", r.stdout)
            got = self.docs_of(dst)
            self.assertEqual(sorted(got), sorted(want), dst)
            for path in want:
                self.assertEqual(got[path], want[path], f"{dst} {path}")
        r = self.copy(first, pg)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"0 written, {len(ids)} already there", r.stdout)
        # The target moves on: a copy over it is refused, naming the job.
        srv = self.serve(pg)
        try:
            self.assertEqual(srv.request("GET", "/jobs/batch_size?job_id=copy-1").status, 200)
        finally:
            srv.close()
        r = self.copy(first, pg)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("job copy-1 is already in the target database with other data",
                      r.stderr)

    def test_bad_arguments(self):
        r = zbsoserver.run_cli(["db", "copy", "sqlite:///a.db"], cwd=self.tmp.name)
        self.assertEqual(r.returncode, 2)
        r = zbsoserver.run_cli(["db", "copy", "ftp://x", "sqlite:///b.db"], cwd=self.tmp.name)
        self.assertEqual(r.returncode, 2)
        self.assertIn("ftp", r.stderr)
        r = zbsoserver.run_cli(["db", "copy", "sqlite:///same.db", "sqlite:///same.db"],
                               cwd=self.tmp.name)
        self.assertEqual(r.returncode, 2)
        missing = os.path.join(self.tmp.name, "missing.db")
        r = zbsoserver.run_cli(["db", "copy", "sqlite:///" + missing, "sqlite:///t.db"],
                               cwd=self.tmp.name)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no such file", r.stderr)
        self.assertFalse(os.path.exists(missing))
        empty = os.path.join(self.tmp.name, "empty.db")
        open(empty, "wb").close()
        r = zbsoserver.run_cli(["db", "copy", "sqlite:///" + empty, "sqlite:///t.db"],
                               cwd=self.tmp.name)
        self.assertEqual(r.returncode, 1)
        self.assertIn("zbso migrate", r.stderr)
        # A foreign database is refused; Zeus's is pointed at zbso import zeus.
        zeus = zeusdb.build_sqlite(os.path.join(self.tmp.name, "zeus.db"),
                                   zeusdb.reference()["jobs"][:1])
        r = zbsoserver.run_cli(["db", "copy", zeus, "sqlite:///t2.db"], cwd=self.tmp.name)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no zbso schema", r.stderr)
        self.assertIn("is a Zeus BSO database: zbso import zeus reads it", r.stderr)

if __name__ == "__main__":
    unittest.main()
