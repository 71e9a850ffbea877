"""Tiny federated image problems for the neural-network engine tests (float64 unless a test says)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fedrepro.nn import DeviceData, FlatModel, LocalOptimizer, LocalTrainer
from fedrepro.seeding import torch_generator
from fedrepro.models import build_model

N_POOL, N_DEVICES, PER_DEVICE = 120, 24, 12
# The vectorized backend's paths: closed-form MLP, and on the CPU grouped conv nets (nn/convnets.py) with
# LRN and 3x3/2 max-pool (AlexNet's layers) and without padding, 2x2 max-pool (DeFedAvg's CNN).
SHAPES = {"mlp": (1, 6, 6), "cnn_tiny": (1, 8, 8), "cnn_defedavg_tiny": (1, 16, 16)}


def make_streams(*key: object):
    """The runner's protocol: streams(purpose, round, client=None) -> a fresh generator."""
    return lambda purpose, rnd, client=None: torch_generator("tests/nn", *key, purpose, rnd, client)


@dataclass
class Problem:
    model: torch.nn.Module
    data: DeviceData
    W0: torch.Tensor

    def trainer(self, opt: str = "sgd", lr: float = 0.05, steps: int = 3, batch: int = 4, backend: str = "loop"):
        return LocalTrainer(self.model, self.data, LocalOptimizer(opt, lr), steps, batch, backend)

    @property
    def flat(self) -> FlatModel:
        return FlatModel(self.model)


def make_problem(model: str = "mlp", dtype: torch.dtype = torch.float64, seed: int = 0) -> Problem:
    gen = torch.Generator().manual_seed(seed)
    shape = SHAPES[model]
    images = torch.randn(N_POOL, *shape, generator=gen, dtype=dtype)
    labels = torch.randint(0, 10, (N_POOL,), generator=gen)
    table = torch.stack([torch.randperm(N_POOL, generator=gen)[:PER_DEVICE] for _ in range(N_DEVICES)])
    torch.manual_seed(seed)
    module = build_model(model, shape, 10).to(dtype)
    return Problem(module, DeviceData(images, labels, table), FlatModel(module).flatten())
