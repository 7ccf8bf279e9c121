"""test_dashboard.py: the web dashboard at / (SPEC §5) in a real browser. Debian's chromium,
headless, driven over the DevTools protocol (cdp.py), loads the pages of a real
`zbso serve` (SQLite, or PostgreSQL under with_pg.sh) filled by a seeded workload
(workload.py) and by the simulator's traces of cifar100 on v100 replayed through the
server (simreplay.py). Every number the views show is compared with the API's answer
(the value in data-v exactly, the text to its 3 significant digits), no console error or
failed load may appear, and screenshots at 1280x800 and 390x844 are kept in
$ZBSO_ARTIFACTS/dashboard-BACKEND (the build directory). Also the empty and error states,
auto-refresh, and the token: no page or asset reveals job data without it.

Fails (never skips) when chromium is missing."""

import json
import os
import re
import tempfile
import time
import unittest
import urllib.parse

import cdp
import simreplay
import workload as wl
from zbsoserver import BACKEND, Server, job_spec

ARTIFACTS = os.path.join(os.environ.get("ZBSO_ARTIFACTS") or tempfile.gettempdir(),
                         f"dashboard-{BACKEND}")
DESKTOP = (1280, 800, False)
PHONE = (390, 844, True)
WEIRD_ID = 'dash/<b>x</b> & "q"?#'
UNITS = {"J": 1.0, "kJ": 1e3, "MJ": 1e6, "GJ": 1e9, "ms": 1e-3, "s": 1.0, "min": 60.0,
         "h": 3600.0}
QTY = re.compile(r"^(-?[0-9][0-9,]*(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?) (J|kJ|MJ|GJ|ms|s|min|h)\b")
DASH = "\u2014"


def enc(s):
    """JavaScript's encodeURIComponent."""
    return urllib.parse.quote(s, safe="!*'()")


def dv(text):
    """A data-v attribute back to its value (JavaScript's shortest round-trip text)."""
    return None if text in (None, "null") else float(text)


def shown(text):
    """The quantity a cell shows, in J or s."""
    m = QTY.match(text.strip())
    if not m:
        raise AssertionError(f"{text!r} is not a number with a unit")
    return float(m.group(1).replace(",", "")) * UNITS[m.group(2)]


def running_best(trials):
    """[trial number, cost] each time a converged trial lowers the best cost."""
    out, best = [], None
    for t in sorted(trials, key=lambda t: t["trial_number"]):
        if t["status"] == "Succeeded" and t["converged"] and t["cost"] is not None and (
                best is None or t["cost"] < best):
            best = t["cost"]
            out.append([t["trial_number"], best])
    return out


def bar_end(t):
    return t["end_time"] if t["end_time"] is not None else max(t["lease_renewed_at"],
                                                               t["start_time"])


def max_at_once(trials):
    """The most trials running at one time: at each trial's start, itself and the trials
    that started before it (by start time, then number) and had not ended by then."""
    order = sorted(trials, key=lambda t: (t["start_time"], t["trial_number"]))
    return max((1 + sum(1 for a in order[:i] if bar_end(a) > b["start_time"])
                for i, b in enumerate(order)), default=0)


def outcome(t):
    if t["status"] == "Failed":
        return "failed"
    if t["status"] == "Dispatched":
        return "running"
    return "converged" if t["converged"] else "stopped"


# JavaScript that reads the views back.
JS_JOB_ROWS = """[...document.querySelectorAll('#jobs-table tbody tr')].map(tr => ({
  job: tr.dataset.job, link: tr.querySelector('a').getAttribute('href'),
  cells: Object.fromEntries([...tr.querySelectorAll('[data-col]')].map(c =>
    [c.dataset.col, [c.textContent, c.dataset.v === undefined ? null : c.dataset.v,
                     c.dataset.stage || null]]))}))"""
JS_FACTS = """(sel => Object.fromEntries([...document.querySelectorAll(sel + ' dd[data-field]')]
  .map(d => [d.dataset.field, [d.textContent, d.dataset.v === undefined ? null : d.dataset.v]])))"""
JS_ROWS = """(sel => [...document.querySelectorAll(sel + ' tbody tr')].map(tr => ({
  data: Object.assign({}, tr.dataset), head: tr.querySelector('th').textContent,
  cells: Object.fromEntries([...tr.querySelectorAll('td[data-col]')].map(c =>
    [c.dataset.col, [c.textContent, c.dataset.v === undefined ? null : c.dataset.v]]))})))"""
JS_MARKS = """(sel => [...document.querySelectorAll(sel)].map(e => Object.assign({}, e.dataset)))"""
JS_OVERFLOW = ("document.documentElement.scrollWidth - window.innerWidth")


