"""Vertical (feature) partitioning for TDCD (spec tdcd.md §3): contiguous feature chunks, one per silo.

If the D columns along the split axis do not divide by N, the first D mod N silos get one more column
(76 columns over N = 16: 12 silos of 5, then 4 of 4), as the authors' code does.
"""

from __future__ import annotations

import numpy as np


def split_sizes(D: int, N: int) -> list[int]:
    """The number of columns of each of N silos, for D columns in all."""
    if not 1 <= N <= D:
        raise ValueError(f"cannot split {D} columns over {N} silos (need 1 <= N <= D)")
    return [D // N + (1 if j < D % N else 0) for j in range(N)]


def split_features(x: np.ndarray, N: int, axis: int) -> list[np.ndarray]:
    """x cut along `axis` (of the whole array, e.g. -1 for image width or MIMIC's feature columns) into N
    contiguous chunks of split_sizes(x.shape[axis], N) columns (views, no copy)."""
    bounds = np.cumsum(split_sizes(x.shape[axis], N))[:-1]
    return np.split(x, bounds, axis=axis)
