"""Short content hashes recorded in run.json (partitions, initial weights)."""

from __future__ import annotations

import hashlib

import numpy as np


def array_digest(array: np.ndarray) -> str:
    """The first 16 hex digits of the sha256 of the array's bytes (C order)."""
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]