class BrowserCase(unittest.TestCase):
    """A chromium per class; pages opened with open() must end the test without console
    errors, failed loads or exceptions (but those the test names in self.expected)."""

    maxDiff = None
    browser = None

    @classmethod
    def setUpClass(cls):
        os.makedirs(ARTIFACTS, exist_ok=True)
        cls.browser = cdp.Browser(log_path=os.path.join(ARTIFACTS, f"chromium-{cls.__name__}.log"))

    @classmethod
    def tearDownClass(cls):
        if cls.browser:
            cls.browser.close()

    def setUp(self):
        self.pages = []
        self.expected = []    # regular expressions of errors this test provokes

    def tearDown(self):
        for p in self.pages:
            p.close()
        unexpected = [e for p in self.pages for e in p.errors
                      if not any(re.search(x, e) for x in self.expected)]
        self.assertEqual(unexpected, [], "console errors, exceptions or failed loads")

    def open(self, srv, hash_="", size=DESKTOP, state="ready"):
        """A new tab on srv's dashboard at hash_, once its view is in state."""
        p = self.browser.page(*size)
        self.pages.append(p)
        p.navigate(f"http://{srv.host}:{srv.port}/{hash_}")
        self.settled(p, state)
        return p

    def settled(self, p, state="ready"):
        p.wait(f"document.getElementById('main').dataset.state === {json.dumps(state)}",
               what=f"the view to be {state}")

    def goto(self, p, hash_, state="ready"):
        """Moves the tab to hash_ and waits for the new view."""
        old = p.eval("document.getElementById('main').dataset.gen")
        p.eval(f"location.hash = {json.dumps(hash_)}")
        p.wait(f"(m => m.dataset.gen !== {json.dumps(old)} && m.dataset.state === "
               f"{json.dumps(state)})(document.getElementById('main'))",
               what=f"{hash_} to be {state}")

    def reload(self, p, state="ready"):
        """Reloads the tab (a new document) and waits for its view."""
        p.eval("window.zbsoOldDocument = true")
        p.call("Page.reload")
        p.wait("window.zbsoOldDocument === undefined && document.readyState === 'complete'",
               what="the reload")
        self.settled(p, state)

    def shot(self, p, name, full_page=False):
        w = p.eval("window.innerWidth")
        h = p.eval("window.innerHeight")
        return p.screenshot(os.path.join(ARTIFACTS, f"{name}-{w}x{h}.png"), full_page)

    def no_sideways_scroll(self, p, what):
        self.assertLessEqual(p.eval(JS_OVERFLOW), 0, f"{what}: the page scrolls sideways")

    def assert_value(self, pair, value, what, unit=True):
        """pair = (text, data-v): data-v is value exactly; the text shows it (3 digits)."""
        text, v = pair[:2]
        if value is None:
            self.assertIsNone(dv(v), what)
            self.assertIn(DASH, text, what)
            return
        self.assertEqual(dv(v), value, what)
        if unit:
            got = shown(text)
            self.assertLessEqual(abs(got - value), 0.0051 * abs(value) + 1e-9,
                                 f"{what}: shows {text!r} for {value}")


def get(srv, path):
    r = srv.request("GET", path)
    if r.status != 200:
        raise AssertionError(f"GET {path}: {r}")
    return r.json


def all_trials(srv, job_id):
    out, after = [], None
    while True:
        doc = get(srv, f"/jobs/{enc(job_id)}/trials?limit=1000"
                  + ("" if after is None else f"&after={after}"))
        out += doc["trials"]
        after = doc["next"]
        if after is None:
            return out


