"""CPU and DRAM energy through the binding: ZeusMonitor(cpu_indices=...) and
zbso.device.get_cpus() over a fake powercap tree (a temporary directory laid out as
/sys/class/powercap, named by ZBSO_POWERCAP_ROOT), including a counter that wraps around
inside a window, and RAPL reported "not available" with the reason when it is absent or
unreadable."""

import os
import shutil
import tempfile
import unittest

import support

RANGE_UJ = 262143328850


class FakePowercap:
    """A powercap tree: zones intel-rapl:N (package-N) with an optional dram subzone."""

    def __init__(self, test):
        self.root = tempfile.mkdtemp(prefix="zbso-powercap-")
        test.addCleanup(shutil.rmtree, self.root, True)
        os.makedirs(os.path.join(self.root, "intel-rapl"))

    def put(self, rel, text):
        path = os.path.join(self.root, rel)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".tmp", path)  # a reader sees the old value or the new one

    def zone(self, n, uj, dram_uj=None, range_uj=RANGE_UJ):
        z = f"intel-rapl:{n}"
        os.makedirs(os.path.join(self.root, z))
        self.put(f"{z}/name", f"package-{n}\n")
        self.put(f"{z}/max_energy_range_uj", f"{range_uj}\n")
        self.set(n, uj)
        if dram_uj is not None:
            os.makedirs(os.path.join(self.root, z, f"{z}:0"))
            self.put(f"{z}/{z}:0/name", "dram\n")
            self.put(f"{z}/{z}:0/max_energy_range_uj", f"{range_uj}\n")
            self.set_dram(n, dram_uj)

    def set(self, n, uj):
        self.put(f"intel-rapl:{n}/energy_uj", f"{uj}\n")

    def set_dram(self, n, uj):
        self.put(f"intel-rapl:{n}/intel-rapl:{n}:0/energy_uj", f"{uj}\n")


