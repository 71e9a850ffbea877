"""LIBSVM/svmlight text files with binary (0/1) features, as a9a and w8a are.

Each line: `<label> <index>:<value> ...` with 1-based, increasing feature indices.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fedrepro.errors import DataError

_LABELS = {b"+1": 1, b"1": 1, b"-1": -1}


def read_svmlight_binary(path: Path, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Return X (n, n_features) uint8 0/1 and y (n,) int8 in {-1, +1}.

    Blank lines are skipped (w8a ends with one). Errors name the file and line.
    """
    path = Path(path)
    labels: list[int] = []
    line_of_row: list[int] = []
    counts: list[int] = []
    indices: list[int] = []
    values: list[int] = []
    # A plain loop over lines with bulk list operations per line: w8a (50k lines) takes
    # a fraction of a second; index/value ranges are checked vectorized afterwards.
    for lineno, line in enumerate(path.read_bytes().split(b"\n"), start=1):
        tokens = line.split()
        if not tokens:
            continue
        try:
            labels.append(_LABELS[tokens[0]])
            pairs = [tok.split(b":") for tok in tokens[1:]]
            indices.extend(int(i) for i, _ in pairs)
            values.extend(int(v) for _, v in pairs)
        except (KeyError, ValueError):
            raise DataError(
                f"{path}, line {lineno}: expected '<+1|-1> <index>:<0|1> ...', got {line[:120]!r}"
            ) from None
        line_of_row.append(lineno)
        counts.append(len(pairs))

    rows = np.repeat(np.arange(len(labels)), counts)
    cols = np.asarray(indices, dtype=np.int64)
    vals = np.asarray(values, dtype=np.int64)
    for bad, what in (
        ((cols < 1) | (cols > n_features), f"feature index outside 1..{n_features}"),
        ((vals != 0) & (vals != 1), "feature value other than 0 or 1"),
    ):
        if bad.any():
            k = int(np.argmax(bad))
            raise DataError(f"{path}, line {line_of_row[rows[k]]}: {what} ({cols[k]}:{vals[k]})")

    X = np.zeros((len(labels), n_features), dtype=np.uint8)
    X[rows, cols - 1] = vals
    return X, np.asarray(labels, dtype=np.int8)
