"""ZeusMonitor over libzbso's energy monitor (zbso_monitor_*): named measurement windows
giving time and per-GPU energy. The measuring is done in C; this only converts."""

import ctypes
import sys
import threading
from dataclasses import dataclass, field

from zbso import _lib
from zbso.optimizer.batch_size.exceptions import error_for


@dataclass
class Measurement:
    """One window: wall time (s), energy per GPU index (J) and their sum (J)."""

    time: float
    gpu_energy: dict = field(default_factory=dict)
    total_energy: float = 0.0


class ZeusMonitor:
    """Measures the time and GPU energy of named windows, as zeus.monitor.ZeusMonitor.

    gpu_indices: CUDA device indices to measure (with CUDA_VISIBLE_DEVICES set, index i is
    the i-th listed device); None means every visible GPU. Windows of different names may
    overlap. Raises ZeusBSOConfigError when NVML cannot be loaded, no GPU is found, or the
    GPUs are of different models. Zeus's other keyword arguments are accepted and ignored
    (there is no CPU/DRAM measurement and no framework to synchronize with)."""

    def __init__(self, gpu_indices=None, approx_instant_energy=False, log_file=None,
                 sync_execution_with="torch", **_ignored):
        self._lock = threading.Lock()
        self._handle = None
        self._users = 0  # BatchSizeOptimizers whose C client refers to this monitor
        if gpu_indices is None:
            arr, n = None, 0
        else:
            gpu_indices = [int(i) for i in gpu_indices]
            if not gpu_indices:
                raise error_for(_lib.ECONFIG, "gpu_indices is empty")
            arr, n = (ctypes.c_int * len(gpu_indices))(*gpu_indices), len(gpu_indices)
        handle = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_lib.ERRBUF_MAX)
        rc = _lib.monitor_new(arr, n, ctypes.byref(handle), err, len(err))
        if rc != 0:
            raise error_for(rc, _lib.text(err.value))
        self._handle = handle
        count = _lib.monitor_gpu_count(handle)
        # CUDA indices of the visible devices are 0..count-1 whatever CUDA_VISIBLE_DEVICES
        # lists, so "every visible GPU" is range(count).
        self.gpu_indices = list(range(count)) if gpu_indices is None else list(gpu_indices)
        self.gpu_model = _lib.text(_lib.monitor_gpu_model(handle))
        self.max_power_limit_mw = int(_lib.monitor_max_power_limit_mw(handle))

    def _live(self):
        if self._handle is None:
            raise error_for(_lib.EBADOP, "the monitor is closed")
        return self._handle

    def _check(self, rc):
        if rc != 0:
            raise error_for(rc, _lib.text(_lib.monitor_errmsg(self._handle)))

    def _name(self, key):
        if not isinstance(key, str):
            raise TypeError(f"window key must be a str, not {type(key).__name__}")
        return key.encode("utf-8")

    def begin_window(self, key, sync_execution=True):
        """Opens window key. ZeusBSOBadOperationError if a window of that name is open."""
        name = self._name(key)
        with self._lock:
            self._check(_lib.monitor_begin_window(self._live(), name))

    def end_window(self, key, sync_execution=True, cancel=False):
        """Closes window key and returns its Measurement (None when cancel is true).
        ZeusBSOBadOperationError for a name that is not open; ZeusBSORuntimError when a
        GPU could not be read during the window."""
        name = self._name(key)
        m = _lib.Measurement_C()
        with self._lock:
            self._check(_lib.monitor_end_window(self._live(), name, ctypes.byref(m)))
        if cancel:
            return None
        n = min(m.n_gpus, _lib.MAX_GPUS)
        energy = {int(m.gpu_indices[i]): float(m.gpu_energy_j[i]) for i in range(n)}
        return Measurement(time=float(m.time_s), gpu_energy=energy,
                           total_energy=float(m.total_energy_j))

    @property
    def handle(self):
        """The zbso_monitor pointer (ctypes.c_void_p), for the C client."""
        return self._handle

    def close(self):
        """Stops the monitor and closes NVML; later calls fail. Idempotent.
        ZeusBSOBadOperationError while a BatchSizeOptimizer still uses it."""
        if self._users:
            raise error_for(_lib.EBADOP, f"the monitor is used by {self._users} "
                            "BatchSizeOptimizer(s); drop them first")
        with self._lock:
            h, self._handle = self._handle, None
        if h is not None:
            _lib.monitor_free(h)

    def __del__(self):
        # At interpreter exit objects die in no useful order, and a client may still
        # refer to this monitor from C: let the process end reclaim it.
        if getattr(self, "_handle", None) is not None and not sys.is_finalizing():
            self.close()
