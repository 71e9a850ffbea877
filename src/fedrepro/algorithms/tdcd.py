"""TDCD, Tiered Decentralized Coordinate Descent (Das et al., paper §3, Algorithm 1), one local
iteration at a time.

Round r covers local iterations t = rQ .. rQ + Q - 1. At its first iteration every hub sends its block
to its clients, all silos take the same minibatch of IDs, the silos' embeddings of it are computed from
the round-start models and exchanged, so each silo's clients get Phi_other, the sum of the other silos'
embeddings (stale for the whole round). Every iteration, every client takes one SGD step on its own
silo's block (own embedding recomputed, same minibatch). After the round's last iteration each hub
becomes the unweighted mean of its clients. There is no server model: the prediction is the sum of the
silos' outputs.

Stepping one iteration at a time (not one round) lets a run evaluate anywhere within a round (the
virtual average of the clients, which does not overwrite them), lets runs of every Q share one
iteration axis, and ends a run anywhere (T need not be a multiple of Q).
"""

from __future__ import annotations

from typing import Any, Callable

from torch import Tensor

from fedrepro.nn.silos import Silo


def other_sums(phis: list[Tensor]) -> list[Tensor]:
    """Phi_other[j] = sum over l != j of phis[l] (in silo order; zero for a single silo)."""
    out = []
    for j, own in enumerate(phis):
        total = own.new_zeros(own.shape)
        for l, phi in enumerate(phis):
            if l != j:
                total = total + phi
        out.append(total)
    return out


class TDCD:
    def __init__(self, silos: list[Silo], hubs: list[Tensor], Q: int, batch_of: Callable[[int], Tensor]) -> None:
        """`hubs`: each silo's initial state; `batch_of(r)`: round r's minibatch of IDs (B,), the same for
        every silo (the hubs' shared pseudo-random generator)."""
        if Q < 1:
            raise ValueError(f"Q = {Q} must be >= 1")
        if len(silos) != len(hubs):
            raise ValueError(f"{len(silos)} silos but {len(hubs)} hub states")
        self.silos, self.hubs, self.Q, self.batch_of = silos, list(hubs), Q, batch_of
        self.in_round = False

    def iterate(self, t: int) -> None:
        """Local iteration t -> t + 1 of every client of every silo."""
        if t % self.Q == 0:
            self._start_round(t // self.Q)
        for silo in self.silos:
            silo.step()
        if (t + 1) % self.Q == 0:
            self.hubs = [silo.average() for silo in self.silos]
            self.in_round = False

    def _start_round(self, r: int) -> None:
        batch = self.batch_of(r)
        for silo, hub in zip(self.silos, self.hubs):
            silo.start_round(hub, batch)
        for silo, others in zip(self.silos, other_sums([silo.exchange() for silo in self.silos])):
            silo.set_others(others)
        self.in_round = True

    def model(self) -> list[Tensor]:
        """Each silo's block of the model to evaluate: the hub's state between rounds, within a round the
        virtual average of its clients (docs/papers/tdcd.md R9)."""
        return [silo.average() for silo in self.silos] if self.in_round else list(self.hubs)

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"hubs": list(self.hubs), "in_round": self.in_round}
        if self.in_round:
            state["batch"] = self.silos[0].batch
            state["clients"] = [silo.clients().clone() for silo in self.silos]
            state["others"] = [silo.phi_other for silo in self.silos]
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        device = self.hubs[0].device
        self.hubs = [h.to(device) for h in state["hubs"]]
        self.in_round = bool(state["in_round"])
        if self.in_round:
            batch = state["batch"].to(device)
            for silo, hub, clients, others in zip(self.silos, self.hubs, state["clients"], state["others"]):
                silo.load_clients(hub, clients.to(device), batch, others.to(device))
