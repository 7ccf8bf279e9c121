"""zbso.utils.framework: waiting for a framework's queued GPU work (Zeus's
zeus.utils.framework.sync_execution), which ZeusMonitor does at each window edge so that a
window covers the work queued inside it and none queued before it.

A framework is used only when the script has imported it already (sys.modules): zbso never
imports torch, jax or cupy itself. A script that never imported the framework has queued
no work through it, so there is nothing to wait for."""

import sys

FRAMEWORKS = ("torch", "jax", "cupy")


def sync_execution(gpu_devices, sync_with="torch"):
    """Blocks until the computations queued on the CUDA devices gpu_devices (CUDA indices)
    through framework sync_with are finished.

    torch: torch.cuda.synchronize(d) for each device, when CUDA is initialised in this
    process (before that, nothing can be queued). jax: a scalar put on each GPU device and
    on the first CPU device, then jax.block_until_ready on all of them (JAX has no direct
    call; as Zeus does). cupy: cupy.cuda.Device(d).synchronize(). ValueError for another
    sync_with."""
    if sync_with not in FRAMEWORKS:
        raise ValueError(f"sync_with must be one of {', '.join(FRAMEWORKS)}, got {sync_with!r}")
    module = sys.modules.get(sync_with)
    if module is None:
        return
    if sync_with == "torch":
        cuda = getattr(module, "cuda", None)
        if cuda is None or not cuda.is_initialized():
            return
        for device in gpu_devices:
            cuda.synchronize(device)
    elif sync_with == "jax":
        gpus = module.devices("gpu")
        futures = [module.device_put(0.0, device=gpus[d]) + 0 for d in gpu_devices]
        futures.append(module.device_put(0.0, device=module.devices("cpu")[0]) + 0)
        module.block_until_ready(futures)
    else:
        for device in gpu_devices:
            module.cuda.Device(device).synchronize()


__all__ = ["sync_execution"]
