"""zbso: Python binding of libzbso (ctypes, standard library only), with the names and
module paths of Zeus's client side, so a training script written for Zeus runs with
`zbso` imported in place of `zeus`:

    from zbso.monitor import ZeusMonitor
    from zbso.optimizer.batch_size import BatchSizeOptimizer, JobSpec

Modules: callback (Callback, CallbackSet), exception (ZeusBaseError), device (get_gpus,
get_cpus), monitor (ZeusMonitor, Measurement), optimizer.batch_size (BatchSizeOptimizer,
JobSpec, the wire models, exceptions), utils (lr_scaler, framework).

libzbso.so is looked for in the order of python/README.md ("Finding libzbso.so");
importing fails with an ImportError naming every place tried when none has it."""

import logging

from zbso.callback import Callback, CallbackSet
from zbso.exception import ZeusBaseError
from zbso.monitor import Measurement, ZeusMonitor
from zbso.optimizer.batch_size import (
    BatchSizeOptimizer,
    JobSpec,
    ZeusBSOBadOperationError,
    ZeusBSOConfigError,
    ZeusBSOError,
    ZeusBSOOperationOrderError,
    ZeusBSORuntimeError,
    ZeusBSORuntimError,
    ZeusBSOTrainFailError,
)

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "Callback", "CallbackSet", "ZeusBaseError", "Measurement", "ZeusMonitor",
    "BatchSizeOptimizer", "JobSpec", "ZeusBSOError", "ZeusBSOConfigError",
    "ZeusBSOOperationOrderError", "ZeusBSOBadOperationError", "ZeusBSORuntimError",
    "ZeusBSORuntimeError", "ZeusBSOTrainFailError",
]
