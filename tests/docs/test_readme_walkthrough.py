"""test_readme_walkthrough.py: README.md's quickstart, as a new user follows it. A fresh
clone of the repository (git clone of this checkout's HEAD: committed files only, as CI
sees them) runs the first command of the README (./scripts/setup.sh: dependencies, which
are present by then, the build and the wheel), then the blocks marked `<!-- quickstart -->`
in order: the first starts `zbso serve` (run in the background until it prints its
listening line; port 8000 of the text is replaced by a free one), the others run to the
end under `bash -euo pipefail`. Then the server has the job, trained to the target, and
answers the dashboard's page and files and the API docs. Label walkthrough; it builds
everything once more (minutes; ccache is used when installed)."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def quickstart_blocks(text):
    """The sh blocks that follow a `<!-- quickstart -->` line, in order."""
    return re.findall(r"^<!-- quickstart -->\n```sh\n(.*?)^```$", text, re.M | re.S)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, r.headers.get("Content-Type", ""), r.read()


class TestReadmeWalkthrough(unittest.TestCase):
    def test_quickstart_on_a_fresh_clone(self):
        with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        first = re.search(r"```sh\n(.*?)\n", readme).group(1)
        self.assertTrue(first.startswith("./scripts/setup.sh && ./build/src/cli/zbso serve"),
                        first)
        blocks = quickstart_blocks(readme)
        self.assertGreaterEqual(len(blocks), 2, "README.md lost its quickstart blocks")
        self.assertRegex(blocks[0].strip(), r"^\./build/src/cli/zbso serve\b")

        tmp = tempfile.mkdtemp(prefix="zbso-walkthrough-")
        self.addCleanup(shutil.rmtree, tmp, True)
        clone = os.path.join(tmp, "zbso")
        p = subprocess.run(["git", "clone", "--quiet", REPO, clone], capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ZEUS_", "ZBSO_"))}
        if shutil.which("ccache"):
            env["CMAKE_C_COMPILER_LAUNCHER"] = "ccache"
            env.setdefault("CCACHE_BASEDIR", tmp)
        t0 = time.monotonic()
        p = subprocess.run(["./scripts/setup.sh"], cwd=clone, env=env, capture_output=True,
                           text=True, timeout=3000)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        print(f"setup.sh on the fresh clone: {time.monotonic() - t0:.0f} s")

        port = free_port()
        env["ZEUS_BSO_SERVER_PORT"] = str(port)
        log = open(os.path.join(tmp, "serve.log"), "w+")
        self.addCleanup(log.close)
        serve = subprocess.Popen(["bash", "-euo", "pipefail", "-c", "exec " + blocks[0].strip()],
                                 cwd=clone, env=env, stdout=log, stderr=subprocess.STDOUT)

        def stop():
            if serve.poll() is None:
                serve.send_signal(signal.SIGTERM)
                serve.wait(timeout=30)
        self.addCleanup(stop)
        deadline = time.monotonic() + 30
        while True:
            log.seek(0)
            if f"listening on http://127.0.0.1:{port}" in log.read():
                break
            self.assertIsNone(serve.poll(), "zbso serve exited")
            self.assertLess(time.monotonic(), deadline, "zbso serve did not start")
            time.sleep(0.05)

        for block in blocks[1:]:
            script = block.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
            p = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=clone, env=env,
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, f"{script}\n{p.stdout}\n{p.stderr}")
            self.assertNotIn("\"detail\"", p.stdout, p.stdout)   # no 422/404 answer

        base = f"http://127.0.0.1:{port}"
        status, _, body = get(f"{base}/jobs")
        jobs = json.loads(body)["jobs"]
        self.assertEqual([j["job_id"] for j in jobs], ["quickstart-1"])
        status, _, body = get(f"{base}/jobs/quickstart-1/trials")
        trials = json.loads(body)["trials"]
        self.assertEqual(len(trials), 1)
        self.assertEqual((trials[0]["status"], trials[0]["converged"]), ("Succeeded", True))
        status, ctype, body = get(f"{base}/")
        self.assertEqual(status, 200)
        self.assertTrue(ctype.startswith("text/html"), ctype)
        self.assertIn(b'<script src="/app.js"', body)
        self.assertEqual(get(f"{base}/app.js")[0], 200)
        self.assertIn(b"/docs/swagger-ui-bundle.js", get(f"{base}/docs")[2])
        stop()
        self.assertEqual(serve.returncode, 0)
        self.assertTrue(os.path.exists(os.path.join(clone, "quickstart.db")))


if __name__ == "__main__":
    unittest.main()
