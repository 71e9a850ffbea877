"""Neural-network federated learning on image partitions: FedCluster, FedAvg and centralized SGD
(the `fedcluster` paper; docs/papers/fedcluster.md).

A run is one configuration; its seeds train one after the other. Everything a seed needs is a pure
function of (spec, seed), so a run resumes exactly from a checkpoint and results do not depend on
job order:
- the device partition (data/partitions.py) comes from a generator keyed by the partition settings
  (numerics.py KEYING) and the seed only, so FedAvg, FedCluster (any M or clustering), centralized SGD
  and every local optimizer of one seed train on the same devices, so comparisons are paired (docs/papers/fedcluster.md
  R3); run.json records a hash of each seed's partition;
- the clusters from a generator keyed by the environment, the clustering and the seed;
- W0 from the (dataset, view, model, seed) alone: "All experiments with a given model and dataset
  are initialized at the same point" (paper §IV-A), whatever rho_device;
- activations and minibatches from the framework's streams keyed by the environment too (as in
  engines/monte_carlo.py), so e.g. FedAvg with SGD and with Adam see the same devices and batches.
The partition is built inside the job rather than by a separate rule: it is cheap (well under a
second at the paper's 1000 x 500) and deterministic, and one file per (partition, seed) would add
many small jobs and files for nothing a reviewer cannot get from the recorded hash.

Data are moved to the compute device once; the algorithms never copy between CPU and GPU per step.
Every `eval_every` rounds (and at the last) the server model is evaluated: train loss/accuracy on
the pooled device data (objective (P): each device slot counts once; optionally a fixed subsample of
slots, `train_eval_subsample`) and test loss/accuracy on the full test set (docs/papers/fedcluster.md R16).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
import torch

from fedrepro.algorithms import method
from fedrepro.algorithms.fedcluster import Devices
from fedrepro.algorithms.method import restore
from fedrepro.data.partitions import device_partition, random_clusters, rho_cluster_clusters
from fedrepro.data.registry import get_dataset
from fedrepro.nn import DeviceData, FlatModel, pooled_train_set
from fedrepro.nn.evaluate import SideStream, evaluate_on_device, floats
from fedrepro.nn.clients import client_backend
from fedrepro.nn.images import ImageData
from fedrepro.engines.context import RunContext
from fedrepro.engines.contract import Engine, Limit, Row, Setup, Trainer, setting_limit
from fedrepro.utils.digest import array_digest
from fedrepro.seeding import numpy_rng, torch_generator
from fedrepro.models import seeded_model
from fedrepro.numerics import keying

COLUMNS = ["seed", "round", "train_loss", "train_accuracy", "test_loss", "test_accuracy", "samples", "updates",
           "clients"]
# The device types on which a seed's evaluation runs on a side stream, beside the next round's training (nn/evaluate.py
# SideStream: the same kernels, so the same floats; the driver reads the rows after that round). None yet: on CUDA it
# is a candidate until measured against the baseline (benchmarks/gpu_throughput.py, `evaluation_overlapped`).
OVERLAPPED_EVALUATION: set[str] = set()
# The `clustering`s by which Environment.for_seed draws FedCluster's clusters (data/partitions.py random_clusters,
# rho_cluster_clusters)
CLUSTERINGS = ("random", "rho_cluster")


@dataclasses.dataclass
class SeedSetup:
    """What one seed trains on: devices, the clusters a method asks for (FedCluster), the fixed train-loss slots
    and what run.json records of them."""

    data: DeviceData
    draw_clusters: Callable[[], np.ndarray]
    eval_index: torch.Tensor
    eval_weights: torch.Tensor
    record: dict[str, Any]

    def clusters(self) -> torch.Tensor:
        """The seed's clusters, drawn when a method asks for them (its hash then goes into run.json)."""
        clusters = self.draw_clusters()
        self.record["clusters_sha256"] = array_digest(clusters)
        return torch.from_numpy(clusters)


class Environment(ImageData):
    """The run's data on the compute device and the per-seed pieces built from it."""

    def __init__(self, spec: dict[str, Any], arrays: dict[str, np.ndarray], device: str) -> None:
        super().__init__(spec, arrays, device, keying("federated_nn").key(spec))

    def model(self, seed: int) -> torch.nn.Module:
        """The model on the device, its parameters W0, the same for every run of (dataset, view, model, seed).
        Initialised on the CPU, so W0 does not depend on the device either."""
        spec = self.spec
        return seeded_model(spec["model"], tuple(self.images.shape[1:]), spec["n_classes"],
                            "W0", spec["dataset"], spec["view"], spec["model"], seed).to(self.device)

    def for_seed(self, seed: int, W0: torch.Tensor) -> SeedSetup:
        spec = self.spec
        table, majors = device_partition(
            self.labels_np, n_devices=spec["n_devices"], samples_per_device=spec["samples_per_device"],
            rho_device=spec["rho_device"], n_classes=spec["n_classes"], remainder=spec["remainder"],
            rng=numpy_rng("partition", self.key, seed), return_majors=True,
        )

        def draw_clusters() -> np.ndarray:
            rng = numpy_rng("clusters", self.key, spec["clustering"], spec["M"], spec.get("rho_cluster"), seed)
            return (random_clusters(spec["n_devices"], spec["M"], rng) if spec["clustering"] == "random"
                    else rho_cluster_clusters(majors, spec["M"], spec["rho_cluster"], rng))

        table_t = torch.from_numpy(table).to(self.device)
        gen = torch_generator("train_eval", self.key, seed, device=self.device)
        index, weights = pooled_train_set(table_t, spec["train_eval_subsample"], gen)
        record = {"partition_sha256": array_digest(table), "W0_sha256": array_digest(W0.cpu().numpy())}
        return SeedSetup(DeviceData(self.images, self.labels, table_t), draw_clusters, index, weights, record)


