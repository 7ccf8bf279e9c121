"""test_inspect.py: the inspection API of SPEC §5 against a real `zbso serve` (SQLite, or
PostgreSQL under with_pg.sh): GET /jobs, /jobs/{job_id}, /jobs/{job_id}/trials,
/jobs/{job_id}/trials/{n} and /openapi.json. A scripted job whose every figure is worked
out here by hand from what the test reported; curve points; pages; bad query values and
unknown ids; the token; the OpenAPI document against the routes the server answers."""

import json
import os
import time
import unittest
import urllib.parse

from zbsoserver import Server, ServerTestCase, job_spec

ETA, MAX_POWER = 0.5, 300.0
# batch size -> (time s, energy J) of a converged run: one epoch at 32, two at 16.
RUN = {16: (20.0, 4000.0), 32: (6.0, 1500.0)}


def cost(time_s, energy_j):
    """Zeus's cost, as SPEC §3 defines it."""
    return ETA * energy_j + (1 - ETA) * MAX_POWER * time_s


def no_footprint(test, doc, where="$"):
    """Fails when any key of doc (recursively) is a CO2e or price figure: with no
    --carbon-intensity or --energy-price none may appear, not even as 0 or null."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            test.assertNotIn(k, ("co2e_g", "price", "currency", "footprint"), f"{where}.{k}")
            no_footprint(test, v, f"{where}.{k}")
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            no_footprint(test, v, f"{where}[{i}]")


def q(s):
    """Percent-encodes a path segment (a job id), '/' included."""
    return urllib.parse.quote(s, safe="")


class Scripted(ServerTestCase):
    """One job driven step by step: explorations of 16 (two epochs) and 32 (one), two MAB
    trials, a failed trial and a trial left running."""

    def setUp(self):
        super().setUp()
        self.job = self.register(
            job_id="insp-a", job_id_prefix="insp", batch_sizes=[32, 16],
            default_batch_size=16, eta_knob=ETA, beta_knob=None, target_metric=0.5,
            max_epochs=5, num_pruning_rounds=1, mab_num_explorations=0, mab_seed=42,
            max_power=MAX_POWER)
        self.finished = []        # (trial number, batch size) in trial-number order

    def next_trial(self):
        r = self.srv.request("GET", f"/jobs/batch_size?job_id={self.job}")
        self.assertEqual(r.status, 200, r)
        return r.json["trial_number"], r.json["batch_size"]

    def report(self, tn, bs, epoch, time_s, energy_j, metric):
        body = {"job_id": self.job, "batch_size": bs, "trial_number": tn, "time": time_s,
                "energy": energy_j, "metric": metric, "current_epoch": epoch}
        r = self.srv.request("POST", "/report", body=body)
        self.assertEqual(r.status, 200, r)
        return r.json

    def run_trial(self):
        """Runs the next trial to convergence: 16 reports one point before the final one."""
        tn, bs = self.next_trial()
        t, e = RUN[bs]
        if bs == 16:
            self.assertFalse(self.report(tn, bs, 1, t / 2, e / 2, 0.3)["stop_train"])
        self.assertTrue(self.report(tn, bs, 2 if bs == 16 else 1, t, e, 0.6)["converged"])
        self.finished.append((tn, bs))
        return tn, bs

    def get(self, path, status=200):
        r = self.srv.request("GET", path)
        self.assertEqual(r.status, status, r)
        return r.json

    def script(self):
        self.assertEqual(self.run_trial(), (1, 16))
        self.assertEqual(self.run_trial(), (2, 32))
        self.run_trial()
        self.run_trial()
        tn, bs = self.next_trial()                       # 5: fails
        r = self.srv.request("PATCH", "/trials", body={"job_id": self.job, "batch_size": bs,
                                                        "trial_number": tn})
        self.assertEqual(r.status, 200, r)
        self.running = self.next_trial()                 # 6: left Dispatched

    def test_job_document_figures(self):
        self.script()
        doc = self.get(f"/jobs/{self.job}")
        self.assertEqual(doc["job_id"], self.job)
        self.assertEqual(doc["job_id_prefix"], "insp")
        self.assertEqual(doc["stage"], "MAB")
        self.assertEqual(doc["trials"], {"total": 6, "Dispatched": 1, "Succeeded": 4,
                                         "Failed": 1, "by_stop_reason": {
                                             "target_reached": 4, "cost_bound": 0,
                                             "max_epochs": 0, "ended": 1,
                                             "lease_expired": 0, "unknown": 0}})
        self.assertEqual(doc["spec"]["batch_sizes"], [16, 32])
        self.assertEqual(doc["spec"]["job_id"], self.job)
        self.assertGreaterEqual(doc["revision"], 1)
        # One pruning round: both explored and converged, nothing pruned.
        self.assertEqual(doc["exploration"]["rounds"], [{
            "round": 0, "default_batch_size": 16, "explored": [16, 32],
            "converged": [16, 32], "pruned": [], "complete": True}])
        self.assertEqual(doc["counts"]["Exploration"],
                         {"Dispatched": 0, "Succeeded": 2, "Failed": 0})
        mab = doc["counts"]["MAB"]
        self.assertEqual(mab["Succeeded"] + mab["Failed"] + mab["Dispatched"], 4)
        self.assertEqual(doc["counts"]["Concurrent"],
                         {"Dispatched": 0, "Succeeded": 0, "Failed": 0})

        # Savings, by hand. Every run of a batch size costs the same here, so the
        # default's expected cost is RUN[16]'s and the best batch size is 32.
        spent_t = sum(RUN[bs][0] for _, bs in self.finished)
        spent_e = sum(RUN[bs][1] for _, bs in self.finished)
        spent_c = sum(cost(*RUN[bs]) for _, bs in self.finished)
        n = len(self.finished)
        s = doc["savings"]
        self.assertEqual(s["finished_trials"], 4)
        self.assertEqual(s["failed_trials"], 1)
        self.assertAlmostEqual(s["spent"]["time_s"], spent_t, places=9)
        self.assertAlmostEqual(s["spent"]["energy_j"], spent_e, places=9)
        self.assertAlmostEqual(s["spent"]["cost"], spent_c, places=9)
        self.assertEqual(s["default_batch_size"], 16)
        self.assertEqual(s["default_runs"], sum(1 for _, bs in self.finished if bs == 16))
        self.assertAlmostEqual(s["default_expected"]["cost"], cost(*RUN[16]), places=9)
        self.assertEqual(s["default_expected"]["cost"], 5000.0)
        self.assertAlmostEqual(s["saved"]["energy_j"], n * RUN[16][1] - spent_e, places=9)
        self.assertAlmostEqual(s["saved"]["time_s"], n * RUN[16][0] - spent_t, places=9)
        self.assertAlmostEqual(s["saved"]["cost"], n * 5000.0 - spent_c, places=9)
        # Trial 1 costs exactly the default's 5000: even from the first recurrence on.
        self.assertEqual(s["break_even_recurrence"], 1)
        self.assertEqual(s["best_batch_size"], 32)
        self.assertEqual(s["best_expected_cost"], 1650.0)
        self.assertAlmostEqual(s["regret"], spent_c - n * 1650.0, places=9)
        # Percentages of every recurrence at the default (issue 25), and kWh beside J.
        self.assertAlmostEqual(s["saved_pct"]["cost"],
                               (n * 5000.0 - spent_c) / (n * 5000.0) * 100, places=9)
        self.assertAlmostEqual(s["saved_pct"]["energy"],
                               (n * RUN[16][1] - spent_e) / (n * RUN[16][1]) * 100, places=9)
        self.assertAlmostEqual(s["saved_pct"]["time"],
                               (n * RUN[16][0] - spent_t) / (n * RUN[16][0]) * 100, places=9)
        self.assertEqual(s["spent"]["energy_kwh"], s["spent"]["energy_j"] / 3.6e6)
        self.assertEqual(s["saved"]["energy_kwh"], s["saved"]["energy_j"] / 3.6e6)
        # The projection: arm 32 (mean -1650, every reward equal: sd 0) saves 5000 - 1650
        # = 3350 J of cost per run, 67 %; energy 4000 - 1500 J, time 20 - 6 s.
        p = doc["projection"]
        self.assertIsNone(doc["projection_reason"])
        self.assertEqual((p["batch_size"], p["cost"], p["cost_sd"]), (32, 1650.0, 0.0))
        self.assertEqual((p["energy_j"], p["time_s"]), (1500.0, 6.0))
        runs32 = sum(1 for _, bs in self.finished if bs == 32)
        self.assertEqual((p["observations"], p["runs"]), (runs32, runs32))
        self.assertEqual(p["saving_per_run"], {"energy_j": 2500.0, "time_s": 14.0,
                                               "cost": 3350.0, "energy_kwh": 2500.0 / 3.6e6})
        self.assertEqual(p["saving_per_run_pct"], {"energy": 62.5, "time": 70.0, "cost": 67.0})
        # Nothing configured: no CO2e or price field anywhere.
        no_footprint(self, doc)
        no_footprint(self, self.get("/jobs"))
        no_footprint(self, self.get(f"/jobs/{self.job}/trials"))

        # Arms: one per survivor, fitted on its explorations and MAB results.
        arms = {a["batch_size"]: a for a in doc["arms"]}
        self.assertEqual(sorted(arms), [16, 32])
        for bs, a in arms.items():
            runs = sum(1 for _, b in self.finished if b == bs)
            self.assertEqual(a["observations"], runs)
            self.assertAlmostEqual(a["mean"], -cost(*RUN[bs]), places=6)
            # Identical rewards: variance 0, so the precision is infinite (null) and sd 0.
            self.assertIsNone(a["precision"])
            self.assertEqual(a["sd"], 0.0)
        self.assertEqual(doc["best_batch_size"], 32)

        # The list shows the same summary.
        row = self.get("/jobs")["jobs"][0]
        for k in ("job_id", "stage", "trials", "savings", "best_batch_size", "min_cost",
                  "min_cost_batch_size", "created_at", "updated_at"):
            self.assertEqual(row[k], doc[k], k)
        self.assertEqual(row["min_cost"], 1650.0)
        self.assertEqual(row["min_cost_batch_size"], 32)
        self.assertGreaterEqual(row["updated_at"], row["created_at"])

    def test_trials_and_curves(self):
        self.script()
        page = self.get(f"/jobs/{self.job}/trials")
        self.assertIsNone(page["next"])
        rows = page["trials"]
        self.assertEqual([t["trial_number"] for t in rows], [1, 2, 3, 4, 5, 6])
        t1 = rows[0]
        self.assertEqual((t1["batch_size"], t1["type"], t1["status"]),
                         (16, "Exploration", "Succeeded"))
        self.assertEqual((t1["time_s"], t1["energy_j"], t1["metric"], t1["epochs"]),
                         (20.0, 4000.0, 0.6, 2))
        self.assertEqual(t1["cost"], 5000.0)
        self.assertTrue(t1["converged"])
        self.assertEqual(t1["stop_reason"], "target_reached")
        self.assertEqual(t1["energy_kwh"], 4000.0 / 3.6e6)
        self.assertIsNotNone(t1["end_time"])
        self.assertEqual(rows[4]["status"], "Failed")
        self.assertEqual(rows[4]["stop_reason"], "ended")
        self.assertNotIn("energy_kwh", rows[4])
        self.assertIsNone(rows[4]["cost"])
        self.assertIsNone(rows[4]["time_s"])
        last = rows[5]
        self.assertEqual((last["status"], last["end_time"], last["cost"], last["stop_reason"]),
                         ("Dispatched", None, None, None))
        self.assertFalse(last["converged"])

        # Pages of 2 give the same rows.
        got, after = [], None
        for _ in range(10):
            path = f"/jobs/{self.job}/trials?limit=2" + (f"&after={after}" if after else "")
            p = self.get(path)
            got += p["trials"]
            after = p["next"]
            if after is None:
                break
        self.assertEqual(got, rows)

        # Trial 1's curve: the continuing and the final report, buffered and written
        # within STORE_CURVE_DELAY_S.
        deadline = time.monotonic() + 10
        while True:
            t = self.get(f"/jobs/{self.job}/trials/1")
            if len(t["reports"]) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual([(p["epoch"], p["time_s"], p["energy_j"], p["metric"])
                          for p in t["reports"]],
                         [(1, 10.0, 2000.0, 0.3), (2, 20.0, 4000.0, 0.6)])
        self.assertEqual(t["job_id"], self.job)
        self.assertEqual(t["trial_number"], 1)
        for p in t["reports"]:
            self.assertGreaterEqual(p["received_at"], t["start_time"])
        # A trial of 32 has its one, final point (by now: trial 1's were written).
        t2 = self.get(f"/jobs/{self.job}/trials/2")
        self.assertEqual([(p["epoch"], p["energy_j"]) for p in t2["reports"]], [(1, 1500.0)])

    def test_before_any_result(self):
        doc = self.get(f"/jobs/{self.job}")
        s = doc["savings"]
        self.assertEqual((s["finished_trials"], s["default_runs"]), (0, 0))
        for k in ("default_expected", "saved", "break_even_recurrence", "best_batch_size",
                  "best_expected_cost", "regret"):
            self.assertIsNone(s[k], k)
        self.assertEqual(s["spent"], {"energy_j": 0.0, "time_s": 0.0, "cost": 0.0,
                                      "energy_kwh": 0.0})
        self.assertIsNone(s["saved_pct"])
        self.assertIsNone(doc["projection"])
        self.assertIn("pruning", doc["projection_reason"])
        self.assertEqual(doc["stage"], "Pruning")
        self.assertEqual(doc["arms"], [])
        self.assertEqual(doc["best_batch_size"], 16)   # min_cost_batch_size: the default
        self.assertIsNone(doc["min_cost"])
        # Pruning is in round 0, where nothing is explored or decided yet.
        self.assertEqual(doc["exploration"]["rounds"], [{
            "round": 0, "default_batch_size": 16, "explored": [], "converged": [],
            "pruned": [], "complete": False}])


class Lookup(ServerTestCase):
    def get(self, path):
        return self.srv.request("GET", path)

    def test_unknown_job_and_trial_are_404_with_message(self):
        jid = self.register(job_id="insp-b", job_id_prefix="insp")
        for path in ("/jobs/nope", "/jobs/nope/trials", "/jobs/nope/trials/1",
                     f"/jobs/{jid}/trials/1", f"/jobs/{jid}/trials/999999999999"):
            r = self.get(path)
            self.assertEqual(r.status, 404, (path, r))
            self.assertIsInstance(r.json["message"], str, path)
            self.assertTrue(r.json["message"], path)
        self.assertIn("nope", self.get("/jobs/nope").json["message"])
        self.assertIn("1", self.get(f"/jobs/{jid}/trials/1").json["message"])

    def test_bad_query_values_are_422(self):
        jid = self.register(job_id="insp-c", job_id_prefix="insp")
        cases = [
            ("/jobs?limit=0", "limit"), ("/jobs?limit=1001", "limit"),
            ("/jobs?limit=abc", "limit"), ("/jobs?limit=", "limit"),
            ("/jobs?limit=-1", "limit"), ("/jobs?limit=1e3", "limit"),
            ("/jobs?limit=99999999999999999999999", "limit"),
            ("/jobs?prefix=" + "x" * 301, "prefix"), ("/jobs?prefix=%ff", "prefix"),
            ("/jobs?after=a%00b", "after"), ("/jobs?bogus=1", "bogus"),
            (f"/jobs/{jid}/trials?after=x", "after"), (f"/jobs/{jid}/trials?after=-2", "after"),
            (f"/jobs/{jid}/trials?limit=0", "limit"), (f"/jobs/{jid}?limit=3", "limit"),
            (f"/jobs/{jid}/trials/abc", "trial_number"),
            (f"/jobs/{jid}/trials/-1", "trial_number"),
        ]
        for path, field in cases:
            r = self.get(path)
            self.assertEqual(r.status, 422, (path, r))
            loc = r.json["detail"][0]["loc"]
            self.assertEqual(loc[1], field, (path, r.json))
            self.assertIn(loc[0], ("query", "path"), path)

    def test_job_ids_with_slashes_and_other_bytes(self):
        for jid in ("insp/a/b", "insp/trialsx", "insp/trials/x/y", "insp é ✓", "insp?x=1&y"):
            self.register(job_id=jid, job_id_prefix="insp")
            r = self.get(f"/jobs/{q(jid)}")
            self.assertEqual(r.status, 200, (jid, r))
            self.assertEqual(r.json["job_id"], jid)
            r = self.get(f"/jobs/{q(jid)}/trials")
            self.assertEqual((r.status, r.json["job_id"]), (200, jid), jid)
        # An id that ends in /trials is read as the trial list of the id before it.
        self.register(job_id="insp/trials", job_id_prefix="insp")
        r = self.get(f"/jobs/{q('insp/trials')}")
        self.assertEqual(r.status, 404, r)
        self.assertIn("Unknown job_id: insp", r.json["message"])
        # GET /jobs/batch_size is Zeus's route, never a job named batch_size.
        r = self.get("/jobs/batch_size")
        self.assertEqual(r.status, 422, r)

    def test_methods(self):
        jid = self.register(job_id="insp-d", job_id_prefix="insp")
        r = self.srv.request("POST", f"/jobs/{jid}", body={})
        self.assertEqual(r.status, 405, r)
        self.assertEqual(r.headers.get("Allow"), "GET")
        r = self.srv.request("PUT", "/jobs")
        self.assertEqual(r.status, 405, r)
        self.assertEqual(r.headers.get("Allow"), "GET, POST, DELETE")


    def test_answers_are_not_stored_by_caches(self):
        """Answers hold job data: each says Cache-Control: no-store (issue 22 item 10), the
        errors too; the dashboard's files keep their own no-cache."""
        jid = self.register(job_id="insp-cache", job_id_prefix="insp")
        self.assertEqual(self.get(f"/jobs/batch_size?job_id={jid}").status, 200)
        for path in ("/jobs", f"/jobs/{jid}", f"/jobs/{jid}/trials", f"/jobs/{jid}/trials/1",
                     "/jobs/nope", f"/jobs/{jid}/trials/abc", "/jobs?limit=0",
                     "/openapi.json", "/metrics", "/healthz", "/nowhere"):
            r = self.get(path)
            self.assertEqual(r.headers.get("Cache-Control"), "no-store", (path, r.status))
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id=jid, job_id_prefix="insp"))
        self.assertEqual((r.status, r.headers.get("Cache-Control")), (200, "no-store"))
        self.assertEqual(self.get("/").headers.get("Cache-Control"), "no-cache")


