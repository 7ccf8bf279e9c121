"""test_metrics.py: GET /metrics (SPEC §5) against a real `zbso serve`: Prometheus's own
checker (`promtool check metrics`) passes on the text after traffic; counters move by
exactly what a known sequence of requests did (requests by route, method and status,
dispatches, ends, a lease expiry, reported energy and time); each route's histogram
counts its requests; the bearer token; per-job series only with --metrics-per-job (job
ids escaped); PostgreSQL and MariaDB reruns counted. promtool comes from $ZBSO_PROMTOOL or PATH
(scripts/setup.sh installs it); without it the tests fail, never skip."""

import concurrent.futures
import math
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.parse

from zbsoserver import BACKEND, Server, db_ctl, job_spec, run_cli

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
TOKEN = "metrics-t0ken"


def promtool():
    path = os.environ.get("ZBSO_PROMTOOL") or shutil.which("promtool")
    if not path or not os.access(path, os.X_OK):
        raise AssertionError("promtool not found (set ZBSO_PROMTOOL or put it on PATH; "
                             "scripts/setup.sh installs it from Debian's prometheus package)")
    return path


def promtool_check(test, text):
    """Runs `promtool check metrics` on text; fails the test with its output."""
    r = subprocess.run([promtool(), "check", "metrics"], input=text.encode("utf-8"),
                       capture_output=True, timeout=60)
    out = (r.stdout + r.stderr).decode("utf-8", "replace")
    test.assertEqual(r.returncode, 0, f"promtool check metrics failed:\n{out}\n--- text:\n"
                     + text[:6000])
    test.assertEqual(out.strip(), "", out)


def parse_labels(text):
    """`a="x",b="y\\"z"` -> {"a": "x", "b": 'y"z'}, undoing the format's escapes."""
    labels, i = {}, 0
    while i < len(text):
        eq = text.index("=", i)
        name = text[i:eq]
        if text[eq + 1] != '"':
            raise ValueError(f"label {name} is not quoted in {text!r}")
        j, value = eq + 2, []
        while text[j] != '"':
            if text[j] == "\\":
                value.append({"\\": "\\", '"': '"', "n": "\n"}[text[j + 1]])
                j += 2
            else:
                value.append(text[j])
                j += 1
        labels[name] = "".join(value)
        i = j + 1
        if i < len(text):
            if text[i] != ",":
                raise ValueError(f"expected ',' at {i} in {text!r}")
            i += 1
    return labels


class Exposition:
    """A parsed /metrics text: types by family, and samples {(name, labels): value}."""

    def __init__(self, text):
        self.text = text
        self.types = {}
        self.samples = {}
        for line in text.split("\n"):
            if not line:
                continue
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(" ", 3)
                self.types[name] = kind
                continue
            if line.startswith("#"):
                continue
            head, _, value = line.rpartition(" ")
            if "{" in head:
                name, _, rest = head.partition("{")
                labels = parse_labels(rest[:-1])
            else:
                name, labels = head, {}
            key = (name, frozenset(labels.items()))
            if key in self.samples:
                raise AssertionError(f"sample {key} twice")
            self.samples[key] = float(value)

    def get(self, name, **labels):
        return self.samples.get((name, frozenset(labels.items())), 0.0)

    def series(self, name):
        """{frozenset(labels): value} of every sample named name."""
        return {k[1]: v for k, v in self.samples.items() if k[0] == name}


def report_body(job_id, bs, n, epoch, time_s, energy, metric):
    return {"job_id": job_id, "batch_size": bs, "trial_number": n, "time": time_s,
            "energy": energy, "metric": metric, "current_epoch": epoch}


