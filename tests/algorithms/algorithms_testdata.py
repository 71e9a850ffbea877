"""Synthetic finite-sum data shaped like a9a/w8a (sparse 0/1 features, +-1 labels) and run streams.

A uniquely named module rather than conftest.py, so imports never pick up another folder's conftest.
"""

from __future__ import annotations

import numpy as np

from fedrepro.seeding import torch_generator

N_CLIENTS, M, DIM = 40, 10, 15


def synthetic_data(n_rows: int = N_CLIENTS * M + 7, dim: int = DIM, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = (rng.random((n_rows, dim)) < 0.3).astype(np.uint8)
    y = np.where(rng.random(n_rows) < 0.3, 1, -1).astype(np.int8)
    return X, y


def streams(*seed: object):
    """The runner's stream protocol: a fresh generator per (purpose, round) of one run."""
    return lambda purpose, r: torch_generator("tests/algorithms", *seed, purpose, r)


class Stepped:
    """A method and its state, stepped as the engine steps it; the state's entries (else the method's
    attributes) read as attributes."""

    def __init__(self, method) -> None:
        self.method, self.state = method, method.init()

    def round(self, r: int) -> dict:
        self.state, info = self.method.round(self.state, r)
        return info

    def __getattr__(self, key: str):
        if key in ("method", "state"):  # not set yet
            raise AttributeError(key)
        return self.state[key] if key in self.state else getattr(self.method, key)
