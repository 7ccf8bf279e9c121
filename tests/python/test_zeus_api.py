"""The binding against the recorded list of Zeus's client-side API (zeus_api.json, written
from Zeus's documented API): every module, name, kind, base class, signature (parameter
names, order and defaults), dataclass and model field (order and defaults), constant and
instance attribute exists under zbso.* as in Zeus. The deliberate differences the record
lists must each be described in docs/ZEUS.md."""

import dataclasses
import functools
import importlib
import inspect
import json
import os
import unittest

import support

HERE = os.path.dirname(os.path.abspath(__file__))
MISSING = object()


def load_api():
    with open(os.path.join(HERE, "zeus_api.json"), encoding="utf-8") as f:
        return json.load(f)


def zbso_path(dotted):
    return "zbso" + dotted[len("zeus"):] if dotted.startswith("zeus.") else dotted


def resolve(dotted):
    """The zbso object for Zeus's dotted name ("Exception" is the builtin)."""
    if "." not in dotted:
        return __builtins__[dotted] if isinstance(__builtins__, dict) else getattr(
            __builtins__, dotted)
    module, _, name = zbso_path(dotted).rpartition(".")
    return getattr(importlib.import_module(module), name)


def params_of(fn):
    """fn's parameters as the record writes them: name, or name=<JSON default>, or
    **name."""
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.VAR_KEYWORD:
            out.append("**" + p.name)
        elif p.kind is p.VAR_POSITIONAL:
            out.append("*" + p.name)
        elif p.default is p.empty:
            out.append(p.name)
        else:
            out.append(f"{p.name}={json.dumps(p.default)}")
    return out


class Checker:
    """Collects what differs from the record, one line per finding."""

    def __init__(self):
        self.problems = []

    def fail(self, where, what):
        self.problems.append(f"{where}: {what}")

    def signature(self, where, fn, want):
        try:
            got = params_of(fn)
        except (TypeError, ValueError) as e:
            self.fail(where, f"no signature ({e})")
            return
        if got != want:
            self.fail(where, f"parameters {got}, Zeus's {want}")

    def methods(self, where, cls, methods):
        for name, want in methods.items():
            fn = getattr(cls, name, MISSING)
            if fn is MISSING or not callable(fn):
                self.fail(f"{where}.{name}", "missing method")
            else:
                self.signature(f"{where}.{name}", fn, want)

    def bases(self, where, cls, bases):
        for base in bases:
            try:
                b = resolve(base)
            except (ImportError, AttributeError):
                self.fail(where, f"base {base} missing")
                continue
            if not issubclass(cls, b):
                self.fail(where, f"not a subclass of {base}")

    def dataclass(self, where, cls, spec):
        if not dataclasses.is_dataclass(cls):
            self.fail(where, "not a dataclass")
            return
        got = []
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                got.append([f.name, f.default])
            else:
                got.append([f.name, "<required>"])
        if got != spec["fields"]:
            self.fail(where, f"fields {got}, Zeus's {spec['fields']}")
        for prop in spec.get("properties", []):
            if not isinstance(inspect.getattr_static(cls, prop, None),
                              (property, functools.cached_property)):
                self.fail(f"{where}.{prop}", "missing property")

    def model(self, where, cls, spec, pydantic_methods):
        self.signature(f"{where}.__init__", cls, ["**data"])
        try:
            obj = cls(**spec["example"])
        except Exception as e:  # noqa: BLE001 - reported as a difference
            self.fail(where, f"the example does not construct: {e}")
            return
        got = list(obj.dict().items())
        want_names = [name for name, _ in spec["fields"]]
        if [k for k, _ in got] != want_names:
            self.fail(where, f"fields {[k for k, _ in got]}, Zeus's {want_names}")
        for name, default in spec["fields"]:
            if default == "<required>":
                data = {k: v for k, v in spec["example"].items() if k != name}
                try:
                    cls(**data)
                    self.fail(f"{where}.{name}", "not required")
                except ValueError:
                    pass
            elif name not in spec["example"] and obj.dict().get(name, MISSING) != default:
                self.fail(f"{where}.{name}", f"default {obj.dict().get(name)!r}, Zeus's "
                          f"{default!r}")
        for m in pydantic_methods:
            if not callable(getattr(cls, m, None)):
                self.fail(f"{where}.{m}", "missing method")


