"""Decode a fetched dataset once into a compressed .npz, checking it on the way.

Array names and dtypes per dataset (other modules rely on exactly these):
  mnist, fashion_mnist  x_train uint8 (60000, 28, 28), y_train int64, x_test (10000, 28, 28), y_test
  cifar10               x_train uint8 (50000, 32, 32, 3) HWC, y_train int64, x_test (10000, 32, 32, 3), y_test
  a9a                   X uint8 0/1 (32561, 123), y int8 +-1, X_test (16281, 123), y_test
  w8a                   X uint8 0/1 (49749, 300), y int8 +-1
  insurance             age, bmi, children, charges float64; sex (male=1), smoker (yes=1) int8;
                        region int8 codes into region_names (sorted unicode array); 1338 rows
The counts checked below are those of the canonical files (see the papers' specs), so a
wrong or damaged copy fails here rather than producing quietly different results.
"""

from __future__ import annotations

import functools
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from fedrepro.errors import DataError
from fedrepro.data.formats.cifar import read_cifar10
from fedrepro.data.formats.idx import read_idx_ubyte
from fedrepro.data.formats.insurance import read_insurance
from fedrepro.data.formats.svmlight import read_svmlight_binary
from fedrepro.data.registry import get_dataset
from fedrepro.utils import atomic

Arrays = dict[str, np.ndarray]

# Examples per class 0..9, train and test.
_MNIST_CLASSES = {
    "train": (5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949),
    "test": (980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009),
}
_FASHION_MNIST_CLASSES = {"train": (6000,) * 10, "test": (1000,) * 10}
_CIFAR10_CLASSES = {"train": (5000,) * 10, "test": (1000,) * 10}

INSURANCE_ROWS = get_dataset("insurance").rows  # 1338
INSURANCE_CHARGES_SUM = 17755824.9908  # of the full-precision copy (docs/papers/fedvr.md R1)


def prepare_dataset(key: str, raw_dir: Path, out_path: Path) -> Path:
    """Decode the files of `key` found in `raw_dir` into `out_path` (.npz, written atomically)."""
    raw_dir, out_path = Path(raw_dir), Path(out_path)
    missing = [f.name for f in get_dataset(key).files if not (raw_dir / f.name).is_file()]
    if missing:
        raise DataError(f"{key}: {', '.join(missing)} not found in {raw_dir}; fetch the dataset first")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    arrays = _DECODERS[key](raw_dir, out_path.parent)
    atomic.write_npz(out_path, arrays)
    return out_path


def load_prepared(path: Path) -> Arrays:
    """All arrays of a prepared .npz, loaded into memory."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {name: npz[name] for name in npz.files}
    except FileNotFoundError:
        raise DataError(f"{path} does not exist; prepare the dataset first") from None
    except (ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise DataError(
            f"{path} is not a valid prepared dataset ({exc}); delete it and prepare again"
        ) from None


# --- decoders -----------------------------------------------------------------------


def _mnist_like(classes: dict[str, tuple[int, ...]], raw_dir: Path, _workdir: Path) -> Arrays:
    arrays = {}
    for split, prefix in (("train", "train"), ("test", "t10k")):
        images = f"{prefix}-images-idx3-ubyte.gz"
        labels = f"{prefix}-labels-idx1-ubyte.gz"
        x = read_idx_ubyte(raw_dir / images, ndim=3)
        y = read_idx_ubyte(raw_dir / labels, ndim=1).astype(np.int64)
        _expect_shape(images, x, (sum(classes[split]), 28, 28))
        _expect_class_counts(labels, y, classes[split])
        arrays[f"x_{split}"], arrays[f"y_{split}"] = x, y
    return arrays


def _cifar10(raw_dir: Path, workdir: Path) -> Arrays:
    arrays = read_cifar10(raw_dir / "cifar-10-python.tar.gz", workdir)
    for split, classes in _CIFAR10_CLASSES.items():
        _expect_shape(f"cifar-10 {split} images", arrays[f"x_{split}"], (sum(classes), 32, 32, 3))
        _expect_class_counts(f"cifar-10 {split} labels", arrays[f"y_{split}"], classes)
    return arrays


def _svmlight(
    files: dict[str, tuple[str, int, int]], n_features: int, raw_dir: Path, _workdir: Path
) -> Arrays:
    """files: name -> (array suffix, rows, positive labels)."""
    arrays = {}
    for name, (suffix, rows, positives) in files.items():
        X, y = read_svmlight_binary(raw_dir / name, n_features)
        if len(y) != rows or int((y == 1).sum()) != positives:
            raise DataError(
                f"{raw_dir / name}: {len(y)} rows with {int((y == 1).sum())} positive labels, "
                f"expected {rows} rows with {positives}"
            )
        arrays[f"X{suffix}"], arrays[f"y{suffix}"] = X, y
    return arrays


def _insurance(raw_dir: Path, _workdir: Path) -> Arrays:
    path = raw_dir / "insurance.csv"
    arrays = read_insurance(path)
    rows, total = len(arrays["charges"]), float(arrays["charges"].sum())
    if rows != INSURANCE_ROWS or abs(total - INSURANCE_CHARGES_SUM) > 0.01:
        raise DataError(
            f"{path}: {rows} rows with charges summing to {total:.4f}, expected {INSURANCE_ROWS} "
            f"rows summing to {INSURANCE_CHARGES_SUM} (a rounded or different copy?)"
        )
    return arrays


_DECODERS: dict[str, Callable[[Path, Path], Arrays]] = {
    "mnist": functools.partial(_mnist_like, _MNIST_CLASSES),
    "fashion_mnist": functools.partial(_mnist_like, _FASHION_MNIST_CLASSES),
    "cifar10": _cifar10,
    "a9a": functools.partial(_svmlight, {"a9a": ("", get_dataset("a9a").rows, 7841), "a9a.t": ("_test", 16281, 3846)},
                             123),
    "w8a": functools.partial(_svmlight, {"w8a": ("", get_dataset("w8a").rows, 1479)}, 300),
    "insurance": _insurance,
}


# --- checks -------------------------------------------------------------------------


def _expect_shape(what: str, array: np.ndarray, shape: tuple[int, ...]) -> None:
    if array.shape != shape:
        raise DataError(f"{what}: shape {array.shape}, expected {shape}")


def _expect_class_counts(what: str, labels: np.ndarray, expected: tuple[int, ...]) -> None:
    if labels.size and (labels.min() < 0 or labels.max() >= len(expected)):
        raise DataError(f"{what}: labels outside 0..{len(expected) - 1}")
    counts = tuple(int(c) for c in np.bincount(labels, minlength=len(expected)))
    if counts != expected:
        raise DataError(f"{what}: examples per class {counts}, expected {expected}")
