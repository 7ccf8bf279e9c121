"""test_jobs_cli.py: `zbso jobs` (SPEC §1.2) end to end on $ZBSO_TEST_BACKEND: a real server
runs a seeded workload (workload.py), then every subcommand in every format, through the
server (--server) and straight from the database (--db), is checked against the rows read
from the database itself (sqlite3 on SQLite, psql on PostgreSQL, the mariadb client on
MariaDB): trials, curve points, arms, counts and the savings as SPEC §5 "Savings" defines
them, recomputed here. Also: both sources print the same bytes, every page is followed,
unknown jobs and trials, usage errors, the token, and rm."""

import csv
import io
import json
import math
import os
import subprocess
import tempfile
import time
import unittest
import urllib.parse

from workload import MAX_EPOCHS, Workload, report_body, seeded_specs
from zbsoserver import ZBSO_BIN, Server, clean_env, job_spec, run_cli

STAGES = ["Pruning", "MAB"]
TYPES = ["Exploration", "Concurrent", "MAB"]
STATUSES = ["Dispatched", "Succeeded", "Failed"]
# Stored stop reason codes (src/core/types.h); 0: running.
REASONS = [None, "target_reached", "cost_bound", "max_epochs", "ended", "lease_expired"]
ODD_ID = 'odd, "id" \u00e9/x\ty'    # a comma, quotes, non-ASCII, a slash and a tab
FORMATS = ("table", "json", "csv")
TOKEN = "s3cret-token"


def pct(x):
    """A percentage as a table shows it."""
    return "-" if x is None else f"{x:.1f}%"


def rfc3339_ms(t):
    """Unix seconds as zbso jobs writes them in CSV: 2026-11-23T22:30:05.250Z."""
    secs = math.floor(t)
    ms = round((t - secs) * 1000)
    if ms == 1000:
        secs, ms = secs + 1, 0
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{ms:03d}Z"


def f1(x):
    """A number as a table shows joules and seconds ("-" for None)."""
    return "-" if x is None else f"{x:.1f}"


def close(a, b):
    """Equal doubles, or computed ones within rounding (sums of the same terms)."""
    if a is None or b is None:
        return a is b
    return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)


class Db:
    """The database's rows, read without zbso."""

    def __init__(self, db):
        self.db = db

    def jobs(self):
        return {r["job_id"]: r for r in self.db.rows("jobs", "job_id")}

    def trials(self, job_id):
        return [r for r in self.db.rows("trials", "job_id, trial_number")
                if r["job_id"] == job_id]

    def reports(self, job_id, tn):
        return [r for r in self.db.rows("reports", "job_id, trial_number, epoch")
                if r["job_id"] == job_id and r["trial_number"] == tn]

    def arms(self, job_id):
        """The arms, with PostgreSQL's and MariaDB's column names (param_mean,
        param_precision) as SQLite's (mean, precision). MariaDB's DOUBLE holds no
        infinity: an infinite precision is stored there as NULL (src/store/netdb/mysql_ops.c)."""
        rows = [r for r in self.db.rows("arms", "job_id, batch_size") if r["job_id"] == job_id]
        for r in rows:
            for name in ("mean", "precision"):
                if "param_" + name in r:
                    r[name] = r.pop("param_" + name)
            if self.db.kind == "mysql" and r["precision"] is None:
                r["precision"] = math.inf
        return rows


def num(v):
    """A stored REAL as a float (PostgreSQL's JSON spells infinities as strings)."""
    if isinstance(v, str):
        return float(v)
    return v


def expected_trial(job, t):
    """The Trial document SPEC §5 derives from a trials row."""
    done = t["status"] == 1
    cost = None
    if done:
        eta = job["eta_knob"]
        cost = eta * t["energy"] + (1 - eta) * job["max_power"] * t["time"]
    return {"trial_number": t["trial_number"], "batch_size": t["batch_size"],
            "type": TYPES[t["type"]], "status": STATUSES[t["status"]],
            "start_time": t["start_time"], "end_time": t["end_time"] if t["status"] else None,
            "lease_renewed_at": t["lease_renewed_at"],
            "time_s": t["time"] if done else None, "energy_j": t["energy"] if done else None,
            "metric": t["metric"] if done else None, "epochs": t["epochs"] if done else None,
            "cost": cost, "converged": bool(t["converged"]),
            "stop_reason": REASONS[t["stop_reason"]]}


