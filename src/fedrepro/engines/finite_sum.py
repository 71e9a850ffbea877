"""Synchronous rounds on finite-sum linear models (FedPAGE, SCAFFOLD, FedAvg).

The metric is the norm of the full gradient of the global objective at the server model,
in float64, every `eval_every` rounds and at the last round.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedrepro.algorithms import build_algorithm, hyperparameters
from fedrepro.experiments.context import RunContext
from fedrepro.objectives import make_problem

COLUMNS = ["seed", "round", "grad_norm", "loss", "clients", "sample_grads", "full_rounds"]
DATA_KEYS = ("X", "y")  # training split of the prepared LIBSVM file


def resolve_hyperparameters(spec: dict[str, Any], n_clients: int, samples_per_client: int) -> dict[str, Any]:
    """Turn the spec's symbolic values (`full`, `auto`) into numbers for the algorithm."""
    def batch(key: str) -> int:
        value = samples_per_client if spec[key] == "full" else int(spec[key])
        if value > samples_per_client:
            raise ValueError(f"{key} = {value} exceeds the {samples_per_client} samples per client")
        return value

    if spec["S"] > n_clients:
        raise ValueError(f"S = {spec['S']} exceeds the number of clients N = {n_clients}")
    hp = hyperparameters(spec["algorithm"], spec["eta_tilde"], K=spec["K"], c_l=spec.get("c_l", 1.0))
    hp.update(S=spec["S"], K=spec["K"])
    if spec["algorithm"] == "fedpage":
        hp.update(b1=batch("b1"), b2=batch("b2"), b3=batch("b3"))
        hp["p"] = spec["S"] / n_clients if spec["p"] == "auto" else float(spec["p"])
    else:
        hp["b"] = batch("b")
    return hp


def train(spec: dict[str, Any], data: dict[str, dict[str, np.ndarray]], ctx: RunContext) -> tuple[list[dict], dict]:
    arrays = data[spec["dataset"]]
    problem = make_problem(
        spec["objective"], arrays["X"], arrays["y"],
        n_clients=spec["n_clients"], samples_per_client=spec["samples_per_client"],
        partition=spec["partition"], alpha=spec.get("alpha", 0.0), device=ctx.device,
    )
    hp = resolve_hyperparameters(spec, problem.n_clients, problem.samples_per_client)
    rounds, every, threshold = spec["rounds"], spec["eval_every"], float(spec["divergence_threshold"])
    checkpoint_every = spec.get("checkpoint_every", rounds)

    saved = ctx.load_checkpoint()
    rows: list[dict] = saved["rows"] if saved else []
    summary: dict[str, Any] = saved["summary"] if saved else {"hyperparameters": hp, "seeds": {}}
    first_seed = saved["seed"] if saved else 0
    if saved:
        ctx.log.info("resuming from checkpoint: seed %d, round %d", saved["seed"], saved["round"])

    bar = ctx.progress(total=spec["seeds"] * rounds, desc=f"{spec['method']} {ctx.run_id[:8]}")
    bar.update(first_seed * rounds + (saved["round"] if saved else 0))
    for seed in range(first_seed, spec["seeds"]):
        algo = build_algorithm(spec["algorithm"], problem, hp, ctx.streams(seed))
        counters = {"clients": 0, "sample_grads": 0, "full_rounds": 0}
        seed_info: dict[str, Any] = {"full_round_indices": [], "diverged_at": None}
        start = 0
        if saved and saved["seed"] == seed:
            algo.load_state_dict(saved["algorithm"])
            counters, seed_info, start = saved["counters"], saved["seed_info"], saved["round"]
        for r in range(start, rounds + 1):
            if r % every == 0 or r == rounds:
                grad_norm = float(problem.full_grad(algo.x).norm())
                loss = float(problem.value(algo.x))
                rows.append({"seed": seed, "round": r, "grad_norm": grad_norm, "loss": loss, **counters})
                bar.set_postfix(seed=seed, grad_norm=f"{grad_norm:.3e}", refresh=False)
                if not math.isfinite(grad_norm) or grad_norm > threshold:
                    seed_info["diverged_at"] = r
                    ctx.log.warning("seed %d diverged at round %d (||grad f|| = %s)", seed, r, grad_norm)
                    bar.update(rounds - r)
                    break
                if r % max(1, rounds // 10) < every or r == rounds:
                    ctx.log.info("seed %d round %d/%d ||grad f|| = %.4e loss = %.6g", seed, r, rounds, grad_norm, loss)
            if r == rounds:
                break
            info = algo.round(r)
            counters["clients"] += int(info["clients"])
            counters["sample_grads"] += int(info["sample_grads"])
            if info["full"]:
                counters["full_rounds"] += 1
                seed_info["full_round_indices"].append(r)
            bar.update(1)
            if (r + 1) % checkpoint_every == 0 and r + 1 < rounds:
                ctx.save_checkpoint({
                    "run_id": ctx.run_id, "seed": seed, "round": r + 1, "rows": rows, "summary": summary,
                    "counters": counters, "seed_info": seed_info, "algorithm": algo.state_dict(),
                })
        summary["seeds"][str(seed)] = seed_info
        saved = None
    bar.close()
    return rows, summary
