"""drive.py: a seeded, sequential workload through one or more zbso servers, and the state
it leaves, both free of timestamps, so that runs can be compared exactly: the same
workload on a fresh database gives the same answers whichever servers (host binary,
container, replicas) answer it. Used in-process by the deploy tests and, for servers in a
pod's network namespace, as a command run there through nsenter:

  python3 drive.py --port 8000 [--token T] play PREFIX JOBS FIRST_TRIAL LAST_TRIAL
  python3 drive.py --port 8000 [--token T] state PREFIX JOBS

Each prints one JSON document. Standard library only; 127.0.0.1 only."""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
from deployutil import Http  # noqa: E402
from workload import report_body, seeded_specs  # noqa: E402

MAX_EPOCHS = 4


def _strip_times(doc):
    """doc without the wall-clock fields (start/end times, lease renewals, creation)."""
    if isinstance(doc, dict):
        return {k: _strip_times(v) for k, v in doc.items()
                if not (k.endswith("_time") or k.endswith("_at"))}
    if isinstance(doc, list):
        return [_strip_times(v) for v in doc]
    return doc


def play(clients, prefix, jobs, first_trial, last_trial):
    """Registers jobs PREFIX-0..PREFIX-(jobs-1) when first_trial is 0, then runs trials
    first_trial..last_trial-1 of each job in turn: ask for a batch size, report epochs
    until told to stop. Request i goes to clients[i % len(clients)]. Returns the list of
    [method, path, status, answer] in order; raises AssertionError on any non-2xx."""
    specs = seeded_specs(prefix, jobs)
    log = []
    n = [0]

    def call(method, path, body=None):
        c = clients[n[0] % len(clients)]
        n[0] += 1
        status, doc = c.request(method, path, body)
        log.append([method, path, status, _strip_times(doc)])
        if not 200 <= status < 300:
            raise AssertionError(f"{method} {path} on port {c.port}: {status} {doc}")
        return doc

    if first_trial == 0:
        for s in specs:
            call("POST", "/jobs", s)
    for _ in range(first_trial, last_trial):
        for s in specs:
            jid = s["job_id"]
            got = call("GET", f"/jobs/batch_size?job_id={jid}")
            bs, tn = got["batch_size"], got["trial_number"]
            for epoch in range(1, MAX_EPOCHS + 1):
                if call("POST", "/report", report_body(jid, bs, tn, epoch))["stop_train"]:
                    break
    return log


def state(client, prefix, jobs):
    """What the server holds about the jobs of play(): each job's document and trials,
    without timestamps."""
    out = {}
    for k in range(jobs):
        jid = f"{prefix}-{k}"
        s1, job = client.get(f"/jobs/{jid}")
        s2, trials = client.get(f"/jobs/{jid}/trials")
        if s1 != 200 or s2 != 200:
            raise AssertionError(f"GET /jobs/{jid}[/trials] on port {client.port}: "
                                 f"{s1} {job} / {s2} {trials}")
        job.pop("updated_at", None)
        out[jid] = {"job": _strip_times(job), "trials": _strip_times(trials)}
    return out


def reference(prefix, jobs, trials):
    """(play log, state) of the same workload through the host's own zbso (ZBSO_BIN) on a
    fresh SQLite database: what every deployment must answer."""
    import tempfile
    from zbsoserver import Server, SqliteDatabase
    with tempfile.TemporaryDirectory(prefix="zbso-ref-") as d:
        srv = Server(tmpdir=d, database=SqliteDatabase(os.path.join(d, "ref.db"))).start()
        try:
            c = Http(srv.port)
            log = play([c], prefix, jobs, 0, trials)
            return log, state(c, prefix, jobs)
        finally:
            srv.terminate()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--token")
    ap.add_argument("--wait", type=float, default=0.0,
                    help="first wait this many seconds for /healthz")
    ap.add_argument("what", choices=["play", "state"])
    ap.add_argument("args", nargs="+")
    a = ap.parse_args()
    c = Http(a.port, a.token)
    waited = c.wait_healthy(a.wait) if a.wait else None
    if a.what == "play":
        prefix, jobs, first, last = a.args[0], *map(int, a.args[1:4])
        doc = play([c], prefix, jobs, first, last)
    else:
        doc = state(c, a.args[0], int(a.args[1]))
    json.dump({"waited_s": waited, "result": doc}, sys.stdout)


if __name__ == "__main__":
    main()
