"""test_bad_input.py: 60+ malformed requests against a real `zbso serve`. Each must get the
expected 4xx with a body naming the problem, the server must stay up, and the database must
be unchanged (every table dumped read-only before and after)."""

import json
import unittest

from zbsoserver import ServerTestCase, job_spec

JOB = "bad-1"
GOOD_REPORT = {"job_id": JOB, "batch_size": 16, "trial_number": 1, "time": 10.0,
               "energy": 1000.0, "metric": 0.1, "current_epoch": 1}
GOOD_TRIAL = {"job_id": JOB, "batch_size": 16, "trial_number": 1}


def bspec(**overrides):
    """A valid spec of prefix "bad" with overrides."""
    return job_spec(**dict({"job_id_prefix": "bad"}, **overrides))


def jb(obj):
    return json.dumps(obj).encode()


def without(d, key):
    d = dict(d)
    del d[key]
    return d


def cases():
    """(name, method, path, raw body or None, headers, allowed statuses, words): the body
    of the answer must contain one of `words` (case-insensitive)."""
    c = []

    def add(name, method, path, raw, statuses, words, headers=None):
        c.append((name, method, path, raw, headers or {}, statuses, words))

    # -- POST /jobs: broken bodies -------------------------------------------------------
    spec_text = json.dumps(bspec(job_id="bad-new"))
    for name, raw in [
        ("empty body", b""),
        ("truncated", spec_text[:-5].encode()),
        ("trailing garbage", spec_text.encode() + b" x"),
        ("two objects", spec_text.encode() * 2),
        ("array", b"[1, 2, 3]"),
        ("string", b'"jobs"'),
        ("null", b"null"),
        ("number", b"42"),
        ("single quotes", spec_text.replace('"', "'").encode()),
        ("unquoted keys", b"{job_id_prefix: 1}"),
        ("NaN literal", spec_text.encode()[:-1] + b', "eta_knob": NaN}'),
        ("Infinity literal", spec_text.encode()[:-1] + b', "max_power": Infinity}'),
        ("-Infinity literal", spec_text.encode()[:-1] + b', "eta_knob": -Infinity}'),
        ("number overflow", spec_text.encode()[:-1] + b', "max_power": 1e999}'),
        ("invalid utf-8", spec_text.encode()[:-1] + b', "gpu_model": "\xff\xfe"}'),
        ("deep nesting", b"[" * 5000 + b"]" * 5000),
        ("NUL in body", spec_text.encode()[:-1] + b', "x": "\x00"}'),
    ]:
        add("jobs " + name, "POST", "/jobs", raw, (422,), ["detail"])

    # -- POST /jobs: wrong types and values ----------------------------------------------
    for name, spec, field in [
        ("eta string", bspec(job_id="bad-new", eta_knob="high"), "eta_knob"),
        ("batch sizes strings", bspec(job_id="bad-new", batch_sizes=["8", "16"]),
         "batch_sizes"),
        ("batch sizes nested", bspec(job_id="bad-new", batch_sizes=[[8], [16]]),
         "batch_sizes"),
        ("batch sizes floats", bspec(job_id="bad-new", batch_sizes=[8.5, 16]),
         "batch_sizes"),
        ("batch sizes null", bspec(job_id="bad-new", batch_sizes=None), "batch_sizes"),
        ("gpus string", bspec(job_id="bad-new", number_of_gpus="one"), "number_of_gpus"),
        ("gpus negative", bspec(job_id="bad-new", number_of_gpus=-1), "number_of_gpus"),
        ("prefix null", bspec(job_id="bad-new", job_id_prefix=None), "job_id_prefix"),
        ("job id number", job_spec(job_id=5), "job_id"),
        ("higher_is_better int", bspec(job_id="bad-new", higher_is_better_metric=2),
         "higher_is_better_metric"),
        ("target string", bspec(job_id="bad-new", target_metric="0.5"), "target_metric"),
        ("window float", bspec(job_id="bad-new", window_size=1.5), "window_size"),
        ("huge batch size", bspec(job_id="bad-new", batch_sizes=[8, 16, 2 ** 70]),
         "too big"),
        ("missing prefix", without(bspec(job_id="bad-new"), "job_id_prefix"),
         "job_id_prefix"),
        ("missing max_power", without(bspec(job_id="bad-new"), "max_power"), "max_power"),
        ("conflicting id prefix", bspec(job_id="bad-1x", job_id_prefix="zzz"), "job_id"),
    ]:
        add("jobs " + name, "POST", "/jobs", jb(spec), (422,), [field])
    add("jobs different config of existing job", "POST", "/jobs",
        jb(job_spec(job_id=JOB, job_id_prefix="bad", eta_knob=0.9)), (409,), [JOB])

    # -- GET /jobs/batch_size -------------------------------------------------------------
    add("bs unknown job", "GET", "/jobs/batch_size?job_id=bad-nosuch", None, (404,),
        ["bad-nosuch"])
    add("bs missing query", "GET", "/jobs/batch_size", None, (422,), ["job_id"])
    add("bs other query key", "GET", "/jobs/batch_size?jobid=bad-1", None, (422,),
        ["job_id"])
    add("bs empty job id", "GET", "/jobs/batch_size?job_id=", None, (422, 404), ["job_id"])
    add("bs bad percent escape", "GET", "/jobs/batch_size?job_id=%zz", None, (422, 404),
        ["%zz", "job_id"])
    add("bs repeated job id", "GET", "/jobs/batch_size?job_id=bad-x&job_id=bad-y", None,
        (422, 404), ["job_id", "bad-x", "bad-y"])
    add("bs id over 300 bytes", "GET", "/jobs/batch_size?job_id=" + "b" * 400, None,
        (422, 404), ["job_id", "bbbb"])
    add("bs POST not allowed", "POST", "/jobs/batch_size?job_id=bad-1", b"{}", (405,),
        ["POST"])

    # -- POST /report ----------------------------------------------------------------------
    for name, body, field in [
        ("negative time", dict(GOOD_REPORT, time=-1.0), "time"),
        ("negative energy", dict(GOOD_REPORT, energy=-0.5), "energy"),
        ("epoch zero", dict(GOOD_REPORT, current_epoch=0), "current_epoch"),
        ("epoch fractional", dict(GOOD_REPORT, current_epoch=1.5), "current_epoch"),
        ("metric string", dict(GOOD_REPORT, metric="0.9"), "metric"),
        ("time bool", dict(GOOD_REPORT, time=True), "time"),
        ("batch size string", dict(GOOD_REPORT, batch_size="16"), "batch_size"),
        ("trial number null", dict(GOOD_REPORT, trial_number=None), "trial_number"),
        ("job id number", dict(GOOD_REPORT, job_id=1), "job_id"),
        ("missing time", without(GOOD_REPORT, "time"), "time"),
        ("missing metric", without(GOOD_REPORT, "metric"), "metric"),
        ("missing job id", without(GOOD_REPORT, "job_id"), "job_id"),
        ("missing epoch", without(GOOD_REPORT, "current_epoch"), "current_epoch"),
    ]:
        add("report " + name, "POST", "/report", jb(body), (422,), [field])
    add("report NaN metric", "POST", "/report",
        jb(GOOD_REPORT).replace(b'"metric": 0.1', b'"metric": NaN'), (422,), ["detail"])
    add("report Infinity time", "POST", "/report",
        jb(GOOD_REPORT).replace(b'"time": 10.0', b'"time": Infinity'), (422,), ["detail"])
    add("report broken json", "POST", "/report", b'{"job_id": "bad-1",', (422,), ["detail"])
    add("report array", "POST", "/report", b"[]", (422,), ["detail"])
    add("report batch size not in job", "POST", "/report",
        jb(dict(GOOD_REPORT, batch_size=64)), (404,), ["64"])
    add("report wrong batch size", "POST", "/report",
        jb(dict(GOOD_REPORT, batch_size=8)), (404,), ["8"])
    add("report unknown trial", "POST", "/report", jb(dict(GOOD_REPORT, trial_number=99)),
        (404,), ["99"])
    add("report unknown job", "POST", "/report",
        jb(dict(GOOD_REPORT, job_id="bad-nosuch")), (404,), ["bad-nosuch"])
    add("report GET not allowed", "GET", "/report", None, (405,), ["GET"])
    add("report text/plain", "POST", "/report", jb(GOOD_REPORT), (422,),
        ["content", "text/plain"], {"Content-Type": "text/plain"})

    # -- PATCH /trials ---------------------------------------------------------------------
    add("trials unknown trial", "PATCH", "/trials", jb(dict(GOOD_TRIAL, trial_number=42)),
        (404,), ["42"])
    add("trials unknown job", "PATCH", "/trials", jb(dict(GOOD_TRIAL, job_id="bad-zz")),
        (404,), ["bad-zz"])
    add("trials missing trial number", "PATCH", "/trials",
        jb(without(GOOD_TRIAL, "trial_number")), (422,), ["trial_number"])
    add("trials string trial number", "PATCH", "/trials",
        jb(dict(GOOD_TRIAL, trial_number="1")), (422,), ["trial_number"])
    add("trials zero trial number", "PATCH", "/trials",
        jb(dict(GOOD_TRIAL, trial_number=0)), (422,), ["trial_number"])
    add("trials not json", "PATCH", "/trials", b"trial 1 please", (422,), ["detail"])
    add("trials GET not allowed", "GET", "/trials", None, (405,), ["GET"])

    # -- DELETE /jobs, other paths and methods ---------------------------------------------
    add("delete unknown job", "DELETE", "/jobs?job_id=bad-nosuch", None, (404,),
        ["bad-nosuch"])
    add("delete missing query", "DELETE", "/jobs", None, (422,), ["job_id"])
    add("PUT jobs", "PUT", "/jobs", jb(bspec(job_id="bad-new")), (405,), ["PUT"])
    add("PATCH jobs", "PATCH", "/jobs", jb(bspec(job_id="bad-new")), (405,), ["PATCH"])
    add("DELETE report", "DELETE", "/report", None, (405,), ["DELETE"])
    add("unknown path", "GET", "/nope", None, (404,), ["/nope"])
    add("unknown nested path", "POST", "/jobs/batch_size/extra", b"{}", (404, 405),
        ["/jobs/batch_size/extra", "POST"])

    # -- NUL or bad UTF-8 in the path (issue 22 item 4): libmicrohttpd hands the path on as a
    # C string, so without the check /%00 served the dashboard, /jobs/bad-1%00zzz showed
    # bad-1, DELETE /jobs%00x deleted it and /jobs/batch_size%00 dispatched a trial.
    for name, method, path, raw in [
        ("root NUL", "GET", "/%00", None),
        ("job path NUL", "GET", f"/jobs/{JOB}%00zzz", None),
        ("trials path NUL", "GET", f"/jobs/{JOB}%00/trials", None),
        ("delete path NUL", "DELETE", f"/jobs%00x?job_id={JOB}", None),
        ("batch size path NUL", "GET", f"/jobs/batch_size%00?job_id={JOB}", None),
        ("report path NUL", "POST", "/report%00", jb(dict(GOOD_REPORT, metric=0.9))),
        ("trials patch path NUL", "PATCH", "/trials%00", jb(GOOD_TRIAL)),
        ("healthz path NUL", "GET", "/healthz%00x", None),
    ]:
        add(name, method, path, raw, (400,), ["NUL"])
    for name, path in [("job path bad utf-8", f"/jobs/{JOB}%ff"),
                       ("job path overlong utf-8", "/jobs/bad-%C0%AF"),
                       ("job path lone surrogate", "/jobs/bad-%ED%A0%80")]:
        add(name, "GET", path, None, (400, 404), ["UTF-8"])

    # -- content type and size --------------------------------------------------------------
    add("jobs text/plain", "POST", "/jobs", spec_text.encode(), (422,),
        ["content", "text/plain"], {"Content-Type": "text/plain"})
    add("jobs form encoded", "POST", "/jobs", b"job_id_prefix=bad", (422,),
        ["content", "form"], {"Content-Type": "application/x-www-form-urlencoded"})
    big = b'{"job_id_prefix": "' + b"a" * (1024 * 1024 + 16) + b'"}'
    add("jobs body over 1 MiB", "POST", "/jobs", big, (413,),
        ["1048576", "large", "limit", "size"])
    return c


