"""A tiny run of each engine for every method the registry holds: the settings any of the engine's methods reads
and the env and streams the engine builds them from (algorithms/__init__.py METHODS).

One entry per engine, none per method: a method added to the registry is built from its engine's settings here,
and a setting it reads that they lack stops the shape test with a KeyError naming it."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from algorithms_testdata import M, N_CLIENTS, synthetic_data
from fedrepro.algorithms.asynchronous import Fleet
from fedrepro.algorithms.fedcluster import Devices
from fedrepro.algorithms.fedvr import Runs
from fedrepro.algorithms.tdcd import Tiers
from fedrepro.engines.asynchronous import trace_of
from fedrepro.models import seeded_model
from fedrepro.nn import DeviceData
from fedrepro.nn.silos import StateLayout
from fedrepro.objectives import make_problem
from fedrepro.objectives.least_squares import LeastSquaresProblem
from fedrepro.seeding import numpy_rng, torch_generator

Env = tuple[dict[str, Any], Any, Callable[..., Any]]  # (settings, env, streams)


def _streams(*key: object) -> Callable[..., torch.Generator]:
    """streams(purpose, round, client=None) of one seed (the finite-sum, network and async engines')."""
    return lambda purpose, r, client=None: torch_generator("tests/method_envs", *key, purpose, r, client)


def _images(n_pool: int, n_devices: int, per_device: int) -> tuple[torch.nn.Module, DeviceData]:
    gen = torch.Generator().manual_seed(0)
    images = torch.randn(n_pool, 1, 6, 6, generator=gen)
    labels = torch.randint(0, 10, (n_pool,), generator=gen)
    table = torch.stack([torch.randperm(n_pool, generator=gen)[:per_device] for _ in range(n_devices)])
    return seeded_model("mlp", (1, 6, 6), 10, "tests/method_envs"), DeviceData(images, labels, table)


# The settings any finite-sum method reads, for one run (each reads its own: eta_tilde split its way, its minibatch
# sizes): the shape test's and the finite-sum protocol tests' (test_algorithm_protocol.py)
FINITE_SUM = {"eta_tilde": 0.2, "K": 4, "c_l": 1.0, "S": 5, "b": 3, "b1": "full", "b2": "full", "b3": 1, "p": 0.3}


def finite_sum(name: str) -> Env:
    X, y = synthetic_data()
    problem = make_problem("logistic_nonconvex", X, y, n_clients=N_CLIENTS, samples_per_client=M)
    return dict(FINITE_SUM), problem, _streams("finite_sum")


def monte_carlo(name: str) -> Env:
    gen = torch.Generator().manual_seed(0)
    problem = LeastSquaresProblem.from_data(torch.rand(4, 6, 3, generator=gen, dtype=torch.float64),
                                            torch.rand(4, 6, generator=gen, dtype=torch.float64))
    spec = {"rounds": 2, "S": 2, "M": 2, "delta": 0.1, "agents_per_round": 2}
    return spec, Runs(problem, 2), lambda purpose, mc, k: torch_generator("tests/method_envs", purpose, mc, k)


def federated_nn(name: str) -> Env:
    module, data = _images(60, 12, 6)
    devices = Devices(module, data, "loop", lambda: torch.arange(12).view(2, 6))
    spec = {"local_opt": "sgd", "momentum": 0.0, "betas": [0.9, 0.999], "eps": 1e-8, "mu": 0.0, "E": 2, "B": 3,
            "frac": 0.5, "n_devices": 12, "M": 2, "cluster_order": "reshuffle", "fc_lr_rule": "div_M",
            "lr_fedavg": 0.1, "lr_csgd": 0.05, "csgd_batch": 6}
    return spec, devices, _streams("federated_nn")


def asynchronous(name: str) -> Env:
    """K = 1 at local rate 1 and global rate 1: settings every asynchronous method accepts (AsySG sends one
    gradient, FAVANO has no global rate). The trace is the method's own protocol's."""
    module, data = _images(60, 6, 8)
    spec = {"paper": "tests", "dataset": "fashion_mnist", "n_clients": 6, "n": 3, "K": 1, "B": 4, "lr_global": 1.0,
            "lr_local": 1.0, "rounds": 2, "flops_per_iteration": 1.0e6, "model_bytes": 1.0e5, "fastest_flops": 1.0e9,
            "speed_model": "literal", "speed_range": [1.0, 4.0], "link_bps": 1.0e8, "compute_time_scale": 1.0,
            "algorithm": name}
    return spec, Fleet(module, data, "loop", trace_of(spec, 0)), _streams("async")


def vertical(name: str) -> Env:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(16, 6, generator=gen)
    layouts = [StateLayout(seeded_model("mlp", (3,), 2, "tests/method_envs", j, hidden=4)) for j in range(2)]
    owners = [torch.arange(16) % 2, torch.arange(16) // 8]
    tiers = Tiers(layouts, [x[:, :3], x[:, 3:]], torch.randint(0, 2, (16,), generator=gen), owners, [2, 2], "loop")
    spec = {"lr": 0.1, "Q": 2, "B": 4}
    return spec, tiers, lambda purpose, r: numpy_rng("tests/method_envs", purpose, r)


ENVS: dict[str, Callable[[str], Env]] = {"finite_sum": finite_sum, "monte_carlo": monte_carlo,
                                      "federated_nn": federated_nn, "async": asynchronous, "vertical": vertical}


def env_for(engine: str, name: str) -> Env:
    """The settings, env and streams of `engine` for its method `name`."""
    spec, env, streams = ENVS[engine](name)
    return {**spec, "algorithm": name}, env, streams


def same(a: Any, b: Any) -> bool:
    """Bitwise equality of two method states (tensors, arrays, numbers, None, in dicts and lists)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b)
    return a == b
