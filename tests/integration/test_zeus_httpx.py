"""test_zeus_httpx.py: the unchanged Zeus client (seed 000's BatchSizeOptimizer over httpx)
against a server started with ZEUS_BSO_API_TOKEN, given server_url
"http://USER:TOKEN@host:port". The Zeus client sets no header of its own; httpx turns the
URL's user info into HTTP Basic auth. This module sends, byte for byte, what httpx sends
for each of the client's calls (httpx.post/get/patch: a new connection each, the request
line, Host without the user info, httpx's default headers in its order, Content-Length
for a body, then Authorization: Basic base64(user ":" password) with both percent-decoded
and UTF-8 encoded), and checks the answers as the client's _handle_response would (2xx,
else ZeusBSORuntimError with the status). Standard library only."""

import base64
import http.client
import json
import socket
import unittest
import urllib.parse

from zbsoserver import REQUEST_TIMEOUT_S, ServerTestCase

TOKEN = "t0k:en@/x \u00e9"  # needs percent-escapes in a URL; non-ASCII
USER_AGENT = "python-httpx/0.27.0"


def httpx_bytes(url, method, params=None, content=None):
    """The request httpx 0.27 writes for httpx.<method>(url, params=..., content=...) with
    no client of the caller's (the module functions Zeus calls)."""
    u = urllib.parse.urlsplit(url)
    target = u.path or "/"
    if params:
        target += "?" + urllib.parse.urlencode(params)
    host = u.hostname + (f":{u.port}" if u.port else "")
    body = content.encode("utf-8") if isinstance(content, str) else (content or b"")
    headers = [("Host", host), ("Accept", "*/*"), ("Accept-Encoding", "gzip, deflate"),
               ("Connection", "keep-alive"), ("User-Agent", USER_AGENT)]
    if content is not None:
        headers.append(("Content-Length", str(len(body))))
    user = urllib.parse.unquote(u.username or "")
    password = urllib.parse.unquote(u.password or "")
    if user or password:
        userpass = user.encode("utf-8") + b":" + password.encode("utf-8")
        headers.append(("Authorization", "Basic " + base64.b64encode(userpass).decode()))
    head = f"{method} {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    return head.encode("latin-1") + b"\r\n" + body


def httpx_call(url, method, params=None, content=None):
    """Sends httpx's bytes on a new connection; returns (status, body text)."""
    u = urllib.parse.urlsplit(url)
    with socket.create_connection((u.hostname, u.port), timeout=REQUEST_TIMEOUT_S) as s:
        s.sendall(httpx_bytes(url, method, params, content))
        resp = http.client.HTTPResponse(s, method=method)
        resp.begin()
        return resp.status, resp.read().decode("utf-8")


def pydantic_json(fields):
    """pydantic v1's .json(): json.dumps of .dict() with the default separators."""
    return json.dumps(fields)


class ZeusClientOverBasicAuth(ServerTestCase):
    server_env = {"ZEUS_BSO_API_TOKEN": TOKEN}

    def base(self, user="zbso", password=TOKEN):
        q = urllib.parse.quote
        info = f"{q(user, safe='')}:{q(password, safe='')}@" if user or password else ""
        return f"http://{info}{self.srv.host}:{self.srv.port}"

    def handle(self, status, text):
        """Zeus's _handle_response: anything but 2xx raises with the status."""
        if not 200 <= status < 300:
            raise RuntimeError(f"Zeus server returned status code {status}: {text}")
        return json.loads(text)

    def test_seed_000_flow(self):
        url = self.base()
        # BatchSizeOptimizer.__init__: JobSpecFromClient's fields in pydantic's order (the
        # GpuConfig fields first: its bases are merged in reverse).
        spec = {"max_power": 3000.0, "number_of_gpus": 4, "gpu_model": "Tesla V100",
                "job_id": "httpx-1", "job_id_prefix": "httpx",
                "batch_sizes": [32, 64, 256], "default_batch_size": 64, "eta_knob": 0.5,
                "beta_knob": None, "target_metric": 0.5, "higher_is_better_metric": True,
                "max_epochs": 3, "num_pruning_rounds": 2, "window_size": 0,
                "mab_prior_mean": 0.0, "mab_prior_precision": 0.0,
                "mab_num_explorations": 2, "mab_seed": 1}
        job = self.handle(*httpx_call(url + "/jobs", "POST", content=pydantic_json(spec)))
        self.assertEqual(job["job_id"], "httpx-1")
        # get_batch_size
        trial = self.handle(*httpx_call(url + "/jobs/batch_size", "GET",
                                        params={"job_id": job["job_id"]}))
        self.assertEqual(trial, {"job_id": "httpx-1", "batch_size": 64, "trial_number": 1})
        # on_evaluate: cumulative TrainingResult (TrialId's fields first)
        for epoch, metric in [(1, 0.1), (2, 0.7)]:
            result = dict(trial, time=1.5 * epoch, energy=300.0 * epoch, metric=metric,
                          current_epoch=epoch)
            answer = self.handle(*httpx_call(url + "/report", "POST",
                                             content=pydantic_json(result)))
        self.assertEqual(answer["stop_train"], True)
        self.assertEqual(answer["converged"], True)
        # atexit report_end
        self.handle(*httpx_call(url + "/trials", "PATCH", content=pydantic_json(trial)))
        # Any user name; an empty one too (http://:TOKEN@host).
        for user in ("someone else", ""):
            with self.subTest(user=user):
                status, _ = httpx_call(self.base(user=user) + "/jobs/batch_size", "GET",
                                       params={"job_id": "httpx-1"})
                self.assertEqual(status, 200)

    def test_wrong_or_missing_credentials(self):
        cases = [("wrong password", self.base(password=TOKEN + "x")),
                 ("token as user name", self.base(user=TOKEN, password="")),
                 ("no credentials", self.base(user="", password=""))]
        for name, url in cases:
            with self.subTest(name):
                status, text = httpx_call(url + "/jobs/batch_size", "GET",
                                          params={"job_id": "x"})
                self.assertEqual(status, 401, text)
                with self.assertRaises(RuntimeError) as cm:
                    self.handle(status, text)
                self.assertIn("status code 401", str(cm.exception))
                self.assertNotIn("t0k", text)

    def test_token_never_logged(self):
        httpx_call(self.base() + "/jobs/batch_size", "GET", params={"job_id": "nope"})
        httpx_call(self.base(password="t0k:en-wrong") + "/jobs", "POST", content="{}")
        log = self.srv.log_tail(1 << 20)
        self.assertIn("/jobs", log)  # the requests were logged...
        for secret in ("t0k", base64.b64encode(b"zbso:t0k").decode()[:8]):
            self.assertNotIn(secret, log)  # ...without the token or the header


if __name__ == "__main__":
    unittest.main()
