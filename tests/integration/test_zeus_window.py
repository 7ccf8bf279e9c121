"""test_zeus_window.py: window_size as Zeus applies it, through a real `zbso serve` (SQLite,
or PostgreSQL under tests/pg/with_pg.sh), when Concurrent-style trials of one batch size
finish out of trial-number order.

Zeus's GaussianTS.report (server/mab.py) reads the batch size's Succeeded trials before the
reported one is stored, newest trial number first, at most window_size of them
(batch_size_state/repository.py get_trial_results_of_bs); a full window gives up its oldest
and turns ascending; the reported trial's cost comes last. The arm is fitted from those
rewards. zbso once fitted from the last window_size Succeeded trials by trial number with
the reported one included, so a trial reported after newer ones could be left out of its
own refit.

The scenarios make every decision that matters deterministic without modelling numpy's
random stream: mab_num_explorations is 0, so every answer in MAB is Thompson sampling, and
an arm fitted from rewards that are all equal has infinite precision (Zeus ignores the
prior then), so its sample is its mean exactly. The expected batch sizes follow from the
rule by hand (worked out in each test). Where the old rule's arm has a finite precision, a
prior of precision 1e6 at -1000 holds its sample within about 0.001 of -1000: far above
every exact arm here, so the old rule would answer 8 where Zeus answers 16."""

import unittest

from zbsoserver import ServerTestCase, job_spec

TIME_S = 10.0          # every run: cost = 0.5 * energy + (0.5 * 300) * 10


def energy_for(cost):
    return 2.0 * (cost - 150.0 * TIME_S)


class ZeusWindowTest(ServerTestCase):
    def play(self, window_size, n_concurrent, report_costs, prior=None):
        """Registers a job over batch sizes 8 and 16 (one pruning round: trial 1 explores
        8 at cost 2000, trial 2 explores 16 at cost 2500), dispatches n_concurrent MAB trials
        (all 8: arm 8 at -2000 beats arm 16 at -2500, both exact), reports them in the order
        of report_costs ({trial number: cost}, in that order), and returns the batch size of
        the next answer."""
        extra = {} if prior is None else {"mab_prior_mean": prior[0],
                                          "mab_prior_precision": prior[1]}
        job = f"itest-w{window_size}"
        r = self.srv.request("POST", "/jobs", body=job_spec(
            job_id=job, batch_sizes=[8, 16], default_batch_size=8, num_pruning_rounds=1,
            window_size=window_size, mab_num_explorations=0, mab_seed=42, beta_knob=None,
            eta_knob=0.5, max_power=300.0, target_metric=0.5, **extra))
        self.assertEqual(r.status, 201, r)

        def next_bs(want_trial):
            r = self.srv.request("GET", "/jobs/batch_size?job_id=" + job)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json["trial_number"], want_trial, r)
            return r.json["batch_size"]

        def report(trial, bs, cost):
            r = self.srv.request("POST", "/report", body={
                "job_id": job, "batch_size": bs, "trial_number": trial, "time": TIME_S,
                "energy": energy_for(cost), "metric": 0.9, "current_epoch": 1})
            self.assertEqual(r.status, 200, r)
            self.assertTrue(r.json["converged"], r)

        self.assertEqual(next_bs(1), 8)
        report(1, 8, 2000.0)
        self.assertEqual(next_bs(2), 16)
        report(2, 16, 2500.0)
        for k in range(n_concurrent):
            self.assertEqual(next_bs(3 + k), 8)
        for trial, cost in report_costs.items():
            report(trial, 8, cost)
        return next_bs(3 + n_concurrent)

    def test_window_1(self):
        """Trials 3 and 4 run together; 4 ends first (cost 1800), then 3 (cost 3000).
        Report of 3: others newest first, at most 1: [4]; full, so 4 is dropped: arm 8 =
        -3000 (exact) < arm 16 = -2500: next is 16. The old rule fitted the last trial by
        number, 4: -1800, and answered 8."""
        self.assertEqual(self.play(1, 2, {4: 1800.0, 3: 3000.0}), 16)

    def test_window_2(self):
        """Trials 3, 4, 5 together; they end 5 (3000), 4 (2900), 3 (3000). Report of 3:
        others newest first, at most 2: [5, 4]; full, 4 dropped: rewards -3000 -3000, exact
        -3000 < -2500: next is 16. The old rule fitted 4 and 5 (-2900, -3000): variance 2500,
        precision 1e6 + 2 / 2500, mean within 1e-3 of the prior's -1000: answered 8."""
        self.assertEqual(self.play(2, 3, {5: 3000.0, 4: 2900.0, 3: 3000.0},
                                   prior=(-1000.0, 1e6)), 16)

    def test_window_5(self):
        """Trials 3..9 together; 9, 8, 7, 6 end at 3000, 5 at 2900, 4 at 2000, then 3 at
        3000. Report of 3: others newest first, at most 5: [9, 8, 7, 6, 5]; full, 5 dropped:
        6 7 8 9 then 3, all -3000: exact, next is 16. The old rule fitted 5..9, 5's -2900
        among them: near the prior's -1000, answered 8."""
        costs = {9: 3000.0, 8: 3000.0, 7: 3000.0, 6: 3000.0, 5: 2900.0, 4: 2000.0,
                 3: 3000.0}
        self.assertEqual(self.play(5, 7, costs, prior=(-1000.0, 1e6)), 16)

    def test_window_0_means_all(self):
        """Window 0 takes every Succeeded trial (Zeus sets no LIMIT then), not none: trials 3
        and 4 end at 2600 each; the report of 4 fits -2600 -2000 -2600 (3 and 1 newest
        first, then 4): variance > 0, near the prior's -1000: next is 8. Fitting the
        reported trial alone would give an exact -2600 < -2500 and answer 16. (The old rule
        read the same trials, so this guards the meaning of 0 rather than the fix.)"""
        self.assertEqual(self.play(0, 2, {3: 2600.0, 4: 2600.0}, prior=(-1000.0, 1e6)), 8)


if __name__ == "__main__":
    unittest.main()
