"""CIFAR-10 "python version": pickled batches inside cifar-10-python.tar.gz."""

from __future__ import annotations

import pickle
import tempfile
from pathlib import Path

import numpy as np

from fedrepro.errors import DataError
from fedrepro.data.extract import extract_tar
from fedrepro.data.formats.safe_pickle import NumpyUnpickler

_BATCH_DIR = "cifar-10-batches-py"
_TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
_TEST_BATCH = "test_batch"


def _read_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        with open(path, "rb") as fh:
            # Unpickling can run arbitrary code: only the globals of numpy arrays are resolved.
            batch = NumpyUnpickler(fh, what="a CIFAR batch", encoding="bytes").load()
        data = np.asarray(batch[b"data"], dtype=np.uint8)
        labels = np.asarray(batch[b"labels"], dtype=np.int64)
    except FileNotFoundError:
        raise DataError(f"{path.name} missing from the CIFAR-10 archive") from None
    except (pickle.UnpicklingError, EOFError, KeyError, TypeError, ValueError) as exc:
        raise DataError(
            f"{path.name} in the CIFAR-10 archive is not a valid batch ({type(exc).__name__}: {exc})"
        ) from None
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or len(labels) != len(data):
        raise DataError(
            f"{path.name}: data shape {data.shape} with {len(labels)} labels, expected (n, 3072) and n labels"
        )
    # Rows are 1024 red, then 1024 green, then 1024 blue values: CHW -> HWC.
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels


def read_cifar10(archive: Path, workdir: Path) -> dict[str, np.ndarray]:
    """x_train (n, 32, 32, 3) uint8 HWC, y_train int64, x_test, y_test.

    The archive is extracted into a temporary directory under `workdir`, removed after.
    """
    with tempfile.TemporaryDirectory(prefix=".cifar10-", dir=workdir) as tmp:
        batches = extract_tar(archive, Path(tmp) / "extracted") / _BATCH_DIR
        train = [_read_batch(batches / name) for name in _TRAIN_BATCHES]
        x_test, y_test = _read_batch(batches / _TEST_BATCH)
    return {
        "x_train": np.concatenate([x for x, _ in train]),
        "y_train": np.concatenate([y for _, y in train]),
        "x_test": np.ascontiguousarray(x_test),
        "y_test": y_test,
    }
