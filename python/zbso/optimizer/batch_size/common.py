"""The wire models of the batch size optimizer (Zeus's
zeus.optimizer.batch_size.common, seed 001): JobParams, JobSpec, GpuConfig,
JobSpecFromClient, CreatedJob, TrialId, TrainingResult, ReportResponse and the route
constants. They behave like Zeus's pydantic (v1) models without needing pydantic: keyword
construction with pydantic's coercions ("100" -> 100, "yes" -> True, 5 -> "5" for a
string), unknown keys ignored, every error of a model gathered in one ValidationError (a
ValueError), .dict(), .json(), .copy(), parse_obj() and parse_raw(). Deliberately stricter
than pydantic: a float that is not a whole number is not truncated into an int field, and a
float field must be finite (docs/ZEUS.md lists the differences). The server checks
everything again."""

from __future__ import annotations

import copy as _copy
import json
import math

REGISTER_JOB_URL = "/jobs"
DELETE_JOB_URL = "/jobs"
GET_NEXT_BATCH_SIZE_URL = "/jobs/batch_size"
REPORT_RESULT_URL = "/report"
REPORT_END_URL = "/trials"

_REQUIRED = object()
_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "off", "f", "false", "n", "no"}


class ValidationError(ValueError):
    """Every error of one model, pydantic's way: the count, the model, then each field and
    what is wrong with it."""

    def __init__(self, model, errors):
        self.model = model
        self.errors = errors  # [(field, message)]
        n = len(errors)
        lines = [f"{n} validation error{'s' if n != 1 else ''} for {model}"]
        for field, msg in errors:
            lines += [field, f"  {msg}"]
        super().__init__("\n".join(lines))


class _Field:
    """A field: its kind ("int", "float", "bool", "str", "int_list"), default (_REQUIRED
    when required), whether None is allowed, and bounds (gt, ge)."""

    def __init__(self, kind, default=_REQUIRED, optional=False, gt=None, ge=None):
        self.kind, self.default, self.optional, self.gt, self.ge = kind, default, optional, gt, ge


def _int(v):
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if not math.isfinite(v) or v != int(v):
            raise ValueError(f"value is not a whole number: {v!r}")
        return int(v)
    if isinstance(v, (str, bytes)):
        try:
            return int(v)
        except ValueError:
            pass
    raise ValueError(f"value is not a valid integer: {v!r}")


def _float(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"value is not a valid float: {v!r}") from None
    if not math.isfinite(f):
        raise ValueError(f"value is not a finite number: {v!r}")
    return f


def _bool(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    if isinstance(v, str):
        if v.lower() in _TRUE:
            return True
        if v.lower() in _FALSE:
            return False
    raise ValueError(f"value could not be parsed to a boolean: {v!r}")


def _str(v):
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, bytes):
        return v.decode("utf-8")
    raise ValueError(f"str type expected: {v!r}")


def _int_list(v):
    if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__iter__"):
        raise ValueError(f"value is not a valid list: {v!r}")
    return [_int(x) for x in v]


def _str_list(v):
    if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__iter__"):
        raise ValueError(f"value is not a valid list: {v!r}")
    out = []
    for x in v:
        if not isinstance(x, str):
            raise ValueError(f"str type expected in the list: {x!r}")
        out.append(x)
    return out


_COERCE = {"int": _int, "float": _float, "bool": _bool, "str": _str, "int_list": _int_list,
           "str_list": _str_list}


