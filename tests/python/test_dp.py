"""Zeus's data-parallel pattern with the binding (examples/batch_size_optimizer/mnist/
train_dp.py): two ranks as processes (dp_rank.py), rank 0 asking for the batch size and
passing it with the trial number to rank 1 through a pipe, rank 1 setting
current_batch_size and trial_number, both reporting every epoch of the same trial to a
real `zbso serve`. As in Zeus, whichever rank reports the deciding epoch first gets the
server's verdict and the other its "already reported" answer, so both stop there."""

import json
import os
import subprocess
import sys
import unittest

import support

HERE = os.path.dirname(os.path.abspath(__file__))


class TestDataParallel(support.ServerCase):
    def run_ranks(self, job_id, epochs, curve):
        r, w = os.pipe()
        # The all-reduce stand-in (dp_rank.py): a pipe each way between the ranks.
        to1_r, to1_w = os.pipe()
        to0_r, to0_w = os.pipe()
        env = dict(os.environ, WORLD_SIZE="2", ZEUS_SERVER_URL=self.url, ZEUS_JOB_ID=job_id,
                   DP_EPOCHS=str(epochs), DP_CURVE=",".join(map(str, curve)),
                   PYTHONPATH=os.path.join(support.REPO, "python"))
        procs = []
        for rank, fd, sync in ((1, r, (to0_w, to1_r)), (0, w, (to1_w, to0_r))):
            procs.append(subprocess.Popen(
                [sys.executable, os.path.join(HERE, "dp_rank.py")],
                env=dict(env, RANK=str(rank), DP_PIPE_FD=str(fd),
                         DP_SYNC_FDS=f"{sync[0]},{sync[1]}"),
                pass_fds=(fd, *sync),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for f in (r, w, to1_r, to1_w, to0_r, to0_w):
            os.close(f)
        out = {}
        for p in procs:
            stdout, stderr = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, stderr)
            res = json.loads(stdout.strip().splitlines()[-1])
            out[res["rank"]] = res
        return out[0], out[1]

    def reports(self):
        """The POST /report answers the server logged (the request log)."""
        return [line for line in self.srv.log_tail(1 << 20).splitlines()
                if "POST /report 200" in line]

    def test_both_ranks_report_the_trial(self):
        r0, r1 = self.run_ranks("mnist-dev-dp1", 5, [0.1, 0.3, 0.6, 0.7, 0.8])
        for r in (r0, r1):
            self.assertEqual((r["batch_size"], r["trial"]), (256, 1), r)
            self.assertEqual(r["per_rank"], 128)
            self.assertEqual(r["lr"], 0.04)
            # Converged at epoch 3: the first rank there gets "Train succeeded", the other
            # "already reported" with converged true; neither raises.
            self.assertEqual((r["epochs"], r["cur_epoch"], r["finished"], r["error"]),
                             (3, 3, True, None), r)
        self.assertEqual(len(self.reports()), 6)
        trial = self.srv.request("GET", "/jobs/mnist-dev-dp1/trials/1").json
        self.assertEqual(trial["status"], "Succeeded", trial)
        self.assertTrue(trial["converged"], trial)

    def test_both_ranks_fail_the_trial(self):
        r0, r1 = self.run_ranks("mnist-dev-dp2", 2, [0.1, 0.2])
        for r in (r0, r1):
            self.assertEqual((r["epochs"], r["finished"]), (2, True), r)
            self.assertEqual(r["error"][0], "ZeusBSOTrainFailError", r)
        both = r0["error"][1] + "\n" + r1["error"][1]
        self.assertIn("Train failed to converge within max_epoch", both)
        self.assertIn("is already reported.", both)
        self.assertEqual(len(self.reports()), 4)


if __name__ == "__main__":
    unittest.main()
