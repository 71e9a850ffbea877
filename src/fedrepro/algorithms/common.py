"""Pieces shared by the finite-sum FL algorithms: the protocol base, batched sampling, local SGD.

All per-client work in a round is batched over the sampled clients as (S,...) tensors; randomness
comes only from `streams(purpose, round)`, so a round is a pure function of (state, round index).
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from fedrepro.objectives import FiniteSumProblem

Streams = Callable[[str, int], torch.Generator]
StateValue = Tensor | float | int | bool | None


class Algorithm:
    """x: server model (d,), float64, starting at x0 = 0 (spec §6). Subclasses list their
    hyperparameter names in HP and the attributes needed to resume bit-exactly in STATE."""

    HP: tuple[str, ...] = ()
    STATE: tuple[str, ...] = ("x",)

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
        self.x = torch.zeros(problem.dim, dtype=torch.float64, device=problem.A.device)
        self.S, self.K = int(hp["S"]), int(hp["K"])
        self.eta_g, self.eta_l = float(hp["eta_g"]), float(hp["eta_l"])
        _require(1 <= self.S <= problem.n_clients, f"S={self.S} must be in [1, N={problem.n_clients}]")
        _require(self.K >= 1, f"K={self.K} must be >= 1")
        _require(self.eta_l > 0, f"eta_l={self.eta_l} must be > 0")

    def round(self, r: int) -> dict:
        raise NotImplementedError

    def state_dict(self) -> dict[str, StateValue]:
        return {k: _copy(getattr(self, k)) for k in self.STATE}

    def load_state_dict(self, d: dict[str, StateValue]) -> None:
        if d.keys() != set(self.STATE):
            raise ValueError(f"{type(self).__name__}: state keys {sorted(d)} != {sorted(self.STATE)}")
        device = self.x.device
        for k, v in d.items():
            setattr(self, k, v.to(device, copy=True) if isinstance(v, Tensor) else v)

    def _batch_size(self, key: str) -> int:
        b, M = int(self.hp[key]), self.problem.samples_per_client
        _require(1 <= b <= M, f"{key}={b} must be in [1, M={M}]")
        return b


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _copy(v: StateValue) -> StateValue:
    return v.clone() if isinstance(v, Tensor) else v


def sample_clients(gen: torch.Generator, n_clients: int, s: int) -> Tensor:
    """S distinct clients, uniform without replacement: (S,) long."""
    return torch.randperm(n_clients, generator=gen, device=gen.device)[:s]


def minibatches(gen: torch.Generator, A: Tensor, b: Tensor, steps: int, size: int) -> tuple[Tensor, Tensor]:
    """Rows of `steps` fresh minibatches for each client shard A (S,M,d), b (S,M).

    Returns (steps,S,size,d) and (steps,S,size). Each minibatch is `size` distinct indices drawn
    uniformly from [M], independently per (step, client); all drawn in one call. With size == M the
    minibatch is the whole shard, so nothing is drawn and no rows are copied.
    """
    S, M = b.shape
    if size == M:
        return A.expand(steps, *A.shape), b.expand(steps, *b.shape)
    idx = torch.rand(steps, S, M, generator=gen, device=gen.device).argsort(dim=-1)[..., :size]
    rows = torch.arange(S, device=A.device).unsqueeze(-1)
    return A[rows, idx], b[rows, idx]


def local_sgd(
    problem: FiniteSumProblem,
    x: Tensor,
    clients: Tensor,
    gen: torch.Generator,
    K: int,
    eta_l: float,
    batch: int,
    correction: Tensor | None = None,
) -> Tensor:
    """K local minibatch SGD steps from x on each client: y <- y - eta_l (grad_B f_i(y) + correction).

    Returns the final local models (S,d). correction (S,d) is SCAFFOLD's c - c_i; None for FedAvg.
    """
    A, b = minibatches(gen, problem.A[clients], problem.b[clients], K, batch)
    y = x.expand(len(clients), -1)
    for k in range(K):
        g = problem.rows_grad(y, A[k], b[k])
        if correction is not None:
            g = g + correction
        y = y - eta_l * g
    return y
