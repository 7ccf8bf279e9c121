"""kube.py: the Kubernetes manifests of deploy/kubernetes rendered by kustomize (`kubectl
kustomize` of whichever kubectl is on PATH: Debian 12's kubernetes-client 1.20, whose
kustomize is v2.0.3, or kubectl 1.27 or later, kustomize v5; kustomize() prints which)
through a test overlay, and played by `podman kube play`, with what podman 4.3 needs (say
so where it differs from a cluster):
- a name prefix, so runs side by side do not meet; the image under test;
- no containerPort: podman 4.3 publishes every containerPort on the host's 0.0.0.0
  (a cluster publishes none); the tests reach a pod on 127.0.0.1 inside its own network
  namespace (nsenter) instead;
- the Secret is not played: podman 4.3 stores a played Secret as YAML but reads secrets
  for envFrom as a JSON object of base64 values; the test creates that podman secret from
  the rendered Secret's stringData;
- a Job is played as the Pod of its template, once (podman 4.3 plays Pods, Deployments,
  PersistentVolumeClaims and ConfigMaps; it ignores Services).
Both kustomize versions give the same documents in another order (kustomize() says which
differences it tolerates and why). kustomize's output is read without a YAML library:
documents split on '---', the few flat blocks needed (metadata.name, stringData) read by
indentation."""

import base64
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile

from deployutil import SRC, image, podman, require_tools, run, unique

KUBE = os.path.join(SRC, "deploy", "kubernetes")


def _field(doc, key):
    m = re.search(rf"^{key}: (.*)$", doc, re.M)
    return m.group(1).strip() if m else None


def kind(doc):
    return _field(doc, "kind")


def name(doc):
    m = re.search(r"^metadata:\n(?:  .*\n)*?  name: (\S+)$", doc, re.M)
    if not m:
        raise AssertionError(f"no metadata.name in:\n{doc}")
    return m.group(1)


def job_as_pod(doc):
    """A rendered Job as the Pod of its template (metadata kept; the template's spec,
    dedented, as the spec). A patch cannot do this: kustomize resets the name references
    inside a resource whose kind a patch changed."""
    lines = doc.splitlines()
    meta = _top_block(lines, "metadata")
    spec = _top_block(lines, "spec")
    try:
        t = spec.index("  template:")
        s = spec.index("    spec:", t)
    except ValueError:
        raise AssertionError(f"no spec.template.spec in the Job:\n{doc}") from None
    pod = []
    for line in spec[s + 1:]:
        if line.strip() and not line.startswith("      "):
            break
        pod.append(line[4:])
    return "\n".join(["apiVersion: v1", "kind: Pod", "metadata:", *meta, "spec:", *pod]) + "\n"


def _top_block(lines, key):
    """The lines of a top-level key's block (indented under `key:`)."""
    try:
        i = lines.index(f"{key}:")
    except ValueError:
        raise AssertionError(f"no top-level {key}:") from None
    out = []
    for line in lines[i + 1:]:
        if line and not line.startswith(" "):
            break
        out.append(line)
    return out


def string_data(doc):
    """The stringData block of a rendered Secret: {key: value}."""
    m = re.search(r"^stringData:\n((?:  .*\n?)*)", doc, re.M)
    if not m:
        raise AssertionError(f"no stringData in the Secret:\n{doc}")
    out = {}
    for line in m.group(1).splitlines():
        k, _, v = line.strip().partition(": ")
        v = v.strip()
        if v.startswith('"'):
            v = json.loads(v)
        elif v.startswith("'"):
            v = v[1:-1].replace("''", "'")
        out[k] = v
    return out


# The resources a test overlay patches: kind -> kustomize v2.0.3's patchesJson6902 target
# (group, version, kind and name, all required there; the name before any prefix).
TARGETS = {
    "Deployment": "{group: apps, version: v1, kind: Deployment, name: zbso}",
    "Job": "{group: batch, version: v1, kind: Job, name: zbso-migrate}",
    "Secret": "{version: v1, kind: Secret, name: zbso-secrets}",
}

# What kustomize v5 says on stderr about the v2.0.3 fields that deploy/kubernetes and the
# test overlay use (base/kustomization.yaml says why): `bases`, `patchesStrategicMerge`,
# `patchesJson6902` are deprecated there but still read. Anything else on stderr fails.
DEPRECATED = re.compile(r"# Warning: '(bases|patchesStrategicMerge|patchesJson6902)' is "
                        r"deprecated\. Please use '(resources|patches)' instead\..*")


