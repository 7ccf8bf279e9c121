"""test_replicas.py: several `zbso serve` replicas on one database decide as one serial
server would (SPEC §3.7): 32 concurrent keep-alive clients on 5 seeded jobs that reach the
MAB stage, spread over 3 replicas on PostgreSQL and MariaDB (1 server on SQLite, which has
one writer process). No 5xx, no trial number handed out twice, every acknowledged change
stored, and each job's answers, ordered by X-Zbso-Job-Version, equal a serial replay on a
fresh server. A self-test shows the checks catch corrupted logs (stale decisions,
duplicate trials)."""

import json
import os
import re
import tempfile
import unittest

from zbsoserver import BACKEND, Server, new_database, require_backend
import workload as wl

REPLICAS = 3 if BACKEND in ("postgresql", "mysql") else 1
THREADS = 32
JOBS = 5
DURATION_S = 10.0
MAX_TRIALS = 1500


def figures_line(name, figures):
    print(f"\n[{name}] backend={BACKEND} " + json.dumps(figures, sort_keys=True), flush=True)


class ReplicasTest(unittest.TestCase):
    def setUp(self):
        require_backend()
        tmp = tempfile.TemporaryDirectory(prefix="zbso-rep-")
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name
        self.db = new_database(self.tmp, "shared.db")
        self.addCleanup(self.db.close)
        self.servers = []
        for i in range(REPLICAS):
            d = os.path.join(self.tmp, f"replica{i}")
            os.mkdir(d)
            srv = Server(tmpdir=d, database=self.db)
            self.addCleanup(srv.close)
            srv.start()
            self.servers.append(srv)

    def address(self, srv):
        return lambda: (srv.host, srv.port)

    def test_keyed_retry_on_another_replica(self):
        """A GET /jobs/batch_size whose answer was lost, retried with its Idempotency-Key
        on another replica, gets the trial the first replica dispatched: the key is in the
        shared database, not in one process."""
        if REPLICAS < 2:
            self.skipTest("one replica on SQLite")
        first, second = self.servers[0], self.servers[1]
        spec = wl.seeded_specs("rep-key", 1)[0]
        r = first.request("POST", "/jobs", body=spec)
        self.assertIn(r.status, (200, 201), r)
        jid = r.json["job_id"]
        path = f"/jobs/batch_size?job_id={jid}"
        key = {"Idempotency-Key": '"retry-elsewhere"'}
        a = first.request("GET", path, headers=key)
        self.assertEqual(a.status, 200, a)
        for srv in self.servers[1:]:
            b = srv.request("GET", path, headers=key)
            self.assertEqual(b.status, 200, b)
            self.assertEqual(b.json, a.json)
        c = second.request("GET", path, headers={"Idempotency-Key": '"another"'})
        self.assertEqual(c.json["trial_number"], a.json["trial_number"] + 1, c)
        trials = [t for t in self.db.rows("trials") if t["job_id"] == jid]
        self.assertEqual(sorted(t["trial_number"] for t in trials),
                         [a.json["trial_number"], c.json["trial_number"]])

    def test_replicas_answer_as_one_serial_server(self):
        specs = wl.seeded_specs("rep", JOBS)
        load = wl.Workload([self.address(s) for s in self.servers], specs, threads=THREADS,
                           duration_s=DURATION_S, max_trials=MAX_TRIALS, seed=11)
        records = load.run()
        figures = load.figures()
        per_replica = {}
        for r in records:
            per_replica[r.thread % REPLICAS] = per_replica.get(r.thread % REPLICAS, 0) + 1
        figures["requests_per_replica"] = [per_replica.get(i, 0) for i in range(REPLICAS)]
        figures["replicas"] = REPLICAS
        self.assertEqual(load.errors, [], "\n".join(load.errors[:10]))
        for srv in self.servers:
            self.assertIsNone(srv.proc.poll(), "a replica died:\n" + srv.log_tail())

        # No 5xx at all; in fact every answer is 2xx (the clients follow the protocol).
        self.assertEqual(figures["5xx"], 0, figures)
        bad = [r for r in records if not r.ok]
        self.assertEqual(bad, [], bad[:5])
        self.assertGreaterEqual(figures["trials_dispatched"], 300, figures)
        self.assertGreaterEqual(min(figures["requests_per_replica"]), 100, figures)

        # Every job was changed through every replica: their units interleaved on it.
        deciders = {}
        for r in records:
            if r.kind() == "change":
                deciders.setdefault(r.job, set()).add(r.thread % REPLICAS)
        self.assertEqual({j: len(d) for j, d in deciders.items()},
                         {s["job_id"]: REPLICAS for s in specs})

        problems = wl.check_log(records, complete=True)
        self.assertEqual(problems, [], wl.format_problems(problems))
        problems = wl.check_acknowledged(records, self.db)
        self.assertEqual(problems, [], wl.format_problems(problems))

        jobs = self.db.rows("jobs", "job_id")
        self.assertEqual(sorted(j["job_id"] for j in jobs), sorted(s["job_id"] for s in specs))
        self.assertEqual({j["job_id"]: j["stage"] for j in jobs},
                         {s["job_id"]: 1 for s in specs}, "every job reaches the MAB stage")
        mab_trials = [t for t in self.db.rows("trials") if t["type"] == 2]
        self.assertGreaterEqual(len(mab_trials), 100)
        trials = self.db.rows("trials")
        self.assertEqual(len(trials), figures["trials_dispatched"])

        problems, replayed = wl.replay(records, self.tmp)
        figures["replayed"] = replayed
        figures["mab_trials"] = len(mab_trials)
        figures_line("replicas", figures)
        self.assertEqual(problems, [], wl.format_problems(problems))
        self.assertEqual(replayed, len(records))
        for srv in self.servers:
            self.assertEqual(srv.terminate(), 0, srv.log_tail())


