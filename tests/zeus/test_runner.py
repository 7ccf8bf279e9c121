"""test_runner.py: run_zeus_server_tests.py itself, on a made-up Zeus tree (CI has no
Zeus checkout): a test file in Zeus's shape (pytest and common imports, the client and
helpers fixtures, Helpers taken from the conftest beside it) passes against a real
`zbso serve` on SQLite; a failing test, an unknown fixture, a missing file and a missing
$ZEUS_SRC each make the run fail with the reason named. Needs $ZBSO_BIN."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "run_zeus_server_tests.py")

COMMON = '''
from __future__ import annotations
from zeus.utils.pydantic_v1 import BaseModel
REGISTER_JOB_URL = "/jobs"
DELETE_JOB_URL = "/jobs"
GET_NEXT_BATCH_SIZE_URL = "/jobs/batch_size"
REPORT_RESULT_URL = "/report"
REPORT_END_URL = "/trials"
'''

CONFTEST = '''
from __future__ import annotations
import pytest
from fastapi.testclient import TestClient


class Helpers:
    @staticmethod
    def get_fake_job_config(job_id: str) -> dict:
        return {"job_id": job_id, "job_id_prefix": "fake", "batch_sizes": [8, 16],
                "default_batch_size": 16, "max_power": 300, "number_of_gpus": 1,
                "gpu_model": "A40", "mab_seed": 1}


@pytest.fixture(scope="module")
def helpers():
    return Helpers
'''

TESTS = '''
from __future__ import annotations
import pytest
from zeus.optimizer.batch_size.common import (GET_NEXT_BATCH_SIZE_URL, REGISTER_JOB_URL,
                                               DELETE_JOB_URL)


def test_ok(client, helpers):
    job = helpers.get_fake_job_config("fake-ok")
    r = client.post(REGISTER_JOB_URL, json=job)
    print(r.text)
    assert r.status_code == 201, str(r)
    r = client.get(GET_NEXT_BATCH_SIZE_URL, params={"job_id": job["job_id"]})
    assert r.status_code == 200 and r.json()["batch_size"] == 16
    assert client.delete(DELETE_JOB_URL, params={"job_id": "nope"}).status_code == 404
    with pytest.raises(ValueError):
        int("x")
'''

FAILING = '''

def test_fails(client, helpers):
    r = client.post(REGISTER_JOB_URL, json=helpers.get_fake_job_config("fake-ok"))
    print("SAW", r.status_code)
    assert r.status_code == 201


def test_needs_db(client, db_session):
    pass
'''


class RunnerTest(unittest.TestCase):
    def setUp(self):
        if not os.access(os.environ.get("ZBSO_BIN", ""), os.X_OK):
            raise AssertionError(f"ZBSO_BIN={os.environ.get('ZBSO_BIN')!r} is not executable")
        tmp = tempfile.TemporaryDirectory(prefix="zbso-fake-zeus-")
        self.addCleanup(tmp.cleanup)
        self.zeus = tmp.name
        self.write("zeus/optimizer/batch_size/common.py", COMMON)
        self.write("tests/optimizer/batch_size/conftest.py", CONFTEST)
        self.write("tests/optimizer/batch_size/test_server.py", TESTS)

    def write(self, rel, text):
        path = os.path.join(self.zeus, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))

    def run_runner(self, zeus_src=None):
        env = {k: v for k, v in os.environ.items()
               if k not in ("ZEUS_SRC", "ZBSO_TEST_BACKEND")}
        if zeus_src is not None:
            env["ZEUS_SRC"] = zeus_src
        return subprocess.run([sys.executable, RUNNER], env=env, capture_output=True,
                              text=True, timeout=120)

    def test_passing_tree(self):
        r = self.run_runner(self.zeus)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("PASSED test_ok", r.stdout)
        self.assertIn("1 passed, 0 failed", r.stdout)
        self.assertIn("zbso serve on sqlite", r.stdout)

    def test_failures_are_reported(self):
        with open(os.path.join(self.zeus, "tests/optimizer/batch_size/test_server.py"),
                  "a", encoding="utf-8") as f:
            f.write(FAILING)
        r = self.run_runner(self.zeus)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("PASSED test_ok", r.stdout)
        # the same job again answers 200, not 201; the test's output is shown
        self.assertIn("FAILED test_fails", r.stdout)
        self.assertIn("SAW 200", r.stdout)
        self.assertIn("FAILED test_needs_db", r.stdout)
        self.assertIn("fixtures this runner does not provide: ['db_session']", r.stdout)
        self.assertIn("1 passed, 2 failed", r.stdout)

    def test_missing_zeus_src_fails_loudly(self):
        r = self.run_runner()
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("ZEUS_SRC is not set", r.stderr)
        r = self.run_runner(os.path.join(self.zeus, "nowhere"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("is not a directory", r.stderr)
        os.unlink(os.path.join(self.zeus, "tests/optimizer/batch_size/conftest.py"))
        r = self.run_runner(self.zeus)
        self.assertEqual(r.returncode, 2)
        self.assertIn("conftest.py", r.stderr)
        self.assertIn("is ZEUS_SRC", r.stderr)


if __name__ == "__main__":
    unittest.main()
