"""Local optimizers as elementwise rules over flat parameters (FedCluster paper §IV-C;
docs/papers/fedcluster.md R10-R13).

One definition serves both backends: w, g, the state and the anchor W_start (FedProx) are flat
tensors of one layout, (P,) for one client or a stack (D*P,) of D clients. State starts fresh at every
activation. Updates are in place on tensors owned by one local run (the gradient included, as scratch),
so a step allocates nothing of the stack's size.
The formulas follow torch.optim.SGD/Adam op for op, so a single client matches them to rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

OPTIMIZERS = ("sgd", "sgdm", "adam", "fedprox")


@dataclass(frozen=True)
class LocalOptimizer:
    name: str
    lr: float
    momentum: float = 0.5  # SGDm, PyTorch convention buf = m*buf + g, no dampening or Nesterov
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    mu: float = 0.1  # FedProx: local objective f + mu/2 ||w - W_start||^2

    def __post_init__(self) -> None:
        if self.name not in OPTIMIZERS:
            raise ValueError(f"unknown local optimizer {self.name!r}; expected one of {OPTIMIZERS}")
        if not self.lr > 0:
            raise ValueError(f"lr = {self.lr} must be > 0")

    @property
    def n_state(self) -> int:
        """State tensors of w's shape: SGDm's momentum, Adam's two moments."""
        return {"sgd": 0, "fedprox": 0, "sgdm": 1, "adam": 2}[self.name]

    def init(self, w: Tensor, out: Sequence[Tensor] = ()) -> tuple[Tensor, ...]:
        """Fresh (zero) state for w: the buffers `out` zeroed (reused, w's shape) or new tensors."""
        if out:
            return tuple(b.zero_() for b in out[: self.n_state])
        return tuple(torch.zeros_like(w) for _ in range(self.n_state))

    def step(self, w: Tensor, g: Tensor, state: tuple[Tensor, ...], t: int, anchor: Tensor | None) -> None:
        """Local step t = 0, 1, ... : updates w and state in place (g may be overwritten); the anchor is
        used by FedProx only."""
        if self.name == "sgd":
            w.add_(g, alpha=-self.lr)
        elif self.name == "fedprox":
            w.add_(g.add_(w, alpha=self.mu).sub_(anchor, alpha=self.mu), alpha=-self.lr)  # no w - anchor temporary
        elif self.name == "sgdm":
            (buf,) = state
            w.add_(buf.mul_(self.momentum).add_(g), alpha=-self.lr)  # buf = g at t = 0 since buf starts at 0
        else:
            m, v = state
            b1, b2 = self.betas
            m.lerp_(g, 1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = torch.sqrt(v, out=g).div_((1 - b2 ** (t + 1)) ** 0.5).add_(self.eps)  # g is spent: scratch
            w.addcdiv_(m, denom, value=-self.lr / (1 - b1 ** (t + 1)))
