#!/usr/bin/env python3
"""run_zeus_server_tests.py: runs Zeus's own server tests, unchanged, against a real
`zbso serve`. Standard library only.

Zeus tests its server with pytest and FastAPI's TestClient (tests/optimizer/batch_size/
test_server.py, fixtures `client` and `helpers` from the conftest.py beside it). Neither
pytest nor FastAPI is here, and no Zeus code is part of this repository, so this script
takes the file from a Zeus checkout ($ZEUS_SRC) and loads it as it is, with small shims in
place of what it imports:

- `pytest`: fixture, mark and raises, enough for the file to import;
- `zeus.optimizer.batch_size.common`: the URL constants, read (ast, not imported: the real
  module needs pydantic) from $ZEUS_SRC/zeus/optimizer/batch_size/common.py;
- the fixture `helpers`: the class Helpers of Zeus's conftest.py, its source taken as is;
- the fixture `client`: get/post/patch/delete speaking HTTP to one `zbso serve` (as
  Zeus's conftest gives the whole module one database), answers with status_code, text
  and json().

Every test function of the file runs in its order; each gets a fresh client. The server
runs on the backend of $ZBSO_TEST_BACKEND (sqlite by default; postgresql under
tests/pg/with_pg.sh, mysql under tests/mysql/with_mysql.sh) through
tests/integration/zbsoserver.py. Exit status 0 when every test passed, 1 otherwise, 2
when $ZEUS_SRC or $ZBSO_BIN is missing (never a skip).

    ZEUS_SRC=/tmp/zeus ZBSO_BIN=build/src/cli/zbso python3 tests/zeus/run_zeus_server_tests.py
"""

import ast
import contextlib
import hashlib
import http.client
import importlib.util
import inspect
import io
import json
import os
import sys
import time
import traceback
import types
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
TEST_FILE = os.path.join("tests", "optimizer", "batch_size", "test_server.py")
CONFTEST = os.path.join("tests", "optimizer", "batch_size", "conftest.py")
COMMON = os.path.join("zeus", "optimizer", "batch_size", "common.py")
REQUEST_TIMEOUT_S = 60.0


class SetupError(Exception):
    """Something the run needs is missing (exit status 2)."""


# -- the pytest shim -----------------------------------------------------------------------

def make_pytest():
    """A module named pytest with what test modules use at import time."""
    mod = types.ModuleType("pytest")

    def fixture(func=None, **_kwargs):
        if func is None:
            return lambda f: f
        return func

    class Mark:
        def __getattr__(self, name):
            def mark(*_args, **_kwargs):
                if len(_args) == 1 and callable(_args[0]) and not _kwargs:
                    return _args[0]
                return lambda f: f
            return mark

    class Raises:
        def __init__(self, expected, match=None):
            self.expected, self.match, self.value = expected, match, None

        def __enter__(self):
            return self

        def __exit__(self, etype, value, tb):
            if etype is None:
                raise AssertionError(f"DID NOT RAISE {self.expected}")
            if not issubclass(etype, self.expected):
                return False
            if self.match is not None:
                import re
                if not re.search(self.match, str(value)):
                    raise AssertionError(f"{value!r} does not match {self.match!r}")
            self.value = value
            return True

    mod.fixture = fixture
    mod.mark = Mark()
    mod.raises = Raises
    return mod


# -- what is taken from the Zeus checkout --------------------------------------------------

def read(zeus_src, rel):
    path = os.path.join(zeus_src, rel)
    try:
        with open(path, encoding="utf-8") as f:
            return path, f.read()
    except OSError as e:
        raise SetupError(f"cannot read {path} ({e.strerror}); is ZEUS_SRC={zeus_src!r} a "
                         "Zeus checkout?") from e


def zeus_url_constants(zeus_src):
    """The *_URL = "..." assignments of Zeus's common.py, as {name: value}."""
    path, text = read(zeus_src, COMMON)
    out = {}
    for node in ast.parse(text, path).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id.endswith("_URL")
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            out[node.targets[0].id] = node.value.value
    if not out:
        raise SetupError(f"no *_URL constants in {path}")
    return out


def zeus_helpers(zeus_src):
    """The class Helpers of Zeus's conftest.py, compiled from its own source."""
    path, text = read(zeus_src, CONFTEST)
    tree = ast.parse(text, path)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Helpers"]
    if not classes:
        raise SetupError(f"no class Helpers in {path}")
    future = [n for n in tree.body if isinstance(n, ast.ImportFrom)
              and n.module == "__future__"]
    module = ast.Module(body=future + classes, type_ignores=[])
    namespace = {"__name__": "zeus_conftest_helpers"}
    exec(compile(module, path, "exec"), namespace)  # Zeus's own code, as pytest runs it
    return namespace["Helpers"]


def install_shims(urls):
    """Puts the pytest and zeus.optimizer.batch_size.common shims in sys.modules."""
    sys.modules["pytest"] = make_pytest()
    names = ["zeus", "zeus.optimizer", "zeus.optimizer.batch_size",
             "zeus.optimizer.batch_size.common"]
    for i, name in enumerate(names):
        mod = types.ModuleType(name)
        if i < len(names) - 1:
            mod.__path__ = []
        sys.modules[name] = mod
        if i > 0:
            setattr(sys.modules[names[i - 1]], name.rpartition(".")[2], mod)
    for k, v in urls.items():
        setattr(sys.modules["zeus.optimizer.batch_size.common"], k, v)


