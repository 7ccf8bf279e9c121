"""test_policy_api.py: the job's batch size policy over HTTP (issue 21, SPEC §2 and §5):
"policy", "warm_start" and "prior_jobs" in POST /jobs, the server's default (`zbso serve
--policy`, ZBSO_POLICY in the environment or .env), what re-registration matches, and
where the policy is shown (GET /jobs, GET /jobs/{job_id}). Answers to Zeus-shaped jobs must
stay byte for byte what they were. On the backend of $ZBSO_TEST_BACKEND."""

import json
import os
import unittest

from zbsoserver import Server, ServerTestCase, job_spec, run_cli

# The CreatedJob answer to job_spec(job_id="itest-z") as Zeus's server writes it: every
# field of seed 001 in its order, nothing more.
ZEUS_ANSWER = (
    b'{"job_id":"itest-z","job_id_prefix":"itest","batch_sizes":[8,16,32],'
    b'"default_batch_size":16,"eta_knob":0.5,"beta_knob":2.0,"target_metric":0.5,'
    b'"higher_is_better_metric":true,"max_epochs":100,"num_pruning_rounds":2,'
    b'"window_size":0,"mab_prior_mean":0.0,"mab_prior_precision":0.0,'
    b'"mab_num_explorations":2,"mab_seed":null,"max_power":300.0,"number_of_gpus":1,'
    b'"gpu_model":"NVIDIA A100-SXM4-40GB"}')


class PolicyFieldsTest(ServerTestCase):
    """A server with the default policy (zeus)."""

    def post(self, **overrides):
        return self.srv.request("POST", "/jobs", body=job_spec(**overrides))

    def job(self, job_id):
        r = self.srv.request("GET", f"/jobs/{job_id}")
        self.assertEqual(r.status, 200, r)
        return r.json

    def test_zeus_shaped_answer_is_byte_for_byte_zeus(self):
        for extra in ({}, {"policy": "zeus"}, {"policy": None}, {"warm_start": False},
                      {"prior_jobs": None}, {"prior_jobs": []}):
            with self.subTest(extra):
                r = self.post(job_id="itest-z", **extra)
                self.assertIn(r.status, (200, 201), r)
                self.assertEqual(r.body, ZEUS_ANSWER)
        doc = self.job("itest-z")
        self.assertEqual(doc["policy"], "zeus")
        self.assertEqual((doc["spec"]["policy"], doc["spec"]["warm_start"],
                          doc["spec"]["prior_jobs"]), ("zeus", False, []))

    def test_smart_job_answer_shows_its_fields(self):
        r = self.post(job_id="itest-s", policy="smart", prior_jobs=["itest-b", "itest-a"])
        self.assertEqual(r.status, 201, r)
        want = ZEUS_ANSWER.replace(b'"itest-z"', b'"itest-s"')[:-1] + (
            b',"policy":"smart","warm_start":true,"prior_jobs":["itest-a","itest-b"]}')
        self.assertEqual(r.body, want)
        doc = self.job("itest-s")
        self.assertEqual(doc["policy"], "smart")
        self.assertEqual(doc["spec"], json.loads(want))
        rows = self.srv.request("GET", "/jobs").json["jobs"]
        self.assertEqual([(j["job_id"], j["policy"]) for j in rows], [("itest-s", "smart")])
        # The same registration, prior jobs in another order: the same job.
        again = self.post(job_id="itest-s", policy="smart", warm_start=True,
                          prior_jobs=["itest-a", "itest-b"])
        self.assertEqual((again.status, again.body), (200, want))

    def test_bad_values_are_422_naming_them(self):
        cases = [
            ({"policy": "Smart"}, "policy", '"Smart"'),
            ({"policy": "bayes"}, "policy", '"bayes"'),
            ({"policy": 1}, "policy", "got 1"),
            ({"warm_start": "yes"}, "warm_start", '"yes"'),
            ({"prior_jobs": "itest-a"}, "prior_jobs", '"itest-a"'),
            ({"policy": "smart", "prior_jobs": ["itest-a", 3]}, "prior_jobs", "got 3"),
            ({"policy": "smart", "prior_jobs": [""]}, "prior_jobs", "prior_jobs[0]"),
            ({"policy": "smart", "prior_jobs": ["x" * 301]}, "prior_jobs", "301 bytes"),
            ({"policy": "smart", "prior_jobs": [f"j{i}" for i in range(9)]}, "prior_jobs",
             "9 entries"),
            ({"policy": "smart", "prior_jobs": ["itest-a", "itest-a"]}, "prior_jobs",
             "itest-a appears more than once"),
            ({"job_id": "itest-me", "policy": "smart", "prior_jobs": ["itest-me"]},
             "prior_jobs", "itest-me"),
            ({"policy": "smart", "warm_start": False, "prior_jobs": ["itest-a"]},
             "warm_start", "warm_start is false"),
            ({"policy": "zeus", "warm_start": True}, "policy", 'got policy "zeus"'),
            # No policy on a server whose default is zeus: the warm start cannot be had.
            ({"warm_start": True}, "warm_start", 'default policy is "zeus"'),
        ]
        for change, field, text in cases:
            with self.subTest(change):
                r = self.post(**change)
                self.assertEqual(r.status, 422, r)
                detail = r.json["detail"][0]
                self.assertEqual(detail["loc"], ["body", field], r)
                self.assertIn(text, detail["msg"])
        self.assertEqual(self.srv.request("GET", "/jobs").json["jobs"], [])

    def test_reregistration_rules(self):
        self.assertEqual(self.post(job_id="itest-r").status, 201)
        # Without the field: the stored policy (zeus). Naming it: the same.
        self.assertEqual(self.post(job_id="itest-r").status, 200)
        self.assertEqual(self.post(job_id="itest-r", policy="zeus").status, 200)
        for change in ({"policy": "smart"}, {"policy": "smart", "warm_start": True},
                       {"policy": "smart", "prior_jobs": ["itest-x"]}):
            with self.subTest(change):
                r = self.post(job_id="itest-r", **change)
                self.assertEqual(r.status, 409, r)
                self.assertIn("itest-r", r.json["message"])
        self.assertEqual(self.post(job_id="itest-w", policy="smart", warm_start=True).status,
                         201)
        for change in ({"policy": "smart"}, {}, {"policy": "zeus"},
                       {"policy": "smart", "warm_start": True, "prior_jobs": ["itest-r"]}):
            with self.subTest(change):
                self.assertEqual(self.post(job_id="itest-w", **change).status, 409)
        # Without the field the stored policy (smart) is taken, so this is the same job.
        self.assertEqual(self.post(job_id="itest-w", warm_start=True).status, 200)
        self.assertEqual(self.post(job_id="itest-w", policy="smart", warm_start=True).status,
                         200)


