"""_lib.py: loads libzbso.so (the search order of zbso._find) and declares the C prototypes
of include/zbso/zbso.h.

Nothing here has Zeus semantics; the public classes live in zbso.monitor, zbso.device and
zbso.optimizer.batch_size. Standard library only (ctypes)."""

import atexit
import ctypes
import ctypes.util
import logging
import os

from zbso import _find

LIBRARY_ENV = _find.LIBRARY_ENV

ERRBUF_MAX = 512  # ZBSO_ERRBUF_MAX
MAX_GPUS = 64     # ZBSO_MAX_GPUS
MAX_CPUS = 32     # ZBSO_MAX_CPUS
MONITOR_ALL = -1  # ZBSO_MONITOR_ALL
MONITOR_APPROX_INSTANT_ENERGY = 0x1  # ZBSO_MONITOR_APPROX_INSTANT_ENERGY

# enum zbso_error (include/zbso/zbso.h)
OK = 0
EINVAL = -1
ENOTFOUND = -2
ECONFLICT = -3
ENOMEM = -4
ESTORE = -5
EUNAVAIL = -6
EAUTH = -7
ETOOBIG = -8
ENOCONV = -9
ESCHEMA = -10
EMETHOD = -11
EIO = -12
EINTERNAL = -13
ECONFIG = -14
EORDER = -15
EBADOP = -16
ERUNTIME = -17
ETRAINFAIL = -18
EPERM = -19
EFORBIDDEN = -20


def _load():
    """Loads libzbso.so from the first place of _find's search order that has one."""
    tried = []
    for what, path, skipped in _find.candidates():
        if skipped:
            tried.append(f"{path} ({what}: skipped, {skipped}; set {LIBRARY_ENV} to use it)")
            continue
        if not os.path.exists(path):
            tried.append(f"{path} ({what}: no such file)")
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({what}: {e})")
    if os.environ.get(LIBRARY_ENV):
        raise ImportError("zbso: cannot load libzbso: " + "; ".join(tried))
    name = ctypes.util.find_library("zbso")
    if name:
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            tried.append(f"{name} (ctypes.util.find_library: {e})")
    else:
        tried.append("ctypes.util.find_library('zbso') found nothing")
    raise ImportError(
        "zbso: cannot find libzbso.so; looked at: " + "; ".join(tried)
        + f". Build it (ninja zbso_shared) and set {LIBRARY_ENV}=/path/to/libzbso.so")


lib = _load()


class Measurement_C(ctypes.Structure):
    """struct zbso_measurement."""
    _fields_ = [
        ("time_s", ctypes.c_double),
        ("total_energy_j", ctypes.c_double),
        ("n_gpus", ctypes.c_uint),
        ("gpu_indices", ctypes.c_int * MAX_GPUS),
        ("gpu_energy_j", ctypes.c_double * MAX_GPUS),
    ]


class CpuMeasurement_C(ctypes.Structure):
    """struct zbso_cpu_measurement."""
    _fields_ = [
        ("n_cpus", ctypes.c_uint),
        ("cpu_indices", ctypes.c_int * MAX_CPUS),
        ("cpu_energy_j", ctypes.c_double * MAX_CPUS),
        ("has_dram", ctypes.c_int * MAX_CPUS),
        ("dram_energy_j", ctypes.c_double * MAX_CPUS),
    ]


# zbso_window_ops' functions
WindowBegin = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                               ctypes.POINTER(ctypes.c_char), ctypes.c_size_t)
WindowEnd = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                             ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double),
                             ctypes.POINTER(ctypes.c_char), ctypes.c_size_t)


class WindowOps_C(ctypes.Structure):
    """struct zbso_window_ops."""
    _fields_ = [("arg", ctypes.c_void_p), ("begin", WindowBegin), ("end", WindowEnd)]


def _proto(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


_c_int_p = ctypes.POINTER(ctypes.c_int)
_vp = ctypes.c_void_p

strerror = _proto("zbso_strerror", ctypes.c_char_p, ctypes.c_int)

monitor_open = _proto("zbso_monitor_open", ctypes.c_int, _c_int_p, ctypes.c_int, _c_int_p,
                      ctypes.c_int, ctypes.c_uint, ctypes.POINTER(_vp), ctypes.c_char_p,
                      ctypes.c_size_t)
monitor_free = _proto("zbso_monitor_free", None, _vp)
monitor_errmsg = _proto("zbso_monitor_errmsg", ctypes.c_char_p, _vp)
monitor_begin_window = _proto("zbso_monitor_begin_window", ctypes.c_int, _vp, ctypes.c_char_p)
monitor_end_window_cpu = _proto("zbso_monitor_end_window_cpu", ctypes.c_int, _vp,
                                ctypes.c_char_p, ctypes.POINTER(Measurement_C),
                                ctypes.POINTER(CpuMeasurement_C))
monitor_cancel_window = _proto("zbso_monitor_cancel_window", ctypes.c_int, _vp, ctypes.c_char_p)
monitor_reset_windows = _proto("zbso_monitor_reset_windows", ctypes.c_uint, _vp)
monitor_gpu_count = _proto("zbso_monitor_gpu_count", ctypes.c_uint, _vp)
monitor_gpu_model = _proto("zbso_monitor_gpu_model", ctypes.c_char_p, _vp)
monitor_max_power_limit_mw = _proto("zbso_monitor_max_power_limit_mw", ctypes.c_uint, _vp)
monitor_gpu_status = _proto("zbso_monitor_gpu_status", ctypes.c_char_p, _vp)
monitor_cpu_count = _proto("zbso_monitor_cpu_count", ctypes.c_uint, _vp)
monitor_cpu_index = _proto("zbso_monitor_cpu_index", ctypes.c_int, _vp, ctypes.c_uint)
monitor_cpu_has_dram = _proto("zbso_monitor_cpu_has_dram", ctypes.c_int, _vp, ctypes.c_uint)
monitor_cpu_status = _proto("zbso_monitor_cpu_status", ctypes.c_char_p, _vp)
monitor_cpu_energy = _proto("zbso_monitor_cpu_energy", ctypes.c_int, _vp,
                            ctypes.POINTER(CpuMeasurement_C))

gpus_open = _proto("zbso_gpus_open", ctypes.c_int, ctypes.POINTER(_vp), ctypes.c_char_p,
                   ctypes.c_size_t)
gpus_free = _proto("zbso_gpus_free", None, _vp)
gpus_errmsg = _proto("zbso_gpus_errmsg", ctypes.c_char_p, _vp)
gpus_count = _proto("zbso_gpus_count", ctypes.c_uint, _vp)
gpus_name = _proto("zbso_gpus_name", ctypes.c_int, _vp, ctypes.c_uint, ctypes.c_char_p,
                   ctypes.c_size_t)
gpus_power_limit_constraints_mw = _proto(
    "zbso_gpus_power_limit_constraints_mw", ctypes.c_int, _vp, ctypes.c_uint,
    ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint))
