"""test_crash.py: SIGKILL of `zbso serve` under load, 20 times (SPEC §3.7, §4). Six
keep-alive clients play the training protocol (and register jobs of their own) while the
server is killed at random moments and restarted on the same database. After every
restart every change a client got a 2xx for is in the database (registered jobs,
dispatched trials, ended trials with their values, failed trials, job versions at least
the acknowledged ones), no two acknowledged changes share a version, no trial number was
handed out twice, and on SQLite `PRAGMA integrity_check` is ok and `foreign_key_check`
empty. Requests in flight at a kill may fail on the wire: those are unacknowledged."""

import json
import random
import tempfile
import threading
import time
import unittest

from zbsoserver import BACKEND, Server, require_backend
import workload as wl

KILLS = 20
THREADS = 6
SEED = 20260121
ACKS_BEFORE_KILL = 30      # acknowledged answers each incarnation serves before its kill
ACK_WAIT_S = 60.0          # at most this long for them (a slow sanitizer build)


class CrashTest(unittest.TestCase):
    def setUp(self):
        require_backend()
        tmp = tempfile.TemporaryDirectory(prefix="zbso-crash-")
        self.addCleanup(tmp.cleanup)
        self.srv = Server(tmpdir=tmp.name)
        self.addCleanup(self.srv.close)
        self.srv.start()

    def acked(self, load):
        """A copy of the log so far, and how many of its answers were 2xx."""
        with load._lock:
            records = list(load.records)
        return records, sum(1 for r in records if r.ok)

    def check_db(self, records, when):
        problems = wl.check_acknowledged(records, self.srv.db)
        problems += wl.check_log(records, complete=False)
        if self.srv.db.kind == "sqlite":
            problems += [f"integrity: {e}" for e in self.srv.db.integrity_errors()]
        self.assertEqual(problems, [], f"{when}:\n" + wl.format_problems(problems))

    def test_sigkill_20_times_under_load(self):
        rng = random.Random(SEED)
        srv = self.srv
        load = wl.Workload([lambda: (srv.host, srv.port)], wl.seeded_specs("crash", 4),
                           threads=THREADS, duration_s=3600.0, max_trials=10 ** 9,
                           seed=SEED % 1000, tolerate_wire_errors=True, new_job_every=15,
                           give_up_s=60.0)
        runner = threading.Thread(target=load.run, daemon=True)
        runner.start()
        started = time.monotonic()
        checked = 0
        downtime = 0.0
        try:
            for kill in range(1, KILLS + 1):
                # Let this incarnation acknowledge some work, then kill it at a random
                # moment while requests are in flight.
                _, base = self.acked(load)
                deadline = time.monotonic() + ACK_WAIT_S
                while self.acked(load)[1] < base + ACKS_BEFORE_KILL:
                    self.assertLess(time.monotonic(), deadline,
                                    f"no progress before kill {kill}: {load.errors[:3]}\n"
                                    + srv.log_tail())
                    self.assertTrue(runner.is_alive(), load.errors[:5])
                    time.sleep(0.01)
                time.sleep(rng.uniform(0.0, 0.3))
                srv.kill()
                t_down = time.monotonic()
                records, _ = self.acked(load)
                srv.start()
                downtime += time.monotonic() - t_down
                self.check_db(records, f"after restart {kill}")
                checked = len(records)
        finally:
            load.stop()
            runner.join(120)
        self.assertFalse(runner.is_alive(), "the clients did not stop")
        self.assertEqual(load.errors, [], "\n".join(load.errors[:10]))
        self.check_db(load.records, "at the end")

        figures = load.figures()
        figures.update(kills=KILLS, restarts=srv.starts - 1, checked_records=checked,
                       seconds_total=round(time.monotonic() - started, 2),
                       downtime_s=round(downtime, 2),
                       registered_jobs=len({r.job for r in load.records
                                            if r.op == "register" and r.ok}))
        print(f"\n[crash] backend={BACKEND} " + json.dumps(figures, sort_keys=True),
              flush=True)
        self.assertEqual(srv.starts - 1, KILLS)
        self.assertEqual(figures["5xx"], 0, figures)
        unexpected = [r for r in load.records if r.status is not None and not r.ok]
        self.assertEqual(unexpected, [], unexpected[:5])
        self.assertGreater(figures["registered_jobs"], 4, "clients registered new jobs")
        # The kills did cut requests: otherwise this tested restarts of an idle server.
        self.assertGreater(figures["wire_errors"], 0, figures)
        self.assertEqual(srv.terminate(), 0, srv.log_tail())


if __name__ == "__main__":
    unittest.main()