class BadInputTest(ServerTestCase):
    def setUp(self):
        super().setUp()
        # Stored state to protect: a job with one finished and one dispatched trial.
        r = self.srv.request("POST", "/jobs",
                             body=job_spec(job_id=JOB, job_id_prefix="bad"))
        self.assertEqual(r.status, 201, r)
        r = self.srv.request("GET", f"/jobs/batch_size?job_id={JOB}")
        self.assertEqual(r.json, {"job_id": JOB, "batch_size": 16, "trial_number": 1})

    def test_malformed_requests(self):
        all_cases = cases()
        self.assertGreaterEqual(len(all_cases), 60)
        before = self.srv.snapshot()
        self.assertIn(JOB, repr(before))
        for name, method, path, raw, headers, statuses, words in all_cases:
            with self.subTest(name):
                r = self.srv.request(method, path, raw=raw, headers=headers)
                self.assertIn(r.status, statuses, f"{method} {path}: {r}")
                text = r.body.decode("utf-8", "replace").lower()
                self.assertTrue(any(w.lower() in text for w in words),
                                f"{name}: body {r.body[:300]!r} names none of {words}")
                if r.status == 422:
                    self.assertEqual(list(r.json.keys()), ["detail"], r)
                else:
                    self.assertEqual(list(r.json.keys()), ["message"], r)
                self.assertTrue(self.srv.healthy(), f"server down after {name}:\n"
                                + self.srv.log_tail())
        self.assertEqual(self.srv.snapshot(), before)
        # The snapshot does see a change: one good request alters it.
        r = self.srv.request("PATCH", "/trials", body=GOOD_TRIAL)
        self.assertEqual(r.status, 200, r)
        self.assertNotEqual(self.srv.snapshot(), before)


