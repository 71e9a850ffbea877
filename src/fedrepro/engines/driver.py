"""The one run loop every engine shares: seeds, evaluation cadence, divergence, checkpoints, progress.

For each group of seeds (engines/contract.py), rounds r = 0..R: evaluate when due, then advance.
Evaluation is due at r = 0, at r = R, every `eval_every` rounds and, for an engine on a virtual clock
with `eval_every_time` in its spec, at the first round that ends at or past each multiple of it. A
seed diverges when its watched metric is not finite or above `divergence_threshold`; a group stops
when all its seeds have (seeds batched together cannot stop one by one). Every `checkpoint_every`
rounds the whole state is saved atomically; a killed run resumes from it and ends with the same rows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedrepro.engines.context import RunContext
from fedrepro.engines.contract import Engine, Row, Trainer


class Cadence:
    """When a group of seeds is evaluated: in rounds, in simulated time, or both."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.rounds = spec["rounds"]
        self.every_time = spec.get("eval_every_time")
        self.every = spec.get("eval_every", None if self.every_time else 1)
        self.next_time = 0.0

    def due(self, r: int, trainer: Trainer) -> bool:
        due = r in (0, self.rounds) or bool(self.every and r % self.every == 0)
        now = trainer.clock()
        if self.every_time and now is not None and now >= self.next_time:
            self.next_time = (math.floor(now / self.every_time) + 1) * self.every_time
            due = True
        return due

    def log_due(self, r: int) -> bool:
        """About ten log lines per seed."""
        return r == self.rounds or r % max(1, self.rounds // 10) < (self.every or 1)


def run_seeds(engine: Engine, setup, spec: dict[str, Any], ctx: RunContext) -> tuple[list[Row], dict[str, Any]]:
    """Train every seed of `spec`; returns the metrics rows (seed-major) and the run summary."""
    rounds, seeds = spec["rounds"], list(range(spec["seeds"]))
    checkpoint_every = spec.get("checkpoint_every", rounds)
    groups = setup.seed_groups(seeds)

    saved = ctx.load_checkpoint()
    rows: list[Row] = saved["rows"] if saved else []
    per_seed: dict[str, Any] = saved["per_seed"] if saved else {}
    first_group = saved["group"] if saved else 0
    if saved:
        ctx.log.info("resuming from checkpoint: seed %s, round %d", ",".join(map(str, groups[first_group])),
                     saved["round"])

    bar = ctx.progress(total=len(seeds) * rounds, desc=f"{spec.get('method', engine.name)} {ctx.run_id[:8]}")
    bar.update(sum(len(g) for g in groups[:first_group]) * rounds + (saved["round"] * len(groups[first_group])
                                                                      if saved else 0))
    for g in range(first_group, len(groups)):
        group = groups[g]
        trainer = setup.start(group)
        cadence, start = Cadence(spec), 0
        diverged_at: dict[int, int | None] = dict.fromkeys(group)
        if saved and saved["group"] == g:
            trainer.load_state_dict(saved["state"])
            trainer.info = saved["info"]
            cadence.next_time, start, diverged_at = saved["next_time"], saved["round"], saved["diverged_at"]
        for r in range(start, rounds + 1):
            if cadence.due(r, trainer):
                evaluated = trainer.evaluate(r)
                rows.extend(evaluated)
                _watch(engine, spec, evaluated, diverged_at, r, ctx, cadence.log_due(r), bar, trainer)
                if all(at is not None for at in diverged_at.values()):
                    bar.update((rounds - r) * len(group))
                    break
            if r == rounds:
                break
            trainer.advance(r)
            bar.update(len(group))
            if (r + 1) % checkpoint_every == 0 and r + 1 < rounds:
                ctx.save_checkpoint({"group": g, "round": r + 1, "rows": rows, "per_seed": per_seed,
                                     "state": trainer.state_dict(), "info": trainer.info,
                                     "next_time": cadence.next_time, "diverged_at": diverged_at})
        for s in group:
            per_seed[str(s)] = {**trainer.info[s], "diverged_at": diverged_at[s]}
        saved = None
    bar.close()
    rows.sort(key=lambda row: row["seed"])  # stable: a batched group evaluates round-major
    return rows, {**setup.summary, "seeds": per_seed}


def _watch(engine: Engine, spec: dict[str, Any], evaluated: list[Row], diverged_at: dict[int, int | None], r: int,
           ctx: RunContext, log: bool, bar, trainer: Trainer) -> None:
    """Record divergence, and report the evaluated rows in the log and the progress bar."""
    for row in evaluated:
        seed = row["seed"]
        if diverged_at[seed] is None and engine.diverged(spec, row):
            diverged_at[seed] = r
            ctx.log.warning("seed %d diverged at round %d (%s)", seed, r, engine.describe(row))
    now = trainer.clock()
    when = f"round {r}/{spec['rounds']}" + (f", t = {now:.4g} s simulated" if now is not None else "")
    first = evaluated[0]
    bar.set_postfix_str(f"seed {first['seed']}, {when}, {engine.describe(first)}", refresh=False)
    if log:
        if len(evaluated) == 1:
            ctx.log.info("seed %d %s: %s", first["seed"], when, engine.describe(first))
        else:
            values = np.array([float(row[engine.watch]) for row in evaluated])
            ctx.log.info("seeds %d-%d %s: mean %s = %.4g", evaluated[0]["seed"], evaluated[-1]["seed"], when,
                         engine.watch, float(np.mean(values)))
