"""Random sampling shared by the algorithms, the client layer and the simulated clock: which clients a round draws
(every family calls `sample_clients`, or on the simulated clock's numpy streams `sample_clients_np`) and the
partial sort behind every minibatch draw. Light to import (torch is loaded by the functions that draw with it),
so that the simulated clock, which the figure jobs read, stays free of torch."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch
    from torch import Tensor


# Rows shorter than this are fully sorted: on short rows argsort costs less than topk plus the check.
PARTIAL_SORT_MIN_LENGTH = 64


def smallest_indices(r: Tensor, k: int) -> Tensor:
    """r.argsort(dim=-1)[..., :k], the same indices in the same order, by a partial sort where that is cheaper.

    topk(k+1) returns the k+1 smallest values of a row in ascending order. When they are strictly
    increasing (no tie among them), the k smallest entries and their order are unique and the k-th is
    below every other entry, so any correct sort (stable or not) puts exactly these indices first, in
    this order. Rows with a tie among them (float32 draws do tie) are argsorted as before: the CPU sort
    handles each row on its own (same row, same result), so sorting only those rows changes nothing.
    """
    M = r.shape[-1]
    if k >= M or M < PARTIAL_SORT_MIN_LENGTH:
        return r.argsort(dim=-1)[..., :k]
    values, idx = r.topk(k + 1, dim=-1, largest=False, sorted=True)
    idx = idx[..., :k]
    tied = (values[..., 1:] <= values[..., :-1]).any(dim=-1)
    if bool(tied.any()):
        idx = idx.contiguous()
        rows = tied.reshape(-1).nonzero().squeeze(-1)
        idx.view(-1, k)[rows] = r.reshape(-1, M).index_select(0, rows).argsort(dim=-1)[:, :k]
    return idx


def sample_clients(gen: torch.Generator, n: int, s: int) -> Tensor:
    """s distinct clients of n, uniformly without replacement: (s,) long on the generator's device."""
    import torch

    return torch.randperm(n, generator=gen, device=gen.device)[:s]


def sample_clients_np(rng: np.random.Generator, n: int, s: int, replace: bool) -> np.ndarray:
    """s of n clients uniformly from a numpy stream: with replacement (a client may be drawn twice), or s distinct
    ones in the order drawn."""
    return rng.integers(0, n, size=s) if replace else rng.choice(n, size=s, replace=False)
