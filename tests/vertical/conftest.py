"""Tiny synthetic vertical data sets for the vertical engine's tests."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def images(write_run_inputs) -> dict:
    """A prepared 'view': 120 images 3x8x8 whose class needs both halves (left half by c // 2, right half
    by c % 5, as the split-pair CIFAR stand-in, docs/papers/tdcd.md R20), 40 test images."""
    rng = np.random.default_rng(0)
    left, right = rng.normal(size=(5, 3, 8, 4)), rng.normal(size=(5, 3, 8, 4))
    y = rng.integers(0, 10, size=160)
    x = np.concatenate([left[y // 2], right[y % 5]], axis=-1) + rng.normal(scale=0.5, size=(160, 3, 8, 8))
    x = x.astype(np.float32)
    return write_run_inputs("pairs-native", "pairs", x_train=x[:120], y_train=y[:120], x_test=x[120:],
                            y_test=y[120:])


@pytest.fixture
def series(write_run_inputs) -> dict:
    """A binary task on 100 sequences of 6 steps x 10 columns (MIMIC-like), 40 test sequences."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(140, 6, 10)).astype(np.float32)
    y = (x[:, :, ::3].mean(axis=(1, 2)) > 0.2).astype(np.int64)
    return write_run_inputs("series", "series", x_train=x[:100], y_train=y[:100], x_test=x[100:], y_test=y[100:])
