"""ZeusMonitor's sync_execution: at each window edge, before the energy is read, the GPU
work a framework queued is waited for (torch.cuda.synchronize per GPU, JAX's
block_until_ready on a value per device, cupy's Device.synchronize), so the window holds
the work queued inside it and none queued before. The frameworks here are stand-ins in
sys.modules whose wait takes a known time; a window's length shows on which side of the
reading the wait happened. A framework the script did not import is never imported."""

import importlib.abc
import sys
import time
import types
import unittest

import support

WAIT_S = 0.3


class FakeCuda:
    """torch.cuda's two calls: each synchronize(device) takes WAIT_S."""

    def __init__(self):
        self.initialized = True
        self.synced = []

    def is_initialized(self):
        return self.initialized

    def synchronize(self, device):
        self.synced.append(device)
        time.sleep(WAIT_S)


class FakeJax(types.ModuleType):
    """What Zeus's JAX synchronization calls: devices(), device_put(), + 0 on the result,
    block_until_ready() (which takes WAIT_S)."""

    def __init__(self):
        super().__init__("jax")
        self.put, self.blocked = [], []

    def devices(self, kind):
        return [f"{kind}{i}" for i in range(4)]

    def device_put(self, value, device):
        self.put.append(device)
        return value

    def block_until_ready(self, futures):
        self.blocked.append(list(futures))
        time.sleep(WAIT_S)


class ImportSpy(importlib.abc.MetaPathFinder):
    """Records every attempt to import a framework (and lets it fail)."""

    def __init__(self):
        self.tried = []

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "jax", "cupy"):
            self.tried.append(name)
        return None


class TestSync(support.FakeNvmlMixin, unittest.TestCase):
    def setUp(self):
        support.require_env()
        self.use_fake_nvml(gpus=2)
        from zbso.monitor import ZeusMonitor
        self.ZeusMonitor = ZeusMonitor
        self.saved = {k: sys.modules.get(k) for k in ("torch", "jax", "cupy")}
        self.addCleanup(self.restore_modules)

    def restore_modules(self):
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v

    def monitor(self, **kw):
        m = self.ZeusMonitor(**kw)
        self.addCleanup(m.close)
        return m

    def fake_torch(self):
        torch = types.ModuleType("torch")
        torch.cuda = FakeCuda()
        sys.modules["torch"] = torch
        return torch.cuda

    def test_torch_waits_before_each_reading(self):
        cuda = self.fake_torch()
        mon = self.monitor()
        # Begin: the waits (2 GPUs x WAIT_S) come before the reading, outside the window.
        t0 = time.monotonic()
        mon.begin_window("w")
        begun = time.monotonic()
        m = mon.end_window("w", sync_execution=False)
        self.assertGreaterEqual(begun - t0, 2 * WAIT_S)
        self.assertLess(m.time, 2 * WAIT_S)
        self.assertEqual(cuda.synced, [0, 1])
        # End: the waits come before the reading, inside the window.
        mon.begin_window("w", sync_execution=False)
        m = mon.end_window("w")
        self.assertGreaterEqual(m.time, 2 * WAIT_S)
        self.assertEqual(cuda.synced, [0, 1, 0, 1])
        # Only the monitor's GPUs, by CUDA index.
        one = self.monitor(gpu_indices=[1])
        one.begin_window("x")
        self.assertEqual(cuda.synced[-1:], [1])
        # Nothing to wait for: CUDA not initialised, sync_execution off, no GPU, cancel
        # still waits (as in Zeus).
        n = len(cuda.synced)
        one.end_window("x", cancel=True)
        self.assertEqual(len(cuda.synced), n + 1)
        cuda.initialized = False
        one.begin_window("y")
        one.end_window("y")
        cuda.initialized = True
        one.begin_window("z", sync_execution=False)
        one.end_window("z", sync_execution=False)
        none = self.monitor(gpu_indices=[])
        none.begin_window("z")
        none.end_window("z")
        self.assertEqual(len(cuda.synced), n + 1)

    def test_jax_and_cupy(self):
        jax = FakeJax()
        sys.modules["jax"] = jax
        mon = self.monitor(gpu_indices=[0, 1], sync_execution_with="jax")
        mon.begin_window("w", sync_execution=False)
        m = mon.end_window("w")
        self.assertGreaterEqual(m.time, WAIT_S)
        self.assertEqual(jax.put, ["gpu0", "gpu1", "cpu0"])
        self.assertEqual(len(jax.blocked), 1)

        synced = []
        cupy = types.ModuleType("cupy")
        cupy.cuda = types.SimpleNamespace(
            Device=lambda d: types.SimpleNamespace(synchronize=lambda: synced.append(d)))
        sys.modules["cupy"] = cupy
        mon = self.monitor(gpu_indices=[1], sync_execution_with="cupy")
        mon.begin_window("w")
        mon.end_window("w")
        self.assertEqual(synced, [1, 1])

    def test_framework_never_imported(self):
        for k in ("torch", "jax", "cupy"):
            sys.modules.pop(k, None)
        spy = ImportSpy()
        sys.meta_path.insert(0, spy)
        self.addCleanup(sys.meta_path.remove, spy)
        for fw in ("torch", "jax", "cupy"):
            mon = self.monitor(sync_execution_with=fw)
            mon.begin_window("w")
            mon.end_window("w")
        self.assertEqual(spy.tried, [])
        for k in ("torch", "jax", "cupy"):
            self.assertNotIn(k, sys.modules)


if __name__ == "__main__":
    unittest.main()
