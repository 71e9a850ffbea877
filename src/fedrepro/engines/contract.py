"""The contract between an engine and the rest of fedrepro.

An engine says only what is its own; the driver (engines/driver.py) owns what every run has: the seed
loop, the evaluation cadence (in rounds or in simulated time), divergence, checkpoints and resume,
progress and the log. Execution, validation, the Snakemake rules and the schemas read engines from
one registry (engines/__init__.py ENGINES).

    Engine                  one per kind of experiment
      name, schema          its key in config/papers/<paper>.yaml `engine`; the JSON schema of its runs
      x                     the x columns its metrics.csv logs; figures and claims name the one they use
      metrics               the columns of metrics.csv a figure or claim may read as a metric
      watch                 the metric that decides divergence and shows in the progress bar and log
      steps_key             the spec key that counts the driver's rounds (`rounds`; the vertical engine's
                            driver round is one local iteration: `iterations`)
      numerics, keying      its numerics version and which settings key its random streams (numerics.py, where
                            jobs that load no engine read them too)
      setup(spec, data, ctx) -> Setup: the run-level part (data on the device, the problem)
      seed_groups(seeds)    which seeds advance together (one at a time, or all at once when the numerics are
                            batched over seeds, like the Monte Carlo runs): known before any data is read
      runtime_minutes(spec) a generous time limit of a run, for cluster schedulers; a run longer than one cluster
                            job (MAX_JOB_MINUTES) goes on from its checkpoint in the next (job_minutes, jobs)
      limits(spec)          settings that may not exceed the data or each other (S <= N, N x M <= rows):
                            checked at start-up and before a run starts
      lengths(spec)         the length each list-valued setting must have (theta0: one value per feature),
                            checked with the limits
    Setup
      columns, summary      the metrics.csv columns in order; run-level facts for run.json
      start(seeds)          -> Trainer for one group, at round 0
    Trainer                 the state of one group of seeds
      advance(r)            round r -> r + 1
      evaluate(r)           one metrics row per seed of the group, at the current state
      launch_evaluation(r)  evaluate(r), read later: a trainer that `overlaps_evaluation` runs it beside the next
                            advance(r), and the driver reads its rows after that advance
      clock(r)              engines on a virtual clock: the simulated time from which the model after
                            r rounds is the server's (clock(0) = 0; inf when no round r closes)
      state_dict(), load_state_dict(state)   everything a bit-exact resume needs
      info                  per-seed facts for run.json (hashes of partitions, ...)
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import numpy as np

from fedrepro.algorithms import foreign_settings
from fedrepro.data.registry import get_dataset
from fedrepro.engines.context import RunContext
from fedrepro.errors import ConfigError
from fedrepro.numerics import keying, numerics_version
from fedrepro.seeding import Keying

Row = dict[str, Any]

# sizes a run holds in memory (Engine.size_limits): far above every paper's (20 seeds, 35,000 steps, 2,020 rows)
MAX_SEEDS = 1000
MAX_STEPS = 10_000_000
MAX_ROWS = 1_000_000
# the most runtime a cluster job asks for: a usual cluster's limit. A longer run is several jobs, one after another,
# each resuming from the last checkpoint (`checkpoint_every`) of the one before (rule train's `retries`)
MAX_JOB_MINUTES = 48 * 60


class Trainer:
    overlaps_evaluation = False

    def __init__(self, seeds: list[int]) -> None:
        self.seeds = seeds
        self.info: dict[int, dict[str, Any]] = {s: {} for s in seeds}

    def advance(self, r: int) -> None:
        raise NotImplementedError

    def evaluate(self, r: int) -> list[Row]:
        raise NotImplementedError

    def launch_evaluation(self, r: int) -> Callable[[], list[Row]]:
        rows = self.evaluate(r)
        return lambda: rows

    def clock(self, r: int) -> float | None:
        return None

    def state_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def load_state_dict(self, state: dict[str, Any]) -> None:
        raise NotImplementedError


class Setup:
    columns: list[str]
    summary: dict[str, Any]

    def start(self, seeds: list[int]) -> Trainer:
        raise NotImplementedError


class Limit(NamedTuple):
    """A setting (or product of settings) `key` = `value` that may not exceed `limit`, which is `what`."""
    key: str
    value: int
    limit: int
    what: str


class Length(NamedTuple):
    """A setting `key` (dotted: a key inside a setting, `activation.p`) that, when a list, must hold `length`
    values, one per `what`."""
    key: str
    length: int
    what: str


def wrong_lengths(spec: dict[str, Any], lengths: list[Length]) -> list[str]:
    """What is wrong with the list-valued settings of `spec`: each list whose length is not the one it must have."""
    problems = []
    for expected in lengths:
        value: Any = spec
        for part in expected.key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, list) and len(value) != expected.length:
            problems.append(f"{expected.key} lists {len(value)} value(s), but a run of these settings needs "
                            f"{expected.length}: one per {expected.what}")
    return problems


def setting_limit(spec: dict[str, Any], key: str, bound: str) -> list[Limit]:
    """spec[key] <= spec[bound] (e.g. S <= n_clients), when both are numbers (a batch may be "full")."""
    value, limit = spec.get(key), spec.get(bound)
    if isinstance(value, int) and isinstance(limit, int) and not isinstance(value, bool):
        return [Limit(key, value, limit, bound)]
    return []


def rows_limit(spec: dict[str, Any], clients: str, samples: str) -> list[Limit]:
    """clients x samples per client <= the training rows of the run's dataset (data/registry.py)."""
    rows = get_dataset(spec["dataset"]).rows
    if rows is None:
        return []
    return [Limit(f"{clients} x {samples}", spec[clients] * spec[samples], rows, f"the rows of {spec['dataset']}")]


