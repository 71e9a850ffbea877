"""Probabilistically activated agents, the setting of the `fedvr` paper (Rostami & Kia): activation draws,
inverse-probability aggregation and local SGD, shared by FedAvg-SVRG (fedvr.py), and the paper's two FedAvg
baselines built from them.
Each method's round is a step `step(theta (R, d), k) -> theta'`, which fedvr.py AgentsMethod makes a Method
(algorithms/method.py), so a run can be advanced, saved and resumed round by round (engines/monte_carlo.py).

- `fedavg_prob_step`: FedAvg of the paper's ref. [15] (Perazzone et al., INFOCOM 2022).
  Agent n is active in round k with its own probability p_n^k; active agents run local
  SGD from θ^k; the server adds (1/N) Σ_n (1_n^k / p_n^k)(w_n − θ^k).
- `fedavg_uniform_step`: FedAvg of ref. [4] (McMahan et al.): m agents drawn uniformly
  without replacement each round, same local SGD, plain average of their models.

Every function is vectorized over a leading Monte Carlo dimension R and computes all N
agents (inactive ones are masked out by `torch.where`, which also discards any inf/NaN a
diverging inactive agent may produce). Random draws come from `streams(purpose, mc, k)`,
one generator per (purpose, Monte Carlo run, round), so run r's trajectory does not
depend on how many runs are batched together.
"""

from __future__ import annotations

import math
from typing import Callable, Literal, Mapping, Sequence

import torch

from fedrepro.objectives.least_squares import LeastSquaresProblem
from fedrepro.sampling import sample_clients
from fedrepro.seeding import Streams

RoundStep = Callable[[torch.Tensor, int], torch.Tensor]
Sampling = Literal["with_replacement", "epochs"]
# The kinds of activation probabilities (activation_probabilities)
ACTIVATION_KINDS = ("linspace", "explicit", "uniform_once", "uniform_per_round")


def activation_probabilities(spec: Mapping, n_agents: int, rounds: int, streams: Streams) -> torch.Tensor:
    """p_n^k as a (rounds, N) float64 tensor. The paper never gives them (docs/papers/fedvr.md R4).

    kinds: "linspace" (low..high over agents, fixed; default 0.1..0.9), "explicit" (`p`, one
    per agent), "uniform_once" (U(low, high) per agent, drawn once), "uniform_per_round"
    (redrawn every round). Random kinds draw from the "activation_probs" stream of run 0,
    so every Monte Carlo run sees the same p (they are part of the environment, like the data).
    """
    kind = spec["kind"]
    if kind == "linspace":
        p = torch.linspace(spec["low"], spec["high"], n_agents, dtype=torch.float64).expand(rounds, n_agents)
    elif kind == "explicit":
        if len(spec["p"]) != n_agents:
            raise ValueError(f"explicit activation needs {n_agents} probabilities, got {len(spec['p'])}")
        p = torch.as_tensor(spec["p"], dtype=torch.float64).expand(rounds, n_agents)
    elif kind == "uniform_once":
        p = _uniform(spec, n_agents, streams("activation_probs", 0, 0)).expand(rounds, n_agents)
    elif kind == "uniform_per_round":
        p = torch.stack([_uniform(spec, n_agents, streams("activation_probs", 0, k)) for k in range(rounds)])
    else:
        raise ValueError(f"unknown activation kind {kind!r}; expected one of {ACTIVATION_KINDS}")
    if not bool(((p > 0) & (p <= 1)).all()):
        raise ValueError("activation probabilities must lie in (0, 1]")
    return p.contiguous()


def _uniform(spec: Mapping, n_agents: int, gen: torch.Generator) -> torch.Tensor:
    low, high = spec["low"], spec["high"]
    return low + (high - low) * torch.rand(n_agents, generator=gen, dtype=torch.float64, device=gen.device)


def per_run(
    streams: Streams, purpose: str, n_mc: int, k: int, draw: Callable[[torch.Generator], torch.Tensor]
) -> torch.Tensor:
    """Stack one draw per Monte Carlo run, each from its own (purpose, run, round) stream."""
    return torch.stack([draw(streams(purpose, r, k)) for r in range(n_mc)])


def draw_active(p_k: torch.Tensor, n_mc: int, k: int, streams: Streams) -> torch.Tensor:
    """Independent Bernoulli(p_n^k) activations, (R, N) bool (Algorithm 1, line 4)."""

    def draw(gen: torch.Generator) -> torch.Tensor:
        return torch.rand(p_k.shape, generator=gen, dtype=p_k.dtype, device=p_k.device) < p_k

    return per_run(streams, "activation", n_mc, k, draw)