class Pages(ServerTestCase):
    def test_prefix_and_pages(self):
        ids = [f"pg-{k:02d}" for k in range(7)]
        for jid in ids + ["other-1", "pg", "ph-1"]:
            self.register(job_id=jid, job_id_prefix=jid.split("-")[0])
        got, after, pages = [], "", 0
        while True:
            path = "/jobs?prefix=pg-&limit=3" + (f"&after={q(after)}" if after else "")
            r = self.srv.request("GET", path)
            self.assertEqual(r.status, 200, r)
            got += [j["job_id"] for j in r.json["jobs"]]
            pages += 1
            after = r.json["next"]
            if after is None:
                break
            self.assertEqual(after, got[-1])
        self.assertEqual(got, ids)
        self.assertEqual(pages, 3)
        # Every job, in byte order, without a prefix.
        r = self.srv.request("GET", "/jobs?limit=1000")
        every = [j["job_id"] for j in r.json["jobs"]]
        self.assertEqual(every, sorted(ids + ["other-1", "pg", "ph-1"],
                                       key=lambda s: s.encode()))
        self.assertIsNone(r.json["next"])
        r = self.srv.request("GET", "/jobs?prefix=zzz")
        self.assertEqual(r.json, {"jobs": [], "next": None})
        # A full last page still says whether more follow: exactly limit jobs left.
        r = self.srv.request("GET", "/jobs?prefix=pg-&limit=7")
        self.assertEqual((len(r.json["jobs"]), r.json["next"]), (7, None))
        r = self.srv.request("GET", "/jobs?prefix=pg-&limit=6")
        self.assertEqual(r.json["next"], "pg-05")


