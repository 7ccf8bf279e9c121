"""zbso.utils.lr_scaler: learning-rate scaling rules for a new batch size (Zeus's
zeus.utils.lr_scaler): scale the learning rate tuned for batch size bs when the optimizer
picks another one."""

import math
from dataclasses import dataclass


@dataclass
class SquareRootScaler:
    """lr * sqrt(new_bs / bs): bs and lr are the batch size and learning rate tuned
    together."""

    bs: int
    lr: float

    def compute_lr(self, new_bs):
        """The learning rate for batch size new_bs."""
        return self.lr * math.sqrt(new_bs / self.bs)


@dataclass
class LinearScaler:
    """lr * new_bs / bs (the linear scaling rule, for SGD): bs and lr are the batch size and
    learning rate tuned together."""

    bs: int
    lr: float

    def compute_lr(self, new_bs):
        """The learning rate for batch size new_bs."""
        return self.lr * new_bs / self.bs


__all__ = ["SquareRootScaler", "LinearScaler"]
