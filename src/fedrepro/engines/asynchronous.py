"""Asynchronous FL on a simulated wall clock: engine `async` (DeFedAvg paper §2, §4.1; docs/papers/defedavg.md).

A seed runs in two phases (docs/engines.md):
1. timing (asynchrony/): a discrete-event simulation of who trains from which server version, when each
   update arrives and which round consumes it with what weight. Timing never depends on model values.
2. learning (algorithms/asynchronous.py AsyncRounds, built by the run's method from the trace, run here): the trace is replayed; round t sets
   w^{t+1} = server_step(w^t, round t's Deltas).
   Only consumed trainings are computed (overwritten ones never are). Trainings are computed several
   rounds ahead, as soon as their start version exists, so that one call of the client layer trains many
   clients, each from its own (stale) start version; a version is freed once every training that starts
   from it is computed. Results do not depend on this batching: a training's minibatches come from a
   stream keyed by (client, the client's training index) and the client layer trains clients
   independently (tests/asynchrony/test_engine.py).

Within a seed every algorithm sees the same partition, client speeds, server sampling stream, W0 and
minibatches (common random numbers, docs/papers/defedavg.md R24): those streams are keyed by the
environment, never by the algorithm or its rates.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from fedrepro.algorithms import method
from fedrepro.algorithms.asynchronous import Fleet
from fedrepro.algorithms.method import restore
from fedrepro.asynchrony import SystemModel, simulate
from fedrepro.data.partitions import class_group_partition, iid_partition
from fedrepro.engines.context import RunContext
from fedrepro.engines.contract import Engine, Length, Limit, Row, Setup, Trainer, rows_limit, setting_limit
from fedrepro.models import seeded_model
from fedrepro.nn import DeviceData, FlatModel, evaluate, pooled_train_set
from fedrepro.nn.clients import client_backend
from fedrepro.nn.images import ImageData
from fedrepro.numerics import keying
from fedrepro.utils.digest import array_digest
from fedrepro.seeding import numpy_rng, torch_generator

# The `partition`s Environment.partition branches on: iid_partition, or class_group_partition (classes_per_client)
PARTITIONS = ("iid", "classes")
SYSTEM_KEYS = ("flops_per_iteration", "model_bytes", "fastest_flops", "speed_model", "speed_range",
               "compute_time_scale")
METRICS = ["train_loss", "train_accuracy", "test_loss", "test_accuracy", "uploads", "staleness_mean",
           "staleness_max"]


def system_model(spec: dict[str, Any]) -> SystemModel:
    """The run's simulated hardware. `compute_time_scale` makes a reduced scale's K-step training cost what
    the paper's K = 50 cost; AsySG's single gradient is one real iteration at every scale
    (docs/papers/defedavg.md R28)."""
    values = {k: spec[k] for k in SYSTEM_KEYS}
    values["speed_range"] = tuple(values["speed_range"])
    if method("async", spec["algorithm"]).sends_gradient:
        values["compute_time_scale"] = 1.0
    return SystemModel(**values, uplink_bps=spec["link_bps"], downlink_bps=spec["link_bps"])


def timing_rng_parts(spec: dict[str, Any], seed: int) -> tuple[str, str, int]:
    """The `rng_parts` of one seed's trace: keyed by the fleet alone (numerics.py KEYING, draw `timing`), nothing
    about learning (rates, model, data setting) and not the algorithm, so every algorithm of a seed sees the same
    client speeds."""
    return ("timing", keying("async").key(spec, "timing"), int(seed))


def trace_of(spec: dict[str, Any], seed: int, record_timeline: bool = False):
    """The timing trace of one seed: a pure function of the fleet, the protocol and the seed."""
    protocol = method("async", spec["algorithm"]).protocol
    options = {k: spec[k] for k in protocol.options if k in spec}
    slowdowns = None if spec.get("slowdowns") is None else np.asarray(spec["slowdowns"], dtype=np.float64)
    return simulate(
        protocol, system_model(spec), n_clients=spec["n_clients"], n_per_round=spec["n"],
        local_steps=spec["K"], horizon_time=spec.get("time_horizon"), rounds=spec.get("rounds"),
        rng_parts=timing_rng_parts(spec, seed), slowdowns=slowdowns, record_timeline=record_timeline, **options,
    )


class AsyncTrainer(Trainer):
    """One seed: its partition, W0, trace and replay."""

    def __init__(self, setup: AsyncSetup, seed: int) -> None:
        super().__init__([seed])
        spec, env = setup.spec, setup.env
        self.setup = setup
        table = env.partition(seed)
        module = seeded_model(spec["model"], tuple(env.images.shape[1:]), spec["n_classes"],
                              "W0", spec["dataset"], spec["view"], spec["model"], seed).to(env.device)
        self.flat = FlatModel(module)  # the server model's forward, for evaluation
        W0 = self.flat.flatten()
        table_t = torch.from_numpy(table).to(env.device)
        self.trace = trace_of(spec, seed, record_timeline=bool(spec.get("record_timeline")))
        fleet = Fleet(module, DeviceData(env.images, env.labels, table_t), setup.backend, self.trace)
        self.method = setup.method.build(spec, fleet, setup.ctx.streams(seed))
        self.state = self.method.init()
        gen = torch_generator("train_eval", env.key, seed, device=env.device)
        self.train_index, self.train_weights = pooled_train_set(table_t, spec["train_eval_subsample"], gen)
        self.evaluated_to = 0  # rounds whose staleness the last evaluation reported
        setup.summary["n_params"] = self.flat.n_params
        self.info[seed].update(self._facts(table, W0))

    def _facts(self, table: np.ndarray, W0: torch.Tensor) -> dict[str, Any]:
        """What run.json records of this seed: hashes, and what the claims read from the trace."""
        tr = self.trace
        facts = {"partition_sha256": array_digest(table), "W0_sha256": array_digest(W0.cpu().numpy()),
                 "trace": tr.summary(), "iteration_time": tr.iteration_time.tolist(),
                 "participation": tr.participation().tolist(), "trainings_started": tr.trainings_started.tolist()}
        if tr.timeline is not None:
            tl = tr.timeline
            facts["timeline"] = {"client": tl.client.tolist(), "kind": tl.kind.tolist(), "start": tl.start.tolist(),
                                 "end": tl.end.tolist(), "training": tl.training.tolist()}
        return facts

    def advance(self, r: int) -> None:
        self.state, _ = self.method.round(self.state, r)

    def clock(self, r: int) -> float:
        """b_r: the instant w^r is formed (b_0 = 0); inf past the last round closed within the horizon."""
        if r == 0:
            return 0.0
        return float(self.trace.close_time[r - 1]) if r <= self.trace.n_rounds else float("inf")

    def evaluate(self, r: int) -> list[Row]:
        env, W = self.setup.env, self.state["w"]
        train = evaluate(self.flat, W, env.images, env.labels, self.train_index, self.train_weights)
        test = evaluate(self.flat, W, env.test_images, env.test_labels, env.test_index)
        lo, hi = self.trace.round_bounds[min(self.evaluated_to, r)], self.trace.round_bounds[r]
        stale = self.trace.staleness[lo:hi]
        self.evaluated_to = r
        return [{"seed": self.seeds[0], "round": r, "sim_time": self.clock(r), "train_loss": train["loss"],
                 "train_accuracy": train["accuracy"], "test_loss": test["loss"], "test_accuracy": test["accuracy"],
                 "uploads": int(hi), "staleness_mean": float(stale.mean()) if stale.size else float("nan"),
                 "staleness_max": int(stale.max()) if stale.size else 0}]

    def state_dict(self) -> dict[str, Any]:  # a checkpoint holds tensors, not numpy arrays
        return {"replay": {**self.state, "remaining": torch.from_numpy(self.state["remaining"])},
                "evaluated_to": self.evaluated_to}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        saved = state["replay"]
        self.state = restore({**saved, "remaining": saved["remaining"].cpu().numpy().copy()}, self.state)
        self.evaluated_to = int(state["evaluated_to"])


class Environment(ImageData):
    """The run's images on the compute device, the evaluation subsets and the per-seed partition."""

    def __init__(self, spec: dict[str, Any], arrays: dict[str, np.ndarray], device: str) -> None:
        super().__init__(spec, arrays, device, keying("async").key(spec))
        n_test, keep = len(self.test_labels), spec["test_eval_subsample"]
        self.test_index = None
        if keep is not None and keep < n_test:  # a fixed subset, the same for every seed and algorithm
            gen = torch_generator("test_eval", self.key, device=device)
            self.test_index = torch.randperm(n_test, generator=gen, device=device)[:keep]

    def partition(self, seed: int) -> np.ndarray:
        """(n_clients, samples_per_client) indices into the training images (docs/papers/defedavg.md R9)."""
        spec = self.spec
        rng = numpy_rng("partition", self.key, seed)
        if spec["partition"] == "iid":
            return iid_partition(len(self.labels_np), n_clients=spec["n_clients"], rng=rng,
                                 samples_per_client=spec["samples_per_client"])
        return class_group_partition(self.labels_np, n_clients=spec["n_clients"], rng=rng,
                                     n_classes=spec["n_classes"], classes_per_client=spec["classes_per_client"],
                                     samples_per_client=spec["samples_per_client"])


