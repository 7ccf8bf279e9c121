"""test_monitoring.py: what operators get for monitoring zbso (issue 26), checked with the
real tools: `promtool check rules` and `promtool test rules` on deploy/monitoring's alert
rules; the PrometheusRule of deploy/kubernetes/monitoring agrees with them; and Debian's
`prometheus` server, started here with a private data directory on 127.0.0.1, scrapes a real
`zbso serve` under a small load (every second) and loads the rules: every query of every
panel of the Grafana dashboard, and of its template variables, parses and returns series,
and every rule evaluates without error. promtool and prometheus come from $ZBSO_PROMTOOL /
$ZBSO_PROMETHEUS or PATH (scripts/setup.sh installs both); without them the tests fail."""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

from zbsoserver import Server, ServerTestCase, job_spec

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MON = os.path.join(ROOT, "deploy", "monitoring")
RULES = os.path.join(MON, "zbso-rules.yml")
DASHBOARD = os.path.join(MON, "grafana-dashboard.json")
SCRAPE_S = 1
# Grafana's variables as the test's Prometheus sees them.
VARIABLES = {"$__rate_interval": "10s", "$__range": "5m", "$__interval": "5s",
             "$job": "zbso", "$instance": ".+"}


def tool(name, env):
    path = os.environ.get(env) or shutil.which(name)
    if not path or not os.access(path, os.X_OK):
        raise AssertionError(f"{name} not found (set {env} or put it on PATH; "
                             "scripts/setup.sh installs it from Debian's prometheus package)")
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def expand(expr):
    for k in sorted(VARIABLES, key=len, reverse=True):
        expr = expr.replace(k, VARIABLES[k])
    return expr


def dashboard_queries():
    """(panel title, expression) for every target of every panel, and the variables'."""
    with open(DASHBOARD, encoding="utf-8") as f:
        dash = json.load(f)
    out = []
    for p in dash["panels"]:
        for t in p.get("targets", []):
            out.append((p["title"], t["expr"]))
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            out.append((f"variable {v['name']}", v["query"]["query"]))
    return dash, out