class Seeded(BrowserCase):
    """One server filled once: four seeded workload jobs (failures included), a replayed
    cifar100 job on v100 at eta 0.5, a job with no trial, one with only a running trial,
    and a job id full of characters HTML and URLs treat specially."""

    SIM = "sim-cifar100-v100-1"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.srv = Server()
        try:
            cls.srv.start()
            cls.seed()
        except BaseException:
            cls.srv.close()
            cls.browser.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.srv.close()
        super().tearDownClass()

    @classmethod
    def seed(cls):
        srv = cls.srv
        load = wl.Workload([lambda: (srv.host, srv.port)], wl.seeded_specs("dash", 4),
                           threads=4, duration_s=60, max_trials=90, seed=12, fail_p=0.12)
        load.run()
        if load.errors:
            raise AssertionError(f"workload: {load.errors[:5]}")
        rp = simreplay.Replay(srv.host, srv.port, simreplay.Workload("cifar100", "v100"),
                              eta=0.5, seed=1, recurrences=30, parallel=2).run()
        if rp.errors:
            raise AssertionError(f"replay: {rp.errors[:5]}")
        for jid in ("dash-empty", "dash-running", WEIRD_ID):
            r = srv.request("POST", "/jobs", body=job_spec(job_id=jid, job_id_prefix="dash"))
            assert r.status == 201, r
        r = srv.request("GET", "/jobs/batch_size?job_id=dash-running")
        assert r.status == 200, r
        cls.seed_cheap()
        # Curve points of continuing reports are written within a quarter of a second.
        time.sleep(1.0)

    @classmethod
    def seed_cheap(cls):
        """dash-cheap: a converged first trial, then a trial that ends at max_epochs without
        reaching the target and costs less: not a running best (it did not do the work)."""
        srv = cls.srv
        r = srv.request("POST", "/jobs", body=job_spec(
            job_id="dash-cheap", job_id_prefix="dash", batch_sizes=[8, 16],
            default_batch_size=16, max_epochs=2, target_metric=0.5, eta_knob=0.5,
            max_power=300.0))
        assert r.status == 201, r
        for time_s, metric in ((10.0, 0.6), (1.0, 0.1)):
            t = srv.request("GET", "/jobs/batch_size?job_id=dash-cheap").json
            for epoch in (1, 2):
                r = srv.request("POST", "/report", body={
                    **t, "time": time_s * epoch, "energy": 200.0 * time_s * epoch,
                    "metric": metric, "current_epoch": epoch})
                assert r.status == 200, r
                if r.json["stop_train"]:
                    assert r.json["converged"] == (metric > 0.5), r
                    break

    # -- jobs ----------------------------------------------------------------------------

    def check_rows(self, rows, jobs):
        self.assertEqual([r["job"] for r in rows], [j["job_id"] for j in jobs])
        for r, j in zip(rows, jobs):
            c, what = r["cells"], j["job_id"]
            self.assertEqual(c["job_id"][0], j["job_id"], what)
            self.assertEqual(r["link"], "#/job/" + enc(j["job_id"]), what)
            self.assertEqual(c["prefix"][0], j["job_id_prefix"], what)
            self.assertEqual((c["stage"][0], c["stage"][2]), (j["stage"], j["stage"]), what)
            self.assertEqual(dv(c["trials"][1]), j["trials"]["total"], what)
            self.assertTrue(c["trials"][0].startswith(str(j["trials"]["total"])), what)
            self.assertEqual(dv(c["best_bs"][1]), j["best_batch_size"], what)
            self.assertEqual(c["best_bs"][0], str(j["best_batch_size"]), what)
            saved = j["savings"]["saved"]
            self.assert_value(c["energy_saved"], saved and saved["energy_j"], f"{what} saved")
            self.assertEqual(dv(c["updated_at"][1]), j["updated_at"], what)

    def test_jobs_table_sorts_filters_and_equals_the_api(self):
        jobs = get(self.srv, "/jobs")["jobs"]
        self.assertGreaterEqual(len(jobs), 8)
        p = self.open(self.srv)
        self.check_rows(p.eval(JS_JOB_ROWS), jobs)
        self.assertIn(WEIRD_ID, p.eval("document.getElementById('jobs-table').innerText"))
        self.assertEqual(p.eval("document.querySelectorAll('#jobs-table b').length"), 0)
        self.shot(p, "jobs")

        def column(col):
            return [dv(r["cells"][col][1]) for r in p.eval(JS_JOB_ROWS)]

        p.eval("document.querySelector('th[data-col=trials] button').click()")
        totals = column("trials")
        self.assertEqual(totals, sorted(j["trials"]["total"] for j in jobs))
        p.eval("document.querySelector('th[data-col=trials] button').click()")
        self.assertEqual(column("trials"), sorted(totals, reverse=True))
        self.assertEqual(p.eval("document.querySelector('th[data-col=trials]')"
                                ".getAttribute('aria-sort')"), "descending")
        p.eval("document.querySelector('th[data-col=energy_saved] button').click()")
        saved = column("energy_saved")
        known = [x for x in saved if x is not None]
        self.assertEqual(saved, sorted(known) + [None] * (len(saved) - len(known)))
        self.assertTrue(known, "no job has a baseline")

        # Stage: this page's rows; prefix: the server's ?prefix=.
        p.eval("(s => { s.value = 'Pruning'; s.dispatchEvent(new Event('change')); })"
               "(document.getElementById('f-stage'))")
        p.eval("document.querySelector('th[data-col=job_id] button').click()")
        self.check_rows(p.eval(JS_JOB_ROWS), [j for j in jobs if j["stage"] == "Pruning"])
        p.eval("(s => { s.value = ''; s.dispatchEvent(new Event('change')); })"
               "(document.getElementById('f-stage'))")
        p.eval("(i => { i.value = 'sim'; i.dispatchEvent(new Event('input')); })"
               "(document.getElementById('f-prefix'))")
        p.wait("document.querySelectorAll('#jobs-table tbody tr').length === 1 && "
               "location.hash.includes('prefix=sim')", what="the prefix filter")
        self.settled(p)
        self.check_rows(p.eval(JS_JOB_ROWS), get(self.srv, "/jobs?prefix=sim")["jobs"])
        p.eval("(i => { i.value = 'nothing-begins-so'; i.dispatchEvent(new Event('input')); })"
               "(document.getElementById('f-prefix'))")
        p.wait("document.querySelectorAll('#jobs-table tbody tr').length === 0 && "
               "document.querySelector('.note.empty') !== null", what="no match")
        self.assertIn("No job id begins with", p.eval("document.querySelector('.note.empty')"
                                                      ".textContent"))
        # A prefix the API refuses (422): its message where the rows were, the filters kept.
        self.expected = [r"status of 422"]
        p.eval("(i => { i.value = 'x'.repeat(301); i.dispatchEvent(new Event('input')); })"
               "(document.getElementById('f-prefix'))")
        self.settled(p, "error")
        panel = p.eval("document.querySelector('.error-panel').innerText")
        self.assertIn("query.prefix", panel)
        self.assertIn("422", panel)
        p.eval("(i => { i.value = ''; i.dispatchEvent(new Event('input')); })"
               "(document.getElementById('f-prefix'))")
        p.wait("document.querySelectorAll('#jobs-table tbody tr').length > 0",
               what="the rows after the bad prefix")
        self.settled(p)
        self.check_rows(p.eval(JS_JOB_ROWS), jobs)

        phone = self.open(self.srv, size=PHONE)
        self.check_rows(phone.eval(JS_JOB_ROWS), jobs)
        self.no_sideways_scroll(phone, "jobs at 390 px")
        self.shot(phone, "jobs")

    # -- a job ---------------------------------------------------------------------------

    def check_job_page(self, p, job_id):
        job = get(self.srv, f"/jobs/{enc(job_id)}")
        trials = all_trials(self.srv, job_id)
        sv = job["savings"]
        self.assertEqual(p.eval("document.getElementById('job-id').textContent"), job_id)
        head = p.eval(JS_FACTS + "('.job-head')")
        self.assertEqual(dv(head["trials.total"][1]), job["trials"]["total"])
        self.assertEqual(head["policy"], [job["policy"], job["policy"]])
        self.assertEqual(dv(head["best_batch_size"][1]), job["best_batch_size"])
        self.assertEqual(dv(head["revision"][1]), job["revision"])
        self.assertEqual(dv(head["min_cost"][1]), job["min_cost"])

        # Savings: every figure, exactly, with its unit.
        f = p.eval(JS_FACTS + "('#savings')")
        saved = sv["saved"] or {}
        dflt = sv["default_expected"] or {}
        for field, value, unit in [
                ("saved.energy_j", saved.get("energy_j"), True),
                ("saved.time_s", saved.get("time_s"), True),
                ("saved.cost", saved.get("cost"), True),
                ("regret", sv["regret"], True),
                ("best_expected_cost", sv["best_expected_cost"], False),
                ("spent.energy_j", sv["spent"]["energy_j"], True),
                ("spent.time_s", sv["spent"]["time_s"], True),
                ("spent.cost", sv["spent"]["cost"], True),
                ("default_expected.energy_j", dflt.get("energy_j"), True),
                ("default_expected.time_s", dflt.get("time_s"), True),
                ("default_expected.cost", dflt.get("cost"), True),
                ("finished_trials", sv["finished_trials"], False),
                ("failed_trials", sv["failed_trials"], False),
                ("default_runs", sv["default_runs"], False)]:
            self.assert_value(f[field], value, field, unit)
        be = f["break_even_recurrence"]
        self.assertEqual(dv(be[1]), sv["break_even_recurrence"])
        if sv["break_even_recurrence"] is not None:
            self.assertEqual(be[0], str(sv["break_even_recurrence"]))
        if sv["best_batch_size"] is not None:
            self.assertIn(f"batch size {sv['best_batch_size']}:", f["best_expected_cost"][0])

        # Cost per recurrence: one mark per finished or failed trial, the running best,
        # the default's expected cost.
        fin = [t for t in trials if t["status"] == "Succeeded" and t["cost"] is not None]
        failed = [t for t in trials if t["status"] == "Failed"]
        marks = p.eval(JS_MARKS + "('[data-chart=cost] .mark')")
        want = sorted([(t["trial_number"], t["cost"], t["type"], outcome(t))
                       for t in fin + failed], key=lambda x: x[0])
        got = sorted([(int(m["trial"]), dv(m["v"]), m["type"], m["outcome"]) for m in marks],
                     key=lambda x: x[0])
        self.assertEqual(got, want)
        best = p.eval("(e => e && JSON.parse(e.dataset.best))"
                      "(document.querySelector('[data-chart=cost] .best-line'))")
        self.assertEqual(best, running_best(trials) or None)
        if best:
            self.assertEqual(best[-1][1], job["min_cost"])
        line = p.eval("(e => e && e.dataset.v)"
                      "(document.querySelector('[data-chart=cost] .default-line'))")
        self.assertEqual(dv(line), dflt.get("cost"))
        # Cumulative cost: summed in trial-number order as the server sums (SPEC §5).
        total = p.eval("(e => e && e.dataset.v)"
                       "(document.querySelector('[data-chart=cumulative] .ours'))")
        if sv["default_expected"] is not None:
            self.assertEqual(dv(total), sv["spent"]["cost"])
            even = p.eval("(e => e && e.dataset.v)"
                          "(document.querySelector('[data-chart=cumulative] .even-line'))")
            self.assertEqual(dv(even), sv["break_even_recurrence"])
        else:
            self.assertIsNone(total)

        # Arms: mean +/- sd and observations per arm; the others pruned and greyed.
        arms = {a["batch_size"]: a for a in job["arms"]}
        pruned = {b for r in job["exploration"]["rounds"] if r["complete"] for b in r["pruned"]}
        rows = p.eval(JS_ROWS + "('#arms-table')")
        self.assertEqual([int(r["head"]) for r in rows], sorted(job["spec"]["batch_sizes"]))
        for r in rows:
            bs = int(r["head"])
            a = arms.get(bs)
            state = "arm" if a else ("pruned" if bs in pruned or job["stage"] == "MAB"
                                     else "exploring")
            self.assertEqual(r["data"]["state"], state, bs)
            self.assertEqual(dv(r["cells"]["cost"][1]), -a["mean"] if a else None, bs)
            self.assertEqual(dv(r["cells"]["sd"][1]), a["sd"] if a else None, bs)
            self.assertEqual(dv(r["cells"]["observations"][1]),
                             a["observations"] if a else None, bs)
            if a:
                self.assert_value(r["cells"]["cost"], -a["mean"], f"arm {bs}")
        chart = p.eval(JS_MARKS + "('[data-chart=arms] g.arm')")
        self.assertEqual(sorted((int(a["bs"]), dv(a["v"]), dv(a["sd"])) for a in chart),
                         sorted((b, -a["mean"], a["sd"]) for b, a in arms.items()))
        grey = p.eval("[...document.querySelectorAll('[data-chart=arms] text.pruned-label"
                      "[data-bs]')].map(t => +t.dataset.bs)")
        self.assertEqual(sorted(grey), sorted(b for b in job["spec"]["batch_sizes"]
                                              if b not in arms and job["stage"] == "MAB"))
        self.assertIn(job["stage"], p.eval("document.getElementById('stage-note').textContent"))

        # Pruning rounds, in order.
        rounds = p.eval(JS_ROWS + "('#rounds-table')")
        self.assertEqual(len(rounds), len(job["exploration"]["rounds"]))
        for r, want_r in zip(rounds, job["exploration"]["rounds"]):
            c = r["cells"]
            self.assertEqual(int(r["data"]["round"]), want_r["round"])
            self.assertEqual(dv(c["default"][1]), want_r["default_batch_size"])
            for k in ("explored", "converged", "pruned"):
                self.assertEqual(json.loads(c[k][1]), want_r[k], k)
            self.assertEqual(c["complete"][1], "true" if want_r["complete"] else "false")

        # Timeline: a bar per trial, trials at once on different rows, as few rows as the
        # most trials that ran at once.
        bars = p.eval(JS_MARKS + "('[data-chart=timeline] rect.bar')")
        self.assertEqual(sorted(int(b["trial"]) for b in bars),
                         sorted(t["trial_number"] for t in trials))
        by_number = {t["trial_number"]: t for t in trials}
        lanes = {}
        for b in bars:
            t = by_number[int(b["trial"])]
            self.assertEqual((dv(b["start"]), dv(b["end"])), (t["start_time"], bar_end(t)))
            self.assertEqual(b["outcome"], outcome(t))
            lanes.setdefault(int(b["lane"]), []).append((t["start_time"], bar_end(t)))
        for spans in lanes.values():
            spans.sort()
            for (_, e), (s, _) in zip(spans, spans[1:]):
                self.assertLessEqual(e, s, "two trials on one row overlap")
        self.assertEqual(len(lanes), max_at_once(trials))

        # The trial table's first page.
        rows = p.eval(JS_ROWS + "('#trials-table')")
        self.assertEqual([int(r["data"]["trial"]) for r in rows],
                         [t["trial_number"] for t in trials[:100]])
        for r, t in zip(rows, trials):
            c = r["cells"]
            self.assertEqual(dv(c["batch_size"][1]), t["batch_size"])
            self.assertEqual(c["type"][0].strip(), t["type"])
            self.assertEqual(c["status"][0], t["status"])
            for k in ("time_s", "energy_j", "cost"):
                self.assert_value(c[k], t[k], f"trial {t['trial_number']} {k}")
            self.assertEqual(dv(c["metric"][1]), t["metric"])
            self.assertEqual(dv(c["epochs"][1]), t["epochs"])
        return job, trials

    def test_job_page_of_a_replayed_cifar100_job(self):
        p = self.open(self.srv, f"#/job/{enc(self.SIM)}")
        job, trials = self.check_job_page(p, self.SIM)
        self.assertEqual(job["stage"], "MAB")
        self.assertIsNotNone(job["savings"]["default_expected"])
        self.assertTrue(any(t["type"] == "Concurrent" for t in trials))
        self.assertGreater(len(job["arms"]), 1)
        self.shot(p, "job")
        self.shot(p, "job-full", full_page=True)
        phone = self.open(self.srv, f"#/job/{enc(self.SIM)}", size=PHONE)
        self.check_job_page(phone, self.SIM)
        self.no_sideways_scroll(phone, "job page at 390 px")
        widths = phone.eval("[...document.querySelectorAll('svg.chart')]"
                            ".map(s => s.getBoundingClientRect().right)")
        self.assertTrue(widths and max(widths) <= 390, widths)
        self.shot(phone, "job")

    def test_job_pages_of_workload_jobs(self):
        jobs = [j for j in get(self.srv, "/jobs?prefix=dash-")["jobs"]
                if j["trials"]["total"] > 0 and j["job_id"] != "dash-running"]
        self.assertEqual(len(jobs), 5)
        self.assertTrue(any(j["trials"]["Failed"] for j in jobs), "no failed trial seeded")
        cheap = get(self.srv, "/jobs/dash-cheap/trials")["trials"]
        self.assertEqual([(t["converged"], t["cost"] < cheap[0]["cost"]) for t in cheap],
                         [(True, False), (False, True)])
        p = self.open(self.srv, "#/job/" + enc(jobs[0]["job_id"]))
        for j in jobs:
            if j is not jobs[0]:
                self.goto(p, "#/job/" + enc(j["job_id"]))
            self.check_job_page(p, j["job_id"])
        # Links: a point of the cost chart leads to its trial.
        href = p.eval("document.querySelector('[data-chart=cost] a').getAttribute('href')")
        self.assertTrue(href.startswith("#/job/" + enc(jobs[-1]["job_id"]) + "/trial/"), href)

    # -- a trial -------------------------------------------------------------------------

    def check_trial_page(self, p, job_id, n):
        t = get(self.srv, f"/jobs/{enc(job_id)}/trials/{n}")
        spec = get(self.srv, f"/jobs/{enc(job_id)}")["spec"]
        f = p.eval(JS_FACTS + "('.job-head')")
        self.assertEqual(dv(f["batch_size"][1]), t["batch_size"])
        for k in ("time_s", "energy_j", "cost"):
            self.assert_value(f[k], t[k], k)
        self.assertEqual(dv(f["metric"][1]), t["metric"])
        self.assertEqual(dv(f["epochs"][1]), t["epochs"])
        self.assertEqual(dv(f["target_metric"][1]), spec["target_metric"])
        for chart, key in (("metric", "metric"), ("time", "time_s"), ("energy", "energy_j")):
            pts = p.eval(JS_MARKS + f"('[data-chart={chart}] .curve-pt')")
            self.assertEqual([(int(x["epoch"]), dv(x["v"])) for x in pts],
                             [(r["epoch"], r[key]) for r in t["reports"]], chart)
            labels = p.eval(f"[...document.querySelectorAll('[data-chart={chart}] text.label')]"
                            ".map(t => t.textContent)")
            self.assertIn("epoch", labels)
            if chart != "metric":
                self.assertTrue(any(re.search(r"\((ms|s|min|h|J|kJ|MJ|GJ)\)$", x)
                                    for x in labels), labels)
        target = p.eval("document.querySelector('[data-chart=metric] .target-line')"
                        ".dataset.v")
        self.assertEqual(dv(target), spec["target_metric"])
        rows = p.eval(JS_ROWS + "('#reports-table')")
        self.assertEqual([int(r["head"]) for r in rows], [r["epoch"] for r in t["reports"]])
        for r, want in zip(rows, t["reports"]):
            self.assert_value(r["cells"]["energy_j"], want["energy_j"], "report energy")
            self.assert_value(r["cells"]["time_s"], want["time_s"], "report time")
        return t

    def test_trial_page_curves(self):
        trials = all_trials(self.srv, self.SIM)
        t = max((t for t in trials if t["status"] == "Succeeded"), key=lambda t: t["epochs"])
        self.assertGreaterEqual(t["epochs"], 5)
        n = t["trial_number"]
        deadline = time.monotonic() + 10
        while len(get(self.srv, f"/jobs/{enc(self.SIM)}/trials/{n}")["reports"]) < t["epochs"]:
            self.assertLess(time.monotonic(), deadline, "curve points were not written")
            time.sleep(0.1)
        p = self.open(self.srv, f"#/job/{enc(self.SIM)}/trial/{n}")
        doc = self.check_trial_page(p, self.SIM, n)
        self.assertEqual(len(doc["reports"]), t["epochs"])
        self.shot(p, "trial")
        phone = self.open(self.srv, f"#/job/{enc(self.SIM)}/trial/{n}", size=PHONE)
        self.check_trial_page(phone, self.SIM, n)
        self.no_sideways_scroll(phone, "trial page at 390 px")
        self.shot(phone, "trial")

    # -- empty states ---------------------------------------------------------------------

    def test_a_job_without_trials_or_finished_trials(self):
        p = self.open(self.srv, "#/job/dash-running")
        self.check_job_page(p, "dash-running")
        empty = p.eval("[...document.querySelectorAll('.note.empty')].map(e => e.textContent)")
        self.assertTrue(any(e.startswith("No finished trial yet") for e in empty), empty)
        self.assertTrue(any(e.startswith("No baseline yet") for e in empty), empty)
        bars = p.eval(JS_MARKS + "('[data-chart=timeline] rect.bar')")
        self.assertEqual([b["outcome"] for b in bars], ["running"])
        self.shot(p, "job-running")
        self.goto(p, "#/job/dash-running/trial/1")
        self.assertIn("No report received for this trial yet",
                      p.eval("document.getElementById('main').innerText"))
        self.goto(p, "#/job/dash-empty")
        self.check_job_page(p, "dash-empty")
        text = p.eval("document.getElementById('main').innerText")
        self.assertIn("No trial yet", text)
        self.assertIn("No finished trial yet", text)
        self.goto(p, "#/job/" + enc(WEIRD_ID))
        self.assertEqual(p.eval("document.getElementById('job-id').textContent"), WEIRD_ID)

    def test_unknown_job_and_trial_and_a_failing_api(self):
        self.expected = [r"status of 404", r"status of 503"]
        p = self.open(self.srv, "#/job/no-such-job", state="error")
        panel = p.eval("document.querySelector('.error-panel').innerText")
        self.assertIn("Not found", panel)
        self.assertIn("Unknown job_id: no-such-job", panel)
        self.goto(p, "#/job/dash-empty/trial/7", state="error")
        self.assertIn("Not found", p.eval("document.querySelector('.error-panel').innerText"))
        self.goto(p, "#/nowhere", state="error")
        # The API failing: its answers replaced by a 503 (the browser never reaches the
        # server), the message shown, and the view comes back once it answers again.
        msg = "the database is locked by another connection or process"
        p.fulfil("*/jobs*", 503, json.dumps({"message": msg}).encode())
        self.goto(p, "#/", state="error")
        panel = p.eval("document.querySelector('.error-panel').innerText")
        self.assertIn("cannot answer now (503)", panel)
        self.assertIn(msg, panel)
        self.shot(p, "error-503")
        p.call("Fetch.disable")
        p.eval("document.querySelector('.error-panel button').click()")
        self.settled(p)
        self.assertGreater(len(p.eval(JS_JOB_ROWS)), 0)
        self.assertTrue(any(s == 503 for _, s, _ in p.responses))


