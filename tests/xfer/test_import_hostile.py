"""test_import_hostile.py: corrupt and hostile Zeus databases for `zbso import zeus`. Each
case starts from Zeus's tables holding two good jobs (tests/xfer/zeusdb.py, the reference
rows), breaks one job (mab-w4) or the layout, and checks that the import names the table,
the row and the column (or the missing table or column), exits 1, imports nothing of the
broken job, and leaves the target database as it was (the other job is already there,
identical): byte for byte on SQLite (31 cases); on PostgreSQL and MariaDB
($ZBSO_TEST_BACKEND, under with_pg.sh / with_mysql.sh), whose typed columns, enums and
foreign keys keep out part of what SQLite takes, row for row (18 cases), the values
arriving as text there."""

import hashlib
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import zbsoserver  # noqa: E402
import zeusdb  # noqa: E402

ENV = {"TZ": "UTC"}
BAD = "mab-w4"
GOOD = "mab-w0"
W = f"WHERE job_id = '{BAD}'"
TABLES = ("Job", "BatchSize", "Trial", "GaussianTsArmState")


def jobs():
    return [j for j in zeusdb.reference("exact")["jobs"]
            if j["Job"]["job_id"] in (BAD, GOOD)]


def renamed(new_id):
    """The two jobs with BAD's id replaced by new_id in every table."""
    out = []
    for j in jobs():
        j = json.loads(json.dumps(j))
        if j["Job"]["job_id"] == BAD:
            j["Job"]["job_id"] = new_id
            j["Job"]["job_id_prefix"] = new_id[:3]
            for t in TABLES[1:]:
                for row in j[t]:
                    row["job_id"] = new_id
        out.append(j)
    return out


def state_with(**changes):
    """BAD's generator state JSON with keys replaced (raw JSON text values)."""
    job = next(j for j in jobs() if j["Job"]["job_id"] == BAD)
    text = job["Job"]["mab_random_generator_state"]
    for key, raw in changes.items():
        d = json.loads(text)
        if key in ("state", "inc"):
            text = text.replace(f'"{key}": {d["state"][key]}', f'"{key}": {raw}')
        else:
            text = text.replace(f'"{key}": {json.dumps(d[key])}', f'"{key}": {raw}')
    return text.replace("'", "''")


# name: (extra SQL on the good database, or a callable(path) -> url, fragments of the
# message); every message must also carry "refused job mab-w4" unless it is about layout.
def _not_sqlite(path):
    with open(path, "wb") as f:
        f.write(b"SQLite format 2\0" + os.urandom(4096))
    return "sqlite:///" + path


def _zbso_db(path):
    r = zbsoserver.run_cli(["migrate", "--db", "sqlite:///" + path], cwd=os.path.dirname(path))
    assert r.returncode == 0, r.stderr
    return "sqlite:///" + path


def _long_id(path):
    return zeusdb.build_sqlite(path, renamed("mab" + "x" * 298))


