"""Plain MLPs: Flatten -> Linear (-> ReLU -> Linear)*.

The default (d -> 64 -> 10, ReLU) is the reduced scales' MLP (docs/papers/fedcluster.md R24, defedavg.md
R28); hidden=(200, 200) is the two-hidden-layer MNIST MLP (784 -> 200 -> 200 -> 10, the "2NN" of McMahan et al.).
"""

from __future__ import annotations

import math

from torch import nn


class MLP(nn.Sequential):
    def __init__(self, in_shape: tuple[int, ...], n_classes: int, hidden: int | tuple[int, ...] = 64) -> None:
        widths = [math.prod(in_shape), *((hidden,) if isinstance(hidden, int) else hidden), n_classes]
        layers: list[nn.Module] = [nn.Flatten(), nn.Linear(widths[0], widths[1])]
        for a, b in zip(widths[1:-1], widths[2:]):
            layers += [nn.ReLU(), nn.Linear(a, b)]
        super().__init__(*layers)