class Engine:
    name: str = ""
    schema: str = ""
    x: tuple[str, ...] = ("round",)
    steps_key: str = "rounds"  # the spec key counting the driver's steps (advance calls) on the round cadence
    metrics: tuple[str, ...] = ()  # checked at start-up (validate.py) when given
    watch: str = ""
    trains_networks: bool = False  # paper-scale jobs then ask a cluster for a GPU
    ms_per_round: int = 100  # generous CPU milliseconds per round and seed, for cluster runtime limits

    @property
    def numerics(self) -> int:
        """This engine's numerics version (numerics.py): part of its run ids when non-zero."""
        return numerics_version(self.name)

    @property
    def keying(self) -> Keying:
        """Which settings key this engine's random streams (numerics.py KEYING): RunContext.streams and the engine's
        own draws read it."""
        return keying(self.name)

    def setup(self, spec: dict[str, Any], arrays: dict[str, np.ndarray], ctx: RunContext) -> Setup:
        """The run's numerics, before any seed: `arrays` is its one prepared input, the file the spec names
        (data/inputs.py prepared_path; a multi-view folder's memmaps and meta)."""
        raise NotImplementedError

    def seed_groups(self, seeds: list[int]) -> list[list[int]]:
        return [[s] for s in seeds]

    def runtime_minutes(self, spec: dict[str, Any]) -> int:
        """A generous wall-clock limit of one run for a cluster scheduler."""
        return 10 + int(spec["seeds"] * spec[self.steps_key] * self.ms_per_round / 60_000)

    def job_minutes(self, spec: dict[str, Any]) -> int:
        """The runtime one of the run's cluster jobs asks for: its whole runtime, at most MAX_JOB_MINUTES."""
        return min(self.runtime_minutes(spec), MAX_JOB_MINUTES)

    def jobs(self, spec: dict[str, Any]) -> int:
        """The cluster jobs the run may take, each of job_minutes, each going on from the one before's checkpoint."""
        return -(-self.runtime_minutes(spec) // MAX_JOB_MINUTES)

    def limits(self, spec: dict[str, Any]) -> list[Limit]:
        """The limits of a run's settings that are known before any data is read (Limit)."""
        return []

    def lengths(self, spec: dict[str, Any]) -> list[Length]:
        """The lengths of a run's list-valued settings, known before any data is read (Length); a setting that may
        be a number or a list (theta0, K) is checked when it is a list."""
        return []

    def size_limits(self, spec: dict[str, Any]) -> list[Limit]:
        """The sizes every run holds in memory: its seeds, its steps (a simulated clock's schedule) and its metrics
        rows (seeds x evaluation points), each far above any paper's and within a machine's memory."""
        seeds, steps = spec.get("seeds"), spec.get(self.steps_key)
        limits = []
        if isinstance(seeds, int):
            limits.append(Limit("seeds", seeds, MAX_SEEDS, "the most seeds of a run"))
        if isinstance(steps, int):
            limits.append(Limit(self.steps_key, steps, MAX_STEPS, "the most steps of a run"))
        points = None
        every, horizon = spec.get("eval_every_time"), spec.get("time_horizon")
        if isinstance(every, (int, float)) and isinstance(horizon, (int, float)) and every > 0:
            points = int(horizon / every) + 1
        elif isinstance(steps, int) and isinstance(spec.get("eval_every", 1), int):
            points = steps // max(1, spec.get("eval_every", 1)) + 1
            points += max(-1, spec.get("eval_dense_until", -1)) // max(1, spec.get("eval_dense_every", 1)) + 1
        if isinstance(seeds, int) and points is not None:
            limits.append(Limit("seeds x evaluation points", seeds * points, MAX_ROWS,
                                "the most metrics rows a run holds in memory"))
        return limits

    def check_limits(self, spec: dict[str, Any], where: str) -> None:
        """Stop a run whose settings exceed a limit, with a message naming the key, value and limit, whose list
        setting has the wrong length, naming the key and the length it needs, or that sets what only another method
        of the engine reads (algorithms/__init__.py foreign_settings), naming it."""
        over = [f"{lim.key} = {lim.value} exceeds {lim.what} ({lim.limit})"
                for lim in self.size_limits(spec) + self.limits(spec) if lim.value > lim.limit]
        over += wrong_lengths(spec, self.lengths(spec))
        over += [f"{key} does not apply to algorithm {spec.get('algorithm')!r} (only other methods of engine "
                 f"{self.name} read it)" for key in foreign_settings(self.name, spec)]
        if over:
            raise ConfigError(f"{where}: " + "; ".join(over))

    def diverged(self, spec: dict[str, Any], row: Row) -> bool:
        """The watched metric is not finite, or above the spec's `divergence_threshold` if it has one."""
        value = float(row[self.watch])
        return not math.isfinite(value) or value > float(spec.get("divergence_threshold", math.inf))

    def describe(self, row: Row) -> str:
        """The metrics of a row worth a log line."""
        return f"{self.watch} = {row[self.watch]:.4e}"