class BadAuthTest(ServerTestCase):
    server_env = {"ZEUS_BSO_API_TOKEN": "right-token"}

    def test_wrong_or_missing_token(self):
        good = {"Authorization": "Bearer right-token"}
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id=JOB, job_id_prefix="bad"),
                             headers=good)
        self.assertEqual(r.status, 201, r)
        before = self.srv.snapshot()
        bads = [{}, {"Authorization": "Bearer wrong-token"},
                {"Authorization": "bearer"}, {"Authorization": "Bearer right-token2"},
                {"Authorization": "Token right-token"}, {"X-Api-Token": "right-token"}]
        requests = [("POST", "/jobs", jb(job_spec(job_id="bad-2", job_id_prefix="bad"))),
                    ("GET", f"/jobs/batch_size?job_id={JOB}", None),
                    ("DELETE", f"/jobs?job_id={JOB}", None),
                    ("POST", "/report", jb(GOOD_REPORT)),
                    ("PATCH", "/trials", jb(GOOD_TRIAL))]
        for i, headers in enumerate(bads):
            for method, path, raw in requests:
                with self.subTest(f"{i} {method} {path}"):
                    r = self.srv.request(method, path, raw=raw, headers=headers)
                    self.assertEqual(r.status, 401, r)
                    self.assertEqual(list(r.json.keys()), ["message"], r)
                    text = r.json["message"].lower()
                    self.assertTrue("token" in text or "authoriz" in text or "bearer" in text,
                                    r)
                    self.assertTrue(self.srv.healthy())
        self.assertEqual(self.srv.snapshot(), before)


if __name__ == "__main__":
    unittest.main()
