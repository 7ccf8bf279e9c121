"""BatchSizeOptimizer against a real `zbso serve` and the fake NVML: the seed 003 training
loop over recurrences, train failures, call order, ranks and server errors."""

import time
import unittest

import support

EPOCH_S = 0.05
BATCH_SIZES = [16, 32, 64, 128]
DEFAULT_BS = 32


def curve(batch_size, epoch):
    """Validation metric after epoch (1-based): 32 reaches 0.5 at epoch 5, 64 at epoch 2,
    16 and 128 never within 8 epochs."""
    rate = {16: 0.03, 32: 0.1, 64: 0.25, 128: 0.04}[batch_size]
    return min(rate * epoch, 0.95)


def train(url, job, epochs=100):
    """One recurrence, exactly as seed 003 writes it (a sleep stands for an epoch).
    Returns (batch size, epochs run, bso, the ZeusBSOTrainFailError or None)."""
    from zbso.monitor import ZeusMonitor
    from zbso.optimizer.batch_size import BatchSizeOptimizer
    from zbso.optimizer.batch_size.exceptions import ZeusBSOTrainFailError
    monitor = ZeusMonitor()
    bso = BatchSizeOptimizer(monitor=monitor, server_url=url, job=job)
    batch_size = bso.get_batch_size()
    run = 0
    bso.on_train_begin()
    try:
        for epoch in range(epochs):
            time.sleep(EPOCH_S)
            run = epoch + 1
            bso.on_evaluate(curve(batch_size, run))
            if bso.training_finished:
                break
    except ZeusBSOTrainFailError as e:
        return batch_size, run, bso, e
    return batch_size, run, bso, None


def spec(**over):
    from zbso import JobSpec
    args = dict(job_id_prefix="pytest", batch_sizes=BATCH_SIZES,
                default_batch_size=DEFAULT_BS, max_epochs=8, mab_seed=1)
    args.update(over)
    return JobSpec(**args)


class TestJobIdWarning(support.ServerCase):
    """Seed 003's literal example with ZEUS_JOB_ID unset registers a new random id every
    run: the second such run (same spec, same prefix) gets a warning, from the binding
    (warnings.warn, once) and in the server's log; other cases get none."""

    def register(self, job):
        import warnings
        from zbso.monitor import ZeusMonitor
        from zbso.optimizer.batch_size import BatchSizeOptimizer
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            bso = BatchSizeOptimizer(monitor=ZeusMonitor(), server_url=self.url, job=job)
        return bso, [str(w.message) for w in caught if "zbso" in str(w.message)]

    def test_second_random_id_of_the_same_spec_warns(self):
        first, warned = self.register(spec(job_id=None, job_id_prefix="seed3"))
        self.assertEqual(warned, [])
        second, warned = self.register(spec(job_id=None, job_id_prefix="seed3"))
        self.assertNotEqual(first.job.job_id, second.job.job_id)
        self.assertEqual(len(warned), 1, warned)
        self.assertIn(f"job {second.job.job_id} was registered with a new random id under "
                      f"prefix seed3, which already has job {first.job.job_id} with the same "
                      "spec: did you mean to set job_id?", warned[0])
        self.assertIn("did you mean to set job_id?", self.srv.log_tail())
        self.assertIn(second.job.job_id, self.srv.log_tail())
        # Another spec under the prefix, or a job_id given: nothing to say.
        _, warned = self.register(spec(job_id=None, job_id_prefix="seed3", max_epochs=9))
        self.assertEqual(warned, [])
        _, warned = self.register(spec(job_id="seed3-mine", job_id_prefix="seed3"))
        self.assertEqual(warned, [])
        _, warned = self.register(spec(job_id=None, job_id_prefix="other"))
        self.assertEqual(warned, [])


