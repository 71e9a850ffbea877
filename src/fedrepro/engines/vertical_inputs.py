"""The arrays a vertical run trains on, made from its prepared input by run settings (docs/papers/tdcd.md R23).

The reduced scales shrink the data by settings of the run, never by preparing other data, so every scale
reads the same prepared file and the settings (and so the run_id) say what was taken:
- `train_subset` M / `test_subset`: a seeded subset of the training / test IDs, the same for every seed
  and every run that reads the same data with the same size (a subset is part of the task, like the
  dataset; it is keyed by the data and the size only, never by Q, K, lr or the seed);
- `time_pool` f: mean-pool (n, T, D) sequences over blocks of f time steps (MIMIC 48 -> 12 with f = 4);
- uint8 images (the multi-view memmaps) become float32 x / 255 standardised per channel (`image_norm`:
  `train`, the training subset's mean and std; `imagenet`, ImageNet's, as the authors' ModelNet code).
Only the rows taken are read from a memmap.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedrepro.data.mimic3_ihm import pool_time
from fedrepro.errors import ConfigError
from fedrepro.numerics import keying
from fedrepro.seeding import numpy_rng

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
# `image_norm` (_standardise): the training subset's per-channel statistics, or ImageNet's
IMAGE_NORMS = ("train", "imagenet")


def subset_index(spec: dict[str, Any], split: str, n: int) -> np.ndarray | None:
    """Sorted IDs of the `<split>_subset` of n rows, or None (all rows)."""
    keep = spec.get(f"{split}_subset")
    if keep is None:
        return None
    if keep > n:
        raise ConfigError(f"{split}_subset = {keep} exceeds the {n} {split} rows of {spec['dataset']}")
    key = keying("vertical").key(spec, f"{split}_subset")  # the data it is drawn from and the size
    return np.sort(numpy_rng(f"{split}_subset", key).choice(n, keep, replace=False))


def _standardise(x_train: np.ndarray, x_test: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray]:
    """uint8 images (..., C, H, W) -> float32, x / 255 standardised per channel."""
    train, test = (x.astype(np.float32) / 255 for x in (x_train, x_test))
    axes = tuple(a for a in range(train.ndim) if a != train.ndim - 3)
    channels = train.shape[-3]
    if how == "train":
        mean, std = train.mean(axis=axes, dtype=np.float64), train.std(axis=axes, dtype=np.float64)
        std = np.where(std > 0, std, 1.0)
    elif how == "imagenet":
        if channels != 3:
            raise ConfigError(f"image_norm: imagenet needs RGB images, these have {channels} channel(s)")
        mean, std = np.array(IMAGENET_MEAN), np.array(IMAGENET_STD)
    else:
        raise ConfigError(f"image_norm: {how!r} is not allowed; allowed values: {', '.join(IMAGE_NORMS)}")
    shape = (channels, 1, 1)
    shift, scale = mean.astype(np.float32).reshape(shape), std.astype(np.float32).reshape(shape)
    return (train - shift) / scale, (test - shift) / scale


def model_inputs(spec: dict[str, Any], arrays: dict[str, Any]) -> dict[str, np.ndarray]:
    """x_train, y_train, x_test, y_test of the run (see the module docstring)."""
    out = {}
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        index = subset_index(spec, split, len(x))
        out[f"x_{split}"] = np.asarray(x if index is None else x[index])
        out[f"y_{split}"] = np.asarray(y if index is None else y[index])
    factor = spec.get("time_pool", 1)
    if factor != 1:
        if out["x_train"].ndim != 3:
            raise ConfigError(f"time_pool: {factor} needs sequences (n, T, D), not shape {out['x_train'].shape}")
        out["x_train"], out["x_test"] = pool_time(out["x_train"], factor), pool_time(out["x_test"], factor)
    if out["x_train"].dtype == np.uint8:
        out["x_train"], out["x_test"] = _standardise(out["x_train"], out["x_test"], spec.get("image_norm", "train"))
    return out