CASES = {
    "zbso_database": (_zbso_db, ["is not a Zeus BSO database", "no table Job"]),
    "not_sqlite": (_not_sqlite, ["cannot read Zeus database", "not a database"]),
    "missing_table": (['DROP TABLE "GaussianTsArmState"'],
                      ["table GaussianTsArmState is missing"]),
    "missing_column": (['ALTER TABLE "Job" DROP COLUMN mab_seed'],
                       ["table Job has no column mab_seed"]),
    "state_not_json": ([f"UPDATE \"Job\" SET mab_random_generator_state = '{{not json' {W}"],
                       ["table Job, row job_id=mab-w4, column mab_random_generator_state"]),
    "state_other_generator": (
        [f"UPDATE \"Job\" SET mab_random_generator_state = "
         f"'{state_with(bit_generator=json.dumps('MT19937'))}' {W}"],
        ["column mab_random_generator_state", "\"MT19937\" is not PCG64"]),
    "state_too_big": ([f"UPDATE \"Job\" SET mab_random_generator_state = "
                       f"'{state_with(state=2**128)}' {W}"],
                      ["column mab_random_generator_state", "state.state is not an integer"]),
    "state_even_inc": ([f"UPDATE \"Job\" SET mab_random_generator_state = "
                        f"'{state_with(inc=1234)}' {W}"],
                       ["column mab_random_generator_state", "state.inc is even"]),
    "state_null_with_seed": ([f"UPDATE \"Job\" SET mab_random_generator_state = NULL {W}"],
                             ["column mab_random_generator_state", "NULL while mab_seed"]),
    "seed_negative": ([f"UPDATE \"Job\" SET mab_seed = -5 {W}"],
                      ["column mab_seed", "-5 is out of range"]),
    "eta_out_of_range": ([f"UPDATE \"Job\" SET eta_knob = 1.5 {W}"],
                         ["table Job, row job_id=mab-w4, column eta_knob", "1.5"]),
    "text_in_integer": ([f"UPDATE \"Job\" SET max_epochs = 'many' {W}"],
                        ["column max_epochs", "'many' is not an integer"]),
    "default_not_a_batch_size": ([f"UPDATE \"Job\" SET default_batch_size = 48 {W}"],
                                 ["column default_batch_size", "48"]),
    "prefix_mismatch": ([f"UPDATE \"Job\" SET job_id_prefix = 'other' {W}"],
                        ["table Job, row job_id=mab-w4, column job_id", "other"]),
    "stage_not_zeus": ([f"UPDATE \"Job\" SET stage = 'Finished' {W}"],
                       ["column stage", "'Finished' is not a value Zeus writes"]),
    "mab_without_arms": ([f"DELETE FROM \"GaussianTsArmState\" {W}"],
                         ["column stage", "holds no arm"]),
    "min_cost_infinite": ([f"UPDATE \"Job\" SET min_cost = 9e999 {W}"],
                          ["column min_cost", "not a finite number"]),
    "trial_type_not_zeus": ([f"UPDATE \"Trial\" SET type = 'Random' {W} AND trial_number = 3"],
                            ["table Trial, row (job_id=mab-w4, trial_number=3), column type",
                             "'Random'"]),
    "trial_status_not_zeus": ([f"UPDATE \"Trial\" SET status = 'Running' {W}"
                               " AND trial_number = 2"],
                              ["row (job_id=mab-w4, trial_number=2), column status"]),
    "succeeded_without_energy": ([f"UPDATE \"Trial\" SET energy = NULL {W}"
                                  " AND trial_number = 4"],
                                 ["trial_number=4), column energy", "NULL is not a number"]),
    "negative_time": ([f"UPDATE \"Trial\" SET time = -3.0 {W} AND trial_number = 5"],
                      ["trial_number=5), column time", "-3.0 is negative"]),
    "cost_too_big": ([f"UPDATE \"Trial\" SET energy = 1e300 {W} AND trial_number = 6"],
                     ["trial_number=6), column energy", "outside the costs zbso accepts"]),
    "trial_batch_size_unknown": ([f"UPDATE \"Trial\" SET batch_size = 999 {W}"
                                  " AND trial_number = 7"],
                                 ["trial_number=7), column batch_size",
                                  "999 is not a batch size of the job"]),
    "bad_timestamp": ([f"UPDATE \"Trial\" SET start_timestamp = 'yesterday' {W}"
                       " AND trial_number = 1"],
                      ["trial_number=1), column start_timestamp", "'yesterday'"]),
    "dispatched_with_result": ([f"UPDATE \"Trial\" SET time = 5.0 {W}"
                                " AND status = 'Dispatched'"],
                               ["column time", "set on a Dispatched trial"]),
    "mab_trial_in_pruning": ([f"UPDATE \"Job\" SET stage = 'Pruning' {W}"],
                             ["column type", "'MAB' in a job whose stage is Pruning"]),
    "arm_negative_precision": ([f"UPDATE \"GaussianTsArmState\" SET param_precision = -1.0"
                                f" {W} AND batch_size = 32"],
                               ["table GaussianTsArmState, row (job_id=mab-w4, batch_size=32),"
                                " column param_precision", "negative"]),
    "arm_unknown_batch_size": ([f"UPDATE \"GaussianTsArmState\" SET batch_size = 4096"
                                f" {W} AND batch_size = 32"],
                               ["column batch_size", "4096 is not a batch size of the job"]),
    "job_id_too_long": (_long_id, ["column job_id", "over the limit of 300"]),
    "job_id_not_utf8": ([f"UPDATE \"{t}\" SET job_id = CAST(X'6d61622d7734ff' AS TEXT) {W}"
                         for t in TABLES], ["column job_id", "is not UTF-8"]),
    "gpu_model_with_nul": ([f"UPDATE \"Job\" SET gpu_model = CAST(X'413100' AS TEXT) {W}"],
                           ["column gpu_model", "holds a NUL byte"]),
}
LAYOUT = {"zbso_database", "not_sqlite", "missing_table", "missing_column"}


