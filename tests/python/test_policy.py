"""The job's batch size policy in zbso's Python binding (issue 21): JobSpec takes policy,
warm_start and prior_jobs (optional; unset, a JobSpec is exactly Zeus's), checks them
before sending, and BatchSizeOptimizer registers them with a real `zbso serve`."""

import unittest

import support
import zbsoserver


def spec(**over):
    from zbso import JobSpec
    args = dict(job_id_prefix="pypol", batch_sizes=[16, 32, 64], default_batch_size=32,
                max_epochs=8, mab_seed=1)
    args.update(over)
    return JobSpec(**args)


class TestJobSpecFields(unittest.TestCase):
    def test_unset_is_zeus_shaped(self):
        job = spec()
        self.assertEqual((job.policy, job.warm_start, job.prior_jobs), (None, False, None))
        for name in ("policy", "warm_start", "prior_jobs"):
            self.assertNotIn(name, job.dict())
            self.assertNotIn(name, job.json())
        # include= names them explicitly: then they are there.
        self.assertEqual(job.dict(include={"policy", "warm_start"}),
                         {"policy": None, "warm_start": False})

    def test_set_fields_are_sent(self):
        job = spec(policy="smart", prior_jobs=["pypol-h100"])
        self.assertEqual(job.dict()["policy"], "smart")
        self.assertEqual(job.dict()["prior_jobs"], ["pypol-h100"])
        self.assertNotIn("warm_start", job.dict())
        self.assertTrue(spec(policy="smart", warm_start=True).dict()["warm_start"])
        self.assertEqual(spec(policy="zeus").dict()["policy"], "zeus")

    def test_bad_values_are_refused_naming_them(self):
        from zbso.optimizer.batch_size.common import ValidationError
        for over, text in (({"policy": "Smart"}, "'Smart'"),
                           ({"policy": 3}, "policy"),
                           ({"warm_start": "maybe"}, "maybe"),
                           ({"prior_jobs": "pypol-a"}, "pypol-a"),
                           ({"prior_jobs": ["a", 7]}, "7"),
                           ({"prior_jobs": [""]}, "empty job id"),
                           ({"policy": "smart", "prior_jobs": [str(i) for i in range(9)]},
                            "9 jobs"),
                           ({"policy": "zeus", "warm_start": True}, "needs policy 'smart'")):
            with self.subTest(over):
                with self.assertRaises(ValidationError) as cm:
                    spec(**over)
                self.assertIn(text, str(cm.exception))


class TestRegistration(support.ServerCase):
    def bso(self, job, url=None):
        from zbso.monitor import ZeusMonitor
        from zbso.optimizer.batch_size import BatchSizeOptimizer
        return BatchSizeOptimizer(monitor=ZeusMonitor(), server_url=url or self.url, job=job)

    def test_smart_job_registers_with_its_fields(self):
        bso = self.bso(spec(job_id="pypol-s", policy="smart", prior_jobs=["pypol-h100"]))
        self.assertEqual((bso.job.policy, bso.job.warm_start, bso.job.prior_jobs),
                         ("smart", True, ["pypol-h100"]))
        doc = self.srv.request("GET", "/jobs/pypol-s").json
        self.assertEqual((doc["policy"], doc["spec"]["warm_start"], doc["spec"]["prior_jobs"]),
                         ("smart", True, ["pypol-h100"]))
        # The same script again: the same job. Another policy: the server's 409.
        self.bso(spec(job_id="pypol-s", policy="smart", prior_jobs=["pypol-h100"]))
        from zbso.optimizer.batch_size.exceptions import ZeusBSORuntimError
        with self.assertRaises(ZeusBSORuntimError) as cm:
            self.bso(spec(job_id="pypol-s", policy="smart"))
        self.assertIn("409", str(cm.exception))
        self.assertIn("pypol-s", str(cm.exception))

    def test_unset_policy_takes_the_servers_default(self):
        bso = self.bso(spec(job_id="pypol-z"))
        self.assertIsNone(bso.job.policy)  # the answer of a zeus job carries no policy
        self.assertEqual(self.srv.request("GET", "/jobs/pypol-z").json["policy"], "zeus")
        smart = zbsoserver.Server(args=["--policy", "smart"])
        self.addCleanup(smart.close)
        smart.start()
        bso = self.bso(spec(job_id="pypol-d"), url=f"http://{smart.host}:{smart.port}")
        self.assertEqual(bso.job.policy, "smart")
        self.assertEqual(smart.request("GET", "/jobs/pypol-d").json["policy"], "smart")


class TestCarbonIntensity(support.ServerCase):
    """Issue 25's carbon_intensity_g_per_kwh: optional (unset: not sent), checked before
    sending, registered and used for the job's CO2e figures by a real `zbso serve`."""

    def test_field(self):
        from zbso.optimizer.batch_size.common import ValidationError
        self.assertIsNone(spec().carbon_intensity_g_per_kwh)
        self.assertNotIn("carbon_intensity_g_per_kwh", spec().json())
        self.assertEqual(spec(carbon_intensity_g_per_kwh=0).dict()["carbon_intensity_g_per_kwh"],
                         0.0)
        for bad, text in ((-1, "-1"), (1e6, "1000000.0"), (float("nan"), "finite"),
                          ("lots", "lots")):
            with self.subTest(bad):
                with self.assertRaises(ValidationError) as cm:
                    spec(carbon_intensity_g_per_kwh=bad)
                self.assertIn(text, str(cm.exception))

    def test_registered_and_used(self):
        from zbso.monitor import ZeusMonitor
        from zbso.optimizer.batch_size import BatchSizeOptimizer
        bso = BatchSizeOptimizer(monitor=ZeusMonitor(), server_url=self.url,
                                 job=spec(job_id="pypol-c", carbon_intensity_g_per_kwh=120.5))
        self.assertEqual(bso.job.carbon_intensity_g_per_kwh, 120.5)
        doc = self.srv.request("GET", "/jobs/pypol-c").json
        self.assertEqual(doc["spec"]["carbon_intensity_g_per_kwh"], 120.5)
        self.assertEqual(doc["footprint"], {"carbon_intensity_g_per_kwh": 120.5,
                                            "carbon_intensity_source": "job"})


if __name__ == "__main__":
    unittest.main()
