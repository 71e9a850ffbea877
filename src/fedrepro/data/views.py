"""Model inputs derived once from a prepared image dataset (rule `view`), not in every forward pass.

A view turns the uint8 images of data/prepared/<dataset>.npz into float32 NCHW arrays:
centre crop -> 2x2 average pooling (optional) -> per-channel standardisation with the training
set's mean and std (docs/papers/fedcluster.md R2: [42] trains on CIFAR centre-cropped to 28x28;
no augmentation). FedCluster's reduced scales read 14x14 inputs (docs/papers/fedcluster.md R22: MNIST
2x2 average pool; CIFAR crop 28 then pool). The result goes to data/prepared/<dataset>-<view>.npz *uncompressed*, so
each training job loads it in a fraction of a second instead of decompressing and transforming
the raw arrays again (seconds for CIFAR-10, times every job).

TDCD's views (docs/papers/tdcd.md R16, R23) standardise with CIFAR-10's published per-channel mean and std
instead of the training set's, as the authors do; they apply to cifar10 and its split-pair stand-in.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fedrepro.errors import DataError
from fedrepro.data.prepare import load_prepared
from fedrepro.utils import atomic

# name -> (centre crop size or None, average-pool factor)
VIEWS: dict[str, tuple[int | None, int]] = {
    "native": (None, 1),  # MNIST 28x28, CIFAR-10 32x32 (docs/papers/fedcluster.md R2, no crop)
    "crop28": (28, 1),  # the paper's AlexNet input (docs/papers/fedcluster.md R2); a no-op on MNIST
    "crop28_pool2": (28, 2),  # FedCluster's reduced-scale 14x14 input (docs/papers/fedcluster.md R22)
    "pool2": (None, 2),  # DeFedAvg's reduced scales: 14x14 FMNIST, 3x16x16 CIFAR-10 (docs/papers/defedavg.md R28)
    "tdcd": (None, 1),  # TDCD full scale: 3x32x32, halves 3x32x16
    "tdcd_pool2": (None, 2),  # TDCD reduced profile: 3x16x16, halves 3x16x8
}
# CIFAR-10's per-channel mean and std of x / 255 as the TDCD authors normalise (docs/papers/tdcd.md R16).
CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.247, 0.243, 0.261)
# Views standardised with fixed statistics (of x / 255) rather than the training set's.
FIXED_STATS: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    view: (CIFAR_MEAN, CIFAR_STD) for view in ("tdcd", "tdcd_pool2")
}


# a view's name, as the workflow's pattern (rule view) and filled in by view_name
VIEW_NAME = "{dataset}-{view}"


def view_name(dataset: str, view: str) -> str:
    """The name of a view's file, data/prepared/<name>.npz (also its key in the engine's data)."""
    if view not in VIEWS:
        raise DataError(f"unknown input view {view!r}; allowed: {', '.join(VIEWS)}")
    return VIEW_NAME.format(dataset=dataset, view=view)


def view_images(images: np.ndarray, view: str) -> np.ndarray:
    """uint8 (N, H, W) or (N, H, W, C) -> float32 (N, C, h, w), cropped and pooled (not standardised)."""
    crop, pool = VIEWS[view]
    x = images[..., None] if images.ndim == 3 else images
    n, h, w, c = x.shape
    if crop is not None:
        if crop > min(h, w):
            raise DataError(f"view {view!r}: crop {crop} is larger than the {h}x{w} images")
        top, left = (h - crop) // 2, (w - crop) // 2
        x = x[:, top : top + crop, left : left + crop]
        h = w = crop
    x = x.astype(np.float32)
    if pool > 1:
        if h % pool or w % pool:
            raise DataError(f"view {view!r}: {h}x{w} images do not split into {pool}x{pool} blocks")
        x = x.reshape(n, h // pool, pool, w // pool, pool, c).mean(axis=(2, 4))
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def make_view(arrays: dict[str, np.ndarray], view: str) -> dict[str, np.ndarray]:
    """x_train/x_test float32 (N, C, h, w) standardised per channel with the training set's mean and
    std, or the view's FIXED_STATS (also returned, float64, in units of the 0-255 pixels), y_train/y_test
    as prepared."""
    x_train, x_test = view_images(arrays["x_train"], view), view_images(arrays["x_test"], view)
    if view in FIXED_STATS:
        mean, std = (255 * np.array(stat, dtype=np.float64) for stat in FIXED_STATS[view])
        if len(mean) != x_train.shape[1]:
            raise DataError(f"view {view!r} standardises {len(mean)} channels; these images have {x_train.shape[1]}")
    else:
        mean = x_train.mean(axis=(0, 2, 3), dtype=np.float64)
        std = x_train.std(axis=(0, 2, 3), dtype=np.float64)
    shift, scale = mean.astype(np.float32)[:, None, None], std.astype(np.float32)[:, None, None]
    return {
        "x_train": (x_train - shift) / scale, "y_train": arrays["y_train"],
        "x_test": (x_test - shift) / scale, "y_test": arrays["y_test"],
        "mean": mean, "std": std,
    }


def prepare_view(prepared: Path, view: str, out_path: Path) -> Path:
    """data/prepared/<dataset>.npz -> out_path (.npz, uncompressed, written atomically)."""
    arrays = make_view(load_prepared(Path(prepared)), view)
    atomic.write_npz(out_path, arrays, compressed=False)
    return Path(out_path)
