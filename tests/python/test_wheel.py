"""test_wheel.py: the wheel of `ninja wheel` (build/python/dist/zbso-*.whl, libzbso.so
bundled) installed offline (`pip install --no-index`) into a fresh venv of every CPython
>= 3.9 found on the machine: each python3 and python3.N on PATH, and pyenv's versions
when pyenv is there. In each venv, seed 003's training loop runs through the installed
package against a real `zbso serve` with the fake NVML, and Python's `logging` decides
what the binding prints: nothing by default, libzbso's own INFO lines (logger "zbso")
once the application asks for INFO. Debian's python3 must be among them (CI's only one);
an interpreter that cannot start (a pyenv shim of a version not selected) is reported and
left out; any other failure fails the test."""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import support

WHEEL_DIR = os.environ.get("ZBSO_WHEEL_DIR", "")
PROBE = ("import sys, os; print(os.path.realpath(sys.executable)); "
         "print('%d.%d' % sys.version_info[:2]); print(sys.implementation.name)")

# Seed 003's loop (docs/ZEUS.md), word for word apart from the epoch's work, and the job
# id from $ZEUS_JOB_ID so that a second run continues the job. No early stop (beta_knob
# None): a run's cost here is a few microseconds of overhead, so whether a later run passes
# 2 x the first's is the machine's timing, not the test's (a CI run stopped one so).
SEED_003 = r'''
import logging, os, sys
if sys.argv[1] == "info":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="LOG %(levelname)s %(name)s: %(message)s")
from zbso.monitor import ZeusMonitor
from zbso.optimizer.batch_size import BatchSizeOptimizer, JobSpec
import zbso
monitor = ZeusMonitor(gpu_indices=[0], cpu_indices=[])
bso = BatchSizeOptimizer(
    monitor=monitor,
    server_url=os.environ["ZEUS_BSO_SERVER_URL"],
    job=JobSpec(job_id=os.environ.get("ZEUS_JOB_ID"), job_id_prefix="mnist",
                default_batch_size=256, batch_sizes=[32, 64, 256, 512, 1024, 4096, 2048],
                max_epochs=5, mab_seed=1, beta_knob=None),
)
batch_size = bso.get_batch_size()
bso.on_train_begin()
for epoch in range(100):
    bso.on_evaluate(0.6 + 0.1 * epoch)
    if bso.training_finished:
        break
print("OK", zbso.__file__, batch_size, epoch, bso.trial_number)
'''


def interpreters():
    """{realpath: (version, how found)} of the CPythons found, and [lines] about the
    candidates left out."""
    names = ["python3"] + [f"python3.{n}" for n in range(9, 20)]
    found, notes, seen = {}, [], set()
    candidates = []
    for d in os.environ.get("PATH", "").split(os.pathsep):
        for n in names:
            candidates.append(os.path.join(d, n))
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates += sorted(glob.glob(os.path.join(root, "versions", "*", "bin", "python3")))
    candidates.append("/usr/bin/python3")
    for c in candidates:
        if c in seen or not (os.path.isfile(c) and os.access(c, os.X_OK)):
            continue
        seen.add(c)
        try:
            p = subprocess.run([c, "-c", PROBE], capture_output=True, text=True, timeout=30,
                               env={k: v for k, v in os.environ.items()
                                    if k not in ("PYTHONPATH", "PYTHONHOME")})
        except (OSError, subprocess.TimeoutExpired) as e:
            notes.append(f"{c}: cannot run ({e})")
            continue
        if p.returncode != 0:
            notes.append(f"{c}: does not start (status {p.returncode}: "
                         f"{p.stderr.strip().splitlines()[0] if p.stderr.strip() else ''})")
            continue
        real, version, impl = p.stdout.split()
        major, minor = map(int, version.split("."))
        if impl != "cpython" or (major, minor) < (3, 9):
            notes.append(f"{c}: {impl} {version}, not a CPython >= 3.9 (left out)")
            continue
        found.setdefault(real, (version, c))
    return found, notes


