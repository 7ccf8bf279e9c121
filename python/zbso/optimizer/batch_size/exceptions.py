"""Exceptions of the batch size optimizer client, named as in Zeus
(zeus.optimizer.batch_size.exceptions), each tied to one libzbso error code. All derive
from zbso.exception.ZeusBaseError, as Zeus's do, through ZeusBSOError (zbso's, which
carries the code)."""

from zbso import _lib
from zbso.exception import ZeusBaseError


class ZeusBSOError(ZeusBaseError):
    """Base of every libzbso error. `code` is the libzbso error code (a negative int),
    `message` the text."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


class ZeusBSOConfigError(ZeusBSOError):
    """Bad configuration: no GPUs, mixed GPU models, an invalid job spec (ZBSO_ECONFIG)."""


class ZeusBSOOperationOrderError(ZeusBSOError):
    """Methods called out of order, e.g. on_evaluate before get_batch_size (ZBSO_EORDER)."""


class ZeusBSOBadOperationError(ZeusBSOError):
    """An operation that is not allowed, e.g. get_batch_size on rank != 0 (ZBSO_EBADOP)."""


class ZeusBSORuntimError(ZeusBSOError):
    """The server answered an error or could not be reached (ZBSO_ERUNTIME; Zeus's
    spelling). Every code without its own class maps here too."""


ZeusBSORuntimeError = ZeusBSORuntimError


class ZeusBSOTrainFailError(ZeusBSOError):
    """Training stopped without converging (max_epochs reached or cost over beta * min
    cost): this batch size will not be chosen again; re-launch training (ZBSO_ETRAINFAIL)."""


_BY_CODE = {
    _lib.ECONFIG: ZeusBSOConfigError,
    _lib.EORDER: ZeusBSOOperationOrderError,
    _lib.EBADOP: ZeusBSOBadOperationError,
    _lib.ERUNTIME: ZeusBSORuntimError,
    _lib.ETRAINFAIL: ZeusBSOTrainFailError,
}


def error_for(code, message):
    """The exception for a libzbso error code, carrying message (or the code's name)."""
    cls = _BY_CODE.get(code, ZeusBSORuntimError)
    if not message:
        message = f"{_lib.code_name(code)} ({code})"
    return cls(message, code)


__all__ = [
    "ZeusBSOError", "ZeusBSOConfigError", "ZeusBSOOperationOrderError",
    "ZeusBSOBadOperationError", "ZeusBSORuntimError", "ZeusBSORuntimeError",
    "ZeusBSOTrainFailError",
]