class TestTrainingLoop(support.ServerCase):
    def test_recurrences_leave_the_default_for_the_cheapest(self):
        # No early stop (beta_knob=None): which runs fail does not depend on timing.
        job = spec(job_id="pytest-loop", beta_knob=None)
        chosen, failed = [], []
        for rec in range(10):
            bs, epochs, bso, err = train(self.url, job)
            chosen.append(bs)
            self.assertTrue(bso.training_finished)
            if err is None:
                self.assertEqual(epochs, {32: 5, 64: 2}[bs], (rec, bs))
            else:
                failed.append(bs)
                self.assertEqual(epochs, 8, (rec, bs))  # max_epochs
                self.assertIn("re-launch the training", str(err))
        # Pruning (seed 002): round 0 walks down from 32 (16 fails) and up (128 fails);
        # round 1 starts at the cheaper 64. Then the bandit prefers 64 (40% of the cost).
        self.assertEqual(chosen[:6], [32, 16, 64, 128, 64, 32], chosen)
        self.assertEqual(failed, [16, 128])
        self.assertEqual(chosen[6:], [64] * 4, chosen)

    def test_job_and_trial_attributes(self):
        from zbso.monitor import ZeusMonitor
        from zbso.optimizer.batch_size import BatchSizeOptimizer
        mon = ZeusMonitor()
        bso = BatchSizeOptimizer(monitor=mon, server_url=self.url, job=spec())
        self.assertTrue(bso.job.job_id.startswith("pytest-"), bso.job.job_id)
        self.assertEqual(bso.job.batch_sizes, BATCH_SIZES)
        self.assertEqual(bso.job.max_power, support.FAKE_LIMIT_W)  # 1 GPU
        self.assertEqual(bso.job.number_of_gpus, 1)
        self.assertEqual(bso.job.gpu_model, support.FAKE_MODEL)
        self.assertEqual(bso.current_batch_size, 0)
        self.assertEqual(bso.trial_number, 0)
        self.assertFalse(bso.training_finished)
        self.assertEqual(bso.get_batch_size(), DEFAULT_BS)
        self.assertEqual(bso.get_batch_size(), DEFAULT_BS)  # cached: still trial 1
        self.assertEqual(bso.current_batch_size, DEFAULT_BS)
        self.assertEqual(bso.trial_number, 1)
        # A second session of the same job (same id, same spec) gets the next trial.
        bso2 = BatchSizeOptimizer(monitor=mon, server_url=self.url,
                                  job=spec(job_id=bso.job.job_id))
        self.assertEqual(bso2.job.job_id, bso.job.job_id)
        bso2.get_batch_size()
        self.assertEqual(bso2.trial_number, 2)
        # Finish both runs, so nothing is left to end when this process exits.
        for b in (bso, bso2):
            b.on_train_begin()
            b.on_evaluate(0.9)
            self.assertTrue(b.training_finished)

    def test_max_power_is_limit_times_gpus(self):
        from zbso.monitor import ZeusMonitor
        from zbso.optimizer.batch_size import BatchSizeOptimizer
        self.use_fake_nvml(gpus=3, limit_w=300.5)
        mon = ZeusMonitor(gpu_indices=[0, 2])
        bso = BatchSizeOptimizer(monitor=mon, server_url=self.url, job=spec())
        self.assertEqual(bso.job.number_of_gpus, 2)
        self.assertEqual(bso.job.max_power, 600.0)  # floor(300500 mW / 1000) * 2


    def test_server_url_from_environment(self):
        import os
        from zbso.monitor import ZeusMonitor
        from zbso.optimizer.batch_size import BatchSizeOptimizer
        from zbso.optimizer.batch_size.exceptions import ZeusBSOConfigError
        with self.assertRaises(ZeusBSOConfigError) as cm:
            BatchSizeOptimizer(monitor=ZeusMonitor(), server_url=None, job=spec())
        self.assertIn("ZEUS_BSO_SERVER_URL", str(cm.exception))
        os.environ["ZEUS_BSO_SERVER_URL"] = self.url
        bso = BatchSizeOptimizer(monitor=None, server_url=None, job=spec())
        self.assertEqual(bso.job.number_of_gpus, 1)  # its own monitor of every GPU
        self.assertEqual(bso.job.max_power, support.FAKE_LIMIT_W)


