"""ZeusMonitor over the fake NVML: windows give time and energy ~ power * time per GPU,
windows overlap, bad window names and bad GPU sets raise the mapped exceptions."""

import time
import unittest

import support


class TestMonitor(support.FakeNvmlMixin, unittest.TestCase):
    def setUp(self):
        support.require_env()
        self.use_fake_nvml(gpus=2)
        from zbso.monitor import ZeusMonitor
        self.ZeusMonitor = ZeusMonitor

    def monitor(self, *args, **kw):
        m = self.ZeusMonitor(*args, **kw)
        self.addCleanup(m.close)
        return m

    def assert_energy(self, meas, indices, power_w):
        self.assertEqual(sorted(meas.gpu_energy), sorted(indices))
        for i in indices:
            # The fake's power is constant and its counter exact, so the energy is power
            # * time up to the few microseconds between the clock and the NVML reads.
            self.assertAlmostEqual(meas.gpu_energy[i], power_w * meas.time,
                                   delta=0.02 * power_w * meas.time + 0.5, msg=i)
        self.assertAlmostEqual(meas.total_energy, sum(meas.gpu_energy.values()), places=6)

    def test_window_energy_is_power_times_time(self):
        mon = self.monitor()
        self.assertEqual(mon.gpu_indices, [0, 1])
        self.assertEqual(mon.gpu_model, support.FAKE_MODEL)
        mon.begin_window("epoch")
        time.sleep(0.5)
        m = mon.end_window("epoch")
        self.assertGreaterEqual(m.time, 0.5)
        self.assertLess(m.time, 5.0)
        self.assert_energy(m, [0, 1], support.FAKE_POWER_W)

    def test_gpu_without_energy_counter_is_sampled(self):
        self.use_fake_nvml(gpus=2, power_w=100.0, FAKE_NVML_NO_ENERGY="1")
        mon = self.monitor()
        mon.begin_window("w")
        time.sleep(0.5)
        m = mon.end_window("w")
        self.assert_energy(m, [0, 1], 100.0)

    def test_chosen_gpus(self):
        mon = self.monitor(gpu_indices=[1])
        self.assertEqual(mon.gpu_indices, [1])
        mon.begin_window("w")
        time.sleep(0.3)
        m = mon.end_window("w")
        self.assert_energy(m, [1], support.FAKE_POWER_W)

    def test_overlapping_windows(self):
        mon = self.monitor()
        mon.begin_window("outer")
        time.sleep(0.2)
        mon.begin_window("inner")
        time.sleep(0.3)
        inner = mon.end_window("inner")
        time.sleep(0.2)
        outer = mon.end_window("outer")
        self.assertGreater(outer.time, inner.time + 0.3)
        self.assertGreater(outer.total_energy, inner.total_energy)
        self.assert_energy(inner, [0, 1], support.FAKE_POWER_W)
        self.assert_energy(outer, [0, 1], support.FAKE_POWER_W)
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
