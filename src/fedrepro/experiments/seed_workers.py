"""Several seed groups of one run at once, each in its own process on the run's device (`seed_workers` > 1).

A GPU that trains one seed of a launch-bound engine at a time sits idle most of each step (docs/performance.md,
"The paper scale on a GPU"): K processes keep it busier, as several runs would, but within the run's one job, so a
cluster job that asks for one GPU uses it for K seeds. Each group is trained exactly as one after another would
train it (engines/driver.py train_group, the same code, device and thread count), so metrics.csv is byte-identical
whatever K; the groups' order in it is the seeds'.

Each group has its own checkpoint file (RunFiles.group_checkpoint), which a worker saves every `checkpoint_every`
rounds and, once the group is trained, as `done` with the group's rows: a killed job keeps every finished group
and resumes the others. A worker is spawned (CUDA cannot be forked), builds the run's setup from the prepared
input itself, and exits when the process that started it is gone, so a killed job leaves no orphan training.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from fedrepro.data.inputs import load_input
from fedrepro.engines import ENGINES
from fedrepro.engines.context import RunContext, pin_float_settings
from fedrepro.engines.contract import Engine, Row
from fedrepro.engines.driver import run_one_group, seed_major
from fedrepro.errors import ResultsError
from fedrepro.experiments.run_log import run_logger
from fedrepro.seeding import seeds_of

PARENT_POLL_SECONDS = 0.5


@dataclass(frozen=True)
class GroupTask:
    """What a worker needs to train group `group` of a run (picklable: a spawned process starts empty)."""

    run_id: str
    spec: dict[str, Any]
    prepared: Path
    device: str
    threads: int
    checkpoint: Path
    log_path: Path | None
    group: int
    started: float  # the job's time.perf_counter() at its start (a system-wide monotonic clock on Linux)


def run_in_workers(engine: Engine, spec: dict[str, Any], ctx: RunContext, prepared: Path, checkpoints: list[Path],
                   workers: int, threads: int, log_path: Path | None) -> tuple[list[Row], dict[str, Any], list[str]]:
    """Train the run's seed groups in `workers` processes at once (group g checkpointed in checkpoints[g]); returns
    the rows (seed-major) and the run summary, as engines/driver.run_seeds does, and the metrics columns."""
    groups = engine.seed_groups(seeds_of(spec))
    if len(checkpoints) != len(groups):
        raise ValueError(f"{len(checkpoints)} checkpoint paths for {len(groups)} seed groups")
    tasks = [GroupTask(ctx.run_id, spec, Path(prepared), ctx.device, threads, path, log_path, g, ctx.started)
             for g, path in enumerate(checkpoints)]
    ctx.log.info("training %d seed groups in %d processes at once", len(groups), min(workers, len(groups)))
    spawn = multiprocessing.get_context("spawn")
    try:
        with ProcessPoolExecutor(min(workers, len(groups)), mp_context=spawn, initializer=_exit_with_parent,
                                 initargs=(os.getpid(),)) as pool:
            results = list(pool.map(train_task, tasks))
    except BrokenProcessPool as error:
        raise ResultsError(f"run {ctx.run_id}: a seed worker died before its group was trained ({error}); the "
                           f"groups it finished are kept in {checkpoints[0].parent}/, and running the job again "
                           f"resumes the others") from None
    rows: list[Row] = []
    per_seed: dict[str, Any] = {}
    for done in results:
        rows += done["rows"]
        per_seed.update(done["per_seed"])
    # the run's wall time: its longest group's, which counts that group's earlier attempts (resumed), or this one's
    now = time.perf_counter() - ctx.started
    ctx.earlier_seconds = max([0.0] + [float(done["wall_seconds"]) - now for done in results])
    ctx.resumed = [resume for done in results for resume in done["resumed"]]
    first = results[0]  # every worker's setup is the run's: its summary and columns are the same
    return seed_major(rows), {**first["summary"], "seeds": per_seed}, first["columns"]


def train_task(task: GroupTask) -> dict[str, Any]:
    """In a worker: build the run's setup from its prepared input and train one group (engines/driver.py
    run_one_group); returns the group's rows, per-seed facts and wall seconds, and the setup's summary and
    columns."""
    torch.set_num_threads(max(1, task.threads))
    pin_float_settings()
    log = run_logger(task.log_path)
    ctx = RunContext(task.run_id, task.spec, task.device, task.checkpoint, log, show_progress=False,
                     started=task.started)
    engine = ENGINES[task.spec["engine"]]
    setup = engine.setup(task.spec, load_input(task.prepared), ctx)
    done = run_one_group(engine, setup, task.spec, ctx, task.group)
    return {"rows": done["rows"], "per_seed": done["per_seed"], "wall_seconds": done["wall_seconds"],
            "resumed": ctx.resumed, "summary": setup.summary, "columns": list(setup.columns)}


def _exit_with_parent(parent: int) -> None:
    """A worker's initializer: a daemon thread ends the worker once `parent` is gone (a killed job's pool would
    otherwise go on training, and a rerun would start a second trainer of the same group)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