class TestZeusShape(support.ServerCase):
    """What Zeus's BatchSizeOptimizer is besides the seed 003 calls: a Callback in a
    CallbackSet, its attributes, its windows synchronized, a URL with credentials."""

    def test_callback_set_loop(self):
        """Zeus's loop of train_single_gpu.py / train_dp.py through a CallbackSet with
        another callback first (where the power limit optimizer goes)."""
        from zbso.callback import Callback, CallbackSet
        from zbso.monitor import ZeusMonitor
        from zbso.optimizer.batch_size import BatchSizeOptimizer
        from zbso.utils.lr_scaler import LinearScaler

        class Recorder(Callback):
            def __init__(self):
                self.hooks = []

            def on_epoch_begin(self):
                self.hooks.append("epoch_begin")

            def on_step_end(self):
                self.hooks.append("step_end")

            def on_evaluate(self, metric):
                self.hooks.append(("evaluate", metric))

        monitor = ZeusMonitor(gpu_indices=None)
        bso = BatchSizeOptimizer(monitor=monitor, server_url=self.url,
                                 job=spec(job_id="pytest-cbs", beta_knob=None))
        rec = Recorder()
        callbacks = CallbackSet([rec, bso])
        batch_size = bso.get_batch_size()
        lr = LinearScaler(bs=64, lr=0.01).compute_lr(new_bs=batch_size)
        self.assertAlmostEqual(lr, 0.01 * DEFAULT_BS / 64)
        callbacks.on_train_begin()
        for epoch in range(1, 9):
            callbacks.on_epoch_begin()
            for _ in range(3):
                callbacks.on_step_begin()
                callbacks.on_step_end()
            callbacks.on_epoch_end()
            callbacks.on_evaluate(curve(batch_size, epoch))
            if bso.training_finished:
                break
        callbacks.on_train_end()
        self.assertEqual(epoch, 5)  # 32 reaches 0.5 at epoch 5
        self.assertEqual(bso.cur_epoch, 5)
        self.assertEqual(rec.hooks.count("step_end"), 15)
        self.assertEqual(rec.hooks[-1], ("evaluate", curve(batch_size, 5)))
        self.assertGreater(bso.running_time, 0)
        self.assertAlmostEqual(bso.consumed_energy, support.FAKE_POWER_W * bso.running_time,
                               delta=support.FAKE_POWER_W * 0.05 + 1)
        self.assertEqual(bso.job_spec.job_id, "pytest-cbs")
        self.assertEqual(bso.job_spec.max_power, support.FAKE_LIMIT_W)
        self.assertEqual(bso.job_spec.dict(), {**bso.job.dict(), "job_id": "pytest-cbs"})

    def test_windows_synchronize_the_framework(self):
        import sys
        import types
        from zbso.monitor import ZeusMonitor
        from zbso.optimizer.batch_size import BatchSizeOptimizer
        synced = []
        torch = types.ModuleType("torch")
        torch.cuda = types.SimpleNamespace(is_initialized=lambda: True,
                                           synchronize=synced.append)
        saved = sys.modules.get("torch")
        sys.modules["torch"] = torch
        try:
            bso = BatchSizeOptimizer(monitor=ZeusMonitor(), server_url=self.url, job=spec())
            bso.get_batch_size()
            bso.on_train_begin()
            bso.on_evaluate(0.1)
            bso.on_evaluate(0.9)
        finally:
            if saved is None:
                del sys.modules["torch"]
            else:
                sys.modules["torch"] = saved
        # begin; end and begin again; end (converged): GPU 0 each time.
        self.assertEqual(synced, [0] * 4)

    def test_credentials_in_the_url(self):
        """A token-protected server and server_url http://user:TOKEN@host (what the
        unchanged Zeus client needs): libzbso sends HTTP Basic auth; a wrong password is
        the server's 401, and the message does not show the password."""
        import urllib.parse
        from zbso.monitor import ZeusMonitor
        from zbso.optimizer.batch_size import BatchSizeOptimizer
        from zbso.optimizer.batch_size.exceptions import ZeusBSORuntimError
        token = "s3c:r@t/t0ken"
        srv = support.zbsoserver.Server(env={"ZEUS_BSO_API_TOKEN": token})
        self.addCleanup(srv.close)
        srv.start()
        q = urllib.parse.quote(token, safe="")
        url = f"http://zbso:{q}@{srv.host}:{srv.port}"
        bso = BatchSizeOptimizer(monitor=ZeusMonitor(), server_url=url,
                                 job=spec(job_id="pytest-auth"))
        bso.get_batch_size()
        bso.on_train_begin()
        bso.on_evaluate(0.9)
        self.assertTrue(bso.training_finished)
        with self.assertRaises(ZeusBSORuntimError) as cm:
            BatchSizeOptimizer(monitor=ZeusMonitor(), server_url=url.replace(q, "wrong"),
                               job=spec(job_id="pytest-auth"))
        self.assertIn("401", str(cm.exception))
        # Nobody listens on port 1: the network error shows the URL, password masked.
        import os
        os.environ["ZBSO_CLIENT_RETRY_TIMEOUT"] = "0"
        with self.assertRaises(ZeusBSORuntimError) as cm:
            BatchSizeOptimizer(monitor=ZeusMonitor(),
                               server_url="http://zbso:wrong-pw@127.0.0.1:1", job=spec())
        self.assertNotIn("wrong-pw", str(cm.exception))
        self.assertIn("zbso:***@127.0.0.1:1", str(cm.exception))