class TestWheel(unittest.TestCase):
    def setUp(self):
        support.require_env()
        wheels = glob.glob(os.path.join(WHEEL_DIR, "zbso-*.whl"))
        self.assertEqual(len(wheels), 1, f"one wheel expected in {WHEEL_DIR!r}: {wheels} "
                         "(ninja wheel builds it)")
        self.wheel = wheels[0]
        self.assertRegex(os.path.basename(self.wheel), r"^zbso-[0-9.]+-py3-none-linux_\w+\.whl$")
        self.tmp = tempfile.mkdtemp(prefix="zbso-wheel-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.srv = support.zbsoserver.Server()
        self.addCleanup(self.srv.close)
        self.srv.start()
        self.url = f"http://{self.srv.host}:{self.srv.port}"

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items()
               if k not in ("ZBSO_LIBRARY", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV",
                            "ZBSO_LOG_LEVEL") and not k.startswith(("ZEUS_", "FAKE_NVML_"))}
        env.pop("CUDA_VISIBLE_DEVICES", None)
        env.update(support.fake_nvml_env())
        env["ZEUS_BSO_SERVER_URL"] = self.url
        env.update(extra)
        return env

    def test_offline_install_into_every_python(self):
        found, notes = interpreters()
        for n in notes:
            print("left out:", n, file=sys.stderr)
        self.assertTrue(any(real.startswith("/usr/bin/") for real in found),
                        f"Debian's /usr/bin/python3 was not found among {found}")
        print("interpreters:", ", ".join(f"{v} {c}" for v, c in found.values()),
              file=sys.stderr)
        with open(self.wheel, "rb") as f:
            wheel_bytes = len(f.read())
        self.assertGreater(wheel_bytes, 50_000)   # the library is in it
        for i, (real, (version, how)) in enumerate(sorted(found.items())):
            with self.subTest(python=how, version=version):
                self.check_one(i, how, version)

    def check_one(self, i, python, version):
        venv = os.path.join(self.tmp, f"venv{i}")
        p = subprocess.run([python, "-m", "venv", venv], capture_output=True, text=True,
                           timeout=300, env=self.env(), cwd=self.tmp)
        self.assertEqual(p.returncode, 0, f"{python} -m venv: {p.stdout}{p.stderr} (Debian: "
                         "python3-venv, which scripts/setup.sh installs)")
        py = os.path.join(venv, "bin", "python")
        p = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-cache-dir",
                            "--disable-pip-version-check", self.wheel],
                           capture_output=True, text=True, timeout=300, env=self.env(),
                           cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        script = os.path.join(self.tmp, "seed003.py")
        with open(script, "w") as f:
            f.write(SEED_003)
        job = f"mnist-wheel-{i}"
        for mode in ("default", "info"):
            r = subprocess.run([py, script, mode], capture_output=True, text=True,
                               timeout=120, env=self.env(ZEUS_JOB_ID=job), cwd=self.tmp)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            m = re.search(r"^OK (\S+) (\d+) (\d+) (\d+)$", r.stdout, re.M)
            self.assertIsNotNone(m, r.stdout)
            installed, bs, epoch, trial = m.groups()
            self.assertTrue(installed.startswith(venv), installed)   # not the checkout's
            self.assertIn(int(bs), [32, 64, 256, 512, 1024, 4096, 2048])
            if mode == "default":
                self.assertEqual(int(bs), 256)   # a new job starts at the default
                # libzbso's INFO lines and the binding's: silent unless logging says so.
                self.assertEqual(r.stderr, "", f"{python} printed without being asked")
            else:
                self.assertEqual(int(trial), 2)
                self.assertIn(f"LOG INFO zbso: zbso client: job is registered with job_id "
                              f"{job}", r.stderr)
                self.assertIn("LOG INFO zbso: zbso client: chosen batch size", r.stderr)
                self.assertNotRegex(r.stderr, r"^\d{4}-\d\d-\d\dT", "a C line bypassed logging")
        # ZBSO_LOG_LEVEL filters in C first: ERROR hides the INFO lines even when asked.
        r = subprocess.run([py, script, "info"], capture_output=True, text=True, timeout=120,
                           env=self.env(ZEUS_JOB_ID=job, ZBSO_LOG_LEVEL="ERROR"), cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("zbso client:", r.stderr)


if __name__ == "__main__":
    unittest.main()
