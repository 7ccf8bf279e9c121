"""test_value.py: issue 25's figures end to end on $ZBSO_TEST_BACKEND (SQLite, PostgreSQL
under with_pg.sh, MariaDB under with_mysql.sh). One scripted job whose every figure is
worked out by hand below runs on three servers: one with a static grid intensity and an
energy price, one with an intensity time series (CSV), one with nothing configured. Each
checks the stop reason of every path (target, cost bound, max_epochs, PATCH, lease),
saved_pct, the projection, kWh/CO2e/price through the API, `zbso jobs` in every format
(from the server and straight from the database, which must agree) and /metrics
(promtool clean); without configuration no CO2e or price field appears anywhere."""

import csv
import io
import json
import math
import os
import subprocess
import time
import unittest
import urllib.parse

import sqlite3

from test_metrics import Exposition, promtool_check
from test_migrate import version_after
from zbsoserver import ZBSO_BIN, Server, clean_env, job_spec, run_cli

# cost = eta * E + (1 - eta) * max_power * T = E/2 + 100 T
ETA, MAX_POWER = 0.5, 200.0
KWH = 3.6e6
INTENSITY, PRICE = 400.0, 0.25
REASONS = ("target_reached", "cost_bound", "max_epochs", "ended", "lease_expired", "unknown")
JOB = "value-1"


def cost(t, e):
    return ETA * e + (1 - ETA) * MAX_POWER * t


def spec(job_id=JOB, gpu="NVIDIA A100-SXM4-40GB", **extra):
    # Batch sizes 8, 16, 32, default 16; one pruning round walks 16, then 8 (down), then 32.
    return job_spec(job_id=job_id, job_id_prefix="value", batch_sizes=[8, 16, 32],
                    default_batch_size=16, eta_knob=ETA, beta_knob=2.0, target_metric=0.5,
                    max_epochs=3, num_pruning_rounds=1, mab_num_explorations=2, mab_seed=3,
                    max_power=MAX_POWER, gpu_model=gpu, **extra)


