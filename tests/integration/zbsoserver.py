"""zbsoserver.py: starts a real `zbso serve` process for the integration tests and talks to
it over HTTP. Standard library only; each server gets its own temporary directory,
database and port (--port 0), so tests may run in parallel.

The backend comes from $ZBSO_TEST_BACKEND: "sqlite" (default), "postgresql" or "mysql".
PostgreSQL runs under tests/pg/with_pg.sh (ZBSO_PG_URL, ZBSO_PG_BIN, ZBSO_PG_CTL), MariaDB
under tests/mysql/with_mysql.sh (ZBSO_MYSQL_URL, ZBSO_MYSQL_BIN, ZBSO_MYSQL_CTL); each
Server gets a fresh database of that server; without them every test fails (never skips).
Database.snapshot() and Database.rows() read the stored state the same way for all three,
and db_ctl() stops and starts the database server of the backend."""

import http.client
import itertools
import json
import os
import select
import signal
import sqlite3
import subprocess
import tempfile
import time
import unittest
import urllib.parse

ZBSO_BIN = os.environ.get("ZBSO_BIN", "")
BACKEND = os.environ.get("ZBSO_TEST_BACKEND", "sqlite") or "sqlite"
BACKENDS = ("sqlite", "postgresql", "mysql")
# The environment the runner of each server backend provides (with_pg.sh, with_mysql.sh).
BACKEND_ENV = {
    "postgresql": (("ZBSO_PG_URL", "ZBSO_PG_BIN", "ZBSO_PG_CTL"), "tests/pg/with_pg.sh",
                   "ZBSO_PG_BIN", "psql"),
    "mysql": (("ZBSO_MYSQL_URL", "ZBSO_MYSQL_BIN", "ZBSO_MYSQL_CTL"),
              "tests/mysql/with_mysql.sh", "ZBSO_MYSQL_BIN", "mariadb"),
}
START_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 60.0
PSQL_TIMEOUT_S = 60.0
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


def require_backend():
    """Fails (never skips) when $ZBSO_TEST_BACKEND is unknown, or is postgresql (mysql)
    without the server that tests/pg/with_pg.sh (tests/mysql/with_mysql.sh) provides."""
    if BACKEND not in BACKENDS:
        raise AssertionError(f"ZBSO_TEST_BACKEND={BACKEND!r} is not one of {BACKENDS}")
    if BACKEND in BACKEND_ENV:
        names, runner, bin_var, client = BACKEND_ENV[BACKEND]
        missing = [k for k in names if not os.environ.get(k)]
        if missing:
            raise AssertionError(f"ZBSO_TEST_BACKEND={BACKEND} needs " + ", ".join(missing)
                                 + f": run the tests under {runner}")
        path = os.path.join(os.environ[bin_var], client)
        if not os.access(path, os.X_OK):
            raise AssertionError(f"{path} is not executable ({bin_var})")


def db_ctl(*args, timeout=120):
    """Runs the database server's controller of $ZBSO_TEST_BACKEND (tests/pg/pgctl.sh or
    tests/mysql/myctl.sh: stop [fast|immediate], start, createdb NAME, ...); returns its
    output. Raises AssertionError with the controller's message when it fails, and on
    SQLite, which has no server."""
    require_backend()
    var = {"postgresql": "ZBSO_PG_CTL", "mysql": "ZBSO_MYSQL_CTL"}.get(BACKEND)
    if var is None:
        raise AssertionError(f"db_ctl{args}: the {BACKEND} backend has no database server")
    r = subprocess.run([os.environ[var], *args], capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode != 0:
        raise AssertionError(f"{os.path.basename(os.environ[var])} {' '.join(args)} failed "
                             f"({r.returncode}): {r.stdout}{r.stderr}")
    return r.stdout


# -- databases ---------------------------------------------------------------------------

class SqliteDatabase:
    """A SQLite file (it need not exist yet). Read only, WAL contents included."""

    kind = "sqlite"

    def __init__(self, path):
        self.path = path
        self.url = "sqlite:///" + path

    def _connect(self):
        return sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30)

    def tables(self):
        conn = self._connect()
        try:
            return [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        finally:
            conn.close()

    def snapshot(self):
        """Every row of every table: {table: sorted list of rows}."""
        return db_snapshot(self.path)

    def rows(self, table, order_by="1"):
        """The rows of table as dicts by column name, ordered by the SQL order_by."""
        conn = self._connect()
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(
                f'SELECT * FROM "{table}" ORDER BY {order_by}')]
        finally:
            conn.close()

    def integrity_errors(self):
        """PRAGMA integrity_check and foreign_key_check: [] when the file is sound."""
        conn = self._connect()
        try:
            out = [r[0] for r in conn.execute("PRAGMA integrity_check")]
            if out == ["ok"]:
                out = []
            out += [repr(tuple(r)) for r in conn.execute("PRAGMA foreign_key_check")]
            return out
        finally:
            conn.close()

    def close(self):
        pass