def digest(path):
    h = hashlib.sha256()
    for p in (path, path + "-wal"):
        if os.path.exists(p):
            with open(p, "rb") as f:
                h.update(f.read())
        h.update(b"|")
    return h.hexdigest()


class HostileZeus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        zbsoserver.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="zbso-hostile-")
        good = zeusdb.build_sqlite(os.path.join(cls.tmp.name, "good.db"),
                                   [j for j in jobs() if j["Job"]["job_id"] == GOOD])
        cls.template = os.path.join(cls.tmp.name, "target.db")
        r = zbsoserver.run_cli(["import", "zeus", good, "--db", "sqlite:///" + cls.template],
                               cwd=cls.tmp.name, env=ENV)
        assert r.returncode == 0, r.stderr

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_case(self, name):
        make, fragments = CASES[name]
        d = tempfile.mkdtemp(dir=self.tmp.name)
        src = os.path.join(d, "zeus.db")
        if callable(make):
            url = make(src)
        else:
            url = zeusdb.build_sqlite(src, jobs(), make)
        target = os.path.join(d, "target.db")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.template + suffix):
                shutil.copy(self.template + suffix, target + suffix)
        before = digest(target)
        r = zbsoserver.run_cli(["import", "zeus", url, "--db", "sqlite:///" + target],
                               cwd=d, env=ENV)
        self.assertEqual(r.returncode, 1, f"{name}: {r.stdout}{r.stderr}")
        for frag in fragments:
            self.assertIn(frag, r.stderr, name)
        if name not in LAYOUT:
            self.assertIn("refused job mab", r.stderr, name)
            self.assertIn("unchanged mab-w0", r.stdout, name)
        self.assertEqual(digest(target), before, f"{name}: the target changed")
        con = sqlite3.connect(target)
        try:
            ids = [row[0] for row in con.execute("SELECT job_id FROM jobs")]
        finally:
            con.close()
        self.assertEqual(ids, [GOOD], name)

    def test_at_least_fifteen_cases(self):
        self.assertGreaterEqual(len(CASES), 15)


