"""Synchronous rounds on finite-sum linear models (FedPAGE, SCAFFOLD, FedAvg).

The metric is the norm of the full gradient of the global objective at the server model, in
float64. The numerics are closed-form and batched over the sampled clients (algorithms/,
objectives/); this engine only builds the problem and keeps the per-seed counters.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedrepro.algorithms import method
from fedrepro.algorithms.method import restore
from fedrepro.engines.context import RunContext
from fedrepro.engines.contract import Engine, Limit, Row, Setup, Trainer, rows_limit, setting_limit
from fedrepro.objectives import make_problem

COLUMNS = ["seed", "round", "grad_norm", "loss", "clients", "sample_grads", "full_rounds"]


class FiniteSumTrainer(Trainer):
    def __init__(self, setup: FiniteSumSetup, seed: int) -> None:
        super().__init__([seed])
        self.problem = setup.problem
        # runs that differ only in their step sizes draw the same clients, minibatches and coins (numerics.KEYING)
        self.algo = setup.method.build(setup.spec, setup.problem, setup.ctx.streams(seed))
        self.state = self.algo.init()
        self.counters = {"clients": 0, "sample_grads": 0, "full_rounds": 0}
        self.info[seed]["full_round_indices"] = []

    def advance(self, r: int) -> None:
        self.state, info = self.algo.round(self.state, r)
        self.counters["clients"] += int(info["clients"])
        self.counters["sample_grads"] += int(info["sample_grads"])
        if info["full"]:
            self.counters["full_rounds"] += 1
            self.info[self.seeds[0]]["full_round_indices"].append(r)

    def evaluate(self, r: int) -> list[Row]:
        grad_norm, loss = self.problem.evaluate(self.state["x"])
        return [{"seed": self.seeds[0], "round": r, "grad_norm": grad_norm, "loss": loss, **self.counters}]

    def state_dict(self) -> dict[str, Any]:
        return {"algorithm": self.state, "counters": dict(self.counters)}  # rounds never change a state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.state = restore(state["algorithm"], self.state)
        self.counters = dict(state["counters"])


class FiniteSumSetup(Setup):
    columns = COLUMNS

    def __init__(self, spec: dict[str, Any], arrays: dict[str, np.ndarray], ctx: RunContext) -> None:
        self.spec, self.ctx = spec, ctx
        self.problem = make_problem(
            spec["objective"], arrays["X"], arrays["y"],
            n_clients=spec["n_clients"], samples_per_client=spec["samples_per_client"],
            partition=spec["partition"], alpha=spec.get("alpha", 0.0), device=ctx.device,
        )
        self.method = method("finite_sum", spec["algorithm"])
        hp = self.method.hyperparameters(spec, self.problem.n_clients, self.problem.samples_per_client)
        self.summary = {"hyperparameters": hp}

    def start(self, seeds: list[int]) -> Trainer:
        (seed,) = seeds
        return FiniteSumTrainer(self, seed)


class FiniteSumEngine(Engine):
    name = "finite_sum"
    schema = "finite_sum_run.schema.yaml"
    metrics = tuple(COLUMNS[2:])
    watch = "grad_norm"
    ms_per_round = 30

    def limits(self, spec: dict[str, Any]) -> list[Limit]:
        batches = [lim for key in ("b", "b1", "b2", "b3") for lim in setting_limit(spec, key, "samples_per_client")]
        return rows_limit(spec, "n_clients", "samples_per_client") + setting_limit(spec, "S", "n_clients") + batches

    def setup(self, spec, arrays, ctx) -> Setup:
        return FiniteSumSetup(spec, arrays, ctx)

    def describe(self, row: Row) -> str:
        return f"||grad f|| = {row['grad_norm']:.4e}, loss = {row['loss']:.6g}"
