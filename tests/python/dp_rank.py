"""dp_rank.py: one rank of Zeus's data-parallel example (examples/batch_size_optimizer/
mnist/train_dp.py), its Zeus parts unchanged but for the imports, with torch.distributed's
broadcast replaced by a pipe and an epoch by a stand-in. Run by test_dp.py as two
processes: RANK=0 asks for the batch size and writes it with the trial number to the pipe
(file descriptor $DP_PIPE_FD), RANK=1 reads them; both train and report. The gradient
all-reduce that keeps real ranks in step is a barrier at the start of each epoch
($DP_SYNC_FDS: a pipe to the other rank and one from it), so that no rank trains epoch e+1
before the other has reported epoch e, as under torch.distributed.

Prints one JSON line: the rank, batch size and trial it trained, its epochs, whether
training finished, and the exception its last on_evaluate raised (class and message)."""

import json
import os
import sys
import time

from zbso.callback import Callback, CallbackSet
from zbso.monitor import ZeusMonitor
from zbso.optimizer.batch_size import BatchSizeOptimizer, JobSpec
from zbso.utils.lr_scaler import LinearScaler

EPOCHS = int(os.environ["DP_EPOCHS"])
CURVE = [float(x) for x in os.environ["DP_CURVE"].split(",")]  # accuracy after each epoch


def allreduce_barrier(sync):
    """Waits for the other rank to reach the same point (a peer that has stopped, its pipe
    closed, releases the wait)."""
    w, r = sync
    try:
        os.write(w, b"x")
    except BrokenPipeError:
        return
    os.read(r, 1)


class StepCounter(Callback):
    """Stands in for GlobalPowerLimitOptimizer(monitor) in rank 0's callback set."""

    def __init__(self):
        self.steps = 0

    def on_step_end(self):
        self.steps += 1


def main():
    rank = int(os.getenv("RANK"))
    world_size = int(os.getenv("WORLD_SIZE"))
    fd = int(os.environ["DP_PIPE_FD"])
    sync = [int(x) for x in os.environ["DP_SYNC_FDS"].split(",")]

    ########################### ZEUS INIT BEGIN ###########################
    monitor = ZeusMonitor(gpu_indices=None)  # All visible GPUs.
    bso = BatchSizeOptimizer(
        monitor=monitor,
        server_url=os.environ.get("ZEUS_SERVER_URL", "http://localhost:30100"),
        job=JobSpec(
            job_id=os.environ.get("ZEUS_JOB_ID"),
            job_id_prefix="mnist-dev",
            default_batch_size=256,
            batch_sizes=[32, 64, 256, 512, 1024, 4096, 2048],
            max_epochs=EPOCHS,
            target_metric=0.5,
            beta_knob=None,
        ),
        rank=rank,
    )

    # The rank 0 process will monitor and optimize the power limit of all GPUs.
    if rank == 0:
        counter = StepCounter()
        callback_set: list[Callback] = [counter, bso]
        # Get batch size from bso
        batch_size = bso.get_batch_size()
        # Need to broadcast 1. batch size 2. trial_number to identify current trial
        with os.fdopen(fd, "w") as pipe:
            pipe.write(f"{batch_size} {bso.trial_number}\n")
        bs_trial = [batch_size, bso.trial_number]
    else:
        callback_set = [bso]
        with os.fdopen(fd) as pipe:
            bs_trial = [int(x) for x in pipe.readline().split()]

    bso.current_batch_size = int(bs_trial[0])
    bso.trial_number = int(bs_trial[1])
    batch_size = bso.current_batch_size // world_size
    callbacks = CallbackSet(callback_set)
    lr = LinearScaler(bs=64, lr=0.01).compute_lr(new_bs=batch_size * world_size)
    ########################### ZEUS INIT END ###########################

    error = None
    epoch = 0
    ########################### ZEUS USAGE BEGIN ###########################
    try:
        callbacks.on_train_begin()
        for epoch in range(1, EPOCHS + 1):
            allreduce_barrier(sync)  # the epoch's first all-reduce
            callbacks.on_epoch_begin()
            for _ in range(4):  # train(...): the steps of one epoch
                callbacks.on_step_begin()
                time.sleep(0.01)
                callbacks.on_step_end()
            callbacks.on_epoch_end()
            acc = CURVE[epoch - 1]  # test(...)
            callbacks.on_evaluate(acc)

            if bso.training_finished:
                break
    except Exception as e:  # noqa: BLE001 - reported to the test
        error = [type(e).__name__, str(e)]
    ########################### ZEUS USAGE END ###########################
    print(json.dumps({"rank": rank, "batch_size": bso.current_batch_size,
                      "per_rank": batch_size, "trial": bso.trial_number, "epochs": epoch,
                      "cur_epoch": bso.cur_epoch, "finished": bso.training_finished,
                      "error": error, "lr": lr}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
