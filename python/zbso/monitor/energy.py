"""ZeusMonitor over libzbso's energy monitor (zbso_monitor_*): named measurement windows
giving time, per-GPU energy (NVML) and per-package CPU and DRAM energy (RAPL), as Zeus's
zeus.monitor.energy. The measuring is done in C; this converts, synchronizes the training
framework at the window edges (zbso.utils.framework) and writes the optional CSV log."""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from functools import cached_property

from zbso import _lib
from zbso.optimizer.batch_size.exceptions import error_for
from zbso.utils.framework import FRAMEWORKS, sync_execution as sync_execution_fn

logger = logging.getLogger(__name__)

_ZERO_ENERGY_WARNING = (
    "The energy consumption of one or more GPUs was measured as zero. This means that the "
    "time duration of the measurement window was shorter than the GPU's energy counter "
    "update period. Consider turning on the `approx_instant_energy` option in "
    "`ZeusMonitor`, which approximates the energy consumption of a short time window as "
    "instant power draw x window duration.")


@dataclass
class Measurement:
    """One window: time (s); gpu_energy, energy per GPU index (J); cpu_energy and
    dram_energy, per CPU index (RAPL zone intel-rapl:N: J), None when no CPU (or no DRAM)
    is measured; soc_energy, always None (no SoC support). total_energy is the GPUs'
    sum, computed, as in Zeus."""

    time: float
    gpu_energy: dict[int, float]
    cpu_energy: dict[int, float] | None = None
    dram_energy: dict[int, float] | None = None
    soc_energy: object | None = None

    @cached_property
    def total_energy(self) -> float:
        """The energy of all the window's GPUs (J); CPU and DRAM energy are not in it."""
        return sum(self.gpu_energy.values())


def _indices(name, values):
    """values (None, or an iterable of ints) as (C array or None, count for C)."""
    if values is None:
        return None, _lib.MONITOR_ALL
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name} must hold ints, got {v!r}")
        out.append(v)
    if not out:
        return None, 0
    return (ctypes.c_int * len(out))(*out), len(out)


