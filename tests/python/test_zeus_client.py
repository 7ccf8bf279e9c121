"""Zeus's own client tests (tests/optimizer/batch_size/test_client.py of Zeus), written
again with unittest.mock for zbso: the monitor is a MagicMock(spec=ZeusMonitor) whose
end_window returns a fixed Measurement, and the GPU facts come from the (fake) NVML as
Zeus's mock of pynvml gives them (4 x "Tesla V100", 300 W). Against a real `zbso serve`,
with the test's job (Helpers.get_fake_job, unknown key "seed" included). Only the imports
name zbso; every call and assertion is Zeus's."""

import os
import unittest
from unittest.mock import MagicMock

import support


def get_fake_job(job_id):
    return {
        "job_id": job_id,
        "job_id_prefix": "test",
        "seed": 1,
        "default_batch_size": 1024,
        "batch_sizes": [32, 64, 256, 512, 1024, 4096, 2048],
        "eta_knob": 0.5,
        "beta_knob": 2,
        "target_metric": 0.5,
        "higher_is_better_metric": True,
        "max_epochs": 100,
        "num_pruning_rounds": 2,
        "window_size": 5,
        "mab_prior_mean": 0,
        "mab_prior_precision": 0,
        "mab_seed": 123456,
        "mab_num_explorations": 2,
    }


