"""ResNet18 for TDCD's paper scale (paper §5.1; docs/papers/tdcd.md R6, R7), written here (no torchvision).

- CIFAR stem (kuangliu-style, as the authors' models/resnet2.py): conv3x3(C -> 64, stride 1) + BN +
  ReLU, BasicBlock layers [2, 2, 2, 2] of widths 64/128/256/512 and strides 1/2/2/2, then
  avg_pool2d(2), flatten, Linear. On a 3x32x16 half-image layer4 gives 512x4x2, pooled 512x2x1: 1024 ->
  10, about 11.18M parameters.
- ImageNet stem (torchvision's resnet18): conv7x7 stride 2 + BN + ReLU + maxpool 3x3 stride 2, the same
  layers, global average pooling, Linear(512, out): out = 40 for ModelNet40 (our default, docs/papers/tdcd.md R6) or
  1000 (the authors' code, torchvision's default head).
Both have BatchNorm: each client keeps its own running statistics; the clients train on the loop backend (`auto`),
or as one vmapped computation with `backend: vectorized` (nn/batchnorm_silo.py).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn


class BasicBlock(nn.Module):
    def __init__(self, inputs: int, width: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, width, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.shortcut = nn.Sequential()
        if stride != 1 or inputs != width:
            self.shortcut = nn.Sequential(nn.Conv2d(inputs, width, 1, stride=stride, bias=False), nn.BatchNorm2d(width))

    def forward(self, x: Tensor) -> Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


def _layers(widths: tuple[int, ...] = (64, 128, 256, 512), strides: tuple[int, ...] = (1, 2, 2, 2)) -> nn.Sequential:
    blocks, inputs = [], widths[0]
    for width, stride in zip(widths, strides):
        blocks.append(nn.Sequential(BasicBlock(inputs, width, stride), BasicBlock(width, width, 1)))
        inputs = width
    return nn.Sequential(*blocks)


class ResNet18Cifar(nn.Module):
    def __init__(self, in_shape: tuple[int, int, int], n_classes: int) -> None:
        super().__init__()
        c, h, w = in_shape
        pooled = (h // 8 // 2, w // 8 // 2)  # layer4 is 1/8 of the input, then the 2x2 average pool
        if min(pooled) < 1:
            raise ValueError(f"input {h}x{w} is too small for the CIFAR ResNet18 (need sides of at least 16)")
        self.conv1 = nn.Conv2d(c, 64, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.layers = _layers()
        self.linear = nn.Linear(512 * pooled[0] * pooled[1], n_classes)

    def forward(self, x: Tensor) -> Tensor:
        out = self.layers(F.relu(self.bn1(self.conv1(x))))
        return self.linear(F.avg_pool2d(out, 2).flatten(1))


class ResNet18ImageNet(nn.Module):
    def __init__(self, in_shape: tuple[int, int, int], n_classes: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_shape[0], 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.layers = _layers()
        self.fc = nn.Linear(512, n_classes)

    def forward(self, x: Tensor) -> Tensor:
        out = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, stride=2, padding=1)
        return self.fc(F.adaptive_avg_pool2d(self.layers(out), 1).flatten(1))