class MetricsCase(unittest.TestCase):
    env = None
    args = ()

    def start(self, env=None, args=()):
        srv = Server(env=env, args=args)
        self.addCleanup(srv.close)
        return srv.start()

    def scrape(self, srv, headers=None):
        r = srv.request("GET", "/metrics", headers=headers)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.headers.get("Content-Type"), CONTENT_TYPE)
        return Exposition(r.body.decode("utf-8"))

    def post(self, srv, path, body, want):
        r = srv.request("POST", path, body=body)
        self.assertEqual(r.status, want, r)
        return r

    def dispatch(self, srv, job_id):
        r = srv.request("GET", "/jobs/batch_size?job_id=" + urllib.parse.quote(job_id))
        self.assertEqual(r.status, 200, r)
        return r.json


class CountersTest(MetricsCase):
    def test_known_sequence_moves_counters_exactly(self):
        srv = self.start(env={"ZEUS_BSO_TRIAL_TIMEOUT": "1"})
        before = self.scrape(srv)
        spec_a = job_spec(job_id="itest-a", target_metric=0.5, max_epochs=100)
        self.post(srv, "/jobs", spec_a, 201)
        self.post(srv, "/jobs", spec_a, 200)
        t1 = self.dispatch(srv, "itest-a")
        n_reports = 4
        for e in range(1, n_reports + 1):
            r = self.post(srv, "/report", report_body("itest-a", t1["batch_size"], 1, e,
                                                      10.0 * e, 1000.0 * e, 0.1), 200)
            self.assertFalse(r.json["stop_train"], r)
        final_time, final_energy = 50.5, 6250.25
        r = self.post(srv, "/report", report_body("itest-a", t1["batch_size"], 1, 5,
                                                  final_time, final_energy, 0.9), 200)
        self.assertTrue(r.json["stop_train"], r)
        self.post(srv, "/report", {"job_id": "itest-a"}, 422)
        for _ in range(3):
            self.assertEqual(srv.request("GET", "/nope").status, 404)
        self.assertEqual(srv.request("DELETE", "/nope").status, 404)
        self.assertEqual(srv.request("PUT", "/report").status, 405)
        self.assertEqual(srv.request("GET", "/jobs/batch_size?job_id=itest-none").status, 404)
        # Job b: one trial ended by PATCH, one that outlives its 1 s lease.
        self.post(srv, "/jobs", job_spec(job_id="itest-b"), 201)
        b1 = self.dispatch(srv, "itest-b")
        r = srv.request("PATCH", "/trials", body=b1)
        self.assertEqual(r.status, 200, r)
        b2 = self.dispatch(srv, "itest-b")
        time.sleep(1.5)
        b3 = self.dispatch(srv, "itest-b")
        self.assertEqual((b2["trial_number"], b3["trial_number"]), (2, 3))
        after = self.scrape(srv)
        promtool_check(self, after.text)

        expected = {
            ("/jobs", "POST", "201"): 2, ("/jobs", "POST", "200"): 1,
            ("/jobs/batch_size", "GET", "200"): 4, ("/jobs/batch_size", "GET", "404"): 1,
            ("/report", "POST", "200"): n_reports + 1, ("/report", "POST", "422"): 1,
            ("/trials", "PATCH", "200"): 1,
            ("other", "GET", "404"): 3, ("other", "DELETE", "404"): 1,
            ("other", "PUT", "405"): 1,
            ("/metrics", "GET", "200"): 1,       # the scrape before
        }
        seen = set(before.series("zbso_http_requests_total")) | set(
            after.series("zbso_http_requests_total"))
        per_slot = {}
        for labels in seen:
            d = dict(labels)
            key = (d["route"], d["method"], d["code"])
            delta = (after.get("zbso_http_requests_total", **d)
                     - before.get("zbso_http_requests_total", **d))
            self.assertEqual(delta, expected.get(key, 0), key)
            slot = (d["route"], d["method"])
            per_slot[slot] = per_slot.get(slot, 0) + after.get("zbso_http_requests_total", **d)
        for key in expected:
            self.assertIn(frozenset(zip(("route", "method", "code"), key)), seen, key)
        # Each route's histogram counts exactly its requests; buckets only grow.
        for (route, method), n in per_slot.items():
            labels = {"route": route, "method": method}
            with self.subTest(route=route, method=method):
                self.assertEqual(
                    after.get("zbso_http_request_duration_seconds_count", **labels), n)
                buckets = sorted(
                    (float(dict(k)["le"]), v) for k, v in
                    after.series("zbso_http_request_duration_seconds_bucket").items()
                    if dict(k)["route"] == route and dict(k)["method"] == method)
                self.assertEqual(buckets[-1], (math.inf, n))
                counts = [v for _, v in buckets]
                self.assertEqual(counts, sorted(counts))
                self.assertGreater(
                    after.get("zbso_http_request_duration_seconds_sum", **labels), 0)

        def delta(name, **labels):
            return after.get(name, **labels) - before.get(name, **labels)

        self.assertEqual(delta("zbso_trials_dispatched_total", type="Exploration")
                         + delta("zbso_trials_dispatched_total", type="Concurrent")
                         + delta("zbso_trials_dispatched_total", type="MAB"), 4)
        types = {0: "Exploration", 1: "Concurrent", 2: "MAB"}
        trials = srv.rows("trials", "job_id, trial_number")
        for code, name in types.items():
            self.assertEqual(delta("zbso_trials_dispatched_total", type=name),
                             sum(1 for t in trials if t["type"] == code), name)
        # One series per stop reason (issue 25), each under the status it ends in.
        finished = {k: v for k, v in after.series("zbso_trials_finished_total").items()}
        self.assertEqual(
            {(dict(k)["status"], dict(k)["stop_reason"]) for k in finished},
            {("Succeeded", "target_reached"), ("Succeeded", "cost_bound"),
             ("Succeeded", "max_epochs"), ("Failed", "ended"), ("Failed", "lease_expired")})
        self.assertEqual(delta("zbso_trials_finished_total", status="Succeeded",
                               stop_reason="target_reached"), 1)
        for reason in ("cost_bound", "max_epochs"):
            self.assertEqual(delta("zbso_trials_finished_total", status="Succeeded",
                                   stop_reason=reason), 0, reason)
        self.assertEqual(delta("zbso_trials_finished_total", status="Failed",
                               stop_reason="ended"), 1)
        self.assertEqual(delta("zbso_trials_finished_total", status="Failed",
                               stop_reason="lease_expired"), 1)
        self.assertEqual(delta("zbso_energy_joules_total"), final_energy)
        # Nothing configured: no CO2e series at all (absent, never 0).
        self.assertNotIn("zbso_co2e_grams_total", after.text)
        self.assertEqual(delta("zbso_trial_lease_expiries_total"), 1)
        self.assertEqual(delta("zbso_reported_energy_joules_total"), final_energy)
        self.assertEqual(delta("zbso_reported_training_seconds_total"), final_time)
        # Gauges read from the database at scrape time.
        self.assertEqual(after.get("zbso_store_readable"), 1)
        self.assertEqual(after.get("zbso_jobs"), 2)
        statuses = {0: "Dispatched", 1: "Succeeded", 2: "Failed"}
        for tc, tn in types.items():
            for sc, sn in statuses.items():
                self.assertEqual(after.get("zbso_trials", type=tn, status=sn),
                                 sum(1 for t in trials
                                     if t["type"] == tc and t["status"] == sc), (tn, sn))
        # Units of work: at least one write per change (2 new jobs, 4 dispatches, the
        # final report, the PATCH) and one read per report, re-registration and scrape.
        self.assertGreaterEqual(
            delta("zbso_store_unit_duration_seconds_count", kind="write"), 8)
        self.assertGreaterEqual(
            delta("zbso_store_unit_duration_seconds_count", kind="read"), n_reports + 3)
        self.assertEqual(after.get("zbso_store_reruns_total"), 0)  # no conflicts, serially
        build = after.series("zbso_build_info")
        self.assertEqual(len(build), 1)
        self.assertEqual(dict(next(iter(build)))["backend"], BACKEND)
        # Process figures (the names client libraries export).
        self.assertGreater(after.get("process_resident_memory_bytes"), 1 << 20)
        self.assertGreater(after.get("process_open_fds"), 3)
        self.assertGreaterEqual(after.get("process_max_fds"), after.get("process_open_fds"))
        self.assertGreater(after.get("process_cpu_seconds_total"), 0)
        self.assertLess(abs(after.get("process_start_time_seconds") - time.time()), 600)
        for name in ("process_cpu_seconds_total", "zbso_reported_energy_joules_total",
                     "zbso_http_requests_total", "zbso_store_reruns_total"):
            self.assertEqual(after.types[name], "counter", name)
        for name in ("zbso_jobs", "zbso_trials", "process_open_fds"):
            self.assertEqual(after.types[name], "gauge", name)
        self.assertEqual(after.types["zbso_http_request_duration_seconds"], "histogram")

    def test_reruns(self):
        # Identical registrations at once: on PostgreSQL and MariaDB each finds the job
        # missing and inserts it, and the loser's unit meets the winner's row and runs
        # again (then answers 200). SQLite's one writer never reruns a unit.
        srv = self.start()
        reruns = 0
        served = BACKEND in ("postgresql", "mysql")
        for rnd in range(20 if served else 3):
            spec = job_spec(job_id=f"itest-race-{rnd}")
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                codes = sorted(pool.map(lambda _: srv.request("POST", "/jobs",
                                                              body=spec).status, range(8)))
            self.assertEqual(codes, [200] * 7 + [201], codes)
            reruns = self.scrape(srv).get("zbso_store_reruns_total")
            if reruns > 0:
                break
        if served:
            self.assertGreater(reruns, 0)
        else:
            self.assertEqual(reruns, 0)