class Lifecycle(BrowserCase):
    """A server of its own: no jobs, a job arriving (auto-refresh), the server going
    away while the page is open."""

    def test_no_jobs_then_auto_refresh_then_server_down(self):
        self.expected = [r"ERR_CONNECTION_REFUSED"]
        srv = Server()
        self.addCleanup(srv.close)
        srv.start()
        p = self.open(srv)
        self.assertIn("No jobs yet", p.eval("document.getElementById('main').innerText"))
        self.shot(p, "no-jobs")
        r = srv.request("POST", "/jobs", body=job_spec(job_id="late-1", job_id_prefix="late"))
        self.assertEqual(r.status, 201, r)
        p.wait("document.querySelectorAll('#jobs-table tbody tr').length === 1", timeout=20,
               what="auto-refresh to show the new job")
        self.assertNotIn("No jobs yet", p.eval("document.getElementById('main').innerText"))
        srv.kill()
        p.wait("!document.getElementById('banner').hidden", timeout=20,
               what="the refresh failure banner")
        self.assertIn("Refresh failed", p.eval("document.getElementById('banner').textContent"))
        self.assertEqual(p.eval("document.querySelectorAll('#jobs-table tbody tr').length"), 1)
        self.shot(p, "server-down")
        self.goto(p, "#/job/late-1", state="error")
        self.assertIn("does not answer", p.eval("document.querySelector('.error-panel')"
                                                ".innerText"))