class ZeusMonitor:
    """Measures the time and energy of named windows, as zeus.monitor.ZeusMonitor.

    gpu_indices: CUDA indices of the GPUs to measure (with CUDA_VISIBLE_DEVICES set, index i
    is the i-th listed device); None: every visible GPU, none when NVML is absent
    (gpu_unavailable_reason says why); []: none. cpu_indices: RAPL package zones (N of
    intel-rapl:N) to measure; None: all of them, none when RAPL is absent or unreadable
    (cpu_unavailable_reason says why); []: none. Given indices that cannot be measured
    raise ZeusBSOConfigError naming the index and the reason, as do GPUs of different
    models. approx_instant_energy: a GPU whose window energy reads 0 (a window shorter than
    the counter's update period) gets power x time instead. log_file: a CSV file getting a
    line per ended window. sync_execution_with: "torch", "jax" or "cupy", the framework
    whose queued GPU work each window edge waits for (only when the script imported it).
    Windows of different names may overlap."""

    def __init__(self, gpu_indices=None, cpu_indices=None, approx_instant_energy=False,
                 log_file=None, sync_execution_with="torch"):
        self._lock = threading.Lock()
        self._handle = None
        self._log = None
        if sync_execution_with not in FRAMEWORKS:
            raise ValueError(f"sync_execution_with must be one of {', '.join(FRAMEWORKS)}, "
                             f"got {sync_execution_with!r}")
        self.approx_instant_energy = bool(approx_instant_energy)
        self.sync_with = sync_execution_with
        if gpu_indices is not None:
            gpu_indices = list(gpu_indices)
        garr, ngpu = _indices("gpu_indices", gpu_indices)
        carr, ncpu = _indices("cpu_indices", cpu_indices)
        flags = _lib.MONITOR_APPROX_INSTANT_ENERGY if self.approx_instant_energy else 0
        handle = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_lib.ERRBUF_MAX)
        rc = _lib.monitor_open(garr, ngpu, carr, ncpu, flags, ctypes.byref(handle), err,
                               len(err))
        if rc != 0:
            raise error_for(rc, _lib.text(err.value))
        self._handle = handle
        count = _lib.monitor_gpu_count(handle)
        # CUDA indices of the visible devices are 0..count-1 whatever CUDA_VISIBLE_DEVICES
        # lists, so "every visible GPU" is range(count).
        self.gpu_indices = list(range(count)) if gpu_indices is None else list(gpu_indices)
        self.cpu_indices = [_lib.monitor_cpu_index(handle, i)
                            for i in range(_lib.monitor_cpu_count(handle))]
        self.gpu_model = _lib.text(_lib.monitor_gpu_model(handle))
        self.max_power_limit_mw = int(_lib.monitor_max_power_limit_mw(handle))
        self.gpu_unavailable_reason = _lib.text(_lib.monitor_gpu_status(handle)) or None
        self.cpu_unavailable_reason = _lib.text(_lib.monitor_cpu_status(handle)) or None
        self._begun = {}  # window -> time.time() at its begin, for the log file
        logger.info("Monitoring GPU indices %s.", self.gpu_indices)
        logger.info("Monitoring CPU indices %s", self.cpu_indices)
        for reason in (self.gpu_unavailable_reason, self.cpu_unavailable_reason):
            if reason:
                logger.info("%s", reason)
        if log_file is not None:
            self._open_log(log_file)

    def _open_log(self, log_file):
        folder = os.path.dirname(str(log_file))
        if folder:
            os.makedirs(folder, exist_ok=True)
        self._log = open(log_file, "w", encoding="utf-8")
        self._log.write("start_time,window_name,elapsed_time,"
                        + ",".join(f"gpu{i}_energy" for i in self.gpu_indices) + "\n")
        self._log.flush()

    @property
    def log_file(self):
        """The open CSV log file, or None."""
        return self._log

    def _live(self):
        if self._handle is None:
            raise error_for(_lib.EBADOP, "the monitor is closed")
        return self._handle

    def _check(self, rc):
        """Raises for a failed window call: ValueError for a window name that is open
        already or not open (as Zeus's monitor), else the code's ZeusBSOError."""
        if rc == 0:
            return
        msg = _lib.text(_lib.monitor_errmsg(self._handle))
        if rc == _lib.EBADOP:
            raise ValueError(msg)
        raise error_for(rc, msg)

    @staticmethod
    def _name(key):
        if not isinstance(key, str):
            raise TypeError(f"window key must be a str, not {type(key).__name__}")
        return key.encode("utf-8")

    def _sync(self, sync_execution):
        if sync_execution and self.gpu_indices:
            sync_execution_fn(self.gpu_indices, sync_with=self.sync_with)

    def begin_window(self, key, sync_execution=True, restart=False):
        """Opens window key, after waiting for the framework's queued GPU work when
        sync_execution. ValueError when a window of that name is open, unless restart,
        which cancels it first."""
        name = self._name(key)
        with self._lock:
            handle = self._live()
            if restart and _lib.monitor_cancel_window(handle, name) == 0:
                self._begun.pop(key, None)
                logger.info("Measurement window '%s' restarted.", key)
            self._sync(sync_execution)
            self._check(_lib.monitor_begin_window(handle, name))
            self._begun[key] = time.time()

    def end_window(self, key, sync_execution=True, cancel=False):
        """Closes window key (after waiting for the framework's queued GPU work when
        sync_execution) and returns its Measurement; with cancel, nothing is read and the
        Measurement is all zeros, as in Zeus. ValueError for a name that is not open;
        ZeusBSORuntimError when a GPU or RAPL counter could not be read during the
        window."""
        name = self._name(key)
        m = _lib.Measurement_C()
        c = _lib.CpuMeasurement_C()
        with self._lock:
            handle = self._live()
            self._sync(sync_execution)
            if cancel:
                self._check(_lib.monitor_cancel_window(handle, name))
                self._begun.pop(key, None)
                return Measurement(time=0.0, gpu_energy={g: 0.0 for g in self.gpu_indices},
                                   cpu_energy={i: 0.0 for i in self.cpu_indices})
            self._check(_lib.monitor_end_window_cpu(handle, name, ctypes.byref(m),
                                                    ctypes.byref(c)))
            start = self._begun.pop(key, None)
        n = min(m.n_gpus, _lib.MAX_GPUS)
        gpu = {int(m.gpu_indices[i]): float(m.gpu_energy_j[i]) for i in range(n)}
        k = min(c.n_cpus, _lib.MAX_CPUS)
        cpu = {int(c.cpu_indices[i]): float(c.cpu_energy_j[i]) for i in range(k)}
        dram = {int(c.cpu_indices[i]): float(c.dram_energy_j[i]) for i in range(k)
                if c.has_dram[i]}
        if not self.approx_instant_energy and any(e == 0.0 for e in gpu.values()):
            warnings.warn(_ZERO_ENERGY_WARNING, stacklevel=2)
        if self._log is not None:
            self._log.write(f"{start},{key},{m.time_s},"
                            + ",".join(str(gpu[g]) for g in self.gpu_indices) + "\n")
            self._log.flush()
        return Measurement(time=float(m.time_s), gpu_energy=gpu, cpu_energy=cpu or None,
                           dram_energy=dram or None)

    def reset_windows(self):
        """Drops every open window (their measurements are lost)."""
        with self._lock:
            dropped = list(self._begun)
            n = _lib.monitor_reset_windows(self._live())
            self._begun.clear()
        if n:
            logger.info("ZeusMonitor reset dropped active windows: %s", dropped)
        else:
            logger.info("ZeusMonitor reset with no active windows to drop.")

    def close(self):
        """Stops the monitor (NVML closed, RAPL thread stopped); later calls fail.
        Idempotent."""
        with self._lock:
            h, self._handle = self._handle, None
            log, self._log = self._log, None
        if h is not None:
            _lib.monitor_free(h)
        if log is not None:
            log.close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None and not sys.is_finalizing():
            self.close()


__all__ = ["Measurement", "ZeusMonitor"]
