"""BatchSizeOptimizer over libzbso's client (zbso_client_*): Zeus's
zeus.optimizer.batch_size.client.BatchSizeOptimizer, a zbso.callback.Callback. The HTTP,
the bookkeeping of the run and the end-of-trial report are done in C; the measuring is the
monitor's (the ZeusMonitor given, called back from C at the window edges, so a Zeus-style
mocked monitor works too). This file only converts arguments, results and errors."""

from __future__ import annotations

import ctypes
import logging
import sys
import warnings
import weakref

from zbso import _lib
from zbso.callback import Callback
from zbso.device.gpu import get_gpus
from zbso.optimizer.batch_size.common import CreatedJob, JobSpec, JobSpecFromClient
from zbso.optimizer.batch_size.exceptions import ZeusBSOConfigError, error_for

logger = logging.getLogger(__name__)


def _job_json(job):
    """The job spec as the JSON the C client reads: a JobSpec, or anything with .dict() (a
    pydantic JobSpec of Zeus's, a mock) checked as a JobSpec."""
    if isinstance(job, JobSpec):
        return job.json()
    as_dict = getattr(job, "dict", None)
    if not callable(as_dict):
        raise ZeusBSOConfigError(f"job must be a JobSpec, got {type(job).__name__}")
    try:
        return JobSpec.parse_obj(as_dict()).json()
    except ValueError as e:
        raise ZeusBSOConfigError(f"job is not a valid JobSpec: {e}") from None


def _write_msg(buf, cap, text):
    """Copies text (UTF-8, cut to fit) with its NUL into the C buffer buf of cap bytes;
    returns the bytes written, without the NUL."""
    if not cap:
        return b""
    data = text.encode("utf-8", "replace")[:cap - 1]
    ctypes.memmove(buf, data + b"\0", len(data) + 1)
    return data


def _window_ops(bso):
    """The zbso_window_ops calling bso.monitor's begin_window / end_window. An exception
    of the monitor is kept on bso with the text given to C, so that _check raises it when
    the C call fails with that text. Only a weak reference to bso is held."""
    ref = weakref.ref(bso)

    def failed(self, e, errbuf, cap):
        text = _write_msg(errbuf, cap, str(e) or type(e).__name__)
        if self is not None:
            self._pending = (e, text)
        return _lib.ERUNTIME

    def begin(_arg, name, errbuf, cap):
        self = ref()
        try:
            self.monitor.begin_window(name.decode("utf-8"))
            return 0
        except BaseException as e:  # noqa: B902 - handed back to the caller by _check
            return failed(self, e, errbuf, cap)

    def end(_arg, name, time_s, energy_j, errbuf, cap):
        self = ref()
        try:
            m = self.monitor.end_window(name.decode("utf-8"))
            time_s[0] = float(m.time)
            energy_j[0] = float(m.total_energy)
            return 0
        except BaseException as e:  # noqa: B902 - handed back to the caller by _check
            return failed(self, e, errbuf, cap)

    begin_c, end_c = _lib.WindowBegin(begin), _lib.WindowEnd(end)
    return _lib.WindowOps_C(None, begin_c, end_c), (begin_c, end_c)