class AsyncSetup(Setup):
    def __init__(self, spec: dict[str, Any], arrays: dict[str, np.ndarray], ctx: RunContext) -> None:
        self.spec, self.ctx = spec, ctx
        self.env = Environment(spec, arrays, ctx.device)
        self.backend = client_backend(spec["backend"], spec["model"], ctx.device)
        x = ["round", "virtual_time"] if "time_horizon" in spec else ["round"]
        self.columns = ["seed", *x, "sim_time", *METRICS]
        self.method = method("async", spec["algorithm"])
        self.method.rates(spec["lr_global"], spec["lr_local"], spec["K"])  # rates it does not have stop the run here
        self.summary = {"backend": self.backend, "algorithm": self.method.label}
        ctx.log.info("backend %s, %d training images of shape %s", self.backend, len(self.env.labels),
                     tuple(self.env.images.shape[1:]))

    def start(self, seeds: list[int]) -> Trainer:
        (seed,) = seeds
        return AsyncTrainer(self, seed)


class AsyncEngine(Engine):
    name = "async"
    schema = "async_run.schema.yaml"
    metrics = tuple(METRICS)
    x = ("round", "virtual_time", "sim_time")
    watch = "train_loss"
    trains_networks = True
    # twice the most an H200 took (docs/performance.md, "The paper scale on a GPU": up to 0.25 s a round of 80
    # updates, 1.5 s a simulated second; 1000 and 200 made 8 paper runs overrun their cluster jobs)
    ms_per_round = 500  # round-axis runs (Figs 6-7)
    ms_per_second = 3000  # time-axis runs, per simulated second (the paper's FedBuff on CIFAR-10 trains ~16k
                          # client-steps per simulated second)

    def runtime_minutes(self, spec: dict[str, Any]) -> int:
        if "time_horizon" not in spec:
            return super().runtime_minutes(spec)
        return 10 + int(spec["seeds"] * spec["time_horizon"] * self.ms_per_second / 60_000)

    def limits(self, spec: dict[str, Any]) -> list[Limit]:
        return (rows_limit(spec, "n_clients", "samples_per_client") + setting_limit(spec, "n", "n_clients")
                + setting_limit(spec, "B", "samples_per_client") + setting_limit(spec, "classes_per_client", "n_classes"))

    def lengths(self, spec: dict[str, Any]) -> list[Length]:
        return [Length("slowdowns", spec["n_clients"], "client (n_clients)")]

    def setup(self, spec, arrays, ctx) -> Setup:
        return AsyncSetup(spec, arrays, ctx)

    def describe(self, row: Row) -> str:
        return f"train loss {row['train_loss']:.4f}, test accuracy {row['test_accuracy']:.4f}"
