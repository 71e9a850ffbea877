"""What every protocol reads: per-client durations, transfer times, stopping rule, streams, output."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fedrepro.asynchrony.trace import TraceBuilder


@dataclass
class SimContext:
    n_clients: int
    n_per_round: int
    local_steps: int
    iteration_time: list[float]  # seconds per local step, per client
    upload_time: float
    download_time: float
    horizon_time: float  # math.inf on the round axis
    max_rounds: int | float  # math.inf on the time axis
    sampling_rng: np.random.Generator  # the server's draws; speeds come from another stream
    out: TraceBuilder

    @property
    def training_time(self) -> list[float]:
        """Seconds of a full K-step training per client."""
        return [self.local_steps * it for it in self.iteration_time]

    def finished(self) -> bool:
        return self.out.round >= self.max_rounds

    def end_time(self) -> float:
        """The span the trace covers: the horizon, or the last close on the round axis."""
        if math.isfinite(self.horizon_time):
            return self.horizon_time
        return self.out.close_times[-1] if self.out.close_times else 0.0
