"""pgcluster.py: a private PostgreSQL 15 cluster of one primary and streaming standbys on
127.0.0.1, for the failover tests (issue 26). Like tests/pg/with_pg.sh: fresh clusters in
a temp dir, scram-sha-256, fsync on, run as the postgres user when the test runs as root;
fails loudly, never skips, when PostgreSQL is missing.

Replication is physical streaming from pg_basebackup -R copies, on their own ports.
Synchronous mode sets synchronous_standby_names = 'ANY 1 (*)' and synchronous_commit = on:
a commit is acknowledged once one standby has flushed it. A failover is what an operator
or Patroni does: stop the primary (immediate: a crash), promote the standby that received
the most WAL, point the other standbys at it (primary_conninfo, reload), and rebuild the
old primary as a new standby from a fresh base backup."""

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time


def pg_bin():
    env = os.environ.get("ZBSO_PG_BIN")
    if env:
        return env
    cands = sorted((d for d in os.listdir("/usr/lib/postgresql")
                    if os.path.isfile(f"/usr/lib/postgresql/{d}/bin/initdb")),
                   key=lambda v: [int(x) for x in v.split(".") if x.isdigit()], reverse=True) \
        if os.path.isdir("/usr/lib/postgresql") else []
    if not cands:
        raise AssertionError("PostgreSQL server binaries not found in /usr/lib/postgresql/*/bin "
                             "(install the Debian package postgresql: scripts/setup.sh does) "
                             "or set ZBSO_PG_BIN")
    return f"/usr/lib/postgresql/{cands[0]}/bin"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    def __init__(self, cluster, name):
        self.cluster = cluster
        self.name = name
        self.data = os.path.join(cluster.dir, name)
        self.port = free_port()
        self.log = os.path.join(cluster.dir, f"{name}.log")

    def conf(self, extra=""):
        c = self.cluster
        text = f"""listen_addresses = '127.0.0.1'
port = {self.port}
unix_socket_directories = '{c.dir}'
fsync = on
synchronous_commit = on
full_page_writes = on
max_connections = 200
password_encryption = 'scram-sha-256'
wal_level = replica
max_wal_senders = 10
wal_keep_size = '256MB'
hot_standby = on
wal_receiver_status_interval = '1s'
wal_retrieve_retry_interval = '500ms'
synchronous_standby_names = '{"ANY 1 (*)" if c.synchronous else ""}'
{extra}"""
        path = os.path.join(self.data, "zbso.conf")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        c.own(path)
        pg = os.path.join(self.data, "postgresql.conf")
        with open(pg, encoding="utf-8") as f:
            has = "include = 'zbso.conf'" in f.read()
        if not has:
            with open(pg, "a", encoding="utf-8") as f:
                f.write("\ninclude = 'zbso.conf'\n")

    def start(self):
        self.cluster.pg("pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", "60", "start")

    def stop(self, mode="fast"):
        self.cluster.pg("pg_ctl", "-D", self.data, "-m", mode, "-w", "stop", check=False)

    def running(self):
        return os.path.exists(os.path.join(self.data, "postmaster.pid"))

    def psql(self, sql, db="postgres"):
        c = self.cluster
        r = subprocess.run([os.path.join(c.bin, "psql"), "-X", "-A", "-t", "-v",
                            "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(self.port), "-U",
                            c.user, "-d", db, "-c", sql], capture_output=True, text=True,
                           env=dict(os.environ, PGPASSWORD=c.password, PGCONNECT_TIMEOUT="5"),
                           timeout=60)
        if r.returncode != 0:
            raise AssertionError(f"psql on {self.name} ({self.port}): {sql}: {r.stderr}")
        return r.stdout.strip()

    def conninfo(self):
        c = self.cluster
        return (f"host=127.0.0.1 port={self.port} user={c.user} password={c.password} "
                f"application_name={{}}")