class OutageTest(MetricsCase):
    def test_scrape_while_the_database_is_down(self):
        # The scrape still answers without its database: zbso_store_readable 0, no
        # zbso_jobs or zbso_trials, everything else as before (PostgreSQL or MariaDB
        # stopped). A SQLite file is always readable to the process that has it open.
        srv = self.start()
        self.post(srv, "/jobs", job_spec(job_id="itest-down"), 201)
        m = self.scrape(srv)
        self.assertEqual((m.get("zbso_store_readable"), m.get("zbso_jobs")), (1, 1))
        if BACKEND not in ("postgresql", "mysql"):
            return
        db_ctl("stop")
        down = [True]
        self.addCleanup(lambda: down[0] and db_ctl("start"))
        m = self.scrape(srv)
        promtool_check(self, m.text)
        self.assertEqual(m.get("zbso_store_readable"), 0)
        self.assertNotIn(("zbso_jobs", frozenset()), m.samples)
        self.assertFalse(m.series("zbso_trials"))
        self.assertEqual(m.get("zbso_http_requests_total", route="/jobs", method="POST",
                               code="201"), 1)
        self.assertGreater(m.get("process_resident_memory_bytes"), 0)
        db_ctl("start")
        down[0] = False
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = self.scrape(srv)
            if m.get("zbso_store_readable") == 1:
                break
            time.sleep(0.2)
        self.assertEqual((m.get("zbso_store_readable"), m.get("zbso_jobs")), (1, 1))


