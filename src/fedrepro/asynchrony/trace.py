"""The output of the timing phase: which trainings the server consumes, when, and with what weight.

One record per *consumed* training (docs/engines.md): (client, training index j, start_version, n_steps,
round, weight). The learning phase computes only these: record r is LocalSGD from w^{start_version}
for n_steps steps on client ``client`` with its minibatch stream keyed by (client, training), and
round t sets w^{t+1} = w^t - eta * sum over its records of weight * Delta. Trainings that were
overwritten or still running at the end cost simulated time but have no record. ``training``
counts every training the client started, consumed or not, so a record's key does not depend on
which other trainings were consumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

TIMELINE_KINDS = ("train", "upload", "download")


@dataclass(frozen=True)
class Timeline:
    """Busy intervals per client for a Gantt chart (paper Fig. 1); idle time is the gaps.

    A paused training (an upload from the send buffer interrupts it) shows as two ``train``
    intervals with the same ``training`` index. ``training`` is -1 for downloads. Only completed
    intervals are recorded: what is under way when the simulation stops is left out.
    """

    client: np.ndarray  # (M,) int64
    kind: np.ndarray  # (M,) int8, index into TIMELINE_KINDS
    start: np.ndarray  # (M,) float64 seconds
    end: np.ndarray  # (M,) float64 seconds
    training: np.ndarray  # (M,) int64


@dataclass(frozen=True)
class Trace:
    """Records sorted by (round, client, training); ``close_time[t]`` = b_{t+1}, the instant round t
    closes and w^{t+1} is broadcast (b_0 = 0 is implicit)."""

    protocol: str
    n_clients: int
    n_per_round: int
    local_steps: int
    client: np.ndarray  # (M,) int64
    training: np.ndarray  # (M,) int64, the client's j-th training (0-based, counting unconsumed ones)
    start_version: np.ndarray  # (M,) int64
    n_steps: np.ndarray  # (M,) int64, K or fewer (FAVANO interrupts)
    round: np.ndarray  # (M,) int64, consuming round t
    weight: np.ndarray  # (M,) float64, multiplier of Delta in the round's sum
    close_time: np.ndarray  # (R,) float64
    trainings_started: np.ndarray  # (N,) int64, every training begun (consumed, overwritten or running)
    iteration_time: np.ndarray  # (N,) float64 simulated seconds per local step
    end_time: float  # the horizon, or the last close time on the round axis
    options: dict[str, Any] = field(default_factory=dict)
    timeline: Timeline | None = None

    def __post_init__(self) -> None:
        m = self.client.shape
        for name in ("training", "start_version", "n_steps", "round", "weight"):
            if getattr(self, name).shape != m:
                raise ValueError(f"trace column {name} has shape {getattr(self, name).shape}, expected {m}")
        if m[0] and np.any(np.diff(self.round) < 0):
            raise ValueError("trace records must be sorted by round")
        if np.any(self.start_version > self.round):
            raise ValueError("a record cannot start from a version newer than its consuming round")

    # --- rounds -------------------------------------------------------------------------------

    @property
    def n_rounds(self) -> int:
        return int(self.close_time.size)

    @property
    def round_bounds(self) -> np.ndarray:
        """(R + 1,) offsets: round t's records are rows round_bounds[t]:round_bounds[t + 1]."""
        return np.searchsorted(self.round, np.arange(self.n_rounds + 1), side="left")

    # --- staleness and participation --------------------------------------------------------------

    @property
    def staleness(self) -> np.ndarray:
        """(M,) rounds between a record's start version and its consuming round."""
        return self.round - self.start_version

    def participation(self) -> np.ndarray:
        """(N,) consumed trainings per client; each was one upload, so these are also the upload counts."""
        return np.bincount(self.client, minlength=self.n_clients)

    # --- what the learning phase must keep ---------------------------------------------------------

    def version_refcounts(self) -> np.ndarray:
        """(R + 1,) how many records start from each version w^0 .. w^R."""
        return np.bincount(self.start_version, minlength=self.n_rounds + 1)

    def summary(self) -> dict[str, float]:
        """Scalars for logs and tests."""
        r = self.n_rounds
        stale = self.staleness
        return {
            "rounds": r,
            "records": int(self.client.size),
            "mean_round_time": float(self.close_time[-1] / r) if r else float("nan"),
            "mean_staleness": float(stale.mean()) if stale.size else float("nan"),
            "max_staleness": int(stale.max()) if stale.size else 0,
            "uploads_per_second": float(self.client.size / self.end_time) if self.end_time > 0 else float("nan"),
            "consumed_fraction": float(self.client.size / max(int(self.trainings_started.sum()), 1)),
        }


class TraceBuilder:
    """Collects records as a protocol consumes trainings; a round's records count only once the
    round closes, so a round cut off by the horizon leaves nothing behind."""

    def __init__(self, n_clients: int, record_timeline: bool) -> None:
        self.n_clients = n_clients
        self._cols: tuple[list, ...] = ([], [], [], [], [], [])  # client, training, version, steps, round, weight
        self._pending: list[tuple[int, int, int, int, float]] = []
        self.close_times: list[float] = []
        self._timeline: tuple[list, ...] | None = ([], [], [], [], []) if record_timeline else None

    @property
    def records_timeline(self) -> bool:
        return self._timeline is not None

    @property
    def round(self) -> int:
        """The round now collecting records."""
        return len(self.close_times)

    def consume(self, client: int, training: int, version: int, steps: int, weight: float) -> None:
        self._pending.append((client, training, version, steps, weight))

    def close_round(self, time: float) -> None:
        t = len(self.close_times)
        client, training, version, steps, rnd, weight = self._cols
        for c, j, v, k, w in self._pending:
            client.append(c)
            training.append(j)
            version.append(v)
            steps.append(k)
            rnd.append(t)
            weight.append(w)
        self._pending.clear()
        self.close_times.append(time)

    def interval(self, client: int, kind: int, start: float, end: float, training: int = -1) -> None:
        if self._timeline is not None and end > start:
            for col, value in zip(self._timeline, (client, kind, start, end, training)):
                col.append(value)

    def build(self, *, protocol: str, n_per_round: int, local_steps: int, trainings_started: np.ndarray,
              iteration_time: np.ndarray, end_time: float, options: dict[str, Any]) -> Trace:
        client, training, version, steps, rnd, weight = (np.asarray(c) for c in self._cols)
        order = np.lexsort((training, client, rnd)) if client.size else np.zeros(0, dtype=np.int64)
        ints = [np.asarray(a, dtype=np.int64)[order] for a in (client, training, version, steps, rnd)]
        timeline = None
        if self._timeline is not None:
            c, k, s, e, j = (np.asarray(col) for col in self._timeline)
            keep = s < end_time  # clip to the simulated span
            timeline = Timeline(
                client=c[keep].astype(np.int64), kind=k[keep].astype(np.int8), start=s[keep].astype(np.float64),
                end=np.minimum(e[keep], end_time).astype(np.float64), training=j[keep].astype(np.int64),
            )
        return Trace(
            protocol=protocol, n_clients=self.n_clients, n_per_round=n_per_round, local_steps=local_steps,
            client=ints[0], training=ints[1], start_version=ints[2], n_steps=ints[3], round=ints[4],
            weight=np.asarray(weight, dtype=np.float64)[order], close_time=np.asarray(self.close_times, dtype=np.float64),
            trainings_started=np.asarray(trainings_started, dtype=np.int64),
            iteration_time=np.asarray(iteration_time, dtype=np.float64), end_time=float(end_time),
            options=dict(options), timeline=timeline,
        )
