"""Literal one-client-at-a-time versions of the paper's pseudocode, used as test oracles.

They compute gradients only with `client_grads` (below) and redraw the same random numbers as the batched
implementation: clients = randperm(N)[:S] from stream "clients"; each block of minibatches =
rand(steps, S, M).argsort()[..., :size] from stream "batches" (no draw when size == M).
"""

from __future__ import annotations

import torch
from torch import Tensor

from fedrepro.objectives import FiniteSumProblem


def draw_clients(streams, r: int, n_clients: int, s: int) -> list[int]:
    return torch.randperm(n_clients, generator=streams("clients", r))[:s].tolist()


def draw_minibatches(gen: torch.Generator, steps: int, s: int, m: int, size: int) -> list[list[Tensor | None]]:
    """[step][client] -> sample indices, or None for the whole shard."""
    if size == m:
        return [[None] * s for _ in range(steps)]
    idx = torch.rand(steps, s, m, generator=gen).argsort(dim=-1)[..., :size]
    return [[idx[k, c] for c in range(s)] for k in range(steps)]


def client_grads(problem: FiniteSumProblem, x: Tensor, clients: Tensor, weights: Tensor | None = None) -> Tensor:
    """Gradient of client `clients[s]` at its own point x[s]: (S,d), from the problem's per-sample loss derivative
    and regularizer on all of the client's rows.

    weights (S,M): 1/b on the selected samples and 0 elsewhere; None means the full local gradient.
    """
    A, b = problem.A[clients], problem.b[clients]
    coef = problem._dloss(torch.einsum("smd,sd->sm", A, x), b)
    coef = coef / problem.samples_per_client if weights is None else coef * weights
    return problem._add_reg(torch.einsum("sm,smd->sd", coef, A), x)


def grad(problem: FiniteSumProblem, y: Tensor, client: int, idx: Tensor | None) -> Tensor:
    """grad_B f_client(y) for the minibatch idx (None: full local gradient)."""
    w = None
    if idx is not None:
        w = torch.zeros(1, problem.samples_per_client, dtype=torch.float64)
        w[0, idx] = 1.0 / len(idx)
    return client_grads(problem, y.unsqueeze(0), torch.tensor([client]), w)[0]


def fedpage_partial_round(problem, hp, streams, r, x, x_prev, g_prev) -> dict[str, Tensor]:
    """Algorithm 1 lines 13-26 for one client at a time."""
    S, K, eta_l = hp["S"], hp["K"], hp["eta_l"]
    M = problem.samples_per_client
    clients = draw_clients(streams, r, problem.n_clients, S)
    gen = streams("batches", r)
    I2 = draw_minibatches(gen, 1, S, M, hp["b2"])[0]
    I3 = draw_minibatches(gen, K - 1, S, M, hp["b3"])
    estimators, finals = [], []
    for s, i in enumerate(clients):
        g_loc = grad(problem, x, i, I2[s]) - grad(problem, x_prev, i, I2[s]) + g_prev  # line 17
        estimators.append(g_loc)
        y_before, y = x, x - eta_l * g_loc  # line 18
        for k in range(1, K):
            g_loc = grad(problem, y, i, I3[k - 1][s]) - grad(problem, y_before, i, I3[k - 1][s]) + g_loc  # 21
            estimators.append(g_loc)
            y_before, y = y, y - eta_l * g_loc  # line 22
        finals.append(y)
    finals_t = torch.stack(finals)
    g_line26 = (x - finals_t).sum(dim=0) / (K * eta_l * S)
    return {"g": g_line26, "estimator_mean": torch.stack(estimators).mean(dim=0), "finals": finals_t}


def local_sgd(problem, x, client, batches, K, eta_l, correction) -> Tensor:
    y = x
    for k in range(K):
        y = y - eta_l * (grad(problem, y, client, batches[k]) + correction)
    return y


def fedavg_round(problem, hp, streams, r, x) -> Tensor:
    S, K = hp["S"], hp["K"]
    clients = draw_clients(streams, r, problem.n_clients, S)
    B = draw_minibatches(streams("batches", r), K, S, problem.samples_per_client, hp["b"])
    ys = [local_sgd(problem, x, i, [B[k][s] for k in range(K)], K, hp["eta_l"], 0.0) for s, i in enumerate(clients)]
    return x + hp["eta_g"] * sum(y - x for y in ys) / S


def scaffold_round(problem, hp, streams, r, x, c, c_clients) -> tuple[Tensor, Tensor, Tensor]:
    """SCAFFOLD (Karimireddy et al. 2020, Alg. 1) with Option II control updates."""
    S, K, eta_l, N = hp["S"], hp["K"], hp["eta_l"], problem.n_clients
    clients = draw_clients(streams, r, N, S)
    B = draw_minibatches(streams("batches", r), K, S, problem.samples_per_client, hp["b"])
    c_clients = c_clients.clone()
    dx, dc = torch.zeros_like(x), torch.zeros_like(x)
    for s, i in enumerate(clients):
        y = local_sgd(problem, x, i, [B[k][s] for k in range(K)], K, eta_l, c - c_clients[i])
        c_new = c_clients[i] - c + (x - y) / (K * eta_l)
        dx += (y - x) / S
        dc += (c_new - c_clients[i]) / N
        c_clients[i] = c_new
    return x + hp["eta_g"] * dx, c + dc, c_clients