def no_footprint(test, doc, where="$"):
    """Fails when doc (recursively) has a CO2e or price field: absent, never 0 or null."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            test.assertNotIn(k, ("co2e_g", "price", "currency", "footprint"), f"{where}.{k}")
            no_footprint(test, v, f"{where}.{k}")
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            no_footprint(test, v, f"{where}[{i}]")


def step_mean(series, start, end):
    """The time-weighted mean of a step series [(t, g)] over [start, end] (the value in
    force at start for an empty interval), as SPEC §5 "Footprint" defines it."""
    def at(t):
        v = series[0][1]
        for pt, g in series:
            if pt <= t:
                v = g
        return v
    if not end > start:
        return at(start)
    cuts = [start] + [t for t, _ in series if start < t < end] + [end]
    return sum(at(a) * (b - a) for a, b in zip(cuts, cuts[1:])) / (end - start)


class ValueCase(unittest.TestCase):
    env = None
    args = ()
    spec_extra = {}     # fields beyond Zeus the scripted job registers with

    def setUp(self):
        self.srv = Server(env={"ZEUS_BSO_TRIAL_TIMEOUT": "1", **(self.env or {})},
                          args=self.args)
        self.srv.start()
        self.addCleanup(self.srv.close)

    def call(self, method, path, body=None, want=200):
        r = self.srv.request(method, path, body=body)
        self.assertEqual(r.status, want, r)
        return r.json

    def dispatch(self, job=JOB):
        return self.call("GET", "/jobs/batch_size?job_id=" + urllib.parse.quote(job))

    def report(self, t, epoch, time_s, energy, metric):
        body = {"job_id": t["job_id"], "batch_size": t["batch_size"],
                "trial_number": t["trial_number"], "time": time_s, "energy": energy,
                "metric": metric, "current_epoch": epoch}
        return self.call("POST", "/report", body)

    def script(self, between=None):
        """The scripted job; `between` runs after trial 2 (the series test waits there).
        Returns the MAB trial's batch size."""
        self.call("POST", "/jobs", spec(**self.spec_extra), want=201)
        # 1: bs 16 converges at epoch 2: E 7.2e6 J, T 100 s, cost 3,610,000 (the min cost;
        # the bound becomes 7,220,000).
        t = self.dispatch()
        self.assertEqual((t["trial_number"], t["batch_size"]), (1, 16))
        self.assertFalse(self.report(t, 1, 50, 3.6e6, 0.3)["stop_train"])
        r = self.report(t, 2, 100, 7.2e6, 0.6)
        self.assertEqual((r["stop_train"], r["converged"]), (True, True))
        # 2: bs 8 never reaches 0.5 and stops at max_epochs 3: E 1.8e6, T 30, cost 903,000.
        t = self.dispatch()
        self.assertEqual((t["trial_number"], t["batch_size"]), (2, 8))
        for epoch in (1, 2):
            self.assertFalse(self.report(t, epoch, 10 * epoch, 0.6e6 * epoch, 0.2)["stop_train"])
        r = self.report(t, 3, 30, 1.8e6, 0.2)
        self.assertEqual((r["stop_train"], r["converged"]), (True, False))
        if between:
            between()
        # 3: bs 32 converges at epoch 1: E 3.6e6, T 40, cost 1,804,000 (the new min cost;
        # bound 3,608,000). Pruning ends: arms 16 and 32.
        t = self.dispatch()
        self.assertEqual((t["trial_number"], t["batch_size"]), (3, 32))
        r = self.report(t, 1, 40, 3.6e6, 0.7)
        self.assertEqual((r["stop_train"], r["converged"]), (True, True))
        # 4: MAB; its first epoch costs 3,610,000 > 3,608,000: stopped by the bound.
        t = self.dispatch()
        self.assertEqual(t["trial_number"], 4)
        mab_bs = t["batch_size"]
        r = self.report(t, 1, 100, 7.2e6, 0.1)
        self.assertEqual((r["stop_train"], r["converged"]), (True, False))
        self.assertIn("cost upper bound", r["message"])
        # 5: ended by PATCH /trials before any decision.
        t = self.dispatch()
        self.assertIsNone(self.call("PATCH", "/trials", {"job_id": JOB, "batch_size":
                                                         t["batch_size"], "trial_number": 5}))
        # 6: its lease (1 s) runs out; dispatching 7 fails it. 7 stays running.
        self.dispatch()
        time.sleep(1.5)
        self.assertEqual(self.dispatch()["trial_number"], 7)
        return mab_bs

    def expected(self, mab_bs):
        """The figures of the script, by hand. Finished: 1-4 (spent E 19.8e6 J = 5.5 kWh,
        T 270 s, cost 9,927,000); the default (16) expects E 7.2e6, T 100, cost 3,610,000
        per run, so 4 runs at it: E 28.8e6, T 400, cost 14,440,000; saved E 9e6 J (31.25 %),
        T 130 s (32.5 %), cost 4,513,000 (31.25... %)."""
        runs = {16: [(100, 7.2e6)], 32: [(40, 3.6e6)]}
        runs[mab_bs].append((100, 7.2e6))
        # The projection: the arm of 32 (best whichever batch size trial 4 had): its
        # costs' mean, sd from their population variance (0 for one run or equal runs).
        c32 = [cost(t, e) for t, e in runs[32]]
        mean = sum(c32) / len(c32)
        var = sum((c - mean) ** 2 for c in c32) / len(c32)
        e32 = sum(e for _, e in runs[32]) / len(c32)
        t32 = sum(t for t, _ in runs[32]) / len(c32)
        return {"spent": {"energy_j": 19.8e6, "time_s": 270.0, "cost": 9927000.0},
                "saved": {"energy_j": 9e6, "time_s": 130.0, "cost": 4513000.0},
                "saved_pct": {"energy": 31.25, "time": 32.5,
                              "cost": 4513000.0 / 14440000.0 * 100},
                "projection": {"batch_size": 32, "cost": mean,
                               "cost_sd": math.sqrt(var / len(c32)),
                               "energy_j": e32, "time_s": t32, "runs": len(c32),
                               "saving_per_run": {"energy_j": 7.2e6 - e32,
                                                  "time_s": 100 - t32,
                                                  "cost": 3610000.0 - mean}}}

    def check_api(self, mab_bs):
        """The figures every configuration shares; returns the job document and trials."""
        doc = self.call("GET", f"/jobs/{JOB}")
        want = self.expected(mab_bs)
        self.assertEqual(doc["trials"]["by_stop_reason"], {
            "target_reached": 2, "cost_bound": 1, "max_epochs": 1, "ended": 1,
            "lease_expired": 1, "unknown": 0})
        trials = self.call("GET", f"/jobs/{JOB}/trials")["trials"]
        self.assertEqual([t["stop_reason"] for t in trials],
                         ["target_reached", "max_epochs", "target_reached", "cost_bound",
                          "ended", "lease_expired", None])
        # each trial's own document agrees
        for t in trials:
            self.assertEqual(self.call("GET", f"/jobs/{JOB}/trials/{t['trial_number']}")
                             ["stop_reason"], t["stop_reason"])
        s = doc["savings"]
        for part in ("spent", "saved"):
            for k, v in want[part].items():
                self.assertEqual(s[part][k], v, f"{part}.{k}")
            self.assertEqual(s[part]["energy_kwh"], s[part]["energy_j"] / KWH)
        self.assertEqual(s["spent"]["energy_kwh"], 5.5)
        self.assertEqual(s["saved"]["energy_kwh"], 2.5)
        for k, v in want["saved_pct"].items():
            self.assertAlmostEqual(s["saved_pct"][k], v, places=12, msg=k)
        p = doc["projection"]
        self.assertIsNone(doc["projection_reason"])
        wp = want["projection"]
        self.assertEqual(p["batch_size"], 32)
        for k in ("cost", "energy_j", "time_s", "runs"):
            self.assertEqual(p[k], wp[k], k)
        self.assertAlmostEqual(p["cost_sd"], wp["cost_sd"], places=6)
        for k, v in wp["saving_per_run"].items():
            self.assertEqual(p["saving_per_run"][k], v, k)
        self.assertAlmostEqual(p["saving_per_run_pct"]["cost"],
                               wp["saving_per_run"]["cost"] / 3610000.0 * 100, places=12)
        # Zeus's wire answers are unchanged: none of these fields in them.
        return doc, trials

    # -- the CLI ---------------------------------------------------------------------------

    def jobs(self, *args, source="server", env=None):
        extra = ["--server", f"http://{self.srv.host}:{self.srv.port}"] if source == "server" \
            else ["--db", self.srv.db_url]
        r = subprocess.run([ZBSO_BIN, "jobs", *args, *extra], cwd=self.srv.tmpdir,
                           env=clean_env(env or {}), capture_output=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        return r.stdout.decode("utf-8")

    def both(self, *args, env=None):
        a = self.jobs(*args, source="server")
        b = self.jobs(*args, source="db", env=env)
        self.assertEqual(a, b, f"--server and --db differ for {args}")
        return a

    def check_cli(self, doc, trials, env=None):
        """Every format of ls, show, trials and compare, from the server and the database
        (env: the footprint settings the database reader gets)."""
        self.assertEqual(json.loads(self.both("show", JOB, "--format", "json", env=env)), doc)
        text = self.both("show", JOB, env=env)
        p = doc["projection"]
        self.assertTrue(text.startswith(
            f"Projection: use batch size 32: expected cost {p['cost']:.1f} J (sd "
            f"{p['cost_sd']:.1f}) per run, {p['saving_per_run']['cost']:.1f} J "
            f"({p['saving_per_run_pct']['cost']:.1f}%) less than the default batch size 16"),
            text[:300])
        for reason in REASONS:
            n = doc["trials"]["by_stop_reason"][reason]
            self.assertRegex(text, rf"(?m)^{reason} +{n}$")
        self.assertRegex(text, r"(?m)^saved cost +31\.3%$")
        self.assertRegex(text, r"(?m)^saved energy \(kWh\) +2\.500$")
        flat = {r["field"]: r["value"] for r in csv.DictReader(
            io.StringIO(self.both("show", JOB, "--format", "csv", env=env), newline=""))}
        self.assertEqual(float(flat["savings.saved_pct.energy"]), 31.25)
        self.assertEqual(flat["trials.by_stop_reason.lease_expired"], "1")
        self.assertEqual(float(flat["projection.cost"]), p["cost"])

        rows = list(csv.DictReader(io.StringIO(
            self.both("trials", JOB, "--format", "csv", env=env), newline="")))
        self.assertEqual([r["stop_reason"] for r in rows],
                         [t["stop_reason"] or "" for t in trials])
        table = self.both("trials", JOB, env=env).splitlines()
        self.assertIn("stop reason", table[0])
        for line, t in zip(table[1:], trials):
            self.assertIn(f" {t['stop_reason'] or '-'} ", line + " ")
        got = json.loads(self.both("trials", JOB, "--format", "json", env=env))["trials"]
        self.assertEqual(got, trials)

        ls = self.both("ls", env=env).splitlines()
        self.assertRegex(ls[0], r"^job id +stage +cost saved \(J\) +cost saved +break-even")
        self.assertRegex(ls[1], r"^value-1 +MAB +4513000\.0 +31\.3% +")
        lsd = json.loads(self.both("ls", "--format", "json", env=env))["jobs"][0]
        self.assertEqual(lsd["savings"], doc["savings"])
        lsc = list(csv.DictReader(io.StringIO(self.both("ls", "--format", "csv", env=env),
                                              newline="")))[0]
        self.assertEqual(float(lsc["savings.saved_pct.time"]), 32.5)

        # compare: the job beside a second one of the prefix (one recurrence at the
        # default so far: no baseline beyond it, no projection).
        self.call("POST", "/jobs", spec("value-2", gpu="Tesla V100"), want=201)
        t = self.dispatch("value-2")
        self.report(t, 2, 80, 6e6, 0.9)
        cmp = json.loads(self.both("compare", JOB, "value-2", "--format", "json", env=env))
        self.assertEqual([j["job_id"] for j in cmp["jobs"]], [JOB, "value-2"])
        self.assertEqual(cmp["jobs"][0]["savings"], doc["savings"])
        rows = list(csv.DictReader(io.StringIO(
            self.both("compare", JOB, "value-2", "--format", "csv", env=env), newline="")))
        self.assertEqual(float(rows[0]["savings.default_expected.cost"]), 3610000.0)
        self.assertEqual(float(rows[1]["savings.default_expected.cost"]), cost(80, 6e6))
        self.assertEqual(float(rows[0]["projection.cost"]), p["cost"])
        self.assertEqual(rows[1]["projection.cost"], "")
        self.assertEqual(rows[1]["spec.gpu_model"], "Tesla V100")
        table = self.both("compare", JOB, "value-2", env=env).splitlines()
        self.assertEqual(len(table), 3)
        self.assertRegex(table[2], r"^value-2 +Tesla V100 +1 +Pruning +1 +16 +16 +3008000\.0 ")
        return ls, rows

    def scrape(self):
        r = self.srv.request("GET", "/metrics")
        self.assertEqual(r.status, 200, r)
        text = r.body.decode("utf-8")
        promtool_check(self, text)
        return Exposition(text)

    def check_metrics(self, m):
        for reason, status, n in (("target_reached", "Succeeded", 2),
                                  ("cost_bound", "Succeeded", 1),
                                  ("max_epochs", "Succeeded", 1), ("ended", "Failed", 1),
                                  ("lease_expired", "Failed", 1)):
            self.assertEqual(m.get("zbso_trials_finished_total", status=status,
                                   stop_reason=reason), n, reason)
        self.assertEqual(m.get("zbso_energy_joules_total"), 19.8e6)


class StaticIntensityTest(ValueCase):
    """400 g/kWh and 0.25 EUR per kWh from the flags."""

    args = ("--carbon-intensity", "400", "--energy-price", "0.25", "--currency", "EUR")

    def test_scripted_job(self):
        mab_bs = self.script()
        doc, trials = self.check_api(mab_bs)
        s = doc["savings"]
        # 5.5 kWh spent: 2200 g, 1.375 EUR; 2.5 kWh saved: 1000 g, 0.625 EUR; the default
        # expects 2 kWh a run: 800 g, 0.5 EUR.
        self.assertEqual((s["spent"]["co2e_g"], s["spent"]["price"]), (2200.0, 1.375))
        self.assertEqual((s["saved"]["co2e_g"], s["saved"]["price"]), (1000.0, 0.625))
        self.assertEqual((s["default_expected"]["co2e_g"], s["default_expected"]["price"]),
                         (800.0, 0.5))
        self.assertEqual(s["currency"], "EUR")
        self.assertEqual(doc["footprint"], {"carbon_intensity_g_per_kwh": 400.0,
                                            "carbon_intensity_source": "server",
                                            "energy_price_per_kwh": 0.25, "currency": "EUR"})
        self.assertEqual(trials[0]["co2e_g"], 800.0)           # 2 kWh
        self.assertEqual(trials[1]["co2e_g"], 200.0)           # 0.5 kWh
        self.assertEqual(trials[1]["price"], 0.125)
        self.assertNotIn("co2e_g", trials[4])                  # ended: nothing measured
        p = doc["projection"]["saving_per_run"]
        self.assertEqual(p["co2e_g"], p["energy_j"] / KWH * 400)
        m = self.scrape()
        self.check_metrics(m)
        self.assertEqual(m.get("zbso_co2e_grams_total"), 2200.0)
        env = {"ZBSO_CARBON_INTENSITY": "400", "ZBSO_ENERGY_PRICE": "0.25",
               "ZBSO_CURRENCY": "EUR"}
        ls, rows = self.check_cli(doc, trials, env=env)
        self.assertIn("CO2e saved (g)", ls[0])
        self.assertRegex(ls[1], r" 1000\.0 +0\.625 ")
        self.assertEqual(float(rows[0]["savings.saved.co2e_g"]), 1000.0)
        self.assertEqual(rows[0]["savings.currency"], "EUR")
        text = self.jobs("show", JOB)
        self.assertRegex(text, r"(?m)^saved CO2e \(g\) +1000\.0$")
        self.assertRegex(text, r"(?m)^currency +EUR$")


class SeriesIntensityTest(ValueCase):
    """A CSV of timestamp,g_per_kwh: 100 g/kWh until a moment after trial 2, 300 from
    then; each trial's CO2e is its energy at the mean intensity of its own interval."""

    def setUp(self):
        self.t_step = time.time() + 4.0
        self.series = [(self.t_step - 86400, 100.0), (self.t_step, 300.0)]
        # a header, RFC 3339 and unix seconds, CRLF, out of order
        self.path = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                 f"zbso-intensity-{os.getpid()}-{id(self)}.csv")
        with open(self.path, "w", newline="") as f:
            first = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.t_step - 86400))
            self.series[0] = (float(int(self.t_step - 86400)), 100.0)
            f.write(f"timestamp,g_per_kwh\r\n{self.t_step!r},300\r\n{first},100\r\n")
        self.addCleanup(os.unlink, self.path)
        self.args = ("--carbon-intensity", self.path)
        super().setUp()

    def test_scripted_job(self):
        def wait_for_step():
            left = self.t_step + 0.2 - time.time()
            if left > 0:
                time.sleep(left)
        mab_bs = self.script(between=wait_for_step)
        doc, trials = self.check_api(mab_bs)
        spent, dflt = 0.0, 0.0
        for t in trials:
            if t["status"] != "Succeeded":
                self.assertNotIn("co2e_g", t)
                continue
            g = t["energy_j"] / KWH * step_mean(self.series, t["start_time"], t["end_time"])
            self.assertAlmostEqual(t["co2e_g"], g, places=6, msg=t["trial_number"])
            spent += t["co2e_g"]
            if t["batch_size"] == 16 and t["converged"]:
                dflt += t["co2e_g"]
        # Trials 1 and 2 ended before the step (100 g/kWh), 3 and 4 began after it (300).
        self.assertEqual(trials[0]["co2e_g"], 200.0)
        self.assertEqual(trials[1]["co2e_g"], 50.0)
        self.assertEqual(trials[2]["co2e_g"], 300.0)
        self.assertEqual(trials[3]["co2e_g"], 600.0)
        s = doc["savings"]
        self.assertEqual(s["spent"]["co2e_g"], 1150.0)
        self.assertEqual(s["default_expected"]["co2e_g"], 200.0)
        self.assertEqual(s["saved"]["co2e_g"], 4 * 200.0 - 1150.0)     # behind: -350 g
        self.assertNotIn("price", s["spent"])
        self.assertEqual(doc["footprint"], {"carbon_intensity_series_points": 2,
                                            "carbon_intensity_source": "server"})
        m = self.scrape()
        self.check_metrics(m)
        self.assertEqual(m.get("zbso_co2e_grams_total"), 1150.0)
        self.assertNotIn("price", m.text)
        self.check_cli(doc, trials, env={"ZBSO_CARBON_INTENSITY": self.path})


