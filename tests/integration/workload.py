"""workload.py: many concurrent training clients against real `zbso serve` processes, the
log of every request they made, and the checks run on that log: job versions, trial
numbers, a serial replay of each job's requests, and the acknowledged changes in the
database. Standard library only; traffic goes only to the servers' 127.0.0.1 addresses.

A client thread plays the training protocol of SPEC §2-3 over its own keep-alive
connection: register the jobs, then ask for a batch size, report each epoch until told to
stop, and sometimes fail the trial (PATCH /trials), repeat a report or end an ended trial.
Every request becomes one Record. A change is a 2xx answer that changed the job: 201 to
POST /jobs, 200 to GET /jobs/batch_size, a report that ended the trial, a PATCH of a
Dispatched trial; every other 2xx answer is a read of the version it carries."""

import http.client
import itertools
import json
import os
import random
import tempfile
import threading
import time

from zbsoserver import KeepAlive, Server, SqliteDatabase, job_spec

VERSION_HEADER = "X-Zbso-Job-Version"
SHM_DIR = "/dev/shm"

# Stored enums (src/core/types.h).
STATUS_DISPATCHED, STATUS_SUCCEEDED, STATUS_FAILED = 0, 1, 2

# batch size -> (epoch at which the metric reaches the target or None, s/epoch, W). With
# eta 0.5 and max_power 300 W the converged costs are 8: 22500, 16: 11000, 32: 8260 (times
# a per-trial factor of 1.0-1.4), so 16 and 32 always converge within beta >= 2 and pruning
# never runs out of batch sizes; 8 often ends over beta * min_cost; 64 never converges.
PROFILE = {8: (3, 30.0, 200.0), 16: (2, 20.0, 250.0), 32: (2, 14.0, 290.0),
           64: (None, 10.0, 300.0)}
MAX_EPOCHS = 4


def seeded_specs(prefix, n):
    """n seeded job specs (ids PREFIX-0 .. PREFIX-(n-1)) that reach the MAB stage after a
    few trials and differ in pruning rounds, explorations, beta and window."""
    specs = []
    for k in range(n):
        specs.append(job_spec(
            job_id=f"{prefix}-{k}", job_id_prefix=prefix, batch_sizes=[8, 16, 32, 64],
            default_batch_size=16, mab_seed=7919 * (k + 1), num_pruning_rounds=1 + k % 2,
            mab_num_explorations=k % 3, max_epochs=MAX_EPOCHS, target_metric=0.5,
            beta_knob=(2.0, 2.5, None)[k % 3], eta_knob=0.5, window_size=(0, 3)[k % 2],
            max_power=300.0))
    return specs


def report_body(job_id, bs, tn, epoch):
    """The cumulative TrainingResult of epoch `epoch` of trial tn (a pure function)."""
    conv_epoch, s_per_epoch, watts = PROFILE[bs]
    factor = 1.0 + 0.1 * ((tn * 7) % 5)
    reached = conv_epoch is not None and epoch >= conv_epoch
    time_s = epoch * s_per_epoch * factor
    return {"job_id": job_id, "batch_size": bs, "trial_number": tn, "time": time_s,
            "energy": time_s * watts, "metric": 0.6 if reached else 0.1 + 0.05 * epoch,
            "current_epoch": epoch}


class Record:
    """One request and what came back. status None: it failed on the wire (connection
    refused, reset or closed before an answer): unacknowledged."""

    __slots__ = ("seq", "thread", "job", "op", "method", "path", "body", "status", "resp",
                 "headers", "version", "error", "t0", "t1", "expect")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    @property
    def ok(self):
        return self.status is not None and 200 <= self.status < 300

    @property
    def json(self):
        try:
            return json.loads(self.resp) if self.resp else None
        except ValueError:
            return None

    @property
    def request_json(self):
        return json.loads(self.body) if self.body else None

    def kind(self):
        """'change' or 'read' for a 2xx answer (module docstring), None otherwise. A PATCH
        is classified by what the client knew (expect), the others by the answer."""
        if not self.ok:
            return None
        if self.op == "register":
            return "change" if self.status == 201 else "read"
        if self.op == "next":
            return "change"
        if self.expect == "fail-retry":
            return None  # a PATCH retried after a lost answer: either one
        if self.op == "report":
            j = self.json or {}
            ended = j.get("stop_train") is True and "already" not in j.get("message", "").lower()
            return "change" if ended else "read"
        return self.expect

    def __repr__(self):
        return (f"#{self.seq} t{self.thread} {self.method} {self.path} {self.body!r} -> "
                f"{self.status} v{self.version} {self.resp!r}")