_pg_names = itertools.count(1)


class PgDatabase:
    """A fresh, empty database of the PostgreSQL that tests/pg/with_pg.sh runs, made by
    CREATE DATABASE on $ZBSO_PG_URL and dropped by close(). Read with psql (ZBSO_PG_BIN),
    rows as JSON so values come back with their types."""

    kind = "postgresql"

    def __init__(self):
        require_backend()
        self.name = f"zbso_it_{os.getpid()}_{next(_pg_names)}"
        self.admin_url = os.environ["ZBSO_PG_URL"]
        base, sep, _ = self.admin_url.rpartition("/")
        if not sep or not base.startswith("postgresql://"):
            raise AssertionError(f"ZBSO_PG_URL={self.admin_url!r} is not postgresql://.../DB")
        self.url = f"{base}/{self.name}"
        self.dropped = True
        self.psql(f"CREATE DATABASE {self.name}", url=self.admin_url)
        self.dropped = False

    def psql(self, sql, timeout=PSQL_TIMEOUT_S, url=None):
        """Runs sql with psql (unaligned, tuples only) on this database (or url); returns
        its output. Raises AssertionError with psql's message on failure."""
        psql = os.path.join(os.environ["ZBSO_PG_BIN"], "psql")
        r = subprocess.run([psql, "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1",
                            "-d", url or self.url, "-c", sql],
                           capture_output=True, text=True, timeout=timeout,
                           env=clean_env({"PGCONNECT_TIMEOUT": "10"}))
        if r.returncode != 0:
            raise AssertionError(f"psql failed ({r.returncode}) on {sql!r}: {r.stderr}")
        return r.stdout

    def query_json(self, sql):
        """sql must return one value of type json; returns it parsed."""
        out = self.psql(sql).strip()
        return json.loads(out) if out else None

    def tables(self):
        return self.query_json(
            "SELECT coalesce(json_agg(tablename ORDER BY tablename), '[]') "
            "FROM pg_tables WHERE schemaname = 'public'")

    def snapshot(self):
        """Every row of every table of the public schema, as psql -At prints each row's
        text form (every column; floats in their shortest exact form), in the order of
        that text: {table: text}. Equal snapshots mean equal stored bytes of every value."""
        return {t: self.psql(f'SELECT x::text FROM "{t}" x ORDER BY 1')
                for t in self.tables()}

    def rows(self, table, order_by="1"):
        """The rows of table as dicts by column name, ordered by the SQL order_by."""
        return self.query_json(
            f'SELECT coalesce(json_agg(row_to_json(x)), \'[]\') FROM '
            f'(SELECT * FROM "{table}" ORDER BY {order_by}) x')

    def close(self):
        """Drops the database, cutting off its connections (a killed server's included)."""
        if self.dropped:
            return
        self.dropped = True
        self.psql(f"DROP DATABASE {self.name} WITH (FORCE)", url=self.admin_url)


_my_names = itertools.count(1)
_MY_INT_TYPES = ("tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year")
_MY_FLOAT_TYPES = ("double", "float", "real", "decimal")


