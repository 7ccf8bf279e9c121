"""A trial is ended when the training process exits (seed 000's atexit PATCH /trials):
child Python processes get a batch size and exit in various ways; the database (read-only)
and the next request of the job show the trial Failed, so its batch size is explored
again. os._exit, which skips exit handlers, is the control that leaves it Dispatched."""

import sqlite3
import textwrap
import unittest

import support

DISPATCHED, SUCCEEDED, FAILED = 0, 1, 2   # src/core/types.h zbso_trial_status
EXPLORATION, CONCURRENT = 0, 1            # zbso_trial_type

CHILD = textwrap.dedent("""
    import gc, os
    from zbso.monitor import ZeusMonitor
    from zbso.optimizer.batch_size import BatchSizeOptimizer, JobSpec
    bso = BatchSizeOptimizer(
        monitor=ZeusMonitor(), server_url={url!r},
        job=JobSpec(job_id={job_id!r}, job_id_prefix="pyexit", batch_sizes=[16, 32, 64],
                    default_batch_size=32, max_epochs=5))
    print("batch_size", bso.get_batch_size(), "trial", bso.trial_number, flush=True)
    how = {how!r}
    if how == "finish":
        bso.on_train_begin()
        bso.on_evaluate(0.9)
        assert bso.training_finished
    elif how == "midway":
        bso.on_train_begin()
        bso.on_evaluate(0.1)
        assert not bso.training_finished
    elif how == "dropped":
        monitor = bso.monitor
        del bso
        gc.collect()
        monitor.close()
    elif how == "raise":
        raise RuntimeError("training crashed")
    elif how == "os_exit":
        os._exit(0)
""")


class TestTrialEndsAtExit(support.ServerCase):
    def child(self, job_id, how):
        code = CHILD.format(url=self.url, job_id=job_id, how=how)
        r = support.run_child(code, env={"ZBSO_CLIENT_RETRY_TIMEOUT": "10"})
        self.assertIn("batch_size 32 trial 1", r.stdout, r.stderr)
        return r

    def trials(self, job_id):
        conn = sqlite3.connect(f"file:{self.srv.db_path}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT trial_number, batch_size, type, status FROM trials "
                                "WHERE job_id = ? ORDER BY trial_number",
                                (job_id,)).fetchall()
        finally:
            conn.close()

    def next_trial(self, job_id):
        r = self.srv.request("GET", f"/jobs/batch_size?job_id={job_id}")
        self.assertEqual(r.status, 200, r)
        return r.json["batch_size"], r.json["trial_number"]

    def assert_ended_and_reexplored(self, job_id):
        self.assertEqual(self.trials(job_id), [(1, 32, EXPLORATION, FAILED)])
        # A Failed exploration does not count: 32 is explored again, not run concurrently.
        self.assertEqual(self.next_trial(job_id), (32, 2))
        self.assertEqual(self.trials(job_id)[1], (2, 32, EXPLORATION, DISPATCHED))

    def test_normal_exit_ends_the_trial(self):
        r = self.child("pyexit-normal", "plain")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_ended_and_reexplored("pyexit-normal")

    def test_exit_midway_through_training(self):
        r = self.child("pyexit-midway", "midway")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_ended_and_reexplored("pyexit-midway")

    def test_uncaught_exception_ends_the_trial(self):
        r = self.child("pyexit-raise", "raise")
        self.assertEqual(r.returncode, 1)
        self.assertIn("training crashed", r.stderr)
        self.assert_ended_and_reexplored("pyexit-raise")

    def test_dropping_the_objects_does_not_lose_the_end(self):
        r = self.child("pyexit-dropped", "dropped")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_ended_and_reexplored("pyexit-dropped")

    def test_finished_training_is_not_marked_failed(self):
        r = self.child("pyexit-finish", "finish")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.trials("pyexit-finish"), [(1, 32, EXPLORATION, SUCCEEDED)])
        self.assertNotIn("could not end trial", r.stderr)

    def test_control_os_exit_skips_the_end(self):
        r = self.child("pyexit-killed", "os_exit")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.trials("pyexit-killed"), [(1, 32, EXPLORATION, DISPATCHED)])
        # Its exploration is still running, so the next run is a concurrent one.
        self.assertEqual(self.next_trial("pyexit-killed"), (32, 2))
        self.assertEqual(self.trials("pyexit-killed")[1], (2, 32, CONCURRENT, DISPATCHED))


if __name__ == "__main__":
    unittest.main()
