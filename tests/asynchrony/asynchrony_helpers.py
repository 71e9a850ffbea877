"""The paper's system constants as a test fixture, and readings of a Trace / Timeline the tests check protocols with."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from fedrepro.asynchrony import TIMELINE_KINDS, SystemModel, Timeline, Trace
from fedrepro.errors import ConfigError

# The paper's per-dataset constants (Sec. 4.1.3; the runs take theirs from config/papers/defedavg.yaml).
# MB = 1e6 bytes (docs/papers/defedavg.md R8: 44.0 / 70.6 ms per transfer; MiB would add 5%).
PAPER_SYSTEMS: dict[str, dict[str, float]] = {
    "fashion_mnist": {"flops_per_iteration": 17.0e6, "model_bytes": 2.2e6},
    "cifar10": {"flops_per_iteration": 31.4e6, "model_bytes": 3.53e6},
}


def system_from_config(config: Mapping[str, object]) -> SystemModel:
    """From a config mapping: ``dataset`` (a PAPER_SYSTEMS key) fills in the paper's constants,
    every other key is a field and overrides them."""
    values = dict(config)
    dataset = values.pop("dataset", None)
    base: dict[str, object] = {}
    if dataset is not None:
        if dataset not in PAPER_SYSTEMS:
            raise ConfigError(f"system.dataset={dataset!r} has no paper constants; known: {sorted(PAPER_SYSTEMS)}")
        base = dict(PAPER_SYSTEMS[dataset])
    fields = {f.name for f in dataclasses.fields(SystemModel)}
    unknown = sorted(set(values) - fields)
    if unknown:
        raise ConfigError(f"unknown system keys {unknown}; allowed: {sorted(fields | {'dataset'})}")
    base.update(values)
    missing = sorted({"flops_per_iteration", "model_bytes"} - set(base))
    if missing:
        raise ConfigError(f"system config lacks {missing}: give them or a `dataset` among {sorted(PAPER_SYSTEMS)}")
    if "speed_range" in base:
        base["speed_range"] = tuple(base["speed_range"])  # YAML gives a list
    return SystemModel(**base)


def records_of_round(trace: Trace, t: int) -> slice:
    """The rows of round t's records."""
    lo, hi = np.searchsorted(trace.round, [t, t + 1], side="left")
    return slice(int(lo), int(hi))


def round_durations(trace: Trace) -> np.ndarray:
    """(R,) b_{t+1} - b_t with b_0 = 0 (round 0 includes the start-up)."""
    return np.diff(trace.close_time, prepend=0.0)


def of_client(timeline: Timeline, client: int) -> list[tuple[str, float, float, int]]:
    """(kind, start, end, training) of one client, in time order."""
    rows = np.flatnonzero(timeline.client == client)
    rows = rows[np.lexsort((timeline.kind[rows], timeline.start[rows]))]
    return [(TIMELINE_KINDS[timeline.kind[r]], float(timeline.start[r]), float(timeline.end[r]),
             int(timeline.training[r])) for r in rows]


def idle(timeline: Timeline, client: int, until: float) -> list[tuple[float, float]]:
    """Gaps between the client's busy intervals in [0, until]."""
    gaps, t = [], 0.0
    for _, start, end, _ in of_client(timeline, client):
        if start > t:
            gaps.append((t, min(start, until)))
        t = max(t, end)
        if t >= until:
            break
    if t < until:
        gaps.append((t, until))
    return [(a, b) for a, b in gaps if b > a]
