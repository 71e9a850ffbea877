"""Neural networks chosen by name in the config; inputs are (N, C, H, W) float tensors."""

from __future__ import annotations

from functools import partial
from typing import Callable

import torch
from torch import nn

from fedrepro.models.alexnet import SmallAlexNet
from fedrepro.models.cnn import TwoConvCNN
from fedrepro.models.cnn_s2 import StridedCNN
from fedrepro.models.lstm import SiloLSTM
from fedrepro.models.mlp import MLP
from fedrepro.models.resnet import ResNet18Cifar, ResNet18ImageNet
from fedrepro.seeding import derive_seed

MODELS: dict[str, Callable[..., nn.Module]] = {
    "alexnet": SmallAlexNet,  # FedCluster's paper scale (docs/papers/fedcluster.md R1)
    "mlp": MLP,  # reduced scales (docs/papers/fedcluster.md R24, defedavg.md R28)
    "mlp2": partial(MLP, hidden=(200, 200)),  # two hidden layers, 784-200-200-10 on MNIST
    "cnn_tiny": partial(SmallAlexNet, channels=(8, 16), hidden=(64, 32)),  # docs/papers/fedcluster.md R22
    # DeFedAvg (docs/papers/defedavg.md R6, R28). Its reduced-scale `mlp_small` is "mlp" on the "pool2" input view.
    "cnn_defedavg": TwoConvCNN,
    "cnn_defedavg_tiny": partial(TwoConvCNN, channels=(8, 16), hidden=64),
    # TDCD silo models (docs/papers/tdcd.md R7, R23): reduced scale cnn_s2 / lstm (option hidden) / mlp (option
    # hidden); paper scale the two ResNet18 stems, with BatchNorm
    "cnn_s2": StridedCNN,
    "lstm": SiloLSTM,
    "resnet18_cifar": ResNet18Cifar,
    "resnet18_imagenet": ResNet18ImageNet,
}


def build_model(name: str, in_shape: tuple[int, ...], n_classes: int, **options: object) -> nn.Module:
    """A freshly initialised model; seed torch beforehand (or load W0) for a reproducible init. `options`
    go to the model's constructor (e.g. the hidden width of `lstm` and `mlp`)."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; expected one of {sorted(MODELS)}")
    return MODELS[name](tuple(in_shape), n_classes, **options)


def seeded_model(name: str, in_shape: tuple[int, ...], n_classes: int, *seed_parts: object,
                 **options: object) -> nn.Module:
    """build_model initialised from a seed derived from `seed_parts` alone, on the CPU (so the initial
    weights depend neither on the device nor on torch's global generator, which is left untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(*seed_parts))
        return build_model(name, in_shape, n_classes, **options)


__all__ = ["MLP", "MODELS", "ResNet18Cifar", "ResNet18ImageNet", "SiloLSTM", "SmallAlexNet", "StridedCNN", "TwoConvCNN",
           "build_model", "seeded_model"]
