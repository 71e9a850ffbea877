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
A new asynchronous method is one more protocol in asynchrony/simulate.py and one entry here (with its
own `server_step` if its server does something else, e.g. momentum or a mixing weight). The record holds
its Protocol, and its name is the protocol's.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from fedrepro.asynchrony import PROTOCOLS, Protocol
from fedrepro.errors import ConfigError


@dataclass(frozen=True)
class AsyncAlgorithm:
    protocol: Protocol  # who trains from which server version, which round consumes which training
    label: str
    global_lr: bool = True  # False: plain averaging, eta = 1
    sends_gradient: bool = False  # True: one step at local rate 1 (Delta = the minibatch gradient)

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


ALGORITHMS: dict[str, AsyncAlgorithm] = {a.protocol.name: a for a in (
    AsyncAlgorithm(PROTOCOLS["fedavg"], "FedAvg"),
    AsyncAlgorithm(PROTOCOLS["defedavg_niid"], "DeFedAvg-nIID"),
    AsyncAlgorithm(PROTOCOLS["defedavg_iid"], "DeFedAvg-IID"),
    AsyncAlgorithm(PROTOCOLS["fedbuff"], "FedBuff"),
    AsyncAlgorithm(PROTOCOLS["favano"], "FAVANO", global_lr=False),
    AsyncAlgorithm(PROTOCOLS["asysg"], "AsySG", sends_gradient=True),
)}


def async_algorithm(name: str) -> AsyncAlgorithm:
    if name not in ALGORITHMS:
        raise ConfigError(f"unknown asynchronous algorithm {name!r}; expected one of {sorted(ALGORITHMS)}")
    return ALGORITHMS[name]


__all__ = ["ALGORITHMS", "AsyncAlgorithm", "async_algorithm"]
