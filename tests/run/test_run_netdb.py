"""test_run_netdb.py: `zbso run --db` on PostgreSQL and MariaDB reads the configuration as
`zbso serve` does: ZEUS_BSO_DB_USER and ZEUS_BSO_DB_PASSWORD fill a URL without
credentials, a wrong password fails naming the cause and never showing the password (`***`
where the URL holds it), and ZBSO_POLICY is the policy of a job whose file names none.

Runs under tests/pg/with_pg.sh and tests/mysql/with_mysql.sh together (ctest
run/test_run_netdb); a missing database server is a failure, never a skip."""

import json
import os
import subprocess
import unittest

from test_run_cli import REGEX, TRAIN, ZBSO_BIN, RunCase, spec

RATES = "16:0.2,32:0.25,64:0.2,128:0.04"
CMD = [*TRAIN, "--bs", "{bs}", "--rates", RATES]
ARGS = ["--no-gpu", "--metric-regex", REGEX]


def need(name):
    v = os.environ.get(name)
    if not v:
        raise AssertionError(f"{name} is not set: run under tests/pg/with_pg.sh and "
                             f"tests/mysql/with_mysql.sh (ctest run/test_run_netdb)")
    return v


class NetDb:
    """One backend's server: SCHEME, the fixture's variable prefix, the words its refusal
    of a wrong password holds."""
    SCHEME = PREFIX = DENIED = ""
    _dbs = 0

    def fresh_db(self):
        """An empty database; returns its URL without credentials."""
        NetDb._dbs += 1
        name = f"run_{os.getpid()}_{NetDb._dbs}"
        subprocess.run([need(f"{self.PREFIX}_CTL"), "createdb", name], check=True,
                       capture_output=True, timeout=60)
        return f"{self.SCHEME}://127.0.0.1:{need(self.PREFIX + '_PORT')}/{name}"

    def creds(self, password=None):
        return {"ZEUS_BSO_DB_USER": need(f"{self.PREFIX}_USER"),
                "ZEUS_BSO_DB_PASSWORD": password or need(f"{self.PREFIX}_PASSWORD")}

    def job_doc(self, url, job_id="job-1"):
        env = {k: v for k, v in os.environ.items() if not k.startswith("ZEUS_")}
        env.update(self.creds())
        p = subprocess.run([ZBSO_BIN, "jobs", "show", job_id, "--db", url, "--format", "json"],
                           cwd=self.dir, env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_credentials_from_the_environment(self):
        url = self.fresh_db()
        p = self.run_zbso(spec(), 2, CMD, mode=("--db", url), extra=ARGS, env=self.creds())
        self.assertOk(p)
        doc = self.job_doc(url)
        self.assertEqual((doc["trials"]["total"], doc["policy"]), (2, "zeus"))

    def test_wrong_password(self):
        url = self.fresh_db()
        p = self.run_zbso(spec(), 1, ["true"], mode=("--db", url), extra=ARGS,
                          env=self.creds("WrongSecret7"))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(self.DENIED, p.stderr)
        self.assertNotIn("WrongSecret7", p.stderr + p.stdout)
        # In the URL, the password is shown as ***.
        user = need(f"{self.PREFIX}_USER")
        bad = url.replace("://", f"://{user}:WrongSecret8@", 1)
        p = self.run_zbso(spec(), 1, ["true"], mode=("--db", bad), extra=ARGS)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(self.DENIED, p.stderr)
        self.assertIn(f"{self.SCHEME}://{user}:***@127.0.0.1:", p.stderr)
        self.assertNotIn("WrongSecret8", p.stderr + p.stdout)

    def test_default_policy_from_the_environment(self):
        url = self.fresh_db()
        env = {**self.creds(), "ZBSO_POLICY": "smart"}
        p = self.run_zbso(spec(), 1, CMD, mode=("--db", url), extra=ARGS, env=env)
        self.assertOk(p)
        self.assertEqual(self.job_doc(url)["policy"], "smart")


class TestPostgres(NetDb, RunCase):
    SCHEME, PREFIX, DENIED = "postgresql", "ZBSO_PG", "password authentication failed"


class TestMariaDb(NetDb, RunCase):
    SCHEME, PREFIX, DENIED = "mysql", "ZBSO_MYSQL", "Access denied"


if __name__ == "__main__":
    unittest.main()
