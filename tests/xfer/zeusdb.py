"""zeusdb.py: Zeus BSO databases for the tests of `zbso import zeus`, built from rows
(tests/testdata/zeus_import_reference.json) on SQLite, PostgreSQL or MariaDB. Standard
library only: PostgreSQL and MariaDB are loaded with their command-line clients.

The DDL is Zeus's: the tables of zeus/optimizer/batch_size/server/database/schema.py at
ml-energy/zeus commit 75a8b9398034eb9baf74ca0a830c2c31bcce52cd (Zeus creates them with
SQLAlchemy's metadata.create_all, through Alembic), written out as SQLAlchemy 2.0 compiles
them for each dialect: VARCHAR(n) as declared; Float as FLOAT (double precision on SQLite
and PostgreSQL, single precision on MySQL); Integer as INTEGER; Boolean as BOOLEAN (BOOL on MySQL); DateTime
as DATETIME / TIMESTAMP WITHOUT TIME ZONE; Enum(Stage), Enum(TrialType), Enum(TrialStatus)
as VARCHAR of the longest member name on SQLite (no CHECK: create_constraint defaults to
False), as the types stage, trialtype and trialstatus on PostgreSQL, and as ENUM(...) on
MySQL; mapped non-Optional columns NOT NULL; the primary and foreign keys as declared."""

import json
import os
import sqlite3
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "..", "testdata", "zeus_import_reference.json")

_JOB_COLS = """\
    job_id VARCHAR(400) NOT NULL,
    job_id_prefix VARCHAR(300) NOT NULL,
    default_batch_size INTEGER NOT NULL,
    higher_is_better_metric {bool} NOT NULL,
    eta_knob FLOAT NOT NULL,
    beta_knob FLOAT,
    target_metric FLOAT NOT NULL,
    max_epochs INTEGER NOT NULL,
    num_pruning_rounds INTEGER NOT NULL,
    window_size INTEGER NOT NULL,
    max_power FLOAT NOT NULL,
    number_of_gpus INTEGER NOT NULL,
    gpu_model VARCHAR(30) NOT NULL,
    mab_prior_mean FLOAT NOT NULL,
    mab_prior_precision FLOAT NOT NULL,
    mab_num_explorations INTEGER NOT NULL,
    mab_seed INTEGER,
    mab_random_generator_state VARCHAR(10000),
    exp_default_batch_size INTEGER NOT NULL,
    stage {stage} NOT NULL,
    min_cost FLOAT,
    min_cost_batch_size INTEGER NOT NULL,
    PRIMARY KEY (job_id)"""

_REST = """\
CREATE TABLE {q}BatchSize{q} (
    job_id VARCHAR(400) NOT NULL,
    batch_size INTEGER NOT NULL,
    PRIMARY KEY (job_id, batch_size),
    FOREIGN KEY(job_id) REFERENCES {q}Job{q} (job_id) ON DELETE CASCADE
);
CREATE TABLE {q}GaussianTsArmState{q} (
    job_id VARCHAR(300) NOT NULL,
    batch_size INTEGER NOT NULL,
    param_mean FLOAT NOT NULL,
    param_precision FLOAT NOT NULL,
    reward_precision FLOAT NOT NULL,
    num_observations INTEGER NOT NULL,
    PRIMARY KEY (job_id, batch_size),
    FOREIGN KEY(job_id, batch_size) REFERENCES {q}BatchSize{q} (job_id, batch_size) ON DELETE CASCADE
);
CREATE TABLE {q}Trial{q} (
    job_id VARCHAR(300) NOT NULL,
    batch_size INTEGER NOT NULL,
    trial_number INTEGER NOT NULL,
    start_timestamp {dt} NOT NULL,
    type {ttype} NOT NULL,
    status {tstatus} NOT NULL,
    end_timestamp {dt},
    {q}time{q} FLOAT,
    energy FLOAT,
    converged {bool},
    PRIMARY KEY (job_id, trial_number),
    FOREIGN KEY(job_id, batch_size) REFERENCES {q}BatchSize{q} (job_id, batch_size) ON DELETE CASCADE
);
"""


