"""compose.py: the parts of deploy/compose.yaml that the compose-like test acts out, read
without a YAML library: the zbso services' environment (the block anchored &zbso-env),
each service's published ports, the migrate service's command and the secrets' sources,
and Compose's variable interpolation (${VAR}, ${VAR:-default}, nested, $$) over the values
of a .env. Only the plain block style that compose.yaml is written in is understood;
anything else fails loudly."""

import re


def _indent(line):
    return len(line) - len(line.lstrip(" "))


def _block(lines, start):
    """The lines indented deeper than lines[start], after it."""
    base = _indent(lines[start])
    out = []
    for line in lines[start + 1:]:
        if line.strip() and _indent(line) <= base:
            break
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(line)
    return out


def _find(lines, pattern, what):
    for i, line in enumerate(lines):
        if re.fullmatch(pattern, line.rstrip()):
            return i
    raise AssertionError(f"compose.yaml: no {what} (a line matching {pattern!r})")


def _scalar(text):
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


class Compose:
    def __init__(self, path):
        with open(path) as f:
            self.lines = f.read().splitlines()

    def zbso_environment(self):
        """{KEY: raw value} of the block `environment: &zbso-env`."""
        i = _find(self.lines, r"\s+environment: &zbso-env", "zbso environment block")
        env = {}
        for line in _block(self.lines, i):
            key, sep, value = line.strip().partition(": ")
            if not sep:
                raise AssertionError(f"compose.yaml: not KEY: VALUE: {line!r}")
            env[key] = _scalar(value)
        return env

    def service(self, name):
        i = _find(self.lines, rf"  {re.escape(name)}:", f"service {name}")
        return _block(self.lines, i)

    def ports(self, name):
        """The raw "HOST:CONTAINER" entries of a service's ports."""
        block = self.service(name)
        for j, line in enumerate(block):
            if line.strip() == "ports:":
                return [_scalar(ln.strip()[2:]) for ln in block[j + 1:]
                        if ln.strip().startswith("- ")
                        and _indent(ln) > _indent(line)]
        raise AssertionError(f"compose.yaml: service {name} publishes no port")

    def command(self, name):
        for line in self.service(name):
            m = re.fullmatch(r"\s+command: \[(.*)\]", line)
            if m:
                return [_scalar(x) for x in m.group(1).split(",")]
        raise AssertionError(f"compose.yaml: service {name} has no command: [...]")

    def secret_sources(self):
        """{secret name: environment variable it is made of}."""
        i = _find(self.lines, r"secrets:", "top-level secrets")
        out, name = {}, None
        for line in _block(self.lines, i):
            if _indent(line) == 2:
                name = line.strip().rstrip(":")
            else:
                key, _, value = line.strip().partition(": ")
                if key != "environment":
                    raise AssertionError(f"compose.yaml: secret {name}: {line.strip()!r}")
                out[name] = _scalar(value)
        return out


def interpolate(text, values):
    """Compose's interpolation of text with values (a .env's variables)."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("${", i):
            depth, j = 1, i + 2
            while depth:
                if j >= len(text):
                    raise AssertionError(f"unbalanced ${{ in {text!r}")
                if text.startswith("${", j):
                    depth, j = depth + 1, j + 2
                    continue
                if text[j] == "}":
                    depth -= 1
                j += 1
            inner = text[i + 2:j - 1]
            name, sep, default = inner.partition(":-")
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise AssertionError(f"unsupported interpolation ${{{inner}}}")
            value = values.get(name, "")
            out.append(value if value or not sep else interpolate(default, values))
            i = j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)