class NothingConfiguredTest(ValueCase):
    def test_scripted_job(self):
        mab_bs = self.script()
        doc, trials = self.check_api(mab_bs)
        no_footprint(self, doc)
        no_footprint(self, trials)
        no_footprint(self, self.call("GET", "/jobs"))
        for t in trials:
            no_footprint(self, self.call("GET", f"/jobs/{JOB}/trials/{t['trial_number']}"))
        m = self.scrape()
        self.check_metrics(m)
        self.assertNotIn("co2e", m.text)
        ls, rows = self.check_cli(doc, trials)
        for out in (self.jobs("ls"), self.jobs("ls", "--format", "csv"), self.jobs("show", JOB),
                    self.jobs("show", JOB, "--format", "csv"), self.jobs("trials", JOB),
                    self.jobs("trials", JOB, "--format", "csv"),
                    self.jobs("compare", JOB, "value-2"),
                    self.jobs("compare", JOB, "value-2", "--format", "csv")):
            for word in ("co2e", "CO2e", "price", "currency"):
                self.assertNotIn(word, out)
        for fmt in ("json",):
            no_footprint(self, json.loads(self.jobs("show", JOB, "--format", fmt)))


class JobIntensityCase(ValueCase):
    """The scripted job registers its own grid intensity, 50 g/kWh: its CO2e figures use
    that, whatever the server has; a job beside it without one keeps the server's (or
    none). 5.5 kWh spent: 275 g; 2.5 kWh saved: 125 g; the default expects 100 g a run."""

    spec_extra = {"carbon_intensity_g_per_kwh": 50.0}

    def check_job(self):
        mab_bs = self.script()
        doc, trials = self.check_api(mab_bs)
        self.assertEqual(doc["spec"]["carbon_intensity_g_per_kwh"], 50.0)
        s = doc["savings"]
        self.assertEqual((s["spent"]["co2e_g"], s["saved"]["co2e_g"],
                          s["default_expected"]["co2e_g"]), (275.0, 125.0, 100.0))
        self.assertEqual([t.get("co2e_g") for t in trials],
                         [100.0, 25.0, 50.0, 100.0, None, None, None])
        p = doc["projection"]["saving_per_run"]
        self.assertEqual(p["co2e_g"], p["energy_j"] / KWH * 50)
        for t in trials:
            one = self.call("GET", f"/jobs/{JOB}/trials/{t['trial_number']}")
            self.assertEqual(one.get("co2e_g"), t.get("co2e_g"))
        listed = {j["job_id"]: j for j in self.call("GET", "/jobs")["jobs"]}
        self.assertEqual(listed[JOB]["savings"], s)
        return doc, trials

    def check_registration(self):
        """Part of the spec: the same value or none keeps the job (200, the stored value
        in the answer), another value is a 409 naming the field; bad values 422."""
        ans = self.call("POST", "/jobs", spec(**self.spec_extra), want=200)
        self.assertEqual(ans["carbon_intensity_g_per_kwh"], 50.0)
        ans = self.call("POST", "/jobs", spec(), want=200)
        self.assertEqual(ans["carbon_intensity_g_per_kwh"], 50.0)
        r = self.srv.request("POST", "/jobs",
                             body=spec(carbon_intensity_g_per_kwh=60.0))
        self.assertEqual(r.status, 409, r)
        self.assertIn("carbon_intensity_g_per_kwh 50.0, not 60.0", r.body.decode())
        for bad in (-1, 100001, "50", True):
            r = self.srv.request("POST", "/jobs", body=spec(
                "value-bad", carbon_intensity_g_per_kwh=bad))
            self.assertEqual(r.status, 422, (bad, r))
            self.assertIn("carbon_intensity_g_per_kwh", r.body.decode())
        self.assertEqual(self.srv.request("GET", "/jobs/value-bad").status, 404)