gpus_power_mw = _proto("zbso_gpus_power_mw", ctypes.c_int, _vp, ctypes.c_uint,
                       ctypes.POINTER(ctypes.c_uint))
gpus_energy_mj = _proto("zbso_gpus_energy_mj", ctypes.c_int, _vp, ctypes.c_uint,
                        ctypes.POINTER(ctypes.c_ulonglong))


# libzbso's own log lines go to the "zbso" logger, so that `logging` decides what is shown
# (the package's NullHandler: nothing, until the application configures logging).
# ZBSO_LOG_LEVEL, when set, still filters in C first.
LogFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)
log_set_handler = _proto("zbso_log_set_handler", None, LogFn, _vp)
log_set_level = _proto("zbso_log_set_level", ctypes.c_int, ctypes.c_int)
_logger = logging.getLogger("zbso")


def _forward_log(_arg, level, message):
    try:
        _logger.log(level, "%s", message.decode("utf-8", "replace"))
    except Exception:  # noqa: BLE001 - a callback from C must not raise
        pass


_log_fn = LogFn(_forward_log)
log_set_handler(_log_fn, None)
if not os.environ.get("ZBSO_LOG_LEVEL"):
    log_set_level(logging.DEBUG)


@atexit.register
def _log_to_stderr_again():
    """libzbso logs after the interpreter is gone (a trial ended at exit, C's atexit):
    those lines go to stderr, at WARNING unless ZBSO_LOG_LEVEL says otherwise."""
    log_set_handler(ctypes.cast(None, LogFn), None)
    if not os.environ.get("ZBSO_LOG_LEVEL"):
        log_set_level(logging.WARNING)


def text(b):
    """A C string (bytes or None) as str."""
    return b.decode("utf-8", "replace") if b else ""


def code_name(code):
    return text(strerror(code))


client_new_ops = _proto("zbso_client_new_ops", ctypes.c_int, ctypes.POINTER(WindowOps_C),
                        ctypes.c_uint, ctypes.c_uint, ctypes.c_char_p, ctypes.c_char_p,
                        ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(_vp), ctypes.c_char_p,
                        ctypes.c_size_t)
client_free = _proto("zbso_client_free", None, _vp)
client_errmsg = _proto("zbso_client_errmsg", ctypes.c_char_p, _vp)
client_set_retry_timeout = _proto("zbso_client_set_retry_timeout", ctypes.c_int, _vp,
                                  ctypes.c_double)
client_job_id = _proto("zbso_client_job_id", ctypes.c_char_p, _vp)
client_job_json = _proto("zbso_client_job_json", ctypes.c_char_p, _vp)
client_warning = _proto("zbso_client_warning", ctypes.c_char_p, _vp)
client_get_batch_size = _proto("zbso_client_get_batch_size", ctypes.c_int, _vp,
                               ctypes.POINTER(ctypes.c_int64))
client_spec_json = _proto("zbso_client_spec_json", ctypes.c_char_p, _vp)
client_trial_number = _proto("zbso_client_trial_number", ctypes.c_int64, _vp)
client_batch_size = _proto("zbso_client_batch_size", ctypes.c_int64, _vp)
client_set_batch_size = _proto("zbso_client_set_batch_size", ctypes.c_int, _vp,
                               ctypes.c_int64)
client_set_trial_number = _proto("zbso_client_set_trial_number", ctypes.c_int, _vp,
                                 ctypes.c_int64)
client_cur_epoch = _proto("zbso_client_cur_epoch", ctypes.c_int64, _vp)
client_running_time_s = _proto("zbso_client_running_time_s", ctypes.c_double, _vp)
client_consumed_energy_j = _proto("zbso_client_consumed_energy_j", ctypes.c_double, _vp)
client_on_train_begin = _proto("zbso_client_on_train_begin", ctypes.c_int, _vp)
client_on_evaluate = _proto("zbso_client_on_evaluate", ctypes.c_int, _vp, ctypes.c_double)
client_training_finished = _proto("zbso_client_training_finished", ctypes.c_int, _vp)
