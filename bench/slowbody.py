#!/usr/bin/env python3
"""slowbody.py: the slow-body benchmark of docs/BENCHMARKS.md (issue 22, item 3): starts
`zbso serve` on a fresh SQLite database on loopback and sends it BODIES request bodies that
never complete, from ADDRESSES source addresses (127.0.0.1, 127.0.0.2, ...), while a fresh
client keeps making requests. Standard library only; traffic goes to 127.0.0.0/8 only,
bounded in count (BODIES + the fresh client's) and time (the body timeout + 15 s).

Each slow body is a POST /report whose head declares a Content-Length. Half of them ("big")
declare --declared bytes and send --burst of them at once, the others ("small") declare
1,000 bytes and send 10; then every one sends one more byte every --interval seconds and
never the last one. The server must answer each either 503 at once (its cap on the memory
of bodies being received is reached) or 408 when the body timeout has passed, and close it.

Prints, per kind, how many were answered 408, 503 or closed without an answer, and how long
each took from its head to being closed; the server's resident memory (VmRSS sampled every
50 ms, and VmHWM); and the fresh client's latency per request (a new connection every
--fresh-interval s from 127.0.0.1: GET /healthz, POST /jobs, GET /jobs/batch_size, POST
/report, each request timed alone) while the slow bodies are open, and for --baseline
seconds before, with none open (what the machine gives anyway). With --check it exits 1
unless every body was closed by the deadline (the body timeout plus --slack seconds after
its head was sent), peak RSS stayed under --rss-max-mb and the fresh client's p99 under
--p99-max-ms with no failed request.

usage: bench/slowbody.py --zbso build/src/cli/zbso [--bodies 1000] [--addresses 4]
       [--body-timeout 30] [--check]"""

import argparse
import json
import os
import resource
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from connbench import Proc, connect, fmt_ms, pct, request  # noqa: E402