class HiddenCharacters(BrowserCase):
    """Job ids that differ only by invisible characters (a right-to-left override, a
    zero-width space, a tag) are shown escaped, so they look different; links keep the
    ids themselves (issue 22 item 10)."""

    def test_invisible_characters_in_job_ids_are_shown_escaped(self):
        srv = Server()
        self.addCleanup(srv.close)
        srv.start()
        shown = {"bidi-a": "bidi-a", "bidi-\u202ea": "bidi-\\u202ea",
                 "bidi\u200b-a": "bidi\\u200b-a", "bidi-a\U000e0001": "bidi-a\\U000e0001",
                 "bidi-\u00e9\u2713": "bidi-\u00e9\u2713"}
        for jid in shown:
            r = srv.request("POST", "/jobs", body=job_spec(job_id=jid, job_id_prefix="bidi"))
            self.assertEqual(r.status, 201, r)
        p = self.open(srv)
        rows = p.eval(JS_JOB_ROWS)
        self.assertEqual(sorted(r["job"] for r in rows), sorted(shown))
        for r in rows:
            self.assertEqual(r["cells"]["job_id"][0], shown[r["job"]], r)
            self.assertEqual(r["link"], "#/job/" + enc(r["job"]), r)
        texts = [r["cells"]["job_id"][0] for r in rows]
        self.assertEqual(len(set(texts)), len(texts), texts)
        rlo = "bidi-\u202ea"
        self.assertEqual(srv.request("GET", f"/jobs/batch_size?job_id={enc(rlo)}").status, 200)
        self.goto(p, "#/job/" + enc(rlo))
        self.assertEqual(p.eval("document.getElementById('job-id').textContent"), shown[rlo])
        self.goto(p, "#/job/" + enc(rlo) + "/trial/1")
        self.assertIn("of job " + shown[rlo], p.eval("document.getElementById('main').innerText"))