class NetworkTrainer(Trainer):
    """One seed: its devices, clusters and W0, the algorithm and the server model W."""

    def __init__(self, setup: NetworkSetup, seed: int) -> None:
        super().__init__([seed])
        spec, env = setup.spec, setup.env
        module = env.model(seed)
        self.flat = FlatModel(module)  # the server model's forward, for evaluation
        self.env, self.seed_setup = env, env.for_seed(seed, self.flat.flatten())
        streams = setup.ctx.streams(seed)
        devices = Devices(module, self.seed_setup.data, setup.backend, self.seed_setup.clusters)
        self.algo = setup.method.build(spec, devices, streams)
        setup.summary["n_params"] = self.flat.n_params
        self.W = self.algo.init()
        self.counters = {"samples": 0, "updates": 0, "clients": 0}
        self.info[seed].update(self.seed_setup.record)
        self.overlaps_evaluation = self.W.device.type in OVERLAPPED_EVALUATION
        self._side = SideStream(self.W.device)

    def advance(self, r: int) -> None:
        self.W, info = self.algo.round(self.W, r)
        for key in self.counters:
            self.counters[key] += int(info[key])

    def evaluate(self, r: int) -> list[Row]:
        return self._rows(r, floats(self._means(self.W)), self.counters)

    def launch_evaluation(self, r: int) -> Callable[[], list[Row]]:
        if not self.overlaps_evaluation:
            return super().launch_evaluation(r)
        means, counters = self._side.launch(self._means, self.W), dict(self.counters)
        return lambda: self._rows(r, means(), counters)

    def _means(self, W: torch.Tensor) -> dict[str, torch.Tensor]:
        flat, env, seed_setup = self.flat, self.env, self.seed_setup
        train = evaluate_on_device(flat, W, env.images, env.labels, seed_setup.eval_index, seed_setup.eval_weights)
        test = evaluate_on_device(flat, W, env.test_images, env.test_labels)
        return {"train_loss": train["loss"], "train_accuracy": train["accuracy"], "test_loss": test["loss"],
                "test_accuracy": test["accuracy"]}

    def _rows(self, r: int, means: dict[str, float], counters: dict[str, int]) -> list[Row]:
        return [{"seed": self.seeds[0], "round": r, **means, **counters}]

    def state_dict(self) -> dict[str, Any]:
        return {"W": self.W, "counters": dict(self.counters)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.W, self.counters = restore(state["W"], self.W), dict(state["counters"])


class NetworkSetup(Setup):
    columns = COLUMNS

    def __init__(self, spec: dict[str, Any], arrays: dict[str, np.ndarray], ctx: RunContext) -> None:
        self.spec, self.ctx = spec, ctx
        self.env = Environment(spec, arrays, ctx.device)
        self.backend = client_backend(spec["backend"], spec["model"], ctx.device)
        self.method = method("federated_nn", spec["algorithm"])
        self.summary = {"backend": self.backend, "lr": self.method.rate(spec)}
        ctx.log.info("backend %s, lr %g, %d training images of shape %s", self.backend, self.summary["lr"],
                     len(self.env.labels), tuple(self.env.images.shape[1:]))

    def start(self, seeds: list[int]) -> Trainer:
        (seed,) = seeds
        return NetworkTrainer(self, seed)


class NetworkEngine(Engine):
    name = "federated_nn"
    schema = "federated_nn_run.schema.yaml"
    metrics = tuple(COLUMNS[2:])
    watch = "train_loss"
    trains_networks = True
    ms_per_round = 5000  # the paper scale's AlexNet on a GPU, ~3 s a round; the quick MLP takes ~0.1 s

    def limits(self, spec: dict[str, Any]) -> list[Limit]:
        # a device's images are distinct, but devices may share images (docs/papers/fedcluster.md R5): no N x M bound
        rows = get_dataset(spec["dataset"]).rows
        return ([Limit("samples_per_device", spec["samples_per_device"], rows, f"the rows of {spec['dataset']}")]
                + setting_limit(spec, "M", "n_devices") + setting_limit(spec, "B", "samples_per_device"))

    def setup(self, spec, arrays, ctx) -> Setup:
        return NetworkSetup(spec, arrays, ctx)

    def describe(self, row: Row) -> str:
        return f"train loss {row['train_loss']:.4f}, test accuracy {row['test_accuracy']:.4f}"
