"""zbso.monitor: GPU time and energy measurement (Zeus's zeus.monitor)."""

from zbso.monitor.energy import Measurement, ZeusMonitor

__all__ = ["Measurement", "ZeusMonitor"]