class _Model:
    """The pydantic-v1-like base. A subclass lists its own fields in _own_fields and its
    checks in _validators (field -> function(value) -> value) and _root_validators
    (function(values) -> None, run when every field is valid); the bases' come first, in
    pydantic's order (the last base's fields first)."""

    _own_fields: dict = {}
    _validators: dict = {}
    _root_validators: tuple = ()
    _fields: dict = {}
    # Fields beyond Zeus's models: dict() and json() leave them out while they hold their
    # default, so a model that does not use them is exactly Zeus's.
    _beyond_zeus: frozenset = frozenset()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        fields, validators, roots = {}, {}, []
        for base in reversed(cls.__bases__):
            if issubclass(base, _Model):
                fields.update(base._fields)
                validators.update(base._validators)
                roots += [r for r in base._all_roots if r not in roots]
        fields.update(cls.__dict__.get("_own_fields", {}))
        validators.update(cls.__dict__.get("_validators", {}))
        roots += [r for r in cls.__dict__.get("_root_validators", ()) if r not in roots]
        cls._fields = fields
        cls._validators = validators
        cls._all_roots = tuple(roots)

    _all_roots: tuple = ()

    def __init__(self, **data):
        values, errors = {}, []
        for name, f in self._fields.items():
            if name not in data:
                if f.default is _REQUIRED:
                    errors.append((name, "field required"))
                else:
                    values[name] = _copy.deepcopy(f.default)
                continue
            v = data[name]
            try:
                if v is None:
                    if not f.optional:
                        raise ValueError("none is not an allowed value")
                else:
                    v = _COERCE[f.kind](v)
                    if f.gt is not None and not v > f.gt:
                        raise ValueError(f"ensure this value is greater than {f.gt}")
                    if f.ge is not None and not v >= f.ge:
                        raise ValueError(f"ensure this value is greater than or equal to "
                                         f"{f.ge}")
                check = self._validators.get(name)
                if check is not None:
                    v = check(v)
            except ValueError as e:
                errors.append((name, str(e)))
                continue
            values[name] = v
        if not errors:
            for root in self._all_roots:
                try:
                    root(values)
                except ValueError as e:
                    errors.append(("__root__", str(e)))
        if errors:
            raise ValidationError(type(self).__name__, errors)
        object.__setattr__(self, "_values", values)

    def __getattr__(self, name):
        values = self.__dict__.get("_values")
        if values is not None and name in values:
            return values[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name, value):
        # pydantic (v1, no validate_assignment): fields are set as given, others refused.
        if name not in self._fields:
            raise ValueError(f'"{type(self).__name__}" object has no field "{name}"')
        self._values[name] = value

    def dict(self, *, include=None, exclude=None, exclude_none=False):
        """The fields as a dict, in field order (deep copies)."""
        out = {}
        for k, v in self._values.items():
            if include is not None and k not in include:
                continue
            if exclude is not None and k in exclude:
                continue
            if exclude_none and v is None:
                continue
            if (k in self._beyond_zeus and (include is None or k not in include)
                    and (v is None or v is False or v == [])):
                continue
            out[k] = _copy.deepcopy(v)
        return out

    def json(self, *, include=None, exclude=None, exclude_none=False, **dumps_kwargs):
        """json.dumps of .dict(); dumps_kwargs go to json.dumps (pydantic's default
        separators)."""
        return json.dumps(self.dict(include=include, exclude=exclude,
                                    exclude_none=exclude_none), **dumps_kwargs)

    def copy(self, *, include=None, exclude=None, update=None, deep=False):
        """A copy, with update's values set as given (not validated, as in pydantic)."""
        values = self.dict(include=include, exclude=exclude) if deep else {
            k: v for k, v in self._values.items()
            if (include is None or k in include) and (exclude is None or k not in exclude)}
        values.update(update or {})
        new = object.__new__(type(self))
        object.__setattr__(new, "_values", values)
        return new

    @classmethod
    def parse_obj(cls, obj):
        """A model from a mapping (or an object dict() accepts)."""
        if not isinstance(obj, dict):
            try:
                obj = dict(obj)
            except (TypeError, ValueError):
                raise ValidationError(cls.__name__, [(
                    "__root__", f"{cls.__name__} expected dict not {type(obj).__name__}")]
                ) from None
        return cls(**obj)

    @classmethod
    def parse_raw(cls, b, *, encoding="utf8", **_ignored):
        """A model from JSON text (str or bytes)."""
        if isinstance(b, bytes):
            b = b.decode(encoding)
        try:
            obj = json.loads(b)
        except ValueError as e:
            raise ValidationError(cls.__name__, [("__root__", str(e))]) from None
        return cls.parse_obj(obj)

    def __eq__(self, other):
        if isinstance(other, _Model):
            return self.dict() == other.dict()
        return self.dict() == other

    __hash__ = None

    def __iter__(self):
        yield from self._values.items()

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"{type(self).__name__}({args})"

    def __str__(self):
        return " ".join(f"{k}={v!r}" for k, v in self._values.items())

    def __getstate__(self):
        return {"_values": self._values}

    def __setstate__(self, state):
        object.__setattr__(self, "_values", state["_values"])

    def __deepcopy__(self, memo):
        return self.copy(deep=True)


def _sorted_batch_sizes(bs):
    if not bs:
        raise ValueError(f"Batch Sizes = {bs} is empty")
    return sorted(bs)


def _eta(v):
    if v < 0 or v > 1:
        raise ValueError("eta_knob should be in range [0,1]")
    return v


def _beta(v):
    if v is None or v > 0:
        return v
    raise ValueError(f"Invalid beta_knob({v}). To disable early stop, set beta_knob = None to "
                     "disable or positive value.")


def _check_default_batch_size(values):
    bs, bss = values["default_batch_size"], values["batch_sizes"]
    if bs not in bss:
        raise ValueError(f"Default BS({bs}) not in batch_sizes({bss}).")


def _check_job_id(values):
    job_id, prefix = values.get("job_id"), values["job_id_prefix"]
    if job_id is not None and not job_id.startswith(prefix):
        raise ValueError(f"Job_id({job_id}) does not start with prefix({prefix}).")


def _policy(v):
    if v is None or v in ("zeus", "smart"):
        return v
    raise ValueError(f"policy must be 'zeus' or 'smart' (or None: the server's default), "
                     f"got {v!r}")


def _prior_jobs(v):
    if v is None:
        return v
    if len(v) > 8:
        raise ValueError(f"prior_jobs names {len(v)} jobs, over the maximum of 8")
    for job_id in v:
        if not job_id:
            raise ValueError("prior_jobs holds an empty job id")
    return v


