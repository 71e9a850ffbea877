"""SCAFFOLD with Option II control variates, zero-initialized (docs/papers/fedpage.md R8).

Option II reuses the local trajectory (c_i+ = c_i - c + (x - y_K)/(K eta_l)) and so costs no extra
gradient pass; the paper's computation-parity arithmetic (b*K per client-round) counts none.
"""

from __future__ import annotations

import torch

from fedrepro.algorithms.fedavg import FedAvg, server_average
from fedrepro.algorithms.kernels import local_sgd
from fedrepro.sampling import sample_clients


class Scaffold(FedAvg):
    """hp: S clients per round, K local steps of minibatch size b, step sizes eta_g, eta_l (FedAvg's, from
    eta_tilde as FedAvg splits it).

    State: server control c (d,) and every client's control c_clients (N,d).
    """

    def init(self) -> dict:
        x = super().init()["x"]
        return {"x": x, "c": torch.zeros_like(x),
                "c_clients": torch.zeros(self.problem.n_clients, self.problem.dim, dtype=x.dtype, device=x.device)}

    def round(self, state: dict, r: int) -> tuple[dict, dict]:
        x, c, c_clients = state["x"], state["c"], state["c_clients"]
        N = self.problem.n_clients
        clients = sample_clients(self.streams("clients", r), N, self.S)
        c_i = c_clients[clients]
        y = local_sgd(
            self.problem, x, clients, self.streams("batches", r), self.K, self.eta_l, self.b,
            correction=c - c_i, rows=self._rows,
        )
        c_i_new = c_i - c + (x - y) / (self.K * self.eta_l)
        # The server control tracks the mean of all N client controls, of which only S changed.
        return {"x": server_average(x, y, self.eta_g), "c": c + (c_i_new - c_i).sum(dim=0) / N,
                "c_clients": c_clients.index_put((clients,), c_i_new)}, self._counts()
