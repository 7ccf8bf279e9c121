"""zbso.device.exception: the bases of the device errors (Zeus's zeus.device.exception)."""

from zbso.exception import ZeusBaseError


class ZeusBaseGPUError(ZeusBaseError):
    """Base of the GPU errors."""


class ZeusBaseCPUError(ZeusBaseError):
    """Base of the CPU errors."""


__all__ = ["ZeusBaseGPUError", "ZeusBaseCPUError"]
