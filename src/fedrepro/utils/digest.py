"""Content hashes recorded in run.json: short ones of arrays (partitions, initial weights), full ones of files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np


def array_digest(array: np.ndarray) -> str:
    """The first 16 hex digits of the sha256 of the array's bytes (C order)."""
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


def file_sha256(path: Path | str) -> str:
    """The sha256 (hex) of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
