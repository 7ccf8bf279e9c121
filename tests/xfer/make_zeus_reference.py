#!/usr/bin/python3
"""make_zeus_reference.py: writes tests/testdata/zeus_import_reference.json, the Zeus
database contents and reference decisions that tests/xfer/test_import_zeus.py checks
`zbso import zeus` against. Not run by the tests: it needs numpy (Debian's python3-numpy,
1.24.2), which the tests do not.

How the references are made. Zeus's BSO server cannot run here (it needs FastAPI,
SQLAlchemy 2 and pydantic from PyPI), so ZeusServer below restates it, statement for
statement, from Zeus's source at commit 75a8b9398034eb9baf74ca0a830c2c31bcce52cd
(github.com/ml-energy/zeus):
- zeus/optimizer/batch_size/server/optimizer.py (predict, report, end_trial),
- server/explorer.py (PruningExploreManager.next_batch_size),
- server/mab.py (GaussianTS: _fit_arm, predict, construct_mab, report),
- server/services/service.py (update_trial with its min cost rule, _get_generator,
  get_random_choices, get_normal: the generator state loaded from and saved to JSON of
  numpy's bit_generator.state around every draw),
- server/batch_size_state/repository.py (which trials each query returns, in which order),
- zeus/utils/metric.py (zeus_cost).
Each job is registered and driven through its first recurrences by this model; its state
then is written out as the rows of Zeus's tables (the "Zeus database"), and the model
continues for 10 more recurrences, whose answers are the reference. Every job has a
mab_seed (without one Zeus draws from a clock-seeded generator at each request, so its
answers cannot be reproduced by anyone), and the jobs cover pruning round 0 and round 1,
pruning ending during the replay, the MAB stage with window_size 0 and > 0, a Dispatched
exploration (Concurrent trials follow), a Dispatched MAB trial and a Failed trial.

Zeus on MySQL keeps its Float columns as MySQL FLOAT (single precision, read back as the
6 significant digits MariaDB prints), so the "mysql" variant runs the same model with that
rounding wherever Zeus writes a float; the "exact" variant is SQLite's and PostgreSQL's
(double precision). The model also holds zbso's min-cost rule (SPEC §3.2, only converged
runs set the bar) next to Zeus's and stops if they ever differ: outcomes are chosen so
that the known difference does not arise, and every reference is Zeus's decision.

    /usr/bin/python3 tests/xfer/make_zeus_reference.py > tests/testdata/zeus_import_reference.json
"""

import datetime
import json
import sys

import numpy as np

ZEUS_COMMIT = "75a8b9398034eb9baf74ca0a830c2c31bcce52cd"
BASE = datetime.datetime(2026, 3, 1, 12, 0, 0)


def zeus_cost(energy, time, eta_knob, max_power):
    return eta_knob * energy + (1 - eta_knob) * max_power * time


def mysql_float(x):
    """A value as Zeus reads it back from a MySQL FLOAT column."""
    if x is None or not np.isfinite(x):
        return x
    return float("%.6g" % float(np.float32(x)))


class Trial:
    def __init__(self, number, bs, kind, start):
        self.number, self.bs, self.type = number, bs, kind
        self.status = "Dispatched"
        self.start, self.end = start, None
        self.time = self.energy = self.converged = None


