"""simreplay.py: replays one workload of `zbso simulate` (docs/SIMULATION.md) through a
real zbso server over HTTP, as the training clients of a recurring job would: each
recurrence asks for a batch size, trains on a path sampled from the Zeus traces
(data/traces) reporting every epoch (cumulative time and energy, the path's metric), stops
when the server says so, and retries until a run reaches the target (at most 20 tries).
Unlike the simulator, which sends one report per run, every epoch is reported, so the
server's own early stopping ends the runs and every trial has a learning curve.

The model is the simulator's: the workload presets, the feasible batch sizes (the power
trace's that have training paths at the target), the default capped at the largest batch
size, just-in-time power-limit profiling (a batch size's first run spends its first epoch
at the mean over its power limits, then the limit minimising eta*P + (1-eta)*max_power
per unit of time, the higher limit on ties). The metric at an epoch is the highest
threshold of summary_train.csv the sampled path has reached by then.

Time can be compressed (each epoch sleeps its trace time / speedup) and several
recurrences can run at once (parallel), which gives Concurrent trials and a timeline with
trials side by side. Standard library only; traffic only to the server given.

    python3 tests/integration/simreplay.py --url http://127.0.0.1:8000 \\
        --workload cifar100 --gpu v100 --eta 0.5 --seed 1 --recurrences 60 \\
        --speedup 2000 --parallel 2
"""

import argparse
import csv
import http.client
import json
import math
import os
import random
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "data", "traces")
MAX_TRIES = 20

# name: (dataset, network, optimizer, target, higher is better, max epochs, default bs),
# as src/sim/workload.c has them.
PRESETS = {
    "cifar100": ("cifar100", "shufflenetv2", "adadelta", 0.60, True, 100, 1024),
    "imagenet": ("imagenet", "resnet50", "adadelta", 0.65, True, 100, 256),
    "squad": ("squad", "bert_base_uncased", "adamw", 84.0, True, 6, 32),
    "librispeech": ("librispeech", "deepspeech2", "adamw", 40.0, False, 16, 192),
    "movielens-1m": ("movielens-1m", "ncf", "adam", 0.41, True, 100, 1024),
    "sentiment140": ("sentiment140", "bert_base_uncased", "adamw", 0.84, True, 10, 128),
}


def _num(s):
    return math.nan if s.strip().lower() == "nan" else float(s)


class Workload:
    """A preset resolved against the traces of one GPU: batch sizes, their power limits
    (limit W -> (s per epoch, W average)) and training paths ({threshold: epoch or None})."""

    def __init__(self, name, gpu, traces=TRACES):
        if name not in PRESETS:
            raise ValueError(f"unknown workload {name!r}: one of {', '.join(PRESETS)}")
        (self.dataset, self.network, self.optimizer, self.target, self.higher,
         self.max_epochs, default_bs) = PRESETS[name]
        self.name, self.gpu = name, gpu
        key = (self.dataset, self.network, self.optimizer)
        power = {}
        path = os.path.join(traces, f"summary_power_{gpu}.csv")
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if (r["dataset"], r["network"], r["optimizer"]) == key:
                    power.setdefault(int(r["batch_size"]), {})[int(r["power_limit"])] = (
                        float(r["time_per_epoch"]), float(r["average_power"]))
        if not power:
            raise ValueError(f"{path} has no rows for {key}")
        paths = {}
        with open(os.path.join(traces, "summary_train.csv"), newline="") as f:
            for r in csv.DictReader(f):
                if (r["dataset"], r["network"], r["optimizer"]) != key:
                    continue
                bs = int(r["batch_size"])
                p = paths.setdefault(bs, {}).setdefault((r["learning_rate"], r["run"]), {})
                e = _num(r["target_epoch"])
                p[float(r["target_metric"])] = None if math.isnan(e) else int(e)
        self.power = {b: pl for b, pl in power.items()
                      if any(self.target in p for p in paths.get(b, {}).values())}
        self.paths = {b: [p for _, p in sorted(paths[b].items()) if self.target in p]
                      for b in self.power}
        self.batch_sizes = sorted(self.power)
        self.default_bs = min(default_bs, max(power))
        self.max_power = float(max(pl for b in power.values() for pl in b))

    def spec(self, eta, beta, seed):
        """The JobSpec zbso simulate registers for this workload and seed."""
        return {"job_id": f"sim-{self.name}-{self.gpu}-{seed}", "job_id_prefix": "sim",
                "batch_sizes": self.batch_sizes, "default_batch_size": self.default_bs,
                "eta_knob": eta, "beta_knob": beta, "target_metric": self.target,
                "higher_is_better_metric": self.higher, "max_epochs": self.max_epochs,
                "mab_seed": seed, "max_power": self.max_power, "number_of_gpus": 1,
                "gpu_model": self.gpu}

    def jit_limit(self, bs, eta):
        """The power limit JIT profiling settles on for bs."""
        pls = self.power[bs]
        return min(pls, key=lambda pl: ((eta * pls[pl][1] + (1 - eta) * self.max_power)
                                        * pls[pl][0], -pl))

    def metric(self, path, epoch):
        """The metric a path shows after epoch: the best threshold reached by then."""
        reached = [t for t, e in path.items() if e is not None and e <= epoch]
        if self.higher:
            return max(reached, default=0.0)
        return min(reached, default=2 * max(path))


