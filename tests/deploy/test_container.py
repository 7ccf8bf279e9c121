"""deploy/container: the image on its own, SQLite variant. The image's configuration
(non-root user, volume, HEALTHCHECK, STOPSIGNAL), no compiler inside; then a container
started as an operator would (`podman run -p ... -v VOLUME:/var/lib/zbso`) with a Zeus
user's .env, unchanged, mounted where zbso reads it: a seeded workload from the host gets
the same answers as the host's own zbso, the container stops cleanly on SIGTERM, and
after a restart the data is all there. Records the time from `podman run` to the first
/healthz answer."""

import os
import tempfile
import time
import unittest

import drive
from deployutil import (Http, container_running, free_port, image, podman, record_figures,
                        unique, zeus_env_text)

JOBS, TRIALS = 3, 4

# A Zeus user's .env (seed 003's variables, as quoted there) for SQLite.
ZEUS_ENV = {
    "ZEUS_BSO_DB_USER": "me",
    "ZEUS_BSO_DB_PASSWORD": "secret",
    "ZEUS_BSO_DATABASE_URL": "sqlite+aiosqlite:///zeus.db",
    "ZEUS_BSO_ROOT_PASSWORD": "secret*",
    "ZEUS_BSO_SERVER_PORT": "8000",
    "ZEUS_BSO_LOG_LEVEL": "INFO",
    "ZEUS_BSO_ECHO_SQL": "True",
}


class ImageConfigTest(unittest.TestCase):
    def test_config(self):
        fmt = ("{{.Config.User}}|{{.Config.StopSignal}}|{{json .Config.Volumes}}|"
               "{{json .Config.ExposedPorts}}|{{json .Config.Entrypoint}}|"
               "{{json .Config.Cmd}}|{{json .Config.Healthcheck}}")
        out = podman("image", "inspect", "--format", fmt, image()).stdout.strip()
        user, stop, volumes, ports, entry, cmd, health = out.split("|", 6)
        self.assertEqual(user, "10001:10001")
        self.assertEqual(stop, "SIGTERM")
        self.assertIn('"/var/lib/zbso"', volumes)
        self.assertIn('"8000/tcp"', ports)
        self.assertEqual(entry, '["/usr/local/bin/zbso-entrypoint"]')
        self.assertEqual(cmd, '["serve","--host","0.0.0.0"]')
        self.assertIn("/healthz", health)

    def test_non_root_and_no_compiler(self):
        script = (
            'id -u; '
            'for c in gcc cc c99 cpp as ld clang tcc make; do '
            '  if command -v "$c" >/dev/null; then echo "compiler: $c"; fi; done; '
            "dpkg-query -W -f '${Package}\\n' "
            "| grep -E '^(gcc(-[0-9]+)?|cpp(-[0-9]+)?|binutils.*|libc6-dev|libgcc-[0-9]+-dev)$' "
            '  | sed "s/^/package: /"; '
            'zbso --version')
        out = podman("run", "--rm", "--network", "none", "--entrypoint", "/bin/sh",
                     image(), "-c", script).stdout.split("\n")
        self.assertEqual(out[0], "10001")
        self.assertEqual([ln for ln in out if ln.startswith(("compiler:", "package:"))], [])
        self.assertTrue(any(ln.startswith("zbso ") for ln in out), out)


