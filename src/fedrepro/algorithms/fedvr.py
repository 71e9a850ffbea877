"""FedAvg-SVRG with probabilistically activated agents (Rostami & Kia, Algorithm 1), and `AgentsMethod`, the
record by which the registry (algorithms/__init__.py METHODS) builds it and its two baselines as Methods
(algorithms/method.py) over every Monte Carlo run's θ.

Per round k: agent n is active with probability p_n^k; each active agent starts from θ^k
and runs S SVRG snapshots, each one full local gradient μ̃ at the snapshot w̃ followed by
M steps w ← w − δ (∇f_#(w) − ∇f_#(w̃) + μ̃) on uniformly drawn samples #; the last inner
iterate becomes the next snapshot (SVRG "option I"). No SVRG state survives the round.
The server then applies the unbiased update θ + (1/N) Σ_n (1_n/p_n)(w_n − θ^k).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import torch

from fedrepro.algorithms.method import Rounds
from fedrepro.algorithms.probabilistic_agents import (
    Streams,
    activation_probabilities,
    aggregate_inverse_prob,
    draw_active,
    per_run,
    RoundStep,
    fedavg_prob_step,
    fedavg_uniform_step,
)
from fedrepro.objectives.least_squares import LeastSquaresProblem

# The baselines' local step-size schedules (step_sizes)
ETA_SCHEDULES = ("inv_sqrt_K", "inv_sqrt_round", "constant")

# Defaults (docs/papers/fedvr.md R4-R8); the paper's case 1 is (S, M) = (5, 2), case 2 is (10, 5).
DEFAULT_HP: dict[str, Any] = {
    "activation": {"kind": "linspace", "low": 0.1, "high": 0.9},  # not given by the paper
    "S": 5,  # snapshots per round
    "M": 2,  # SVRG steps between snapshots
    "delta": 0.1,  # 1/sqrt(100), constant in all rounds
    "theta0": 0.5,  # scalar (broadcast) or a d-vector
    "K": 100,  # the horizon in the baselines' "1/sqrt(K)" step, independent of `rounds`
    "eta_schedule": "inv_sqrt_K",  # baselines: "inv_sqrt_K" | "inv_sqrt_round" | "constant"
    "eta": None,  # only for eta_schedule "constant"
    "local_steps": None,  # baselines' local steps; None -> S*M (same stochastic steps as ours)
    "batch_size": 1,  # baselines' local minibatch
    "sampling": "with_replacement",  # or "epochs" (McMahan's B/E passes)
    "agents_per_round": 5,  # FedAvg of [4]: "batch size of 5" = 5 agents; or "expected" = round(Σ p)
}


def svrg_direction(
    problem: LeastSquaresProblem, w: torch.Tensor, w_snap: torch.Tensor, mu: torch.Tensor, idx: torch.Tensor
) -> torch.Tensor:
    """v = ∇f_#(w) − ∇f_#(w̃) + μ̃ for every agent (line 15).

    w, w_snap, mu (..., N, d); idx (..., N, 1) the sample # of each agent.
    """
    return problem.minibatch_grad(w, idx) - problem.minibatch_grad(w_snap, idx) + mu


def svrg_local(
    problem: LeastSquaresProblem, theta: torch.Tensor, idx: torch.Tensor, delta: float
) -> torch.Tensor:
    """Lines 7-18 for every agent: theta (R, d), idx (R, N, S, M) -> w_{n,S-1,M} (R, N, d)."""
    w_snap = theta.unsqueeze(-2).expand(*theta.shape[:-1], problem.n_agents, problem.dim)
    for s in range(idx.shape[-2]):
        mu = problem.local_grad(w_snap)
        w = w_snap
        for m in range(idx.shape[-1]):
            w = w - delta * svrg_direction(problem, w, w_snap, mu, idx[..., s, m, None])
        w_snap = w
    return w_snap


def fedavg_svrg_step(
    problem: LeastSquaresProblem,
    *,
    p: torch.Tensor,
    S: int,
    M: int,
    delta: float,
    n_mc: int,
    streams: Streams,
) -> RoundStep:
    """Algorithm 1 for n_mc independent runs at once."""
    p = p.to(problem.Q)
    n, length, device = problem.n_agents, problem.samples_per_agent, problem.Q.device

    def draw_samples(gen: torch.Generator) -> torch.Tensor:
        # Uniform with replacement (line 13), drawn for every agent whether active or not:
        # sample draws are independent of activation (paper, after Assumption 4).
        return torch.randint(length, (n, S, M), generator=gen, device=device)

    def step(theta: torch.Tensor, k: int) -> torch.Tensor:
        active = draw_active(p[k], n_mc, k, streams)
        idx = per_run(streams, "samples", n_mc, k, draw_samples)
        return aggregate_inverse_prob(theta, svrg_local(problem, theta, idx, delta), active, p[k])

    return step


def resolve_hp(hp: Mapping[str, Any]) -> dict[str, Any]:
    """DEFAULT_HP overridden by `hp`; unknown keys are an error (catches config typos)."""
    unknown = set(hp) - set(DEFAULT_HP)
    if unknown:
        raise ValueError(f"unknown fedvr hyperparameters {sorted(unknown)}; known: {sorted(DEFAULT_HP)}")
    return {**DEFAULT_HP, **hp}


def step_sizes(hp: Mapping[str, Any], rounds: int) -> list[float]:
    """The baselines' local step per round. "1/sqrt(K)" in the paper reads as the horizon
    K (numerically equal to δ = 0.1); "inv_sqrt_round" is the per-round decay 1/sqrt(k+1)."""
    schedule = hp["eta_schedule"]
    if schedule == "inv_sqrt_K":
        return [1.0 / math.sqrt(hp["K"])] * rounds
    if schedule == "inv_sqrt_round":
        return [1.0 / math.sqrt(k + 1) for k in range(rounds)]
    if schedule == "constant":
        return [float(hp["eta"])] * rounds
    raise ValueError(f"unknown eta_schedule {schedule!r}; expected one of {ETA_SCHEDULES}")


def hyperparameters(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A run's values of the numerics' hyperparameters (the rest keep DEFAULT_HP)."""
    return {k: spec[k] for k in DEFAULT_HP if k in spec}