class Token(ServerTestCase):
    server_env = {"ZEUS_BSO_API_TOKEN": "s3cret-token"}

    def test_inspection_needs_the_token(self):
        auth = {"Authorization": "Bearer s3cret-token"}
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id="itest-t"), headers=auth)
        self.assertEqual(r.status, 201, r)
        for path in ("/jobs", "/jobs/itest-t", "/jobs/itest-t/trials",
                     "/jobs/itest-t/trials/1", "/openapi.json", "/jobs/unknown"):
            r = self.srv.request("GET", path)
            self.assertEqual(r.status, 401, (path, r))
            self.assertNotIn(b"itest-t", r.body, path)
            self.assertEqual(r.headers.get("Cache-Control"), "no-store", path)
        self.assertEqual(self.srv.request("GET", "/jobs/itest-t", headers=auth).status, 200)


class Priority(ServerTestCase):
    """Inspection runs on 4 background workers 15 nice steps below the event loop, the
    protocol's 64 workers 5 steps below it, so a reader in a loop takes only the CPU that
    training clients leave (docs/DESIGN.md, "Inspection")."""

    def threads(self):
        """{thread name: [nice values]} of the server process."""
        pid = self.srv.proc.pid
        threads = {}
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    name = f.read().strip()
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    stat = f.read()
            except FileNotFoundError:
                continue
            nice = int(stat[stat.rindex(")") + 2:].split()[16])   # field 19
            threads.setdefault(name, []).append(nice)
        return threads

    def test_worker_pools_and_their_nice_values(self):
        pid = self.srv.proc.pid
        # Threads name and renice themselves as they start, maybe after the server's
        # listening line.
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        base = int(stat[stat.rindex(")") + 2:].split()[16])
        want = {"zbso-worker": [min(base + 5, 19)] * 64,
                "zbso-background": [min(base + 15, 19)] * 4}
        deadline = time.monotonic() + 20
        while True:
            threads = self.threads()
            got = {k: threads.get(k, []) for k in want}
            if got == want or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(got, want, threads)


METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


class OpenApi(ServerTestCase):
    def test_document_lists_exactly_the_routes_answered(self):
        r = self.srv.request("GET", "/openapi.json")
        self.assertEqual(r.status, 200, r)
        doc = json.loads(r.body)
        self.assertEqual(doc["openapi"], "3.1.0")
        self.assertEqual(r.headers.get("Content-Type"), "application/json")
        jid = self.register(job_id="insp-o", job_id_prefix="insp")
        self.assertEqual(self.srv.request(
            "GET", f"/jobs/batch_size?job_id={jid}").status, 200)
        fill = {"{job_id}": jid, "{trial_number}": "1"}
        for template, item in doc["paths"].items():
            path = template
            for k, v in fill.items():
                path = path.replace(k, v)
            listed = {m.upper() for m in item if m.upper() in METHODS}
            self.assertTrue(listed, template)
            for m in METHODS:
                body = {} if m in ("POST", "PATCH", "PUT") else None
                r = self.srv.request(m, path, body=body)
                if m in listed:
                    # Answered by a route: anything but 405 and "no such path".
                    self.assertNotEqual(r.status, 405, (m, template, r))
                    msg = (r.json or {}).get("message", "") if isinstance(r.json, dict) else ""
                    self.assertNotIn("no such path", msg, (m, template))
                else:
                    self.assertEqual(r.status, 405, (m, template, r))
                    allow = {a.strip() for a in r.headers["Allow"].split(",")}
                    self.assertEqual(allow, listed, template)
        # Paths outside the document are unknown.
        for path in ("/index.html", "/job", "/jobs2", "/report/x", "/openapi", "/trials/1"):
            r = self.srv.request("GET", path)
            self.assertEqual(r.status, 404, (path, r))
        # Every $ref resolves.
        refs = []

        def walk(v):
            if isinstance(v, dict):
                if "$ref" in v:
                    refs.append(v["$ref"])
                for x in v.values():
                    walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)
        walk(doc)
        self.assertTrue(refs)
        for ref in refs:
            name = ref.rsplit("/", 1)[1]
            self.assertIn(name, doc["components"]["schemas"], ref)


if __name__ == "__main__":
    unittest.main()
