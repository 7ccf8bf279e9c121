"""Packaging and finding libzbso.so: `pip install --no-index --no-build-isolation` of the
python/ directory (offline, standard library plus Debian's python3-setuptools/wheel/pip)
bundles the checkout's library into the package, and the installed package loads that
one; a checkout imports its build/ library, never a sanitizer build (build-asan/ sorts
before build/ by name, which is how the sanitizer library used to be picked), and a
checkout with only a sanitizer build says so.

Each case runs in a copy of the checkout's layout in a temporary directory
(include/zbso/zbso.h, python/, build/ and build-asan/ holding libraries), so nothing is
written into the repository."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import support

CODE = "import zbso, zbso._lib as l; print(l.lib._name)"


def pip_python():
    """An interpreter with pip, setuptools and wheel (a pip install --no-build-isolation
    needs them): this one, or Debian's python3. Fails naming the packages otherwise."""
    probe = "import setuptools, wheel, pip"
    for py in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(py) and subprocess.run([py, "-c", probe],
                                                 capture_output=True).returncode == 0:
            return py
    raise AssertionError("no python3 with pip, setuptools and wheel: install python3-pip "
                         "python3-setuptools python3-wheel (scripts/setup.sh lists them)")


class TestInstall(unittest.TestCase):
    def setUp(self):
        support.require_env()
        self.lib = os.path.realpath(os.environ["ZBSO_LIBRARY"])
        self.tmp = tempfile.mkdtemp(prefix="zbso-install-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.repo = os.path.join(self.tmp, "repo")
        os.makedirs(os.path.join(self.repo, "include", "zbso"))
        shutil.copy(os.path.join(support.REPO, "include", "zbso", "zbso.h"),
                    os.path.join(self.repo, "include", "zbso"))
        shutil.copytree(os.path.join(support.REPO, "python"),
                        os.path.join(self.repo, "python"),
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__",
                                                      "libzbso.so"))
        # build-asan/ sorts first: a sanitizer build, whose library ends a python3 that
        # loads it without its runtime preloaded (the stand-in ends it with status 86).
        self.dying = os.environ["ZBSO_FAKE_ASAN_LIBRARY"]
        self.asan_lib = self.build_dir("build-asan", self.dying, "ZBSO_SANITIZE:BOOL=ON\n")
        self.good_lib = self.build_dir("build", self.lib, "ZBSO_SANITIZE:BOOL=OFF\n")
        # The build's guard program, where a build keeps it (src/power), to be bundled too.
        guard = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(self.lib))),
                             "power", "zbso-guard")
        os.makedirs(os.path.join(self.repo, "build", "src", "power"))
        shutil.copy(guard, os.path.join(self.repo, "build", "src", "power", "zbso-guard"))

    def build_dir(self, name, lib_from, cache):
        """<repo>/NAME/src/client/libzbso.so, a copy of lib_from, and NAME/CMakeCache.txt
        holding cache (None: no CMakeCache.txt)."""
        d = os.path.join(self.repo, name, "src", "client")
        os.makedirs(d)
        lib = os.path.join(d, "libzbso.so")
        shutil.copyfile(lib_from, lib)
        if cache is not None:
            with open(os.path.join(self.repo, name, "CMakeCache.txt"), "w",
                      encoding="utf-8") as f:
                f.write("# This is the CMakeCache file.\n" + cache)
        return lib

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items() if k not in ("ZBSO_LIBRARY", "PYTHONPATH")}
        env.update(extra)
        return env

    def run_py(self, py, pythonpath, code=CODE):
        return subprocess.run([py, "-c", code], env=self.env(PYTHONPATH=pythonpath),
                              cwd=self.tmp, capture_output=True, text=True, timeout=120)

    def test_checkout_skips_sanitizer_build(self):
        r = self.run_py(sys.executable, os.path.join(self.repo, "python"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), self.good_lib)
        # Only the sanitizer build: an ImportError that says why it was skipped.
        shutil.rmtree(os.path.join(self.repo, "build"))
        r = self.run_py(sys.executable, os.path.join(self.repo, "python"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ImportError", r.stderr)
        self.assertIn(self.asan_lib, r.stderr)
        self.assertIn("skipped", r.stderr)
        self.assertIn("ZBSO_SANITIZE=ON", r.stderr)
        # A build without CMakeCache.txt: the library's own bytes tell.
        other = self.build_dir("build-other", self.dying, None)
        r = self.run_py(sys.executable, os.path.join(self.repo, "python"))
        self.assertIn(f"{other} (a build directory of the checkout: skipped, it holds "
                      "__asan_init", r.stderr)
        # Asked for by name, it is what is loaded (here: the process ends).
        r = subprocess.run([sys.executable, "-c", CODE], cwd=self.tmp, capture_output=True,
                           text=True, timeout=120,
                           env=self.env(PYTHONPATH=os.path.join(self.repo, "python"),
                                        ZBSO_LIBRARY=self.asan_lib))
        self.assertEqual(r.returncode, 86)

    def test_pip_install_bundles_the_library(self):
        py = pip_python()
        site = os.path.join(self.tmp, "site")
        r = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-build-isolation",
                            "--no-cache-dir", "--disable-pip-version-check", "--target", site,
                            os.path.join(self.repo, "python")],
                           env=self.env(), cwd=self.tmp, capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        bundled = os.path.join(site, "zbso", "libzbso.so")
        with open(bundled, "rb") as a, open(self.lib, "rb") as b:
            self.assertTrue(a.read() == b.read(), "the bundled library is not build/'s")
        # With the guard process libzbso starts beside itself (SPEC 6.1).
        self.assertTrue(os.access(os.path.join(site, "zbso", "zbso-guard"), os.X_OK))
        # The installed package loads its own copy, from anywhere, without ZBSO_LIBRARY.
        r = self.run_py(py, site)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), bundled)
        # And works: Zeus's names, a monitor over the fake NVML.
        r = self.run_py(py, site, "from zbso.monitor import ZeusMonitor; "
                                  "from zbso.optimizer.batch_size import BatchSizeOptimizer; "
                                  "print(ZeusMonitor(cpu_indices=[]).gpu_indices)")
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "[0]"), r.stderr)


if __name__ == "__main__":
    unittest.main()