def expected_savings(job, trials):
    """SPEC §5 "Savings", worked out from the rows (trial-number order, plain sums)."""
    eta, mp, dflt = job["eta_knob"], job["max_power"], job["default_batch_size"]
    fin = [t for t in trials if t["status"] == 1]
    costs = [eta * t["energy"] + (1 - eta) * mp * t["time"] for t in fin]
    spent = {"energy_j": 0.0, "time_s": 0.0, "cost": 0.0}
    for t, c in zip(fin, costs):
        spent["energy_j"] += t["energy"]
        spent["time_s"] += t["time"]
        spent["cost"] += c
    n = len(fin)
    base = [(t, c) for t, c in zip(fin, costs) if t["batch_size"] == dflt and t["converged"]]
    out = {"finished_trials": n, "failed_trials": sum(t["status"] == 2 for t in trials),
           "spent": spent, "default_batch_size": dflt, "default_runs": len(base),
           "default_expected": None, "saved": None, "saved_pct": None,
           "break_even_recurrence": None}
    if base:
        de = {"energy_j": 0.0, "time_s": 0.0, "cost": 0.0}
        for t, c in base:
            de["energy_j"] += t["energy"]
            de["time_s"] += t["time"]
            de["cost"] += c
        de = {k: v / len(base) for k, v in de.items()}
        out["default_expected"] = de
        out["saved"] = {k: n * de[k] - spent[k] for k in de}
        out["saved_pct"] = {k[:k.index("_")] if "_" in k else k:
                            out["saved"][k] / (n * de[k]) * 100 if n * de[k] else None
                            for k in de}
        k_even, total = None, 0.0
        for j, c in enumerate(costs, 1):
            total += c
            if total <= j * de["cost"]:
                k_even = j if k_even is None else k_even
            else:
                k_even = None
        out["break_even_recurrence"] = k_even
    by_bs = {}
    for t, c in zip(fin, costs):
        if t["converged"]:
            by_bs.setdefault(t["batch_size"], []).append(c)
    means = {bs: sum(cs) / len(cs) for bs, cs in by_bs.items()}
    best = min(means, key=lambda bs: (means[bs], bs)) if means else None
    out["best_batch_size"] = best
    out["best_expected_cost"] = means[best] if best is not None else None
    out["regret"] = spent["cost"] - n * means[best] if best is not None else None
    return out


