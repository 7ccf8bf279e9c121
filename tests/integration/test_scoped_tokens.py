"""test_scoped_tokens.py: the token classes of issue 26 against a real `zbso serve`.
ZEUS_BSO_API_TOKEN may use every route; ZBSO_READ_TOKEN only the GETs of the inspection
API, GET /power_profiles, /metrics and /openapi.json; ZBSO_CLIENT_TOKEN only the Zeus
protocol (POST /jobs, GET /jobs/batch_size, POST /report, PATCH /trials). /healthz and the
dashboard's files stay public. Every route of the OpenAPI document is tried under every
class (allowed / 401 / 403), a read token is tried with every method on every path and
changes nothing stored, the *_FILE variables read the tokens from files, bad token
settings refuse to start, and deletes and power-profile writes leave audit lines."""

import base64
import json
import os
import tempfile
import time
import unittest

from zbsoserver import Server, job_spec, run_cli

API = "api-token-0123456789abcdef"
READ = "read-token-0123456789abcdef"
CLIENT = "client-token-0123456789abcdef"
TOKENS = {"ZEUS_BSO_API_TOKEN": API, "ZBSO_READ_TOKEN": READ, "ZBSO_CLIENT_TOKEN": CLIENT}
CLASSES = {"none": None, "wrong": "not-a-token-0123456789", "api": API, "read": READ,
           "client": CLIENT}
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# (method, OpenAPI path, concrete path, body, scope)
ROUTES = [
    ("GET", "/jobs", "/jobs", None, "read"),
    ("POST", "/jobs", "/jobs", "spec", "client"),
    ("DELETE", "/jobs", "/jobs?job_id=tok-gone", None, "admin"),
    ("GET", "/jobs/batch_size", "/jobs/batch_size?job_id=tok-1", None, "client"),
    ("POST", "/report", "/report", "report", "client"),
    ("PATCH", "/trials", "/trials", "trial", "client"),
    ("GET", "/power_profiles", "/power_profiles?job_id=tok-1", None, "read"),
    ("PUT", "/power_profiles", "/power_profiles", "profile", "admin"),
    ("GET", "/healthz", "/healthz", None, "public"),
    ("GET", "/jobs/{job_id}", "/jobs/tok-1", None, "read"),
    ("GET", "/jobs/{job_id}/trials", "/jobs/tok-1/trials", None, "read"),
    ("GET", "/jobs/{job_id}/trials/{trial_number}", "/jobs/tok-1/trials/1", None, "read"),
    ("GET", "/openapi.json", "/openapi.json", None, "read"),
    ("GET", "/metrics", "/metrics", None, "read"),
    ("GET", "/", "/", None, "public"),
    ("GET", "/app.js", "/app.js", None, "public"),
    ("GET", "/app.css", "/app.css", None, "public"),
    ("GET", "/docs", "/docs", None, "public"),
    ("GET", "/docs/docs.js", "/docs/docs.js", None, "public"),
    ("GET", "/docs/swagger-ui-bundle.js", "/docs/swagger-ui-bundle.js", None, "public"),
    ("GET", "/docs/swagger-ui.css", "/docs/swagger-ui.css", None, "public"),
]
ALLOWED = {"public": {"none", "wrong", "api", "read", "client"}, "read": {"api", "read"},
           "client": {"api", "client"}, "admin": {"api"}}


def bearer(token):
    return {"Authorization": f"Bearer {token}"} if token else {}


