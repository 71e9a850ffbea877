"""TDCD's reduced-scale silo CNN (docs/papers/tdcd.md R23): conv3x3 stride 2 (C -> 8) ReLU, conv3x3 stride 2
(8 -> 16) ReLU, flatten, Linear(-> out). No pooling and no BatchNorm, so the clients of a silo train as
one grouped convolution (nn/convnets.py) on the vectorized backend. A 3x16x8 half-image flattens to 16 x
4 x 2 = 128, a 1x16x16 view to 16 x 4 x 4 = 256.
"""

from __future__ import annotations

from torch import nn


def _strided(size: int) -> int:
    """Spatial size after Conv2d(3, stride=2, padding=1): ceil(size / 2)."""
    return (size + 2 - 3) // 2 + 1


class StridedCNN(nn.Sequential):
    def __init__(self, in_shape: tuple[int, int, int], n_classes: int, channels: tuple[int, int] = (8, 16)) -> None:
        c, h, w = in_shape
        flat = channels[1] * _strided(_strided(h)) * _strided(_strided(w))
        super().__init__(
            nn.Conv2d(c, channels[0], 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(channels[0], channels[1], 3, stride=2, padding=1), nn.ReLU(),
            nn.Flatten(),
            nn.Linear(flat, n_classes),
        )
