"""FedAvg: local minibatch SGD with a server step (the FedPAGE paper's baseline; docs/papers/fedpage.md R9)."""

from __future__ import annotations

import math

from torch import Tensor

from fedrepro.algorithms.common import Algorithm, Streams, batch_size, split_step
from fedrepro.algorithms.kernels import ShardRows, local_sgd
from fedrepro.objectives import FiniteSumProblem
from fedrepro.sampling import sample_clients


# How eta_tilde = K eta_g eta_l splits (run setting `step_split`; the paper fixes only the product, reading
# step_split of docs/papers/fedpage.md): eta_g as a function of S, then eta_l = eta_tilde / (K eta_g).
STEP_SPLITS = {
    "local": lambda S: 1.0,  # all of the step taken locally, the server averages (the default)
    "global_sqrt_S": math.sqrt,  # SCAFFOLD's own analysis (Karimireddy et al. 2020): eta_g = sqrt(S)
}


class FedAvg(Algorithm):
    """hp: S clients per round, K local steps of minibatch size b, step sizes eta_g, eta_l."""

    HP = ("S", "K", "eta_g", "eta_l", "b")
    settings = ("b", "step_split")

    @classmethod
    def hyperparameters(cls, spec: dict, n_clients: int, samples_per_client: int) -> dict:
        """eta_tilde = K eta_g eta_l, split by `step_split` (STEP_SPLITS; default eta_g = 1, eta_l = eta_tilde / K);
        c_l does not apply."""
        eta_g = STEP_SPLITS[spec.get("step_split", "local")](spec["S"])
        return {**split_step(spec, eta_g, spec["eta_tilde"] / (spec["K"] * eta_g)),
                "b": batch_size(spec["b"], samples_per_client)}

    def __init__(self, problem: FiniteSumProblem, hp: dict, streams: Streams) -> None:
        super().__init__(problem, hp, streams)
        self.b = self._batch_size("b")
        self._rows = ShardRows(problem)

    def round(self, state: dict, r: int) -> tuple[dict, dict]:
        x = state["x"]
        clients = sample_clients(self.streams("clients", r), self.problem.n_clients, self.S)
        y = local_sgd(self.problem, x, clients, self.streams("batches", r), self.K, self.eta_l, self.b,
                      rows=self._rows)
        return {"x": server_average(x, y, self.eta_g)}, self._counts()

    def _counts(self) -> dict:
        return {"clients": self.S, "sample_grads": self.S * self.b * self.K, "full": False}


def server_average(x: Tensor, y: Tensor, eta_g: float) -> Tensor:
    """The server step x + eta_g * mean_i (y_i - x) over the clients' local models y (S,d)."""
    return x + eta_g * (y - x).mean(dim=0)
