"""test_values.py: bad values against a real `zbso serve` (SQLite, PostgreSQL under
tests/pg/with_pg.sh, or MariaDB under tests/mysql/with_mysql.sh): reports whose cost is
not finite (or too large or small for the arms' statistics) and priors out of range are
refused with 422 naming the field, a job whose database already holds such a measurement
(planted here as an older zbso stored it) keeps answering, a job id with a NUL (%00) or
bytes that are not UTF-8 in the query is refused without touching any job, and
"job_id": "" is refused as Zeus refuses it."""

import sqlite3
import unittest

from zbsoserver import BACKEND, ServerTestCase, job_spec


def detail(resp):
    """(loc, msg) of the first entry of a 422 body."""
    first = resp.json["detail"][0]
    return first["loc"], first["msg"]


class BadValuesTest(ServerTestCase):
    def register_job(self, job_id, **overrides):
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id=job_id, **overrides))
        self.assertEqual(r.status, 201, r)
        return job_id

    def next_trial(self, job_id):
        r = self.srv.request("GET", "/jobs/batch_size?job_id=" + job_id)
        self.assertEqual(r.status, 200, r)
        return r.json

    def report(self, trial, time_s, energy_j, metric=0.9):
        return self.srv.request("POST", "/report", body=dict(
            trial, time=time_s, energy=energy_j, metric=metric, current_epoch=1))

    def plant(self, sql):
        """Runs sql on the stopped server's database, as an older zbso would have left it,
        then starts the server again."""
        self.srv.kill()
        if BACKEND == "postgresql":
            self.srv.db.psql(sql)
        elif BACKEND == "mysql":
            self.srv.db.sql(sql)
        else:
            conn = sqlite3.connect(self.srv.db_path, timeout=30)
            try:
                conn.executescript(sql)
                conn.commit()
            finally:
                conn.close()
        self.srv.start()

    def test_report_with_non_finite_cost_refused(self):
        job = self.register_job("itest-inf", num_pruning_rounds=1, batch_sizes=[8, 16],
                                default_batch_size=8, mab_seed=1)
        trial = self.next_trial(job)
        before = self.srv.snapshot()
        # 0.5 * 1e308 + (0.5 * 300) * 1e308 is inf: the report.
        r = self.report(trial, 1e308, 1e308)
        self.assertEqual(r.status, 422, r)
        loc, msg = detail(r)
        self.assertEqual(loc, ["body", "time"])
        self.assertIn("time 1e+308 s and energy 1e+308 J give cost inf", msg)
        self.assertEqual(r.json["detail"][0]["type"], "value_error")
        # Finite but past the bound where the arms' variances overflow; and too small.
        r = self.report(trial, 0.0, 1e200, metric=0.1)
        self.assertEqual(r.status, 422, r)
        self.assertEqual(detail(r)[0], ["body", "energy"])
        r = self.report(trial, 1e-120, 0.0)
        self.assertEqual(r.status, 422, r)
        self.assertEqual(detail(r)[0], ["body", "time"])
        self.assertEqual(self.srv.snapshot(), before)
        # The trial still takes a good result, and the job goes on.
        r = self.report(trial, 10.0, 1000.0)
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.json["converged"])
        self.next_trial(job)

    def test_prior_out_of_range_refused(self):
        before = self.srv.snapshot()
        for field, value in (("mab_prior_mean", -1e200), ("mab_prior_mean", 2e150),
                             ("mab_prior_precision", 1e151)):
            r = self.srv.request("POST", "/jobs",
                                 body=job_spec(job_id="itest-prior", **{field: value}))
            self.assertEqual(r.status, 422, r)
            loc, msg = detail(r)
            self.assertEqual(loc, ["body", field])
            self.assertIn(repr(value), msg)
        self.assertEqual(self.srv.snapshot(), before)
        self.register_job("itest-prior", mab_prior_mean=-1e150, mab_prior_precision=1e150)

    def test_empty_job_id_refused_like_zeus(self):
        before = self.srv.snapshot()
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id=""))
        self.assertEqual(r.status, 422, r)
        # Zeus's JobSpec._check_job_id: "" does not start with the prefix.
        self.assertEqual(r.json, {"detail": [{
            "loc": ["body", "job_id"], "msg": "Job_id() does not start with prefix(itest).",
            "type": "value_error"}]})
        self.assertEqual(self.srv.snapshot(), before)
        # null (and absence) still ask for a generated id.
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id=None))
        self.assertEqual(r.status, 201, r)
        self.assertRegex(r.json["job_id"], r"^itest-[0-9a-f]{8}$")

    def test_nul_or_non_utf8_in_query_job_id_refused(self):
        self.register_job("h-b", job_id_prefix="h")
        before = self.srv.snapshot()
        for method, path in (("DELETE", "/jobs?job_id=h-b%00x"),
                             ("GET", "/jobs/batch_size?job_id=h-b%00x"),
                             ("DELETE", "/jobs?job_id=h-b%00"),
                             ("DELETE", "/jobs?JOB_ID=h-b%00x&job_id=h-b")):
            r = self.srv.request(method, path)
            self.assertEqual(r.status, 422, (path, r))
            loc, msg = detail(r)
            self.assertEqual(loc, ["query", "job_id"])
            self.assertIn("NUL", msg)
        # A key with a NUL is another key: job_id is then missing.
        r = self.srv.request("DELETE", "/jobs?job_id%00x=h-b")
        self.assertEqual(r.status, 422, r)
        self.assertEqual(detail(r), (["query", "job_id"], "field required"))
        # Bytes that are not UTF-8 cannot name a job on either store.
        for path in ("/jobs/batch_size?job_id=h-b%FF", "/jobs/batch_size?job_id=h%ED%A0%80"):
            r = self.srv.request("GET", path)
            self.assertEqual(r.status, 422, (path, r))
            loc, msg = detail(r)
            self.assertEqual(loc, ["query", "job_id"])
            self.assertIn("not valid UTF-8", msg)
        # In a body, jansson refuses a NUL (\u0000) in any string.
        trial = {"job_id": "h-b\u0000x", "batch_size": 16, "trial_number": 1}
        r = self.srv.request("PATCH", "/trials", body=trial)
        self.assertEqual(r.status, 422, r)
        self.assertIn("\\u0000 is not allowed", detail(r)[1])
        self.assertEqual(self.srv.snapshot(), before)
        r = self.srv.request("DELETE", "/jobs?job_id=h-b")
        self.assertEqual(r.status, 200, r)

    def test_stored_non_finite_measurement_does_not_poison_the_job(self):
        """An older zbso accepted 1e308 s and 1e308 J: trial 1 of batch size 8 ended with
        cost inf, which became the min cost; fitting arm 8 at the end of pruning gave NaN
        and GET /jobs/batch_size answered 500 from then on."""
        job = self.register_job("itest-old", num_pruning_rounds=1, batch_sizes=[8, 16],
                                default_batch_size=8, mab_seed=7, mab_num_explorations=1)
        t1 = self.next_trial(job)
        self.assertEqual((t1["trial_number"], t1["batch_size"]), (1, 8))
        self.assertEqual(self.report(t1, 10.0, 1000.0).status, 200)
        t2 = self.next_trial(job)
        self.assertEqual((t2["trial_number"], t2["batch_size"]), (2, 16))
        self.assertEqual(self.report(t2, 12.0, 900.0).status, 200)
        # MariaDB's DOUBLE cannot hold an infinity (a literal past DBL_MAX is refused), so
        # there the min cost that the older zbso set to trial 1's inf cost is planted as
        # the largest double; trial 1's 1e308 s and 1e308 J still give an infinite cost.
        inf = {"postgresql": "'Infinity'::float8",
               "mysql": "1.7976931348623157e308"}.get(BACKEND, "9e999")
        self.plant(f"UPDATE trials SET time = 1e308, energy = 1e308 "
                   f"WHERE job_id = '{job}' AND trial_number = 1; "
                   f"UPDATE jobs SET min_cost = {inf} WHERE job_id = '{job}';")
        # Pruning ends here: arm 8 is fitted without trial 1 (no observation left), arm 16
        # from trial 2; the first MAB answer explores arm 8.
        for _ in range(2):
            t = self.next_trial(job)
            self.assertEqual(t["batch_size"], 8)
            r = self.report(t, 11.0, 950.0)
            self.assertEqual(r.status, 200, r)
        self.assertIn("fitted without 1 stored measurement(s)", self.srv.log_tail(20000))
        # (The SQLite schema calls the mean "mean", PostgreSQL's "param_mean".)
        arms = {a["batch_size"]: (a.get("mean", a.get("param_mean")), a["num_observations"])
                for a in self.srv.rows("arms", "batch_size")}
        # Arm 8 holds the two new results (0.5 * 950 + 150 * 11 = 2125 each), arm 16 trial 2.
        self.assertEqual(arms, {8: (-2125.0, 2), 16: (-(0.5 * 900.0 + 150.0 * 12.0), 1)})
        # Restarted, the job still answers.
        self.srv.restart()
        self.next_trial(job)


if __name__ == "__main__":
    unittest.main()