class Workload:
    """Runs `threads` client threads over the jobs of `specs`. Thread i talks to
    addresses[i % len(addresses)] (callables giving (host, port), asked again at each new
    connection). Stops at duration_s or after max_trials dispatched trials, whichever is
    first. tolerate_wire_errors: a request that fails on the wire (a server being killed)
    is retried until it gets an answer; tolerate_503: a 503 is retried after its
    Retry-After. Otherwise such a failure ends the thread with an error. new_job_every: a
    thread registers a job of its own every N trials (0: never)."""

    def __init__(self, addresses, specs, threads=32, duration_s=15.0, max_trials=400,
                 seed=1, fail_p=0.08, repeat_p=0.06, tolerate_wire_errors=False,
                 tolerate_503=False, new_job_every=0, give_up_s=120.0):
        self.addresses = list(addresses)
        self.specs = {s["job_id"]: s for s in specs}
        self.threads = threads
        self.duration_s = duration_s
        self.max_trials = max_trials
        self.seed = seed
        self.fail_p = fail_p
        self.repeat_p = repeat_p
        self.tolerate_wire_errors = tolerate_wire_errors
        self.tolerate_503 = tolerate_503
        self.new_job_every = new_job_every
        self.give_up_s = give_up_s
        self.records = []
        self.errors = []
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._trials = 0
        self._stop = threading.Event()
        self.started = self.ended = None
        self.connects = 0

    # -- running -------------------------------------------------------------------------

    def run(self):
        """Runs every thread to its end; returns self.records (in completion order)."""
        self.started = time.monotonic()
        self._deadline = self.started + self.duration_s
        ts = [threading.Thread(target=self._thread, args=(i,), daemon=True)
              for i in range(self.threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(self.duration_s + self.give_up_s + 60)
            if t.is_alive():
                self.errors.append(f"thread {t.name} did not end")
        self.ended = time.monotonic()
        return self.records

    def stop(self):
        self._stop.set()

    def _thread(self, i):
        conn = KeepAlive(self.addresses[i % len(self.addresses)])
        try:
            self._play(i, conn)
        except Exception as e:  # noqa: BLE001  (any failure is reported by the test)
            self.errors.append(f"thread {i}: {type(e).__name__}: {e}")
        finally:
            conn.close()
            with self._lock:
                self.connects += conn.connects

    def _more(self):
        if self._stop.is_set() or time.monotonic() >= self._deadline:
            return False
        with self._lock:
            if self._trials >= self.max_trials:
                return False
            self._trials += 1
            return True

    def _play(self, i, conn):
        rng = random.Random(self.seed * 100003 + i)
        jobs = list(self.specs)
        for jid in rng.sample(jobs, len(jobs)):
            self._call(i, conn, jid, "register", "POST", "/jobs", self.specs[jid])
        own = 0
        n = 0
        while self._more():
            n += 1
            if self.new_job_every and n % self.new_job_every == 0:
                own += 1
                spec = job_spec(job_id=f"own-{self.seed}-{i}-{own}", job_id_prefix="own",
                                max_epochs=2)
                self._call(i, conn, spec["job_id"], "register", "POST", "/jobs", spec)
                jobs.append(spec["job_id"])
                self.specs[spec["job_id"]] = spec
            self._trial(i, conn, rng, rng.choice(jobs))

    def _trial(self, i, conn, rng, jid):
        r = self._call(i, conn, jid, "next", "GET", f"/jobs/batch_size?job_id={jid}")
        if r is None:
            return
        bs, tn = r.json["batch_size"], r.json["trial_number"]
        trial = {"job_id": jid, "batch_size": bs, "trial_number": tn}
        max_epochs = self.specs[jid].get("max_epochs", MAX_EPOCHS)
        fail_at = rng.randrange(max_epochs) if rng.random() < self.fail_p else None
        last = None
        for epoch in range(1, max_epochs + 1):
            if fail_at is not None and epoch > fail_at:
                self._call(i, conn, jid, "end", "PATCH", "/trials", trial, expect="change")
                return
            last = report_body(jid, bs, tn, epoch)
            r = self._call(i, conn, jid, "report", "POST", "/report", last)
            if r is None:
                return
            if r.json["stop_train"]:
                break
        else:
            raise AssertionError(f"{jid} trial {tn}: no stop after max_epochs: {r}")
        roll = rng.random()
        if roll < self.repeat_p:
            self._call(i, conn, jid, "report", "POST", "/report", last)
        elif roll < 2 * self.repeat_p:
            self._call(i, conn, jid, "end", "PATCH", "/trials", trial, expect="read")

    def _call(self, i, conn, jid, op, method, path, body=None, expect=None):
        """Sends one request (retrying as configured) and returns the Record of its last
        attempt when that was 2xx, else None (the failure is in self.errors)."""
        data = json.dumps(body).encode("utf-8") if body is not None else None
        give_up = self._deadline + self.give_up_s
        pause = 0.02
        while True:
            rec = Record(seq=None, thread=i, job=jid, op=op, method=method, path=path,
                         body=data, expect=expect, t0=time.monotonic())
            try:
                r = conn.request(method, path, data)
            except (OSError, http.client.HTTPException) as e:
                rec.error = f"{type(e).__name__}: {e}"
                r = None
            rec.t1 = time.monotonic()
            if r is not None:
                rec.status, rec.resp, rec.headers = r.status, r.body, r.headers
                v = r.headers.get(VERSION_HEADER)
                rec.version = int(v) if v is not None else None
            with self._lock:
                rec.seq = next(self._seq)
                self.records.append(rec)
            retry = ((r is None and self.tolerate_wire_errors)
                     or (r is not None and r.status == 503 and self.tolerate_503))
            if not retry:
                if rec.ok:
                    return rec
                raise AssertionError(f"unexpected answer: {rec!r} ({rec.error})")
            if op == "end":
                # The failed attempt may have ended the trial: the next one may only read.
                expect = "fail-retry" if expect == "change" else expect
            if time.monotonic() > give_up:
                raise AssertionError(f"no answer within {self.give_up_s} s after the end: "
                                     f"{rec!r} ({rec.error})")
            wait = pause
            if r is not None:
                try:
                    wait = max(wait, float(r.headers.get("Retry-After", "0")))
                except ValueError:
                    pass
            time.sleep(wait)
            pause = min(0.5, pause * 2)

    # -- figures -------------------------------------------------------------------------

    def figures(self):
        """A dict of counts for the test output."""
        statuses = {}
        for r in self.records:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        changes = [r for r in self.records if r.kind() == "change"]
        elapsed = (self.ended or time.monotonic()) - self.started
        return {
            "requests": len(self.records),
            "seconds": round(elapsed, 2),
            "requests_per_s": round(len(self.records) / elapsed, 1) if elapsed else None,
            "statuses": {str(k): v for k, v in sorted(statuses.items(), key=str)},
            "5xx": sum(v for k, v in statuses.items() if k is not None and k >= 500),
            "wire_errors": statuses.get(None, 0),
            "changes": len(changes),
            "trials_dispatched": sum(1 for r in changes if r.op == "next"),
            "trials_ended": sum(1 for r in changes if r.op == "report"),
            "trials_failed": sum(1 for r in changes if r.op == "end"),
            "jobs": len({r.job for r in self.records}),
            "connections": self.connects,
        }


# -- checks on a log ----------------------------------------------------------------------

def by_job(records):
    out = {}
    for r in records:
        out.setdefault(r.job, []).append(r)
    return out


def check_log(records, complete=True):
    """Checks the answers among themselves; returns a list of problems ([] when sound):
    - every 2xx answer of the four endpoints carries a version;
    - no two changes of a job carry the same version (two units decided on one state),
      and with complete (no request lost on the wire) the changes are exactly 1..N;
    - reads carry a version some change of the job produced (complete only);
    - no trial number is handed out twice, and with complete they are exactly 1..T."""
    problems = []
    for jid, recs in sorted(by_job(records).items()):
        ok = [r for r in recs if r.ok]
        for r in ok:
            if not isinstance(r.version, int) or r.version < 1:
                problems.append(f"{jid}: 2xx answer without a valid version: {r!r}")
        changes = [r for r in ok if r.kind() == "change" and isinstance(r.version, int)]
        versions = {}
        for r in changes:
            if r.version in versions:
                problems.append(f"{jid}: two changes at version {r.version}: "
                                f"{versions[r.version]!r} and {r!r}")
            versions.setdefault(r.version, r)
        if complete and sorted(versions) != list(range(1, len(versions) + 1)):
            missing = sorted(set(range(1, max(versions, default=0) + 1)) - set(versions))
            problems.append(f"{jid}: change versions are not 1..{len(versions)}: "
                            f"missing {missing[:10]}")
        if complete:
            top = max(versions, default=0)
            for r in ok:
                if r.kind() == "read" and isinstance(r.version, int) and not (
                        1 <= r.version <= top):
                    problems.append(f"{jid}: read at version {r.version} of {top}: {r!r}")
        numbers = {}
        for r in ok:
            if r.op != "next":
                continue
            tn = (r.json or {}).get("trial_number")
            if tn in numbers:
                problems.append(f"{jid}: trial number {tn} handed out twice: "
                                f"{numbers[tn]!r} and {r!r}")
            numbers.setdefault(tn, r)
        if complete and sorted(numbers) != list(range(1, len(numbers) + 1)):
            problems.append(f"{jid}: trial numbers are not 1..{len(numbers)}: "
                            f"{sorted(numbers)[:20]}...")
    return problems


def serial_order(records):
    """Each job's 2xx records in the order the database applied them: by version, the
    change that made a version first, then the answers read at it; ties in request
    order. Returns {job: [records]}."""
    out = {}
    for jid, recs in by_job(records).items():
        ok = [r for r in recs if r.ok]
        out[jid] = sorted(ok, key=lambda r: (r.version, 0 if r.kind() == "change" else 1,
                                             r.seq))
    return out


def replay(records, tmpdir, server_args=()):
    """Replays each job's 2xx requests in serial_order against a fresh single `zbso serve`
    on SQLite and compares status, body bytes and version of every answer. The replay's
    database lives in /dev/shm when there is one (its syncs cost nothing there; it is only
    a reference), else in tmpdir. Returns (problems, number of requests replayed)."""
    problems = []
    shm = tempfile.TemporaryDirectory(prefix="zbso-replay-", dir=SHM_DIR) if (
        os.path.isdir(SHM_DIR) and os.access(SHM_DIR, os.W_OK)) else None
    db = SqliteDatabase(os.path.join(shm.name if shm else tmpdir, "replay.db"))
    srv = Server(tmpdir=tmpdir, database=db, args=server_args)
    sent = 0
    try:
        srv.start()
        conn = srv.client()
        for jid, recs in sorted(serial_order(records).items()):
            for r in recs:
                got = conn.request(r.method, r.path, r.body)
                sent += 1
                v = got.headers.get(VERSION_HEADER)
                gv = int(v) if v is not None else None
                if (got.status, got.body, gv) != (r.status, r.resp, r.version):
                    problems.append(
                        f"{jid}: replayed #{r.seq} ({r.method} {r.path} {r.body!r}) at "
                        f"version {r.version}: recorded {r.status} {r.resp!r}, serial "
                        f"replay gave {got.status} {got.body!r} version {gv}")
                    break  # later answers of this job follow from the first difference
        conn.close()
    finally:
        srv.close()
        if shm:
            shm.cleanup()
    return problems, sent


def check_acknowledged(records, db):
    """Checks that every acknowledged (2xx) change of the log is in the database db
    (SqliteDatabase / PgDatabase): registered jobs, dispatched trials with their batch
    size, ended trials with their time, energy, metric, epochs and converged, failed
    trials, and each job's stored version at least the highest version acknowledged.
    Returns a list of problems."""
    problems = []
    jobs = {row["job_id"]: row for row in db.rows("jobs", "job_id")}
    trials = {(row["job_id"], row["trial_number"]): row
              for row in db.rows("trials", "job_id, trial_number")}
    for jid, recs in sorted(by_job(records).items()):
        ok = [r for r in recs if r.ok]
        if not ok:
            continue
        if jid not in jobs:
            problems.append(f"{jid}: acknowledged ({ok[0]!r}) but not in the database")
            continue
        top = max(r.version for r in ok)
        if jobs[jid]["version"] < top:
            problems.append(f"{jid}: stored version {jobs[jid]['version']} < acknowledged "
                            f"{top}")
        for r in ok:
            if r.op == "next":
                key = (jid, r.json["trial_number"])
                row = trials.get(key)
                if row is None:
                    problems.append(f"{jid}: dispatched trial {key[1]} missing ({r!r})")
                elif row["batch_size"] != r.json["batch_size"]:
                    problems.append(f"{jid}: trial {key[1]} stored with batch size "
                                    f"{row['batch_size']}, acknowledged {r!r}")
            elif r.op == "report" and r.json.get("stop_train"):
                body = r.request_json
                row = trials.get((jid, body["trial_number"]))
                if row is None:
                    problems.append(f"{jid}: ended trial missing: {r!r}")
                    continue
                want = {"status": STATUS_SUCCEEDED, "converged": r.json["converged"],
                        "time": body["time"], "energy": body["energy"],
                        "metric": body["metric"], "epochs": body["current_epoch"]}
                got = {k: row[k] for k in want}
                got["converged"] = bool(got["converged"])
                if got != want:
                    problems.append(f"{jid}: trial {body['trial_number']} stored as {got}, "
                                    f"acknowledged {want} ({r!r})")
            elif r.op == "end" and r.expect in ("change", "fail-retry"):
                body = r.request_json
                row = trials.get((jid, body["trial_number"]))
                if row is None or row["status"] != STATUS_FAILED:
                    problems.append(f"{jid}: failed trial {body['trial_number']} stored as "
                                    f"{row}, acknowledged {r!r}")
    return problems


def format_problems(problems, limit=15):
    more = f"\n... and {len(problems) - limit} more" if len(problems) > limit else ""
    return "\n".join(problems[:limit]) + more
