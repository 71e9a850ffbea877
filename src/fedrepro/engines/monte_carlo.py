"""Monte Carlo runs of the `fedvr` paper (Rostami & Kia): FedAvg-SVRG and its FedAvg baselines
on the federated least-squares problem built from the insurance data.

A run is one configuration (method, case (S, M), ...). Its "seeds" are the paper's Monte
Carlo runs, all simulated at once as a leading tensor dimension by the numerics in
`fedrepro.algorithms.fedvr`. metrics.csv is tidy: one row per (Monte Carlo run as `seed`,
round k = 0..rounds) with f(θ_k), f(θ_k) − f*, the iterate θ_k and the optimum θ*, so that
the across-run variance and the CEP of the final iterates are computed from the table.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fedrepro.algorithms.fedvr import DEFAULT_HP, run_fedvr_method
from fedrepro.experiments.context import RunContext
from fedrepro.objectives.least_squares import make_insurance_problem

# Leading columns; then theta_0..theta_{d-1} and theta_star_0..theta_star_{d-1}, where d
# depends on the configured features (see columns()).
COLUMNS = ["seed", "round", "cost", "cost_error"]
# Spec keys handed to make_insurance_problem (the data and its preprocessing).
PROBLEM_KEYS = ("n_agents", "samples_per_agent", "features", "target", "scaling", "scaling_rows", "rows",
                "rows_seed", "intercept")
# Spec keys that choose the algorithm, not the random environment. They are left out of the
# stream key, so every method of one environment (data, activation probabilities) sees the
# same activation draws in Monte Carlo run r: the comparisons are paired (spec §6.1 "seeds").
# `rounds` is left out too: a shorter run is then a prefix of a longer one.
ALGORITHM_KEYS = ("method", "algorithm", "S", "M", "delta", "K", "eta_schedule", "eta", "local_steps",
                  "batch_size", "sampling", "agents_per_round", "rounds")


def columns(rows: list[dict[str, Any]]) -> list[str]:
    return list(rows[0])


def environment_context(ctx: RunContext) -> RunContext:
    """The run's context with its algorithm keys dropped: streams shared across methods."""
    env = {k: v for k, v in ctx.spec.items() if k not in ALGORITHM_KEYS}
    return dataclasses.replace(ctx, spec=env)


def hyperparameters(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec's values of the numerics' hyperparameters (the rest keep DEFAULT_HP)."""
    return {k: spec[k] for k in DEFAULT_HP if k in spec}


def _first_nonfinite(cost: np.ndarray) -> int | None:
    bad = np.nonzero(~np.isfinite(cost))[0]
    return int(bad[0]) if len(bad) else None


def tidy_rows(theta: np.ndarray, cost: np.ndarray, f_star: float, theta_star: np.ndarray) -> list[dict[str, Any]]:
    """theta (R, K+1, d), cost (R, K+1) -> one dict per (run, round), in run-then-round order."""
    n_mc, n_rounds, dim = theta.shape
    star = {f"theta_star_{i}": float(theta_star[i]) for i in range(dim)}
    rows = []
    for r in range(n_mc):
        for k in range(n_rounds):
            row = {"seed": r, "round": k, "cost": float(cost[r, k]), "cost_error": float(cost[r, k] - f_star)}
            row.update({f"theta_{i}": float(theta[r, k, i]) for i in range(dim)})
            row.update(star)
            rows.append(row)
    return rows


def train(spec: dict[str, Any], data: dict[str, dict[str, np.ndarray]], ctx: RunContext) -> tuple[list[dict], dict]:
    problem = make_insurance_problem(data[spec["dataset"]], **{k: spec[k] for k in PROBLEM_KEYS}, device=ctx.device)
    ctx.log.info("problem: N=%d, L=%d, d=%d, f* = %.7g, theta* = %s", problem.n_agents, problem.samples_per_agent,
                 problem.dim, problem.f_star, problem.theta_star.tolist())
    env = environment_context(ctx)

    def streams(purpose: str, mc: int, k: int):
        # The numerics' (purpose, Monte Carlo run, round) stream is the framework's
        # (seed = Monte Carlo run, purpose, round) stream: independent of job order and batching.
        return env.streams(mc)(purpose, k)

    hp = hyperparameters(spec)
    out = run_fedvr_method(spec["algorithm"], problem, hp, n_mc=spec["seeds"], rounds=spec["rounds"], streams=streams)
    theta_star = problem.theta_star.cpu().numpy()
    rows = tidy_rows(out["theta"], out["cost"], problem.f_star, theta_star)
    seeds = {str(r): {"diverged_at": _first_nonfinite(out["cost"][r])} for r in range(spec["seeds"])}
    for r, info in seeds.items():
        if info["diverged_at"] is not None:
            ctx.log.warning("Monte Carlo run %s: non-finite cost from round %d", r, info["diverged_at"])
    err = out["cost"][:, -1] - problem.f_star
    ctx.log.info("round %d: mean f - f* = %.4g, variance of f = %.4g", spec["rounds"], float(np.mean(err)),
                 float(np.var(out["cost"][:, -1])))
    summary = {"hyperparameters": hp, "f_star": problem.f_star, "theta_star": theta_star.tolist(),
               "features": list(problem.feature_names), "seeds": seeds}
    return rows, summary
