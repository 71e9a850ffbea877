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

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
from torch import Tensor

from fedrepro.nn.silos import Silo, StateLayout, make_silo


@dataclass(frozen=True)
class Tiers:
    """What TDCD trains on for one seed (the vertical engine's env): per silo its block's model (its state is the
    hub's initial one), its block of the training inputs, the client of each ID and its number of clients; the
    labels; the silo backend."""

    layouts: list[StateLayout]
    inputs: list[Tensor]
    labels: Tensor
    owners: list[Tensor]
    clients: list[int]
    backend: str


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
    """A Method (algorithms/method.py) whose round is one local iteration t -> t + 1. Its state: the hubs'
    blocks, and within a TDCD round the round's batch, every silo's clients (K, S) and the other silos'
    embeddings. The silos are its working buffers: they hold the state last returned, which a round steps on
    from without loading it again."""

    def __init__(self, silos: list[Silo], hubs: list[Tensor], Q: int, batch_of: Callable[[int], Tensor]) -> None:
        """`hubs`: each silo's initial state; `batch_of(r)`: round r's minibatch of IDs (B,), the same for
        every silo (the hubs' shared pseudo-random generator)."""
        if Q < 1:
            raise ValueError(f"Q = {Q} must be >= 1")
        if len(silos) != len(hubs):
            raise ValueError(f"{len(silos)} silos but {len(hubs)} hub states")
        self.silos, self.hubs0, self.Q, self.batch_of = silos, list(hubs), Q, batch_of
        self._held: dict[str, Any] | None = None  # the state the silos hold

    @classmethod
    def build(cls, spec: dict[str, Any], tiers: Tiers, streams: Callable[[str, int], np.random.Generator]) -> TDCD:
        """Every silo's clients step at rate `lr`, Q local iterations a round; round r's minibatch is B IDs drawn
        without replacement from streams("batches", r), the hubs' shared generator (a numpy one: the draw does not
        depend on the device)."""
        silos = [make_silo(tiers.backend, layout, x, tiers.labels, owner, k, float(spec["lr"]))
                 for layout, x, owner, k in zip(tiers.layouts, tiers.inputs, tiers.owners, tiers.clients)]
        n_ids = len(tiers.labels)

        def batch_of(r: int) -> Tensor:
            ids = streams("batches", r).choice(n_ids, spec["B"], replace=False)
            return torch.from_numpy(ids).to(tiers.labels.device)

        return cls(silos, [layout.flatten() for layout in tiers.layouts], spec["Q"], batch_of)

    def init(self) -> dict[str, Any]:
        return {"hubs": list(self.hubs0), "in_round": False, "batch": None, "clients": None, "others": None}

    def round(self, state: dict[str, Any], t: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """Local iteration t -> t + 1 of every client of every silo."""
        if t % self.Q == 0:
            self._start_round(state["hubs"], t // self.Q)
        else:
            self._hold(state)
        for silo in self.silos:
            silo.step()
        if (t + 1) % self.Q == 0:
            self._held = None
            return {**self.init(), "hubs": [silo.average() for silo in self.silos]}, {}
        self._held = {"hubs": state["hubs"], "in_round": True, "batch": self.silos[0].batch,
                      "clients": [silo.clients().clone() for silo in self.silos],  # the silos step on in place
                      "others": [silo.phi_other for silo in self.silos]}
        return self._held, {}

    def model(self, state: dict[str, Any]) -> list[Tensor]:
        """Each silo's block of the model to evaluate: the hub's state between rounds, within a round the
        virtual average of its clients (docs/papers/tdcd.md R9)."""
        if not state["in_round"]:
            return list(state["hubs"])
        self._hold(state)
        return [silo.average() for silo in self.silos]

    def _start_round(self, hubs: list[Tensor], r: int) -> None:
        batch = self.batch_of(r)
        for silo, hub in zip(self.silos, hubs):
            silo.start_round(hub, batch)
        for silo, others in zip(self.silos, other_sums([silo.exchange() for silo in self.silos])):
            silo.set_others(others)

    def _hold(self, state: dict[str, Any]) -> None:
        """The silos hold `state` (a round's state other than the last returned: a checkpoint's)."""
        if state is not self._held:
            for silo, hub, clients, others in zip(self.silos, state["hubs"], state["clients"], state["others"]):
                silo.load_clients(hub, clients, state["batch"], others)
            self._held = state