class JobIntensityOverServerTest(JobIntensityCase):
    """The server says 400 g/kWh and 0.25 EUR per kWh; the job says 50 g/kWh."""

    args = ("--carbon-intensity", "400", "--energy-price", "0.25", "--currency", "EUR")

    def test_scripted_job(self):
        doc, trials = self.check_job()
        self.assertEqual(doc["footprint"], {"carbon_intensity_g_per_kwh": 50.0,
                                            "carbon_intensity_source": "job",
                                            "energy_price_per_kwh": 0.25, "currency": "EUR"})
        # the price is the server's, per kWh as before: 5.5 kWh, 1.375 EUR
        self.assertEqual(doc["savings"]["spent"]["price"], 1.375)
        m = self.scrape()
        self.check_metrics(m)
        self.assertEqual(m.get("zbso_co2e_grams_total"), 275.0)
        self.check_registration()
        env = {"ZBSO_CARBON_INTENSITY": "400", "ZBSO_ENERGY_PRICE": "0.25",
               "ZBSO_CURRENCY": "EUR"}
        self.check_cli(doc, trials, env=env)
        # value-2 (registered by check_cli without an intensity: one run of 6e6 J) is at
        # the server's 400 g/kWh, and the counter adds it at that.
        other = self.call("GET", "/jobs/value-2")
        self.assertEqual(other["footprint"]["carbon_intensity_source"], "server")
        self.assertEqual(other["savings"]["spent"]["co2e_g"], 6e6 / KWH * 400)
        self.assertAlmostEqual(self.scrape().get("zbso_co2e_grams_total"),
                               275.0 + 6e6 / KWH * 400, places=9)
        text = self.both("show", JOB, env=env)
        self.assertRegex(text, r"(?m)^carbon intensity \(g/kWh\) +50$")
        self.assertNotIn("carbon intensity", self.both("show", "value-2", env=env))


