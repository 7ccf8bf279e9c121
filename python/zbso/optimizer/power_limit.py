"""zbso.optimizer.power_limit: Zeus's power-limit optimizer (zeus.optimizer.power_limit)
over libzbso's zbso_power_optimizer_* (SPEC §6.1): the state machine, the limits set and put
back, and the job's profile per batch size on the server are in C; this file converts.

    from zbso.optimizer.power_limit import GlobalPowerLimitOptimizer, ZeusCost

GlobalPowerLimitOptimizer(monitor, optimum_selector=None, wait_steps=1, warmup_steps=10,
profile_steps=40, pl_step=25, profile_path=None) works as Zeus's: call on_step_begin()
before each training step and on_epoch_end() after each epoch (or put it in a CallbackSet).
Beyond Zeus: observer mode by $ZBSO_POWER_LIMIT=observe (measure, set nothing), and the
job's profile of the batch size on the server: under `zbso run` the environment names the
job, else assign a BatchSizeOptimizer to the optimizer's batch_size_optimizer."""

import atexit
import ctypes
import sys
import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass

from zbso import _lib
from zbso.callback import Callback

_vp = ctypes.c_void_p
# The error buffer is a c_void_p: written through its address.
_BEGIN = ctypes.CFUNCTYPE(ctypes.c_int, _vp, ctypes.c_char_p, _vp, ctypes.c_size_t)
_END = ctypes.CFUNCTYPE(ctypes.c_int, _vp, ctypes.c_char_p, ctypes.c_int,
                        ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double),
                        _vp, ctypes.c_size_t)


def _put(buf, cap, text):
    """Writes text, cut to cap bytes with its NUL, into the C buffer at address buf."""
    if not buf or cap == 0:
        return
    data = text.encode("utf-8", "replace")[:cap - 1] + b"\0"
    ctypes.memmove(buf, data, len(data))


class _WindowOps(ctypes.Structure):
    """struct zbso_power_window_ops."""
    _fields_ = [("arg", _vp), ("begin", _BEGIN), ("end", _END)]


class _Options(ctypes.Structure):
    """struct zbso_power_options."""
    _fields_ = [
        ("gpu_indices", ctypes.POINTER(ctypes.c_int)),
        ("n_gpus", ctypes.c_size_t),
        ("selector", ctypes.c_int),
        ("eta_knob", ctypes.c_double),
        ("world_size", ctypes.c_int64),
        ("max_slowdown_factor", ctypes.c_double),
        ("wait_steps", ctypes.c_int64),
        ("warmup_steps", ctypes.c_int64),
        ("profile_steps", ctypes.c_int64),
        ("pl_step_w", ctypes.c_int64),
        ("profile_path", ctypes.c_char_p),
        ("mode", ctypes.c_int),
        ("ops", ctypes.POINTER(_WindowOps)),
        ("monitor", _vp),
        ("client", _vp),
        ("use_env", ctypes.c_int),
    ]


_p = _lib._proto
_options_init = _p("zbso_power_options_init", None, ctypes.POINTER(_Options))
_new = _p("zbso_power_optimizer_new", ctypes.c_int, ctypes.POINTER(_Options),
          ctypes.POINTER(_vp), ctypes.c_char_p, ctypes.c_size_t)
_free = _p("zbso_power_optimizer_free", None, _vp)
_close = _p("zbso_power_optimizer_close", ctypes.c_int, _vp)
_errmsg = _p("zbso_power_optimizer_errmsg", ctypes.c_char_p, _vp)
_step_begin = _p("zbso_power_optimizer_on_step_begin", ctypes.c_int, _vp)
_epoch_end = _p("zbso_power_optimizer_on_epoch_end", ctypes.c_int, _vp)
_state = _p("zbso_power_optimizer_state", ctypes.c_int, _vp)
_limit_mw = _p("zbso_power_optimizer_limit_mw", ctypes.c_int64, _vp)
_optimal_mw = _p("zbso_power_optimizer_optimal_mw", ctypes.c_int64, _vp)
_source = _p("zbso_power_optimizer_source", ctypes.c_char_p, _vp)
_measurements = _p("zbso_power_optimizer_measurements", ctypes.c_size_t, _vp,
                   ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_double),
                   ctypes.POINTER(ctypes.c_double), ctypes.c_size_t)
_steps = _p("zbso_power_optimizer_steps", ctypes.c_int64, _vp)
_profiling_steps = _p("zbso_power_optimizer_profiling_steps", ctypes.c_int64, _vp)
_accounted = _p("zbso_power_optimizer_accounted", None, _vp, ctypes.POINTER(ctypes.c_int64),
                ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double))
