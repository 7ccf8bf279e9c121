"""deploy/kube_sqlite and deploy/kube_pg: the Kubernetes manifests (deploy/kubernetes),
rendered by kustomize and played by `podman kube play` (kube.py says what podman 4.3
needs changed). Each server pod must run as uid 10001 on a read-only root filesystem,
answer /healthz (the liveness probe, which podman turns into the container's
healthcheck), refuse a request without the Secret's token, and answer a seeded workload
exactly as the host's own zbso does. kustomize is the one of the kubectl on PATH (v2.0.3
of Debian 12's kubernetes-client or v5 of kubectl 1.27 and later; the output says which).
- KubeSqliteTest: overlays/sqlite; the pod is taken down and played again, and its
  PersistentVolumeClaim still holds the data.
- KubePgTest (under tests/pg/with_pg.sh): overlays/postgresql: the migration Job's pod
  runs to completion, then the Deployment's two replicas share the workload (the first
  half of the trials through one, the rest through the other), on the PostgreSQL of
  with_pg.sh reached through its unix socket, mounted into the pods (hostPath; the
  database listens on 127.0.0.1 of the host, which a pod's network namespace cannot
  reach).
- KubeFilesTest: the kustomizations' fields (those kustomize v2.0.3 and v5 both read),
  and base and both overlays rendered as they are.
Not checked by podman: the Service, the Job's retries, resource requests and the
readiness probe (podman 4.3 ignores them); kustomize checks that every file renders."""

import os
import secrets
import time
import unittest
import urllib.parse

import drive
import kube
from deployutil import podman, record_figures

JOBS, TRIALS = 3, 4
TOKEN_OP = {"op": "replace", "path": "/stringData/ZEUS_BSO_API_TOKEN"}


def wait_running(container, timeout=60):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        p = podman("inspect", "--format", "{{.State.Status}}", container, check=False)
        if p.returncode == 0 and p.stdout.strip() == "running":
            return
        if p.returncode == 0 and p.stdout.strip() in ("exited", "stopped"):
            break
        time.sleep(0.1)
    logs = podman("logs", container, check=False)
    raise AssertionError(f"{container} is not running:\n{logs.stderr[-3000:]}")


class KubeFilesTest(unittest.TestCase):
    """deploy/kube_files: every kustomization of deploy/kubernetes in what kustomize v2.0.3
    and v5 both read (checked on the files, whichever kubectl is here), and each directory
    rendered as it is by the kubectl on PATH into the resources it promises."""

    def test_fields_both_versions_read(self):
        dirs = []
        for root, _, files in os.walk(kube.KUBE):
            if "kustomization.yaml" in files:
                dirs.append(root)
        problems = [p for d in sorted(dirs) for p in kube.kustomization_problems(d)]
        self.assertEqual(problems, [])
        self.assertEqual(len(dirs), 5, dirs)

    def test_render(self):
        kube.require_tools("kubectl")
        want = {
            "base": ["ConfigMap", "Deployment", "Secret", "Service"],
            "overlays/postgresql": ["ConfigMap", "Deployment", "Job", "Secret", "Service"],
            "overlays/sqlite": ["ConfigMap", "Deployment", "PersistentVolumeClaim", "Secret",
                                "Service"],
        }
        for d, kinds in want.items():
            with self.subTest(d):
                docs = kube.kustomize(os.path.join(kube.KUBE, d))
                self.assertEqual(sorted(kube.kind(x) for x in docs), kinds)
                dep = [x for x in docs if kube.kind(x) == "Deployment"][0]
                self.assertIn("replicas: 1" if d.endswith("sqlite") else "replicas: 2", dep)
                self.assertIn("image: zbso" if d == "base" else "image: zbso:latest", dep)

    def test_render_monitoring_and_examples(self):
        """The optional monitoring kustomization (issue 26) and the examples render; the
        ServiceMonitor and the PDB select the base's server pods, and the PrometheusRule
        holds the six alerts of deploy/monitoring/zbso-rules.yml."""
        kube.require_tools("kubectl")
        docs = kube.kustomize(os.path.join(kube.KUBE, "monitoring"))
        self.assertEqual(sorted(kube.kind(x) for x in docs),
                         ["PodDisruptionBudget", "PrometheusRule", "ServiceMonitor"])
        base = "".join(kube.kustomize(os.path.join(kube.KUBE, "base")))
        self.assertIn("app.kubernetes.io/component: server", base)
        for d in docs:
            if kube.kind(d) in ("PodDisruptionBudget", "ServiceMonitor"):
                self.assertIn("app.kubernetes.io/component: server", d)
                self.assertIn("app.kubernetes.io/name: zbso", d)
        rule = [d for d in docs if kube.kind(d) == "PrometheusRule"][0]
        self.assertEqual(rule.count("- alert: Zbso"), 6, rule)
        sm = [d for d in docs if kube.kind(d) == "ServiceMonitor"][0]
        self.assertIn("key: ZEUS_BSO_API_TOKEN", sm)
        ex = kube.kustomize(os.path.join(kube.KUBE, "examples"))
        self.assertEqual([kube.kind(x) for x in ex], ["NetworkPolicy"])


class KubeCase(unittest.TestCase):
    def check_pod(self, container):
        self.assertEqual(podman("exec", container, "id", "-u").stdout.strip(), "10001")
        p = podman("exec", container, "touch", "/zbso-probe", check=False)
        self.assertNotEqual(p.returncode, 0, "the root filesystem is writable")
        self.assertIn("Read-only file system", p.stderr)
        self.assertEqual(podman("healthcheck", "run", container, check=False).returncode, 0)
        # The Secret's token is required (a request without it is refused).
        code = podman("exec", container, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                      "http://127.0.0.1:8000/jobs").stdout
        self.assertEqual(code, "401")


