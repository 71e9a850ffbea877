"""The arrays a vertical run trains on, made from its prepared input by run settings (docs/papers/tdcd.md R23).

The reduced scales shrink the data by settings of the run, never by preparing other data, so every scale
reads the same prepared file and the settings (and so the run_id) say what was taken:
- `train_subset` M / `test_subset`: a seeded subset of the training / test IDs, the same for every seed
  and every run that reads the same data with the same size (a subset is part of the task, like the
  dataset; it is keyed by the data and the size only, never by Q, K, lr or the seed);
- `time_pool` f: mean-pool (n, T, D) sequences over blocks of f time steps (MIMIC 48 -> 12 with f = 4);
- uint8 images (the multi-view memmaps) stay uint8, on the device too (a quarter of float32: real RGB ModelNet40
  at the paper scale is 22 GB, not 89; docs/engines.md), with `levels`, the float32 each (channel, level) becomes:
  x / 255 standardised per channel (`image_norm`: `train`, the training subset's mean and std; `imagenet`,
  ImageNet's, as the authors' ModelNet code). Images standardises a batch when it is indexed.
Only the rows taken are read from a memmap.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

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


def _statistics(x_train: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray]:
    """The per-channel shift and scale, float32 (C, 1, 1), of the uint8 training images (..., C, H, W)."""
    channels = x_train.shape[-3]
    if how == "train":
        # over the whole float32 array as numpy sums it (another order could change the floats); a copy for this call
        train = x_train.astype(np.float32) / 255
        axes = tuple(a for a in range(train.ndim) if a != train.ndim - 3)
        mean, std = train.mean(axis=axes, dtype=np.float64), train.std(axis=axes, dtype=np.float64)
        std = np.where(std > 0, std, 1.0)
    elif how == "imagenet":
        if channels != 3:
            raise ConfigError(f"image_norm: imagenet needs RGB images, these have {channels} channel(s)")
        mean, std = np.array(IMAGENET_MEAN), np.array(IMAGENET_STD)
    else:
        raise ConfigError(f"image_norm: {how!r} is not allowed; allowed values: {', '.join(IMAGE_NORMS)}")
    shape = (channels, 1, 1)
    return mean.astype(np.float32).reshape(shape), std.astype(np.float32).reshape(shape)


def image_levels(x_train: np.ndarray, how: str) -> np.ndarray:
    """float32 (C, 256): every uint8 level of every channel as x / 255 standardised. The operations are elementwise,
    so an image looked up in it is bit for bit the image standardised whole."""
    shift, scale = _statistics(x_train, how)
    levels = np.broadcast_to(np.arange(256, dtype=np.uint8), (len(shift), 1, 256))  # C images of 1 x 256 pixels
    return ((levels.astype(np.float32) / 255 - shift) / scale)[:, 0]


class Images:
    """A silo's block of uint8 images (n, ..., C, H, W) on the device, standardised when indexed: images[rows] is
    the float tensor `levels` (C, 256) gives each pixel's (channel, level)."""

    def __init__(self, images: Tensor, levels: Tensor) -> None:
        channels = levels.shape[0]
        if images.dtype != torch.uint8 or images.shape[-3] != channels:
            raise ValueError(f"Images needs uint8 (..., {channels}, H, W), not {images.dtype} {tuple(images.shape)}")
        self.images, self.shape = images, images.shape
        self.flat = levels.reshape(-1)
        self.offsets = (256 * torch.arange(channels, device=images.device)).reshape(-1, 1, 1)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, rows: Any) -> Tensor:
        return self.flat[self.images[rows].long() + self.offsets]


def model_inputs(spec: dict[str, Any], arrays: dict[str, Any]) -> dict[str, np.ndarray]:
    """x_train, y_train, x_test, y_test of the run, and `levels` for uint8 images (see the module docstring)."""
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
        out["levels"] = image_levels(out["x_train"], spec.get("image_norm", "train"))
    return out