@functools.lru_cache(maxsize=None)
def kubectl_version():
    """The kubectl on PATH and its kustomize, in words (kubectl 1.24 and later name their
    kustomize; older ones do not: 1.14 to 1.20 embed v2.0.3)."""
    doc = json.loads(run(["kubectl", "version", "--client", "-o", "json"], timeout=60).stdout)
    client = doc.get("clientVersion", {}).get("gitVersion", "?")
    kz = doc.get("kustomizeVersion") or "not named by this kubectl"
    return f"kubectl {client} ({shutil.which('kubectl')}), kustomize {kz}"


# The kustomization fields that kustomize v2.0.3 reads and v5 still accepts, as far as
# deploy/kubernetes may use them (each tried with both). Left out: `labels`, `components`,
# `replicas` (v2.0.3 refuses them), `patches` (a list of strategic merge files in v2.0.3,
# of patch objects in v5), `commonLabels` (v5 warns that it is deprecated, and it would
# rewrite selectors: the files write their labels themselves).
FIELDS = {"apiVersion", "kind", "resources", "bases", "patchesStrategicMerge",
          "patchesJson6902", "images", "namePrefix", "nameSuffix", "namespace",
          "commonAnnotations", "configMapGenerator", "generatorOptions"}


def kustomization_problems(directory):
    """What in directory/kustomization.yaml kustomize v2.0.3 or v5 would not read as
    meant: a field outside FIELDS, a directory in `resources` (v2.0.3 loads only files
    there; directories go in `bases`), a `bases` entry without a kustomization, a
    `patchesStrategicMerge` entry that is not a file in the directory, `$patch: delete`
    in any of its files (v2.0.3 leaves an empty document). A list of sentences."""
    path = os.path.join(directory, "kustomization.yaml")
    with open(path) as f:
        text = f.read()
    out = []
    lists = {}
    key = None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.match(r"([A-Za-z]\w*):", line)
        if m:
            key = m.group(1)
            if key not in FIELDS:
                out.append(f"{path}: field {key!r} is not read alike by kustomize v2.0.3 "
                           f"and v5")
            continue
        m = re.match(r"  - (\S+)$", line)
        if m and key in ("resources", "bases", "patchesStrategicMerge"):
            lists.setdefault(key, []).append(m.group(1))
    for entry in lists.get("resources", []):
        if not os.path.isfile(os.path.join(directory, entry)):
            out.append(f"{path}: resources entry {entry!r} is not a file (kustomize v2.0.3 "
                       f"reads directories only from bases)")
    for entry in lists.get("bases", []):
        if not os.path.isfile(os.path.join(directory, entry, "kustomization.yaml")):
            out.append(f"{path}: bases entry {entry!r} is not a kustomization directory")
    for entry in lists.get("patchesStrategicMerge", []):
        if "/" in entry or not os.path.isfile(os.path.join(directory, entry)):
            out.append(f"{path}: patchesStrategicMerge entry {entry!r} is not a file of "
                       f"this directory")
    for name_ in sorted(os.listdir(directory)):
        if name_.endswith(".yaml"):
            with open(os.path.join(directory, name_)) as f:
                if re.search(r"^\s*\$patch:\s*delete", f.read(), re.M):
                    out.append(f"{os.path.join(directory, name_)}: $patch: delete (kustomize "
                               f"v2.0.3 renders it as an empty document)")
    return out


def kustomize(directory):
    """kubectl kustomize of directory: the documents, each with a kind (kustomize v2.0.3
    renders a `$patch: delete` as an empty `{}` document, which kubectl apply rejects).
    Its stderr may hold only DEPRECATED's warnings. The order of the documents is left
    to the caller: v2.0.3 and v5 sort them differently (v5 puts a PersistentVolumeClaim
    before the Service, v2.0.3 last)."""
    print(f"{os.path.basename(directory)} rendered by {kubectl_version()}", flush=True)
    p = run(["kubectl", "kustomize", directory], timeout=60)
    other = [ln for ln in p.stderr.splitlines() if ln.strip() and not DEPRECATED.fullmatch(ln)]
    if other:
        raise AssertionError("kubectl kustomize said more than the deprecation warnings of "
                             "the fields it reads:\n" + "\n".join(other))
    docs = [d.strip() + "\n" for d in re.split(r"^---$", p.stdout, flags=re.M) if d.strip()]
    for d in docs:
        if kind(d) is None:
            raise AssertionError(f"a rendered document without a kind:\n{d}")
    return docs


