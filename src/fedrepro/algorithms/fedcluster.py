"""FedCluster (Algorithm 1), FedAvg and centralized SGD for neural networks (FedCluster paper §II-III,
§IV-A; docs/papers/fedcluster.md R6-R15).

Each method is a Method (algorithms/method.py) over the server state, the flat parameter vector W (P,):
init() is the model's W0 and `round(W, rnd) -> (W', info)` a pure function of (W, rnd): all randomness
comes from named streams, so a run resumes exactly from any round. Local training and its backend live in
`LocalTrainer`; these classes only decide who trains, from where, and how results are merged. Each is built by
`build(spec, devices, streams)` (the registry's one signature, algorithms/__init__.py) and declares what it
reads of a run's settings (`rate`); FedCluster asks the seed's `Devices` for its clusters, the others never do.

Stream keys: ("cluster_order", rnd), ("activate", rnd, cluster), ("batches", rnd, device) inside the
trainer, and ("csgd", rnd) for centralized SGD.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import Tensor

from fedrepro.nn import DeviceData, LocalOptimizer, LocalTrainer, Streams
from fedrepro.sampling import sample_clients

CLUSTER_ORDERS = ("reshuffle", "fixed")


# FedCluster's rate from FedAvg's: over M (the reason paper §IV-A gives for its / 10 at M = 10), over 10 at every
# M (the one rate the paper states), or FedAvg's own
FC_LR_RULES = {"div_M": lambda lr, M: lr / M, "div_10": lambda lr, M: lr / 10, "fixed": lambda lr, M: lr}


def fedcluster_lr(lr_fedavg: float, M: int, rule: str = "div_M") -> float:
    """The FedCluster rate by `rule` (FC_LR_RULES; docs/papers/fedcluster.md R14)."""
    if rule not in FC_LR_RULES:
        raise ValueError(f"unknown fc_lr_rule {rule!r}; expected one of {', '.join(FC_LR_RULES)}")
    return FC_LR_RULES[rule](lr_fedavg, M)


@dataclass(frozen=True)
class Devices:
    """What a network method trains on for one seed (the federated_nn engine's env): the model (its parameters are
    W0), the devices' data on the compute device, the client backend, and the seed's clusters, drawn when a method
    asks for them (FedCluster; docs/papers/fedcluster.md R4)."""

    module: torch.nn.Module
    data: DeviceData
    backend: str
    clusters: Callable[[], Tensor]


def local_trainer(spec: dict[str, Any], devices: Devices, lr: float) -> LocalTrainer:
    """The federated methods' local training: the run's optimizer at rate `lr`, E steps of B samples."""
    opt = LocalOptimizer(spec["local_opt"], lr, momentum=spec["momentum"], betas=tuple(spec["betas"]),
                         eps=spec["eps"], mu=spec["mu"])
    return LocalTrainer(devices.module, devices.data, opt, spec["E"], spec["B"], devices.backend)


class FedCluster:
    """Every round cycles through the M clusters (a fresh random order each round by default, as in
    the analysis; `fixed` = 0..M-1 as drawn in Fig. 1). In each cycle round(frac * cluster size)
    devices of the cluster, drawn without replacement, train locally from W, and W becomes their
    mean: with equal data sizes that is Algorithm 1's aggregation normalised over the active devices
    (docs/papers/fedcluster.md R7). So each device is active at most once per round and W is updated M times."""

    @staticmethod
    def rate(spec: dict[str, Any]) -> float:
        """lr_fedavg by `fc_lr_rule` (FC_LR_RULES: / M by default, docs/papers/fedcluster.md R14)."""
        return fedcluster_lr(float(spec["lr_fedavg"]), int(spec["M"]), spec["fc_lr_rule"])

    @classmethod
    def build(cls, spec: dict[str, Any], devices: Devices, streams: Streams) -> FedCluster:
        trainer = local_trainer(spec, devices, cls.rate(spec))
        return cls(trainer, devices.clusters(), streams, spec["frac"], spec["cluster_order"])

    def __init__(
        self,
        trainer: LocalTrainer,
        clusters: Tensor,
        streams: Streams,
        frac: float = 0.1,
        cluster_order: str = "reshuffle",
    ) -> None:
        if cluster_order not in CLUSTER_ORDERS:
            raise ValueError(f"unknown cluster_order {cluster_order!r}; expected one of {CLUSTER_ORDERS}")
        clusters = clusters.cpu()
        if clusters.unique().numel() != clusters.numel():
            raise ValueError("clusters must be disjoint")
        if clusters.min() < 0 or clusters.max() >= trainer.data.n_devices:
            raise ValueError(f"cluster members must be device ids in [0, {trainer.data.n_devices})")
        self.trainer, self.clusters, self.streams, self.cluster_order = trainer, clusters, streams, cluster_order
        self.active_per_cycle = max(1, round(frac * clusters.shape[1]))

    def init(self) -> Tensor:
        return self.trainer.flat.flatten()  # W0: the parameters the trainer's module was built with

    @property
    def M(self) -> int:
        return self.clusters.shape[0]

    def round(self, W: Tensor, rnd: int) -> tuple[Tensor, dict[str, int]]:
        for m in self._order(rnd).tolist():
            gen = self.streams("activate", rnd, m)
            members = self.clusters[m]
            active = members[sample_clients(gen, len(members), self.active_per_cycle).cpu()]
            W = self.trainer.run(W, self.trainer.draw(self.streams, rnd, active)).mean(0)
        clients = self.M * self.active_per_cycle
        return W, {"updates": self.M, "clients": clients, "samples": clients * self.trainer.steps * self.trainer.batch}

    def _order(self, rnd: int) -> Tensor:
        if self.cluster_order == "fixed":
            return torch.arange(self.M)
        gen = self.streams("cluster_order", rnd)
        return torch.randperm(self.M, generator=gen, device=gen.device).cpu()


class FedAvg(FedCluster):
    """Traditional FL: round(frac * n) of all devices per round, i.e. FedCluster with one cluster
    (Section II, "Generality"), so both share every line of code and every stream key."""

    @staticmethod
    def rate(spec: dict[str, Any]) -> float:
        return float(spec["lr_fedavg"])

    @classmethod
    def build(cls, spec: dict[str, Any], devices: Devices, streams: Streams) -> FedAvg:
        return cls(local_trainer(spec, devices, cls.rate(spec)), streams, spec["frac"])

    def __init__(self, trainer: LocalTrainer, streams: Streams, frac: float = 0.1) -> None:
        super().__init__(trainer, torch.arange(trainer.data.n_devices).unsqueeze(0), streams, frac, "fixed")


class CentralizedSGD:
    """`steps` SGD steps per round on minibatches of `batch` slots of the pooled device data (paper
    §IV-A: 1000 x 60 = the federated methods' samples per round; docs/papers/fedcluster.md R15). It is local
    training of a single client that holds the whole pool. Slots come from a random permutation of the pool, a fresh one
    whenever a permutation is used up, so a minibatch never repeats a slot."""

    @staticmethod
    def rate(spec: dict[str, Any]) -> float:
        return float(spec["lr_csgd"])

    @staticmethod
    def steps_per_round(spec: dict[str, Any]) -> int:
        """The federated methods' samples per round (10% of the devices x E x B) over its batch (paper §IV-A:
        100 x 20 x 30 / 60 = 1000), so every method uses as many samples per round (I1)."""
        samples = round(spec["frac"] * spec["n_devices"]) * spec["E"] * spec["B"]
        if samples % spec["csgd_batch"]:
            raise ValueError(f"csgd_batch = {spec['csgd_batch']} does not divide the {samples} samples per round")
        return samples // spec["csgd_batch"]

    @classmethod
    def build(cls, spec: dict[str, Any], devices: Devices, streams: Streams) -> CentralizedSGD:
        trainer = LocalTrainer(devices.module, devices.data, LocalOptimizer("sgd", cls.rate(spec)), 1,
                               spec["csgd_batch"], devices.backend)
        return cls(trainer, streams, cls.steps_per_round(spec), spec["csgd_batch"])

    def __init__(self, trainer: LocalTrainer, streams: Streams, steps: int, batch: int) -> None:
        n_slots = trainer.data.table.numel()
        if trainer.opt.name != "sgd":
            raise ValueError("centralized SGD takes a trainer with the plain 'sgd' optimizer")
        if not 1 <= batch <= n_slots:
            raise ValueError(f"batch = {batch} must be in [1, {n_slots}] (pooled slots)")
        self.trainer, self.streams, self.steps, self.batch = trainer, streams, steps, batch

    def init(self) -> Tensor:
        return self.trainer.flat.flatten()

    def round(self, W: Tensor, rnd: int) -> tuple[Tensor, dict[str, int]]:
        slots = self.trainer.data.table.flatten()
        gen = self.streams("csgd", rnd)
        per_perm = len(slots) // self.batch
        batches = []
        while len(batches) * per_perm < self.steps:
            perm = torch.randperm(len(slots), generator=gen, device=gen.device)[: per_perm * self.batch]
            batches.append(perm.to(slots.device).view(per_perm, self.batch))
        idx = slots[torch.cat(batches)[: self.steps]].unsqueeze(0)  # one client, (1, steps, batch)
        W = self.trainer.run(W, idx)[0].clone()  # a view of the trainer's buffer, which the next round overwrites
        return W, {"updates": self.steps, "clients": 0, "samples": self.steps * self.batch}

