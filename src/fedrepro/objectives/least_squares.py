"""Federated linear least squares: f(θ) = (1/N) Σ_n (1/L) Σ_i (q_{n,i} θ − y_{n,i})².

This is the objective of Rostami & Kia (paper key `fedvr`), eq. (2)/(15): square loss
with **no ½ factor**, so every gradient carries a factor 2 (the paper's δ = 0.1 was set
against that scaling). All agents hold the same number of samples L, so the data are
one (N, L, d) tensor and every gradient is a closed-form batched einsum in float64.

`make_insurance_problem` builds the paper's instance from the medical-insurance data
(Lantz, `insurance.csv`); see docs/papers/fedvr.md R1-R3 for why each default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence, get_args

import numpy as np
import torch

from fedrepro.errors import DataError
from fedrepro.seeding import numpy_rng

Scaling = Literal["minmax", "maxabs", "none"]
ScalingRows = Literal["used", "all"]  # the rows the scaling statistics come from
Rows = Literal["first", "random"]  # which rows the agents get

# The insurance data's regions (data/prepare.py: the checksummed file's, sorted): feature "region" is one indicator
# column each.
REGIONS: tuple[str, ...] = ("northeast", "northwest", "southeast", "southwest")
# The 5 non-region, non-target columns: the paper's "(y, v) ∈ R × R^{1×5}" (paper §VI; docs/papers/fedvr.md R2).
DEFAULT_FEATURES: tuple[str, ...] = ("age", "sex", "bmi", "children", "smoker")


@dataclass(frozen=True)
class LeastSquaresProblem:
    """Per-agent data Q (N, L, d), Y (N, L), float64, and the exact optimum."""

    Q: torch.Tensor
    Y: torch.Tensor
    theta_star: torch.Tensor
    f_star: float
    feature_names: tuple[str, ...] = ()

    @classmethod
    def from_data(
        cls, Q: torch.Tensor, Y: torch.Tensor, feature_names: Sequence[str] = ()
    ) -> LeastSquaresProblem:
        """θ*, f* from the normal equations QᵀQ θ = Qᵀy (all agents pooled) in float64.

        Solved with an SVD-based least-squares driver, so a rank-deficient design (e.g.
        intercept plus every region indicator) still gets the exact f* (min-norm θ*).
        """
        Q = Q.to(torch.float64)
        Y = Y.to(torch.float64)
        if Q.ndim != 3 or Y.shape != Q.shape[:2]:
            raise ValueError(f"need Q (N, L, d) and Y (N, L); got {tuple(Q.shape)}, {tuple(Y.shape)}")
        flat_q = Q.reshape(-1, Q.shape[-1])
        normal = (flat_q.T @ flat_q).cpu().unsqueeze(0)  # gelsd is CPU-only
        rhs = (flat_q.T @ Y.reshape(-1)).cpu().reshape(1, -1, 1)
        theta_star = torch.linalg.lstsq(normal, rhs, driver="gelsd").solution.reshape(-1).to(Q.device)
        return cls(Q, Y, theta_star, float(_cost(Q, Y, theta_star)), tuple(feature_names))

    @property
    def n_agents(self) -> int:
        return self.Q.shape[0]

    @property
    def samples_per_agent(self) -> int:
        return self.Q.shape[1]

    @property
    def dim(self) -> int:
        return self.Q.shape[2]

    def cost(self, theta: torch.Tensor) -> torch.Tensor:
        """f(θ) for θ of shape (..., d) -> (...)."""
        return _cost(self.Q, self.Y, theta)

    def grad(self, theta: torch.Tensor) -> torch.Tensor:
        """∇f(θ) for θ of shape (..., d) -> (..., d)."""
        per_agent = theta.unsqueeze(-2).expand(*theta.shape[:-1], self.n_agents, self.dim)
        return self.local_grad(per_agent).mean(dim=-2)

    def local_grad(self, w: torch.Tensor) -> torch.Tensor:
        """Full local gradients ∇f_n(w_n) = (2/L) Q_nᵀ(Q_n w_n − Y_n); w (..., N, d) -> (..., N, d)."""
        resid = torch.einsum("nld,...nd->...nl", self.Q, w) - self.Y
        return torch.einsum("...nl,nld->...nd", resid, self.Q) * (2.0 / self.samples_per_agent)

    def minibatch_grad(self, w: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """Mean of ∇f_{n,i}(w_n) over each agent's sample indices.

        w (..., N, d), idx (..., N, b) integer indices into that agent's L samples -> (..., N, d).
        """
        agents = torch.arange(self.n_agents, device=idx.device).unsqueeze(-1)
        q = self.Q[agents, idx]  # (..., N, b, d)
        resid = torch.einsum("...nbd,...nd->...nb", q, w) - self.Y[agents, idx]
        return torch.einsum("...nb,...nbd->...nd", resid, q) * (2.0 / idx.shape[-1])


def _cost(Q: torch.Tensor, Y: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    # Equal L for every agent, so the mean over agents of local means is the pooled mean.
    resid = torch.einsum("nld,...d->...nl", Q, theta) - Y
    return resid.square().mean(dim=(-2, -1))


def make_insurance_problem(
    columns: dict[str, np.ndarray],
    *,
    n_agents: int = 18,
    samples_per_agent: int = 50,
    features: Sequence[str] = DEFAULT_FEATURES,
    target: str = "charges",
    scaling: Scaling = "minmax",
    scaling_rows: ScalingRows = "used",
    rows: Rows = "first",
    rows_seed: int = 0,
    intercept: bool = False,
    device: str | torch.device = "cpu",
) -> LeastSquaresProblem:
    """The paper's 900-person, 18-agent × 50-sample regression (paper §VI; defaults: docs/papers/fedvr.md R1-R3).

    columns: the prepared insurance dict (age, sex, bmi, children, smoker, region codes,
    region_names, charges), file order. `features` may include "region", which expands
    to one indicator column per region name.
    rows: "first" takes the first N·L rows in file order (the file is unsorted, so this
    is effectively a random subset); "random" a seeded random subset in random order.
    Agent n gets the contiguous block n·L … n·L+L−1 of the selected rows.
    scaling (features and target alike): "minmax" maps each column to [0, 1]. It and
    "maxabs" give the paper's "optimal cost (the value is 0.01)" (f* = 0.0092 / 0.0097);
    z-scoring gives 0.05–0.24 and raw units ~1e7. Statistics from the used or all rows.
    intercept: append a constant-1 column after scaling (the paper's θ has 5 elements, so off).
    """
    n_used = n_agents * samples_per_agent
    n_rows = len(columns[target])
    if n_used > n_rows:
        raise ValueError(f"{n_agents}×{samples_per_agent} = {n_used} rows requested, data has {n_rows}")
    names, cols = _design_columns(columns, features)
    table = np.column_stack([*cols, np.asarray(columns[target], dtype=np.float64)])
    if rows == "first":
        used = np.arange(n_used)
    elif rows == "random":
        used = numpy_rng("insurance-rows", rows_seed).permutation(n_rows)[:n_used]
    else:
        raise ValueError(f"unknown rows choice {rows!r}")
    if scaling_rows not in get_args(ScalingRows):
        raise ValueError(f"unknown scaling_rows {scaling_rows!r}")
    stats_from = table[used] if scaling_rows == "used" else table
    table = _scale(table[used], stats_from, scaling)
    x, y = table[:, :-1], table[:, -1]
    if intercept:
        x = np.column_stack([x, np.ones(n_used)])
        names = [*names, "intercept"]
    Q = torch.as_tensor(x, dtype=torch.float64, device=device).reshape(n_agents, samples_per_agent, -1)
    Y = torch.as_tensor(y, dtype=torch.float64, device=device).reshape(n_agents, samples_per_agent)
    return LeastSquaresProblem.from_data(Q, Y, names)


def design_names(features: Sequence[str], intercept: bool) -> list[str]:
    """The columns of the design matrix, θ's entries, known from the settings alone: a feature's, one per region for
    "region" (REGIONS), then the intercept's."""
    names = [name for f in features for name in ([f"region_{r}" for r in REGIONS] if f == "region" else [f])]
    return names + ["intercept"] * bool(intercept)


def _design_columns(
    columns: dict[str, np.ndarray], features: Sequence[str]
) -> tuple[list[str], list[np.ndarray]]:
    if "region" in features and tuple(columns["region_names"]) != REGIONS:
        raise DataError(f"the insurance data's regions are {', '.join(columns['region_names'])}, not the "
                        f"checksummed file's {', '.join(REGIONS)}; prepare it again")
    cols: list[np.ndarray] = []
    for feature in features:
        if feature == "region":
            codes = np.asarray(columns["region"])
            cols += [(codes == code).astype(np.float64) for code in range(len(REGIONS))]
        else:
            cols.append(np.asarray(columns[feature], dtype=np.float64))
    return design_names(features, False), cols


def _scale(table: np.ndarray, stats_from: np.ndarray, scaling: Scaling) -> np.ndarray:
    if scaling == "none":
        return table
    if scaling == "minmax":
        low, high = stats_from.min(axis=0), stats_from.max(axis=0)
        shift, span = low, high - low
    elif scaling == "maxabs":
        shift, span = 0.0, np.abs(stats_from).max(axis=0)
    else:
        raise ValueError(f"unknown scaling {scaling!r}")
    if np.any(span == 0):
        raise ValueError("a constant column cannot be scaled; drop it from `features`")
    return (table - shift) / span