class ZeusServer:
    """One job on Zeus's BSO server (see the module's docstring for the sources)."""

    def __init__(self, spec, fl):
        self.s = dict(spec)
        self.fl = fl  # how a Float column stores a value
        for k in ("eta_knob", "beta_knob", "target_metric", "max_power", "mab_prior_mean",
                  "mab_prior_precision"):
            self.s[k] = fl(self.s[k])
        self.stage = "Pruning"
        self.min_cost = None
        self.min_cost_bs = spec["default_batch_size"]
        self.exp_default_bs = spec["default_batch_size"]
        self.rng_state = json.dumps(np.random.default_rng(spec["mab_seed"]).bit_generator.state)
        self.trials = []
        self.arms = {}  # bs -> [mean, precision, reward_precision, n], insertion order
        self.zbso_min_cost = None
        self.clock = 0

    def now(self):
        self.clock += 1
        return BASE + datetime.timedelta(seconds=600 * self.clock)

    # service.py
    def rng(self):
        g = np.random.default_rng(0)
        g.bit_generator.state = json.loads(self.rng_state)
        return g

    def choice(self, arr):
        g = self.rng()
        res = g.choice(np.array(arr), len(arr), replace=False)
        self.rng_state = json.dumps(g.bit_generator.state)
        return [int(x) for x in res]

    def normal(self, loc, scale):
        g = self.rng()
        res = g.normal(loc, scale)
        self.rng_state = json.dumps(g.bit_generator.state)
        return res

    def create_trial(self, bs, kind):
        t = Trial(len(self.trials) + 1 if not self.trials else self.trials[-1].number + 1, bs,
                  kind, self.now())
        self.trials.append(t)
        return t

    def explorations(self):
        per = {}
        for t in self.trials:
            if t.type == "Exploration" and t.status != "Failed":
                per.setdefault(t.bs, []).append(t)
        return per

    # explorer.py
    def next_batch_size(self):
        s = self.s
        batch_sizes = list(s["batch_sizes"])
        exp_default_bs = s["default_batch_size"]
        hist = self.explorations()
        for rnd in range(s["num_pruning_rounds"]):
            converged, min_c, min_bs = [], float("inf"), 0
            batch_sizes.sort()
            idx = batch_sizes.index(exp_default_bs)
            down = sorted(batch_sizes[: idx + 1], reverse=True)
            up = sorted(batch_sizes[idx + 1:])
            for lst in (down, up):
                for bs in lst:
                    if bs in hist and len(hist[bs]) > rnd:
                        e = hist[bs][rnd]
                        if e.status == "Dispatched":
                            return self.create_trial(self.min_cost_bs, "Concurrent")
                        if not e.converged:
                            break
                        converged.append(bs)
                        c = zeus_cost(e.energy, e.time, s["eta_knob"], s["max_power"])
                        if c < min_c:
                            min_c, min_bs = c, bs
                    else:
                        return self.create_trial(bs, "Exploration")
            exp_default_bs = min_bs
            batch_sizes = converged
            if not batch_sizes:
                raise RuntimeError("no converged batch size")
        return sorted(batch_sizes)

    # mab.py
    def fit_arm(self, rewards):
        s = self.s
        variance = np.var(rewards)
        reward_prec = np.inf if variance == 0.0 else np.reciprocal(variance)
        mean, prec = s["mab_prior_mean"], s["mab_prior_precision"]
        if reward_prec == np.inf:
            new_prec, new_mean = np.inf, rewards.mean()
        else:
            new_prec = prec + len(rewards) * reward_prec
            new_mean = (prec * mean + reward_prec * rewards.sum()) / new_prec
        fl = self.fl
        return [fl(float(new_mean)), fl(float(new_prec)), fl(float(reward_prec)), len(rewards)]

    def mab_predict(self):
        s = self.s
        arms = list(self.arms.items())
        for bs in self.choice([bs for bs, _ in arms]):
            if self.arms[bs][3] < s["mab_num_explorations"]:
                return bs
        exp = {}
        for bs, a in arms:
            exp[bs] = self.normal(a[0], np.sqrt(np.reciprocal(a[1])))
        return max(exp, key=exp.get)

    def construct_mab(self, good):
        s = self.s
        hist = self.explorations()
        for bs in good:
            rewards = [-zeus_cost(t.energy, t.time, s["eta_knob"], s["max_power"])
                       for t in hist[bs]]
            self.arms[bs] = self.fit_arm(np.array(rewards))
        self.stage = "MAB"

    def mab_report(self, t, time, energy):
        s = self.s
        res = [x for x in reversed(self.trials) if x.bs == t.bs and x.status == "Succeeded"]
        if s["window_size"] > 0:
            res = res[: s["window_size"]]
        if len(res) >= s["window_size"] and s["window_size"] > 0:
            res.pop()
            res.reverse()
        costs = [-zeus_cost(m.energy, m.time, s["eta_knob"], s["max_power"]) for m in res]
        costs.append(-zeus_cost(energy, time, s["eta_knob"], s["max_power"]))
        if t.type != "MAB":
            raise RuntimeError("Zeus refuses an arm update from a non-MAB trial")
        self.arms[t.bs] = self.fit_arm(np.array(costs))

    # optimizer.py
    def predict(self):
        if self.stage == "MAB":
            t = self.create_trial(self.mab_predict(), "MAB")
        else:
            res = self.next_batch_size()
            if isinstance(res, list):
                self.construct_mab(res)
                t = self.create_trial(self.mab_predict(), "MAB")
            else:
                t = res
        return t

    def report(self, t, time, energy, metric, epoch):
        s = self.s
        cost_ub = np.inf
        if s["beta_knob"] is not None and self.min_cost is not None:
            cost_ub = s["beta_knob"] * self.min_cost
        cost = zeus_cost(energy, time, s["eta_knob"], s["max_power"])
        within = cost_ub >= cost
        conv = (s["higher_is_better_metric"] and s["target_metric"] <= metric) or (
            not s["higher_is_better_metric"] and s["target_metric"] >= metric)
        if within and epoch < s["max_epochs"] and not conv:
            return False, False
        converged = conv and within
        if self.stage == "MAB":
            self.mab_report(t, time, energy)
        # service.update_trial
        t.status, t.end = "Succeeded", self.now()
        t.time, t.energy, t.converged = self.fl(time), self.fl(energy), converged
        if self.min_cost is None or self.min_cost > cost:
            self.min_cost, self.min_cost_bs = self.fl(cost), t.bs
        # zbso's rule (SPEC §3.2) must agree, or the reference would not be Zeus's
        if converged and (self.zbso_min_cost is None or cost < self.zbso_min_cost):
            self.zbso_min_cost = self.fl(cost)
        if self.zbso_min_cost != self.min_cost:
            raise RuntimeError("a non-converged run lowered Zeus's min cost: pick other outcomes")
        return True, converged

    def end_trial(self, t):
        if t.status == "Dispatched":
            t.status, t.end = "Failed", self.now()

    # the rows of Zeus's tables (database/schema.py)
    def rows(self):
        s = self.s
        fmt = "%Y-%m-%d %H:%M:%S"
        job = {
            "job_id": s["job_id"], "job_id_prefix": s["job_id_prefix"],
            "default_batch_size": s["default_batch_size"],
            "higher_is_better_metric": s["higher_is_better_metric"],
            "eta_knob": s["eta_knob"], "beta_knob": s["beta_knob"],
            "target_metric": s["target_metric"], "max_epochs": s["max_epochs"],
            "num_pruning_rounds": s["num_pruning_rounds"], "window_size": s["window_size"],
            "max_power": s["max_power"], "number_of_gpus": s["number_of_gpus"],
            "gpu_model": s["gpu_model"], "mab_prior_mean": s["mab_prior_mean"],
            "mab_prior_precision": s["mab_prior_precision"],
            "mab_num_explorations": s["mab_num_explorations"], "mab_seed": s["mab_seed"],
            "mab_random_generator_state": self.rng_state,
            "exp_default_batch_size": self.exp_default_bs, "stage": self.stage,
            "min_cost": self.min_cost, "min_cost_batch_size": self.min_cost_bs,
        }
        trials = [{
            "job_id": s["job_id"], "batch_size": t.bs, "trial_number": t.number,
            "start_timestamp": t.start.strftime(fmt), "type": t.type, "status": t.status,
            "end_timestamp": t.end.strftime(fmt) if t.end else None, "time": t.time,
            "energy": t.energy, "converged": t.converged} for t in self.trials]
        arms = [{"job_id": s["job_id"], "batch_size": bs, "param_mean": a[0],
                 "param_precision": a[1], "reward_precision": a[2], "num_observations": a[3]}
                for bs, a in self.arms.items()]
        return {"Job": job, "BatchSize": [{"job_id": s["job_id"], "batch_size": b}
                                          for b in sorted(s["batch_sizes"])],
                "Trial": trials, "GaussianTsArmState": arms}


