"""BatchSizeOptimizer over libzbso's client (zbso_client_*): Zeus's
zeus.optimizer.batch_size.client.BatchSizeOptimizer, with the HTTP, the bookkeeping and the
end-of-trial report done in C. This file only converts arguments, results and errors."""

import ctypes
import json
import sys

from zbso import _lib
from zbso.optimizer.batch_size.common import JobSpec
from zbso.optimizer.batch_size.exceptions import ZeusBSOConfigError, error_for


class CreatedJob:
    """The job as the server registered it (Zeus's CreatedJob): every JobSpec field with
    job_id filled in, plus max_power, number_of_gpus and gpu_model, as attributes."""

    def __init__(self, fields):
        self.__dict__.update(fields)

    def dict(self):
        return dict(self.__dict__)

    def json(self):
        return json.dumps(self.__dict__)

    def __repr__(self):
        return f"CreatedJob({self.__dict__!r})"


class BatchSizeOptimizer:
    """Batch size optimizer client that talks to the server (seed 000).

    Call in order: get_batch_size() at the start, on_train_begin() before the first epoch,
    on_evaluate(metric) after each epoch; stop when training_finished is true. Errors are
    ZeusBSOError subclasses (zbso.optimizer.batch_size.exceptions).

    monitor: a zbso.monitor.ZeusMonitor of all and only the training GPUs (None: every
    visible GPU). server_url: the server's address (None: $ZEUS_BSO_SERVER_URL). job: a
    JobSpec. rank: this process's rank; only rank 0 may ask for a batch size.

    A trial that was dispatched (get_batch_size) and did not finish is ended (PATCH
    /trials) by libzbso when the process exits, whatever happens to this object."""

    def __init__(self, monitor, server_url, job, rank=0):
        self._handle = None
        if not isinstance(job, JobSpec):
            raise ZeusBSOConfigError(f"job must be a zbso JobSpec, got {type(job).__name__}")
        mon_handle = None
        if monitor is not None:
            mon_handle = getattr(monitor, "handle", None)
            if mon_handle is None:
                raise ZeusBSOConfigError("monitor must be an open zbso.monitor.ZeusMonitor")
        self.monitor = monitor  # the C client uses it: it must outlive the client
        self.server_url = server_url
        self.rank = int(rank)
        self.current_batch_size = 0
        handle = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_lib.ERRBUF_MAX)
        url = server_url.encode("utf-8") if server_url is not None else None
        rc = _lib.client_new(mon_handle, url, job.json().encode("utf-8"), self.rank,
                             ctypes.byref(handle), err, len(err))
        if rc != 0:
            raise error_for(rc, _lib.text(err.value))
        self._handle = handle
        if monitor is not None:
            monitor._users += 1
        self.job = CreatedJob(json.loads(_lib.text(_lib.client_job_json(handle))))

    def _check(self, rc):
        if rc != 0:
            raise error_for(rc, _lib.text(_lib.client_errmsg(self._handle)))

    def get_batch_size(self):
        """The batch size to train with (asked once, then cached). ZeusBSOBadOperationError
        on rank != 0; ZeusBSORuntimError on server errors."""
        out = ctypes.c_int64()
        self._check(_lib.client_get_batch_size(self._handle, ctypes.byref(out)))
        self.current_batch_size = int(out.value)
        return self.current_batch_size

    def on_train_begin(self):
        """Starts measuring the time and energy of this training run."""
        self._check(_lib.client_on_train_begin(self._handle))

    def on_evaluate(self, metric):
        """Reports the epoch's validation metric with the time and energy so far; sets
        training_finished when the server says stop. ZeusBSOOperationOrderError before
        get_batch_size/on_train_begin; ZeusBSOTrainFailError when training stopped without
        converging (re-launch: another batch size is chosen); ZeusBSORuntimError when the
        report failed (the epoch stays counted; the next call reports the totals)."""
        self._check(_lib.client_on_evaluate(self._handle, float(metric)))

    def set_retry_timeout(self, seconds):
        """How long later requests retry network failures (s; 0: one attempt)."""
        self._check(_lib.client_set_retry_timeout(self._handle, float(seconds)))

    @property
    def training_finished(self):
        """True once the server said to stop training."""
        return bool(_lib.client_training_finished(self._handle))

    @property
    def trial_number(self):
        """This run's trial number; 0 before get_batch_size."""
        return int(_lib.client_trial_number(self._handle))

    def __del__(self):
        # Freeing never ends the trial (libzbso does that at exit). At interpreter exit the
        # monitor may already be gone, so leave the handle to the process end then.
        h = getattr(self, "_handle", None)
        if h is None or sys.is_finalizing():
            return
        self._handle = None
        _lib.client_free(h)
        if self.monitor is not None:
            self.monitor._users -= 1

    def __repr__(self):
        return (f"BatchSizeOptimizer(job_id={self.job.job_id!r}, "
                f"batch_size={self.current_batch_size}, trial_number={self.trial_number})")
