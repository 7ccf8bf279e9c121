#!/usr/bin/env python3
"""connbench.py: the connection benchmark of docs/BENCHMARKS.md against a running `zbso
serve` (standard library only; loopback only).

Default mode: opens IDLE keep-alive connections (each makes one GET /healthz, then stays
idle) and keeps SLOW slowloris connections open (each sends one byte of a request head
every INTERVAL seconds; one that the server closes is replaced at once, as an attacker
would), then, with all of them open, measures a fresh client SEQUENCES times: a new
connection's GET /healthz, then on it POST /jobs, GET /jobs/batch_size and POST /report
(and the same SEQUENCES times first with no other connection open, as a baseline).
Prints the latencies (p50, p99, max), how long the slowloris connections lived, the
server's memory (VmRSS, VmHWM) and threads from /proc/PID/status, its CPU time, and its
log lines per second during the measurement (all, and those not from the request log).

--flood N: instead opens N connections one after another, each sending GET /healthz and
staying open, while an established keep-alive client keeps asking; prints how many were
served and refused, the keep-alive client's latencies, the server's CPU and log lines.

Connections come from many loopback source addresses (127.0.0.0/8 is all loopback), at
most PER_ADDRESS per address, to stay under the server's per-address limit."""

import argparse
import json
import os
import resource
import selectors
import socket
import statistics
import threading
import time
import urllib.parse


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def fmt_ms(values):
    return (f"p50 {pct(values, 50) * 1e3:.2f} ms, p99 {pct(values, 99) * 1e3:.2f} ms, "
            f"max {max(values) * 1e3:.2f} ms (n={len(values)})")


class Proc:
    """The server's figures from /proc."""

    def __init__(self, pid):
        self.pid = pid

    def status(self):
        out = {}
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "Threads"):
                    out[k] = int(v.split()[0])
        return out

    def cpu_s(self):
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Log:
    """Counts the server log's lines from a mark on."""

    def __init__(self, path):
        self.path = path
        self.mark()

    def mark(self):
        self.pos = os.path.getsize(self.path) if self.path else 0

    def lines(self):
        if not self.path:
            return [], []
        with open(self.path, "rb") as f:
            f.seek(self.pos)
            lines = f.read().split(b"\n")[:-1]
        other = [l for l in lines
                 if not any(f" INFO {m} /".encode() in l
                            for m in ("GET", "POST", "PATCH", "DELETE"))]
        return lines, other


def source(k, per_address, second_octet):
    n = k // per_address
    return f"127.{second_octet}.{n // 250}.{n % 250 + 1}"