_actuator = _p("zbso_power_optimizer_actuator", ctypes.c_char_p, _vp)
_set_count = _p("zbso_power_optimizer_set_count", ctypes.c_ulong, _vp)
_set_client = _p("zbso_power_optimizer_set_client", ctypes.c_int, _vp, _vp)

# enum zbso_power_selector and enum zbso_power_mode (include/zbso/zbso.h)
_ZEUS_COST, _ENERGY, _TIME, _MAX_SLOWDOWN = 0, 1, 2, 3
_STATES = ("Ready", "Warmup", "Profiling", "Done")


def _error(code, message):
    """Zeus's exceptions: ValueError for a bad value, RuntimeError for the rest (no
    privilege to set a limit included, as Zeus raises it)."""
    return (ValueError if code == _lib.EINVAL else RuntimeError)(message)


@dataclass
class PowerLimitMeasurement:
    """One power limit's profile: power_limit in W, energy (J) and time (s) of the
    profile_steps steps measured at it (Zeus's PowerLimitMeasurement)."""
    power_limit: int
    energy: float
    time: float


class OptimumSelector(ABC):
    """Base class of optimum power limit selectors. libzbso chooses with the four below
    (one function, opt_pl_select, shared with zbso run and zbso simulate); select() gives
    the same answer in Python."""

    @abstractmethod
    def select(self, measurements):
        """The optimal power limit (W) among measurements (PowerLimitMeasurement)."""

    def _c(self):
        raise ValueError(f"{type(self).__name__} is not one of the selectors libzbso runs "
                         "(Energy, Time, ZeusCost, MaxSlowdownConstraint)")


class Energy(OptimumSelector):
    """Selects the power limit that minimizes energy consumption."""

    def select(self, measurements):
        return min(measurements, key=lambda x: x.energy).power_limit

    def _c(self):
        return _ENERGY, 0.5, 0, 1.0


class Time(OptimumSelector):
    """Selects the power limit that minimizes training time."""

    def select(self, measurements):
        return min(measurements, key=lambda x: x.time).power_limit

    def _c(self):
        return _TIME, 0.5, 0, 1.0


class ZeusCost(OptimumSelector):
    """Selects the power limit that minimizes eta * Energy + (1 - eta) * MaxPower * Time,
    MaxPower being the highest limit profiled (W) times world_size."""

    def __init__(self, eta_knob, world_size=1):
        if eta_knob < 0 or eta_knob > 1:
            raise ValueError("eta_knob must be between 0 and 1, inclusive both sides.")
        if world_size < 1:
            raise ValueError("world_size must be greater than or equal to 1.")
        self.eta_knob = eta_knob
        self.world_size = world_size

    def select(self, measurements):
        max_power = max(m.power_limit for m in measurements) * self.world_size
        cost = {m.power_limit: self.eta_knob * m.energy + (1 - self.eta_knob) * max_power * m.time
                for m in measurements}
        return min(cost, key=lambda x: cost[x])

    def _c(self):
        return _ZEUS_COST, float(self.eta_knob), int(self.world_size), 1.0


class MaxSlowdownConstraint(OptimumSelector):
    """Selects the lowest power limit whose time is at most factor times the time of the
    highest power limit."""

    def __init__(self, factor):
        if factor < 1.0:
            raise ValueError(
                f"max_slowdown_factor must be greater than or equal to 1.0. Got {factor}.")
        self.factor = factor

    def select(self, measurements):
        max_power = max(m.power_limit for m in measurements)
        shortest = next(m.time for m in measurements if m.power_limit == max_power)
        return min(m.power_limit for m in measurements if m.time <= self.factor * shortest)

    def _c(self):
        return _MAX_SLOWDOWN, 0.5, 0, float(self.factor)


def _all_reduce(values, op):
    """Zeus's all_reduce in data-parallel training (torch.distributed initialised by the
    script, which imported torch); the values as they are otherwise."""
    torch = sys.modules.get("torch")
    dist = getattr(torch, "distributed", None) if torch else None
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return values
    t = torch.tensor(values, dtype=torch.float64,
                     device="cuda" if torch.cuda.is_available() else "cpu")
    dist.all_reduce(t, op=dist.ReduceOp.SUM if op == "sum" else dist.ReduceOp.MAX)
    return t.cpu().tolist()


_live = weakref.WeakSet()


@atexit.register
def _close_all():
    # Interpreter exit (normal, sys.exit, an uncaught exception): put the limits back before
    # the modules go away; libzbso's own atexit does it again for anything left.
    for plo in list(_live):
        plo.close()


