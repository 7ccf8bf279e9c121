"""zbso.optimizer.batch_size: the batch size optimizer client (Zeus's
zeus.optimizer.batch_size)."""

from zbso.optimizer.batch_size.client import BatchSizeOptimizer
from zbso.optimizer.batch_size.common import JobSpec
from zbso.optimizer.batch_size.exceptions import (
    ZeusBSOBadOperationError,
    ZeusBSOConfigError,
    ZeusBSOError,
    ZeusBSOOperationOrderError,
    ZeusBSORuntimeError,
    ZeusBSORuntimError,
    ZeusBSOTrainFailError,
)

__all__ = [
    "BatchSizeOptimizer", "JobSpec", "ZeusBSOError", "ZeusBSOConfigError",
    "ZeusBSOOperationOrderError", "ZeusBSOBadOperationError", "ZeusBSORuntimError",
    "ZeusBSORuntimeError", "ZeusBSOTrainFailError",
]
