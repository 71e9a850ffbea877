"""The base of the finite-sum FL algorithms (a Method, algorithms/method.py) and how a run's settings become their
hyperparameters.

All per-client work in a round is batched over the sampled clients as (S,...) tensors (kernels.py); randomness
comes only from `streams(purpose, round)`, so a round is a pure function of (state, round index).
"""

from __future__ import annotations

import torch
from torch import Tensor

from fedrepro.objectives import FiniteSumProblem
from fedrepro.seeding import Streams


class Algorithm:
    """A finite-sum method (algorithms/method.py): its state holds the server model x (d,), float64, starting
    at x0 = 0 (docs/papers/fedpage.md R3), and what else its rounds read of the past. Subclasses list their
    hyperparameter names in HP, and in `settings` the run settings only they read (algorithms/__init__.py)."""

    HP: tuple[str, ...] = ()
    settings: tuple[str, ...] = ()

    def __init__(self, problem: FiniteSumProblem, hp: dict, streams: Streams) -> None:
        missing, unknown = set(self.HP) - hp.keys(), hp.keys() - set(self.HP)
        if missing or unknown:
            raise ValueError(
                f"{type(self).__name__}: missing hyperparameters {sorted(missing)}, unknown {sorted(unknown)}"
                f" (expected exactly {list(self.HP)})"
            )
        self.problem = problem
        self.hp = dict(hp)
        self.streams = streams
        self.S, self.K = int(hp["S"]), int(hp["K"])
        self.eta_g, self.eta_l = float(hp["eta_g"]), float(hp["eta_l"])
        _require(1 <= self.S <= problem.n_clients, f"S={self.S} must be in [1, N={problem.n_clients}]")
        _require(self.K >= 1, f"K={self.K} must be >= 1")
        _require(self.eta_l > 0, f"eta_l={self.eta_l} must be > 0")

    @classmethod
    def build(cls, spec: dict, problem: FiniteSumProblem, streams: Streams) -> Algorithm:
        """The method of a run on `problem` (the finite_sum engine's env), with its hyperparameters from the run's
        settings."""
        return cls(problem, cls.hyperparameters(spec, problem.n_clients, problem.samples_per_client), streams)

    @classmethod
    def hyperparameters(cls, spec: dict, n_clients: int, samples_per_client: int) -> dict:
        """The algorithm's HP from a run's settings: the paper's effective step size eta_tilde split into
        eta_g and eta_l as this algorithm does (paper §6; docs/papers/fedpage.md R6, R9), and the symbolic
        values (`full`, `auto`) as numbers. The engine's limits are checked before (FiniteSumEngine.limits)."""
        raise NotImplementedError

    def init(self) -> dict[str, Tensor | None]:
        return {"x": torch.zeros(self.problem.dim, dtype=torch.float64, device=self.problem.A.device)}

    def round(self, state: dict[str, Tensor | None], r: int) -> tuple[dict[str, Tensor | None], dict]:
        raise NotImplementedError

    def _batch_size(self, key: str) -> int:
        b, M = int(self.hp[key]), self.problem.samples_per_client
        _require(1 <= b <= M, f"{key}={b} must be in [1, M={M}]")
        return b


def batch_size(value: int | str, samples_per_client: int) -> int:
    """A minibatch size setting: `full` is the client's whole shard."""
    return samples_per_client if value == "full" else int(value)


def split_step(spec: dict, eta_g: float, eta_l: float) -> dict:
    """The step sizes an algorithm derived from eta_tilde, first in its HP (a spec never sets them itself)."""
    if {"eta_g", "eta_l"} & spec.keys():
        raise ValueError("eta_g/eta_l are derived from eta_tilde; do not pass them")
    return {"K": spec["K"], "eta_g": eta_g, "eta_l": eta_l, "S": spec["S"]}


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)
