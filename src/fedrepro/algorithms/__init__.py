"""Federated algorithms on finite-sum objectives: FedPAGE, SCAFFOLD (Option II), FedAvg."""

from __future__ import annotations

from fedrepro.algorithms.common import Algorithm, Streams
from fedrepro.algorithms.fedavg import FedAvg
from fedrepro.algorithms.fedpage import FedPAGE
from fedrepro.algorithms.scaffold import Scaffold

ALGORITHMS: dict[str, type[Algorithm]] = {"fedpage": FedPAGE, "scaffold": Scaffold, "fedavg": FedAvg}


def algorithm(method: str) -> type[Algorithm]:
    """The algorithm of a run's `algorithm` setting: its hyperparameters (Algorithm.hyperparameters) and rounds."""
    if method not in ALGORITHMS:
        raise ValueError(f"unknown method {method!r}; expected one of {sorted(ALGORITHMS)}")
    return ALGORITHMS[method]


__all__ = ["ALGORITHMS", "Algorithm", "FedAvg", "FedPAGE", "Scaffold", "Streams", "algorithm"]
