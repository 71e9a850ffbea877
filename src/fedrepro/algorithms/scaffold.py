"""SCAFFOLD with Option II control variates, zero-initialized (docs/papers/fedpage.md R8).

Option II reuses the local trajectory (c_i+ = c_i - c + (x - y_K)/(K eta_l)) and so costs no extra
gradient pass; the paper's computation-parity arithmetic (b*K per client-round) counts none.
"""

from __future__ import annotations

import torch

from fedrepro.algorithms.common import Streams, local_sgd, sample_clients
from fedrepro.algorithms.fedavg import FedAvg
from fedrepro.objectives import FiniteSumProblem


class Scaffold(FedAvg):
    """hp: S clients per round, K local steps of minibatch size b, step sizes eta_g, eta_l (FedAvg's, from
    eta_tilde as FedAvg splits it).

    State: server control c (d,) and every client's control c_clients (N,d).
    """

    STATE = ("x", "c", "c_clients")

    def __init__(self, problem: FiniteSumProblem, hp: dict, streams: Streams) -> None:
        super().__init__(problem, hp, streams)
        self.c = torch.zeros_like(self.x)
        self.c_clients = torch.zeros(problem.n_clients, problem.dim, dtype=self.x.dtype, device=self.x.device)

    def round(self, r: int) -> dict:
        N = self.problem.n_clients
        clients = sample_clients(self.streams("clients", r), N, self.S)
        c_i = self.c_clients[clients]
        y = local_sgd(
            self.problem, self.x, clients, self.streams("batches", r), self.K, self.eta_l, self.b,
            correction=self.c - c_i, rows=self._rows,
        )
        c_i_new = c_i - self.c + (self.x - y) / (self.K * self.eta_l)
        self.c_clients[clients] = c_i_new
        # The server control tracks the mean of all N client controls, of which only S changed.
        self.c = self.c + (c_i_new - c_i).sum(dim=0) / N
        self.x = self.x + self.eta_g * (y - self.x).mean(dim=0)
        return {"clients": self.S, "sample_grads": self.S * self.b * self.K, "full": False}