class MysqlDatabase:
    """A fresh, empty database of the MariaDB that tests/mysql/with_mysql.sh runs, made by
    CREATE DATABASE as the user of $ZBSO_MYSQL_URL and dropped by close() (its
    connections cut off). Read with the mariadb client (ZBSO_MYSQL_BIN) in batch mode:
    each value travels as a tagged token (integers and doubles as MariaDB's shortest
    exact text, strings and bytes in hex), so rows() gives values with their types and
    snapshot() every stored byte."""

    kind = "mysql"

    def __init__(self):
        require_backend()
        self.name = f"zbso_it_{os.getpid()}_{next(_my_names)}"
        self.admin_url = os.environ["ZBSO_MYSQL_URL"]
        u = urllib.parse.urlsplit(self.admin_url)
        if u.scheme != "mysql" or not u.path.strip("/") or u.port is None:
            raise AssertionError(f"ZBSO_MYSQL_URL={self.admin_url!r} is not "
                                 "mysql://USER:PASSWORD@HOST:PORT/DB")
        self.admin_db = u.path.strip("/")
        self.host, self.port = u.hostname, u.port
        self.user = urllib.parse.unquote(u.username or "")
        self.password = urllib.parse.unquote(u.password or "")
        self.url = self.admin_url.rpartition("/")[0] + "/" + self.name
        self.dropped = True
        self.sql(f"CREATE DATABASE {self.name}", database=self.admin_db)
        self.dropped = False

    def sql(self, sql, timeout=PSQL_TIMEOUT_S, database=None):
        """Runs sql (one or more statements) with the mariadb client on this database (or
        database), batch mode without column names, raw (no escapes); returns its output.
        Raises AssertionError with the client's message on failure."""
        client = os.path.join(os.environ["ZBSO_MYSQL_BIN"], "mariadb")
        r = subprocess.run([client, "--no-defaults", "--protocol=TCP", "-h", self.host,
                            "-P", str(self.port), "-u", self.user, "--connect-timeout=10",
                            "--default-character-set=utf8mb4",
                            "--batch", "--raw", "--skip-column-names",
                            "-D", database or self.name, "-e", sql],
                           capture_output=True, text=True, timeout=timeout,
                           env=clean_env({"MYSQL_PWD": self.password}))
        if r.returncode != 0:
            raise AssertionError(f"mariadb failed ({r.returncode}) on {sql!r}: {r.stderr}")
        return r.stdout

    def tables(self):
        out = self.sql("SELECT table_name FROM information_schema.tables "
                       "WHERE table_schema = DATABASE() ORDER BY table_name")
        return out.split()

    def columns(self, table):
        """[(name, data_type, column_type)] of table, in their order."""
        out = self.sql("SELECT column_name, data_type, column_type FROM "
                       "information_schema.columns WHERE table_schema = DATABASE() AND "
                       f"table_name = '{table}' ORDER BY ordinal_position")
        cols = [tuple(line.split("\t")) for line in out.splitlines() if line]
        if not cols:
            raise AssertionError(f"table {table!r} not found in database {self.name}")
        return cols

    @staticmethod
    def _token(name, data_type, column_type):
        """SQL giving column name as one token: N (NULL), B0/B1 (BOOLEAN, MariaDB's
        tinyint(1)), I<integer>, F<double> (F-0 for a negative zero), S<hex bytes>."""
        c = f"`{name}`"
        if column_type.startswith("tinyint(1)"):
            v = f"CONCAT('B', {c} <> 0)"
        elif data_type in _MY_INT_TYPES:
            v = f"CONCAT('I', CAST({c} AS CHAR))"
        elif data_type in _MY_FLOAT_TYPES:
            v = (f"IF({c} = 0 AND ATAN2({c}, -1) < 0, 'F-0', "
                 f"CONCAT('F', CAST({c} AS CHAR)))")
        else:
            v = f"CONCAT('S', HEX({c}))"
        return f"IF({c} IS NULL, 'N', {v})"

    @staticmethod
    def _value(token):
        tag, rest = token[:1], token[1:]
        if tag == "N":
            return None
        if tag == "B":
            return rest == "1"
        if tag == "I":
            return int(rest)
        if tag == "F":
            return float(rest)
        if tag == "S":
            raw = bytes.fromhex(rest)
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError:
                return raw
        raise AssertionError(f"unexpected token {token!r} from the mariadb client")

    def _tokens(self, table, order_by):
        cols = self.columns(table)
        if order_by.strip().isdigit():  # a column's position, as on the other backends
            order_by = f"`{cols[int(order_by) - 1][0]}`"
        exprs = ", ".join(self._token(*c) for c in cols)
        out = self.sql(f"SELECT {exprs} FROM `{table}` ORDER BY {order_by}")
        return cols, [line.split("\t") for line in out.splitlines() if line]

    def snapshot(self):
        """Every row of every table, each as its columns' name=repr(value) (a double from
        MariaDB's shortest exact text, so every bit of it; strings and bytes exact), the
        rows sorted: {table: text}. Equal snapshots mean equal stored bytes of every
        value."""
        out = {}
        for t in self.tables():
            cols, rows = self._tokens(t, "1")
            out[t] = "\n".join(sorted(
                " ".join(f"{c[0]}={self._value(v)!r}" for c, v in zip(cols, row))
                for row in rows))
        return out

    def rows(self, table, order_by="1"):
        """The rows of table as dicts by column name, ordered by the SQL order_by."""
        cols, rows = self._tokens(table, order_by)
        return [{c[0]: self._value(v) for c, v in zip(cols, row)} for row in rows]

    def close(self):
        """Drops the database, cutting off its connections (a killed server's included)."""
        if self.dropped:
            return
        self.dropped = True
        db_ctl("dropdb", self.name)


