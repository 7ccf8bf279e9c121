"""ZeusMonitor over the fake NVML: windows give time and energy ~ power * time per GPU,
windows overlap, bad window names and bad GPU sets raise the mapped exceptions.

A window's time and energies are read inside begin_window and end_window, but not at one
instant: the clock first, then every GPU (one of them on the monitor's reader thread, which
a loaded machine may run many ms later). So the checks bound them by the test's own
CLOCK_MONOTONIC (the fake NVML's clock too) taken around those calls, which holds however
long each call is delayed, instead of a fixed tolerance around power * time, which does
not."""

import time
import unittest

import support


class TestMonitor(support.FakeNvmlMixin, unittest.TestCase):
    def setUp(self):
        support.require_env()
        self.use_fake_nvml(gpus=2)
        from zbso.monitor import ZeusMonitor
        self.ZeusMonitor = ZeusMonitor
        self.begun = {}  # window name -> (before, after) its begin_window call

    def monitor(self, *args, **kw):
        m = self.ZeusMonitor(*args, **kw)
        self.addCleanup(m.close)
        return m

    def begin(self, mon, name):
        """mon.begin_window(name), remembering when the call started and returned."""
        before = time.monotonic()
        mon.begin_window(name)
        self.begun[name] = (before, time.monotonic())

    def end(self, mon, name):
        """mon.end_window(name): (Measurement, the shortest and the longest time between
        a moment inside the begin call and one inside the end call)."""
        before = time.monotonic()
        meas = mon.end_window(name)
        after = time.monotonic()
        begin_before, begin_after = self.begun.pop(name)
        return meas, (before - begin_after, after - begin_before)

    def assert_energy(self, meas, bounds, indices, power_w):
        """The window's time lies within bounds and each GPU's energy within power * bounds:
        the fake's power is constant and its counter (or the monitor's integral of power
        samples) exact but for 1 mJ steps; the slack covers rounding alone."""
        lo, hi = bounds
        self.assertGreaterEqual(meas.time, lo - 1e-6)
        self.assertLessEqual(meas.time, hi + 1e-6)
        self.assertEqual(sorted(meas.gpu_energy), sorted(indices))
        for i in indices:
            self.assertGreaterEqual(meas.gpu_energy[i], power_w * lo - 0.005, msg=(i, bounds))
            self.assertLessEqual(meas.gpu_energy[i], power_w * hi + 0.005, msg=(i, bounds))
        self.assertAlmostEqual(meas.total_energy, sum(meas.gpu_energy.values()), places=6)

    def test_window_energy_is_power_times_time(self):
        mon = self.monitor()
        self.assertEqual(mon.gpu_indices, [0, 1])
        self.assertEqual(mon.gpu_model, support.FAKE_MODEL)
        self.begin(mon, "epoch")
        time.sleep(0.5)
        m, bounds = self.end(mon, "epoch")
        self.assertGreaterEqual(m.time, 0.5)
        self.assert_energy(m, bounds, [0, 1], support.FAKE_POWER_W)

    def test_gpu_without_energy_counter_is_sampled(self):
        self.use_fake_nvml(gpus=2, power_w=100.0, FAKE_NVML_NO_ENERGY="1")
        mon = self.monitor()
        self.begin(mon, "w")
        time.sleep(0.5)
        m, bounds = self.end(mon, "w")
        self.assert_energy(m, bounds, [0, 1], 100.0)

    def test_chosen_gpus(self):
        mon = self.monitor(gpu_indices=[1])
        self.assertEqual(mon.gpu_indices, [1])
        self.begin(mon, "w")
        time.sleep(0.3)
        m, bounds = self.end(mon, "w")
        self.assert_energy(m, bounds, [1], support.FAKE_POWER_W)

    def test_overlapping_windows(self):
        mon = self.monitor()
        self.begin(mon, "outer")
        time.sleep(0.2)
        self.begin(mon, "inner")
        time.sleep(0.3)
        inner, inner_bounds = self.end(mon, "inner")
        time.sleep(0.2)
        outer, outer_bounds = self.end(mon, "outer")
        self.assertGreater(outer.time, inner.time + 0.3)
        self.assertGreater(outer.total_energy, inner.total_energy)
        self.assert_energy(inner, inner_bounds, [0, 1], support.FAKE_POWER_W)
        self.assert_energy(outer, outer_bounds, [0, 1], support.FAKE_POWER_W)
        # A closed name can be opened again.
        mon.begin_window("inner")
        self.assertIsNone(mon.end_window("inner", cancel=True))

    def test_window_misuse(self):
        from zbso.optimizer.batch_size.exceptions import ZeusBSOBadOperationError
        mon = self.monitor()
        with self.assertRaises(ZeusBSOBadOperationError) as cm:
            mon.end_window("never-opened")
        self.assertIn("never-opened", str(cm.exception))
        mon.begin_window("twice")
        with self.assertRaises(ZeusBSOBadOperationError):
            mon.begin_window("twice")
        with self.assertRaises(TypeError):
            mon.begin_window(3)
        mon.close()
        mon.close()
        with self.assertRaises(ZeusBSOBadOperationError):
            mon.begin_window("after-close")

    def test_bad_gpu_sets(self):
        from zbso.optimizer.batch_size.exceptions import ZeusBSOConfigError, ZeusBSOError
        with self.assertRaises(ZeusBSOConfigError):
            self.ZeusMonitor(gpu_indices=[])
        with self.assertRaises(ZeusBSOError) as cm:
            self.ZeusMonitor(gpu_indices=[7])
        self.assertIn("7", str(cm.exception))

    def test_no_gpus(self):
        from zbso.optimizer.batch_size.exceptions import ZeusBSOConfigError
        self.use_fake_nvml(gpus=0)
        with self.assertRaises(ZeusBSOConfigError):
            self.ZeusMonitor()

    def test_mixed_models(self):
        from zbso.optimizer.batch_size.exceptions import ZeusBSOConfigError
        self.use_fake_nvml(gpus=2, model="NVIDIA H200,NVIDIA A100-SXM4-40GB")
        with self.assertRaises(ZeusBSOConfigError):
            self.ZeusMonitor()
        # One of them alone is fine.
        self.assertEqual(self.monitor(gpu_indices=[1]).gpu_model, "NVIDIA A100-SXM4-40GB")

    def test_cuda_visible_devices(self):
        import os
        self.use_fake_nvml(gpus=3, model="GPU A,GPU B,GPU C")
        os.environ["CUDA_VISIBLE_DEVICES"] = "2"
        mon = self.monitor()
        self.assertEqual(mon.gpu_indices, [0])  # CUDA index 0 is NVML's GPU 2
        self.assertEqual(mon.gpu_model, "GPU C")

    def test_missing_nvml(self):
        import os
        from zbso.optimizer.batch_size.exceptions import ZeusBSOConfigError
        os.environ["ZBSO_NVML_LIBRARY"] = "/nonexistent/libnvidia-ml.so.1"
        with self.assertRaises(ZeusBSOConfigError) as cm:
            self.ZeusMonitor()
        self.assertIn("/nonexistent/libnvidia-ml.so.1", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