class JobIntensityAloneTest(JobIntensityCase):
    """Nothing configured on the server: the job's own intensity brings CO2e to that job
    only (no price anywhere); the counter appears with its first trial."""

    def test_scripted_job(self):
        self.assertNotIn("co2e", self.scrape().text)
        doc, trials = self.check_job()
        self.assertEqual(doc["footprint"], {"carbon_intensity_g_per_kwh": 50.0,
                                            "carbon_intensity_source": "job"})
        self.assertNotIn("price", json.dumps(doc))
        m = self.scrape()
        self.check_metrics(m)
        self.assertEqual(m.get("zbso_co2e_grams_total"), 275.0)
        self.check_registration()
        self.check_cli(doc, trials)
        # value-2 has none: no CO2e field anywhere in its documents or the CLI's view of it
        no_footprint(self, self.call("GET", "/jobs/value-2"))
        no_footprint(self, self.call("GET", "/jobs/value-2/trials"))
        for out in (self.jobs("show", "value-2"), self.jobs("trials", "value-2"),
                    self.jobs("show", "value-2", "--format", "csv")):
            for word in ("co2e", "CO2e", "carbon", "price"):
                self.assertNotIn(word, out)
        self.assertEqual(self.scrape().get("zbso_co2e_grams_total"), 275.0)
        self.assertRegex(self.both("show", JOB), r"(?m)^carbon intensity \(g/kWh\) +50$")