# name: (SQL run on a server's Zeus database after the load, fragments of the message); Q
# stands for the dialect's identifier quote.
SERVER_CASES = {
    "missing_table": ("DROP TABLE QGaussianTsArmStateQ", ["table GaussianTsArmState is missing"]),
    "missing_column": ("ALTER TABLE QJobQ DROP COLUMN mab_seed",
                       ["table Job has no column mab_seed"]),
    "state_not_json": (f"UPDATE QJobQ SET mab_random_generator_state = '{{not json' {W}",
                       ["table Job, row job_id=mab-w4, column mab_random_generator_state"]),
    "state_other_generator": (
        f"UPDATE QJobQ SET mab_random_generator_state = "
        f"'{state_with(bit_generator=json.dumps('MT19937'))}' {W}",
        ["column mab_random_generator_state", "\"MT19937\" is not PCG64"]),
    "state_too_big": (f"UPDATE QJobQ SET mab_random_generator_state = "
                      f"'{state_with(state=2**128)}' {W}",
                      ["column mab_random_generator_state", "state.state is not an integer"]),
    "state_null_with_seed": (f"UPDATE QJobQ SET mab_random_generator_state = NULL {W}",
                             ["column mab_random_generator_state", "NULL while mab_seed"]),
    "seed_negative": (f"UPDATE QJobQ SET mab_seed = -5 {W}",
                      ["column mab_seed", "-5 is out of range"]),
    "eta_out_of_range": (f"UPDATE QJobQ SET eta_knob = 1.5 {W}",
                         ["table Job, row job_id=mab-w4, column eta_knob", "1.5"]),
    "default_not_a_batch_size": (f"UPDATE QJobQ SET default_batch_size = 48 {W}",
                                 ["column default_batch_size", "48"]),
    "prefix_mismatch": (f"UPDATE QJobQ SET job_id_prefix = 'other' {W}",
                        ["table Job, row job_id=mab-w4, column job_id", "other"]),
    "min_cost_negative": (f"UPDATE QJobQ SET min_cost = -1.0 {W}",
                          ["column min_cost", "outside the costs zbso accepts"]),
    "mab_without_arms": (f"DELETE FROM QGaussianTsArmStateQ {W}",
                         ["column stage", "holds no arm"]),
    "mab_trial_in_pruning": (f"UPDATE QJobQ SET stage = 'Pruning' {W}",
                             ["column type", "'MAB' in a job whose stage is Pruning"]),
    "succeeded_without_energy": (f"UPDATE QTrialQ SET energy = NULL {W} AND trial_number = 4",
                                 ["trial_number=4), column energy", "NULL is not a number"]),
    "negative_time": (f"UPDATE QTrialQ SET QtimeQ = -3.0 {W} AND trial_number = 5",
                      ["trial_number=5), column time", "-3.0 is negative"]),
    "dispatched_with_result": (f"UPDATE QTrialQ SET QtimeQ = 5.0 {W}"
                               " AND status = 'Dispatched'",
                               ["column time", "set on a Dispatched trial"]),
    "arm_negative_precision": (f"UPDATE QGaussianTsArmStateQ SET param_precision = -1.0"
                               f" {W} AND batch_size = 32",
                               ["table GaussianTsArmState, row (job_id=mab-w4, batch_size=32),"
                                " column param_precision", "negative"]),
    "gpu_model_empty": (f"UPDATE QJobQ SET gpu_model = '' {W}", ["column gpu_model"]),
}
SERVER_LAYOUT = {"missing_table", "missing_column"}


class ServerHostileZeus(unittest.TestCase):
    """The cases of SERVER_CASES on $ZBSO_TEST_BACKEND: Zeus's database and the target on
    the test's PostgreSQL or MariaDB; the target compared row for row."""

    @classmethod
    def setUpClass(cls):
        zbsoserver.require_binary()
        zbsoserver.require_backend()
        cls.tmp = tempfile.TemporaryDirectory(prefix="zbso-hostile-")
        cls.dialect = zbsoserver.BACKEND
        good = zeusdb.build_server(cls.dialect, "zeus_good",
                                   [j for j in jobs() if j["Job"]["job_id"] == GOOD])
        cls.target = zbsoserver.new_database(cls.tmp.name)
        r = zbsoserver.run_cli(["import", "zeus", good, "--db", cls.target.url],
                               cwd=cls.tmp.name, env=ENV)
        assert r.returncode == 0, r.stderr
        cls.before = cls.target.snapshot()
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        cls.target.close()
        cls.tmp.cleanup()

    def run_case(self, name):
        sql, fragments = SERVER_CASES[name]
        type(self).n += 1
        q = "`" if self.dialect == "mysql" else '"'
        url = zeusdb.build_server(self.dialect, "zeus_bad", jobs(), [sql.replace("Q", q)],
                                  fresh=self.n == 1)
        r = zbsoserver.run_cli(["import", "zeus", url, "--db", self.target.url],
                               cwd=self.tmp.name, env=ENV)
        self.assertEqual(r.returncode, 1, f"{name}: {r.stdout}{r.stderr}")
        for frag in fragments:
            self.assertIn(frag, r.stderr, name)
        if name not in SERVER_LAYOUT:
            self.assertIn("refused job mab-w4", r.stderr, name)
            self.assertIn("unchanged mab-w0", r.stdout, name)
        self.assertEqual(self.target.snapshot(), self.before, f"{name}: the target changed")


def _add(cls, name):
    setattr(cls, "test_" + name, lambda self: self.run_case(name))


if zbsoserver.BACKEND == "sqlite":
    del ServerHostileZeus
    for _name in CASES:
        _add(HostileZeus, _name)
else:
    del HostileZeus
    for _name in SERVER_CASES:
        _add(ServerHostileZeus, _name)

if __name__ == "__main__":
    unittest.main()
