"""Monte Carlo runs of the `fedvr` paper (Rostami & Kia): FedAvg-SVRG and its FedAvg baselines
on the federated least-squares problem built from the insurance data.

A run is one configuration (method, case (S, M), ...). Its "seeds" are the paper's Monte Carlo
runs, all advanced at once as a leading tensor dimension by the numerics in
`fedrepro.algorithms.fedvr` (one group of seeds for the driver). metrics.csv is tidy: one row per
(Monte Carlo run as `seed`, round k = 0..rounds) with f(θ_k), f(θ_k) − f*, the iterate θ_k and the
optimum θ*, so that the across-run variance and the CEP of the final iterates are computed from
the table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedrepro.algorithms import method
from fedrepro.algorithms.fedvr import Runs, hyperparameters
from fedrepro.algorithms.method import restore
from fedrepro.engines.context import RunContext
from fedrepro.engines.contract import Engine, Length, Limit, Row, Setup, Trainer, rows_limit, setting_limit
from fedrepro.objectives.least_squares import design_names, make_insurance_problem

# Spec keys handed to make_insurance_problem (the data and its preprocessing).
PROBLEM_KEYS = ("n_agents", "samples_per_agent", "features", "target", "scaling", "scaling_rows", "rows",
                "rows_seed", "intercept")


class MonteCarloTrainer(Trainer):
    def __init__(self, setup: MonteCarloSetup, seeds: list[int]) -> None:
        super().__init__(seeds)
        self.setup = setup
        # The numerics' (purpose, Monte Carlo run, round) stream is the framework's (seed = Monte Carlo run,
        # purpose, round) stream: independent of job order and batching. Only the environment keys it
        # (numerics.py KEYING), so every method of one environment sees the same activation draws in Monte
        # Carlo run r: the comparisons are paired (docs/papers/fedvr.md R9).
        per_seed = [setup.ctx.streams(seed) for seed in seeds]

        def streams(purpose: str, mc: int, k: int):
            return per_seed[mc](purpose, k)

        self.method = setup.method.build(setup.spec, Runs(setup.problem, len(seeds)), streams)
        self.theta = self.method.init()

    def advance(self, r: int) -> None:
        self.theta, _ = self.method.round(self.theta, r)

    def evaluate(self, r: int) -> list[Row]:
        problem, dim = self.setup.problem, self.setup.problem.dim
        cost = problem.cost(self.theta).cpu().numpy()
        theta = self.theta.cpu().numpy()
        rows = []
        for i, seed in enumerate(self.seeds):
            row = {"seed": seed, "round": r, "cost": float(cost[i]), "cost_error": float(cost[i] - problem.f_star)}
            row.update({f"theta_{j}": float(theta[i, j]) for j in range(dim)})
            row.update(self.setup.theta_star_columns)
            rows.append(row)
        return rows

    def state_dict(self) -> dict[str, Any]:
        return {"theta": self.theta}  # rounds never change a state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.theta = restore(state["theta"], self.theta)


class MonteCarloSetup(Setup):
    def __init__(self, spec: dict[str, Any], arrays: dict[str, np.ndarray], ctx: RunContext) -> None:
        self.spec, self.ctx = spec, ctx
        self.problem = make_insurance_problem(arrays, **{k: spec[k] for k in PROBLEM_KEYS}, device=ctx.device)
        problem = self.problem
        ctx.log.info("problem: N=%d, L=%d, d=%d, f* = %.7g, theta* = %s", problem.n_agents,
                     problem.samples_per_agent, problem.dim, problem.f_star, problem.theta_star.tolist())
        self.method = method("monte_carlo", spec["algorithm"])
        theta_star = problem.theta_star.cpu().numpy()
        self.theta_star_columns = {f"theta_star_{j}": float(theta_star[j]) for j in range(problem.dim)}
        self.columns = (["seed", "round", "cost", "cost_error"] + [f"theta_{j}" for j in range(problem.dim)]
                        + list(self.theta_star_columns))
        self.summary = {"hyperparameters": hyperparameters(spec), "f_star": problem.f_star, "theta_star": theta_star.tolist(),
                        "features": list(problem.feature_names)}

    def start(self, seeds: list[int]) -> Trainer:
        return MonteCarloTrainer(self, seeds)


class MonteCarloEngine(Engine):
    name = "monte_carlo"
    schema = "monte_carlo_run.schema.yaml"
    metrics = ("cost", "cost_error")
    watch = "cost"
    ms_per_round = 100

    def seed_groups(self, seeds: list[int]) -> list[list[int]]:
        return [seeds]  # the Monte Carlo runs are one batched computation

    def limits(self, spec: dict[str, Any]) -> list[Limit]:
        return rows_limit(spec, "n_agents", "samples_per_agent") + setting_limit(spec, "agents_per_round", "n_agents")

    def lengths(self, spec: dict[str, Any]) -> list[Length]:
        names = design_names(spec["features"], spec["intercept"])
        return [Length("theta0", len(names), f"column of the design ({', '.join(names)})"),
                Length("activation.p", spec["n_agents"], "agent (n_agents)")]

    def setup(self, spec, arrays, ctx) -> Setup:
        return MonteCarloSetup(spec, arrays, ctx)

    def describe(self, row: Row) -> str:
        return f"f - f* = {row['cost_error']:.4g}"
