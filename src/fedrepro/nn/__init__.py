"""The client layer for neural networks: flat-parameter models, injected losses, local optimizers,
client training backends (loop and vectorized) and evaluation. Algorithms and engines both build on
it; it imports neither."""

from __future__ import annotations

from fedrepro.nn.clients import BACKENDS, DeviceData, LocalTrainer, Streams
from fedrepro.nn.evaluate import evaluate, pooled_train_set
from fedrepro.nn.flat import FlatModel
from fedrepro.nn.losses import CROSS_ENTROPY, CrossEntropy, Loss
from fedrepro.nn.optim import OPTIMIZERS, LocalOptimizer

__all__ = [
    "BACKENDS", "CROSS_ENTROPY", "OPTIMIZERS", "CrossEntropy", "DeviceData", "FlatModel", "LocalOptimizer",
    "LocalTrainer", "Loss", "Streams", "evaluate", "pooled_train_set",
]