class EntrypointTest(unittest.TestCase):
    """The entrypoint's NAME_FILE secrets: read into NAME; bad use named and refused."""

    def run_image(self, *args):
        return podman("run", "--rm", "--network", "none", *args, check=False)

    def test_file_read_into_variable(self):
        tmp = tempfile.TemporaryDirectory(prefix="zbso-deploy-")
        self.addCleanup(tmp.cleanup)
        path = os.path.join(tmp.name, "url")
        with open(path, "w") as f:
            f.write("sqlite:///from-secret.db\n")
        os.chmod(path, 0o644)
        # migrate --sql prints the SQL of the URL's backend without touching a database;
        # a PostgreSQL URL in the file would print PostgreSQL's, so the file was read.
        p = self.run_image("-v", f"{path}:/run/secrets/url:ro",
                           "-e", "ZEUS_BSO_DATABASE_URL_FILE=/run/secrets/url",
                           image(), "migrate", "--sql")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(path, "w") as f:
            f.write("postgresql://u@127.0.0.1:1/db\n")
        q = self.run_image("-v", f"{path}:/run/secrets/url:ro",
                           "-e", "ZEUS_BSO_DATABASE_URL_FILE=/run/secrets/url",
                           image(), "migrate", "--sql")
        self.assertEqual(q.returncode, 0, q.stderr)
        self.assertNotEqual(p.stdout, q.stdout)

    def test_both_set(self):
        p = self.run_image("-e", "ZEUS_BSO_API_TOKEN=x",
                           "-e", "ZEUS_BSO_API_TOKEN_FILE=/run/secrets/t", image(), "--version")
        self.assertEqual(p.returncode, 2)
        self.assertIn("both ZEUS_BSO_API_TOKEN and ZEUS_BSO_API_TOKEN_FILE are set", p.stderr)

    def test_unreadable_file(self):
        p = self.run_image("-e", "ZEUS_BSO_DB_PASSWORD_FILE=/run/secrets/nope", image(),
                           "--version")
        self.assertEqual(p.returncode, 2)
        self.assertIn("ZEUS_BSO_DB_PASSWORD_FILE '/run/secrets/nope' cannot be read", p.stderr)


class SqliteContainerTest(unittest.TestCase):
    def test_zeus_env_workload_restart(self):
        ref_log, ref_state = drive.reference("c", JOBS, TRIALS)
        name, volume = unique("sqlite"), unique("data")
        port = free_port()
        tmp = tempfile.TemporaryDirectory(prefix="zbso-deploy-")
        self.addCleanup(tmp.cleanup)
        env_file = os.path.join(tmp.name, ".env")
        with open(env_file, "w") as f:
            f.write(zeus_env_text(ZEUS_ENV))
        os.chmod(env_file, 0o644)

        podman("volume", "create", volume)
        self.addCleanup(podman, "volume", "rm", "-f", volume, check=False)
        self.addCleanup(podman, "rm", "-f", "-v", "-t", "0", name, check=False)
        t0 = time.monotonic()
        # --health-interval=disable: no systemd timer here; `healthcheck run` below runs it.
        podman("run", "-d", "--name", name, "-p", f"127.0.0.1:{port}:8000",
               "-v", f"{volume}:/var/lib/zbso", "-v", f"{env_file}:/var/lib/zbso/.env:ro",
               "--health-interval=disable", image())
        srv = Http(port)
        srv.wait_healthy(60, alive=lambda: container_running(name))
        start_s = time.monotonic() - t0

        log = drive.play([srv], "c", JOBS, 0, TRIALS)
        self.assertEqual(log, ref_log)
        self.assertEqual(drive.state(srv, "c", JOBS), ref_state)
        self.assertEqual(podman("healthcheck", "run", name, check=False).returncode, 0)

        # The .env was read: its database file, its ZEUS_BSO_ECHO_SQL="True".
        files = podman("exec", name, "ls", "/var/lib/zbso").stdout.split()
        self.assertIn("zeus.db", files)
        self.assertNotIn("zbso.db", files)
        self.assertIn(" sql: ", podman("logs", name).stderr)
        self.assertEqual(podman("exec", name, "id", "-u").stdout.strip(), "10001")

        t0 = time.monotonic()
        podman("stop", "-t", "30", name)
        stop_s = time.monotonic() - t0
        self.assertEqual(podman("inspect", "--format", "{{.State.ExitCode}}",
                                name).stdout.strip(), "0")
        self.assertIn("received SIGTERM", podman("logs", name).stderr)

        t0 = time.monotonic()
        podman("start", name)
        srv.wait_healthy(60, alive=lambda: container_running(name))
        restart_s = time.monotonic() - t0
        self.assertEqual(drive.state(srv, "c", JOBS), ref_state)
        record_figures("container", {
            "run_to_first_healthz_s": round(start_s, 2),
            "start_to_first_healthz_s": round(restart_s, 2),
            "stop_s": round(stop_s, 2), "requests": len(log)})


if __name__ == "__main__":
    unittest.main()
