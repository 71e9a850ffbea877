"""LIBSVM/svmlight text files with binary (0/1) features, as a9a and w8a are.

Parsed by scikit-learn; this module only checks that the content is what the papers use:
labels -1/+1, 1-based feature indices within range, values 0 or 1.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from fedrepro.errors import DataError


def read_svmlight_binary(path: Path, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Return X (n, n_features) uint8 0/1 and y (n,) int8 in {-1, +1}.

    Blank lines are skipped (w8a ends with one). Errors name the file, and the line where
    the problem is a value scikit-learn parsed.
    """
    # imported here: scikit-learn takes ~1.7 s to import, and every training job imports fedrepro.data
    from sklearn.datasets import load_svmlight_file

    path = Path(path)
    try:
        # zero_based=True takes indices literally, so an index 0 is reported below
        # (not guessed away by "auto"); n_features is checked below for the same reason.
        X, y = load_svmlight_file(str(path), zero_based=True, dtype=np.float64)
    except ValueError as exc:
        raise DataError(f"{path}: expected lines '<+1|-1> <index>:<0|1> ...' ({exc})") from None

    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    cols, vals = X.indices, X.data
    bad_label = (y != 1) & (y != -1)
    if bad_label.any():
        row = int(np.argmax(bad_label))
        raise DataError(f"{path}, line {_line_of_row(path, row)}: expected label +1 or -1, got {y[row]:g}")
    for bad, what in (
        ((cols < 1) | (cols > n_features), f"feature index outside 1..{n_features}"),
        ((vals != 0) & (vals != 1), "feature value other than 0 or 1"),
    ):
        if bad.any():
            k = int(np.argmax(bad))
            raise DataError(f"{path}, line {_line_of_row(path, rows[k])}: {what} ({cols[k]}:{vals[k]:g})")

    dense = np.zeros((X.shape[0], n_features), dtype=np.uint8)
    dense[rows, cols - 1] = vals
    return dense, y.astype(np.int8)


def _line_of_row(path: Path, row: int) -> int:
    # scikit-learn skips blank lines and comments, so row numbers and line numbers differ.
    lines = path.read_bytes().split(b"\n")
    data_lines = (n for n, line in enumerate(lines, start=1) if line.split(b"#")[0].strip())
    return next(itertools.islice(data_lines, row, None))