def outcome(spec, bs, k):
    """A run's final report: integral time and energy (exact in every Float column); the
    batch sizes in spec["bad"] do not reach the target and cost the most."""
    bad = bs in spec.get("bad", ())
    time = 60 + (bs * 7 + k * 13) % 50 + (400 if bad else 0)
    energy = 3000 + 5 * ((bs * 11 + k * 29) % 400) + (30000 if bad else 0)
    hib = spec["higher_is_better_metric"]
    reach = spec["target_metric"] + (0.05 if hib else -0.05)
    miss = spec["target_metric"] - (0.2 if hib else -0.2)
    return float(time), float(energy), miss if bad else reach, spec["max_epochs"] if bad else 3


def spec(job_id, **kw):
    s = {"job_id": job_id, "job_id_prefix": job_id.split("-")[0], "batch_sizes": [16, 32, 64,
         128, 256], "default_batch_size": 64, "higher_is_better_metric": True, "eta_knob": 0.5,
         "beta_knob": 2.0, "target_metric": 0.5, "max_epochs": 20, "num_pruning_rounds": 2,
         "window_size": 0, "max_power": 300.0, "number_of_gpus": 1, "gpu_model": "A100",
         "mab_prior_mean": 0.0, "mab_prior_precision": 0.0, "mab_num_explorations": 2,
         "mab_seed": 1}
    s.update(kw)
    return s


