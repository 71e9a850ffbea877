"""The small AlexNet of Zhang et al. (ICLR 2017), the model FedCluster cites as [42] (paper §IV-A;
docs/papers/fedcluster.md R1).

Two (conv 5x5 -> ReLU -> max-pool 3x3/2 -> LRN) modules, then fully connected layers 384 -> 192 ->
classes. With the default widths on a 3x28x28 input it has 1,387,786 parameters, the count [42]
reports. Narrower widths give the quick scale's `cnn_tiny` (docs/papers/fedcluster.md R22).
"""

from __future__ import annotations

from torch import nn


def _pooled(size: int) -> int:
    """Spatial size after MaxPool2d(3, stride=2, padding=1): ceil(size / 2)."""
    return (size + 2 - 3) // 2 + 1


class SmallAlexNet(nn.Sequential):
    def __init__(
        self,
        in_shape: tuple[int, int, int],
        n_classes: int,
        channels: tuple[int, int] = (64, 64),
        hidden: tuple[int, int] = (384, 192),
    ) -> None:
        c, h, w = in_shape
        # TF lrn(depth_radius=4, bias=1, alpha=1e-3/9, beta=0.75) as used by [42]: PyTorch divides
        # alpha by the window size itself.
        lrn = dict(size=9, alpha=1e-3, beta=0.75, k=1.0)
        flat = channels[1] * _pooled(_pooled(h)) * _pooled(_pooled(w))
        super().__init__(
            nn.Conv2d(c, channels[0], 5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2, padding=1),
            nn.LocalResponseNorm(**lrn),
            nn.Conv2d(channels[0], channels[1], 5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2, padding=1),
            nn.LocalResponseNorm(**lrn),
            nn.Flatten(),
            nn.Linear(flat, hidden[0]), nn.ReLU(),
            nn.Linear(hidden[0], hidden[1]), nn.ReLU(),
            nn.Linear(hidden[1], n_classes),
        )