class GlobalPowerLimitOptimizer(Callback):
    """Optimizer for the power limit knob (Zeus's GlobalPowerLimitOptimizer).

    The GPUs are the monitor's (monitor.gpu_indices). Profiles each power limit from the
    highest down by pl_step W: wait_steps steps first, then per limit warmup_steps steps and
    profile_steps measured; the optimum_selector (default ZeusCost(0.5, number of GPUs))
    chooses, and that limit stays. profile_path: an existing profile file skips profiling,
    a new one receives the profile. The GPUs' limits are put back when the process exits
    (also on SIGTERM, SIGINT, SIGHUP and uncaught exceptions) or on close().

    Beyond Zeus: $ZBSO_POWER_LIMIT=observe (observer mode) sets nothing and profiles at the
    current limit, =max trains at the highest limit; batch_size_optimizer may be assigned a
    BatchSizeOptimizer: its job keeps this run's profile for its batch size on the server,
    and a later run of that batch size uses it without profiling (under `zbso run` the
    environment names the job already). Setting a limit needs CAP_SYS_ADMIN or a zeusd
    daemon (ZEUSD_SOCK_PATH or ZEUSD_HOST_PORT); without either, RuntimeError."""

    def __init__(self, monitor, optimum_selector=None, wait_steps=1, warmup_steps=10,
                 profile_steps=40, pl_step=25, profile_path=None):
        self._handle = None
        if wait_steps < 0:
            raise ValueError("wait_steps must be non-negative.")
        if warmup_steps < 0:
            raise ValueError("warmup_steps must be non-negative.")
        if profile_steps <= 0:
            raise ValueError("profile_steps must be positive.")
        if pl_step <= 0:
            raise ValueError("pl_step must be positive.")
        self.monitor = monitor
        self.gpu_indices = list(monitor.gpu_indices)
        self.optimum_selector = optimum_selector or ZeusCost(
            eta_knob=0.5, world_size=len(self.gpu_indices))
        self.warmup_steps = warmup_steps
        self.profile_steps = profile_steps
        self.pl_step = pl_step * 1000  # mW, as Zeus keeps it
        self.profile_path = profile_path
        self._bso = None
        self._pending = None  # an exception raised inside a window callback
        kind, eta, world, factor = self.optimum_selector._c()

        o = _Options()
        _options_init(ctypes.byref(o))
        self._indices = (ctypes.c_int * len(self.gpu_indices))(*self.gpu_indices)
        o.gpu_indices = self._indices
        o.n_gpus = len(self.gpu_indices)
        o.selector, o.eta_knob, o.world_size, o.max_slowdown_factor = kind, eta, world, factor
        o.wait_steps, o.warmup_steps = int(wait_steps), int(warmup_steps)
        o.profile_steps, o.pl_step_w = int(profile_steps), int(pl_step)
        self._path = str(profile_path).encode() if profile_path is not None else None
        o.profile_path = self._path
        # The window callbacks must live as long as the C optimizer.
        self._ops = _WindowOps(None, _BEGIN(self._begin), _END(self._end))
        o.ops = ctypes.pointer(self._ops)
        handle = _vp()
        err = ctypes.create_string_buffer(_lib.ERRBUF_MAX)
        rc = _new(ctypes.byref(o), ctypes.byref(handle), err, len(err))
        self._raise_pending()
        if rc != 0:
            raise _error(rc, _lib.text(err.value))
        self._handle = handle
        _live.add(self)

    # ---- the monitor, called from C at window edges ----

    def _begin(self, arg, name, errbuf, errlen):
        try:
            self.monitor.begin_window(name.decode())
            return 0
        except BaseException as e:  # re-raised by the hook that called into C
            self._pending = e
            _put(errbuf, errlen, str(e))
            return _lib.ERUNTIME

    def _end(self, arg, name, cancel, time_s, energy_j, errbuf, errlen):
        try:
            m = self.monitor.end_window(name.decode(), cancel=bool(cancel))
            if not cancel:
                energy = sum(_all_reduce(list(m.gpu_energy.values()), "sum"))
                time_s[0] = max(_all_reduce([m.time], "max"))
                energy_j[0] = energy
            return 0
        except BaseException as e:
            self._pending = e
            _put(errbuf, errlen, str(e))
            return _lib.ERUNTIME

    def _raise_pending(self):
        if self._pending is not None:
            e, self._pending = self._pending, None
            raise e

    def _check(self, rc):
        self._raise_pending()
        if rc != 0:
            raise _error(rc, _lib.text(_errmsg(self._handle)))

    def _live_handle(self):
        if self._handle is None:
            raise RuntimeError("the power-limit optimizer is closed")
        return self._handle

    # ---- Zeus's callbacks ----

    def on_step_begin(self):
        """Mark the beginning of a training step."""
        self._check(_step_begin(self._live_handle()))

    def on_epoch_end(self):
        """Mark the end of a training epoch."""
        self._check(_epoch_end(self._live_handle()))

    def close(self):
        """Puts the GPUs' original power limits back now; later steps set nothing."""
        h, self._handle = self._handle, None
        if h is None:
            return
        _live.discard(self)
        rc = _close(h)
        msg = _lib.text(_errmsg(h))
        _free(h)
        if rc != 0:
            raise _error(rc, msg)

    def __del__(self):
        h = getattr(self, "_handle", None)
        if h is not None and not sys.is_finalizing():
            self._handle = None
            _free(h)

    @property
    def batch_size_optimizer(self):
        """The BatchSizeOptimizer whose job keeps the profile of its batch size (None)."""
        return self._bso

    @batch_size_optimizer.setter
    def batch_size_optimizer(self, bso):
        client = getattr(bso, "_handle", None)
        if client is None:
            raise ValueError("batch_size_optimizer must be an open zbso BatchSizeOptimizer")
        self._check(_set_client(self._live_handle(), client))
        self._bso = bso  # the C client must outlive this optimizer's use of it

    # ---- what it did ----

    @property
    def state(self):
        """"Ready", "Warmup", "Profiling" or "Done" (Zeus's state classes' names)."""
        return _STATES[_state(self._live_handle())]

    @property
    def current_power_limit(self):
        """The limit (mW) set last (in observer mode: the one that would be)."""
        return int(_limit_mw(self._live_handle()))

    @property
    def optimal_power_limit(self):
        """The chosen limit (mW), or None before profiling is done."""
        v = int(_optimal_mw(self._live_handle()))
        return v or None

    @property
    def source(self):
        """Where the choice came from: "profiling", "server", "file" or "max"."""
        return _lib.text(_source(self._live_handle()))

    @property
    def measurements(self):
        """PowerLimitMeasurement per limit profiled, in profiling order: energy and time of
        profile_steps steps, as Zeus keeps them."""
        h = self._live_handle()
        n = _measurements(h, None, None, None, 0)
        pl, t, e = (ctypes.c_int64 * n)(), (ctypes.c_double * n)(), (ctypes.c_double * n)()
        _measurements(h, pl, t, e, n)
        k = self.profile_steps
        return [PowerLimitMeasurement(int(pl[i]), e[i] * k, t[i] * k) for i in range(n)]

    @property
    def profiling_steps(self):
        """Steps spent profiling (0 when a stored profile was used)."""
        return int(_profiling_steps(self._live_handle()))

    @property
    def steps(self):
        """Steps begun since the optimizer was created."""
        return int(_steps(self._live_handle()))

    @property
    def accounted(self):
        """(steps, time s, energy J) since profiling ended, as if every step had run at the
        chosen limit (observer mode's accounting)."""
        n, t, e = ctypes.c_int64(), ctypes.c_double(), ctypes.c_double()
        _accounted(self._live_handle(), ctypes.byref(n), ctypes.byref(t), ctypes.byref(e))
        return int(n.value), t.value, e.value

    @property
    def actuator(self):
        """How limits are set: "NVML", "zeusd at ...", "observer mode (nothing is set)"."""
        return _lib.text(_actuator(self._live_handle()))

    @property
    def set_count(self):
        """Limit changes made on the GPUs (each GPU counts)."""
        return int(_set_count(self._live_handle()))