class BatchSizeOptimizer(Callback):
    """Batch size optimizer client that talks to the server (seed 000).

    Call in order: get_batch_size() at the start, on_train_begin() before the first epoch,
    on_evaluate(metric) after each epoch; stop when training_finished is true. As a
    Callback it also has every other hook (doing nothing), for a CallbackSet.

    monitor: a ZeusMonitor measuring all and only the training GPUs (None: zbso opens one
    of every visible GPU; any object with gpu_indices, begin_window and end_window will
    do). server_url: the server's address, credentials allowed
    ("http://user:TOKEN@host:port": HTTP Basic auth; None: $ZEUS_BSO_SERVER_URL). job: a
    JobSpec. rank: this process's rank; only rank 0 asks for a batch size, the others are
    told it (current_batch_size and trial_number are settable, as Zeus's data-parallel
    example does) and report the same trial.

    The job's max_power is the first visible GPU's maximum power limit (whole watts) times
    the monitor's GPU count, and gpu_model the first GPU's (zbso.device.get_gpus), as in
    Zeus. A trial dispatched by get_batch_size that did not finish is ended (PATCH
    /trials) by libzbso when the process exits."""

    def __init__(self, monitor, server_url, job, rank=0):
        self._handle = None
        self._pending = None
        if monitor is None:
            from zbso.monitor.energy import ZeusMonitor  # noqa: PLC0415 - import cycle
            monitor = ZeusMonitor()
        gpu_indices = getattr(monitor, "gpu_indices", None)
        if gpu_indices is None:
            raise ZeusBSOConfigError(
                f"monitor must be a ZeusMonitor (it has no gpu_indices): {monitor!r}")
        self.monitor = monitor
        self.server_url = server_url
        self.rank = int(rank)
        spec = _job_json(job)
        gpus = get_gpus(ensure_homogeneous=True)
        if len(gpus) == 0:
            raise ZeusBSOConfigError("No GPUs detected.")
        max_mw = gpus.get_power_management_limit_constraints(0)[1]
        model = gpus.get_name(0)
        self._ops, self._keep = _window_ops(self)
        handle = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_lib.ERRBUF_MAX)
        url = server_url.encode("utf-8") if server_url is not None else None
        rc = _lib.client_new_ops(ctypes.byref(self._ops), max_mw, len(gpu_indices),
                                 model.encode("utf-8"), url, spec.encode("utf-8"), self.rank,
                                 ctypes.byref(handle), err, len(err))
        if rc != 0:
            raise error_for(rc, _lib.text(err.value))
        self._handle = handle
        self.job = CreatedJob.parse_raw(_lib.text(_lib.client_job_json(handle)))
        self.job_spec = JobSpecFromClient.parse_raw(_lib.text(_lib.client_spec_json(handle)))
        logger.info("Job is registered: %s", self.job)
        # A zbso server's advice on the registration (a new random id where jobs of the
        # same spec exist): a Python warning, shown once per place by default.
        advice = _lib.text(_lib.client_warning(handle))
        if advice:
            warnings.warn(f"zbso: {advice}", UserWarning, stacklevel=2)

    def _check(self, rc):
        """Raises what the call failed with: the monitor's own exception when the call
        failed because a window call did (as Zeus lets it through), else the code's
        ZeusBSOError (a failed report, say, even when reopening the window failed too)."""
        pending, self._pending = self._pending, None
        if rc == 0:
            return
        msg = _lib.client_errmsg(self._handle) or b""
        if pending is not None and msg == pending[1]:
            raise pending[0]
        raise error_for(rc, _lib.text(msg))

    def get_batch_size(self):
        """The batch size to train with (asked once, then cached). ZeusBSOBadOperationError
        on rank != 0; ZeusBSORuntimError on server errors."""
        out = ctypes.c_int64()
        self._check(_lib.client_get_batch_size(self._handle, ctypes.byref(out)))
        return int(out.value)

    def on_train_begin(self):
        """Opens the measurement window of this run (the monitor raises ValueError when it
        is open already)."""
        self._check(_lib.client_on_train_begin(self._handle))

    def on_evaluate(self, metric):
        """Reports the epoch's validation metric with the time and energy so far; sets
        training_finished when the server says stop. ZeusBSOOperationOrderError before
        get_batch_size (or current_batch_size set); ValueError from the monitor when no
        window is open; ZeusBSOTrainFailError when training stopped without converging
        (re-launch: another batch size is chosen); ZeusBSORuntimError when the report failed
        (the epoch stays counted; the next call reports the totals). Nothing once training
        finished."""
        self._check(_lib.client_on_evaluate(self._handle, float(metric)))

    def set_retry_timeout(self, seconds):
        """How long later requests retry network failures (s; 0: one attempt)."""
        self._check(_lib.client_set_retry_timeout(self._handle, float(seconds)))

    @property
    def training_finished(self):
        """True once the server said to stop training."""
        return bool(_lib.client_training_finished(self._handle))

    @property
    def current_batch_size(self):
        """The batch size of this run; 0 before get_batch_size (or being set)."""
        return int(_lib.client_batch_size(self._handle))

    @current_batch_size.setter
    def current_batch_size(self, batch_size):
        if _lib.client_set_batch_size(self._handle, int(batch_size)) != 0:
            raise ValueError(_lib.text(_lib.client_errmsg(self._handle)))

    @property
    def trial_number(self):
        """This run's trial number; 0 before get_batch_size (or being set)."""
        return int(_lib.client_trial_number(self._handle))

    @trial_number.setter
    def trial_number(self, trial_number):
        if _lib.client_set_trial_number(self._handle, int(trial_number)) != 0:
            raise ValueError(_lib.text(_lib.client_errmsg(self._handle)))

    @property
    def cur_epoch(self):
        """Epochs evaluated (and reported) in this run."""
        return int(_lib.client_cur_epoch(self._handle))

    @property
    def running_time(self):
        """Time of the epochs evaluated (s), as reported."""
        return float(_lib.client_running_time_s(self._handle))

    @property
    def consumed_energy(self):
        """GPU energy of the epochs evaluated (J), as reported."""
        return float(_lib.client_consumed_energy_j(self._handle))

    def __del__(self):
        # Freeing never ends the trial (libzbso does that at exit) and calls no monitor
        # back. At interpreter exit leave the handle to the process end.
        h = getattr(self, "_handle", None)
        if h is None or sys.is_finalizing():
            return
        self._handle = None
        _lib.client_free(h)

    def __repr__(self):
        return (f"BatchSizeOptimizer(job_id={self.job.job_id!r}, "
                f"batch_size={self.current_batch_size}, trial_number={self.trial_number})")


__all__ = ["BatchSizeOptimizer"]
