"""Federated algorithms on finite-sum objectives: FedPAGE, SCAFFOLD (Option II), FedAvg."""

from __future__ import annotations

from fedrepro.algorithms.common import Algorithm, Streams
from fedrepro.algorithms.fedavg import FedAvg
from fedrepro.algorithms.fedpage import FedPAGE
from fedrepro.algorithms.scaffold import Scaffold
from fedrepro.objectives import FiniteSumProblem

ALGORITHMS: dict[str, type[Algorithm]] = {"fedpage": FedPAGE, "scaffold": Scaffold, "fedavg": FedAvg}


def build_algorithm(method: str, problem: FiniteSumProblem, hp: dict, streams: Streams) -> Algorithm:
    if method not in ALGORITHMS:
        raise ValueError(f"unknown method {method!r}; expected one of {sorted(ALGORITHMS)}")
    return ALGORITHMS[method](problem, hp, streams)


def hyperparameters(method: str, eta_tilde: float, *, K: int, c_l: float, **rest) -> dict:
    """Step sizes from the paper's effective step size eta_tilde (paper Sec 6; docs/papers/fedpage.md R6, R9).

    FedPAGE: eta_g = eta_tilde and eta_l = c_l * eta_g / K, where c_l (unstated in the paper) is the
    local trajectory length relative to the global step. SCAFFOLD/FedAvg: eta_tilde = K eta_g eta_l,
    split as eta_g = 1, eta_l = eta_tilde / K; c_l does not apply to them and is ignored.
    `rest` carries the other hyperparameters (S, b or b1/b2/b3, p) unchanged.
    """
    if method not in ALGORITHMS:
        raise ValueError(f"unknown method {method!r}; expected one of {sorted(ALGORITHMS)}")
    if {"eta_g", "eta_l"} & rest.keys():
        raise ValueError("eta_g/eta_l are derived from eta_tilde; do not pass them")
    if method == "fedpage":
        return {"K": K, "eta_g": eta_tilde, "eta_l": c_l * eta_tilde / K, **rest}
    return {"K": K, "eta_g": 1.0, "eta_l": eta_tilde / K, **rest}


__all__ = ["ALGORITHMS", "Algorithm", "FedAvg", "FedPAGE", "Scaffold", "Streams", "build_algorithm", "hyperparameters"]
