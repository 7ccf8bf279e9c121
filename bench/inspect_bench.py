#!/usr/bin/env python3
"""inspect_bench.py: the inspection figures of docs/BENCHMARKS.md (issue 11, done-when 5).

Starts `zbso serve` on a fresh database, fills one job with N trials (default 20,000: each
a GET /jobs/batch_size, a continuing report and a final one, so 2 curve points per trial)
over keep-alive connections, then measures on loopback:
  1. GET /jobs/{job_id}, GET /jobs/{job_id}/trials?limit=1000, GET /jobs and a trial with
     its curve, each REPEAT times one after another: median and max (ms);
  2. zbso-loadgen at K jobs for DURATION s alone, then again while READERS clients read
     GET /jobs/{job_id} of the big job back to back, then every PAUSE s (a dashboard):
     throughput and p99 of each run against the run alone, and how many reads were
     answered meanwhile.
usage: bench/inspect_bench.py [--build build] [--trials 20000] [--k 8] [--duration 10]
       [--readers 1] [--pause 0.2] [--rounds 3] [--db URL]
Standard library only; traffic only to 127.0.0.1."""

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def start_server(zbso, db, tmp):
    out = open(os.path.join(tmp, "serve.out"), "w+")
    log = open(os.path.join(tmp, "serve.log"), "w")
    proc = subprocess.Popen([zbso, "serve", "--port", "0", "--db", db, "--log-level", "WARN"],
                            stdout=out, stderr=log)
    for _ in range(400):
        out.seek(0)
        m = re.search(r"listening on http://([\d.]+):(\d+)", out.read())
        if m:
            return proc, m.group(1), int(m.group(2))
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("zbso serve did not start")


class Conn:
    def __init__(self, host, port):
        self.c = http.client.HTTPConnection(host, port, timeout=120)

    def req(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        hdrs = {"Content-Type": "application/json"} if data else {}
        self.c.request(method, path, body=data, headers=hdrs)
        r = self.c.getresponse()
        raw = r.read()
        if r.status >= 300:
            raise RuntimeError(f"{method} {path}: {r.status} {raw[:200]!r}")
        return raw


def fill(host, port, job, trials, threads=4):
    c = Conn(host, port)
    c.req("POST", "/jobs", {"job_id": job, "job_id_prefix": "big", "batch_sizes": [8, 16, 32, 64],
                            "default_batch_size": 16, "max_power": 300.0, "number_of_gpus": 1,
                            "gpu_model": "bench", "beta_knob": None, "target_metric": 0.5,
                            "max_epochs": 10, "num_pruning_rounds": 2, "mab_seed": 1})
    left = [trials]
    lock = threading.Lock()

    def worker():
        c = Conn(host, port)
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            t = json.loads(c.req("GET", f"/jobs/batch_size?job_id={job}"))
            bs, tn = t["batch_size"], t["trial_number"]
            per = 2.0 + 256.0 / bs
            for epoch, metric in ((1, 0.3), (2, 0.6)):
                c.req("POST", "/report", {"job_id": job, "batch_size": bs, "trial_number": tn,
                                          "time": per * epoch, "energy": 250.0 * per * epoch,
                                          "metric": metric, "current_epoch": epoch})

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def timed(c, path, repeat):
    ms = []
    size = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        size = len(c.req("GET", path))
        ms.append((time.perf_counter() - t0) * 1000)
    return statistics.median(ms), max(ms), size


def loadgen(binary, host, port, k, duration):
    out = subprocess.run([binary, "--url", f"http://{host}:{port}", "--jobs", str(k),
                          "--duration", str(duration)], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(r"^all\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", out, re.M)
    return float(m.group(2)), float(m.group(5))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--trials", type=int, default=20000)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--readers", type=int, default=1)
    ap.add_argument("--pause", type=float, default=0.2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--db", default="")
    a = ap.parse_args()
    zbso = os.path.join(a.build, "src/cli/zbso")
    lg = os.path.join(a.build, "bench/zbso-loadgen")
    with tempfile.TemporaryDirectory(prefix="zbso-ib-") as tmp:
        db = a.db or f"sqlite:///{tmp}/bench.db"
        proc, host, port = start_server(zbso, db, tmp)
        try:
            print(f"zbso serve on {db.split('@')[-1]}, {os.cpu_count()} cores, load average "
                  f"{open('/proc/loadavg').read().split()[:3]}")
            t0 = time.monotonic()
            fill(host, port, "big-1", a.trials)
            print(f"filled big-1 with {a.trials} trials in {time.monotonic() - t0:.1f} s")
            time.sleep(1)  # the curve points' flush
            c = Conn(host, port)
            for path in ("/jobs/big-1", "/jobs/big-1/trials?limit=1000", "/jobs",
                         f"/jobs/big-1/trials/{a.trials // 2}"):
                med, mx, size = timed(c, path, a.repeat)
                print(f"GET {path:34s} median {med:7.2f} ms  max {mx:7.2f} ms  "
                      f"({size} bytes, {a.repeat} requests)")
            def with_readers(pause):
                """loadgen while a.readers clients read GET /jobs/big-1, each waiting pause
                seconds between reads (0: back to back)."""
                stop = threading.Event()
                reads = [0]

                def reader():
                    rc = Conn(host, port)
                    while not stop.is_set():
                        rc.req("GET", "/jobs/big-1")
                        reads[0] += 1
                        stop.wait(pause)
                rs = [threading.Thread(target=reader) for _ in range(a.readers)]
                for r in rs:
                    r.start()
                got = loadgen(lg, host, port, a.k, a.duration)
                stop.set()
                for r in rs:
                    r.join()
                return got, reads[0]

            # Interleaved rounds (alone, paced, back to back), so that a machine that
            # slows down or a database that grows weighs on every kind alike; medians.
            runs = {"alone": [], "paced": [], "b2b": []}
            reads = {"paced": 0, "b2b": 0}
            for _ in range(a.rounds):
                runs["alone"].append(loadgen(lg, host, port, a.k, a.duration))
                for kind, pause in (("paced", a.pause), ("b2b", 0.0)):
                    got, n = with_readers(pause)
                    runs[kind].append(got)
                    reads[kind] += n
            med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v))
                   for k, v in runs.items()}
            for k, v in runs.items():
                print(f"loadgen K={a.k} {k:5s} runs: " +
                      ", ".join(f"{x[0]:.0f} req/s p99 {x[1]:.3f} ms" for x in v))
            base = med["alone"]
            print(f"median alone: {base[0]:.1f} req/s, p99 {base[1]:.3f} ms")
            for k, what in (("paced", f"a reader every {a.pause} s"), ("b2b", "a reader back to back")):
                m = med[k]
                print(f"median with {what} ({reads[k]} reads of GET /jobs/big-1 in all): "
                      f"{m[0]:.1f} req/s, p99 {m[1]:.3f} ms; ratio to alone: throughput "
                      f"{m[0] / base[0]:.3f}, p99 {m[1] / base[1]:.3f}")
        finally:
            proc.terminate()
            proc.wait(timeout=60)


if __name__ == "__main__":
    sys.exit(main())
