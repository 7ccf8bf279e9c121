"""test_persistence.py: a seeded job driven by a fixed sequence of requests answers exactly
the same whether the server runs throughout or is SIGKILLed and restarted every 7 requests
(SPEC §3.6, §4); a 2xx report that ended a trial survives SIGKILL (SPEC §3.7)."""

import unittest

from zbsoserver import Server, job_spec

JOB = "persist-1"
SPEC = job_spec(job_id=JOB, job_id_prefix="persist", batch_sizes=[64, 8, 32, 16],
                default_batch_size=16, mab_seed=20240601, num_pruning_rounds=2,
                mab_num_explorations=1, max_epochs=4, target_metric=0.5, beta_knob=3.0,
                eta_knob=0.5, max_power=300.0)

# batch size -> (epoch at which the metric reaches the target or None, s/epoch, W)
PROFILE = {8: (3, 30.0, 200.0), 16: (2, 20.0, 250.0), 32: (2, 14.0, 290.0),
           64: (None, 10.0, 300.0)}
RUNS = 24


class Driver:
    """Sends the fixed request sequence through send(method, path, body) and keeps every
    (method, path, status, body) in self.log. Which request comes next depends only on
    earlier answers, so equal answers mean equal sequences."""

    def __init__(self, send):
        self.send = send
        self.log = []

    def req(self, method, path, body=None):
        r = self.send(method, path, body)
        self.log.append((method, path, r.status, r.json))
        return r

    def next_bs(self):
        r = self.req("GET", f"/jobs/batch_size?job_id={JOB}")
        assert r.status == 200, r
        return r.json["batch_size"], r.json["trial_number"]

    def train(self, bs, tn):
        conv_epoch, s_per_epoch, watts = PROFILE[bs]
        # Vary the cost by trial so arms see different rewards (non-zero variance).
        factor = 1.0 + 0.1 * ((tn * 7) % 5)
        for epoch in range(1, SPEC["max_epochs"] + 1):
            reached = conv_epoch is not None and epoch >= conv_epoch
            metric = 0.6 if reached else 0.1 + 0.05 * epoch
            time_s = epoch * s_per_epoch * factor
            r = self.req("POST", "/report", {
                "job_id": JOB, "batch_size": bs, "trial_number": tn, "time": time_s,
                "energy": time_s * watts, "metric": metric, "current_epoch": epoch})
            assert r.status == 200, r
            if r.json["stop_train"]:
                return

    def fail(self, bs, tn):
        r = self.req("PATCH", "/trials", {"job_id": JOB, "batch_size": bs, "trial_number": tn})
        assert r.status == 200, r

    def run(self):
        r = self.req("POST", "/jobs", SPEC)
        assert r.status == 201, r
        for i in range(RUNS):
            if i % 6 == 5:
                self.fail(*self.next_bs())
            elif i % 5 == 2:
                # Two runs of the job at once: the second may be a Concurrent trial.
                a = self.next_bs()
                b = self.next_bs()
                self.train(*b)
                self.train(*a)
            else:
                self.train(*self.next_bs())
        return self.log


class PersistenceTest(unittest.TestCase):
    def test_restarts_every_7_requests_answer_identically(self):
        steady = Server()
        self.addCleanup(steady.close)
        steady.start()
        expected = Driver(lambda m, p, b: steady.request(m, p, body=b)).run()
        self.assertGreaterEqual(len(expected), 60)
        batch_sizes = {e[3]["batch_size"] for e in expected if e[0] == "GET"}
        self.assertEqual(batch_sizes, {8, 16, 32, 64})
        stops = [e[3] for e in expected if e[0] == "POST" and e[1] == "/report"
                 and e[3]["stop_train"]]
        self.assertIn(True, [s["converged"] for s in stops])
        self.assertIn(False, [s["converged"] for s in stops])

        flaky = Server()
        self.addCleanup(flaky.close)
        flaky.start()
        count = [0]

        def send(method, path, body):
            r = flaky.request(method, path, body=body)
            count[0] += 1
            if count[0] % 7 == 0:
                flaky.restart()
            return r

        got = Driver(send).run()
        self.assertGreaterEqual(flaky.starts, 9)
        self.assertEqual(len(got), len(expected))
        for i, (g, e) in enumerate(zip(got, expected)):
            self.assertEqual(g, e, f"request {i} differs after restarts")

    def test_sequence_reaches_mab_stage(self):
        srv = Server()
        self.addCleanup(srv.close)
        srv.start()
        Driver(lambda m, p, b: srv.request(m, p, body=b)).run()
        # Read the stage from the database (read-only, either backend). Stage 1 is MAB
        # (src/core/types.h zbso_stage).
        jobs = srv.rows("jobs")
        self.assertEqual(len(jobs), 1)
        self.assertEqual(jobs[0]["job_id"], JOB)
        self.assertEqual(jobs[0]["stage"], 1, "the job did not reach the MAB stage")
        arms = srv.rows("arms")
        self.assertGreaterEqual(len(arms), 1)
        self.assertEqual({a["job_id"] for a in arms}, {JOB})

    def test_finished_trial_survives_sigkill(self):
        srv = Server()
        self.addCleanup(srv.close)
        srv.start()
        self.assertEqual(srv.request("POST", "/jobs", body=SPEC).status, 201)
        r = srv.request("GET", f"/jobs/batch_size?job_id={JOB}")
        self.assertEqual(r.json, {"job_id": JOB, "batch_size": 16, "trial_number": 1})
        report = {"job_id": JOB, "batch_size": 16, "trial_number": 1, "time": 40.0,
                  "energy": 10000.0, "metric": 0.7, "current_epoch": 2}
        r = srv.request("POST", "/report", body=report)
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json["stop_train"], r.json["converged"]), (True, True))
        srv.kill()
        srv.start()
        again = srv.request("POST", "/report", body=dict(report, metric=0.1, current_epoch=3))
        self.assertEqual(again.status, 200, again)
        self.assertEqual((again.json["stop_train"], again.json["converged"]), (True, True))
        self.assertIn("already", again.json["message"].lower())
        r = srv.request("GET", f"/jobs/batch_size?job_id={JOB}")
        self.assertEqual(r.json, {"job_id": JOB, "batch_size": 8, "trial_number": 2})

    def test_dispatch_survives_sigkill(self):
        srv = Server()
        self.addCleanup(srv.close)
        srv.start()
        self.assertEqual(srv.request("POST", "/jobs", body=SPEC).status, 201)
        for n in (1, 2):
            r = srv.request("GET", f"/jobs/batch_size?job_id={JOB}")
            self.assertEqual(r.json["trial_number"], n, r)
            srv.kill()
            srv.start()
        # Trial numbers are never reused after a crash.
        r = srv.request("GET", f"/jobs/batch_size?job_id={JOB}")
        self.assertEqual(r.json["trial_number"], 3, r)


if __name__ == "__main__":
    unittest.main()