def start_server(zbso, tmp, body_timeout):
    out = open(os.path.join(tmp, "serve.out"), "w+")
    log = os.path.join(tmp, "serve.log")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEUS_BSO_")}
    proc = subprocess.Popen(
        [os.path.abspath(zbso), "serve", "--port", "0", "--db", f"sqlite:///{tmp}/bench.db",
         "--body-timeout", str(body_timeout), "--log-file", log, "--log-level", "INFO"],
        cwd=tmp, stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        out.seek(0)
        text = out.read()
        if "listening on http://" in text:
            port = int(text.split("listening on http://")[1].split()[0].rsplit(":", 1)[1])
            return proc, port, log
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    out.seek(0)
    log_text = open(log).read() if os.path.exists(log) else ""
    sys.exit(f"slowbody: zbso serve did not start:\n{out.read()}{log_text}")


class Sampler(threading.Thread):
    """The server's VmRSS every 50 ms; peak_kib is the largest seen."""

    def __init__(self, proc):
        super().__init__(daemon=True)
        self.proc = proc
        self.peak_kib = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                self.peak_kib = max(self.peak_kib, self.proc.status()["VmRSS"])
            except (OSError, KeyError):
                return
            self.stop.wait(0.05)


class Fresh(threading.Thread):
    """A fresh client: a new connection every `interval` s making four requests, each
    timed alone, until stopped."""

    def __init__(self, port, interval, tag):
        super().__init__(daemon=True)
        self.port, self.interval, self.tag = port, interval, tag
        self.latencies = []
        self.by_request = {}     # "GET /healthz" -> latencies
        self.failures = []
        self.stop = threading.Event()

    def note(self, name, seconds):
        self.latencies.append(seconds)
        self.by_request.setdefault(name, []).append(seconds)

    def one(self, k):
        s = connect("127.0.0.1", self.port, "127.0.0.1", timeout=10.0)
        try:
            jid = f"slow-{os.getpid()}-{self.tag}-{k}"
            steps = [("GET", "/healthz", None, 200),
                     ("POST", "/jobs", {"job_id": jid, "job_id_prefix": "slow",
                                        "batch_sizes": [8, 16, 32], "default_batch_size": 16,
                                        "max_power": 300.0, "number_of_gpus": 1,
                                        "gpu_model": "bench", "max_epochs": 3}, 201),
                     ("GET", f"/jobs/batch_size?job_id={jid}", None, 200)]
            trial = None
            for method, path, body, want in steps:
                t0 = time.monotonic()
                status, answer = request(s, method, path, body)
                self.note(f"{method} {path.split('?')[0]}", time.monotonic() - t0)
                if status != want:
                    self.failures.append(f"{method} {path}: {status} {answer[:200]!r}")
                    return
                if path.startswith("/jobs/batch_size"):
                    trial = json.loads(answer)
            t0 = time.monotonic()
            status, answer = request(s, "POST", "/report", dict(
                trial, time=10.0, energy=2000.0, metric=0.1, current_epoch=1))
            self.note("POST /report", time.monotonic() - t0)
            if status != 200:
                self.failures.append(f"POST /report: {status} {answer[:200]!r}")
        finally:
            s.close()

    def run(self):
        k = 0
        while not self.stop.is_set():
            try:
                self.one(k)
            except (OSError, ValueError) as e:
                self.failures.append(f"sequence {k}: {e!r}")
            k += 1
            self.stop.wait(self.interval)


class Body:
    """One slow body: its socket, kind, when its head was sent, what came back."""

    def __init__(self, sock, kind, declared, sent, t_head):
        self.sock, self.kind, self.declared, self.sent = sock, kind, declared, sent
        self.t_head = t_head
        self.t_closed = None
        self.answer = b""

    def status(self):
        if not self.answer.startswith(b"HTTP/1.1 "):
            return None
        return int(self.answer.split(b" ")[1])


def open_body(port, src, kind, declared, burst):
    s = connect("127.0.0.1", port, src, timeout=10.0)
    head = (f"POST /report HTTP/1.1\r\nHost: b\r\nContent-Type: application/json\r\n"
            f"Content-Length: {declared}\r\n\r\n").encode()
    t = time.monotonic()
    b = Body(s, kind, declared, 0, t)
    try:
        s.sendall(head + b" " * burst)
        b.sent = burst
    except OSError:
        pass  # refused at once: the answer (or the close) is read below
    s.setblocking(False)
    return b


def run(a):
    tmp = tempfile.mkdtemp(prefix="zbso-slowbody-")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    proc, port, log = start_server(a.zbso, tmp, a.body_timeout)
    p = Proc(proc.pid)
    sampler = fresh = None
    bodies = []
    try:
        rss_before = p.status()["VmRSS"]
        alone = None
        if a.baseline > 0:
            # The same client with no slow body open: what this machine gives anyway.
            alone = Fresh(port, a.fresh_interval, "alone")
            alone.start()
            time.sleep(a.baseline)
            alone.stop.set()
            alone.join(30)
        sampler = Sampler(p)
        sampler.start()
        fresh = Fresh(port, a.fresh_interval, "attack")
        fresh.start()
        t_start = time.monotonic()
        for k in range(a.bodies):
            src = f"127.0.0.{k % a.addresses + 1}"
            big = k % 2 == 0
            bodies.append(open_body(port, src, "big" if big else "small",
                                    a.declared if big else 1000, a.burst if big else 10))
        t_opened = time.monotonic()
        sel = selectors.DefaultSelector()
        for b in bodies:
            sel.register(b.sock, selectors.EVENT_READ, b)
        open_n = len(bodies)
        deadline = t_start + a.body_timeout + a.slack + 10
        next_trickle = time.monotonic()
        while open_n and time.monotonic() < deadline:
            now = time.monotonic()
            if now >= next_trickle:
                for b in bodies:
                    if b.t_closed is None and b.sent < b.declared - 1:
                        try:
                            b.sent += b.sock.send(b" ")
                        except (BlockingIOError, InterruptedError):
                            pass
                        except OSError:
                            pass  # closed: the read side says so
                next_trickle = now + a.interval
            for key, _ in sel.select(timeout=max(0.0, min(0.05, next_trickle - now))):
                b = key.data
                try:
                    data = b.sock.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if data:
                    b.answer += data
                    continue
                b.t_closed = time.monotonic()
                sel.unregister(b.sock)
                b.sock.close()
                open_n -= 1
        t_end = time.monotonic()
        fresh.stop.set()
        fresh.join(30)
        sampler.stop.set()
        sampler.join(5)
        hwm = p.status()["VmHWM"]
    finally:
        if fresh:
            fresh.stop.set()
        if sampler:
            sampler.stop.set()
        for b in bodies:
            if b.t_closed is None:
                b.sock.close()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    with open(log, "rb") as f:
        late_lines = [l for l in f.read().split(b"\n") if b"answered 408" in l]

    limit = a.body_timeout + a.slack
    print(f"zbso serve --body-timeout {a.body_timeout}: {a.bodies} slow bodies from "
          f"{a.addresses} addresses (127.0.0.1-{a.addresses}), opened in "
          f"{t_opened - t_start:.2f} s, the last closed {t_end - t_start:.2f} s after the first")
    ok = True
    for kind in ("big", "small"):
        of = [b for b in bodies if b.kind == kind]
        if not of:
            continue
        by = {}
        for b in of:
            by.setdefault(b.status(), []).append(b)
        parts = []
        for st in sorted(by, key=lambda x: -1 if x is None else x):
            lives = [b.t_closed - b.t_head for b in by[st] if b.t_closed is not None]
            span = (f", closed {min(lives):.2f}-{max(lives):.2f} s after the head"
                    if lives else "")
            parts.append(f"{len(by[st])} answered {st if st else 'nothing'}{span}")
        declared = of[0].declared
        print(f"  {kind} (Content-Length {declared}): " + "; ".join(parts))
    not_closed = [b for b in bodies if b.t_closed is None]
    late = [b for b in bodies if b.t_closed is not None and b.t_closed - b.t_head > limit]
    unanswered = [b for b in bodies if b.status() not in (408, 503)]
    print(f"  closed by the deadline (body timeout + {a.slack:g} s = {limit:g} s after the "
          f"head): {a.bodies - len(not_closed) - len(late)} of {a.bodies}; still open at the "
          f"end {len(not_closed)}; answered neither 408 nor 503: {len(unanswered)}")
    print(f"  server log lines about 408s: {len(late_lines)}")
    print(f"server RSS: {rss_before / 1024:.1f} MiB before, peak {sampler.peak_kib / 1024:.1f} "
          f"MiB (VmHWM {hwm / 1024:.1f} MiB)")
    if alone and alone.latencies:
        print(f"fresh client alone first ({a.baseline:g} s, no slow body): "
              f"{fmt_ms(alone.latencies)}; failed: {len(alone.failures)}")
        for name, values in alone.by_request.items():
            print(f"  {name}: {fmt_ms(values)}")
    lat = fresh.latencies
    if lat:
        print(f"fresh client with the slow bodies open (new connection every "
              f"{a.fresh_interval:g} s; GET /healthz, POST /jobs, GET /jobs/batch_size, "
              f"POST /report each timed): {fmt_ms(lat)}; failed: {len(fresh.failures)}")
        for name, values in fresh.by_request.items():
            print(f"  {name}: {fmt_ms(values)}")
    for f in fresh.failures[:5]:
        print(f"  fresh client failure: {f}")
    if not_closed or late:
        ok = False
    if unanswered:
        ok = False
    if sampler.peak_kib / 1024 >= a.rss_max_mb * 1e6 / 2 ** 20:
        ok = False
    if not lat or fresh.failures or pct(lat, 99) * 1e3 >= a.p99_max_ms:
        ok = False
    print(f"targets (RSS < {a.rss_max_mb:g} MB, every body closed by the deadline and "
          f"answered, fresh p99 < {a.p99_max_ms:g} ms): {'met' if ok else 'NOT met'}")
    return 0 if ok or not a.check else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--zbso", required=True, help="the zbso binary")
    ap.add_argument("--bodies", type=int, default=1000)
    ap.add_argument("--addresses", type=int, default=4, help="source addresses 127.0.0.1-N")
    ap.add_argument("--body-timeout", type=float, default=30.0)
    ap.add_argument("--declared", type=int, default=1 << 20,
                    help="Content-Length of the big bodies")
    ap.add_argument("--burst", type=int, default=96 * 1024,
                    help="bytes a big body sends at once")
    ap.add_argument("--interval", type=float, default=1.0,
                    help="seconds between the bytes each body sends afterwards")
    ap.add_argument("--fresh-interval", type=float, default=0.05)
    ap.add_argument("--baseline", type=float, default=10.0,
                    help="seconds the fresh client runs alone first (0: not at all)")
    ap.add_argument("--slack", type=float, default=2.0,
                    help="seconds past the body timeout a body may take to be closed")
    ap.add_argument("--rss-max-mb", type=float, default=128.0)
    ap.add_argument("--p99-max-ms", type=float, default=10.0)
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    a = ap.parse_args()
    if not 1 <= a.addresses <= 250 or a.bodies < 1:
        ap.error("--addresses must be 1..250 and --bodies at least 1")
    sys.exit(run(a))


if __name__ == "__main__":
    main()
