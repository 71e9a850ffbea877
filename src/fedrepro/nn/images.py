"""A prepared image view on the compute device."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor


def images_on(arrays: dict[str, np.ndarray], device: str) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(train images, train labels, test images, test labels) of a prepared view (x_train, y_train,
    x_test, y_test), moved to `device` once: the algorithms never copy between CPU and GPU per step."""
    def on(a: np.ndarray) -> Tensor:
        return torch.from_numpy(np.ascontiguousarray(a)).to(device)

    return on(arrays["x_train"]), on(arrays["y_train"]).long(), on(arrays["x_test"]), on(arrays["y_test"]).long()


class ImageData:
    """What an image engine's run environment starts from: its spec, the view's images and labels on the compute
    device (the labels also as the array the partitions read) and `key`, the key of its data streams (the engine's:
    numerics.py KEYING)."""

    def __init__(self, spec: dict[str, Any], arrays: dict[str, np.ndarray], device: str, key: str) -> None:
        self.spec, self.device = spec, device
        self.labels_np = arrays["y_train"]
        self.images, self.labels, self.test_images, self.test_labels = images_on(arrays, device)
        self.key = key