class KubeSqliteTest(KubeCase):
    def test_sqlite_overlay(self):
        ref_log, ref_state = drive.reference("k", JOBS, TRIALS)
        token = secrets.token_hex(16)
        ov = kube.Overlay("overlays/sqlite",
                          [("Secret", [dict(TOKEN_OP, value=token)])])
        self.addCleanup(ov.close)
        docs = ov.render()
        kinds = sorted(kube.kind(d) for d in docs)
        self.assertEqual(kinds, ["ConfigMap", "Deployment", "PersistentVolumeClaim", "Secret",
                                 "Service"])
        self.assertIn("replicas: 1", "".join(docs))
        path = ov.play(docs, "sqlite")
        ctr = f"{ov.prefix}zbso-pod-0-zbso"
        t0 = time.monotonic()
        wait_running(ctr)
        out = kube.drive_in(ctr, "--port", "8000", "--token", token, "--wait", "60",
                            "play", "k", str(JOBS), "0", str(TRIALS))
        healthz_s = time.monotonic() - t0
        self.assertEqual(out["result"], ref_log)
        self.check_pod(ctr)

        # Down and up again: a new pod on the same claim. (podman 4.3 would create the
        # claim's volume again and fail: the second play leaves the claim out.)
        ov.down(path)
        ov.play([d for d in docs if kube.kind(d) not in ("PersistentVolumeClaim", "Secret")],
                "sqlite-again")
        wait_running(ctr)
        out = kube.drive_in(ctr, "--port", "8000", "--token", token, "--wait", "60",
                            "state", "k", str(JOBS))
        self.assertEqual(out["result"], ref_state)
        record_figures("kube_sqlite", {"play_to_first_healthz_s": round(healthz_s, 2)})


class KubePgTest(KubeCase):
    def test_base_two_replicas(self):
        for k in ("ZBSO_PG_PORT", "ZBSO_PG_USER", "ZBSO_PG_PASSWORD", "ZBSO_PG_SOCKET"):
            if not os.environ.get(k):
                raise AssertionError(f"{k} is not set: run under tests/pg/with_pg.sh")
        ref_log, ref_state = drive.reference("b", JOBS, TRIALS)
        token = secrets.token_hex(16)
        port = os.environ["ZBSO_PG_PORT"]
        sock = f"/run/postgresql/.s.PGSQL.{port}"
        q = urllib.parse.quote
        url = (f"postgresql://{q(os.environ['ZBSO_PG_USER'], safe='')}:"
               f"{q(os.environ['ZBSO_PG_PASSWORD'], safe='')}@%2Frun%2Fpostgresql:{port}/zbso")
        volume = {"name": "pgsock", "hostPath": {
            "path": os.path.join(os.environ["ZBSO_PG_SOCKET"], f".s.PGSQL.{port}"),
            "type": "Socket"}}
        mount = {"name": "pgsock", "mountPath": sock}
        ov = kube.Overlay("overlays/postgresql", [
            ("Secret", [dict(TOKEN_OP, value=token),
                        {"op": "replace", "path": "/stringData/ZEUS_BSO_DATABASE_URL",
                         "value": url}]),
            ("Deployment", [
                {"op": "add", "path": "/spec/template/spec/volumes/-", "value": volume},
                {"op": "add", "path": "/spec/template/spec/containers/0/volumeMounts/-",
                 "value": mount}]),
            ("Job", [
                {"op": "add", "path": "/spec/template/spec/volumes/-", "value": volume},
                {"op": "add", "path": "/spec/template/spec/containers/0/volumeMounts/-",
                 "value": mount},
                {"op": "replace", "path": "/spec/template/spec/restartPolicy",
                 "value": "Never"}]),
        ])
        self.addCleanup(ov.close)
        docs = ov.render()
        by_kind = {}
        for d in docs:
            by_kind.setdefault(kube.kind(d), []).append(d)
        self.assertEqual(sorted(by_kind), ["ConfigMap", "Deployment", "Job", "Secret",
                                           "Service"])
        self.assertIn("replicas: 2", by_kind["Deployment"][0])

        # The migration first, to completion.
        ov.play(by_kind["ConfigMap"] + by_kind["Secret"]
                + [kube.job_as_pod(by_kind["Job"][0])], "migrate")
        migrate = f"{ov.prefix}zbso-migrate-migrate"
        rc = podman("wait", migrate, timeout=120).stdout.strip()
        logs = podman("logs", migrate).stderr
        self.assertEqual(rc, "0", logs)
        self.assertIn("schema version", logs)

        ov.play(by_kind["ConfigMap"] + by_kind["Deployment"], "servers")
        ctrs = [f"{ov.prefix}zbso-pod-{i}-zbso" for i in range(2)]
        for c in ctrs:
            wait_running(c)
        half = TRIALS // 2
        log = []
        for c, (first, last) in zip(ctrs, [(0, half), (half, TRIALS)]):
            out = kube.drive_in(c, "--port", "8000", "--token", token, "--wait", "60",
                                "play", "b", str(JOBS), str(first), str(last))
            log += out["result"]
        self.assertEqual(log, ref_log)
        for c in ctrs:
            out = kube.drive_in(c, "--port", "8000", "--token", token, "state", "b", str(JOBS))
            self.assertEqual(out["result"], ref_state)
            self.check_pod(c)


if __name__ == "__main__":
    unittest.main()