class ScopedTokensTest(unittest.TestCase):
    def setUp(self):
        self.srv = Server(env=TOKENS)
        self.addCleanup(self.srv.close)
        self.srv.start()
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id_prefix="tok", job_id="tok-1"),
                             headers=bearer(API))
        self.assertEqual(r.status, 201, r)

    def body(self, kind):
        if kind == "spec":
            return job_spec(job_id_prefix="tok", job_id="tok-1")
        if kind in ("report", "trial"):
            t = {"job_id": "tok-1", "batch_size": 16, "trial_number": 999}
            return dict(t, time=1.0, energy=1.0, metric=0.1, current_epoch=1) \
                if kind == "report" else t
        if kind == "profile":
            return {"job_id": "tok-1", "batch_size": 16, "trial_number": 0,
                    "measurements": [{"power_limit": 300, "time": 1.0, "energy": 100.0}]}
        return None

    def test_routes_cover_the_openapi_document(self):
        r = self.srv.request("GET", "/openapi.json", headers=bearer(API))
        self.assertEqual(r.status, 200, r)
        documented = {(m.upper(), p) for p, ops in r.json["paths"].items() for m in ops}
        self.assertEqual(documented, {(m, p) for m, p, _, _, _ in ROUTES})

    def test_every_route_under_every_class(self):
        for method, _, path, body, scope in ROUTES:
            for cls, token in CLASSES.items():
                with self.subTest(method=method, path=path, token=cls):
                    r = self.srv.request(method, path, body=self.body(body),
                                         headers=bearer(token))
                    if cls in ALLOWED[scope]:
                        self.assertNotIn(r.status, (401, 403), r)
                    elif cls in ("none", "wrong"):
                        self.assertEqual(r.status, 401, r)
                        self.assertEqual(r.headers.get("WWW-Authenticate"), "Bearer")
                    else:
                        self.assertEqual(r.status, 403, r)
                        msg = r.json["message"]
                        self.assertIn(f"the {cls} token may not use {method}", msg)
                        for t in (API, READ, CLIENT):
                            self.assertNotIn(t, msg)

    def test_basic_auth_carries_a_scoped_token_too(self):
        cred = base64.b64encode(f"user:{READ}".encode()).decode()
        hdr = {"Authorization": f"Basic {cred}"}
        self.assertEqual(self.srv.request("GET", "/jobs/tok-1", headers=hdr).status, 200)
        self.assertEqual(self.srv.request("GET", "/jobs/batch_size?job_id=tok-1",
                                          headers=hdr).status, 403)

    def test_read_token_never_changes_state(self):
        before = self.srv.snapshot()
        methods = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
        for _, _, path, body, _ in ROUTES:
            for method in methods:
                bodies = [None, self.body(body) or self.body("spec")] \
                    if method not in ("GET", "HEAD") else [None]
                for b in bodies:
                    with self.subTest(method=method, path=path, body=b is not None):
                        r = self.srv.request(method, path, body=b, headers=bearer(READ))
                        if method not in ("GET", "HEAD"):
                            self.assertFalse(200 <= r.status < 300, r)
        self.assertEqual(self.srv.snapshot(), before)

    def test_audit_lines(self):
        self.assertEqual(self.srv.request("DELETE", "/jobs?job_id=tok-1",
                                          headers=bearer(CLIENT)).status, 403)
        self.assertEqual(self.srv.request("DELETE", "/jobs?job_id=tok-1",
                                          headers=bearer(API)).status, 200)
        self.assertEqual(self.srv.request("GET", "/jobs/tok-1", headers=bearer(API)).status,
                         404)
        deadline = time.monotonic() + 10
        while True:
            log = self.srv.log_tail(20000)
            audit = [ln for ln in log.splitlines() if "audit:" in ln]
            if len(audit) >= 2 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual(len(audit), 2, log)
        self.assertIn("audit: DELETE /jobs job_id=tok-1 status=403 token=client "
                      "client=127.0.0.1", audit[0])
        self.assertIn("audit: DELETE /jobs job_id=tok-1 status=200 token=api "
                      "client=127.0.0.1", audit[1])
        self.assertIn("WARN", audit[1])
        for t in (API, READ, CLIENT):
            self.assertNotIn(t, log)


class TokenSettingsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="zbso-tok-")
        self.addCleanup(self.tmp.cleanup)
        self.db = f"sqlite:///{self.tmp.name}/x.db"

    def refused(self, env, *needles):
        r = run_cli(["serve", "--port", "0", "--db", self.db], cwd=self.tmp.name, env=env,
                    timeout=30)
        self.assertNotEqual(r.returncode, 0, r)
        for n in needles:
            self.assertIn(n, r.stderr)
        for t in (API, READ, CLIENT):
            self.assertNotIn(t, r.stderr)
        return r

    def test_scoped_token_without_api_token(self):
        self.refused({"ZBSO_READ_TOKEN": READ}, "ZBSO_READ_TOKEN is set but "
                     "ZEUS_BSO_API_TOKEN is not")
        self.refused({"ZBSO_CLIENT_TOKEN": CLIENT}, "ZBSO_CLIENT_TOKEN is set but")

    def test_scoped_tokens_under_the_api_tokens_rules(self):
        self.refused({"ZEUS_BSO_API_TOKEN": API, "ZBSO_READ_TOKEN": "change-me"},
                     "ZBSO_READ_TOKEN is the deployment example's placeholder")
        self.refused({"ZEUS_BSO_API_TOKEN": API, "ZBSO_CLIENT_TOKEN": " " + CLIENT},
                     "ZBSO_CLIENT_TOKEN starts with a space")

    def test_same_token_twice(self):
        self.refused({"ZEUS_BSO_API_TOKEN": API, "ZBSO_READ_TOKEN": API},
                     "ZEUS_BSO_API_TOKEN and ZBSO_READ_TOKEN are the same token")

    def test_token_files(self):
        path = os.path.join(self.tmp.name, "api")
        with open(path, "w") as f:
            f.write(API + "\n")
        self.refused({"ZEUS_BSO_API_TOKEN": API, "ZEUS_BSO_API_TOKEN_FILE": path},
                     "both ZEUS_BSO_API_TOKEN and ZEUS_BSO_API_TOKEN_FILE are set")
        self.refused({"ZEUS_BSO_API_TOKEN_FILE": path + ".missing"},
                     "ZEUS_BSO_API_TOKEN_FILE", "cannot be read")
        rpath = os.path.join(self.tmp.name, "read")
        with open(rpath, "w") as f:
            f.write(READ + "\r\n")
        srv = Server(env={"ZEUS_BSO_API_TOKEN_FILE": path, "ZBSO_READ_TOKEN_FILE": rpath})
        self.addCleanup(srv.close)
        srv.start()
        self.assertEqual(srv.request("GET", "/jobs", headers=bearer(API)).status, 200)
        self.assertEqual(srv.request("GET", "/jobs", headers=bearer(READ)).status, 200)
        self.assertEqual(srv.request("POST", "/jobs", body=job_spec(),
                                     headers=bearer(READ)).status, 403)
        self.assertEqual(srv.request("GET", "/jobs").status, 401)


if __name__ == "__main__":
    unittest.main()
