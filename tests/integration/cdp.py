"""cdp.py: drives Debian's chromium, headless, through the Chrome DevTools Protocol over a
pipe (--remote-debugging-pipe: JSON messages ended by NUL, read by chromium on fd 3 and
written on fd 4), so no websocket client is needed. Standard library only.

Browser() starts chromium with a fresh profile and every background service it would
reach the internet for turned off, names resolving only to 127.0.0.1; it fails (never
skips) when chromium is missing. Browser.page() opens a tab whose console errors,
uncaught exceptions and failed loads are collected in Page.errors."""

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

CALL_TIMEOUT_S = 60.0
START_TIMEOUT_S = 60.0

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--no-default-browser-check", "--disable-extensions", "--disable-sync",
    "--disable-background-networking", "--disable-component-update",
    "--disable-default-apps", "--disable-domain-reliability", "--disable-breakpad",
    "--disable-client-side-phishing-detection", "--metrics-recording-only", "--no-pings",
    "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--proxy-server=http://127.0.0.1:9", "--hide-scrollbars", "--mute-audio",
    "--font-render-hinting=none", "--force-color-profile=srgb",
    "--remote-debugging-pipe",
]


def find_chromium():
    """The chromium executable: $ZBSO_CHROMIUM, else `chromium` on PATH. Raises
    AssertionError (a failure, never a skip) when there is none."""
    path = os.environ.get("ZBSO_CHROMIUM") or shutil.which("chromium")
    if not path or not os.access(path, os.X_OK):
        where = (f"ZBSO_CHROMIUM={path!r} is not an executable" if path
                 else "no `chromium` on PATH")
        raise AssertionError(
            f"chromium is missing ({where}): the dashboard's browser tests need it; "
            "scripts/setup.sh installs Debian's chromium package (apt-get install chromium)")
    return path


class CdpError(AssertionError):
    """A DevTools call answered with an error, or no answer in time."""


