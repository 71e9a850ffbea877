"""Small synthetic finite-sum problems shaped like a9a/w8a: sparse 0/1 features, +-1 labels."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrepro.experiments.seeding import torch_generator
from fedrepro.objectives import OBJECTIVES, FiniteSumProblem, make_problem

N_CLIENTS, M, DIM = 40, 10, 15


def synthetic_data(n_rows: int = N_CLIENTS * M + 7, dim: int = DIM, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = (rng.random((n_rows, dim)) < 0.3).astype(np.uint8)
    y = np.where(rng.random(n_rows) < 0.3, 1, -1).astype(np.int8)
    return X, y


def streams(*seed: object):
    """The runner's stream protocol: a fresh generator per (purpose, round) of one run."""
    return lambda purpose, r: torch_generator("tests/algorithms", *seed, purpose, r)


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
