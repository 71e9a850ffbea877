"""Fixtures: small synthetic problems for both objectives; single-threaded torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from algorithms_testdata import M, N_CLIENTS, synthetic_data
from fedrepro.objectives import OBJECTIVES, FiniteSumProblem, make_problem


@pytest.fixture(autouse=True)
def single_thread():
    """These tensors are tiny: intra-op threads only add synchronisation, and on a busy CPU each
    threaded op can wait a whole scheduler slice (measured: 30x slower under load)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def data() -> tuple[np.ndarray, np.ndarray]:
    return synthetic_data()


@pytest.fixture(scope="session", params=OBJECTIVES)
def problem(request, data) -> FiniteSumProblem:
    X, y = data
    return make_problem(request.param, X, y, n_clients=N_CLIENTS, samples_per_client=M)


@pytest.fixture(scope="session")
def robust(data) -> FiniteSumProblem:
    X, y = data
    return make_problem("robust_linear_regression", X, y, n_clients=N_CLIENTS, samples_per_client=M)
