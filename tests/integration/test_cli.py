"""test_cli.py: the command line and configuration of SPEC §5: usage and exit statuses,
flag and environment values with errors naming them, `.env` lookup and precedence. Servers
run on the backend of $ZBSO_TEST_BACKEND; on PostgreSQL and MariaDB also
ZEUS_BSO_DB_USER/PASSWORD."""

import os
import pty
import tempfile
import unittest
import urllib.parse

from zbsoserver import BACKEND, ZBSO_BIN, Server, job_spec, new_database, run_cli


class UsageTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="zbso-cli-")
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name

    def test_help_version_unknown(self):
        r = run_cli(["--help"], cwd=self.tmp)
        self.assertEqual(r.returncode, 0)
        self.assertIn("serve", r.stdout)
        self.assertIn("migrate", r.stdout)
        r = run_cli(["--version"], cwd=self.tmp)
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^zbso \d+\.\d+\.\d+\n$")
        r = run_cli([], cwd=self.tmp)
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage", r.stderr)
        r = run_cli(["frobnicate"], cwd=self.tmp)
        self.assertEqual(r.returncode, 2)
        self.assertIn("frobnicate", r.stderr)
        r = run_cli(["serve", "--help"], cwd=self.tmp)
        self.assertEqual(r.returncode, 0)
        self.assertIn("--trial-timeout", r.stdout)

    def test_bad_flags_exit_2_naming_flag_and_value(self):
        for args, words in [
            (["--port", "abc"], ["--port", "abc"]),
            (["--port", "70000"], ["--port", "70000"]),
            (["--port", "-1"], ["--port", "-1"]),
            (["--log-level", "LOUD"], ["--log-level", "LOUD"]),
            (["--trial-timeout", "-5"], ["--trial-timeout", "-5"]),
            (["--trial-timeout", "nan"], ["--trial-timeout", "nan"]),
            (["--host", ""], ["--host"]),
            (["--bogus"], ["--bogus"]),
            (["--port"], ["--port"]),
            (["extra"], ["extra"]),
        ]:
            with self.subTest(" ".join(args)):
                r = run_cli(["serve", *args], cwd=self.tmp, timeout=30)
                self.assertEqual(r.returncode, 2, r.stderr)
                for w in words:
                    self.assertIn(w, r.stderr)
        self.assertEqual(os.listdir(self.tmp), [])

    def test_bad_environment_exit_2_naming_variable(self):
        for var, value in [("ZEUS_BSO_SERVER_PORT", "eighty"),
                           ("ZEUS_BSO_TRIAL_TIMEOUT", "soon"),
                           ("ZEUS_BSO_ECHO_SQL", "maybe")]:
            with self.subTest(var):
                r = run_cli(["serve"], cwd=self.tmp, env={var: value}, timeout=30)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(var, r.stderr)
                self.assertIn(value, r.stderr)

    def test_bad_dotenv_line_exit_2(self):
        with open(os.path.join(self.tmp, ".env"), "w") as f:
            f.write("# config\nZEUS_BSO_SERVER_PORT=0\nthis is not an assignment\n")
        r = run_cli(["serve"], cwd=self.tmp, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(".env", r.stderr)
        self.assertIn("line 3", r.stderr)

    def test_api_token_that_cannot_be_meant_is_refused(self):
        """Auth is off only when ZEUS_BSO_API_TOKEN is unset: an empty or blank value, the
        deployment example's placeholder, a control character or a space at either end
        stop the server (exit 2) naming the variable, never echoing the token."""
        for value, words in [
            ("", ["empty", "unset"]),
            ("  \t", ["blank", "unset"]),
            ("change-me", ["placeholder", "change-me"]),
            ("CHANGE-ME", ["placeholder"]),
            ("s3cret-s3cret-s3cret\n", ["control character", "0x0a"]),
            ("s3cret-s3cret\x01s3cret", ["control character", "0x01"]),
            (" s3cret-s3cret-s3cret", ["starts with a space"]),
            ("s3cret-s3cret-s3cret ", ["ends with a space"]),
        ]:
            with self.subTest(repr(value)):
                r = run_cli(["serve", "--port", "0"], cwd=self.tmp, timeout=30,
                            env={"ZEUS_BSO_API_TOKEN": value})
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("ZEUS_BSO_API_TOKEN", r.stderr)
                for w in words:
                    self.assertIn(w, r.stderr)
                self.assertNotIn("s3cret", r.stderr)
                self.assertNotIn("listening", r.stdout)
        with open(os.path.join(self.tmp, ".env"), "w") as f:
            f.write("ZEUS_BSO_API_TOKEN=\n")
        r = run_cli(["serve", "--port", "0"], cwd=self.tmp, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("ZEUS_BSO_API_TOKEN (from " + os.path.join(self.tmp, ".env"), r.stderr)
        os.unlink(os.path.join(self.tmp, ".env"))
        # A token file that turns out empty is a token lost on the way, too.
        empty = os.path.join(self.tmp, "token")
        open(empty, "w").close()
        r = run_cli(["serve", "--port", "0"], cwd=self.tmp, timeout=30,
                    env={"ZEUS_BSO_API_TOKEN_FILE": empty})
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("ZEUS_BSO_API_TOKEN_FILE", r.stderr)
        self.assertIn("empty", r.stderr)
        os.unlink(empty)
        self.assertEqual(os.listdir(self.tmp), [])


class ConfigTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="zbso-cfg-")
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name

    def start(self, cwd=None, env=None, args=()):
        srv = Server(tmpdir=self.tmp, env=env, args=args)
        if cwd:
            srv.tmpdir = cwd
        self.addCleanup(srv.close)
        srv.start()
        return srv

    def status(self, srv, token=None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return srv.request("GET", "/jobs/batch_size?job_id=cfg-none", headers=headers).status

    def write_env(self, directory, text):
        with open(os.path.join(directory, ".env"), "w") as f:
            f.write(text)

    def test_dotenv_token_in_working_directory(self):
        self.write_env(self.tmp, "# zbso\nexport ZEUS_BSO_API_TOKEN='dot token' # quoted\n")
        srv = self.start()
        self.assertEqual(self.status(srv), 401)
        self.assertEqual(self.status(srv, "dot token"), 404)

    def test_start_says_whether_auth_is_on(self):
        """One line at start says whether auth is on; a token under 16 bytes is warned
        about (its length, never its text)."""
        srv = self.start()
        self.assertEqual(srv.terminate(), 0)
        log = srv.log_tail(10 ** 6)
        self.assertEqual(log.count("authentication is off"), 1, log)
        self.assertIn("ZEUS_BSO_API_TOKEN is not set", log)
        for token, weak in (("short-tok", True), ("a-token-of-thirty-two-bytes-1234", False)):
            with self.subTest(token):
                tmp = tempfile.TemporaryDirectory(prefix="zbso-cfg-")
                self.addCleanup(tmp.cleanup)
                srv = Server(tmpdir=tmp.name, env={"ZEUS_BSO_API_TOKEN": token})
                self.addCleanup(srv.close)
                srv.start()
                self.assertEqual(self.status(srv), 401)
                self.assertEqual(self.status(srv, token), 404)
                self.assertEqual(srv.terminate(), 0)
                log = srv.log_tail(10 ** 6)
                self.assertNotIn(token, log)
                self.assertEqual(log.count("authentication is on"), 1, log)
                self.assertEqual("ZEUS_BSO_API_TOKEN is 9 bytes long" in log, weak, log)

    def test_dotenv_found_in_parent(self):
        self.write_env(self.tmp, 'ZEUS_BSO_API_TOKEN="from-parent"\n')
        sub = os.path.join(self.tmp, "a", "b")
        os.makedirs(sub)
        srv = self.start(cwd=sub)
        self.assertEqual(self.status(srv), 401)
        self.assertEqual(self.status(srv, "from-parent"), 404)

    def test_environment_wins_over_dotenv(self):
        self.write_env(self.tmp, "ZEUS_BSO_API_TOKEN=from-file\n")
        srv = self.start(env={"ZEUS_BSO_API_TOKEN": "from-env"})
        self.assertEqual(self.status(srv, "from-file"), 401)
        self.assertEqual(self.status(srv, "from-env"), 404)

    def test_flags_win_over_environment(self):
        # The environment names an unsupported database and a bad log level; --db and
        # --log-level override them, so the server starts.
        srv = self.start(env={"ZEUS_BSO_DATABASE_URL": "mssql://nowhere/db"},
                         args=["--log-level", "ERROR"])
        self.assertEqual(self.status(srv), 404)

    def test_unknown_log_level_in_environment_is_refused(self):
        # Refused with the value named (it used to mean INFO, silently); --log-level
        # overrides it.
        p = run_cli(["serve", "--port", "0", "--db", "sqlite:///x.db"], cwd=self.tmp,
                    env={"ZEUS_BSO_LOG_LEVEL": "CHATTY"})
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("ZEUS_BSO_LOG_LEVEL 'CHATTY' is not one of NOTSET, DEBUG, INFO", p.stderr)
        srv = self.start(env={"ZEUS_BSO_LOG_LEVEL": "CHATTY"}, args=["--log-level", "info"])
        self.assertEqual(self.status(srv), 404)
        self.assertEqual(srv.terminate(), 0)

    def test_database_url_spellings(self):
        # libpq's postgres:// is PostgreSQL (here: nothing listens on port 1); sqlite://x
        # (two slashes) gets the URL it meant, not "unsupported scheme".
        p = run_cli(["migrate", "--db", "postgres://u@127.0.0.1:1/db"], cwd=self.tmp)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("cannot connect to PostgreSQL at postgres://u@127.0.0.1:1/db", p.stderr)
        p = run_cli(["migrate", "--db", "sqlite://rel.db"], cwd=self.tmp)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn('"sqlite://rel.db" has two slashes after "sqlite:"', p.stderr)
        self.assertIn("sqlite:///rel.db (relative to the working directory)", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "rel.db")))

    def test_jobs_rm_asks_on_a_terminal(self):
        srv = self.start()
        for jid in ("rm-a", "rm-b"):
            r = srv.request("POST", "/jobs", body=job_spec(job_id=jid, job_id_prefix="rm"))
            self.assertEqual(r.status, 201, r)
        url = f"http://{srv.host}:{srv.port}"

        def rm_on_tty(jid, answer, *extra):
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(ZBSO_BIN, [ZBSO_BIN, "jobs", "rm", jid, "--server", url, *extra])
            out = b""
            os.write(fd, answer.encode() + b"\n")
            while True:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
            _, status = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(status), out.decode(errors="replace")

        code, out = rm_on_tty("rm-a", "n")
        self.assertEqual(code, 1, out)
        self.assertIn("delete job 'rm-a' with its trials, arms and reports from " + url, out)
        self.assertIn("not deleted", out)
        self.assertEqual(srv.request("GET", "/jobs/rm-a").status, 200)
        code, out = rm_on_tty("rm-a", "y")
        self.assertEqual(code, 0, out)
        self.assertEqual(srv.request("GET", "/jobs/rm-a").status, 404)
        code, out = rm_on_tty("rm-b", "", "--yes")   # --yes: no question
        self.assertEqual(code, 0, out)
        self.assertNotIn("[y/N]", out)
        self.assertEqual(srv.request("GET", "/jobs/rm-b").status, 404)

    def test_database_url_from_environment(self):
        env_db = new_database(self.tmp, "env.db")
        self.addCleanup(env_db.close)
        srv = Server(tmpdir=self.tmp, env={"ZEUS_BSO_DATABASE_URL": env_db.url})
        self.addCleanup(srv.close)
        srv.pass_db = False
        srv.start()
        self.assertEqual(srv.request("POST", "/jobs", body=job_spec(job_id="itest-env")).status,
                         201)
        self.assertEqual([j["job_id"] for j in env_db.rows("jobs")], ["itest-env"])
        if srv.db.kind == "sqlite":
            self.assertFalse(os.path.exists(srv.db_path))
        else:
            self.assertEqual(srv.db.tables(), [])

    if BACKEND in ("postgresql", "mysql"):
        # SQLite URLs have no user or password, so this exists on PostgreSQL and MariaDB.
        def test_db_user_and_password_fill_the_url(self):
            """ZEUS_BSO_DB_USER / ZEUS_BSO_DB_PASSWORD fill a URL that lacks them (SPEC §5);
            a wrong password is refused at start, naming the database but not the
            password. On MariaDB the URL is spelled as Zeus's docker-compose spells it
            (mysql+asyncmy://)."""
            env_db = new_database(self.tmp)
            self.addCleanup(env_db.close)
            u = urllib.parse.urlsplit(env_db.url)
            scheme = "postgresql" if BACKEND == "postgresql" else "mysql+asyncmy"
            bare = f"{scheme}://{u.hostname}:{u.port}{u.path}"
            srv = Server(tmpdir=self.tmp, env={
                "ZEUS_BSO_DATABASE_URL": bare, "ZEUS_BSO_DB_USER": u.username,
                "ZEUS_BSO_DB_PASSWORD": urllib.parse.unquote(u.password)})
            self.addCleanup(srv.close)
            srv.pass_db = False
            srv.start()
            r = srv.request("POST", "/jobs", body=job_spec(job_id="itest-env-user"))
            self.assertEqual(r.status, 201, r)
            self.assertEqual([j["job_id"] for j in env_db.rows("jobs")], ["itest-env-user"])
            self.assertEqual(srv.terminate(), 0, srv.log_tail())
            wrong = "wrong-Pa55word"
            r = run_cli(["serve", "--port", "0"], cwd=self.tmp, timeout=60, env={
                "ZEUS_BSO_DATABASE_URL": bare, "ZEUS_BSO_DB_USER": u.username,
                "ZEUS_BSO_DB_PASSWORD": wrong})
            self.assertNotEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("listening", r.stdout)
            self.assertIn(u.path.lstrip("/"), r.stderr)
            self.assertNotIn(wrong, r.stderr + r.stdout)


if __name__ == "__main__":
    unittest.main()
