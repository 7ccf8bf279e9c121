"""support.py: shared pieces of the Python binding tests: the environment CMake passes
(ZBSO_LIBRARY, ZBSO_BIN, ZBSO_NVML_LIBRARY), the fake NVML's settings, a real `zbso serve`
(tests/integration/zbsoserver.py) and child Python processes. Standard library only."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, os.path.join(REPO, "python"))

import zbsoserver  # noqa: E402  (tests/integration: a real zbso serve per test)

REQUIRED_ENV = ("ZBSO_LIBRARY", "ZBSO_BIN", "ZBSO_NVML_LIBRARY")


def require_env():
    """Fails (never skips) when CMake's environment is missing."""
    missing = [k for k in REQUIRED_ENV if not os.path.exists(os.environ.get(k, ""))]
    if missing:
        raise AssertionError("set " + ", ".join(f"{k} (now {os.environ.get(k)!r})"
                                                for k in missing))


# The fake NVML (tests/fakes/fake_nvml.c) reads these when NVML is initialised.
FAKE_POWER_W = 250.0
FAKE_LIMIT_W = 700.0
FAKE_MODEL = "NVIDIA H200"


def fake_nvml_env(gpus=1, model=FAKE_MODEL, power_w=FAKE_POWER_W, limit_w=FAKE_LIMIT_W,
                  **extra):
    """The environment that scripts the fake NVML (strings, ready for os.environ)."""
    env = {
        "FAKE_NVML_GPUS": str(gpus),
        "FAKE_NVML_MODELS": model,
        "FAKE_NVML_POWER_MW": str(int(power_w * 1000)),
        "FAKE_NVML_MAX_LIMIT_MW": str(int(limit_w * 1000)),
    }
    env.update({k: str(v) for k, v in extra.items()})
    return env


def forget_devices():
    """Closes the process's zbso.device.get_gpus() / get_cpus() objects (one per process, as
    in Zeus), so the next call reads the fake NVML's and powercap tree's current settings:
    the fake reads its variables when NVML is first initialised."""
    import zbso.device.cpu
    import zbso.device.gpu
    for module, name in ((zbso.device.gpu, "_gpus"), (zbso.device.cpu, "_cpus")):
        obj = getattr(module, name)
        setattr(module, name, None)
        if obj is not None:
            obj.close()


class FakeNvmlMixin:
    """Sets the fake NVML's variables for one test (without any ZEUS_BSO_* setting of the
    caller's) and restores the environment after."""

    nvml_settings = {}

    def use_fake_nvml(self, **settings):
        forget_devices()
        self.addCleanup(forget_devices)
        saved = dict(os.environ)

        def restore():
            os.environ.clear()
            os.environ.update(saved)
        self.addCleanup(restore)
        for k in [k for k in os.environ if k.startswith(("FAKE_NVML_", "ZEUS_BSO_"))]:
            del os.environ[k]
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        os.environ.update(fake_nvml_env(**{**self.nvml_settings, **settings}))
        # Records of original power limits (SPEC §6.1) stay in the test's own directory.
        state = tempfile.TemporaryDirectory(prefix="zbso-state-")
        self.addCleanup(state.cleanup)
        os.environ["ZBSO_STATE_DIR"] = state.name


class ServerCase(FakeNvmlMixin, unittest.TestCase):
    """A fresh `zbso serve` on a temporary SQLite database per test (self.srv, self.url),
    and the fake NVML set up."""

    def setUp(self):
        require_env()
        self.use_fake_nvml()
        self.srv = zbsoserver.Server()
        self.addCleanup(self.srv.close)
        self.srv.start()
        self.url = f"http://{self.srv.host}:{self.srv.port}"


def run_child(code, env=None, timeout=120):
    """Runs `python3 -c code` with this process's environment (plus env); returns the
    CompletedProcess (text)."""
    full = dict(os.environ)
    full["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(REPO, "python")] + [p for p in [full.get("PYTHONPATH")] if p])
    full.update(env or {})
    return subprocess.run([sys.executable, "-c", code], env=full, timeout=timeout,
                          capture_output=True, text=True)