def connect(host, port, src, timeout=30.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect((host, port))
    return s


def request(s, method, path, body=None):
    """One request on s; returns (status, body). Raises OSError when the server closes."""
    data = json.dumps(body).encode() if body is not None else b""
    ctype = "Content-Type: application/json\r\n" if body is not None else ""
    s.sendall(f"{method} {path} HTTP/1.1\r\nHost: b\r\n{ctype}"
              f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    buf = b""
    while b"\r\n\r\n" not in buf:
        b = s.recv(65536)
        if not b:
            raise ConnectionResetError("closed")
        buf += b
    head, _, rest = buf.partition(b"\r\n\r\n")
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    while len(rest) < n:
        b = s.recv(65536)
        if not b:
            raise ConnectionResetError("closed")
        rest += b
    return int(head.split(b" ")[1]), rest[:n]


class Slowloris(threading.Thread):
    """Keeps `count` connections sending a request head one byte per `interval` s."""

    HEAD = b"GET /healthz HTTP/1.1\r\nHost: b\r\nX-Slow: " + b"a" * 100000

    def __init__(self, host, port, count, interval, per_address):
        super().__init__(daemon=True)
        self.host, self.port = host, port
        self.count, self.interval, self.per_address = count, interval, per_address
        self.lives = []          # seconds from first byte to being closed
        self.refused = 0
        self.open_now = 0
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.sel = selectors.DefaultSelector()
        self.next_k = 0

    def open_one(self, now, due):
        src = source(self.next_k % (self.count * 4), self.per_address, 3)
        self.next_k += 1
        try:
            s = connect(self.host, self.port, src, timeout=5)
            s.setblocking(False)
            s.send(self.HEAD[:1])
        except OSError:
            self.refused += 1
            return None
        st = {"sock": s, "first": now, "sent": 1, "due": due}
        self.sel.register(s, selectors.EVENT_READ, st)
        return st

    def close(self, st, now):
        self.sel.unregister(st["sock"])
        st["sock"].close()
        self.lives.append(now - st["first"])

    def run(self):
        conns = []
        t0 = time.monotonic()
        for i in range(self.count):
            st = self.open_one(time.monotonic(),
                               t0 + self.interval * (1 + i / self.count))
            if st:
                conns.append(st)
        self.ready.set()
        while not self.stop.is_set():
            now = time.monotonic()
            for key, _ in self.sel.select(timeout=0.05):
                st = key.data
                try:
                    data = st["sock"].recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    self.close(st, now)
                    st["dead"] = True
            alive = []
            for st in conns:
                if st.get("dead"):
                    new = self.open_one(now, now + self.interval)
                    if new:
                        alive.append(new)
                    continue
                if now >= st["due"]:
                    try:
                        st["sock"].send(self.HEAD[st["sent"]:st["sent"] + 1])
                        st["sent"] += 1
                        st["due"] = now + self.interval
                    except OSError:
                        self.close(st, now)
                        new = self.open_one(now, now + self.interval)
                        if new:
                            alive.append(new)
                        continue
                alive.append(st)
            while len(alive) < self.count and not self.stop.is_set():
                new = self.open_one(now, now + self.interval)
                if not new:
                    break
                alive.append(new)
            conns = alive
            self.open_now = len(conns)
        for st in conns:
            st["sock"].close()


def open_idle(host, port, n, per_address):
    socks = []
    t0 = time.monotonic()
    for k in range(n):
        s = connect(host, port, source(k, per_address, 2))
        status, _ = request(s, "GET", "/healthz")
        if status != 200:
            raise SystemExit(f"idle connection {k}: status {status}")
        socks.append(s)
    return socks, time.monotonic() - t0


def still_open(socks):
    """How many of socks the server has not closed."""
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    closed = len(sel.select(timeout=0.1))
    sel.close()
    return len(socks) - closed


def fresh_sequence(host, port, k):
    t0 = time.monotonic()
    s = connect(host, port, "127.0.0.1")
    try:
        status, _ = request(s, "GET", "/healthz")
        t1 = time.monotonic()
        assert status == 200, status
        jid = f"conn-{os.getpid()}-{k}"
        status, _ = request(s, "POST", "/jobs", {
            "job_id": jid, "job_id_prefix": "conn", "batch_sizes": [8, 16, 32],
            "default_batch_size": 16, "max_power": 300.0, "number_of_gpus": 1,
            "gpu_model": "bench", "max_epochs": 3})
        assert status == 201, status
        status, body = request(s, "GET", f"/jobs/batch_size?job_id={jid}")
        assert status == 200, status
        trial = json.loads(body)
        status, _ = request(s, "POST", "/report", dict(
            trial, time=10.0, energy=2000.0, metric=0.1, current_epoch=1))
        assert status == 200, status
        t2 = time.monotonic()
    finally:
        s.close()
    return t1 - t0, t2 - t1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--pid", type=int, required=True, help="the server's process id")
    ap.add_argument("--log", default="", help="the server's log file")
    ap.add_argument("--idle", type=int, default=10000)
    ap.add_argument("--slow", type=int, default=1000)
    ap.add_argument("--interval", type=float, default=5.0)
    ap.add_argument("--sequences", type=int, default=200)
    ap.add_argument("--pace", type=float, default=0.05, help="seconds between sequences")
    ap.add_argument("--per-address", type=int, default=100)
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--flood", type=int, default=0)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    u = urllib.parse.urlsplit(a.url)
    host, port = u.hostname, u.port
    proc = Proc(a.pid)
    log = Log(a.log)
    if a.flood:
        return flood(a, host, port, proc, log)

    st0 = proc.status()
    base_h, base_q = [], []
    for k in range(a.sequences):
        h, q = fresh_sequence(host, port, -1 - k)
        base_h.append(h)
        base_q.append(q)
        time.sleep(a.pace / 5)
    print(f"baseline, no other connection: GET /healthz {fmt_ms(base_h)}; "
          f"register + batch size + report {fmt_ms(base_q)}")
    idle, idle_s = open_idle(host, port, a.idle, a.per_address)
    print(f"{a.idle} idle keep-alive connections open in {idle_s:.1f} s; server "
          f"{proc.status()}")
    slow = Slowloris(host, port, a.slow, a.interval, a.per_address)
    slow.start()
    slow.ready.wait()
    time.sleep(a.settle)
    print(f"{slow.open_now} slowloris connections open; server {proc.status()}")
    log.mark()
    cpu0, t0 = proc.cpu_s(), time.monotonic()
    health, seq = [], []
    peak = proc.status()
    for k in range(a.sequences):
        h, q = fresh_sequence(host, port, k)
        health.append(h)
        seq.append(q)
        if k % 20 == 0:
            s = proc.status()
            peak = {key: max(peak[key], s[key]) for key in s}
            open_slow = slow.open_now
        time.sleep(a.pace)
    elapsed = time.monotonic() - t0
    cpu = proc.cpu_s() - cpu0
    lines, other = log.lines()
    open_idle_n = still_open(idle)
    slow.stop.set()
    slow.join(10)
    final = proc.status()
    print(f"fresh client GET /healthz (new connection): {fmt_ms(health)}")
    print(f"fresh client register + batch size + report:  {fmt_ms(seq)}")
    print(f"during the {elapsed:.1f} s of measurement: {open_idle_n} of {a.idle} idle and "
          f"about {open_slow} slowloris connections open; server CPU {cpu:.2f} s; server "
          f"log {len(lines) / elapsed:.1f} lines/s, of which {len(other) / elapsed:.2f} "
          f"lines/s not from the request log")
    if other:
        print("  log lines not from the request log (first 5):")
        for l in other[:5]:
            print("   ", l.decode("utf-8", "replace")[:200])
    lives = slow.lives
    if lives:
        print(f"slowloris connections closed by the server: {len(lives)}, lived "
              f"min {min(lives):.1f} s, median {statistics.median(lives):.1f} s, "
              f"max {max(lives):.1f} s; {slow.refused} reconnects refused")
    else:
        print("slowloris connections closed by the server: none")
    print(f"server memory: before {st0['VmRSS'] / 1024:.1f} MiB RSS; peak during "
          f"{peak['VmRSS'] / 1024:.1f} MiB RSS, VmHWM {final['VmHWM'] / 1024:.1f} MiB; "
          f"threads {peak['Threads']}")
    for s in idle:
        s.close()


def flood(a, host, port, proc, log):
    ka = connect(host, port, "127.0.0.1")
    request(ka, "GET", "/healthz")
    cpu0 = proc.cpu_s()
    socks, served, refused, ka_lat = [], 0, 0, []
    t0 = time.monotonic()
    for k in range(a.flood):
        try:
            s = connect(host, port, source(k, a.per_address, 4), timeout=10)
            socks.append(s)
            status, _ = request(s, "GET", "/healthz")
            served += status == 200
        except OSError:
            refused += 1
        if k % 10 == 0:
            t = time.monotonic()
            request(ka, "GET", "/healthz")
            ka_lat.append(time.monotonic() - t)
    flood_s = time.monotonic() - t0
    cpu1 = proc.cpu_s()
    st = proc.status()
    t1 = time.monotonic()
    while time.monotonic() - t1 < 5.0:
        t = time.monotonic()
        request(ka, "GET", "/healthz")
        ka_lat.append(time.monotonic() - t)
        time.sleep(0.05)
    cpu2 = proc.cpu_s()
    lines, other = log.lines()
    print(f"flood of {a.flood} connections in {flood_s:.1f} s: {served} served and held, "
          f"{refused} refused (closed at once)")
    print(f"server CPU {cpu1 - cpu0:.2f} s during the flood, {cpu2 - cpu1:.2f} s in the "
          f"5 s after; {st['Threads']} threads, {st['VmRSS'] / 1024:.1f} MiB RSS")
    print(f"established keep-alive client GET /healthz throughout: {fmt_ms(ka_lat)}")
    print(f"server log: {len(lines)} lines in all ({len(other)} not from the request log)")
    for l in other[:5]:
        print("   ", l.decode("utf-8", "replace")[:200])
    for s in socks:
        s.close()


if __name__ == "__main__":
    main()