def new_database(tmpdir, db_name="x.db"):
    """A fresh database of $ZBSO_TEST_BACKEND: the SQLite file tmpdir/db_name, or a new
    PostgreSQL or MariaDB database (db_name unused)."""
    require_backend()
    if BACKEND == "postgresql":
        return PgDatabase()
    if BACKEND == "mysql":
        return MysqlDatabase()
    return SqliteDatabase(os.path.join(tmpdir, db_name))


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
    """A `zbso serve` subprocess on a fresh database of $ZBSO_TEST_BACKEND (or on database,
    a SqliteDatabase/PgDatabase/MysqlDatabase the caller owns, e.g. one shared by several
    servers).

    start() waits for the listening line; request() sends one request on a fresh
    connection; kill() is SIGKILL; terminate() is SIGTERM and returns the exit status;
    restart() starts again on the same database and directory."""

    def __init__(self, tmpdir=None, env=None, args=(), db_name="x.db", database=None):
        require_binary()
        self._own_tmp = None
        if tmpdir is None:
            self._own_tmp = tempfile.TemporaryDirectory(prefix="zbso-it-")
            tmpdir = self._own_tmp.name
        self.tmpdir = tmpdir
        self._own_db = database is None
        self.db = database if database is not None else new_database(tmpdir, db_name)
        self.db_path = getattr(self.db, "path", None)  # SQLite only
        self.db_url = self.db.url
        self.env = dict(env or {})
        self.args = list(args)
        self.pass_db = True  # False: the database comes from the environment or .env
        self.preexec_fn = None  # run in the child before exec (e.g. to set rlimits)
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
                                     stdout=subprocess.PIPE, stderr=log,
                                     preexec_fn=self.preexec_fn)
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
        if self._own_db:
            self.db.close()
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
        return self.db.snapshot()

    def rows(self, table, order_by="1"):
        """The rows of table as dicts by column name."""
        return self.db.rows(table, order_by)

    def client(self):
        """A keep-alive connection to this server (KeepAlive)."""
        return KeepAlive(lambda: (self.host, self.port))


def db_snapshot(path):
    """Dumps every table of the SQLite file at path, opened read-only (WAL contents
    included), as {table: sorted list of rows}, each row as the repr of its values (so
    types, 0.0 against -0.0 and every bit of a float count)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        out = {}
        for t in tables:
            rows = conn.execute(f'SELECT * FROM "{t}"').fetchall()
            out[t] = sorted(repr(r) for r in rows)
        return out
    finally:
        conn.close()


class KeepAlive:
    """One HTTP/1.1 keep-alive connection, as a long-lived client holds it. address() gives
    (host, port) whenever a new connection is opened, so a restarted server (new port) is
    found again. request() raises OSError or http.client.HTTPException when the request
    failed on the wire (the connection is then dropped); it never retries by itself."""

    def __init__(self, address, timeout=REQUEST_TIMEOUT_S):
        self.address = address
        self.timeout = timeout
        self.conn = None
        self.connects = 0

    def request(self, method, path, body=None, headers=None):
        hdrs = dict(headers or {})
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
            hdrs.setdefault("Content-Type", "application/json")
        if self.conn is None:
            host, port = self.address()
            self.conn = http.client.HTTPConnection(host, port, timeout=self.timeout)
            self.connects += 1
        try:
            self.conn.request(method, path, body=data, headers=hdrs)
            resp = self.conn.getresponse()
            out = Response(resp.status, resp.read(), dict(resp.getheaders()))
        except (OSError, http.client.HTTPException):
            self.close()
            raise
        if resp.will_close:
            self.close()
        return out

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


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
