"""The zbso package without a server: finding libzbso, Zeus's import paths, JobSpec,
the exception classes and their error codes."""

import json
import os
import unittest

import support
from support import run_child


class TestImport(unittest.TestCase):
    def setUp(self):
        support.require_env()

    def test_zeus_import_paths(self):
        import zbso
        from zbso.monitor import Measurement, ZeusMonitor
        from zbso.optimizer.batch_size import BatchSizeOptimizer, JobSpec
        from zbso.optimizer.batch_size.exceptions import (
            ZeusBSOBadOperationError, ZeusBSOConfigError, ZeusBSOError,
            ZeusBSOOperationOrderError, ZeusBSORuntimeError, ZeusBSORuntimError,
            ZeusBSOTrainFailError)
        self.assertIs(zbso.ZeusMonitor, ZeusMonitor)
        self.assertIs(zbso.Measurement, Measurement)
        self.assertIs(zbso.BatchSizeOptimizer, BatchSizeOptimizer)
        self.assertIs(zbso.JobSpec, JobSpec)
        self.assertIs(ZeusBSORuntimeError, ZeusBSORuntimError)
        for cls in (ZeusBSOBadOperationError, ZeusBSOConfigError, ZeusBSOOperationOrderError,
                    ZeusBSORuntimError, ZeusBSOTrainFailError):
            self.assertTrue(issubclass(cls, ZeusBSOError), cls)
            self.assertIs(getattr(zbso, cls.__name__), cls)

    def test_library_from_env(self):
        from zbso import _lib
        self.assertEqual(os.path.realpath(_lib.lib._name),
                         os.path.realpath(os.environ["ZBSO_LIBRARY"]))

    def test_missing_library_names_where_it_looked(self):
        r = run_child("import zbso", env={"ZBSO_LIBRARY": "/nonexistent/libzbso.so"})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ImportError", r.stderr)
        self.assertIn("/nonexistent/libzbso.so", r.stderr)
        self.assertIn("ZBSO_LIBRARY", r.stderr)

    def test_not_a_library(self):
        r = run_child("import zbso", env={"ZBSO_LIBRARY": os.path.abspath(__file__)})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ImportError", r.stderr)
        self.assertIn(os.path.abspath(__file__), r.stderr)

    def test_error_codes_map_to_classes(self):
        from zbso import _lib
        from zbso.optimizer.batch_size import exceptions as ex
        cases = {_lib.ECONFIG: ex.ZeusBSOConfigError,
                 _lib.EORDER: ex.ZeusBSOOperationOrderError,
                 _lib.EBADOP: ex.ZeusBSOBadOperationError,
                 _lib.ERUNTIME: ex.ZeusBSORuntimError,
                 _lib.ETRAINFAIL: ex.ZeusBSOTrainFailError,
                 _lib.ENOMEM: ex.ZeusBSORuntimError}
        for code, cls in cases.items():
            e = ex.error_for(code, "the message")
            self.assertIs(type(e), cls)
            self.assertEqual(str(e), "the message")
            self.assertEqual(e.code, code)
        # No message: the code's name from zbso_strerror.
        e = ex.error_for(_lib.EORDER, "")
        self.assertIn(str(_lib.EORDER), str(e))
        self.assertGreater(len(str(e)), len(str(_lib.EORDER)) + 3)


class TestJobSpec(unittest.TestCase):
    def setUp(self):
        support.require_env()
        from zbso import JobSpec
        self.JobSpec = JobSpec

    def test_defaults_are_seed_001s(self):
        j = self.JobSpec(job_id_prefix="mnist", batch_sizes=[32, 64], default_batch_size=32)
        self.assertEqual(j.dict(), {
            "job_id": None, "job_id_prefix": "mnist", "batch_sizes": [32, 64],
            "default_batch_size": 32, "eta_knob": 0.5, "beta_knob": 2.0,
            "target_metric": 0.5, "higher_is_better_metric": True, "max_epochs": 100,
            "num_pruning_rounds": 2, "window_size": 0, "mab_prior_mean": 0.0,
            "mab_prior_precision": 0.0, "mab_num_explorations": 2, "mab_seed": None})

    def test_json_types_and_sorting(self):
        j = self.JobSpec(job_id="mnist-1", job_id_prefix="mnist",
                         batch_sizes=[4096, 32, 256], default_batch_size=256, eta_knob=1,
                         beta_knob=None, max_epochs=10.0, mab_seed=7)
        d = json.loads(j.json())
        self.assertEqual(d["batch_sizes"], [32, 256, 4096])
        self.assertEqual(d["job_id"], "mnist-1")
        self.assertIsNone(d["beta_knob"])
        self.assertIsInstance(d["eta_knob"], float)  # 1 -> 1.0: the server wants a number
        self.assertIsInstance(d["max_epochs"], int)
        self.assertEqual(d["mab_seed"], 7)
        self.assertEqual(j.to_json(), j.json())

    def test_keyword_only(self):
        with self.assertRaises(TypeError):
            self.JobSpec("mnist", [32], 32)  # pylint: disable=too-many-function-args

    def test_rejects(self):
        base = dict(job_id_prefix="p", batch_sizes=[8, 16], default_batch_size=8)
        bad = [
            dict(job_id_prefix=""),
            dict(batch_sizes=[]),
            dict(default_batch_size=32),
            dict(eta_knob=1.5),
            dict(eta_knob=float("nan")),
            dict(beta_knob=0),
            dict(beta_knob=-1.0),
            dict(job_id="q-1"),
            dict(batch_sizes=[8, 16.5]),
            dict(batch_sizes=["8"]),
            dict(max_epochs=0),
            dict(max_epochs=2.5),
            dict(higher_is_better_metric="yes"),
        ]
        for over in bad:
            with self.subTest(over=over), self.assertRaises(ValueError):
                self.JobSpec(**{**base, **over})


if __name__ == "__main__":
    unittest.main()
