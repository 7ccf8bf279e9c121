"""zbso.device.gpu: the visible GPUs through libzbso's zbso_gpus_* (Zeus's zeus.device.gpu
without the setters: zbso never changes a GPU setting). GPU indices are CUDA indices:
CUDA_VISIBLE_DEVICES is honoured."""

import ctypes
import sys
import threading

from zbso import _lib
from zbso.device.exception import ZeusBaseGPUError


class ZeusGPUInitError(ZeusBaseGPUError):
    """NVML cannot be loaded or initialised, or CUDA_VISIBLE_DEVICES is bad."""


class ZeusGPUInvalidArgError(ZeusBaseGPUError):
    """A GPU index out of range."""


class ZeusGPUNotSupportedError(ZeusBaseGPUError):
    """The GPU cannot answer this query (no energy counter before Volta)."""


class ZeusGPUHeterogeneousError(ZeusBaseGPUError):
    """The GPUs are not all of one model, and one model was required."""


class ZeusGPUUnknownError(ZeusBaseGPUError):
    """NVML failed (the message names the GPU, the call and NVML's error)."""


_BY_CODE = {_lib.EINVAL: ZeusGPUInvalidArgError, _lib.EBADOP: ZeusGPUNotSupportedError,
            _lib.ECONFIG: ZeusGPUInitError}


class GPUs:
    """The visible GPUs (Zeus's GPUs, read-only). ensure_homogeneous: raise
    ZeusGPUHeterogeneousError unless every GPU has the same model name."""

    def __init__(self, ensure_homogeneous=False):
        self._lock = threading.Lock()
        self._handle = None
        handle = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_lib.ERRBUF_MAX)
        rc = _lib.gpus_open(ctypes.byref(handle), err, len(err))
        if rc != 0:
            raise _BY_CODE.get(rc, ZeusGPUUnknownError)(_lib.text(err.value))
        self._handle = handle
        if ensure_homogeneous:
            self.ensure_homogeneous()

    def _check(self, rc):
        if rc != 0:
            cls = _BY_CODE.get(rc, ZeusGPUUnknownError)
            raise cls(_lib.text(_lib.gpus_errmsg(self._handle)))

    def _index(self, gpu_index):
        if isinstance(gpu_index, bool) or not isinstance(gpu_index, int) or gpu_index < 0:
            raise ZeusGPUInvalidArgError(f"GPU index must be an int >= 0, got {gpu_index!r}")
        return gpu_index

    def __len__(self):
        return int(_lib.gpus_count(self._handle))

    def ensure_homogeneous(self):
        """Raises ZeusGPUHeterogeneousError naming the models unless all are one."""
        names = {self.get_name(i) for i in range(len(self))}
        if len(names) > 1:
            raise ZeusGPUHeterogeneousError(
                f"the GPUs are of different models: {', '.join(sorted(names))}")

    def get_name(self, gpu_index):
        """The model name, e.g. "NVIDIA H200"."""
        buf = ctypes.create_string_buffer(256)
        with self._lock:
            self._check(_lib.gpus_name(self._handle, self._index(gpu_index), buf, len(buf)))
        return _lib.text(buf.value)

    def get_power_management_limit_constraints(self, gpu_index):
        """(minimum, maximum) power limit in mW."""
        lo, hi = ctypes.c_uint(), ctypes.c_uint()
        with self._lock:
            self._check(_lib.gpus_power_limit_constraints_mw(
                self._handle, self._index(gpu_index), ctypes.byref(lo), ctypes.byref(hi)))
        return int(lo.value), int(hi.value)

    def get_instant_power_usage(self, gpu_index):
        """The power draw now, in mW."""
        mw = ctypes.c_uint()
        with self._lock:
            self._check(_lib.gpus_power_mw(self._handle, self._index(gpu_index),
                                           ctypes.byref(mw)))
        return int(mw.value)

    def supports_get_total_energy_consumption(self, gpu_index):
        """True when the GPU has NVML's total energy counter (Volta and later)."""
        mj = ctypes.c_ulonglong()
        with self._lock:
            rc = _lib.gpus_energy_mj(self._handle, self._index(gpu_index), ctypes.byref(mj))
        if rc == _lib.EBADOP:
            return False
        self._check(rc)
        return True

    def get_total_energy_consumption(self, gpu_index):
        """NVML's total energy counter, in mJ. ZeusGPUNotSupportedError without one."""
        mj = ctypes.c_ulonglong()
        with self._lock:
            self._check(_lib.gpus_energy_mj(self._handle, self._index(gpu_index),
                                            ctypes.byref(mj)))
        return int(mj.value)

    def close(self):
        """Closes NVML; later calls fail. Idempotent."""
        with self._lock:
            h, self._handle = self._handle, None
        if h is not None:
            _lib.gpus_free(h)

    def __del__(self):
        if getattr(self, "_handle", None) is not None and not sys.is_finalizing():
            self.close()


_gpus = None
_gpus_lock = threading.Lock()


def get_gpus(ensure_homogeneous=False):
    """The visible GPUs, one object per process (as Zeus's singleton). ZeusGPUInitError
    when NVML cannot be loaded; ZeusGPUHeterogeneousError with ensure_homogeneous when the
    models differ (checked on every call that asks, not only the first)."""
    global _gpus
    with _gpus_lock:
        if _gpus is None:
            _gpus = GPUs()
        gpus = _gpus
    if ensure_homogeneous:
        gpus.ensure_homogeneous()
    return gpus


__all__ = ["get_gpus", "GPUs", "ZeusGPUInitError", "ZeusGPUInvalidArgError",
           "ZeusGPUNotSupportedError", "ZeusGPUHeterogeneousError", "ZeusGPUUnknownError"]
