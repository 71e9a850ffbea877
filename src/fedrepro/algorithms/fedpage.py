"""FedPAGE (paper Algorithm 1; spec §2.1). With K = 1 it is exactly PAGE.

With probability p (always in round 0, p_0 = 1) all N clients send a minibatch gradient at x^r;
otherwise S sampled clients run K local steps of the recursive PAGE/SARAH estimator, started from
grad f_i(x^r) - grad f_i(x^{r-1}) + g^{r-1}.
"""

from __future__ import annotations

import torch

from fedrepro.algorithms.common import Algorithm, ShardRows, Streams, minibatches, sample_clients
from fedrepro.objectives import FiniteSumProblem


class FedPAGE(Algorithm):
    """hp: S, K, eta_g, eta_l, minibatch sizes b1 (full rounds), b2 (first local step),
    b3 (later local steps), p (probability of a full round for r >= 1)."""

    HP = ("S", "K", "eta_g", "eta_l", "b1", "b2", "b3", "p")
    STATE = ("x", "x_prev", "g_prev")

    def __init__(self, problem: FiniteSumProblem, hp: dict, streams: Streams) -> None:
        super().__init__(problem, hp, streams)
        self.b1, self.b2, self.b3 = (self._batch_size(k) for k in ("b1", "b2", "b3"))
        self.p = float(hp["p"])
        if not 0.0 <= self.p <= 1.0:
            raise ValueError(f"p={self.p} must be in [0, 1]")
        self.x_prev: torch.Tensor | None = None  # x^{r-1}
        self.g_prev: torch.Tensor | None = None  # g^{r-1}
        self._rows = ShardRows(problem)

    def round(self, r: int) -> dict:
        coin = self.streams("coin", r)
        full = r == 0 or float(torch.rand((), generator=coin, device=coin.device)) < self.p
        if full:
            g, info = self._full_round(r)
        elif self.g_prev is None:
            raise RuntimeError("a partial FedPAGE round needs the previous round's (x, g); run round 0 first")
        else:
            g, info = self._partial_round(r)
        self.x_prev, self.g_prev = self.x, g
        self.x = self.x - self.eta_g * g  # line 28
        return info

    def _full_round(self, r: int) -> tuple[torch.Tensor, dict]:
        """Lines 5-11: g = (1/N) sum_i grad_{I1} f_i(x^r) over all N clients."""
        prob = self.problem
        N, M = prob.n_clients, prob.samples_per_client
        if self.b1 == M:
            g = prob.full_grad(self.x)  # exact, through the fast sparse path
        else:
            A, b = minibatches(self.streams("batches", r), prob.A, prob.b, 1, self.b1)
            g = prob.rows_grad(self.x, A[0], b[0]).mean(dim=0)
        return g, {"clients": N, "sample_grads": N * self.b1, "full": True}

    def _partial_round(self, r: int) -> tuple[torch.Tensor, dict]:
        """Lines 12-26, batched over the S sampled clients."""
        prob, K, eta_l = self.problem, self.K, self.eta_l
        x, x_prev = self.x, self.x_prev
        clients = sample_clients(self.streams("clients", r), prob.n_clients, self.S)
        gen = self.streams("batches", r)
        A2, b2 = self._rows.minibatches(gen, clients, 1, self.b2, slot="b2")
        A3, b3 = self._rows.minibatches(gen, clients, K - 1, self.b3, slot="b3")
        b3 = b3.unsqueeze(-1)
        # Each difference uses the same minibatch at both points (spec §2.0).
        g_loc = prob.rows_grad_diff(x, x_prev, A2[0], b2[0]) + self.g_prev  # line 17
        g_sum = g_loc
        y_prev, y = x.expand_as(g_loc), x - eta_l * g_loc  # line 18
        r_prev = prob.reg_grad(x)  # regularizer gradient at y_prev, carried from step to step
        for k in range(K - 1):  # lines 19-23
            diff, r_prev = prob.batched_rows_grad_diff(y, y_prev, A3[k], b3[k], r_prev)
            g_loc = diff + g_loc
            g_sum = g_sum + g_loc
            y_prev, y = y, y - eta_l * g_loc
        # Line 26: (1/(K eta_l S)) sum_i (x - y_{i,K}) equals the mean of the K*S local estimators.
        # Taking that mean directly avoids the cancellation in x - y_{i,K} when eta_l is small.
        g = g_sum.mean(dim=0) / K
        n_grads = self.S * (2 * self.b2 + 2 * self.b3 * (K - 1))
        return g, {"clients": self.S, "sample_grads": n_grads, "full": False}