class DefaultPolicyTest(unittest.TestCase):
    """The server's default: --policy, ZBSO_POLICY, .env; a restart with another default."""

    def serve(self, args=(), env=None, database=None, tmpdir=None):
        srv = Server(args=args, env=env, database=database, tmpdir=tmpdir)
        self.addCleanup(srv.close)
        srv.start()
        return srv

    def test_flag_env_and_dotenv(self):
        for how, kwargs in (("flag", {"args": ["--policy", "smart"]}),
                            ("env", {"env": {"ZBSO_POLICY": "smart"}}),
                            ("flag wins", {"args": ["--policy", "smart"],
                                           "env": {"ZBSO_POLICY": "zeus"}})):
            with self.subTest(how):
                srv = self.serve(**kwargs)
                r = srv.request("POST", "/jobs", body=job_spec(job_id="itest-d"))
                self.assertEqual(r.status, 201, r)
                self.assertEqual(r.json["policy"], "smart")
                self.assertEqual(srv.request("GET", "/jobs/itest-d").json["policy"], "smart")
                # The job's own field wins over the default.
                r = srv.request("POST", "/jobs",
                                body=job_spec(job_id="itest-own", policy="zeus"))
                self.assertNotIn("policy", r.json)
                self.assertEqual(srv.request("GET", "/jobs/itest-own").json["policy"], "zeus")
                srv.close()
        srv = Server()
        self.addCleanup(srv.close)
        with open(os.path.join(srv.tmpdir, ".env"), "w") as f:
            f.write("ZBSO_POLICY=smart\n")
        srv.start()
        r = srv.request("POST", "/jobs", body=job_spec(job_id="itest-e"))
        self.assertEqual(r.json["policy"], "smart")

    def test_bad_default_refuses_to_start(self):
        for args, env, named in ((["--policy", "Smart"], None, "--policy 'Smart'"),
                                 ([], {"ZBSO_POLICY": "optuna"}, "ZBSO_POLICY 'optuna'"),
                                 ([], {"ZBSO_POLICY": ""}, "ZBSO_POLICY ''")):
            with self.subTest(named):
                srv = Server()
                self.addCleanup(srv.close)
                r = run_cli(["serve", "--port", "0", "--db", srv.db_url, *args],
                            cwd=srv.tmpdir, env=env)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertIn(named, r.stderr)
                self.assertIn("zeus or smart", r.stderr)
                self.assertNotIn("listening", r.stdout)

    def test_restart_with_another_default_keeps_jobs_answering(self):
        srv = self.serve(args=["--policy", "smart"])
        smart = srv.request("POST", "/jobs", body=job_spec(job_id="itest-a"))
        zeus = srv.request("POST", "/jobs", body=job_spec(job_id="itest-b", policy="zeus"))
        self.assertEqual((smart.status, zeus.status), (201, 201))
        self.assertEqual(srv.terminate(), 0)
        srv.args = ["--policy", "zeus"]
        srv.start()
        # Zeus's client re-registers every recurrence without the field: same jobs, 200.
        for jid, answer in (("itest-a", smart), ("itest-b", zeus)):
            r = srv.request("POST", "/jobs", body=job_spec(job_id=jid))
            self.assertEqual((r.status, r.body), (200, answer.body))
        self.assertEqual(srv.request("POST", "/jobs",
                                     body=job_spec(job_id="itest-a", policy="zeus")).status,
                         409)
        self.assertEqual(srv.request("GET", "/jobs/itest-a").json["policy"], "smart")
        new = srv.request("POST", "/jobs", body=job_spec(job_id="itest-c"))
        self.assertEqual((new.status, new.json.get("policy")), (201, None))


if __name__ == "__main__":
    unittest.main()