def load_tests(zeus_src):
    """Zeus's test_server.py as a module, and its file's sha256."""
    path, text = read(zeus_src, TEST_FILE)
    spec = importlib.util.spec_from_file_location("zeus_test_server", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- the client fixture --------------------------------------------------------------------

class Response:
    """What the tests read of an answer (the parts of httpx's Response they use)."""

    def __init__(self, status, body, method, url):
        self.status_code = status
        self.content = body
        self.text = body.decode("utf-8", "replace")
        self.request_line = f"{method} {url}"

    def json(self):
        return json.loads(self.text)

    def __repr__(self):
        return f"<Response [{self.status_code}]>"

    __str__ = __repr__


class Client:
    """TestClient's request methods, over HTTP to a running `zbso serve`."""

    def __init__(self, host, port):
        self.host, self.port = host, port

    def request(self, method, url, json_body=None, params=None):
        if params:
            url = url + "?" + urllib.parse.urlencode(params)
        body, headers = None, {}
        if json_body is not None:
            body = json.dumps(json_body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        conn = http.client.HTTPConnection(self.host, self.port, timeout=REQUEST_TIMEOUT_S)
        try:
            conn.request(method, url, body=body, headers=headers)
            resp = conn.getresponse()
            return Response(resp.status, resp.read(), method, url)
        finally:
            conn.close()

    def get(self, url, params=None, **_kwargs):
        return self.request("GET", url, params=params)

    def delete(self, url, params=None, **_kwargs):
        return self.request("DELETE", url, params=params)

    def post(self, url, json=None, params=None, **_kwargs):
        return self.request("POST", url, json, params)

    def patch(self, url, json=None, params=None, **_kwargs):
        return self.request("PATCH", url, json, params)


# -- the run -------------------------------------------------------------------------------

def run(zeus_src, out=sys.stdout):
    """Runs every test function; returns (passed, failed) lists of names."""
    if not zeus_src:
        raise SetupError("ZEUS_SRC is not set: point it at a Zeus checkout (for example "
                         "git clone https://github.com/ml-energy/zeus /tmp/zeus)")
    if not os.path.isdir(zeus_src):
        raise SetupError(f"ZEUS_SRC={zeus_src!r} is not a directory")
    sys.path.insert(0, os.path.join(HERE, "..", "integration"))
    import zbsoserver  # noqa: E402  (the integration tests' server harness)
    if not zbsoserver.ZBSO_BIN or not os.access(zbsoserver.ZBSO_BIN, os.X_OK):
        raise SetupError(f"ZBSO_BIN={zbsoserver.ZBSO_BIN!r} is not an executable zbso binary")

    install_shims(zeus_url_constants(zeus_src))
    helpers = zeus_helpers(zeus_src)
    module, digest = load_tests(zeus_src)
    tests = [(name, fn) for name, fn in vars(module).items()
             if name.startswith("test_") and inspect.isfunction(fn)
             and fn.__module__ == module.__name__]
    tests.sort(key=lambda t: t[1].__code__.co_firstlineno)
    if not tests:
        raise SetupError(f"no test functions in {os.path.join(zeus_src, TEST_FILE)}")
    print(f"zeus: {os.path.join(zeus_src, TEST_FILE)} sha256 {digest}, {len(tests)} tests; "
          f"zbso serve on {zbsoserver.BACKEND}", file=out, flush=True)

    passed, failed = [], []
    srv = zbsoserver.Server()
    try:
        srv.start()
        for name, fn in tests:
            fixtures = {"client": lambda: Client(srv.host, srv.port), "helpers": lambda: helpers}
            params = list(inspect.signature(fn).parameters)
            unknown = [p for p in params if p not in fixtures]
            captured = io.StringIO()
            t0 = time.monotonic()
            try:
                if unknown:
                    raise AssertionError(f"fixtures this runner does not provide: {unknown}")
                with contextlib.redirect_stdout(captured):
                    fn(**{p: fixtures[p]() for p in params})
            except Exception:  # a test's failure, reported with its output
                failed.append(name)
                print(f"FAILED {name} ({time.monotonic() - t0:.2f} s)\n"
                      + traceback.format_exc() + captured.getvalue()[-4000:], file=out)
            else:
                passed.append(name)
                print(f"PASSED {name} ({time.monotonic() - t0:.2f} s)", file=out, flush=True)
            if srv.proc.poll() is not None:
                failed += [n for n, _ in tests if n not in passed and n not in failed]
                print("zbso serve died:\n" + srv.log_tail(), file=out)
                break
    finally:
        srv.close()
    print(f"zeus test_server.py on zbso ({zbsoserver.BACKEND}): {len(passed)} passed, "
          f"{len(failed)} failed", file=out, flush=True)
    return passed, failed


def main():
    try:
        _, failed = run(os.environ.get("ZEUS_SRC", ""))
    except SetupError as e:
        print(f"run_zeus_server_tests.py: {e}", file=sys.stderr)
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
