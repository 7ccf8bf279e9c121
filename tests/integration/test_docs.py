"""test_docs.py: the interactive API docs at /docs in a real browser (Debian's chromium over
the DevTools protocol, cdp.py): Swagger UI, compiled into the binary, renders the server's
/openapi.json with every (method, path) of it, and so of the route table
(tests/http/test_openapi.c holds the two equal), without one console error, exception or
failed load under the page's Content-Security-Policy, loading nothing from another origin.
With ZEUS_BSO_API_TOKEN set the page asks for the token, then renders, and its "Try it out"
requests carry it. Fails (never skips) when chromium is missing."""

import json
import os
import tempfile
import unittest

from test_dashboard import BrowserCase
from zbsoserver import Server

ARTIFACTS = os.path.join(os.environ.get("ZBSO_ARTIFACTS") or tempfile.gettempdir(), "docs")
TOKEN = "docs-token-51b2"

# Every operation Swagger UI drew: [method, path].
JS_OPERATIONS = """[...document.querySelectorAll('.opblock')].map(b => [
  b.querySelector('.opblock-summary-method').textContent.trim().toUpperCase(),
  b.querySelector('.opblock-summary-path').dataset.path])"""


class Docs(BrowserCase):
    def operations_of(self, srv, headers=None):
        r = srv.request("GET", "/openapi.json", headers=headers or {})
        self.assertEqual(r.status, 200, r)
        doc = r.json
        ops = sorted([m.upper(), path] for path, item in doc["paths"].items()
                     for m in item if m in ("get", "post", "put", "patch", "delete"))
        self.assertGreater(len(ops), 15)
        return ops

    def check_rendered(self, p, srv, ops):
        drawn = sorted(p.eval(JS_OPERATIONS))
        self.assertEqual(drawn, ops, "the operations Swagger UI lists")
        origin = f"http://{srv.host}:{srv.port}"
        self.assertTrue(p.responses)
        for url, status, _ in p.responses:
            self.assertTrue(url.startswith(origin + "/") or url.startswith("data:"), url)
        self.assertEqual(p.eval("document.title"), "zbso API")
        self.assertIn("zbso", p.eval("document.querySelector('.info .title').textContent"))

    def test_every_route_listed_no_console_error(self):
        srv = Server()
        self.addCleanup(srv.close)
        srv.start()
        ops = self.operations_of(srv)
        r = srv.request("GET", "/docs")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.headers["Content-Type"].startswith("text/html"))
        self.assertIn("script-src 'self'", r.headers["Content-Security-Policy"])
        p = self.browser.page(1280, 800)
        self.pages.append(p)
        p.navigate(f"http://{srv.host}:{srv.port}/docs")
        p.wait("document.body.dataset.state === 'ready' && "
               "document.querySelectorAll('.opblock').length > 0",
               what="Swagger UI to render", timeout=60)
        self.check_rendered(p, srv, ops)
        # Open one operation and run it: GET /healthz, from the page, answered 200.
        p.eval("""(() => { const b = [...document.querySelectorAll('.opblock')].find(b =>
            b.querySelector('.opblock-summary-path').dataset.path === '/healthz');
            b.querySelector('.opblock-summary-control').click(); })()""")
        p.wait("!!document.querySelector('.opblock.is-open .try-out__btn')",
               what="the operation to open")
        p.eval("document.querySelector('.opblock.is-open .try-out__btn').click()")
        p.wait("!!document.querySelector('.opblock.is-open .execute')", what="Execute")
        p.eval("document.querySelector('.opblock.is-open .execute').click()")
        p.wait("[...document.querySelectorAll('.opblock.is-open .live-responses-table "
               "td.response-col_status:not(.col_header)')].some(e => "
               "e.textContent.trim() === '200')", what="the answer of GET /healthz")
        self.assertIn('"status": "ok"', p.eval(
            "document.querySelector('.opblock.is-open .live-responses-table').innerText"))
        os.makedirs(ARTIFACTS, exist_ok=True)
        p.screenshot(os.path.join(ARTIFACTS, "docs-1280x800.png"))

    def test_token(self):
        self.expected = [r"status of 401"]
        srv = Server(env={"ZEUS_BSO_API_TOKEN": TOKEN})
        self.addCleanup(srv.close)
        srv.start()
        ops = self.operations_of(srv, {"Authorization": f"Bearer {TOKEN}"})
        for path in ("/docs", "/docs/docs.js", "/docs/swagger-ui-bundle.js",
                     "/docs/swagger-ui.css"):
            self.assertEqual(srv.request("GET", path).status, 200, path)   # public
        p = self.browser.page(1280, 800)
        self.pages.append(p)
        p.navigate(f"http://{srv.host}:{srv.port}/docs")
        p.wait("document.body.dataset.state === 'token'", what="the token form")
        p.eval("document.getElementById('token').value = 'wrong'")
        p.eval("document.querySelector('#swagger-ui form button').click()")
        p.wait("document.body.dataset.state === 'token' && "
               "document.querySelector('.zbso-message').textContent.includes('refused')",
               what="the refusal")
        p.eval(f"document.getElementById('token').value = {json.dumps(TOKEN)}")
        p.eval("document.querySelector('#swagger-ui form button').click()")
        p.wait("document.body.dataset.state === 'ready' && "
               "document.querySelectorAll('.opblock').length > 0",
               what="Swagger UI to render", timeout=60)
        self.check_rendered(p, srv, ops)
        # "Try it out" requests carry the token (Swagger UI's request interceptor).
        got = p.eval("window.ui.getConfigs().requestInterceptor({headers: {}}).headers")
        self.assertEqual(got, {"Authorization": f"Bearer {TOKEN}"})


if __name__ == "__main__":
    unittest.main()
