"""The one run loop every engine shares: seeds, evaluation cadence, divergence, checkpoints, progress.

For each group of the run's seeds (seeding.seeds_of; engines/contract.py), rounds r = 0, 1, ...: evaluate when
due, then advance.
The cadence is either
- in rounds (`rounds`, or the engine's own name for the count of its steps, Engine.steps_key, e.g. the
  vertical engine's `iterations`; `eval_every`): evaluate at r = 0, every `eval_every` rounds and at
  r = rounds, and, with `eval_dense_until` U and `eval_dense_every` d, also every d rounds up to U (dense
  early points, e.g. for curves rescaled to a time axis where the slowest run makes few steps);
- in simulated time (`time_horizon` H, `eval_every_time` D), for engines on a virtual clock: the model
  after round r is the server's from clock(r) until clock(r + 1), so it is evaluated once for the
  checkpoint times t = kD <= H in that interval, and each of those rows gets `virtual_time` = t (a round
  spanning several checkpoints gives several rows); the run ends with the round current at the last.
A seed diverges when its watched metric is not finite or above `divergence_threshold`; a group stops
when all its seeds have (seeds batched together cannot stop one by one). A trainer that overlaps its evaluation
with training (Trainer.overlaps_evaluation) has the rows of round r read after advance(r); a group that stops there
has trained one round past its end, of which the run keeps nothing: the same rows and facts. Every
`checkpoint_every` rounds the whole state is saved atomically; a killed run resumes from it and ends with the same
rows.
The groups train one after another (run_seeds), or each alone in a process of its own (run_one_group, with a
checkpoint of its own: experiments/seed_workers.py); both train a group with the same code (train_group).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

from fedrepro.engines.context import RunContext
from fedrepro.engines.contract import Engine, Row, Setup, Trainer
from fedrepro.seeding import seeds_of


class RoundCadence:
    def __init__(self, spec: dict[str, Any], steps_key: str = "rounds") -> None:
        self.rounds, self.every = spec[steps_key], spec.get("eval_every", 1)
        self.dense_until, self.dense_every = spec.get("eval_dense_until", -1), spec.get("eval_dense_every", 1)
        self.unit, self.total = steps_key.rstrip("s"), self.rounds

    def points(self, r: int, trainer: Trainer) -> list[Row]:
        """The extra columns of each evaluation due at round r (none: not due)."""
        dense = r <= self.dense_until and r % self.dense_every == 0
        return [{}] if r % self.every == 0 or r == self.rounds or dense else []

    def last(self, r: int, trainer: Trainer) -> bool:
        return r == self.rounds

    def progress(self, r: int, trainer: Trainer) -> float:
        return r

    def log_due(self, r: int) -> bool:
        """About ten log lines per seed."""
        return r == self.rounds or r % max(1, self.rounds // 10) < self.every


class TimeCadence:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.every = float(spec["eval_every_time"])
        # checkpoints t_k = k D for k = 0..n; the tolerance keeps H = 0.3, D = 0.1 at n = 3
        self.n = math.floor(float(spec["time_horizon"]) / self.every + 1e-9)
        self.unit, self.total = "simulated second", self.n * self.every

    def points(self, r: int, trainer: Trainer) -> list[Row]:
        start, end = trainer.clock(r), trainer.clock(r + 1)
        k = max(0, math.ceil(start / self.every) - 1)  # one below, then up: ceil of a rounded quotient
        while k * self.every < start:
            k += 1
        times = []
        while k <= self.n and k * self.every < end:
            times.append({"virtual_time": k * self.every})
            k += 1
        return times

    def last(self, r: int, trainer: Trainer) -> bool:
        return trainer.clock(r + 1) > self.total

    def progress(self, r: int, trainer: Trainer) -> float:
        return min(trainer.clock(r), self.total)

    def log_due(self, r: int) -> bool:
        return True  # evaluations are already sparse in rounds


def cadence_of(spec: dict[str, Any], steps_key: str = "rounds") -> RoundCadence | TimeCadence:
    return TimeCadence(spec) if "eval_every_time" in spec else RoundCadence(spec, steps_key)


def run_seeds(engine: Engine, setup: Setup, spec: dict[str, Any], ctx: RunContext) -> tuple[list[Row], dict[str, Any]]:
    """Train every seed of `spec`, one group after another; returns the metrics rows (seed-major) and the run
    summary. One checkpoint file holds the group in training and the rows of the groups before it."""
    seeds = seeds_of(spec)
    cadence = cadence_of(spec, engine.steps_key)
    groups = engine.seed_groups(seeds)

    saved = ctx.load_checkpoint()
    rows: list[Row] = saved["rows"] if saved else []
    per_seed: dict[str, Any] = saved["per_seed"] if saved else {}
    first_group = saved["group"] if saved else 0
    if saved:
        ctx.log.info("resuming from checkpoint: seed %s, round %d", ",".join(map(str, groups[first_group])),
                     saved["round"])

    bar = ctx.progress(total=len(seeds) * cadence.total, desc=f"{spec.get('method', engine.name)} {ctx.run_id[:8]}")
    bar.update(sum(len(g) for g in groups[:first_group]) * cadence.total)
    for g in range(first_group, len(groups)):
        train_group(engine, setup, spec, ctx, g, groups[g], rows, per_seed, saved if saved and saved["group"] == g
                    else None, bar)
        saved = None
    bar.close()
    return seed_major(rows), {**setup.summary, "seeds": per_seed}


def run_one_group(engine: Engine, setup: Setup, spec: dict[str, Any], ctx: RunContext, g: int) -> dict[str, Any]:
    """Train group g of the run's seeds alone, resuming from ctx's checkpoint, which holds this group only (one
    worker of several training a run's groups at once: experiments/seed_workers.py). Once trained, the checkpoint
    says so (`done`) and holds the group's rows and per-seed facts, which this returns; a done group is not
    trained again."""
    saved = ctx.load_checkpoint()
    if saved and saved.get("done"):
        return saved
    group = engine.seed_groups(seeds_of(spec))[g]
    if saved:
        ctx.log.info("resuming from checkpoint: seed %s, round %d", ",".join(map(str, group)), saved["round"])
    rows: list[Row] = saved["rows"] if saved else []
    per_seed: dict[str, Any] = saved["per_seed"] if saved else {}
    bar = ctx.progress(total=0, desc="")
    train_group(engine, setup, spec, ctx, g, group, rows, per_seed, saved, bar)
    bar.close()
    done = {"group": g, "done": True, "rows": rows, "per_seed": per_seed}
    ctx.save_checkpoint(done)
    return {**done, "wall_seconds": ctx.wall_seconds()}


def seed_major(rows: list[Row]) -> list[Row]:
    """The rows ordered by seed, each seed's in the order evaluated (a batched group evaluates round-major)."""
    return sorted(rows, key=lambda row: row["seed"])


def train_group(engine: Engine, setup: Setup, spec: dict[str, Any], ctx: RunContext, g: int, group: list[int],
                rows: list[Row], per_seed: dict[str, Any], saved: dict[str, Any] | None, bar) -> None:
    """Train the seeds of group g from round 0, or from `saved` (a checkpoint of this group), appending their rows
    to `rows` and their facts to `per_seed`; every checkpoint holds both as they stand."""
    cadence, checkpoint_every = cadence_of(spec, engine.steps_key), spec.get("checkpoint_every")
    trainer, r = setup.start(group), 0
    diverged_at: dict[int, int | None] = dict.fromkeys(group)
    if saved:
        trainer.load_state_dict(saved["state"])
        trainer.info, r, diverged_at = saved["info"], saved["round"], saved["diverged_at"]
    shown = cadence.progress(r, trainer)
    bar.update(shown * len(group))

    def evaluated(pending) -> bool:
        """Record the rows of an evaluation at round r; whether every seed of the group has now diverged."""
        got = pending()
        rows.extend({**row, **point} for point in points for row in got)
        _watch(engine, spec, got, diverged_at, r, ctx, cadence.log_due(r), bar, trainer)
        return all(at is not None for at in diverged_at.values())

    while True:
        points, last = cadence.points(r, trainer), cadence.last(r, trainer)
        pending = trainer.launch_evaluation(r) if points else None
        if pending is not None and (last or not trainer.overlaps_evaluation):
            if evaluated(pending):
                break
            pending = None
        if last:
            break
        info = copy.deepcopy(trainer.info) if pending is not None else None
        trainer.advance(r)  # beside the evaluation still pending, whose rows are read after it
        if pending is not None and evaluated(pending):
            trainer.info = info  # the round trained past the group's end is not part of the run
            break
        r += 1
        now = cadence.progress(r, trainer)
        bar.update((now - shown) * len(group))
        shown = now
        if checkpoint_every and r % checkpoint_every == 0 and not cadence.last(r, trainer):
            ctx.save_checkpoint({"group": g, "round": r, "rows": rows, "per_seed": per_seed,
                                 "state": trainer.state_dict(), "info": trainer.info, "diverged_at": diverged_at})
    bar.update((cadence.total - shown) * len(group))
    for s in group:
        per_seed[str(s)] = {**trainer.info[s], "diverged_at": diverged_at[s]}


def _watch(engine: Engine, spec: dict[str, Any], evaluated: list[Row], diverged_at: dict[int, int | None], r: int,
           ctx: RunContext, log: bool, bar, trainer: Trainer) -> None:
    """Record divergence, and report the evaluated rows in the log and the progress bar."""
    for row in evaluated:
        seed = row["seed"]
        if diverged_at[seed] is None and engine.diverged(spec, row):
            diverged_at[seed] = r
            ctx.log.warning("seed %d diverged at round %d (%s)", seed, r, engine.describe(row))
    now = trainer.clock(r)
    when = f"round {r}" + (f", t = {now:.4g} s simulated" if now is not None else "")
    first = evaluated[0]
    bar.set_postfix_str(f"seed {first['seed']}, {when}, {engine.describe(first)}", refresh=False)
    if log:
        if len(evaluated) == 1:
            ctx.log.info("seed %d %s: %s", first["seed"], when, engine.describe(first))
        else:
            values = np.array([float(row[engine.watch]) for row in evaluated])
            ctx.log.info("seeds %d-%d %s: mean %s = %.4g", evaluated[0]["seed"], evaluated[-1]["seed"], when,
                         engine.watch, float(np.mean(values)))
