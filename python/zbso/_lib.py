"""_lib.py: finds and loads libzbso.so and declares the C prototypes of include/zbso/zbso.h.

Nothing here has Zeus semantics; the public classes live in zbso.monitor and
zbso.optimizer.batch_size. Standard library only (ctypes)."""

import ctypes
import ctypes.util
import glob
import os

LIBRARY_ENV = "ZBSO_LIBRARY"
_LIB_NAME = "libzbso.so"

ERRBUF_MAX = 512  # ZBSO_ERRBUF_MAX
MAX_GPUS = 64     # ZBSO_MAX_GPUS

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


def _candidates():
    """Where to look for libzbso.so, in order: (description, path or None)."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    env = os.environ.get(LIBRARY_ENV)
    if env:
        out.append((f"${LIBRARY_ENV}", env))
        return out  # an explicit choice is never silently replaced by another library
    out.append(("next to the package", os.path.join(here, _LIB_NAME)))
    out.append(("next to the package", os.path.join(os.path.dirname(here), _LIB_NAME)))
    # A source checkout: python/zbso/ sits two levels under the repository root, whose
    # build directories (build, build-*) hold src/client/libzbso.so.
    repo = os.path.dirname(os.path.dirname(here))
    for path in sorted(glob.glob(os.path.join(repo, "build*", "src", "client", _LIB_NAME))):
        out.append(("a build directory of the checkout", path))
    return out


def _load():
    tried = []
    for what, path in _candidates():
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


def _proto(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


_c_int_p = ctypes.POINTER(ctypes.c_int)
_vp = ctypes.c_void_p

strerror = _proto("zbso_strerror", ctypes.c_char_p, ctypes.c_int)

monitor_new = _proto("zbso_monitor_new", ctypes.c_int, _c_int_p, ctypes.c_size_t,
                     ctypes.POINTER(_vp), ctypes.c_char_p, ctypes.c_size_t)
monitor_free = _proto("zbso_monitor_free", None, _vp)
monitor_errmsg = _proto("zbso_monitor_errmsg", ctypes.c_char_p, _vp)
monitor_begin_window = _proto("zbso_monitor_begin_window", ctypes.c_int, _vp, ctypes.c_char_p)
monitor_end_window = _proto("zbso_monitor_end_window", ctypes.c_int, _vp, ctypes.c_char_p,
                            ctypes.POINTER(Measurement_C))
monitor_gpu_count = _proto("zbso_monitor_gpu_count", ctypes.c_uint, _vp)
monitor_gpu_model = _proto("zbso_monitor_gpu_model", ctypes.c_char_p, _vp)
monitor_max_power_limit_mw = _proto("zbso_monitor_max_power_limit_mw", ctypes.c_uint, _vp)


def text(b):
    """A C string (bytes or None) as str."""
    return b.decode("utf-8", "replace") if b else ""


def code_name(code):
    return text(strerror(code))

client_new = _proto("zbso_client_new", ctypes.c_int, _vp, ctypes.c_char_p, ctypes.c_char_p,
                    ctypes.c_int, ctypes.POINTER(_vp), ctypes.c_char_p, ctypes.c_size_t)
client_free = _proto("zbso_client_free", None, _vp)
client_errmsg = _proto("zbso_client_errmsg", ctypes.c_char_p, _vp)
client_set_retry_timeout = _proto("zbso_client_set_retry_timeout", ctypes.c_int, _vp,
                                  ctypes.c_double)
client_job_id = _proto("zbso_client_job_id", ctypes.c_char_p, _vp)
client_job_json = _proto("zbso_client_job_json", ctypes.c_char_p, _vp)
client_get_batch_size = _proto("zbso_client_get_batch_size", ctypes.c_int, _vp,
                               ctypes.POINTER(ctypes.c_int64))
client_trial_number = _proto("zbso_client_trial_number", ctypes.c_int64, _vp)
client_on_train_begin = _proto("zbso_client_on_train_begin", ctypes.c_int, _vp)
client_on_evaluate = _proto("zbso_client_on_evaluate", ctypes.c_int, _vp, ctypes.c_double)
client_training_finished = _proto("zbso_client_training_finished", ctypes.c_int, _vp)
