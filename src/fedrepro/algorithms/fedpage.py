"""FedPAGE (paper Algorithm 1; docs/papers/fedpage.md R4-R7). With K = 1 it is exactly PAGE.

With probability p (always in round 0, p_0 = 1) all N clients send a minibatch gradient at x^r;
otherwise S sampled clients run K local steps of the recursive PAGE/SARAH estimator, started from
grad f_i(x^r) - grad f_i(x^{r-1}) + g^{r-1}.
"""

from __future__ import annotations

import torch
from torch import Tensor

from fedrepro.algorithms.common import Algorithm, Streams, batch_size, split_step
from fedrepro.algorithms.kernels import ShardRows, local_page_steps, minibatches
from fedrepro.objectives import FiniteSumProblem
from fedrepro.sampling import sample_clients


class FedPAGE(Algorithm):
    """hp: S, K, eta_g, eta_l, minibatch sizes b1 (full rounds), b2 (first local step),
    b3 (later local steps), p (probability of a full round for r >= 1)."""

    HP = ("S", "K", "eta_g", "eta_l", "b1", "b2", "b3", "p")
    settings = ("c_l", "b1", "b2", "b3", "p")

    @classmethod
    def hyperparameters(cls, spec: dict, n_clients: int, samples_per_client: int) -> dict:
        """eta_g = eta_tilde and eta_l = c_l eta_g / K, where c_l (unstated in the paper) is the local trajectory's
        length relative to the global step; p = S/N for `auto`."""
        eta_tilde, K = spec["eta_tilde"], spec["K"]
        return {**split_step(spec, eta_tilde, spec.get("c_l", 1.0) * eta_tilde / K),
                **{k: batch_size(spec[k], samples_per_client) for k in ("b1", "b2", "b3")},
                "p": spec["S"] / n_clients if spec["p"] == "auto" else float(spec["p"])}

    def __init__(self, problem: FiniteSumProblem, hp: dict, streams: Streams) -> None:
        super().__init__(problem, hp, streams)
        self.b1, self.b2, self.b3 = (self._batch_size(k) for k in ("b1", "b2", "b3"))
        self.p = float(hp["p"])
        if not 0.0 <= self.p <= 1.0:
            raise ValueError(f"p={self.p} must be in [0, 1]")
        self._rows = ShardRows(problem)

    def init(self) -> dict:
        return {**super().init(), "x_prev": None, "g_prev": None}  # x^{r-1}, g^{r-1}: none before round 0

    def round(self, state: dict, r: int) -> tuple[dict, dict]:
        x = state["x"]
        coin = self.streams("coin", r)
        full = r == 0 or float(torch.rand((), generator=coin, device=coin.device)) < self.p
        if full:
            g, info = self._full_round(x, r)
        elif state["g_prev"] is None:
            raise RuntimeError("a partial FedPAGE round needs the previous round's (x, g); run round 0 first")
        else:
            g, info = self._partial_round(x, state["x_prev"], state["g_prev"], r)
        return {"x": x - self.eta_g * g, "x_prev": x, "g_prev": g}, info  # line 28

    def _full_round(self, x: Tensor, r: int) -> tuple[Tensor, dict]:
        """Lines 5-11: g = (1/N) sum_i grad_{I1} f_i(x^r) over all N clients."""
        prob = self.problem
        N, M = prob.n_clients, prob.samples_per_client
        if self.b1 == M:
            g = prob.full_grad(x)  # exact, through the fast sparse path
        else:
            A, b = minibatches(self.streams("batches", r), prob.A, prob.b, 1, self.b1)
            g = prob.rows_grad(x, A[0], b[0]).mean(dim=0)
        return g, {"clients": N, "sample_grads": N * self.b1, "full": True}

    def _partial_round(self, x: Tensor, x_prev: Tensor, g_prev: Tensor, r: int) -> tuple[Tensor, dict]:
        """Lines 12-26, batched over the S sampled clients."""
        prob, K, eta_l = self.problem, self.K, self.eta_l
        clients = sample_clients(self.streams("clients", r), prob.n_clients, self.S)
        gen = self.streams("batches", r)
        A2, b2 = self._rows.minibatches(gen, clients, 1, self.b2, slot="b2")
        A3, b3 = self._rows.minibatches(gen, clients, K - 1, self.b3, slot="b3")
        # Each difference uses the same minibatch at both points (Algorithm 1 lines 17, 21).
        g_loc = prob.rows_grad_diff(x, x_prev, A2[0], b2[0]) + g_prev  # line 17
        g_sum = local_page_steps(prob, x, g_loc, A3, b3, eta_l) if K > 1 else g_loc  # lines 18-23
        # Line 26: (1/(K eta_l S)) sum_i (x - y_{i,K}) equals the mean of the K*S local estimators.
        # Taking that mean directly avoids the cancellation in x - y_{i,K} when eta_l is small.
        g = g_sum.mean(dim=0) / K
        n_grads = self.S * (2 * self.b2 + 2 * self.b3 * (K - 1))
        return g, {"clients": self.S, "sample_grads": n_grads, "full": False}