class Replay:
    """Drives one job of workload w through the server at host:port."""

    def __init__(self, host, port, w, eta=0.5, beta=2.0, seed=1, recurrences=None,
                 speedup=0.0, parallel=1, token=None):
        self.host, self.port, self.w = host, port, w
        self.eta, self.beta, self.seed = eta, beta, seed
        self.recurrences = recurrences or 2 * len(w.batch_sizes) * len(
            next(iter(w.power.values())))
        self.speedup, self.parallel = speedup, parallel
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.spec = w.spec(eta, beta, seed)
        self.job_id = self.spec["job_id"]
        self._lock = threading.Lock()
        self._next_rec = 1
        self._profiled = {}
        self.errors = []
        self.trials = 0
        self.failed_recurrences = 0

    def _conn(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=60)

    def _call(self, conn, method, path, body=None):
        hdrs = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=hdrs)
        r = conn.getresponse()
        text = r.read()
        if r.status >= 300:
            raise RuntimeError(f"{method} {path}: {r.status} {text[:300]!r}")
        return json.loads(text)

    def run(self):
        """Registers the job and runs every recurrence; returns self. Failures are in
        self.errors (an empty list: every recurrence reached the target)."""
        conn = self._conn()
        try:
            self._call(conn, "POST", "/jobs", self.spec)
        finally:
            conn.close()
        threads = [threading.Thread(target=self._worker, args=(i,), daemon=True)
                   for i in range(self.parallel)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return self

    def _worker(self, i):
        rng = random.Random(self.seed * 7919 + i)
        conn = self._conn()
        try:
            while True:
                with self._lock:
                    rec = self._next_rec
                    self._next_rec += 1
                if rec > self.recurrences:
                    return
                for _ in range(MAX_TRIES):
                    if self._trial(conn, rng):
                        break
                else:
                    with self._lock:
                        self.failed_recurrences += 1
        except Exception as e:  # noqa: BLE001  (reported by the caller)
            self.errors.append(f"worker {i}: {type(e).__name__}: {e}")
        finally:
            conn.close()

    def _trial(self, conn, rng):
        """Runs one trial; returns whether it reached the target."""
        w = self.w
        q = urllib.parse.quote(self.job_id, safe="")
        t = self._call(conn, "GET", f"/jobs/batch_size?job_id={q}")
        bs, tn = t["batch_size"], t["trial_number"]
        with self._lock:
            profile = bs not in self._profiled
            pl = self._profiled.setdefault(bs, w.jit_limit(bs, self.eta))
            self.trials += 1
        path = rng.choice(w.paths[bs])
        pls = w.power[bs]
        time_s = energy_j = 0.0
        for epoch in range(1, w.max_epochs + 1):
            if profile and epoch == 1:
                dt = sum(v[0] for v in pls.values()) / len(pls)
                de = sum(v[0] * v[1] for v in pls.values()) / len(pls)
            else:
                dt, de = pls[pl][0], pls[pl][0] * pls[pl][1]
            time_s += dt
            energy_j += de
            if self.speedup:
                time.sleep(dt / self.speedup)
            r = self._call(conn, "POST", "/report", {
                "job_id": self.job_id, "batch_size": bs, "trial_number": tn, "time": time_s,
                "energy": energy_j, "metric": w.metric(path, epoch), "current_epoch": epoch})
            if r["stop_train"]:
                return bool(r["converged"])
        raise RuntimeError(f"trial {tn}: no stop after max_epochs {w.max_epochs}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="the server, http://HOST:PORT")
    ap.add_argument("--workload", default="cifar100", choices=sorted(PRESETS))
    ap.add_argument("--gpu", default="v100", choices=("v100", "a40"))
    ap.add_argument("--eta", type=float, default=0.5)
    ap.add_argument("--beta", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--recurrences", type=int, default=None,
                    help="default: 2 x batch sizes x power limits, as zbso simulate")
    ap.add_argument("--speedup", type=float, default=0.0,
                    help="sleep each epoch's trace time / SPEEDUP (0: no sleep)")
    ap.add_argument("--parallel", type=int, default=1, help="recurrences at once")
    ap.add_argument("--token", default=os.environ.get("ZEUS_BSO_API_TOKEN"))
    a = ap.parse_args(argv)
    u = urllib.parse.urlsplit(a.url)
    if u.scheme != "http" or not u.hostname:
        ap.error(f"--url {a.url!r} is not http://HOST:PORT")
    r = Replay(u.hostname, u.port or 80, Workload(a.workload, a.gpu), a.eta, a.beta, a.seed,
               a.recurrences, a.speedup, a.parallel, a.token).run()
    print(f"{r.job_id}: {r.recurrences} recurrences, {r.trials} trials, "
          f"{r.failed_recurrences} recurrences without a converged run")
    for e in r.errors:
        print(e, file=sys.stderr)
    return 1 if r.errors else 0


if __name__ == "__main__":
    sys.exit(main())
