"""Finite-sum objectives for the linear-model papers (FedPAGE spec §3)."""

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
