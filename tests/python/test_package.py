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
        from zbso.callback import Callback, CallbackSet
        from zbso.exception import ZeusBaseError
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
        self.assertIs(zbso.Callback, Callback)
        self.assertIs(zbso.CallbackSet, CallbackSet)
        self.assertIs(ZeusBSORuntimeError, ZeusBSORuntimError)
        self.assertTrue(issubclass(BatchSizeOptimizer, Callback))
        self.assertTrue(issubclass(ZeusBSOError, ZeusBaseError))
        for cls in (ZeusBSOBadOperationError, ZeusBSOConfigError, ZeusBSOOperationOrderError,
                    ZeusBSORuntimError, ZeusBSOTrainFailError):
            self.assertTrue(issubclass(cls, ZeusBSOError), cls)
            self.assertTrue(issubclass(cls, ZeusBaseError), cls)
            self.assertIs(getattr(zbso, cls.__name__), cls)
        # Zeus's base error: .message, and str() is it.
        e = ZeusBSOConfigError("No GPUs detected.")
        self.assertEqual((e.message, str(e), e.args), ("No GPUs detected.",) * 2
                         + (("No GPUs detected.",),))

    def test_callback_set_calls_each_hook_in_order(self):
        from zbso.callback import Callback, CallbackSet
        calls = []

        class Recorder(Callback):
            def __init__(self, name):
                self.name = name

            def __getattribute__(self, attr):
                if attr.startswith("on_"):
                    return lambda *a: calls.append((object.__getattribute__(self, "name"),
                                                    attr) + a)
                return object.__getattribute__(self, attr)

        hooks = [("on_train_begin",), ("on_train_end",), ("on_epoch_begin",),
                 ("on_epoch_end",), ("on_step_begin",), ("on_step_end",),
                 ("on_evaluate", 0.5), ("on_instruction_begin", "forward"),
                 ("on_instruction_end", "backward")]
        cs = CallbackSet([Recorder("a"), Callback(), Recorder("b")])
        for hook, *args in hooks:
            getattr(cs, hook)(*args)
        self.assertEqual(calls, [(n, h, *a) for h, *a in hooks for n in ("a", "b")])
        # The base class's hooks do nothing and take Zeus's arguments.
        base = Callback()
        for hook, *args in hooks:
            self.assertIsNone(getattr(base, hook)(*args))

    def test_lr_scalers(self):
        from zbso.utils.lr_scaler import LinearScaler, SquareRootScaler
        self.assertEqual(LinearScaler(bs=64, lr=0.01).compute_lr(new_bs=256), 0.04)
        self.assertAlmostEqual(SquareRootScaler(bs=64, lr=0.01).compute_lr(256), 0.02)
        self.assertEqual(LinearScaler(64, 0.01), LinearScaler(bs=64, lr=0.01))

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
            dict(batch_sizes=[]),
            dict(default_batch_size=32),
            dict(default_batch_size=0),
            dict(eta_knob=1.5),
            dict(beta_knob=0),
            dict(beta_knob=-1.0),
            dict(job_id="q-1"),
            dict(batch_sizes=["eight"]),
            dict(batch_sizes="8,16"),
            dict(max_epochs=0),
            dict(max_epochs="2.5"),
            dict(num_pruning_rounds=-1),
            dict(mab_num_explorations=-1),
            dict(higher_is_better_metric="maybe"),
            dict(higher_is_better_metric=2),
            dict(job_id_prefix=None),
            # Stricter than pydantic (docs/ZEUS.md): no truncation, finite floats only.
            dict(batch_sizes=[8, 16.5]),
            dict(max_epochs=2.5),
            dict(eta_knob=float("nan")),
            dict(target_metric=float("inf")),
        ]
        for over in bad:
            with self.subTest(over=over), self.assertRaises(ValueError):
                self.JobSpec(**{**base, **over})
        missing = dict(base)
        del missing["default_batch_size"]
        with self.assertRaises(ValueError) as cm:
            self.JobSpec(**missing)
        self.assertIn("default_batch_size\n  field required", str(cm.exception))

    def test_coercions_as_pydantic(self):
        """Zeus's JobSpec is a pydantic (v1) model: strings of numbers, 'yes'/'no', numbers
        for strings and unknown keys are accepted as pydantic accepts them."""
        j = self.JobSpec(job_id_prefix=7, batch_sizes=("64", 32.0, 128),
                         default_batch_size="64", max_epochs="100", eta_knob="0.25",
                         beta_knob=3, higher_is_better_metric="no", mab_seed="5",
                         seed=1, unknown="ignored")
        self.assertEqual(j.job_id_prefix, "7")
        self.assertEqual(j.batch_sizes, [32, 64, 128])
        self.assertEqual((j.default_batch_size, j.max_epochs, j.mab_seed), (64, 100, 5))
        self.assertEqual((j.eta_knob, j.beta_knob), (0.25, 3.0))
        self.assertIs(j.higher_is_better_metric, False)
        self.assertNotIn("seed", j.dict())
        self.assertEqual(self.JobSpec(job_id_prefix="", batch_sizes=[1],
                                      default_batch_size=1).job_id_prefix, "")

    def test_model_methods(self):
        from zbso.optimizer.batch_size.common import (CreatedJob, JobSpecFromClient,
                                                      ReportResponse, TrainingResult, TrialId)
        fake = {"job_id": "test-1", "job_id_prefix": "test", "seed": 1,
                "default_batch_size": 1024, "batch_sizes": [32, 64, 256, 512, 1024, 4096],
                "beta_knob": 2, "window_size": 5, "mab_seed": 123456}
        j = self.JobSpec.parse_obj(fake)
        self.assertEqual(j, self.JobSpec.parse_raw(json.dumps(fake)))
        self.assertEqual(self.JobSpec.parse_raw(j.json().encode()), j)
        c = j.copy(update={"max_epochs": 5})
        self.assertEqual((c.max_epochs, j.max_epochs), (5, 100))
        j.beta_knob = None  # assignment as pydantic does it: set, not checked
        self.assertIsNone(j.dict()["beta_knob"])
        with self.assertRaises(ValueError):
            j.no_such_field = 1
        with self.assertRaises(ValueError):
            self.JobSpec.parse_raw("{not json")
        # JobSpecFromClient: pydantic puts the second base's (GpuConfig's) fields first.
        spec = JobSpecFromClient(**j.dict(), max_power=1200, number_of_gpus=4,
                                 gpu_model="Tesla V100")
        self.assertEqual(list(spec.dict())[:4],
                         ["max_power", "number_of_gpus", "gpu_model", "job_id"])
        with self.assertRaises(ValueError):
            JobSpecFromClient(**j.dict(), max_power=0, number_of_gpus=4, gpu_model="x")
        with self.assertRaises(ValueError):
            JobSpecFromClient(**j.dict(), max_power=1, number_of_gpus=4, gpu_model="")
        with self.assertRaises(ValueError):  # CreatedJob needs a job_id
            CreatedJob(**{**spec.dict(), "job_id": None})
        t = TrainingResult(job_id="a", batch_size=32, trial_number=1, time=1, energy=2,
                           metric=0.5, current_epoch=1)
        self.assertEqual(list(t.dict()), ["job_id", "batch_size", "trial_number", "time",
                                          "energy", "metric", "current_epoch"])
        self.assertEqual(TrialId.parse_obj(t.dict()).dict(),
                         {"job_id": "a", "batch_size": 32, "trial_number": 1})
        r = ReportResponse.parse_raw('{"stop_train": true, "converged": false, '
                                     '"message": "m"}')
        self.assertEqual((r.stop_train, r.converged, r.message), (True, False, "m"))
        self.assertEqual(str(r), "stop_train=True converged=False message='m'")
        self.assertEqual(repr(r),
                         "ReportResponse(stop_train=True, converged=False, message='m')")


if __name__ == "__main__":
    unittest.main()