class JobsCliTest(unittest.TestCase):
    """One server with a seeded workload for the whole class; each test reads it (rm tests
    delete jobs of their own)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="zbso-jobs-")
        cls.srv = Server(tmpdir=cls.tmp.name)
        cls.srv.start()
        specs = seeded_specs("jcli", 4)
        wl = Workload([lambda: (cls.srv.host, cls.srv.port)], specs, threads=4,
                      duration_s=20.0, max_trials=70, seed=11, fail_p=0.15)
        wl.run()
        if wl.errors:
            raise AssertionError("workload failed: " + "; ".join(wl.errors[:5]))
        # A job whose id needs escaping everywhere, run serially to the MAB stage.
        odd = dict(specs[0], job_id=ODD_ID, job_id_prefix="odd", mab_seed=5)
        cls.call("POST", "/jobs", odd)
        for _ in range(8):
            cls.run_trial(ODD_ID)
        # The server restarts with a token (the workload's client sends none); SIGTERM
        # closes the store, so every curve point is written.
        if cls.srv.terminate() != 0:
            raise AssertionError("the server did not stop cleanly: " + cls.srv.log_tail())
        cls.srv.env["ZEUS_BSO_API_TOKEN"] = TOKEN
        cls.srv.start()
        cls.url = f"http://{cls.srv.host}:{cls.srv.port}"
        # One trial left running (Dispatched: its figures are null).
        cls.running = cls.call("GET", "/jobs/batch_size?job_id=jcli-1")["trial_number"]
        cls.db = Db(cls.srv.db)
        cls.specs = {s["job_id"]: s for s in specs + [odd]}
        cls.ids = sorted(cls.specs)

    @classmethod
    def call(cls, method, path, body=None):
        """One request with the token (when the server has one); the JSON answer."""
        r = cls.srv.request(method, path, body=body,
                            headers={"Authorization": f"Bearer {TOKEN}"})
        if r.status not in (200, 201):
            raise AssertionError(f"{method} {path}: {r}")
        return r.json

    @classmethod
    def run_trial(cls, job_id):
        """Dispatches a trial and reports its epochs (workload.report_body) until stopped."""
        t = cls.call("GET", "/jobs/batch_size?job_id=" + urllib.parse.quote(job_id, safe=""))
        for epoch in range(1, MAX_EPOCHS + 1):
            body = report_body(job_id, t["batch_size"], t["trial_number"], epoch)
            if cls.call("POST", "/report", body)["stop_train"]:
                return

    @classmethod
    def tearDownClass(cls):
        cls.srv.close()
        cls.tmp.cleanup()

    # -- running the CLI ---------------------------------------------------------------

    def zbso(self, *args, source="db", code=0, env=None):
        """Runs `zbso jobs ARGS` against the server or the database; checks the exit status
        and returns stdout (stderr when code is not 0)."""
        extra = ["--db", self.srv.db_url] if source == "db" else ["--server", self.url]
        e = {"ZEUS_BSO_API_TOKEN": TOKEN} if source == "server" else {}
        e.update(env or {})
        # Bytes, decoded here: text mode would turn CSV's CRLF into LF.
        r = subprocess.run([ZBSO_BIN, "jobs", *args, *extra], cwd=self.tmp.name,
                           env=clean_env(e), capture_output=True, timeout=120)
        out, err = r.stdout.decode("utf-8"), r.stderr.decode("utf-8", "replace")
        self.assertEqual(r.returncode, code, f"zbso jobs {args} ({source}): {err}")
        return out if code == 0 else err

    def both(self, *args):
        """stdout of the command from the database and from the server, which must agree."""
        a = self.zbso(*args, source="db")
        b = self.zbso(*args, source="server")
        self.assertEqual(a, b, f"--db and --server differ for {args}")
        return a

    def csv_rows(self, text):
        self.assertTrue(text.endswith("\r\n") or text == "", text[-50:])
        return list(csv.DictReader(io.StringIO(text, newline="")))

    # -- ls ------------------------------------------------------------------------------

    def check_summary(self, job_id, doc):
        job = self.db.jobs()[job_id]
        trials = self.db.trials(job_id)
        self.assertEqual(doc["job_id"], job_id)
        self.assertEqual(doc["job_id_prefix"], job["job_id_prefix"])
        self.assertEqual(doc["stage"], STAGES[job["stage"]])
        self.assertEqual(doc["created_at"], job["created_at"])
        self.assertEqual(doc["updated_at"], job["updated_at"])
        self.assertEqual(doc["min_cost"], job["min_cost"])
        self.assertEqual(doc["min_cost_batch_size"], job["min_cost_batch_size"])
        self.assertEqual(doc["trials"], {
            "total": len(trials), **{s: sum(t["status"] == i for t in trials)
                                     for i, s in enumerate(STATUSES)},
            "by_stop_reason": {**{r: sum(t["stop_reason"] == i for t in trials)
                                  for i, r in enumerate(REASONS) if r},
                               "unknown": 0}})
        # every finished trial has its reason stored
        self.assertTrue(all((t["stop_reason"] == 0) == (t["status"] == 0) for t in trials))
        want = expected_savings(job, trials)
        got = doc["savings"]
        for k in ("finished_trials", "failed_trials", "default_batch_size", "default_runs",
                  "break_even_recurrence", "best_batch_size"):
            self.assertEqual(got[k], want[k], f"{job_id} savings.{k}")
        for k in ("best_expected_cost", "regret"):
            self.assertTrue(close(got[k], want[k]), f"{job_id} savings.{k}: {got[k]} {want[k]}")
        for part in ("spent", "default_expected", "saved", "saved_pct"):
            if want[part] is None:
                self.assertIsNone(got[part], f"{job_id} savings.{part}")
                continue
            for k, v in want[part].items():
                self.assertTrue(close(got[part][k], v), f"{job_id} savings.{part}.{k}")
            if part != "saved_pct":
                self.assertEqual(got[part]["energy_kwh"], got[part]["energy_j"] / 3.6e6)
        return want

    def test_ls_every_format(self):
        self.assertGreater(sum(len(self.db.trials(j)) for j in self.ids), 30)
        doc = json.loads(self.both("ls", "--format", "json"))
        self.assertIsNone(doc["next"])
        self.assertEqual([j["job_id"] for j in doc["jobs"]], self.ids)
        by_id = {j["job_id"]: j for j in doc["jobs"]}
        savings = {j: self.check_summary(j, by_id[j]) for j in self.ids}
        # The database read here has jobs in MAB and a job that saved or lost energy.
        self.assertIn("MAB", [j["stage"] for j in doc["jobs"]])
        self.assertTrue(any(s["saved"] is not None for s in savings.values()))

        rows = self.csv_rows(self.both("ls", "--format", "csv"))
        self.assertEqual([r["job_id"] for r in rows], self.ids)
        for r in rows:
            j = by_id[r["job_id"]]
            self.assertEqual(int(r["trials.total"]), j["trials"]["total"])
            self.assertEqual(int(r["trials.Failed"]), j["trials"]["Failed"])
            # Times in CSV are RFC 3339 UTC with milliseconds.
            self.assertEqual(r["created_at"], rfc3339_ms(j["created_at"]))
            self.assertEqual(float(r["savings.spent.energy_j"]),
                             j["savings"]["spent"]["energy_j"])
            for field, value in (("savings.saved.time_s",
                                  j["savings"]["saved"] and j["savings"]["saved"]["time_s"]),
                                 ("min_cost", j["min_cost"])):
                if value is None:
                    self.assertEqual(r[field], "")
                else:
                    self.assertEqual(float(r[field]), value)

        for r in rows:
            s = by_id[r["job_id"]]["savings"]
            for k in ("cost", "energy", "time"):
                v = s["saved_pct"] and s["saved_pct"][k]
                got = r[f"savings.saved_pct.{k}"]
                self.assertEqual(got and float(got), "" if v is None else v)
            self.assertEqual(int(r["trials.by_stop_reason.target_reached"]),
                             by_id[r["job_id"]]["trials"]["by_stop_reason"]["target_reached"])
        # Nothing configured: no CO2e or price column.
        self.assertFalse([k for k in rows[0] if "co2e" in k or "price" in k or "currency" in k])

        # The headline leads (issue 25): the cost saved, absolute and as a percentage,
        # whether the job broke even ("not yet" when behind), then energy and time.
        lines = self.both("ls").splitlines()
        self.assertRegex(lines[0], r"^job id +stage +cost saved \(J\) +cost saved +break-even +"
                                   r"energy saved \(kWh\) +energy saved +time saved \(s\) +"
                                   r"time saved +trials +running +failed +best bs +policy +"
                                   r"updated \(UTC\)$")
        self.assertEqual(len(lines), 1 + len(self.ids))
        for line, jid in zip(lines[1:], self.ids):
            j = by_id[jid]
            shown = jid.replace("\t", "\\x09")
            self.assertTrue(line.startswith(shown + " "), line)
            cells = line[len(shown):].replace("not yet", "not_yet").split()
            s = j["savings"]
            saved, sp = s["saved"], s["saved_pct"]
            be = ("-" if saved is None else "not_yet") if s["break_even_recurrence"] is None \
                else str(s["break_even_recurrence"])
            self.assertEqual(cells[:9], [
                j["stage"], f1(saved and saved["cost"]), pct(sp and sp["cost"]), be,
                "-" if saved is None else f"{saved['energy_kwh']:.3f}",
                pct(sp and sp["energy"]), f1(saved and saved["time_s"]),
                pct(sp and sp["time"]), str(j["trials"]["total"])])
            self.assertEqual(cells[9:13], [str(j["trials"]["Dispatched"]),
                                           str(j["trials"]["Failed"]),
                                           str(j["best_batch_size"]), j["policy"]])
            self.assertEqual(cells[13], time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                      time.gmtime(j["updated_at"])))

    def test_ls_pages_and_prefix(self):
        whole = self.both("ls", "--format", "json")
        for size in ("1", "2", "1000"):
            self.assertEqual(self.both("ls", "--format", "json", "--page-size", size), whole)
        doc = json.loads(self.both("ls", "--prefix", "jcli-", "--format", "json"))
        self.assertEqual([j["job_id"] for j in doc["jobs"]],
                         [j for j in self.ids if j.startswith("jcli-")])
        doc = json.loads(self.both("ls", "--prefix", "nothing", "--format", "json"))
        self.assertEqual(doc, {"jobs": [], "next": None})
        self.assertEqual(self.both("ls", "--prefix", "nothing", "--format", "csv").count("\r\n"),
                         1)

    # -- show ----------------------------------------------------------------------------

    def test_show_every_format(self):
        for jid in self.ids:
            job = self.db.jobs()[jid]
            doc = json.loads(self.both("show", jid, "--format", "json"))
            self.check_summary(jid, doc)
            self.assertEqual(doc["spec"]["batch_sizes"], sorted(self.specs[jid]["batch_sizes"]))
            self.assertEqual(doc["spec"]["eta_knob"], job["eta_knob"])
            self.assertEqual(doc["revision"], job["version"])
            arms = self.db.arms(jid)
            self.assertEqual([a["batch_size"] for a in doc["arms"]],
                             [a["batch_size"] for a in arms])
            for got, row in zip(doc["arms"], arms):
                p = num(row["precision"])
                self.assertEqual(got["mean"], row["mean"])
                self.assertEqual(got["observations"], row["num_observations"])
                self.assertEqual(got["precision"], None if math.isinf(p) else p)
                self.assertTrue(close(got["sd"], 0.0 if math.isinf(p) else 1 / math.sqrt(p)))
            trials = self.db.trials(jid)
            for i, ty in enumerate(TYPES):
                self.assertEqual(doc["counts"][ty], {
                    s: sum(t["type"] == i and t["status"] == k for t in trials)
                    for k, s in enumerate(STATUSES)})

            rows = self.csv_rows(self.both("show", jid, "--format", "csv"))
            flat = {r["field"]: r["value"] for r in rows}
            self.assertEqual(flat["job_id"], jid)
            self.assertEqual(flat["stage"], doc["stage"])
            self.assertEqual(float(flat["savings.spent.energy_j"]),
                             doc["savings"]["spent"]["energy_j"])
            for i, a in enumerate(doc["arms"]):
                self.assertEqual(float(flat[f"arms.{i}.mean"]), a["mean"])
                self.assertEqual(int(flat[f"arms.{i}.observations"]), a["observations"])

            text = self.both("show", jid)
            s = doc["savings"]
            for label, value in [("stage", doc["stage"]), ("revision", str(doc["revision"])),
                                 ("trials", str(doc["trials"]["total"])),
                                 ("min cost (J)", f1(doc["min_cost"])),
                                 ("spent energy (J)", f1(s["spent"]["energy_j"])),
                                 ("spent time (s)", f1(s["spent"]["time_s"])),
                                 ("saved energy (J)", f1(s["saved"] and s["saved"]["energy_j"])),
                                 ("regret (J)", f1(s["regret"]))]:
                self.assertRegex(text, rf"(?m)^{label.replace('(', '[(]').replace(')', '[)]')}"
                                       rf" +{value.replace('.', '[.]')}$")
            for a in doc["arms"]:
                self.assertRegex(text, rf"(?m)^ *{a['batch_size']} +{f1(a['mean'])} ")

    # -- trials and curve ----------------------------------------------------------------

    def test_trials_every_format(self):
        for jid in self.ids:
            job = self.db.jobs()[jid]
            want = [expected_trial(job, t) for t in self.db.trials(jid)]
            doc = json.loads(self.both("trials", jid, "--format", "json"))
            self.assertEqual(doc["job_id"], jid)
            self.assertIsNone(doc["next"])
            self.assertEqual(len(doc["trials"]), len(want))
            for got, w in zip(doc["trials"], want):
                for k, v in w.items():
                    ok = close(got[k], v) if k == "cost" else got[k] == v
                    self.assertTrue(ok, f"{jid} trial {w['trial_number']} {k}: {got[k]} {v}")
            self.assertEqual(self.both("trials", jid, "--format", "json", "--page-size", "3"),
                             self.both("trials", jid, "--format", "json"))

            rows = self.csv_rows(self.both("trials", jid, "--format", "csv"))
            self.assertEqual(len(rows), len(want))
            for r, w in zip(rows, want):
                self.assertEqual(int(r["trial_number"]), w["trial_number"])
                self.assertEqual(r["status"], w["status"])
                self.assertEqual(r["end_time"] == "", w["end_time"] is None)
                self.assertEqual(r["start_time"], rfc3339_ms(w["start_time"]))
                if w["energy_j"] is not None:
                    self.assertEqual(float(r["energy_j"]), w["energy_j"])
                    self.assertEqual(float(r["time_s"]), w["time_s"])
                else:
                    self.assertEqual((r["energy_j"], r["cost"], r["metric"]), ("", "", ""))
                self.assertEqual(r["converged"], "true" if w["converged"] else "false")
                self.assertEqual(r["stop_reason"], w["stop_reason"] or "")

            lines = self.both("trials", jid).splitlines()
            self.assertRegex(lines[0], r"^trial +bs +type +status +start \(UTC\) +end \(UTC\) +"
                                       r"epochs +time \(s\) +energy \(J\) +cost \(J\) +metric "
                                       r"+converged +stop reason +energy \(kWh\)$")
            for line, w in zip(lines[1:], want):
                cells = line.split()
                self.assertEqual(cells[:4], [str(w["trial_number"]), str(w["batch_size"]),
                                             w["type"], w["status"]])
                self.assertEqual(cells[-7:-4], [f1(w["time_s"]), f1(w["energy_j"]),
                                                f1(w["cost"])])
                self.assertEqual(cells[-3:], [
                    "yes" if w["converged"] else "no", w["stop_reason"] or "-",
                    "-" if w["energy_j"] is None else f"{w['energy_j'] / 3.6e6:.3f}"])

    def test_curve_every_format(self):
        seen_points = 0
        for jid in self.ids:
            job = self.db.jobs()[jid]
            for t in self.db.trials(jid)[:6]:
                tn = t["trial_number"]
                points = self.db.reports(jid, tn)
                seen_points += len(points)
                doc = json.loads(self.both("curve", jid, str(tn), "--format", "json"))
                self.assertEqual(doc["job_id"], jid)
                want = expected_trial(job, t)
                self.assertEqual({k: doc[k] for k in want if k != "cost"},
                                 {k: v for k, v in want.items() if k != "cost"})
                self.assertEqual([(p["epoch"], p["time_s"], p["energy_j"], p["metric"],
                                   p["received_at"]) for p in doc["reports"]],
                                 [(p["epoch"], p["time"], p["energy"], p["metric"],
                                   p["received_at"]) for p in points])
                rows = self.csv_rows(self.both("curve", jid, str(tn), "--format", "csv"))
                self.assertEqual([(r["job_id"], int(r["trial_number"]), int(r["epoch"]),
                                   float(r["energy_j"]), float(r["metric"])) for r in rows],
                                 [(jid, tn, p["epoch"], p["energy"], p["metric"])
                                  for p in points])
                text = self.both("curve", jid, str(tn))
                self.assertIn(f"\nreports ({len(points)})\n", text)
                tail = text.split(f"\nreports ({len(points)})\n")[1].splitlines()
                self.assertRegex(tail[0], r"^epoch +time \(s\) +energy \(J\) +metric +"
                                          r"received \(UTC\)$")
                self.assertEqual([line.split()[:3] for line in tail[1:]],
                                 [[str(p["epoch"]), f1(p["time"]), f1(p["energy"])]
                                  for p in points])
        self.assertGreater(seen_points, 20)

    # -- export --------------------------------------------------------------------------

    def test_export(self):
        jid = "jcli-2"
        trials = self.db.trials(jid)
        text = self.both("export", jid)            # csv by default
        self.assertEqual(text, self.both("export", jid, "--format", "csv", "--page-size", "2"))
        rows = self.csv_rows(text)
        want = []
        for t in trials:
            points = self.db.reports(jid, t["trial_number"]) or [None]
            want += [(t["trial_number"], p and p["epoch"], p and p["energy"]) for p in points]
        self.assertEqual([(int(r["trial_number"]),
                           int(r["report_epoch"]) if r["report_epoch"] else None,
                           float(r["report_energy_j"]) if r["report_energy_j"] else None)
                          for r in rows], want)
        self.assertTrue(all(r["job_id"] == jid for r in rows))
        doc = json.loads(self.both("export", jid, "--format", "json"))
        self.assertEqual(sorted(doc), ["job", "trials"])
        self.assertEqual(doc["job"], json.loads(self.both("show", jid, "--format", "json")))
        self.assertEqual([t["trial_number"] for t in doc["trials"]],
                         [t["trial_number"] for t in trials])
        for t in doc["trials"]:
            self.assertEqual(t, json.loads(self.both("curve", jid, str(t["trial_number"]),
                                                     "--format", "json")))
        self.zbso("export", jid, "--format", "table", code=2)

    # -- errors --------------------------------------------------------------------------

    def test_unknown_job_and_trial(self):
        for source in ("db", "server"):
            for args in (["show", "no-such-job"], ["trials", "no-such-job"],
                         ["curve", "no-such-job", "1"], ["export", "no-such-job"],
                         ["rm", "no-such-job"], ["show", "x" * 400]):
                with self.subTest(source=source, args=args[:2]):
                    err = self.zbso(*args, source=source, code=1)
                    self.assertIn(args[1][:40], err)
            err = self.zbso("curve", "jcli-0", "99999", source=source, code=1)
            self.assertIn("99999", err)
            self.assertIn("jcli-0", err)
            # An id with a right-to-left override or a terminal escape is named escaped.
            err = self.zbso("show", "no-such-\u202ejob\x1b[2J", source=source, code=1)
            self.assertIn("no-such-\\u202ejob\\x1b[2J", err)
            self.assertNotIn("\u202e", err)
            self.assertNotIn("\x1b", err)

    def test_usage_errors(self):
        for args, words in [(["show"], ["JOB"]), (["curve", "jcli-0", "x"], ["'x'"]),
                            (["ls", "--format", "yaml"], ["yaml"]), (["frob"], ["frob"]),
                            (["ls", "--page-size", "0"], ["--page-size"]),
                            (["ls", "--server", "ftp://h"], ["ftp://h"]),
                            (["ls", "--server", "http://h", "--db", "sqlite:///x.db"],
                             ["--server", "--db"])]:
            with self.subTest(args=args):
                r = run_cli(["jobs", *args], cwd=self.tmp.name)
                self.assertEqual(r.returncode, 2, r.stderr)
                for w in words:
                    self.assertIn(w, r.stderr)
        r = run_cli(["jobs", "ls", "--db", "sqlite:///" + os.path.join(self.tmp.name, "none.db")],
                    cwd=self.tmp.name)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("none.db", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "none.db")))

    def test_token(self):
        # Without the token the server answers 401; --token-file gives it.
        r = run_cli(["jobs", "ls", "--server", self.url], cwd=self.tmp.name)
        self.assertEqual(r.returncode, 1)
        self.assertIn("401", r.stderr)
        path = os.path.join(self.tmp.name, "token")
        with open(path, "w", encoding="utf-8") as f:
            f.write(TOKEN + "\n")
        r = run_cli(["jobs", "ls", "--server", self.url, "--token-file", path,
                     "--format", "json"], cwd=self.tmp.name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, self.zbso("ls", "--format", "json"))

    # -- rm ------------------------------------------------------------------------------

    def test_rm(self):
        for source in ("db", "server"):
            jid = f"rm-me-{source}"
            self.call("POST", "/jobs", job_spec(job_id=jid, job_id_prefix="rm"))
            self.run_trial(jid)
            self.call("GET", f"/jobs/batch_size?job_id={jid}")
            self.assertIn(jid, self.db.jobs())
            self.assertEqual(len(self.db.trials(jid)), 2)
            out = self.zbso("rm", jid, source=source)
            self.assertEqual(out, f"zbso jobs rm: deleted job '{jid}'\n")
            self.assertNotIn(jid, self.db.jobs())
            self.assertEqual(self.db.trials(jid), [])
            r = self.srv.request("GET", "/jobs/" + urllib.parse.quote(jid, safe=""),
                                 headers={"Authorization": f"Bearer {TOKEN}"})
            self.assertEqual(r.status, 404, r)
            self.zbso("rm", jid, source=source, code=1)
        # The seeded jobs are untouched.
        self.assertEqual(sorted(self.db.jobs()), self.ids)


if __name__ == "__main__":
    unittest.main()