class TestRapl(support.FakeNvmlMixin, unittest.TestCase):
    def setUp(self):
        support.require_env()
        self.use_fake_nvml(gpus=1)
        self.tree = FakePowercap(self)
        os.environ["ZBSO_POWERCAP_ROOT"] = self.tree.root
        from zbso.monitor import ZeusMonitor
        self.ZeusMonitor = ZeusMonitor

    def monitor(self, **kw):
        m = self.ZeusMonitor(**kw)
        self.addCleanup(m.close)
        return m

    def test_cpu_and_dram_energy_across_a_wrap(self):
        self.tree.zone(0, 1_000_000, dram_uj=5)
        self.tree.zone(1, RANGE_UJ - 200_000)
        mon = self.monitor()
        self.assertEqual(mon.cpu_indices, [0, 1])
        self.assertIsNone(mon.cpu_unavailable_reason)
        mon.begin_window("epoch")
        self.tree.set(0, 1_000_000 + 42_500_000)       # 42.5 J
        self.tree.set_dram(0, 5 + 3_250_000)           # 3.25 J
        self.tree.set(1, 300_000)                      # wrapped: 0.2 J + 0.3 J
        m = mon.end_window("epoch")
        self.assertEqual(m.cpu_energy, {0: 42.5, 1: 0.5})
        self.assertEqual(m.dram_energy, {0: 3.25})
        self.assertEqual(set(m.gpu_energy), {0})
        self.assertEqual(m.total_energy, m.gpu_energy[0])  # GPUs only, as in Zeus
        # Only the zones asked for.
        one = self.monitor(cpu_indices=[1])
        self.assertEqual(one.cpu_indices, [1])
        one.begin_window("w")
        self.tree.set(1, 400_000)
        m = one.end_window("w")
        self.assertEqual((m.cpu_energy, m.dram_energy), ({1: 0.1}, None))
        # None asked for: no CPU fields.
        none = self.monitor(cpu_indices=[])
        none.begin_window("w")
        m = none.end_window("w")
        self.assertEqual((none.cpu_indices, m.cpu_energy, m.dram_energy), ([], None, None))

    def test_not_available(self):
        from zbso.optimizer.batch_size.exceptions import ZeusBSOConfigError
        mon = self.monitor()  # an empty powercap root: no RAPL
        self.assertEqual(mon.cpu_indices, [])
        self.assertIn("RAPL is not available", mon.cpu_unavailable_reason)
        self.assertIn(self.tree.root, mon.cpu_unavailable_reason)
        mon.begin_window("w")
        self.assertIsNone(mon.end_window("w").cpu_energy)
        with self.assertRaises(ZeusBSOConfigError) as cm:
            self.ZeusMonitor(cpu_indices=[0])
        self.assertIn("CPU index 0", str(cm.exception))
        # A zone whose counter cannot be read (a directory here: as root, modes do not stop
        # reads): every CPU gives none with the reason; by index it is an error.
        self.tree.zone(0, 1)
        path = os.path.join(self.tree.root, "intel-rapl:0", "energy_uj")
        os.remove(path)
        os.makedirs(path)
        mon = self.monitor()
        self.assertEqual(mon.cpu_indices, [])
        self.assertIn("RAPL is not readable", mon.cpu_unavailable_reason)
        self.assertIn(path, mon.cpu_unavailable_reason)
        with self.assertRaises(ZeusBSOConfigError) as cm:
            self.ZeusMonitor(cpu_indices=[0])
        self.assertIn(path, str(cm.exception))

    def test_get_cpus(self):
        from zbso.device import get_cpus
        from zbso.device.cpu import CpuDramMeasurement, ZeusCPUInitError, ZeusCPUNotFoundError
        with self.assertRaises(ZeusCPUInitError) as cm:
            get_cpus()
        self.assertIn("RAPL is not available", str(cm.exception))
        self.tree.zone(0, 7_000, dram_uj=2_000)
        support.forget_devices()
        cpus = get_cpus()
        self.assertIs(get_cpus(), cpus)
        self.assertEqual(len(cpus), 1)
        self.assertTrue(cpus.supports_get_dram_energy_consumption(0))
        a = cpus.get_total_energy_consumption(0)
        self.assertEqual(a, CpuDramMeasurement(cpu_mj=7.0, dram_mj=2.0))
        self.tree.set(0, 9_000)
        b = cpus.get_total_energy_consumption(0)
        self.assertEqual(b - a, CpuDramMeasurement(cpu_mj=2.0, dram_mj=0.0))
        self.assertEqual((b - a) / 2, CpuDramMeasurement(cpu_mj=1.0, dram_mj=0.0))
        with self.assertRaises(ZeusCPUNotFoundError):
            cpus.get_total_energy_consumption(1)


class TestRaplPermission(support.FakeNvmlMixin, unittest.TestCase):
    """A counter this user may not read (the kernel makes them 0400 root since the
    CVE-2020-8694 fix): the reason names the file and says RAPL needs root. As root, which
    reads any file, the check runs in a child process that drops to user nobody."""

    def test_permission_denied_says_root(self):
        support.require_env()
        self.use_fake_nvml(gpus=0)
        tree = FakePowercap(self)
        os.chmod(tree.root, 0o755)
        tree.zone(0, 1)
        counter = os.path.join(tree.root, "intel-rapl:0", "energy_uj")
        os.chmod(counter, 0o400 if os.geteuid() == 0 else 0)
        os.environ["ZBSO_POWERCAP_ROOT"] = tree.root
        from zbso.monitor import ZeusMonitor
        r, w = os.pipe()
        pid = os.fork() if os.geteuid() == 0 else None
        if pid == 0:  # the child: nobody, then the check, its answer through the pipe
            os.close(r)
            try:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                m = ZeusMonitor(gpu_indices=[])
                out = f"{m.cpu_indices} {m.cpu_unavailable_reason}"
            except BaseException as e:  # noqa: B902 - reported to the parent
                out = f"error {e!r}"
            os.write(w, out.encode())
            os._exit(0)
        os.close(w)
        if pid is None:
            os.close(r)
            m = ZeusMonitor(gpu_indices=[])
            out = f"{m.cpu_indices} {m.cpu_unavailable_reason}"
        else:
            with os.fdopen(r, "rb") as f:
                out = f.read().decode()
            os.waitpid(pid, 0)
        self.assertTrue(out.startswith("[] RAPL is not readable"), out)
        self.assertIn(counter, out)
        self.assertIn("Permission denied", out)
        self.assertIn("readable only by root", out)


if __name__ == "__main__":
    unittest.main()
