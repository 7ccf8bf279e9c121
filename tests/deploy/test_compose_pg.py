"""deploy/compose_pg: deploy/compose.yaml's PostgreSQL deployment acted out with podman, on
the PostgreSQL of tests/pg/with_pg.sh standing in for its `db` service (no registry
here for the postgres image, and no compose tool in Debian 12 that reads the Compose
Specification's environment-sourced secrets). A Zeus user's .env, unchanged, is
interpolated through compose.yaml's own environment block, ports and secrets; the
`migrate` service's command runs to completion first; then the two replicas serve one
seeded workload, each request going to the other replica, and answer exactly as the
host's own zbso does. The one difference from compose: the containers use the host's
network (to reach the database on 127.0.0.1), so each replica listens on 127.0.0.1 at the
host port compose.yaml would publish, given with --host/--port."""

import os
import secrets
import tempfile
import time
import unittest

import compose
import drive
from deployutil import (SRC, Http, container_running, free_port, image, podman,
                        record_figures, unique, zeus_env_text, read_dotenv)

JOBS, TRIALS = 3, 4


class ComposePgTest(unittest.TestCase):
    def setUp(self):
        for k in ("ZBSO_PG_HOST", "ZBSO_PG_PORT", "ZBSO_PG_USER", "ZBSO_PG_PASSWORD"):
            if not os.environ.get(k):
                raise AssertionError(f"{k} is not set: run under tests/pg/with_pg.sh")

    def test_migrate_then_two_replicas(self):
        ref_log, ref_state = drive.reference("p", JOBS, TRIALS)
        token = secrets.token_hex(16)
        ports = [free_port(), free_port()]
        # A Zeus user's .env for PostgreSQL (seed 003's names and quoting), plus the
        # optional token and the second replica's port.
        dotenv = zeus_env_text({
            "ZEUS_BSO_DB_USER": os.environ["ZBSO_PG_USER"],
            "ZEUS_BSO_DB_PASSWORD": os.environ["ZBSO_PG_PASSWORD"],
            "ZEUS_BSO_DATABASE_URL": (f"postgresql+asyncpg://{os.environ['ZBSO_PG_HOST']}:"
                                      f"{os.environ['ZBSO_PG_PORT']}/zbso"),
            "ZEUS_BSO_ROOT_PASSWORD": "secret*",
            "ZEUS_BSO_SERVER_PORT": str(ports[0]),
            "ZEUS_BSO_LOG_LEVEL": "INFO",
            "ZEUS_BSO_ECHO_SQL": "False",
            "ZEUS_BSO_API_TOKEN": token,
            "ZBSO_SECOND_PORT": str(ports[1]),
        })
        values = read_dotenv(dotenv)

        spec = compose.Compose(os.path.join(SRC, "deploy", "compose.yaml"))
        env = {k: compose.interpolate(v, values) for k, v in spec.zbso_environment().items()}
        published = []
        for service in ("zbso-1", "zbso-2"):
            (entry,) = spec.ports(service)
            host, _, container = compose.interpolate(entry, values).partition(":")
            self.assertEqual(container, "8000")
            published.append(int(host))
        self.assertEqual(published, ports)

        # Secrets: files under /run/secrets, as compose makes them from the variables.
        tmp = tempfile.TemporaryDirectory(prefix="zbso-compose-")
        self.addCleanup(tmp.cleanup)
        mounts = []
        for name, var in spec.secret_sources().items():
            path = os.path.join(tmp.name, name)
            with open(path, "w") as f:
                f.write(values.get(var, ""))
            os.chmod(path, 0o644)
            mounts += ["-v", f"{path}:/run/secrets/{name}:ro"]
        args = ["--network", "host", *mounts]
        for k, v in env.items():
            args += ["-e", f"{k}={v}"]

        p = podman("run", "--rm", *args, image(), *spec.command("migrate"), timeout=120)
        self.assertIn("schema version", p.stdout + p.stderr)

        names = [unique("zbso-1"), unique("zbso-2")]
        clients, healthz_s = [], []
        for name, port in zip(names, ports):
            self.addCleanup(podman, "rm", "-f", "-v", "-t", "0", name, check=False)
            t0 = time.monotonic()
            podman("run", "-d", "--name", name, "--health-interval=disable", *args, image(),
                   "serve", "--host", "127.0.0.1", "--port", str(port))
            c = Http(port, token)
            c.wait_healthy(60, alive=lambda n=name: container_running(n))
            healthz_s.append(round(time.monotonic() - t0, 2))
            clients.append(c)

        # The token came through its secret; the password is in no container's environment.
        self.assertEqual(Http(ports[0]).get("/jobs")[0], 401)
        for name in names:
            cfg = podman("inspect", "--format", "{{json .Config.Env}}", name).stdout
            self.assertNotIn(os.environ["ZBSO_PG_PASSWORD"], cfg)
            self.assertNotIn(token, cfg)

        log = drive.play(clients, "p", JOBS, 0, TRIALS)
        self.assertEqual(log, ref_log)
        for c in clients:
            self.assertEqual(drive.state(c, "p", JOBS), ref_state)

        for name in names:
            podman("stop", "-t", "30", name)
            self.assertEqual(podman("inspect", "--format", "{{.State.ExitCode}}",
                                    name).stdout.strip(), "0")
        record_figures("compose_pg", {"run_to_first_healthz_s": healthz_s,
                                      "requests": len(log)})


if __name__ == "__main__":
    unittest.main()
