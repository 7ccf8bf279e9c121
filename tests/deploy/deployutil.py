"""deployutil.py: what the deploy tests share: podman with this sandbox's settings, the
image the deploy/image test built, unique names, free loopback ports, HTTP with the API
token, a Zeus user's .env, and the figures file. Standard library only; traffic goes only
to 127.0.0.1 (or to 127.0.0.1 inside a pod's own network namespace)."""

import http.client
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))

BASE_IMAGE = "docker.io/library/debian:bookworm-slim"


def env(name):
    """The value of a variable ctest sets (tests/deploy/CMakeLists.txt); fails loudly."""
    v = os.environ.get(name)
    if not v:
        raise AssertionError(f"{name} is not set: run this test through ctest "
                             f"(ctest -L deploy in the build directory)")
    return v


def image():
    return env("ZBSO_DEPLOY_IMAGE")


def build_dir():
    return env("ZBSO_BUILD_DIR")


def require_tools(*tools):
    """Fails (never skips) when a tool the test needs is missing."""
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        raise AssertionError(f"missing tools: {', '.join(missing)} (scripts/setup.sh "
                             f"installs them)")


def run(args, timeout=300, check=True, input=None):
    """Runs a command, returns CompletedProcess (text). check: a non-zero exit raises
    AssertionError with the command's output."""
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, input=input)
    if check and p.returncode != 0:
        hint = ""
        if "error setting rlimit" in p.stderr:
            hint = ("\n(in this sandbox podman needs CONTAINERS_CONF="
                    f"{os.path.join(HERE, 'containers.conf')}; ctest sets it)")
        raise AssertionError(f"{' '.join(args)} exited {p.returncode}\n"
                             f"stdout: {p.stdout[-4000:]}\nstderr: {p.stderr[-4000:]}{hint}")
    return p


def podman(*args, timeout=300, check=True, input=None):
    require_tools("podman")
    return run(["podman", *args], timeout=timeout, check=check, input=input)


def unique(stem):
    """A container/volume/secret name no other test run uses at the same time."""
    return f"zbso-t{os.getpid()}-{stem}-{secrets.token_hex(3)}"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Http:
    """Requests to one server (127.0.0.1:port) with the bearer token, if any."""

    def __init__(self, port, token=None, host="127.0.0.1"):
        self.host, self.port, self.token = host, port, token

    def request(self, method, path, body=None, timeout=10):
        headers = {}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            c.request(method, path, body=data, headers=headers)
            r = c.getresponse()
            raw = r.read()
        finally:
            c.close()
        try:
            doc = json.loads(raw) if raw else None
        except ValueError:
            doc = raw.decode(errors="replace")
        return r.status, doc

    def get(self, path):
        return self.request("GET", path)

    def wait_healthy(self, timeout=60.0, alive=None):
        """Polls GET /healthz until it answers 200; returns the seconds it took. alive():
        False when the server's container has died (no use waiting)."""
        t0 = time.monotonic()
        last = None
        while time.monotonic() - t0 < timeout:
            try:
                status, _ = self.request("GET", "/healthz", timeout=2)
                if status == 200:
                    return time.monotonic() - t0
                last = f"status {status}"
            except OSError as e:
                last = f"{type(e).__name__}: {e}"
            if alive is not None and not alive():
                raise AssertionError(f"the server exited before /healthz answered ({last})")
            time.sleep(0.02)
        raise AssertionError(f"no 200 from /healthz on port {self.port} in {timeout} s "
                             f"({last})")


def container_running(name):
    p = podman("inspect", "--format", "{{.State.Running}}", name, check=False)
    return p.returncode == 0 and p.stdout.strip() == "true"


def zeus_env_text(values):
    """A .env as a Zeus user writes it (seed 003's list, quoted as there, a comment and a
    variable zbso does not know) with the given values."""
    lines = ["# Zeus batch size optimizer server (docker compose .env)"]
    for k, v in values.items():
        lines.append(f"{k}={v}" if v.isdigit() else f'{k}="{v}"')
    return "\n".join(lines) + "\n"


def read_dotenv(text):
    """KEY=VALUE lines of a .env with quotes removed (as docker compose reads it)."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, v = line.split("=", 1)
        k = k.strip().removeprefix("export ").strip()
        v = v.strip()
        if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
            v = v[1:-1]
        out[k] = v
    return out


def record_figures(name, figures):
    """Writes figures to BUILD/deploy/figures-NAME.json and prints them (the figures of
    deploy/README.md are read off these files)."""
    path = os.path.join(build_dir(), "deploy", f"figures-{name}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(figures, f, indent=2, sort_keys=True)
    print(f"figures {name}: {json.dumps(figures, sort_keys=True)}", flush=True)