def aggregate_inverse_prob(
    theta: torch.Tensor, w: torch.Tensor, active: torch.Tensor, p_k: torch.Tensor
) -> torch.Tensor:
    """θ + (1/N) Σ_n (1_n / p_n)(w_n − θ)  (Algorithm 1, line 20).

    Divides by N (all agents), not by the number active: this is what makes the update
    unbiased for the full-participation average. Nobody active => θ unchanged.
    theta (R, d), w (R, N, d), active (R, N) bool, p_k (N,).
    """
    weighted = torch.where(active.unsqueeze(-1), (w - theta.unsqueeze(-2)) / p_k.unsqueeze(-1), 0.0)
    return theta + weighted.sum(dim=-2) / w.shape[-2]


def local_sgd(
    problem: LeastSquaresProblem, theta: torch.Tensor, idx: torch.Tensor, eta: float
) -> torch.Tensor:
    """Every agent's local minibatch SGD from θ: w ← w − η · mean_{i∈B_t} ∇f_{n,i}(w).

    theta (R, d), idx (R, N, I, b) sample indices -> final local models (R, N, d).
    """
    w = theta.unsqueeze(-2).expand(*theta.shape[:-1], problem.n_agents, problem.dim)
    for t in range(idx.shape[-2]):
        w = w - eta * problem.minibatch_grad(w, idx[..., t, :])
    return w


def sample_indices(
    problem: LeastSquaresProblem, gen: torch.Generator, steps: int, batch_size: int, sampling: Sampling
) -> torch.Tensor:
    """(N, steps, batch_size) local sample indices for one run and round.

    "with_replacement": i.i.d. uniform. "epochs": consecutive passes over a fresh random
    permutation of each agent's samples (McMahan et al.'s B/E minibatching).
    """
    n, length, device = problem.n_agents, problem.samples_per_agent, problem.Q.device
    if sampling == "with_replacement":
        return torch.randint(length, (n, steps, batch_size), generator=gen, device=device)
    if sampling == "epochs":
        n_epochs = math.ceil(steps * batch_size / length)
        perms = torch.rand(n, n_epochs, length, generator=gen, device=device).argsort(dim=-1)
        return perms.reshape(n, -1)[:, : steps * batch_size].reshape(n, steps, batch_size)
    raise ValueError(f"unknown sampling {sampling!r}")


def fedavg_prob_step(
    problem: LeastSquaresProblem,
    *,
    p: torch.Tensor,
    etas: Sequence[float],
    local_steps: int,
    batch_size: int,
    sampling: Sampling,
    n_mc: int,
    streams: Streams,
) -> RoundStep:
    """FedAvg of [15]: Bernoulli(p_n^k) activation, local SGD with step etas[k], 1/p weighting."""
    p = p.to(problem.Q)

    def draw_samples(gen: torch.Generator) -> torch.Tensor:
        return sample_indices(problem, gen, local_steps, batch_size, sampling)

    def step(theta: torch.Tensor, k: int) -> torch.Tensor:
        active = draw_active(p[k], n_mc, k, streams)
        idx = per_run(streams, "samples", n_mc, k, draw_samples)
        return aggregate_inverse_prob(theta, local_sgd(problem, theta, idx, etas[k]), active, p[k])

    return step


def fedavg_uniform_step(
    problem: LeastSquaresProblem,
    *,
    agents_per_round: int,
    etas: Sequence[float],
    local_steps: int,
    batch_size: int,
    sampling: Sampling,
    n_mc: int,
    streams: Streams,
) -> RoundStep:
    """FedAvg of [4]: `agents_per_round` distinct agents uniformly at random, plain average.

    Equal L_n for every agent, so McMahan's sample-count weights are all equal.
    """
    n = problem.n_agents
    if not 1 <= agents_per_round <= n:
        raise ValueError(f"agents_per_round must be in 1..{n}, got {agents_per_round}")
    runs = torch.arange(n_mc, device=problem.Q.device).unsqueeze(-1)

    def draw_chosen(gen: torch.Generator) -> torch.Tensor:
        return sample_clients(gen, n, agents_per_round)

    def draw_samples(gen: torch.Generator) -> torch.Tensor:
        return sample_indices(problem, gen, local_steps, batch_size, sampling)

    def step(theta: torch.Tensor, k: int) -> torch.Tensor:
        chosen = per_run(streams, "selection", n_mc, k, draw_chosen)
        idx = per_run(streams, "samples", n_mc, k, draw_samples)
        return local_sgd(problem, theta, idx, etas[k])[runs, chosen].mean(dim=-2)

    return step