class Cluster:
    """A primary and `standbys` standbys. url() is the multi-host URL zbso is given."""

    def __init__(self, standbys=2, synchronous=True):
        self.bin = pg_bin()
        self.synchronous = synchronous
        self.as_pg = []
        if os.getuid() == 0:
            self.as_pg = ["runuser", "-u", "postgres", "--"]
        self.dir = tempfile.mkdtemp(prefix="zbso-pgfo-")
        self.own(self.dir)
        os.chmod(self.dir, 0o700)
        self.user = "zbso"
        self.password = secrets.token_hex(12)
        self.nodes = []
        self.primary = None
        try:
            self._init_primary()
            for i in range(standbys):
                self.add_standby(f"s{i + 1}")
            self.primary.psql("CREATE DATABASE zbso")
            self.wait_sync()
        except BaseException:
            self.close()
            raise

    def own(self, path):
        if self.as_pg:
            shutil.chown(path, "postgres", "postgres")

    def pg(self, tool, *args, check=True):
        r = subprocess.run([*self.as_pg, os.path.join(self.bin, tool), *args],
                           capture_output=True, text=True, timeout=120)
        if check and r.returncode != 0:
            logs = ""
            for n in self.nodes:
                if os.path.exists(n.log):
                    with open(n.log, encoding="utf-8", errors="replace") as f:
                        logs += f"--- {n.name}\n" + f.read()[-2000:]
            raise AssertionError(f"{tool} {' '.join(args)} failed: {r.stdout}{r.stderr}\n{logs}")
        return r

    def _init_primary(self):
        node = Node(self, "p")
        pwfile = os.path.join(self.dir, "pwfile")
        with open(pwfile, "w", encoding="utf-8") as f:
            f.write(self.password + "\n")
        self.own(pwfile)
        os.chmod(pwfile, 0o600)
        self.pg("initdb", "-D", node.data, "-U", self.user, f"--pwfile={pwfile}",
                "--auth-host=scram-sha-256", "--auth-local=scram-sha-256", "-E", "UTF8",
                "--no-locale", "--no-sync")
        os.unlink(pwfile)
        node.conf()
        node.start()
        self.nodes.append(node)
        self.primary = node

    def add_standby(self, name, node=None):
        """A new standby of the current primary (node: reuse that node's name and port)."""
        node = node or Node(self, name)
        if os.path.exists(node.data):
            shutil.rmtree(node.data)
        r = subprocess.run([*self.as_pg, os.path.join(self.bin, "pg_basebackup"), "-d",
                            self.primary.conninfo().format(node.name), "-D", node.data, "-R",
                            "-X", "stream", "-c", "fast", "--no-sync"],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PGPASSWORD=self.password))
        if r.returncode != 0:
            raise AssertionError(f"pg_basebackup for {name}: {r.stderr}")
        node.conf()
        node.start()
        if node not in self.nodes:
            self.nodes.append(node)
        return node

    def standbys(self):
        return [n for n in self.nodes if n is not self.primary and n.running()]

    def url(self, db="zbso"):
        hosts = ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)
        return (f"postgresql://{self.user}:{self.password}@{hosts}/{db}"
                "?target_session_attrs=read-write&connect_timeout=2")

    def wait_sync(self, timeout=60):
        """Until every standby streams from the primary (and, when synchronous, one is a
        sync or quorum standby)."""
        deadline = time.monotonic() + timeout
        want = len(self.standbys())
        while True:
            rows = self.primary.psql("SELECT state, sync_state FROM pg_stat_replication")
            states = [r.split("|") for r in rows.splitlines() if r]
            streaming = [s for s in states if s[0] == "streaming"]
            if len(streaming) >= want and (not self.synchronous or
                                           any(s[1] in ("sync", "quorum") for s in streaming)):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"standbys not streaming after {timeout} s: {states}")
            time.sleep(0.2)

    def failover(self):
        """Crashes the primary, promotes the standby that received the most WAL, repoints
        the others. Returns (old primary, the monotonic time the promotion finished)."""
        old = self.primary
        old.stop("immediate")
        best, best_lsn = None, -1
        for n in self.standbys():
            lsn = n.psql("SELECT pg_last_wal_receive_lsn() - '0/0'::pg_lsn")
            if lsn and int(float(lsn)) > best_lsn:
                best, best_lsn = n, int(float(lsn))
        self.pg("pg_ctl", "-D", best.data, "-w", "-t", "60", "promote")
        promoted = time.monotonic()
        self.primary = best
        for n in self.standbys():
            info = best.conninfo().format(n.name)
            n.psql(f"ALTER SYSTEM SET primary_conninfo = '{info}'")
            n.psql("SELECT pg_reload_conf()")
        return old, promoted

    def switchover_fenced(self):
        """A planned switchover as fencing managers do it: the primary is made read-only
        (default_transaction_read_only, reloaded: its open sessions get SQLSTATE 25006 on
        their next write) while it keeps running; the standby with the most WAL is promoted,
        and the others repointed. Returns (old primary, promotion's monotonic time)."""
        old = self.primary
        old.psql("ALTER SYSTEM SET default_transaction_read_only = on")
        old.psql("SELECT pg_reload_conf()")
        time.sleep(0.5)  # the WAL of the last commits reaches the standbys
        # The old primary keeps running and may still write WAL (autovacuum, a checkpoint):
        # a standby that went on receiving it after the choice below would be ahead of the
        # promoted one and could never follow its new timeline, and with 'ANY 1 (*)' the
        # new primary's commits would wait for a standby that never comes. So every
        # standby stops streaming first; the choice is then made on still positions.
        standbys = self.standbys()
        for n in standbys:
            n.psql("ALTER SYSTEM SET primary_conninfo = ''")
            n.psql("SELECT pg_reload_conf()")
        self._wait_receivers_stopped(standbys)
        best, best_lsn = None, -1
        for n in standbys:
            lsn = n.psql("SELECT pg_last_wal_receive_lsn() - '0/0'::pg_lsn")
            if lsn and int(float(lsn)) > best_lsn:
                best, best_lsn = n, int(float(lsn))
        self.pg("pg_ctl", "-D", best.data, "-w", "-t", "60", "promote")
        promoted = time.monotonic()
        self.primary = best
        for n in standbys:
            if n is best:
                continue
            info = best.conninfo().format(n.name)
            n.psql(f"ALTER SYSTEM SET primary_conninfo = '{info}'")
            n.psql("SELECT pg_reload_conf()")
        # The old primary stays up, read-only, until the caller shuts it down to rejoin as
        # a standby (rebuild): meanwhile a commit there still waiting for a synchronous
        # standby (none is left to it) waits until its session ends.
        return old, promoted

    def _wait_receivers_stopped(self, nodes, timeout=30):
        """Until no WAL receiver runs on any of nodes (primary_conninfo emptied)."""
        deadline = time.monotonic() + timeout
        for n in nodes:
            while n.psql("SELECT count(*) FROM pg_stat_wal_receiver").strip() != "0":
                if time.monotonic() > deadline:
                    raise AssertionError(f"{n.name}: its WAL receiver still runs")
                time.sleep(0.05)

    def rebuild(self, node):
        """The old primary (crashed, or fenced and still running), made a standby of the
        new primary."""
        if node.running():
            node.stop("immediate")
        self.add_standby(node.name, node)
        self.wait_sync()

    def close(self):
        for n in self.nodes:
            if n.running():
                n.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)
