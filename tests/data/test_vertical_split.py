"""The TDCD vertical split rule (data/vertical.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrepro.data.vertical import split_bounds, split_features, split_sizes
from fedrepro.errors import DataError


@pytest.mark.parametrize("D, N, expected", [
    (76, 16, [5] * 12 + [4] * 4),  # docs/papers/tdcd.md R15: the first D mod N silos get one column more
    (76, 4, [19] * 4),
    (76, 1, [76]),
    (32, 2, [16, 16]),
    (10, 3, [4, 3, 3]),
])
def test_split_sizes(D, N, expected):
    assert split_sizes(D, N) == expected


def test_bounds_are_contiguous_and_cover_all_columns():
    bounds = split_bounds(76, 4)
    assert bounds == [(0, 19), (19, 38), (38, 57), (57, 76)]  # the last silo: 2 value columns + 17 masks
    for D, N in ((76, 16), (23, 5), (12, 12)):
        bounds = split_bounds(D, N)
        assert bounds[0][0] == 0 and bounds[-1][1] == D
        assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))


@pytest.mark.parametrize("D, N", [(3, 4), (5, 0)])
def test_impossible_splits_are_refused(D, N):
    with pytest.raises(DataError, match=f"cannot split {D} feature columns among {N} silos"):
        split_sizes(D, N)


def test_split_features_numpy_last_axis_reassembles():
    x = np.arange(2 * 48 * 76).reshape(2, 48, 76)
    blocks = split_features(x, 16)
    assert [b.shape[-1] for b in blocks] == split_sizes(76, 16)
    np.testing.assert_array_equal(np.concatenate(blocks, axis=-1), x)
    assert all(np.shares_memory(b, x) for b in blocks)  # views, not copies


def test_split_features_torch_width_axis_gives_cifar_halves():
    x = torch.arange(2 * 3 * 32 * 32, dtype=torch.float32).reshape(2, 3, 32, 32)
    left, right = split_features(x, 2, axis=3)
    assert left.shape == right.shape == (2, 3, 32, 16)
    assert torch.equal(left, x[:, :, :, :16]) and torch.equal(right, x[:, :, :, 16:])
    # the same blocks with a negative axis
    assert all(torch.equal(a, b) for a, b in zip(split_features(x, 2, axis=-1), (left, right)))