class RulesTest(unittest.TestCase):
    def test_promtool_check_and_unit_tests(self):
        promtool = tool("promtool", "ZBSO_PROMTOOL")
        r = subprocess.run([promtool, "check", "rules", RULES], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("SUCCESS: 6 rules found", r.stdout)
        r = subprocess.run([promtool, "test", "rules", "zbso-rules.test.yml"], cwd=MON,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("SUCCESS", r.stdout)

    def test_alerts_named_by_the_issue(self):
        with open(RULES, encoding="utf-8") as f:
            text = f.read()
        for alert in ("ZbsoDown", "ZbsoHigh5xxRatio", "ZbsoStoreUnavailable",
                      "ZbsoHighLatencyP99", "ZbsoTrialsPastLease",
                      "ZbsoGpuPowerLimitNotRestored"):
            self.assertIn(f"- alert: {alert}\n", text)

    def test_prometheusrule_agrees_with_the_rules_file(self):
        r = subprocess.run(["python3", os.path.join(MON, "prometheusrule.py"), "--check"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


class LeaseGaugeTest(ServerTestCase):
    """zbso_trial_oldest_lease_renewal_timestamp_seconds, read from each backend's store:
    absent with no Dispatched trial, the oldest renewal (whole seconds) with some."""

    def gauge(self):
        r = self.srv.request("GET", "/metrics")
        self.assertEqual(r.status, 200, r)
        found = [ln for ln in r.body.decode().split("\n")
                 if ln.startswith("zbso_trial_oldest_lease_renewal_timestamp_seconds ")]
        return float(found[0].split()[1]) if found else None

    def test_oldest_lease(self):
        self.assertIsNone(self.gauge())
        self.register(job_id_prefix="lg", job_id="lg-1")
        before = time.time()
        r = self.srv.request("GET", "/jobs/batch_size?job_id=lg-1")
        self.assertEqual(r.status, 200, r)
        first = r.json
        g = self.gauge()
        self.assertIsNotNone(g)
        self.assertTrue(int(before) - 1 <= g <= time.time(), (before, g))
        self.assertEqual(g, int(g))
        self.register(job_id_prefix="lg", job_id="lg-2")
        time.sleep(1.1)
        r = self.srv.request("GET", "/jobs/batch_size?job_id=lg-2")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.gauge(), g)          # still the older one
        self.assertEqual(self.srv.request("PATCH", "/trials", body=first).status, 200)
        self.assertGreater(self.gauge(), g)        # now the second trial's
        self.assertEqual(self.srv.request("PATCH", "/trials", body=r.json).status, 200)
        self.assertIsNone(self.gauge())
        r = self.srv.request("GET", "/metrics")
        lease = [ln for ln in r.body.decode().split("\n")
                 if ln.startswith("zbso_trial_lease_timeout_seconds ")]
        self.assertEqual([float(ln.split()[1]) for ln in lease], [86400.0])


class LivePrometheusTest(unittest.TestCase):
    """One zbso, one Prometheus scraping it every second, a load thread in between."""

    @classmethod
    def setUpClass(cls):
        prometheus = tool("prometheus", "ZBSO_PROMETHEUS")
        cls.tmp = tempfile.TemporaryDirectory(prefix="zbso-prom-")
        cls.srv = Server()
        cls.srv.start()
        cls.stop = threading.Event()
        cls.load_errors = []
        cls.seed()
        cls.loader = threading.Thread(target=cls.load, daemon=True)
        cls.loader.start()
        shutil.copy(RULES, os.path.join(cls.tmp.name, "zbso-rules.yml"))
        config = os.path.join(cls.tmp.name, "prometheus.yml")
        with open(config, "w", encoding="utf-8") as f:
            f.write(f"""global:
  scrape_interval: {SCRAPE_S}s
  evaluation_interval: {SCRAPE_S}s
rule_files:
  - zbso-rules.yml
scrape_configs:
  - job_name: zbso
    static_configs:
      - targets: ['127.0.0.1:{cls.srv.port}']
""")
        cls.prom_port = free_port()
        cls.prom_log = open(os.path.join(cls.tmp.name, "prometheus.log"), "wb")
        cls.prom = subprocess.Popen(
            [prometheus, f"--config.file={config}",
             f"--storage.tsdb.path={os.path.join(cls.tmp.name, 'data')}",
             f"--web.listen-address=127.0.0.1:{cls.prom_port}"],
            cwd=cls.tmp.name, stdout=cls.prom_log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                up = cls.query("up")
                if up and up[0]["value"][1] == "1" and len(cls.query("zbso_jobs[1m]")) and \
                        len(cls.query("zbso_jobs[1m]")[0]["values"]) >= 12:
                    break
            except (OSError, AssertionError):
                pass
            if time.monotonic() > deadline or cls.prom.poll() is not None:
                raise AssertionError("prometheus did not scrape zbso 12 times in 60 s:\n"
                                     + cls.prom_log_tail())
            time.sleep(0.5)

    @classmethod
    def tearDownClass(cls):
        cls.stop.set()
        cls.loader.join(timeout=30)
        cls.prom.terminate()
        try:
            cls.prom.wait(timeout=30)
        except subprocess.TimeoutExpired:
            cls.prom.kill()
            cls.prom.wait()
        cls.prom_log.close()
        cls.srv.close()
        cls.tmp.cleanup()

    @classmethod
    def prom_log_tail(cls):
        with open(os.path.join(cls.tmp.name, "prometheus.log"), "rb") as f:
            return f.read()[-3000:].decode("utf-8", "replace")

    @classmethod
    def api(cls, path, params):
        url = f"http://127.0.0.1:{cls.prom_port}{path}?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                doc = json.loads(r.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            doc = json.loads(e.read().decode("utf-8"))
        if doc.get("status") != "success":
            raise AssertionError(f"{path} {params}: {doc.get('errorType')}: {doc.get('error')}")
        return doc["data"]

    @classmethod
    def query(cls, expr):
        return cls.api("/api/v1/query", {"query": expr})["result"]

    @classmethod
    def seed(cls):
        """Jobs with trials of every kind: Succeeded, Failed (PATCH), one left Dispatched."""
        srv = cls.srv
        for i in range(3):
            r = srv.request("POST", "/jobs", body=job_spec(job_id_prefix="mon", job_id=f"mon-{i}", mab_seed=i))
            assert r.status in (200, 201), r
            r = srv.request("GET", f"/jobs/batch_size?job_id=mon-{i}")
            assert r.status == 200, r
            trial = r.json
            report = {**trial, "time": 10.0, "energy": 1000.0, "metric": 0.9,
                      "current_epoch": 1}
            assert srv.request("POST", "/report", body=report).status == 200
            r = srv.request("GET", f"/jobs/batch_size?job_id=mon-{i}")
            assert r.status == 200, r
            if i < 2:
                assert srv.request("PATCH", "/trials", body=r.json).status == 200

    @classmethod
    def load(cls):
        """A few requests a second until the class ends: reads, a 404, a 422."""
        while not cls.stop.is_set():
            try:
                for path in ("/jobs/batch_size?job_id=mon-0", "/jobs", "/jobs/nope",
                             "/healthz"):
                    r = cls.srv.request("GET", path)
                    if path.startswith("/jobs/batch_size") and r.status == 200:
                        cls.srv.request("PATCH", "/trials", body=r.json)
                cls.srv.request("POST", "/jobs", body={"job_id_prefix": 1})
            except OSError as e:
                cls.load_errors.append(repr(e))
            cls.stop.wait(0.2)

    def test_every_dashboard_query_returns_series(self):
        dash, queries = dashboard_queries()
        self.assertGreaterEqual(len(queries), 20)
        for title, expr in queries:
            with self.subTest(panel=title, expr=expr):
                if expr.startswith("label_values("):
                    # Grafana's label_values(METRIC, LABEL): Prometheus's label values API.
                    inner = expr[len("label_values("):-1]
                    metric, label = inner.rsplit(",", 1)
                    values = self.api(f"/api/v1/label/{label.strip()}/values",
                                      {"match[]": expand(metric.strip())})
                    self.assertTrue(values, f"{title}: no values")
                    continue
                result = self.query(expand(expr))
                self.assertTrue(result, f"{title}: {expand(expr)} returned no series")
        self.assertEqual(self.load_errors, [])

    def test_every_rule_evaluates(self):
        deadline = time.monotonic() + 30
        while True:
            groups = self.api("/api/v1/rules", {})["groups"]
            rules = [r for g in groups for r in g["rules"]]
            if len(rules) == 6 and all(r.get("lastEvaluation", "").startswith("20")
                                       for r in rules):
                break
            self.assertLess(time.monotonic(), deadline, f"rules not all evaluated: {rules}")
            time.sleep(0.5)
        for r in rules:
            self.assertEqual(r["health"], "ok", r)
        # zbso is up and its store readable: neither alert is pending or firing.
        states = {r["name"]: r["state"] for r in rules}
        self.assertEqual(states["ZbsoDown"], "inactive")
        self.assertEqual(states["ZbsoStoreUnavailable"], "inactive")

    def test_lease_series(self):
        """The trial left Dispatched by seed() is the oldest lease, and it is recent."""
        (age,) = self.query("time() - zbso_trial_oldest_lease_renewal_timestamp_seconds")
        self.assertLess(float(age["value"][1]), 600)
        (lease,) = self.query("zbso_trial_lease_timeout_seconds")
        self.assertEqual(float(lease["value"][1]), 86400.0)


if __name__ == "__main__":
    unittest.main()