README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")


class ReadmeTest(unittest.TestCase):
    def test_scrape_config_example_is_valid(self):
        # The README's scrape config, with its token file made real.
        with open(README, encoding="utf-8") as f:
            text = f.read()
        section = text[re.search(r"\n#{2,3} Metrics\n", text).start():]
        start = section.index("```yaml\n") + len("```yaml\n")
        config = section[start:section.index("```", start)]
        self.assertIn("credentials_file: /etc/prometheus/zbso-token", config)
        with tempfile.TemporaryDirectory(prefix="zbso-prom-") as tmp:
            token = os.path.join(tmp, "zbso-token")
            with open(token, "w", encoding="utf-8") as f:
                f.write(TOKEN)
            path = os.path.join(tmp, "prometheus.yml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(config.replace("/etc/prometheus/zbso-token", token))
            r = subprocess.run([promtool(), "check", "config", path], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


class TokenTest(MetricsCase):
    def test_metrics_needs_the_token(self):
        srv = self.start(env={"ZEUS_BSO_API_TOKEN": TOKEN})
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            r = srv.request("GET", "/metrics", headers=headers)
            self.assertEqual(r.status, 401, r)
            self.assertEqual(r.headers.get("Content-Type"), "application/json")
        m = self.scrape(srv, headers={"Authorization": f"Bearer {TOKEN}"})
        self.assertEqual(m.get("zbso_http_requests_total", route="/metrics", method="GET",
                               code="401"), 2)
        promtool_check(self, m.text)


# Job ids holding every character the format escapes.
ODD_ID = 'itest-q"uote\\back\nline'


class PerJobTest(MetricsCase):
    def traffic(self, srv):
        for jid in ("itest-plain", ODD_ID):
            self.post(srv, "/jobs", job_spec(job_id=jid, target_metric=0.5), 201)
        t = self.dispatch(srv, ODD_ID)
        self.post(srv, "/report", report_body(ODD_ID, t["batch_size"], 1, 1, 12.5, 300.0,
                                              0.9), 200)
        self.dispatch(srv, ODD_ID)

    def test_off_by_default(self):
        srv = self.start()
        self.traffic(srv)
        m = self.scrape(srv)
        promtool_check(self, m.text)
        self.assertNotIn("job_id=", m.text)
        self.assertFalse([k for k in m.samples if k[0].startswith("zbso_job_")])

    def check_per_job(self, srv):
        self.traffic(srv)
        m = self.scrape(srv)
        promtool_check(self, m.text)
        self.assertEqual(m.get("zbso_job_trials", job_id=ODD_ID, status="Succeeded"), 1)
        self.assertEqual(m.get("zbso_job_trials", job_id=ODD_ID, status="Dispatched"), 1)
        self.assertEqual(m.get("zbso_job_trials", job_id=ODD_ID, status="Failed"), 0)
        self.assertEqual(m.get("zbso_job_energy_joules", job_id=ODD_ID), 300.0)
        self.assertEqual(m.get("zbso_job_training_seconds", job_id=ODD_ID), 12.5)
        self.assertEqual(m.get("zbso_job_info", job_id=ODD_ID, stage="Pruning"), 1)
        self.assertEqual(m.get("zbso_job_trials", job_id="itest-plain", status="Dispatched"),
                         0)
        self.assertIn(("zbso_job_trials", frozenset({("job_id", "itest-plain"),
                                                     ("status", "Succeeded")})), m.samples)
        self.assertEqual(m.get("zbso_metrics_jobs_omitted"), 0)
        self.assertEqual(len(m.series("zbso_job_info")), 2)
        self.assertIn('job_id="itest-q\\"uote\\\\back\\nline"', m.text)

    def test_flag(self):
        self.check_per_job(self.start(args=("--metrics-per-job",)))

    def test_environment(self):
        self.check_per_job(self.start(env={"ZEUS_BSO_METRICS_PER_JOB": "true"}))

    def test_bad_environment_value(self):
        srv = Server()
        self.addCleanup(srv.close)
        r = run_cli(["serve", "--port", "0", "--db", srv.db_url], cwd=srv.tmpdir,
                    env={"ZEUS_BSO_METRICS_PER_JOB": "maybe"}, timeout=60)
        self.assertEqual(r.returncode, 2, r)
        self.assertIn("ZEUS_BSO_METRICS_PER_JOB", r.stderr)
        self.assertIn("maybe", r.stderr)


if __name__ == "__main__":
    unittest.main()
