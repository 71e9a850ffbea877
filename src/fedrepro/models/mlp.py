"""One-hidden-layer MLP, the reduced-scale model of the FedCluster spec (§6.2: d -> 64 -> 10, ReLU)."""

from __future__ import annotations

import math

from torch import nn


class MLP(nn.Sequential):
    def __init__(self, in_shape: tuple[int, ...], n_classes: int, hidden: int = 64) -> None:
        super().__init__(nn.Flatten(), nn.Linear(math.prod(in_shape), hidden), nn.ReLU(), nn.Linear(hidden, n_classes))
