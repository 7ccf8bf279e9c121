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
        self.assertEqual(self.monitor(gpu_indices=(i for i in (1, 0))).gpu_indices, [1, 0])
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
        self.assertEqual(mon.end_window("inner", cancel=True).time, 0.0)

    def test_window_misuse(self):
        """As Zeus's monitor: ValueError for a name open twice or not open."""
        from zbso.optimizer.batch_size.exceptions import ZeusBSOBadOperationError
        mon = self.monitor()
        with self.assertRaises(ValueError) as cm:
            mon.end_window("never-opened")
        self.assertEqual(str(cm.exception), "Measurement window 'never-opened' does not exist")
        with self.assertRaises(ValueError):
            mon.end_window("never-opened", cancel=True)
        mon.begin_window("twice")
        with self.assertRaises(ValueError) as cm:
            mon.begin_window("twice")
        self.assertEqual(str(cm.exception), "Measurement window 'twice' already exists")
        with self.assertRaises(TypeError):
            mon.begin_window(3)
        mon.close()
        mon.close()
        with self.assertRaises(ZeusBSOBadOperationError):
            mon.begin_window("after-close")

    def test_cancel_restart_reset(self):
        mon = self.monitor()
        mon.begin_window("a")
        time.sleep(0.05)
        # cancel: Zeus's empty Measurement (zero time and energies, no DRAM).
        m = mon.end_window("a", cancel=True)
        self.assertEqual((m.time, m.gpu_energy, m.cpu_energy, m.dram_energy, m.total_energy),
                         (0.0, {0: 0.0, 1: 0.0}, {}, None, 0.0))
        # restart: an open window is dropped and begun anew (its time starts again).
        mon.begin_window("b")
        time.sleep(0.3)
        mon.begin_window("b", restart=True)
        self.assertLess(mon.end_window("b").time, 0.25)
        mon.begin_window("c", restart=True)  # nothing to restart: just begins
        mon.begin_window("d")
        mon.reset_windows()
        for name in ("c", "d"):
            with self.assertRaises(ValueError):
                mon.end_window(name)
        mon.reset_windows()  # nothing open: fine
        mon.begin_window("c")
        self.assertGreaterEqual(mon.end_window("c").time, 0.0)

    def test_measurement_total_energy_is_computed(self):
        from zbso.monitor import Measurement
        m = Measurement(time=1, gpu_energy={0: 2.0, 3: 0.5})
        self.assertEqual(m.total_energy, 2.5)
        self.assertEqual((m.cpu_energy, m.dram_energy, m.soc_energy), (None, None, None))
        self.assertEqual(Measurement(time=1, gpu_energy={}).total_energy, 0)

    def test_bad_gpu_sets(self):
        from zbso.optimizer.batch_size.exceptions import ZeusBSOError
        with self.assertRaises(ZeusBSOError) as cm:
            self.ZeusMonitor(gpu_indices=[7])
        self.assertIn("7", str(cm.exception))
        with self.assertRaises(TypeError):
            self.ZeusMonitor(gpu_indices=["0"])
        with self.assertRaises(ValueError) as cm:
            self.ZeusMonitor(sync_execution_with="tensorflow")
        self.assertIn("tensorflow", str(cm.exception))

    def test_no_gpus(self):
        """As Zeus: every GPU of none is none, and windows still give the time."""
        self.use_fake_nvml(gpus=0)
        for mon in (self.monitor(), self.monitor(gpu_indices=[])):
            self.assertEqual(mon.gpu_indices, [])
            mon.begin_window("t")
            time.sleep(0.05)
            m = mon.end_window("t")
            self.assertGreaterEqual(m.time, 0.05)
            self.assertEqual((m.gpu_energy, m.total_energy), ({}, 0))
        self.assertIn("no GPUs", self.monitor().gpu_unavailable_reason)
        self.assertIsNone(self.monitor(gpu_indices=[]).gpu_unavailable_reason)

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
        """Every GPU: none, with the reason; a GPU by index: an error naming the path."""
        import os
        from zbso.optimizer.batch_size.exceptions import ZeusBSOConfigError
        os.environ["ZBSO_NVML_LIBRARY"] = "/nonexistent/libnvidia-ml.so.1"
        mon = self.monitor()
        self.assertEqual(mon.gpu_indices, [])
        self.assertIn("/nonexistent/libnvidia-ml.so.1", mon.gpu_unavailable_reason)
        with self.assertRaises(ZeusBSOConfigError) as cm:
            self.ZeusMonitor(gpu_indices=[0])
        self.assertIn("/nonexistent/libnvidia-ml.so.1", str(cm.exception))

    def test_approx_instant_energy_and_zero_warning(self):
        """Counters that do not move: 0 J and Zeus's warning, or power x time."""
        import warnings
        self.use_fake_nvml(gpus=1, FAKE_NVML_ENERGY_STEPS_MJ="0")
        mon = self.monitor()
        mon.begin_window("w")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = mon.end_window("w")
        self.assertEqual(m.gpu_energy, {0: 0.0})
        self.assertTrue(any("approx_instant_energy" in str(w.message) for w in caught))
        mon = self.monitor(approx_instant_energy=True)
        mon.begin_window("w")
        time.sleep(0.05)
        m = mon.end_window("w")
        self.assertAlmostEqual(m.gpu_energy[0], support.FAKE_POWER_W * m.time, places=6)

    def test_log_file(self):
        import tempfile
        d = tempfile.mkdtemp(prefix="zbso-monlog-")
        path = f"{d}/sub/zeus.csv"
        mon = self.monitor(log_file=path)
        t0 = time.time()
        mon.begin_window("epoch")
        m = mon.end_window("epoch")
        mon.close()
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[0], "start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy")
        start, name, elapsed, e0, e1 = lines[1].split(",")
        self.assertAlmostEqual(float(start), t0, delta=5)
        self.assertEqual((name, float(elapsed), float(e0), float(e1)),
                         ("epoch", m.time, m.gpu_energy[0], m.gpu_energy[1]))




if __name__ == "__main__":
    unittest.main()