def ddl(dialect):
    """Zeus's CREATE statements for dialect ("sqlite", "postgresql", "mysql")."""
    if dialect == "sqlite":
        return ('CREATE TABLE "Job" (\n' + _JOB_COLS.format(stage="VARCHAR(7)", bool="BOOLEAN") + "\n);\n" +
                _REST.format(q='"', dt="DATETIME", ttype="VARCHAR(11)",
                             tstatus="VARCHAR(10)", bool="BOOLEAN"))
    if dialect == "postgresql":
        return ("CREATE TYPE stage AS ENUM ('Pruning', 'MAB');\n"
                "CREATE TYPE trialtype AS ENUM ('Exploration', 'Concurrent', 'MAB');\n"
                "CREATE TYPE trialstatus AS ENUM ('Dispatched', 'Succeeded', 'Failed');\n"
                'CREATE TABLE "Job" (\n' + _JOB_COLS.format(stage="stage", bool="BOOLEAN") + "\n);\n" +
                _REST.format(q='"', dt="TIMESTAMP WITHOUT TIME ZONE", ttype="trialtype",
                             tstatus="trialstatus", bool="BOOLEAN"))
    return ("CREATE TABLE `Job` (\n" + _JOB_COLS.format(stage="ENUM('Pruning','MAB')", bool="BOOL") +
            "\n);\n" + _REST.format(q="`", dt="DATETIME",
                                    ttype="ENUM('Exploration','Concurrent','MAB')",
                                    tstatus="ENUM('Dispatched','Succeeded','Failed')",
                                    bool="BOOL"))


def reference(variant="exact"):
    """The jobs and replays of the reference file for variant "exact" or "mysql"."""
    with open(REFERENCE) as f:
        return json.load(f)[variant]


def _lit(v, dialect, col=""):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return ("TRUE" if v else "FALSE") if dialect == "postgresql" else ("1" if v else "0")
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v == float("inf"):
            return "'Infinity'" if dialect == "postgresql" else "9e999"
        return repr(v)
    s = str(v)
    if col.endswith("timestamp") and dialect == "sqlite":
        s += ".000000"  # SQLAlchemy's SQLite DateTime text
    s = s.replace("'", "''")
    if dialect == "mysql":
        s = s.replace("\\", "\\\\")
    return "'" + s + "'"


def inserts(jobs, dialect):
    """INSERT statements for the rows of jobs, parents first."""
    q = "`" if dialect == "mysql" else '"'
    out = []
    for table in ("Job", "BatchSize", "Trial", "GaussianTsArmState"):
        for job in jobs:
            rows = job[table] if isinstance(job[table], list) else [job[table]]
            for row in rows:
                cols = ", ".join(q + c + q for c in row)
                vals = ", ".join(_lit(v, dialect, c) for c, v in row.items())
                out.append(f"INSERT INTO {q}{table}{q} ({cols}) VALUES ({vals});")
    return out


def build_sqlite(path, jobs, extra_sql=()):
    """A Zeus SQLite database at path with jobs' rows, then extra_sql run on it."""
    con = sqlite3.connect(path)
    con.executescript(ddl("sqlite"))
    for stmt in inserts(jobs, "sqlite"):
        con.execute(stmt)
    for stmt in extra_sql:
        con.execute(stmt)
    con.commit()
    con.close()
    return "sqlite:///" + path


def build_server(dialect, name, jobs, extra_sql=(), fresh=True):
    """A Zeus database `name` on the test's PostgreSQL (with_pg.sh) or MariaDB
    (with_mysql.sh) with jobs' rows, then extra_sql run on it; returns its URL in Zeus's
    spelling. fresh=False reuses the database `name` made by an earlier call, emptied
    first (much faster than a new database on PostgreSQL)."""
    ctl = os.environ["ZBSO_PG_CTL" if dialect == "postgresql" else "ZBSO_MYSQL_CTL"]
    sub = "createdb" if fresh else "url"
    url = subprocess.run([ctl, sub, name], check=True, capture_output=True,
                         text=True, timeout=120).stdout.strip()
    wipe = ""
    if not fresh:
        wipe = ("DROP SCHEMA public CASCADE; CREATE SCHEMA public;\n"
                if dialect == "postgresql" else
                "".join(f"DROP TABLE IF EXISTS `{t}`;\n" for t in
                        ("GaussianTsArmState", "Trial", "BatchSize", "Job")))
    sql = wipe + ddl(dialect) + "\n".join(inserts(jobs, dialect) +
                                          [x + ";" for x in extra_sql]) + "\n"
    if dialect == "postgresql":
        cmd = [ctl, "psql", "-q", "-d", name]
        scheme = "postgresql+asyncpg://"
    else:
        cmd = [ctl, "sql", "-D", name]
        scheme = "mysql+asyncmy://"
    subprocess.run(cmd, input=sql, check=True, capture_output=True, text=True, timeout=120)
    return scheme + url.split("://", 1)[1]