# (spec, recurrences before the snapshot, what to leave behind: "dispatch" an unreported
# trial, "fail" one, or nothing)
JOBS = [
    (spec("prune0-a", mab_seed=11, bad=(256,)), 2, None),
    (spec("prune0-b", mab_seed=12, bad=(16,)), 3, "dispatch"),
    (spec("prune1-w3", mab_seed=13, window_size=3, bad=(16,)), 5, "fail"),
    (spec("prunend-w0", mab_seed=14, batch_sizes=[32, 64, 128], bad=(128,)), 4, None),
    (spec("mab-w0", mab_seed=15, bad=(256,), eta_knob=0.3), 12, None),
    (spec("mab-w4", mab_seed=16, window_size=4, bad=(16,), beta_knob=None), 14, "dispatch"),
    (spec("mab-w1", mab_seed=17, window_size=1, mab_num_explorations=3,
          higher_is_better_metric=False, target_metric=2.5, bad=(256,)), 9, "fail"),
    (spec("mab-prior", mab_seed=2**31 - 1, mab_prior_mean=-9000.0, mab_prior_precision=0.5,
          batch_sizes=[8, 24, 40], default_batch_size=24, num_pruning_rounds=1,
          window_size=2, bad=()), 7, None),
]


def build(fl):
    jobs, replay = [], {}
    for s, before, leave in JOBS:
        z = ZeusServer(s, fl)
        k = 0
        for _ in range(before):
            t = z.predict()
            z.report(t, *outcome(s, t.bs, k))
            k += 1
        if leave is not None:
            t = z.predict()
            if leave == "fail":
                z.end_trial(t)
            k += 1
        jobs.append(z.rows())
        steps = []
        for _ in range(10):
            t = z.predict()
            rep = outcome(s, t.bs, k)
            stop, conv = z.report(t, *rep)
            steps.append({"batch_size": t.bs, "trial_number": t.number, "type": t.type,
                          "report": {"time": rep[0], "energy": rep[1], "metric": rep[2],
                                     "current_epoch": rep[3]},
                          "stop_train": stop, "converged": conv, "stage_after": z.stage})
            k += 1
        replay[s["job_id"]] = steps
    return jobs, replay


def main():
    out = {"_about": (
        "Zeus database contents and the next 10 decisions of Zeus's BSO server for each job,"
        " from tests/xfer/make_zeus_reference.py (its docstring says how they were made),"
        " numpy " + np.__version__ + ", Zeus commit " + ZEUS_COMMIT + ". 'exact': SQLite and"
        " PostgreSQL (double precision); 'mysql': Zeus's Float columns as MySQL FLOAT."),
        "zeus_commit": ZEUS_COMMIT}
    for name, fl in (("exact", lambda x: x), ("mysql", mysql_float)):
        jobs, replay = build(fl)
        out[name] = {"jobs": jobs, "replay": replay}
    json.dump(out, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
