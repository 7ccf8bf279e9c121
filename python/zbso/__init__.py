"""zbso: Python binding of libzbso (ctypes, standard library only).

Drop-in for the parts of Zeus a training script uses:

    from zbso.monitor import ZeusMonitor
    from zbso.optimizer.batch_size import BatchSizeOptimizer, JobSpec

libzbso.so is found through $ZBSO_LIBRARY, next to the package, in a build directory of
the source checkout, or by ctypes.util.find_library("zbso"); importing fails with an
ImportError naming every place tried when none has it."""

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

__all__ = [
    "Measurement", "ZeusMonitor", "BatchSizeOptimizer", "JobSpec", "ZeusBSOError",
    "ZeusBSOConfigError", "ZeusBSOOperationOrderError", "ZeusBSOBadOperationError",
    "ZeusBSORuntimError", "ZeusBSORuntimeError", "ZeusBSOTrainFailError",
]
