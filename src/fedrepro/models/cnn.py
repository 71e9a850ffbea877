"""The DeFedAvg paper's CNN (paper §4.1.1; docs/papers/defedavg.md R6): two (conv 5x5, no padding -> ReLU ->
max-pool 2x2) blocks, then fully connected flatten -> hidden -> ReLU -> classes.

The paper gives only "two 5x5 convolutional layers ... 2x2 max pooling ... two fully connected
layers with latent dimensions 1600 and 512"; 32/64 channels reproduce its FLOP counts and model
size (582,026 parameters on 1x28x28, 878,538 on 3x32x32; 64*5*5 = 1600 on CIFAR-10). Narrower
widths give the reduced-scale variant with the same topology (a reduced-scale option,
docs/papers/defedavg.md R28).
"""

from __future__ import annotations

from torch import nn


def _after_block(size: int) -> int:
    """Spatial size after Conv2d(5, padding=0) then MaxPool2d(2)."""
    return (size - 4) // 2


class TwoConvCNN(nn.Sequential):
    def __init__(
        self,
        in_shape: tuple[int, int, int],
        n_classes: int,
        channels: tuple[int, int] = (32, 64),
        hidden: int = 512,
    ) -> None:
        c, h, w = in_shape
        fh, fw = _after_block(_after_block(h)), _after_block(_after_block(w))
        if fh < 1 or fw < 1:
            raise ValueError(f"input {h}x{w} is too small for two conv5 + pool2 blocks (need at least 16x16)")
        super().__init__(
            nn.Conv2d(c, channels[0], 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(channels[0], channels[1], 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(channels[1] * fh * fw, hidden), nn.ReLU(),
            nn.Linear(hidden, n_classes),
        )
