"""zbsoserver.py: starts a real `zbso serve` process for the integration tests and talks to
it over HTTP. Standard library only; each server gets its own temporary directory,
database and port (--port 0), so tests may run in parallel."""

import http.client
import json
import os
import select
import signal
import sqlite3
import subprocess
import tempfile
import time
import unittest

ZBSO_BIN = os.environ.get("ZBSO_BIN", "")
START_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 60.0
LISTEN_PREFIX = "zbso serve listening on http://"


def require_binary(test_case=None):
    """Fails (never skips) when ZBSO_BIN does not name an executable."""
    if not ZBSO_BIN or not os.access(ZBSO_BIN, os.X_OK):
        raise AssertionError(f"ZBSO_BIN={ZBSO_BIN!r} is not an executable zbso binary")


def clean_env(extra=None):
    """The test process environment without any ZEUS_BSO_* setting, plus extra."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEUS_BSO_")}
    env.update(extra or {})
    return env


def run_cli(args, cwd, env=None, timeout=60):
    """Runs `zbso ARGS...` to completion; returns the CompletedProcess (text mode)."""
    require_binary()
    return subprocess.run([ZBSO_BIN, *args], cwd=cwd, env=clean_env(env), timeout=timeout,
                          capture_output=True, text=True)


class Response:
    """One HTTP answer: status, raw body bytes, headers, and the body as JSON (or None)."""

    def __init__(self, status, body, headers):
        self.status = status
        self.body = body
        self.headers = headers
        try:
            self.json = json.loads(body.decode("utf-8")) if body else None
        except (UnicodeDecodeError, ValueError):
            self.json = None

    def __repr__(self):
        return f"Response({self.status}, {self.body[:300]!r})"


class Server:
    """A `zbso serve` subprocess on a temporary SQLite database.

    start() waits for the listening line; request() sends one request on a fresh
    connection; kill() is SIGKILL; terminate() is SIGTERM and returns the exit status;
    restart() starts again on the same database and directory."""

    def __init__(self, tmpdir=None, env=None, args=(), db_name="x.db"):
        require_binary()
        self._own_tmp = None
        if tmpdir is None:
            self._own_tmp = tempfile.TemporaryDirectory(prefix="zbso-it-")
            tmpdir = self._own_tmp.name
        self.tmpdir = tmpdir
        self.db_path = os.path.join(tmpdir, db_name)
        self.db_url = "sqlite:///" + self.db_path
        self.env = dict(env or {})
        self.args = list(args)
        self.pass_db = True  # False: the database comes from the environment or .env
        self.proc = None
        self.port = None
        self.host = "127.0.0.1"
        self.log_path = os.path.join(tmpdir, "server.log")
        self.starts = 0

    # -- lifecycle -----------------------------------------------------------------------

    def start(self, extra_args=()):
        """Starts the server; raises AssertionError with the log when it does not listen."""
        assert self.proc is None, "server already running"
        self.starts += 1
        log = open(self.log_path, "ab")
        db_args = ["--db", self.db_url] if self.pass_db else []
        cmd = [ZBSO_BIN, "serve", "--port", "0", *db_args, *self.args, *extra_args]
        self.proc = subprocess.Popen(cmd, cwd=self.tmpdir, env=clean_env(self.env),
                                     stdout=subprocess.PIPE, stderr=log)
        log.close()
        line = self._read_line(START_TIMEOUT_S)
        if not line.startswith(LISTEN_PREFIX):
            self.proc.kill()
            self.proc.wait()
            rc = self.proc.returncode
            self.proc = None
            raise AssertionError(f"server did not start (exit {rc}, first line {line!r}):\n"
                                 + self.log_tail())
        hostport = line[len(LISTEN_PREFIX):].strip()
        self.host, _, port = hostport.rpartition(":")
        self.port = int(port)
        return self

    def _read_line(self, timeout):
        fd = self.proc.stdout.fileno()
        buf = b""
        deadline = time.monotonic() + timeout
        while not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                break
            chunk = os.read(fd, 1)
            if not chunk:
                break
            buf += chunk
        return buf.decode("utf-8", "replace")

    def log_tail(self, n=4000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def kill(self):
        """SIGKILL: the process gets no chance to clean up."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
            self.proc.stdout.close()
            self.proc = None

    def terminate(self, timeout=60):
        """SIGTERM; returns the exit status."""
        assert self.proc is not None, "server not running"
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()
            self.proc = None
        return rc

    def restart(self):
        self.kill()
        return self.start()

    def close(self):
        self.kill()
        if self._own_tmp is not None:
            self._own_tmp.cleanup()
            self._own_tmp = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    # -- requests ------------------------------------------------------------------------

    def request(self, method, path, body=None, headers=None, raw=None):
        """Sends one request on a new connection. body is JSON-encoded; raw is sent as is.
        Content-Type defaults to application/json when there is a body."""
        hdrs = dict(headers or {})
        data = raw
        if body is not None:
            data = json.dumps(body).encode("utf-8")
        if data is not None and not any(k.lower() == "content-type" for k in hdrs):
            hdrs["Content-Type"] = "application/json"
        conn = http.client.HTTPConnection(self.host, self.port, timeout=REQUEST_TIMEOUT_S)
        try:
            try:
                conn.request(method, path, body=data, headers=hdrs)
                resp = conn.getresponse()
            except (BrokenPipeError, ConnectionResetError):
                # The server may answer (413) from the headers alone and close before the
                # body is sent; like curl, read the answer it already wrote.
                if conn.sock is None:
                    raise
                resp = http.client.HTTPResponse(conn.sock, method=method)
                resp.begin()
            return Response(resp.status, resp.read(), dict(resp.getheaders()))
        finally:
            conn.close()

    def healthy(self):
        try:
            return self.request("GET", "/healthz").status == 200
        except OSError:
            return False

    # -- database ------------------------------------------------------------------------

    def snapshot(self):
        """Every row of every table, read-only: {table: sorted rows}."""
        return db_snapshot(self.db_path)


def db_snapshot(path):
    """Dumps every table of the SQLite file at path, opened read-only (WAL contents
    included), as {table: sorted list of rows}."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        out = {}
        for t in tables:
            rows = conn.execute(f'SELECT * FROM "{t}"').fetchall()
            out[t] = sorted(rows, key=repr)
        return out
    finally:
        conn.close()


def job_spec(**overrides):
    """A valid JobSpecFromClient with the required fields; overrides replace or add."""
    spec = {
        "job_id_prefix": "itest",
        "batch_sizes": [32, 8, 16],
        "default_batch_size": 16,
        "max_power": 300.0,
        "number_of_gpus": 1,
        "gpu_model": "NVIDIA A100-SXM4-40GB",
    }
    spec.update(overrides)
    return spec


class ServerTestCase(unittest.TestCase):
    """A test case with a fresh server per test (self.srv)."""

    server_env = None
    server_args = ()

    def setUp(self):
        self.srv = Server(env=self.server_env, args=self.server_args)
        self.addCleanup(self.srv.close)
        self.srv.start()

    def register(self, **overrides):
        r = self.srv.request("POST", "/jobs", body=job_spec(**overrides))
        self.assertIn(r.status, (200, 201), r)
        return r.json["job_id"]
