"""zbso.device.cpu: CPU package and DRAM energy counters through libzbso's RAPL reader
(Zeus's zeus.device.cpu, Linux RAPL only): powercap zones intel-rapl:N under
$ZBSO_POWERCAP_ROOT or /sys/class/powercap, their wraps folded in by libzbso."""

import ctypes
import sys
import threading
from dataclasses import dataclass
from typing import Optional

from zbso import _lib
from zbso.device.exception import ZeusBaseCPUError


class ZeusCPUInitError(ZeusBaseCPUError):
    """RAPL is absent or cannot be read."""


class ZeusCPUNoPermissionError(ZeusBaseCPUError):
    """The RAPL counters are there but not readable by this user (root only on most
    kernels)."""


class ZeusCPUNotFoundError(ZeusBaseCPUError):
    """A CPU index out of range."""


@dataclass
class CpuDramMeasurement:
    """Energy counters of one package in mJ: the package's, and its DRAM's (None when it has
    no DRAM zone)."""

    cpu_mj: float
    dram_mj: Optional[float] = None

    def __sub__(self, other):
        dram = None
        if self.dram_mj is not None and other.dram_mj is not None:
            dram = self.dram_mj - other.dram_mj
        elif self.dram_mj is not None:
            dram = self.dram_mj
        elif other.dram_mj is not None:
            dram = -other.dram_mj
        return CpuDramMeasurement(self.cpu_mj - other.cpu_mj, dram)

    def __truediv__(self, other):
        if not isinstance(other, (int, float)):
            return NotImplemented
        if other == 0:
            raise ZeroDivisionError("Division by zero is not allowed")
        dram = self.dram_mj / other if self.dram_mj is not None else None
        return CpuDramMeasurement(self.cpu_mj / other, dram)


class CPUs:
    """The CPU packages RAPL exposes, by position (index i is the i-th zone intel-rapl:N in
    N's order). ZeusCPUNoPermissionError or ZeusCPUInitError (with libzbso's reason) when
    none can be read."""

    def __init__(self):
        self._lock = threading.Lock()
        self._handle = None
        handle = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_lib.ERRBUF_MAX)
        rc = _lib.monitor_open(None, 0, None, _lib.MONITOR_ALL, 0, ctypes.byref(handle), err,
                               len(err))
        if rc != 0:
            raise ZeusCPUInitError(_lib.text(err.value))
        self._handle = handle
        if _lib.monitor_cpu_count(handle) == 0:
            why = _lib.text(_lib.monitor_cpu_status(handle))
            self.close()
            cls = ZeusCPUNoPermissionError if "Permission denied" in why else ZeusCPUInitError
            raise cls(why)
        self.zone_indices = [_lib.monitor_cpu_index(handle, i)
                             for i in range(_lib.monitor_cpu_count(handle))]

    def __len__(self):
        return len(self.zone_indices)

    def _index(self, index):
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self):
            raise ZeusCPUNotFoundError(f"CPU index {index!r} is out of range: {len(self)} "
                                       "RAPL package zone(s)")
        return index

    def get_total_energy_consumption(self, index):
        """CpuDramMeasurement of package index now (mJ, wraps undone since it was first
        read)."""
        i = self._index(index)
        m = _lib.CpuMeasurement_C()
        with self._lock:
            if _lib.monitor_cpu_energy(self._handle, ctypes.byref(m)) != 0:
                raise ZeusCPUInitError(_lib.text(_lib.monitor_errmsg(self._handle)))
        dram = m.dram_energy_j[i] * 1000.0 if m.has_dram[i] else None
        return CpuDramMeasurement(cpu_mj=m.cpu_energy_j[i] * 1000.0, dram_mj=dram)

    def supports_get_dram_energy_consumption(self, index):
        """True when package index has a DRAM zone."""
        return bool(_lib.monitor_cpu_has_dram(self._handle, self._index(index)))

    def close(self):
        with self._lock:
            h, self._handle = self._handle, None
        if h is not None:
            _lib.monitor_free(h)

    def __del__(self):
        if getattr(self, "_handle", None) is not None and not sys.is_finalizing():
            self.close()


_cpus = None
_cpus_lock = threading.Lock()


def get_cpus():
    """The CPU packages, one object per process (as Zeus's singleton)."""
    global _cpus
    with _cpus_lock:
        if _cpus is None:
            _cpus = CPUs()
        return _cpus


__all__ = ["get_cpus", "CPUs", "CpuDramMeasurement", "ZeusCPUInitError",
           "ZeusCPUNoPermissionError", "ZeusCPUNotFoundError"]