def replace_once(data, pattern, repl):
    """data with the first match of the bytes regex pattern replaced; fails if none."""
    new, n = re.subn(pattern, repl, data, count=1)
    assert n == 1 and new != data, (pattern, data)
    return new


class CheckerSelfTest(unittest.TestCase):
    """The checks above must fail on logs that a replica deciding on stale state, a lost
    write or a duplicate trial would produce. A real log from one server is corrupted one
    record at a time; each corruption must be reported, naming that record."""

    @classmethod
    def setUpClass(cls):
        require_backend()
        cls._tmp = tempfile.TemporaryDirectory(prefix="zbso-chk-")
        cls.tmp = cls._tmp.name
        srv = Server(tmpdir=cls.tmp)
        try:
            srv.start()
            load = wl.Workload([lambda: (srv.host, srv.port)], wl.seeded_specs("chk", 2),
                               threads=6, duration_s=20.0, max_trials=120, seed=5)
            cls.records = load.run()
            cls.errors = load.errors
            cls.db_rows = {t: srv.rows(t) for t in ("jobs", "trials")}
            cls.figures = load.figures()
        finally:
            srv.close()

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def setUp(self):
        self.assertEqual(self.errors, [])
        sub = tempfile.mkdtemp(dir=self.tmp)
        self.sub = sub

    def clone(self):
        out = []
        for r in self.records:
            out.append(wl.Record(**{k: getattr(r, k) for k in wl.Record.__slots__}))
        return out

    def pick(self, records, pred, nth=-1):
        """The index of the nth record (default: the last) satisfying pred."""
        idx = [i for i, r in enumerate(records) if pred(r)]
        self.assertTrue(idx, "no record to corrupt")
        return idx[nth]

    def assert_replay_names(self, records, seq):
        problems, _ = wl.replay(records, self.sub)
        self.assertTrue(problems, "the replay did not notice the corruption")
        self.assertIn(f"#{seq} ", problems[0])

    def test_clean_log_passes(self):
        figures_line("checker self-test log", self.figures)
        self.assertEqual(wl.check_log(self.records), [])
        problems, n = wl.replay(self.records, self.sub)
        self.assertEqual(problems, [])
        self.assertEqual(n, len(self.records))

    def test_two_changes_at_one_version(self):
        # A replica that dispatched on the state before the last change writes the same
        # version as that change.
        recs = self.clone()
        i = self.pick(recs, lambda r: r.op == "next" and r.version > 3)
        recs[i].version -= 1
        problems = wl.check_log(recs)
        self.assertTrue(any("two changes at version" in p for p in problems), problems)

    def test_stale_batch_size(self):
        # The same version, but an answer serial state would not give (MAB trials have
        # other batch sizes drawn from the job's generator).
        recs = self.clone()
        i = self.pick(recs, lambda r: r.op == "next" and b'"batch_size":' in r.resp)
        bs = recs[i].json["batch_size"]
        other = 32 if bs != 32 else 16
        recs[i].resp = replace_once(recs[i].resp, rb'"batch_size":\s*%d' % bs,
                                    b'"batch_size": %d' % other)
        self.assertEqual(wl.check_log(recs), [])
        self.assert_replay_names(recs, recs[i].seq)

    def test_duplicate_trial_number(self):
        recs = self.clone()
        first = self.pick(recs, lambda r: r.op == "next" and r.job == "chk-0", nth=0)
        i = self.pick(recs, lambda r: r.op == "next" and r.job == "chk-0")
        tn = recs[i].json["trial_number"]
        recs[i].resp = replace_once(recs[i].resp, rb'"trial_number":\s*%d' % tn,
                                    b'"trial_number": %d' % recs[first].json["trial_number"])
        problems = wl.check_log(recs)
        self.assertTrue(any("handed out twice" in p for p in problems), problems)

    def test_report_decided_on_other_state(self):
        recs = self.clone()
        i = self.pick(recs, lambda r: r.op == "report" and r.kind() == "change"
                      and r.json["converged"] is True)
        recs[i].resp = replace_once(recs[i].resp, rb'"converged":\s*true',
                                    b'"converged": false')
        self.assert_replay_names(recs, recs[i].seq)

    def test_read_at_wrong_version(self):
        # A report answered "keep training" at version 1, before its trial existed.
        recs = self.clone()
        i = self.pick(recs, lambda r: r.op == "report" and r.kind() == "read"
                      and r.json["stop_train"] is False and r.version > 2)
        recs[i].version = 1
        self.assert_replay_names(recs, recs[i].seq)

    def test_lost_change(self):
        recs = self.clone()
        i = self.pick(recs, lambda r: r.kind() == "change" and r.op == "report", nth=0)
        del recs[i]
        problems = wl.check_log(recs)
        self.assertTrue(any("not 1.." in p for p in problems), problems)

    def test_acknowledged_but_not_stored(self):
        class Rows:
            def __init__(self, rows):
                self._rows = rows

            def rows(self, table, order_by="1"):
                return self._rows[table]

        db = Rows(self.db_rows)
        self.assertEqual(wl.check_acknowledged(self.records, db), [])
        for name, mutate in [
                ("ended trial values", lambda r: r.op == "report" and r.kind() == "change"),
                ("dispatched trial", lambda r: r.op == "next"),
                ("failed trial", lambda r: r.op == "end" and r.kind() == "change")]:
            with self.subTest(name):
                rows = {t: [dict(x) for x in v] for t, v in self.db_rows.items()}
                i = self.pick(self.records, mutate)
                rec = self.records[i]
                tn = (rec.json if rec.op == "next" else rec.request_json)["trial_number"]
                row = next(t for t in rows["trials"]
                           if (t["job_id"], t["trial_number"]) == (rec.job, tn))
                if rec.op == "report":
                    row["energy"] += 1.0
                elif rec.op == "next":
                    rows["trials"].remove(row)
                else:
                    row["status"] = wl.STATUS_DISPATCHED
                problems = wl.check_acknowledged(self.records, Rows(rows))
                self.assertTrue(any(f"trial {tn}" in p for p in problems), problems)
        rows = {t: [dict(x) for x in v] for t, v in self.db_rows.items()}
        rows["jobs"][0]["version"] -= 1
        self.assertTrue(any("stored version" in p
                            for p in wl.check_acknowledged(self.records, Rows(rows))))


if __name__ == "__main__":
    unittest.main()
