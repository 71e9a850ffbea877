"""Asynchronous FL algorithms as server rules over client results (DeFedAvg paper §2, §4.1).

An algorithm is a timing protocol (asynchrony/: who trains from which server version, which round
consumes which training, with what weight) and a server update over the consumed results. Every
algorithm of the DeFedAvg paper updates the server the same way,

    w^{t+1} = w^t - eta * sum_m weight_m * Delta_m,   Delta = w_start - w_after_local_steps,

and differs in its protocol, its weights (multiplicity/n, FedBuff's s(tau)/n, 1/n) and its rates:
- fedavg (synchronous, eqs. 2-3), defedavg_niid (Algorithm 1), defedavg_iid (Algorithm 2) and fedbuff
  have a global rate eta (Table II);
- favano averages (eta = 1: Table II gives it no global rate);
- asysg sends one minibatch gradient (K = 1 step at local rate 1, so Delta is the gradient) and
  the server steps by eta times their mean (docs/papers/defedavg.md R18).
A new asynchronous method is one more protocol in asynchrony/simulate.py and one record in the registry
(algorithms/__init__.py METHODS; with its own `server_step` if its server does something else, e.g. momentum
or a mixing weight). The record holds its Protocol, and its name is the protocol's.

For one seed the method is `AsyncRounds` (a Method, algorithms/method.py), which the record builds
(`build(spec, fleet, streams)`, the registry's one signature): the replay of the seed's timing trace, round t
consuming the Deltas the trace assigns it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from fedrepro.asynchrony import Protocol, Trace
from fedrepro.errors import ConfigError
from fedrepro.nn import DeviceData, FlatModel, LocalOptimizer, LocalTrainer, Streams


@dataclass(frozen=True)
class Fleet:
    """What an asynchronous method trains on for one seed (the async engine's env): the model (its parameters are
    W0), the clients' data on the compute device, the client backend and the seed's timing trace."""

    module: torch.nn.Module
    data: DeviceData
    backend: str
    trace: Trace


@dataclass(frozen=True)
class AsyncAlgorithm:
    protocol: Protocol  # who trains from which server version, which round consumes which training
    label: str
    global_lr: bool = True  # False: plain averaging, eta = 1
    sends_gradient: bool = False  # True: one step at local rate 1 (Delta = the minibatch gradient)

    @property
    def name(self) -> str:
        return self.protocol.name

    @property
    def settings(self) -> tuple[str, ...]:
        """The run settings only it reads: its protocol's options (FedBuff's staleness weight, ...)."""
        return tuple(self.protocol.options)

    def rates(self, lr_global: float, lr_local: float, K: int) -> tuple[float, float]:
        """(eta, eta_bar) after the algorithm's own rules; the config must not pretend otherwise."""
        if not self.global_lr and lr_global != 1.0:
            raise ConfigError(f"{self.label} averages the clients' results (no global rate); set lr_global: 1.0")
        if self.sends_gradient and (lr_local != 1.0 or K != 1):
            raise ConfigError(f"{self.label} sends one minibatch gradient: set K: 1 and lr_local: 1.0")
        return lr_global, lr_local

    def server_step(self, w: Tensor, deltas: Tensor, weights: Tensor, eta: float) -> Tensor:
        """w - eta * sum_m weights[m] deltas[m], deltas (D, P) in the trace's record order."""
        return w - eta * (weights.to(deltas.dtype) @ deltas)

    def build(self, spec: dict[str, Any], fleet: Fleet, streams: Streams) -> AsyncRounds:
        """The seed's replay: K local SGD steps of B samples at the local rate, the server step at eta."""
        eta, lr_local = self.rates(spec["lr_global"], spec["lr_local"], spec["K"])
        trainer = LocalTrainer(fleet.module, fleet.data, LocalOptimizer("sgd", lr_local), spec["K"], spec["B"],
                               fleet.backend)
        return AsyncRounds(self, eta, fleet.trace, trainer, streams, FlatModel(fleet.module).flatten())


