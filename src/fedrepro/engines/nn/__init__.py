"""Neural-network federated learning: flat-parameter models, local optimizers, client training
backends (loop and vectorized) and evaluation."""

from __future__ import annotations

from fedrepro.engines.nn.clients import BACKENDS, DeviceData, LocalTrainer, Streams
from fedrepro.engines.nn.evaluate import evaluate, pooled_train_set
from fedrepro.engines.nn.flat import FlatModel
from fedrepro.engines.nn.optim import OPTIMIZERS, LocalOptimizer

__all__ = [
    "BACKENDS", "OPTIMIZERS", "DeviceData", "FlatModel", "LocalOptimizer", "LocalTrainer", "Streams", "evaluate",
    "pooled_train_set",
]
