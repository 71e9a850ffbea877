"""Finite-sum objectives for the linear-model papers (FedPAGE paper §6; docs/papers/fedpage.md R1-R3)."""

from fedrepro.objectives.finite_sum import (
    OBJECTIVES,
    PARTITIONS,
    FiniteSumProblem,
    LogisticNonconvex,
    RobustLinearRegression,
    make_problem,
)

__all__ = [
    "OBJECTIVES",
    "PARTITIONS",
    "FiniteSumProblem",
    "LogisticNonconvex",
    "RobustLinearRegression",
    "make_problem",
]