SECRET = "secret-job-7f3a"
TOKEN = "dash-token-9c1e"


class Token(BrowserCase):
    """ZEUS_BSO_API_TOKEN set: the page and its files are served without it and reveal
    nothing of the jobs; every figure needs the token, entered in the login field."""

    def test_no_page_or_asset_reveals_job_data_without_the_token(self):
        self.expected = [r"status of 401"]
        srv = Server(env={"ZEUS_BSO_API_TOKEN": TOKEN})
        self.addCleanup(srv.close)
        srv.start()
        auth = {"Authorization": f"Bearer {TOKEN}"}
        r = srv.request("POST", "/jobs", body=job_spec(job_id=SECRET, job_id_prefix="secret"),
                        headers=auth)
        self.assertEqual(r.status, 201, r)
        r = srv.request("GET", f"/jobs/batch_size?job_id={SECRET}", headers=auth)
        self.assertEqual(r.status, 200, r)
        bare = Server()
        self.addCleanup(bare.close)
        bare.start()

        # Without the token: the three files, byte for byte what a server without jobs
        # or token serves; everything else 401 without a job id in it.
        types = {"/": "text/html", "/app.js": "text/javascript", "/app.css": "text/css"}
        for path, ctype in types.items():
            got, ref = srv.request("GET", path), bare.request("GET", path)
            self.assertEqual(got.status, 200, path)
            self.assertEqual(got.body, ref.body, path)
            self.assertNotIn(SECRET.encode(), got.body, path)
            self.assertTrue(got.headers["Content-Type"].startswith(ctype), got.headers)
            self.assertEqual(got.headers["Cache-Control"], "no-cache", path)
            self.assertEqual(got.headers["X-Content-Type-Options"], "nosniff", path)
        csp = srv.request("GET", "/").headers["Content-Security-Policy"]
        self.assertIn("script-src 'self'", csp)
        self.assertIn("frame-ancestors 'none'", csp)
        for path in ("/jobs", f"/jobs/{SECRET}", f"/jobs/{SECRET}/trials",
                     f"/jobs/{SECRET}/trials/1", "/openapi.json", "/metrics", "/index.html",
                     "/app.js?x", "/favicon.ico"):
            r = srv.request("GET", path)
            if path == "/app.js?x":
                self.assertEqual(r.status, 200, path)   # a query does not change the file
                continue
            self.assertEqual(r.status, 401, (path, r))
            self.assertNotIn(SECRET.encode(), r.body, path)

        # In the browser: the login form, nothing of the job in the page or its answers.
        p = self.open(srv, state="login")
        self.assertNotIn(SECRET, p.eval("document.documentElement.outerHTML"))
        self.assertEqual(sorted({s for u, s, _ in p.responses if "/jobs" in u}), [401])
        self.shot(p, "login")
        p.eval("document.getElementById('token').value = 'wrong'")
        p.eval("document.querySelector('form.login button').click()")
        p.wait("(e => e && e.textContent.includes('refused'))"
               "(document.querySelector('form.login .error-msg'))", what="the refusal")
        self.assertNotIn(SECRET, p.eval("document.documentElement.outerHTML"))
        self.assertIsNone(p.eval("sessionStorage.getItem('zbso.apiToken')"))
        # The right token: the jobs, kept for the tab's session, gone after sign out.
        p.eval(f"document.getElementById('token').value = {json.dumps(TOKEN)}")
        p.eval("document.querySelector('form.login button').click()")
        self.settled(p)
        self.assertEqual([r["job"] for r in p.eval(JS_JOB_ROWS)], [SECRET])
        self.assertEqual(p.eval("sessionStorage.getItem('zbso.apiToken')"), TOKEN)
        self.goto(p, f"#/job/{SECRET}")
        self.assertEqual(p.eval("document.getElementById('job-id').textContent"), SECRET)
        self.reload(p)
        self.assertEqual(p.eval("document.getElementById('job-id').textContent"), SECRET)
        p.eval("document.getElementById('signout').click()")
        self.settled(p, "login")
        self.assertIsNone(p.eval("sessionStorage.getItem('zbso.apiToken')"))
        self.assertNotIn(SECRET, p.eval("document.getElementById('main').outerHTML"))
        # A new tab (another session) starts without the token.
        q = self.open(srv, state="login")
        self.assertNotIn(SECRET, q.eval("document.documentElement.outerHTML"))


if __name__ == "__main__":
    unittest.main()