class TestZeusApi(support.ServerCase):
    def setUp(self):
        super().setUp()
        self.api = load_api()

    def test_every_name_signature_and_field(self):
        c = Checker()
        for mod, names in self.api["modules"].items():
            try:
                zmod = importlib.import_module(zbso_path(mod))
            except ImportError as e:
                c.fail(mod, f"module missing ({e})")
                continue
            for name, spec in names.items():
                where = f"{mod}.{name}"
                obj = getattr(zmod, name, MISSING)
                if obj is MISSING:
                    c.fail(where, "missing")
                    continue
                kind = spec["kind"]
                if kind == "alias":
                    if obj is not resolve(spec["of"]):
                        c.fail(where, f"is not {spec['of']}")
                elif kind == "constant":
                    if obj != spec["value"]:
                        c.fail(where, f"{obj!r}, Zeus's {spec['value']!r}")
                elif kind == "function":
                    c.signature(where, obj, spec["params"])
                elif not inspect.isclass(obj):
                    c.fail(where, "not a class")
                elif kind == "model":
                    c.bases(where, obj, spec.get("bases", []))
                    c.model(where, obj, spec, self.api["pydantic_methods"])
                else:
                    c.bases(where, obj, spec.get("bases", []))
                    if "init" in spec:
                        c.signature(f"{where}.__init__", obj, spec["init"][1:])
                    c.methods(where, obj, spec.get("methods", {}))
                    if kind == "dataclass":
                        c.dataclass(where, obj, spec)
        self.assertEqual(c.problems, [], "\n".join(c.problems))

    def test_instance_attributes(self):
        """The attributes Zeus sets in __init__ (or its properties), on real objects; the
        ones Zeus's data-parallel example assigns can be assigned."""
        from zbso.callback import CallbackSet
        from zbso.exception import ZeusBaseError
        from zbso.monitor import ZeusMonitor
        from zbso.optimizer.batch_size import BatchSizeOptimizer, JobSpec
        monitor = ZeusMonitor()
        bso = BatchSizeOptimizer(monitor, self.url,
                                 JobSpec(job_id_prefix="api", batch_sizes=[32],
                                         default_batch_size=32))
        objects = {
            "zeus.monitor.energy.ZeusMonitor": monitor,
            "zeus.optimizer.batch_size.client.BatchSizeOptimizer": bso,
            "zeus.callback.CallbackSet": CallbackSet([]),
            "zeus.exception.ZeusBaseError": ZeusBaseError("m"),
        }
        c = Checker()
        for mod, names in self.api["modules"].items():
            for name, spec in names.items():
                where = f"{mod}.{name}"
                if "attributes" not in spec:
                    continue
                self.assertIn(where, objects, "give the test an instance of it")
                obj = objects[where]
                for attr in spec["attributes"]:
                    if not hasattr(obj, attr):
                        c.fail(where, f"no attribute {attr}")
                for attr in spec.get("settable", []):
                    try:
                        setattr(obj, attr, getattr(obj, attr))
                    except (AttributeError, ValueError) as e:
                        c.fail(where, f"{attr} cannot be set: {e}")
        self.assertEqual(c.problems, [], "\n".join(c.problems))
        bso.current_batch_size = 32
        bso.trial_number = 7
        self.assertEqual((bso.current_batch_size, bso.trial_number), (32, 7))

    def test_differences_are_documented(self):
        with open(os.path.join(support.REPO, "docs", "ZEUS.md"), encoding="utf-8") as f:
            docs = f.read()
        missing = [d for d in self.api["differences"] if f"`{d}`" not in docs]
        self.assertEqual(missing, [], "deliberate differences docs/ZEUS.md does not describe")


if __name__ == "__main__":
    unittest.main()