class AsyncRounds:
    """The learning phase of one seed (engines/asynchronous.py): round t trains what is due (and what can be
    trained ahead), then takes the server step over round t's Deltas. Its state: the server model `w`, the
    `versions` still needed, the `deltas` computed ahead of the round that consumes them, and per version the
    trainings not yet computed (`remaining`). Trainings are computed as soon as something is due, several
    rounds ahead (`lookahead` rounds, at most `ahead` Deltas held, memory: one Delta each until consumed; at
    most `call` trainings a call of the client layer, None: no cap), so that one call trains many clients,
    each from its own stale version; results do not depend on this batching (tests/asynchrony/test_engine.py)."""

    def __init__(self, algorithm: AsyncAlgorithm, eta: float, trace, trainer, streams, W0: Tensor,
                 lookahead: int = 16, ahead: int = 64, call: int | None = None) -> None:
        self.algorithm, self.eta, self.trace, self.trainer, self.streams, self.W0 = (
            algorithm, eta, trace, trainer, streams, W0)
        self.lookahead, self.ahead, self.call = lookahead, ahead, call
        self.bounds = trace.round_bounds
        self.weights = torch.from_numpy(trace.weight).to(W0.device)  # moved once, not every round

    def init(self) -> dict[str, Any]:
        return {"w": self.W0, "versions": {0: self.W0}, "deltas": {},
                "remaining": self.trace.version_refcounts().copy()}

    def round(self, state: dict[str, Any], t: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """Round t: compute what is due (and what can be computed ahead), then the server step."""
        new = {"w": state["w"], "versions": dict(state["versions"]), "deltas": dict(state["deltas"]),
               "remaining": state["remaining"].copy()}
        self._compute(new, t)
        lo, hi = self.bounds[t], self.bounds[t + 1]
        if hi > lo:
            deltas = torch.stack([new["deltas"].pop(i) for i in range(lo, hi)])
            new["w"] = self.algorithm.server_step(new["w"], deltas, self.weights[lo:hi], self.eta)
        if new["remaining"][t + 1] > 0:  # some training starts from w^{t+1}
            new["versions"][t + 1] = new["w"]
        return new, {}

    def _compute(self, state: dict[str, Any], t: int) -> None:
        """Train round t's trainings not yet computed, and with them every later one that can start already
        (its version exists): computing only when something is due, not as soon as a version appears,
        is what makes the calls large (a training usually waits several rounds to be consumed)."""
        deltas = state["deltas"]
        lo, hi = self.bounds[t], self.bounds[t + 1]
        due = [i for i in range(lo, hi) if i not in deltas]
        if not due:
            return
        ahead_end = self.bounds[min(t + 1 + self.lookahead, len(self.bounds) - 1)]
        free = self.ahead - (len(deltas) - (hi - lo - len(due)))  # slots left for Deltas of later rounds
        if free > 0 and ahead_end > hi:
            cand = np.arange(hi, ahead_end)
            cand = cand[self.trace.start_version[cand] <= t]
            due += [int(i) for i in cand if int(i) not in deltas][:free]
        size = self.call or max(len(due), 1)
        for at in range(0, len(due), size):
            self._train(state, np.asarray(due[at : at + size]))

    def _train(self, state: dict[str, Any], records: np.ndarray) -> None:
        tr, versions, remaining = self.trace, state["versions"], state["remaining"]
        clients = torch.from_numpy(tr.client[records])
        idx = self.trainer.draw(self.streams, tr.training[records].tolist(), clients)
        starts = tr.start_version[records]
        steps = tr.n_steps[records]
        for q in np.unique(steps):  # FAVANO interrupts trainings after q <= K steps: its first q minibatches
            group = np.flatnonzero(steps == q)
            W = torch.stack([versions[int(v)] for v in starts[group]])
            if q == 0:
                finals = W
            else:
                finals = self.trainer.run(W, idx[torch.from_numpy(group), :q])
            for g, i in enumerate(group):
                state["deltas"][int(records[i])] = W[g] - finals[g]
        for v in starts:
            remaining[v] -= 1
        for v in np.unique(starts):  # forget a version once no training left to compute starts from it
            if remaining[v] == 0:
                versions.pop(int(v), None)


__all__ = ["AsyncAlgorithm", "AsyncRounds", "Fleet"]
