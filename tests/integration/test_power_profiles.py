"""test_power_profiles.py: PUT and GET /power_profiles (SPEC §6.1) against a real `zbso serve`
(SQLite, or PostgreSQL under with_pg.sh): a profile stored per (job, batch size), replaced,
read back with its doubles exact, shown in GET /jobs/{job_id}, moving the job's revision,
kept across a restart, deleted with its job; every refused value, each naming itself."""

import unittest

from zbsoserver import ServerTestCase

PROFILE = [
    {"power_limit": 700, "time": 0.1, "energy": 70.25},
    {"power_limit": 675, "time": 0.10000000000000002, "energy": 1e-300},
    {"power_limit": 650, "time": 0.125, "energy": 0.0},
]


class PowerProfiles(ServerTestCase):
    def setUp(self):
        super().setUp()
        self.job = self.register(job_id="pl-a", job_id_prefix="pl", batch_sizes=[32, 8, 16])

    def put(self, **fields):
        body = {"job_id": self.job, "batch_size": 16, "measurements": PROFILE}
        body.update(fields)
        return self.srv.request("PUT", "/power_profiles", body=body)

    def get(self, job=None, bs=16):
        return self.srv.request(
            "GET", f"/power_profiles?job_id={job or self.job}&batch_size={bs}")

    def test_put_get_replace_and_job_document(self):
        r = self.get()
        self.assertEqual(r.status, 404, r)
        self.assertIn("no power profile of batch size 16", r.json["message"])
        v0 = int(self.srv.request("GET", f"/jobs/{self.job}").json["revision"])

        r = self.put(trial_number=3, profile_steps=40)
        self.assertEqual(r.status, 200, r)
        stored = r.json
        self.assertEqual(stored["job_id"], self.job)
        self.assertEqual(stored["measurements"], PROFILE)
        self.assertEqual((stored["trial_number"], stored["profile_steps"], stored["observer"]),
                         (3, 40, False))
        self.assertIsInstance(stored["created_at"], float)
        self.assertEqual(int(r.headers["X-Zbso-Job-Version"]), v0 + 1)
        r = self.get()
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, stored)

        # Another batch size, then 16 replaced: fewer limits, observer, no trial number.
        self.assertEqual(self.put(batch_size=8, measurements=PROFILE[:1]).status, 200)
        r = self.put(measurements=PROFILE[1:], observer=True)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["measurements"], PROFILE[1:])
        self.assertEqual((r.json["trial_number"], r.json["profile_steps"], r.json["observer"]),
                         (None, None, True))
        doc = self.srv.request("GET", f"/jobs/{self.job}").json
        self.assertEqual(int(doc["revision"]), v0 + 3)
        self.assertEqual([p["batch_size"] for p in doc["power_profiles"]], [8, 16])
        self.assertEqual(doc["power_profiles"][1],
                         {k: v for k, v in self.get().json.items() if k != "job_id"})

        # Kept across a restart; deleted with the job.
        self.srv.terminate()
        self.srv.start()
        self.assertEqual(self.get().json["measurements"], PROFILE[1:])
        self.assertEqual(self.srv.request("DELETE", f"/jobs?job_id={self.job}").status, 200)
        self.assertEqual(self.get().status, 404)
        self.register(job_id="pl-a", job_id_prefix="pl", batch_sizes=[32, 8, 16])
        self.assertEqual(self.get().status, 404)
        self.assertEqual(self.srv.request("GET", "/jobs/pl-a").json["power_profiles"], [])

    def test_refused_values_name_themselves(self):
        many = [{"power_limit": 2000 - i, "time": 1, "energy": 1} for i in range(1025)]
        cases = [
            ({"batch_size": 64}, "batch_size", "batch size 64 is not one of job pl-a"),
            ({"batch_size": 0}, "batch_size", "batch_size must be greater than 0"),
            ({"measurements": []}, "measurements", "at least one measurement"),
            ({"measurements": many}, "measurements", "1025 entries, over the maximum of 1024"),
            ({"measurements": [{"power_limit": 700, "time": 1}]}, "measurements",
             "measurements[0] must be"),
            ({"measurements": [{"power_limit": 700.5, "time": 1, "energy": 1}]},
             "measurements", "measurements[0] must be"),
            ({"measurements": [{"power_limit": 700, "time": "1", "energy": 1}]},
             "measurements", "measurements[0] must be"),
            ({"measurements": [{"power_limit": 0, "time": 1, "energy": 1}]}, "measurements",
             "power_limit 0 W is not positive"),
            # 2^61 + 200 W: times 1000 it wrapped to 200 W in the client (issue 22).
            ({"measurements": [{"power_limit": 2305843009213694152, "time": 1, "energy": 1}]},
             "measurements", "power_limit 2305843009213694152 W is out of range"),
            ({"measurements": [{"power_limit": 100001, "time": 1, "energy": 1}]},
             "measurements", "a power limit is 1 to 100000 W"),
            ({"measurements": [{"power_limit": 9223372036854775807, "time": 1, "energy": 1}]},
             "measurements", "power_limit 9223372036854775807 W is out of range"),
            ({"measurements": [{"power_limit": -9223372036854775808, "time": 1,
                                "energy": 1}]},
             "measurements", "power_limit -9223372036854775808 W is not positive"),
            ({"measurements": [{"power_limit": 700, "time": 0, "energy": 1}]},
             "measurements", "time 0.0 is not a positive"),
            ({"measurements": [{"power_limit": 700, "time": 1, "energy": -2}]},
             "measurements", "energy -2.0 is not a non-negative"),
            ({"measurements": PROFILE + PROFILE[:1]}, "measurements",
             "measurements 0 and 3 both have power limit 700 W"),
            ({"trial_number": 0}, "trial_number", "null or a positive integer"),
            ({"profile_steps": -1}, "profile_steps", "null or a positive integer"),
            ({"observer": "yes"}, "observer", "true or false"),
            ({"job_id": ""}, "job_id", "must not be empty"),
        ]
        for fields, loc, msg in cases:
            with self.subTest(loc=loc, msg=msg):
                r = self.put(**fields)
                self.assertEqual(r.status, 422, r)
                detail = r.json["detail"][0]
                self.assertEqual(detail["loc"], ["body", loc], r.json)
                self.assertIn(msg, detail["msg"])
        r = self.put(job_id="nobody")
        self.assertEqual(r.status, 404, r)
        self.assertIn("nobody", r.json["message"])
        for path, loc in (("/power_profiles?job_id=pl-a", "batch_size"),
                          ("/power_profiles?job_id=pl-a&batch_size=x", "batch_size"),
                          ("/power_profiles?job_id=pl-a&batch_size=-3", "batch_size"),
                          ("/power_profiles?batch_size=16", "job_id")):
            with self.subTest(path=path):
                r = self.srv.request("GET", path)
                self.assertEqual(r.status, 422, r)
                self.assertEqual(r.json["detail"][0]["loc"], ["query", loc])
        self.assertEqual(self.get(job="nobody").status, 404)
        r = self.srv.request("POST", "/power_profiles", body={})
        self.assertEqual(r.status, 405, r)
        self.assertEqual(r.headers.get("Allow"), "GET, PUT")
        # Nothing was stored by any of them.
        self.assertEqual(self.srv.request("GET", "/jobs/pl-a").json["power_profiles"], [])


if __name__ == "__main__":
    unittest.main()