class Overlay:
    """A kustomize overlay of `resource` (a directory under deploy/kubernetes) made for
    one test: render() gives the documents; play()/down() run them under podman. Written,
    like deploy/kubernetes, in what kustomize v2.0.3 and v5 both read."""

    def __init__(self, resource, patches=()):
        """patches: (kind, JSON patch ops) added to the overlay's own; kind a key of
        TARGETS."""
        require_tools("kubectl", "podman", "nsenter")
        self.tmp = tempfile.TemporaryDirectory(prefix="zbso-kube-")
        self.prefix = unique("k") + "-"
        repo, _, tag = image().rpartition(":")
        ports = [{"op": "remove", "path": "/spec/template/spec/containers/0/ports"}]
        lines = [
            "apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization",
            "bases:", f"  - {os.path.relpath(os.path.join(KUBE, resource), self.tmp.name)}",
            f"namePrefix: {self.prefix}",
            "images:", "  - name: zbso", f"    newName: {repo}", f"    newTag: {tag}",
            "patchesJson6902:"]
        for i, (kind_, ops) in enumerate([("Deployment", ports), *patches]):
            path = os.path.join(self.tmp.name, f"patch-{i}.json")
            with open(path, "w") as f:
                json.dump(ops, f, indent=2)
            lines += [f"  - target: {TARGETS[kind_]}", f"    path: {os.path.basename(path)}"]
        with open(os.path.join(self.tmp.name, "kustomization.yaml"), "w") as f:
            f.write("\n".join(lines) + "\n")
        self.secrets = []
        self.files = []
        self.volumes = []

    def render(self):
        return kustomize(self.tmp.name)

    def create_secret(self, doc):
        """The podman secret podman 4.3's envFrom reads, from a rendered Secret."""
        values = {k: base64.b64encode(v.encode()).decode()
                  for k, v in string_data(doc).items()}
        path = os.path.join(self.tmp.name, "secret.json")
        with open(path, "w") as f:
            json.dump(values, f)
        podman("secret", "create", name(doc), path)
        self.secrets.append(name(doc))

    def play(self, docs, stem):
        """podman kube play of docs (Secrets created apart); returns the file played."""
        play = []
        for d in docs:
            if kind(d) == "Secret":
                self.create_secret(d)
            else:
                play.append(d)
                if kind(d) == "PersistentVolumeClaim":
                    self.volumes.append(name(d))
        path = os.path.join(self.tmp.name, f"{stem}.yaml")
        with open(path, "w") as f:
            f.write("---\n".join(play))
        self.files.append(path)
        podman("kube", "play", path, timeout=120)
        return path

    def down(self, path):
        podman("kube", "play", "--down", path, timeout=120, check=False)

    def close(self):
        for path in reversed(self.files):
            self.down(path)
        pods = podman("pod", "ps", "-q", "--filter", f"name=^{self.prefix}", check=False)
        for pod in pods.stdout.split():
            podman("pod", "rm", "-f", pod, check=False)
        for s in self.secrets:
            podman("secret", "rm", s, check=False)
        for v in self.volumes:
            podman("volume", "rm", "-f", v, check=False)
        self.tmp.cleanup()


def pid(container):
    out = podman("inspect", "--format", "{{.State.Pid}}", container).stdout.strip()
    if not out.isdigit() or out == "0":
        raise AssertionError(f"{container} is not running (pid {out!r})")
    return out


def drive_in(container, *args, timeout=180):
    """Runs drive.py inside the network namespace of container's pod (127.0.0.1 there is
    the pod's own loopback); returns its JSON document."""
    cmd = ["nsenter", "-t", pid(container), "-n", "python3",
           os.path.join(os.path.dirname(os.path.abspath(__file__)), "drive.py"), *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        logs = podman("logs", container, check=False)
        raise AssertionError(f"drive.py in {container}'s pod exited {p.returncode}:\n"
                             f"{p.stderr[-3000:]}\nserver log:\n{logs.stderr[-3000:]}")
    return json.loads(p.stdout)