try:
    from transformers.trainer_callback import TrainerCallback

    transformers_available = True
except ImportError:
    transformers_available = False
    TrainerCallback = object


class HFGlobalPowerLimitOptimizer(TrainerCallback):
    """GlobalPowerLimitOptimizer as a Hugging Face TrainerCallback (Zeus's
    HFGlobalPowerLimitOptimizer); ImportError without transformers."""

    def __init__(self, monitor, optimum_selector=None, wait_steps=1, warmup_steps=10,
                 profile_steps=40, pl_step=25, profile_path=None):
        if not transformers_available:
            raise ImportError("The transformers package is not installed. Please install it "
                              "to use the HFGlobalPowerLimitOptimizer.")
        self.optimizer = GlobalPowerLimitOptimizer(
            monitor=monitor, optimum_selector=optimum_selector, wait_steps=wait_steps,
            warmup_steps=warmup_steps, profile_steps=profile_steps, pl_step=pl_step,
            profile_path=profile_path)

    def on_epoch_end(self, args, state, control, **kwargs):
        """Mark the end of a training epoch."""
        self.optimizer.on_epoch_end()

    def on_step_begin(self, args, state, control, **kwargs):
        """Mark the beginning of a training step."""
        self.optimizer.on_step_begin()


__all__ = [
    "GlobalPowerLimitOptimizer", "HFGlobalPowerLimitOptimizer", "OptimumSelector", "Energy",
    "Time", "ZeusCost", "MaxSlowdownConstraint", "PowerLimitMeasurement",
]