class TestZeusClient(support.ServerCase):
    def setUp(self):
        super().setUp()
        self.use_fake_nvml(gpus=4, model="Tesla V100", limit_w=300)
        # Trials these tests leave open are ended at exit; the server is gone by then.
        os.environ["ZBSO_CLIENT_RETRY_TIMEOUT"] = "0"
        from zbso.monitor.energy import Measurement, ZeusMonitor
        from zbso.optimizer.batch_size.client import BatchSizeOptimizer
        from zbso.optimizer.batch_size.common import JobSpec
        from zbso.optimizer.batch_size.exceptions import (ZeusBSOBadOperationError,
                                                          ZeusBSOTrainFailError)
        self.BatchSizeOptimizer, self.JobSpec = BatchSizeOptimizer, JobSpec
        self.ZeusBSOBadOperationError = ZeusBSOBadOperationError
        self.ZeusBSOTrainFailError = ZeusBSOTrainFailError
        self.mock_monitor = MagicMock(spec=ZeusMonitor)
        self.mock_monitor.gpu_indices = [0, 1, 2, 3]
        self.mock_monitor.end_window.return_value = Measurement(
            time=37.24807469360,
            gpu_energy={
                0: 4264.87199999392,
                1: 4367.186999991536,
                2: 4342.869000002742,
                3: 4158.034000009298,
            },
        )

    def test_register_job(self):
        job = self.JobSpec.parse_obj(get_fake_job("test_register_job"))
        bso_client = self.BatchSizeOptimizer(self.mock_monitor, self.url, job)
        self.assertEqual(bso_client.job.max_power, 300 * len(self.mock_monitor.gpu_indices))
        bso_client = self.BatchSizeOptimizer(self.mock_monitor, self.url, job)
        self.assertEqual(bso_client.job.max_power, 300 * len(self.mock_monitor.gpu_indices))

    def test_batch_sizes(self):
        job = self.JobSpec.parse_obj(get_fake_job("test_batch_sizes"))
        bso_client = self.BatchSizeOptimizer(self.mock_monitor, self.url, job)
        bs = bso_client.get_batch_size()

        self.assertTrue(bs == 1024 and bso_client.current_batch_size == 1024)

        bso_client.on_train_begin()
        bso_client.on_evaluate(0.1)
        bso_client.on_evaluate(0.2)
        bso_client.on_evaluate(0.6)  # Converged

        bso_client = self.BatchSizeOptimizer(self.mock_monitor, self.url, job)
        bs = bso_client.get_batch_size()
        bso_client.on_train_begin()

        self.assertTrue(bs == 512 and bso_client.current_batch_size == 512)

        i = 0
        with self.assertRaises(Exception) as e_info:
            while i < job.max_epochs - 10:  # Test Early stop
                bso_client.on_evaluate(0.3)
                i += 1
                self.assertEqual(i, bso_client.cur_epoch)
                self.assertEqual(bso_client.current_batch_size, 512)
        self.assertNotEqual(str(e_info.exception).find("cost upper bound"), -1)

        bso_client = self.BatchSizeOptimizer(self.mock_monitor, self.url, job)
        bs = bso_client.get_batch_size()
        bso_client.on_train_begin()

        self.assertTrue(bs == 2048 and bso_client.current_batch_size == 2048)

    def test_converge_fail(self):
        job = self.JobSpec.parse_obj(get_fake_job("test_converge_fail"))
        job.beta_knob = None  # disable early stop
        bso_client = self.BatchSizeOptimizer(self.mock_monitor, self.url, job)
        bso_client.on_train_begin()
        bs = bso_client.get_batch_size()

        self.assertTrue(bs == 1024 and bso_client.current_batch_size == 1024)

        i = 0
        with self.assertRaises(Exception) as e_info:
            while i < job.max_epochs + 10:  # Fail after max_epoch
                bso_client.on_evaluate(0.3)
                i += 1
                self.assertEqual(i, bso_client.cur_epoch)
                self.assertEqual(bso_client.current_batch_size, 1024)
        self.assertNotEqual(
            str(e_info.exception).find("Train failed to converge within max_epoch"), -1)

        bso_client = self.BatchSizeOptimizer(self.mock_monitor, self.url, job)
        bs = bso_client.get_batch_size()
        bso_client.on_train_begin()

        self.assertTrue(bs == 2048 and bso_client.current_batch_size == 2048)

    def test_distributed_setting(self):
        job = self.JobSpec.parse_obj(get_fake_job("test_distributed_setting"))
        NGPU = 4
        bso_clients = [self.BatchSizeOptimizer(self.mock_monitor, self.url, job, rank=i)
                       for i in range(NGPU)]

        # Only rank=0 can ask for bs
        for i in range(1, NGPU):
            with self.assertRaises(self.ZeusBSOBadOperationError):
                bso_clients[i].get_batch_size()

        bs = bso_clients[0].get_batch_size()
        # distribute batch size to other clients
        for i in range(1, NGPU):
            bso_clients[i].current_batch_size = bs
            bso_clients[i].trial_number = bso_clients[0].trial_number

        # Mark as unconverged from rank = 0 client
        i = 0
        with self.assertRaises(self.ZeusBSOTrainFailError) as e_info:
            while i < job.max_epochs + 10:  # Fail after max_epoch
                bso_clients[0].on_evaluate(0.3)
                i += 1
                self.assertEqual(i, bso_clients[0].cur_epoch)
                self.assertEqual(bso_clients[0].current_batch_size, 1024)
        self.assertNotEqual(
            str(e_info.exception).find("Train failed to converge within max_epoch"), -1)

        for i in range(1, NGPU):
            with self.assertRaises(self.ZeusBSOTrainFailError) as e_info:
                bso_clients[i].on_evaluate(0.3)
                self.assertEqual(bso_clients[i].current_batch_size, 1024)
            self.assertNotEqual(str(e_info.exception).find("is already reported."), -1)

    def test_report_error_wins_over_a_failed_reopen(self):
        """A report the server refuses (here: a trial it does not know) is the error raised,
        even when reopening the window after it fails too; a window call that fails on its
        own raises the monitor's exception."""
        from zbso.optimizer.batch_size.exceptions import ZeusBSORuntimError
        job = self.JobSpec.parse_obj(get_fake_job("test_reopen"))
        bso = self.BatchSizeOptimizer(self.mock_monitor, self.url, job, rank=1)
        bso.current_batch_size = 1024
        bso.trial_number = 99
        self.mock_monitor.begin_window.side_effect = ValueError("monitor says no")
        with self.assertRaises(ZeusBSORuntimError) as cm:
            bso.on_evaluate(0.3)
        self.assertIn("99", str(cm.exception))
        self.assertEqual(self.mock_monitor.begin_window.call_count, 1)  # the reopen
        with self.assertRaises(ValueError) as cm:
            bso.on_train_begin()
        self.assertEqual(str(cm.exception), "monitor says no")

    def test_the_mock_was_used(self):
        """The windows went to the mock, and its energy reached the server: the sum of the
        four GPUs' (Measurement.total_energy, computed) per epoch."""
        job = self.JobSpec.parse_obj(get_fake_job("test_mock_used"))
        bso = self.BatchSizeOptimizer(self.mock_monitor, self.url, job)
        bso.get_batch_size()
        bso.on_train_begin()
        bso.on_evaluate(0.9)
        self.assertEqual(self.mock_monitor.begin_window.call_count, 1)
        self.assertEqual(self.mock_monitor.end_window.call_count, 1)
        per_epoch = sum(self.mock_monitor.end_window.return_value.gpu_energy.values())
        self.assertAlmostEqual(bso.consumed_energy, per_epoch)
        self.assertAlmostEqual(bso.running_time, 37.24807469360)
        self.assertEqual(bso.job_spec.number_of_gpus, 4)
        self.assertEqual(bso.job_spec.gpu_model, "Tesla V100")


if __name__ == "__main__":
    unittest.main()
