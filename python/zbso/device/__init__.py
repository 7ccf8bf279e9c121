"""zbso.device: the machine's GPUs and CPUs, read-only (Zeus's zeus.device): get_gpus()
(NVML through libzbso) and get_cpus() (RAPL through libzbso). Nothing here changes a
device setting."""

from zbso.device.cpu import get_cpus
from zbso.device.gpu import get_gpus

__all__ = ["get_gpus", "get_cpus"]