@dataclass(frozen=True)
class Runs:
    """What a Monte Carlo method trains on (the monte_carlo engine's env): the least-squares problem and how many
    Monte Carlo runs advance at once."""

    problem: LeastSquaresProblem
    n_mc: int


@dataclass(frozen=True)
class AgentsMethod:
    """A Monte Carlo method: its round step, built from the resolved hp, the activation probabilities p and the
    horizon."""

    step: Callable[[LeastSquaresProblem, dict[str, Any], torch.Tensor, int, dict[str, Any]], RoundStep]
    settings: tuple[str, ...] = ()  # the run settings (DEFAULT_HP) only it reads (algorithms/__init__.py)

    def build(self, spec: Mapping[str, Any], runs: Runs, streams: Streams) -> Rounds:
        """The method for runs.n_mc Monte Carlo runs at once: its state is their θ (n_mc, d), θ^0 at init().

        streams(purpose, mc, round) must return a fresh torch.Generator on the problem's device. Purposes used:
        "activation", "samples", "selection", "activation_probs"; the SVRG and [15] runs share "activation"
        draws, so with the same streams they are paired. The run's `rounds` is the horizon of the activation
        probabilities and step-size schedules.
        """
        hp, problem, rounds = resolve_hp(hyperparameters(spec)), runs.problem, spec["rounds"]
        p = activation_probabilities(hp["activation"], problem.n_agents, rounds, streams)
        theta0 = torch.as_tensor(hp["theta0"], dtype=torch.float64).expand(problem.dim).to(problem.Q)
        theta0 = theta0.expand(runs.n_mc, -1)
        step = self.step(problem, hp, p, rounds, {"n_mc": runs.n_mc, "streams": streams})
        return Rounds(lambda: theta0, lambda theta, k: (step(theta, k), {}))


# The round steps of the three methods (the registry's AgentsMethod records), from the resolved hp, p and horizon,
# and the settings only the two FedAvg baselines read
BASELINE_SETTINGS = ("K", "eta_schedule", "eta", "local_steps", "batch_size", "sampling")

def fedavg_svrg(problem: LeastSquaresProblem, hp: dict[str, Any], p: torch.Tensor, rounds: int,
                common: dict[str, Any]) -> RoundStep:
    return fedavg_svrg_step(problem, p=p, S=hp["S"], M=hp["M"], delta=hp["delta"], **common)


def _baseline_local(hp: dict[str, Any], rounds: int) -> dict[str, Any]:
    """The two FedAvg baselines' local SGD: its step per round, steps, minibatch and sampling."""
    return {
        "etas": step_sizes(hp, rounds),
        "local_steps": hp["S"] * hp["M"] if hp["local_steps"] is None else hp["local_steps"],
        "batch_size": hp["batch_size"],
        "sampling": hp["sampling"],
    }


def fedavg_prob(problem: LeastSquaresProblem, hp: dict[str, Any], p: torch.Tensor, rounds: int,
                common: dict[str, Any]) -> RoundStep:
    return fedavg_prob_step(problem, p=p, **_baseline_local(hp, rounds), **common)


def fedavg_uniform(problem: LeastSquaresProblem, hp: dict[str, Any], p: torch.Tensor, rounds: int,
                   common: dict[str, Any]) -> RoundStep:
    m = hp["agents_per_round"]
    if m == "expected":
        m = round(float(p.sum(dim=-1).mean()))
    return fedavg_uniform_step(problem, agents_per_round=m, **_baseline_local(hp, rounds), **common)

