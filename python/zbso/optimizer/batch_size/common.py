"""JobSpec: the job parameters a training script gives the optimizer (Zeus's
zeus.optimizer.batch_size.common.JobSpec, seed 001), as a dataclass that serializes to the
server's JSON. Checked on construction like Zeus's model; the server checks everything
again."""

import json
import math
from dataclasses import asdict, dataclass
from typing import List, Optional

_FLOATS = ("eta_knob", "target_metric", "mab_prior_mean", "mab_prior_precision")
_INTS = ("default_batch_size", "max_epochs", "num_pruning_rounds", "window_size",
         "mab_num_explorations")


def _as_int(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v):
        raise ValueError(f"{name} must be an integer, got {v!r}")
    return int(v)


def _as_float(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    return float(v)


@dataclass(kw_only=True)
class JobSpec:
    """Job specification (keyword arguments only, as Zeus's pydantic model).

    job_id: id of the job; None lets the server generate "<prefix>-<8 hex>".
    job_id_prefix: prefix of the job id (required).
    batch_sizes: batch sizes to try (required; kept sorted ascending).
    default_batch_size: first batch size to try; one of batch_sizes (required).
    eta_knob: eta of the cost eta*energy + (1-eta)*max_power*time, in [0, 1].
    beta_knob: early stop when cost > beta * min cost; None disables.
    target_metric, higher_is_better_metric: when a run has converged.
    max_epochs, num_pruning_rounds, window_size: see seed 001.
    mab_prior_mean, mab_prior_precision, mab_num_explorations, mab_seed: the bandit."""

    job_id: Optional[str] = None
    job_id_prefix: str
    batch_sizes: List[int]
    default_batch_size: int
    eta_knob: float = 0.5
    beta_knob: Optional[float] = 2.0
    target_metric: float = 0.50
    higher_is_better_metric: bool = True
    max_epochs: int = 100
    num_pruning_rounds: int = 2
    window_size: int = 0
    mab_prior_mean: float = 0.0
    mab_prior_precision: float = 0.0
    mab_num_explorations: int = 2
    mab_seed: Optional[int] = None

    def __post_init__(self):
        if not isinstance(self.job_id_prefix, str) or not self.job_id_prefix:
            raise ValueError(f"job_id_prefix must be a non-empty string, got "
                             f"{self.job_id_prefix!r}")
        if self.job_id is not None:
            if not isinstance(self.job_id, str):
                raise ValueError(f"job_id must be a string or None, got {self.job_id!r}")
            if not self.job_id.startswith(self.job_id_prefix):
                raise ValueError(f"Job_id({self.job_id}) does not start with "
                                 f"prefix({self.job_id_prefix}).")
        try:
            bss = [_as_int("batch_sizes", b) for b in self.batch_sizes]
        except TypeError:
            raise ValueError(f"batch_sizes must be a list of integers, got "
                             f"{self.batch_sizes!r}") from None
        if not bss:
            raise ValueError(f"Batch Sizes = {bss} is empty")
        self.batch_sizes = sorted(bss)
        for name in _INTS:
            setattr(self, name, _as_int(name, getattr(self, name)))
        for name in _FLOATS:
            setattr(self, name, _as_float(name, getattr(self, name)))
        if self.beta_knob is not None:
            self.beta_knob = _as_float("beta_knob", self.beta_knob)
            if self.beta_knob <= 0:
                raise ValueError(f"Invalid beta_knob({self.beta_knob}). To disable early "
                                 "stop, set beta_knob = None to disable or positive value.")
        if self.mab_seed is not None:
            self.mab_seed = _as_int("mab_seed", self.mab_seed)
        if not isinstance(self.higher_is_better_metric, bool):
            raise ValueError(f"higher_is_better_metric must be a bool, got "
                             f"{self.higher_is_better_metric!r}")
        if not 0.0 <= self.eta_knob <= 1.0:
            raise ValueError("eta_knob should be in range [0,1]")
        if self.max_epochs <= 0:
            raise ValueError(f"max_epochs must be > 0, got {self.max_epochs}")
        if self.default_batch_size <= 0:
            raise ValueError(f"default_batch_size must be > 0, got {self.default_batch_size}")
        if self.default_batch_size not in self.batch_sizes:
            raise ValueError(f"Default BS({self.default_batch_size}) not in "
                             f"batch_sizes({self.batch_sizes}).")

    def dict(self):
        """The fields as a dict (pydantic's spelling)."""
        return asdict(self)

    def to_dict(self):
        return asdict(self)

    def json(self):
        """The JSON object the server reads (JobSpec part of JobSpecFromClient)."""
        return json.dumps(asdict(self), allow_nan=False)

    to_json = json


__all__ = ["JobSpec"]
