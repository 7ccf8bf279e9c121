"""zeus_power_train.py: a training loop written for Zeus's power-limit optimizer (as Zeus's
examples/power_limit_optimizer/train_single.py drives it), importing from `zeus`. The tests
(test_power_limit.py) run it with its imports changed to `zbso` and nothing else. The
"model" is the fake NVML: a step takes as long as the fake says at GPU 0's current limit.

Settings (environment): PLO_SELECTOR energy|time|zeuscost|slowdown, PLO_EPOCHS, PLO_STEPS
(per epoch), PLO_PARAMS "wait,warmup,profile,pl_step", PLO_END normal|exception|sigterm|
sigint|exit|sigkill (how the script ends after PLO_END_STEP steps), PLO_PROFILE_PATH, and
PLO_JOB / PLO_SERVER (a BatchSizeOptimizer of that job on that server, given to the
optimizer). Prints one JSON line of what the optimizer did, unless it ends otherwise."""

import ctypes
import json
import os
import signal
import sys

from zeus.monitor import ZeusMonitor
from zeus.optimizer.power_limit import (Energy, GlobalPowerLimitOptimizer,
                                        MaxSlowdownConstraint, Time, ZeusCost)
from zeus.optimizer.batch_size import BatchSizeOptimizer, JobSpec

_nvml = ctypes.CDLL(os.environ["ZBSO_NVML_LIBRARY"])


def train_step():
    """One step of the fake model on GPU 0."""
    _nvml.fake_nvml_step(0)


def main():
    selectors = {"energy": Energy(), "time": Time(), "zeuscost": ZeusCost(eta_knob=0.5),
                 "slowdown": MaxSlowdownConstraint(factor=1.1)}
    wait, warmup, profile, pl_step = map(int, os.environ.get("PLO_PARAMS", "1,2,8,100")
                                         .split(","))
    monitor = ZeusMonitor(gpu_indices=[0])
    plo = GlobalPowerLimitOptimizer(
        monitor=monitor,
        optimum_selector=selectors[os.environ.get("PLO_SELECTOR", "zeuscost")],
        wait_steps=wait,
        warmup_steps=warmup,
        profile_steps=profile,
        pl_step=pl_step,
        profile_path=os.environ.get("PLO_PROFILE_PATH"),
    )
    if os.environ.get("PLO_JOB"):
        bso = BatchSizeOptimizer(monitor=monitor, server_url=os.environ["PLO_SERVER"],
                                 job=JobSpec(job_id=os.environ["PLO_JOB"], job_id_prefix="plo",
                                             batch_sizes=[64], default_batch_size=64))
        bso.get_batch_size()
        plo.batch_size_optimizer = bso
    end, end_step = os.environ.get("PLO_END", "normal"), int(os.environ.get("PLO_END_STEP", 0))
    steps = 0
    for epoch in range(int(os.environ.get("PLO_EPOCHS", "2"))):
        plo.on_epoch_begin()
        for _ in range(int(os.environ.get("PLO_STEPS", "40"))):
            plo.on_step_begin()
            train_step()
            plo.on_step_end()
            steps += 1
            if steps == end_step:
                print(json.dumps({"limit_mw": plo.current_power_limit}), flush=True)
                if end == "exception":
                    raise RuntimeError("training failed on purpose")
                if end == "exit":
                    sys.exit(3)
                if end in ("sigterm", "sigint", "sigkill"):
                    os.kill(os.getpid(), getattr(signal, end.upper()))
                    signal.pause()
        plo.on_epoch_end()
    print(json.dumps({
        "state": plo.state, "optimal_mw": plo.optimal_power_limit, "source": plo.source,
        "measurements": [[m.power_limit, m.energy, m.time] for m in plo.measurements],
        "profiling_steps": plo.profiling_steps, "steps": plo.steps,
        "accounted": plo.accounted, "actuator": plo.actuator, "set_count": plo.set_count,
        "select": {name: s.select(plo.measurements) for name, s in selectors.items()}
        if plo.measurements else {},
    }), flush=True)


if __name__ == "__main__":
    main()
