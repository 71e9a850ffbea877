"""The vertical (feature) split of TDCD: which columns each silo holds (docs/papers/tdcd.md R15).

Features are cut into contiguous chunks along one axis; when D is not divisible by N, the first
D mod N silos get one column more (76 columns, N = 16: twelve silos of 5, then four of 4), as the
authors' code does. CIFAR-10 halves (width 32, N = 2), MIMIC-III feature blocks (76, N = 4) and the
ModelNet40 views (N = 12 chunks of one view each) all follow this one rule.
"""

from __future__ import annotations

from typing import Any, TypeVar

from fedrepro.errors import DataError

Array = TypeVar("Array", bound=Any)  # numpy array or torch tensor: anything with .ndim, .shape and slicing


def split_sizes(D: int, N: int) -> list[int]:
    """Columns per silo, silo 0 first: D // N each, plus one for the first D mod N silos."""
    if N < 1 or D < N:
        raise DataError(f"cannot split {D} feature columns among {N} silos (need 1 <= N <= D)")
    base, extra = divmod(D, N)
    return [base + 1 if j < extra else base for j in range(N)]


def split_bounds(D: int, N: int) -> list[tuple[int, int]]:
    """[start, stop) of each silo's columns."""
    bounds, start = [], 0
    for size in split_sizes(D, N):
        bounds.append((start, start + size))
        start += size
    return bounds


def split_features(x: Array, N: int, axis: int = -1) -> list[Array]:
    """The N silo blocks of `x` along `axis` (views, not copies, for numpy arrays and torch tensors)."""
    axis = axis + x.ndim if axis < 0 else axis
    if not 0 <= axis < x.ndim:
        raise DataError(f"axis {axis} out of range for an array of {x.ndim} dimensions")
    lead = (slice(None),) * axis
    return [x[lead + (slice(start, stop),)] for start, stop in split_bounds(x.shape[axis], N)]