def _check_warm_start(values):
    warm = values.get("warm_start") or bool(values.get("prior_jobs"))
    if warm and values.get("policy") == "zeus":
        raise ValueError("a warm start (warm_start or prior_jobs) needs policy 'smart', "
                         "got policy 'zeus'")


def _carbon_intensity(v):
    if v is None or (math.isfinite(v) and 0 <= v <= 1e5):
        return v
    raise ValueError(f"carbon_intensity_g_per_kwh must be between 0 and 100000 g CO2e per "
                     f"kWh (or None: the server's), got {v!r}")


def _gpu_model(v):
    if v is None or v == "":
        raise ValueError(f"Invalid gpu_model({v}). Shouldn't be empty.")
    return v


class JobParams(_Model):
    """The job's parameters (seed 001): job_id, job_id_prefix, batch_sizes (sorted),
    default_batch_size (one of them), eta_knob in [0, 1], beta_knob (> 0, or None: no
    early stop), target_metric and higher_is_better_metric, max_epochs, num_pruning_rounds,
    window_size, and the bandit's mab_prior_mean, mab_prior_precision,
    mab_num_explorations and mab_seed. Beyond Zeus (optional, left out of dict() and
    json() while unset, so Zeus's servers never see them): policy ("zeus", "smart", or
    None for the server's default), warm_start and prior_jobs (job ids whose trials are
    the smart policy's prior), and carbon_intensity_g_per_kwh (the grid's g CO2e per kWh
    where the job runs, for its CO2e figures in place of the server's; None: the
    server's)."""

    _own_fields = {
        "job_id": _Field("str"),
        "job_id_prefix": _Field("str"),
        "batch_sizes": _Field("int_list"),
        "default_batch_size": _Field("int", gt=0),
        "eta_knob": _Field("float", 0.5),
        "beta_knob": _Field("float", 2.0, optional=True),
        "target_metric": _Field("float", 0.50),
        "higher_is_better_metric": _Field("bool", True),
        "max_epochs": _Field("int", 100, gt=0),
        "num_pruning_rounds": _Field("int", 2, ge=0),
        "window_size": _Field("int", 0),
        "mab_prior_mean": _Field("float", 0.0),
        "mab_prior_precision": _Field("float", 0.0),
        "mab_num_explorations": _Field("int", 2, ge=0),
        "mab_seed": _Field("int", None, optional=True),
        "policy": _Field("str", None, optional=True),
        "warm_start": _Field("bool", False),
        "prior_jobs": _Field("str_list", None, optional=True),
        "carbon_intensity_g_per_kwh": _Field("float", None, optional=True),
    }
    _validators = {"batch_sizes": _sorted_batch_sizes, "eta_knob": _eta, "beta_knob": _beta,
                   "policy": _policy, "prior_jobs": _prior_jobs,
                   "carbon_intensity_g_per_kwh": _carbon_intensity}
    _root_validators = (_check_default_batch_size, _check_warm_start)
    _beyond_zeus = frozenset({"policy", "warm_start", "prior_jobs",
                              "carbon_intensity_g_per_kwh"})


class GpuConfig(_Model):
    """The GPUs of the training: max_power (W, > 0), number_of_gpus (> 0), gpu_model."""

    _own_fields = {
        "max_power": _Field("float", gt=0),
        "number_of_gpus": _Field("int", gt=0),
        "gpu_model": _Field("str"),
    }
    _validators = {"gpu_model": _gpu_model}


class JobSpec(JobParams):
    """The job specification a training script gives (keyword arguments): JobParams with
    job_id optional (None: the server makes "<prefix>-<8 hex>"; else it must start with
    job_id_prefix)."""

    _own_fields = {"job_id": _Field("str", None, optional=True)}
    _root_validators = (_check_job_id,)

    def to_dict(self):
        """.dict() (zbso's earlier name)."""
        return self.dict()

    def to_json(self):
        """.json() (zbso's earlier name)."""
        return self.json()


class JobSpecFromClient(JobSpec, GpuConfig):
    """What the client registers: the JobSpec and the GPU facts."""


class CreatedJob(JobParams, GpuConfig):
    """The job as the server registered it (job_id set)."""


class TrialId(_Model):
    """A trial: job_id, batch_size, trial_number."""

    _own_fields = {"job_id": _Field("str"), "batch_size": _Field("int"),
                   "trial_number": _Field("int")}


class TrainingResult(TrialId):
    """A report: the trial, its time (s) and energy (J) so far, the metric after
    current_epoch."""

    _own_fields = {"time": _Field("float"), "energy": _Field("float"),
                   "metric": _Field("float"), "current_epoch": _Field("int")}


class ReportResponse(_Model):
    """The server's answer to a report: stop_train, converged, message."""

    _own_fields = {"stop_train": _Field("bool"), "converged": _Field("bool"),
                   "message": _Field("str")}


__all__ = ["REGISTER_JOB_URL", "DELETE_JOB_URL", "GET_NEXT_BATCH_SIZE_URL",
           "REPORT_RESULT_URL", "REPORT_END_URL", "JobParams", "GpuConfig", "JobSpec",
           "JobSpecFromClient", "CreatedJob", "TrialId", "TrainingResult", "ReportResponse",
           "ValidationError"]