class StoredBeforeTest(unittest.TestCase):
    """Trials stored before the schema step that added stop reasons: after `zbso migrate`
    their reason is derived where the row proves it, else "unknown" (SPEC §3.9)."""

    def test_reasons_derived_after_migrate(self):
        srv = Server(env={"ZEUS_BSO_TRIAL_TIMEOUT": "0"})
        self.addCleanup(srv.close)
        srv.start()

        def call(method, path, body=None):
            r = srv.request(method, path, body=body)
            self.assertEqual(r.status // 100, 2, r)
            return r.json

        def run(job, metric, epoch, energy):
            t = call("GET", f"/jobs/batch_size?job_id={job}")
            r = call("POST", "/report", {**t, "time": 10.0, "energy": energy,
                                         "metric": metric, "current_epoch": epoch})
            self.assertTrue(r["stop_train"], r)

        common = dict(job_id_prefix="old", batch_sizes=[8], default_batch_size=8,
                      eta_knob=0.5, max_power=200.0, target_metric=0.5, max_epochs=2,
                      num_pruning_rounds=0, mab_seed=1)
        # old-a, no beta: converged; max_epochs; ended.
        call("POST", "/jobs", job_spec(job_id="old-a", beta_knob=None, **common))
        run("old-a", 0.9, 1, 1000.0)
        run("old-a", 0.1, 2, 1000.0)
        call("PATCH", "/trials", call("GET", "/jobs/batch_size?job_id=old-a"))
        # old-b, beta 2 (min cost 1500 after its first run, bound 3000): converged; over
        # the bound at epoch 1 (cost 5500); at max_epochs within the bound.
        call("POST", "/jobs", job_spec(job_id="old-b", beta_knob=2.0, **common))
        run("old-b", 0.9, 1, 1000.0)
        run("old-b", 0.1, 1, 9000.0)
        run("old-b", 0.1, 2, 1000.0)
        stored = {j: [t["stop_reason"] for t in call("GET", f"/jobs/{j}/trials")["trials"]]
                  for j in ("old-a", "old-b")}
        self.assertEqual(stored, {"old-a": ["target_reached", "max_epochs", "ended"],
                                  "old-b": ["target_reached", "cost_bound", "max_epochs"]})
        self.assertEqual(srv.terminate(), 0)

        # The database as the version before the step left it (without the later
        # intensity step's column too).
        db = srv.db
        step = version_after(db.kind, "ADD COLUMN stop_reason")
        self.assertEqual(version_after(db.kind, "ADD COLUMN carbon_intensity"), step + 1)
        undo = ("ALTER TABLE trials DROP COLUMN stop_reason;"
                "ALTER TABLE jobs DROP COLUMN carbon_intensity;") + (
            f"PRAGMA user_version = {step - 1};" if db.kind == "sqlite"
            else f"UPDATE zbso_schema SET version = {step - 1};")
        if db.kind == "sqlite":
            conn = sqlite3.connect(db.path)
            conn.executescript(undo)
            conn.close()
        elif db.kind == "postgresql":
            db.psql(undo)
        else:
            db.sql(undo)
        self.assertNotIn("stop_reason", db.rows("trials")[0])
        r = run_cli(["migrate", "--db", srv.db_url], cwd=srv.tmpdir)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"schema version {step - 1} -> ", r.stdout + r.stderr)
        self.assertEqual({t["stop_reason"] for t in db.rows("trials")}, {0})

        srv.start()
        derived = {j: [t["stop_reason"] for t in call("GET", f"/jobs/{j}/trials")["trials"]]
                   for j in ("old-a", "old-b")}
        # A converged row; a row at max_epochs with no bound; a row stopped before
        # max_epochs without reaching the target (only the bound does that). The Failed row
        # and the one at max_epochs with a bound could be either: unknown.
        self.assertEqual(derived, {"old-a": ["target_reached", "max_epochs", "unknown"],
                                   "old-b": ["target_reached", "cost_bound", "unknown"]})
        for job, unknown in (("old-a", 1), ("old-b", 1)):
            by = call("GET", f"/jobs/{job}")["trials"]["by_stop_reason"]
            self.assertEqual(by["unknown"], unknown, job)
        self.assertEqual(call("GET", "/jobs/old-a/trials/3")["stop_reason"], "unknown")


class BadConfigTest(unittest.TestCase):
    """A bad setting stops zbso serve at start (exit 2) naming the setting and value."""

    def test_refused(self):
        srv = Server()
        self.addCleanup(srv.close)
        for args, env, needle in (
                (("--carbon-intensity", "-5"), {}, '"-5"'),
                (("--carbon-intensity", "1e999"), {}, '"1e999"'),
                (("--carbon-intensity", "100001"), {}, 'between 0 and 100000'),
                (("--carbon-intensity", "/nonexistent/x.csv"), {}, "/nonexistent/x.csv"),
                ((), {"ZBSO_ENERGY_PRICE": "cheap"}, '"cheap"'),
                (("--energy-price", "1", "--currency", "euro"), {}, '"euro"'),
                (("--currency", "EUR"), {}, "without an energy price")):
            r = subprocess.run([ZBSO_BIN, "serve", "--port", "0", "--db", srv.db_url, *args],
                               env=clean_env(env), capture_output=True, timeout=60,
                               cwd=srv.tmpdir)
            self.assertEqual(r.returncode, 2, (args, env, r.stderr))
            self.assertIn(needle, r.stderr.decode(), (args, env))


if __name__ == "__main__":
    unittest.main()