class Browser:
    """One chromium process. Calls are synchronous; a reader thread routes answers to
    their callers and events to the tab they belong to."""

    def __init__(self, log_path=None):
        exe = find_chromium()
        self.profile = tempfile.TemporaryDirectory(prefix="zbso-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # They become fds 3 and 4 in the child: copies above 9 cannot be clobbered there.
        hi_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD_CLOEXEC, 10)
        hi_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD_CLOEXEC, 10)

        def child_fds():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self.log_path = log_path or os.path.join(self.profile.name, "chromium.log")
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self.profile.name}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(3, 4),
            preexec_fn=child_fds, start_new_session=True)
        log.close()
        for fd in (to_child_r, from_child_w, hi_r, hi_w):
            os.close(fd)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._next = 0
        self._answers = {}
        self._ignored = set()
        self._write_lock = threading.Lock()
        self._pages = {}
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            self.version = self.call("Browser.getVersion", timeout=START_TIMEOUT_S)
        except CdpError:
            self.close()
            raise

    def _read(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_child, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self._cond:
                    if "id" in msg:
                        if msg["id"] in self._ignored:
                            self._ignored.discard(msg["id"])
                        else:
                            self._answers[msg["id"]] = msg
                            self._cond.notify_all()
                        continue
                    page = self._pages.get(msg.get("sessionId"))
                if page is not None:
                    page._event(msg["method"], msg.get("params", {}))
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _send(self, method, params, session, wanted):
        with self._cond:
            self._next += 1
            mid = self._next
            if not wanted:
                self._ignored.add(mid)
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        with self._write_lock:
            try:
                os.write(self._to_child, data)
            except OSError as e:
                raise CdpError(f"{method}: chromium is gone ({e}); log:\n{self.log_tail()}")
        return mid

    def send_nowait(self, method, params=None, session=None):
        """Sends one command without waiting for its answer (from an event handler, which
        runs on the reader thread and so cannot wait)."""
        self._send(method, params, session, False)

    def call(self, method, params=None, session=None, timeout=CALL_TIMEOUT_S):
        """Sends one command and returns its result; raises CdpError on an error answer,
        on chromium exiting, or after timeout seconds."""
        mid = self._send(method, params, session, True)
        deadline = time.monotonic() + timeout
        with self._cond:
            while mid not in self._answers:
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    why = "chromium exited" if self._closed else f"no answer in {timeout} s"
                    raise CdpError(f"{method}: {why}; log:\n{self.log_tail()}")
                self._cond.wait(left)
            answer = self._answers.pop(mid)
        if "error" in answer:
            raise CdpError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def page(self, width=1280, height=800, mobile=False):
        """A new tab of width x height CSS pixels (mobile: a phone's viewport, scale 2)."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        with self._cond:
            self._pages[session] = page
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.call(f"{domain}.enable")
        page.viewport(width, height, mobile)
        return page

    def log_tail(self, n=3000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def close(self):
        if self.proc.poll() is None:
            try:
                self.call("Browser.close", timeout=10)
            except CdpError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        self.profile.cleanup()


class Page:
    """One tab. errors: console errors, uncaught exceptions and failed loads, as text."""

    def __init__(self, browser, target, session):
        self.browser = browser
        self.target = target
        self.session = session
        self.errors = []
        self.responses = []   # (url, status, mimeType) of every answer the tab received
        self.request_ids = {}
        self.fake = None      # (status, body) that fulfil() answers intercepted requests with

    def _event(self, method, p):
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
            self.errors.append(f"console.{p['type']}: {args}")
        elif method == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            text = d.get("exception", {}).get("description") or d.get("text", "")
            self.errors.append(f"exception: {text}")
        elif method == "Log.entryAdded" and p["entry"].get("level") == "error":
            e = p["entry"]
            self.errors.append(f"log ({e.get('source')}): {e.get('text')} {e.get('url', '')}")
        elif method == "Fetch.requestPaused" and self.fake is not None:
            status, body = self.fake
            self.browser.send_nowait("Fetch.fulfillRequest", {
                "requestId": p["requestId"], "responseCode": status,
                "responseHeaders": [{"name": "Content-Type", "value": "application/json"}],
                "body": base64.b64encode(body).decode()}, self.session)
        elif method == "Network.responseReceived":
            r = p["response"]
            self.responses.append((r["url"], r["status"], r.get("mimeType")))
            self.request_ids[p["requestId"]] = r["url"]

    def call(self, method, params=None, timeout=CALL_TIMEOUT_S):
        return self.browser.call(method, params, self.session, timeout)

    def fulfil(self, url_pattern, status, body):
        """From now on the tab's requests matching url_pattern (DevTools wildcards) never
        reach the server: each is answered status with the bytes body."""
        self.fake = (status, body)
        self.call("Fetch.enable", {"patterns": [{"urlPattern": url_pattern}]})

    def viewport(self, width, height, mobile=False):
        self.call("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 2 if mobile else 1,
            "mobile": mobile})
        self.call("Emulation.setTouchEmulationEnabled", {"enabled": mobile})

    def navigate(self, url):
        """Loads url; returns once its document is complete (a new document, or a
        fragment change of the current one)."""
        r = self.call("Page.navigate", {"url": url})
        if r.get("errorText"):
            raise AssertionError(f"navigating to {url}: {r['errorText']}")
        self.wait("document.readyState === 'complete'", what=f"{url} to load")

    def eval(self, expr, timeout=CALL_TIMEOUT_S):
        """The value of the JavaScript expression (awaited when it is a promise)."""
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True}, timeout=timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise AssertionError(f"evaluating {expr[:200]!r}: "
                                 f"{d.get('exception', {}).get('description', d.get('text'))}")
        return r["result"].get("value")

    def wait(self, expr, timeout=30.0, what=None, poll=0.05):
        """Polls the expression until it is truthy; returns its value. On timeout fails
        with the page's state and errors."""
        deadline = time.monotonic() + timeout
        while True:
            v = self.eval(expr)
            if v:
                return v
            if time.monotonic() > deadline:
                state = self.eval("(() => { const m = document.getElementById('main');"
                                  " return m ? [m.dataset.state, m.dataset.view,"
                                  " m.innerText.slice(0, 600)] : document.title; })()")
                raise AssertionError(f"waited {timeout} s for {what or expr}; page: {state}; "
                                     f"errors: {self.errors}")
            time.sleep(poll)

    def screenshot(self, path, full_page=False):
        """Writes a PNG of the viewport (or of the whole page) to path."""
        params = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
            m = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": m["width"], "height": m["height"],
                              "scale": 1}
        data = base64.b64decode(self.call("Page.captureScreenshot", params)["data"])
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def close(self):
        try:
            self.browser.call("Target.closeTarget", {"targetId": self.target}, timeout=10)
        except CdpError:
            pass
