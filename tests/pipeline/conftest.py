"""A tiny finite-sum run on synthetic LIBSVM-like data, for the pipeline tests."""


import numpy as np
import pytest

from fedrepro.experiments.runtable import run_id_of


@pytest.fixture
def synthetic_inputs(write_run_inputs) -> dict:
    rng = np.random.default_rng(0)
    X = (rng.random((400, 12)) < 0.3).astype(np.uint8)
    y = np.where(X[:, 0] + rng.random(400) > 0.8, 1, -1).astype(np.int8)
    return write_run_inputs("a9a", "a9a", X=X, y=y)


def make_spec(**overrides) -> dict:
    spec = {
        "paper": "fedpage", "engine": "finite_sum", "method": "fedpage", "algorithm": "fedpage",
        "dataset": "a9a", "objective": "robust_linear_regression", "n_clients": 40, "samples_per_client": 10,
        "partition": "contiguous", "S": 4, "K": 3, "b1": "full", "b2": "full", "b3": 1, "p": "auto", "c_l": 0.1,
        "eta_tilde": 0.1, "rounds": 40, "eval_every": 5, "seeds": 2, "x0": "zeros",
        "divergence_threshold": 1.0e6, "checkpoint_every": 10,
    }
    spec.update(overrides)
    return spec


@pytest.fixture
def spec_and_id():
    def make(**overrides):
        spec = make_spec(**overrides)
        return spec, run_id_of(spec)
    return make