class TestFailures(support.ServerCase):
    def bso(self, job=None, rank=0):
        from zbso.monitor import ZeusMonitor
        from zbso.optimizer.batch_size import BatchSizeOptimizer
        return BatchSizeOptimizer(monitor=ZeusMonitor(), server_url=self.url,
                                  job=job or spec(), rank=rank)

    def test_not_converged_raises_train_fail(self):
        from zbso.optimizer.batch_size.exceptions import ZeusBSOTrainFailError
        bso = self.bso(spec(batch_sizes=[16, 32], default_batch_size=16, max_epochs=3))
        self.assertEqual(bso.get_batch_size(), 16)
        bso.on_train_begin()
        bso.on_evaluate(0.1)
        bso.on_evaluate(0.2)
        self.assertFalse(bso.training_finished)
        with self.assertRaises(ZeusBSOTrainFailError) as cm:
            bso.on_evaluate(0.3)
        self.assertTrue(bso.training_finished)
        self.assertIn("Train failed", str(cm.exception))
        bso.on_evaluate(0.9)  # finished: nothing more is reported (seed 000)
        self.assertTrue(bso.training_finished)

    def test_non_finite_metric_changes_nothing(self):
        from zbso.optimizer.batch_size.exceptions import ZeusBSOError
        bso = self.bso(spec(max_epochs=2))
        bso.get_batch_size()
        bso.on_train_begin()
        with self.assertRaises(ZeusBSOError) as cm:
            bso.on_evaluate(float("nan"))
        self.assertIn("nan", str(cm.exception).lower())
        bso.on_evaluate(0.9)  # still epoch 1: converged, not over max_epochs
        self.assertTrue(bso.training_finished)

    def test_order(self):
        from zbso.optimizer.batch_size.exceptions import ZeusBSOOperationOrderError
        bso = self.bso()
        with self.assertRaises(ZeusBSOOperationOrderError) as cm:
            bso.on_evaluate(0.5)
        self.assertIn("get_batch_size", str(cm.exception))

    def test_rank_nonzero(self):
        from zbso.optimizer.batch_size.exceptions import ZeusBSOBadOperationError
        bso = self.bso(rank=1)
        with self.assertRaises(ZeusBSOBadOperationError) as cm:
            bso.get_batch_size()
        self.assertIn("rank 0", str(cm.exception))

    def test_conflicting_spec_carries_server_message(self):
        from zbso.optimizer.batch_size.exceptions import ZeusBSORuntimError
        self.bso(spec(job_id="pytest-x"))
        with self.assertRaises(ZeusBSORuntimError) as cm:
            self.bso(spec(job_id="pytest-x", eta_knob=0.9))
        self.assertIn("409", str(cm.exception))
        self.assertIn("pytest-x", str(cm.exception))

    def test_no_gpus_is_config_error(self):
        from zbso.monitor import ZeusMonitor
        from zbso.optimizer.batch_size import BatchSizeOptimizer
        from zbso.optimizer.batch_size.exceptions import ZeusBSOConfigError
        with self.assertRaises(ZeusBSOConfigError):
            BatchSizeOptimizer(monitor=object(), server_url=self.url, job=spec())
        mon = ZeusMonitor()
        with self.assertRaises(ZeusBSOConfigError):
            BatchSizeOptimizer(monitor=mon, server_url=self.url, job={"job_id_prefix": "x"})

    def test_spec_checked_before_sending(self):
        """A spec Zeus's model takes but the server would refuse (422): libzbso checks it as
        the server does and raises ZeusBSOConfigError naming the field, before any
        request (Zeus: ZeusBSORuntimError with the 422; docs/ZEUS.md)."""
        from zbso.optimizer.batch_size.exceptions import ZeusBSOConfigError
        with self.assertRaises(ZeusBSOConfigError) as cm:
            self.bso(spec(job_id_prefix=""))
        self.assertIn("job_id_prefix", str(cm.exception))

    def test_order_as_zeus(self):
        """Zeus leaves the window checks to its monitor: ValueError for on_train_begin
        twice and for on_evaluate without an open window (after get_batch_size)."""
        bso = self.bso()
        bso.get_batch_size()
        with self.assertRaises(ValueError) as cm:
            bso.on_evaluate(0.1)
        self.assertIn("does not exist", str(cm.exception))
        self.assertEqual(bso.cur_epoch, 0)
        bso.on_train_begin()
        with self.assertRaises(ValueError) as cm:
            bso.on_train_begin()
        self.assertIn("already exists", str(cm.exception))
        bso.on_evaluate(0.9)
        self.assertTrue(bso.training_finished)

    def test_setters_refuse_bad_values(self):
        bso = self.bso(rank=1)
        with self.assertRaises(ValueError) as cm:
            bso.current_batch_size = 48
        self.assertIn("48", str(cm.exception))
        with self.assertRaises(ValueError):
            bso.trial_number = -1
        self.assertEqual((bso.current_batch_size, bso.trial_number), (0, 0))


if __name__ == "__main__":
    unittest.main()
