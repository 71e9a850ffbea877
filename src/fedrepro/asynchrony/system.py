"""The simulated hardware: how long a local step and a model transfer take (DeFedAvg paper §4.1.3).

Paper Sec. 4.1.3: T_iter = N_MAC / C_MAC for the fastest client (C_MAC = 10 GFLOPS), client speeds
"uniform over [1, 5]" with the slowest five times slower, 400 Mbps up and down, payload = model size.
The simulator charges these constants whatever model the learning phase trains, so a reduced-scale
run keeps the paper's compute/communication ratio (docs/papers/defedavg.md R28: ``compute_time_scale``
makes K=10 steps cost what the paper's K=50 cost).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.errors import ConfigError

SPEED_MODELS = ("literal", "time_uniform")


@dataclass(frozen=True)
class SystemModel:
    """Constants of the wall-clock model; every one is a config value.

    ``speed_model``: ``literal`` draws a speed v ~ U[lo, hi] per client and slows it down by
    m = hi / v (default, docs/papers/defedavg.md R7; mean m = 2.01 for [1, 5]); ``time_uniform`` draws m ~ U[1, hi/lo]
    directly (mean 3). Both make the slowest client hi/lo times slower than the fastest.
    """

    flops_per_iteration: float  # N_MAC: one local step on a minibatch of 10
    model_bytes: float  # payload of a download and of an upload (bytes, MB = 1e6)
    fastest_flops: float = 10e9  # C_MAC, FLOP/s of the fastest possible client
    speed_model: str = "literal"
    speed_range: tuple[float, float] = (1.0, 5.0)
    uplink_bps: float = 400e6
    downlink_bps: float = 400e6
    compute_time_scale: float = 1.0  # simulated seconds per local step are multiplied by this
    jitter: str | None = None  # exponential jitter of compute times: not implemented

    def __post_init__(self) -> None:
        for name in ("flops_per_iteration", "model_bytes", "fastest_flops", "uplink_bps", "downlink_bps",
                     "compute_time_scale"):
            value = getattr(self, name)
            zero_ok = name == "model_bytes"  # 0 switches communication cost off (paper Fig. 1 ignores it)
            if (isinstance(value, bool) or not isinstance(value, (int, float)) or not value < np.inf
                    or not (value >= 0 if zero_ok else value > 0)):
                kind = "non-negative" if zero_ok else "positive"
                raise ConfigError(f"system.{name} must be a {kind} finite number, got {value!r}")
        if self.speed_model not in SPEED_MODELS:
            raise ConfigError(f"system.speed_model must be one of {list(SPEED_MODELS)}, got {self.speed_model!r}")
        try:
            lo, hi = (float(x) for x in self.speed_range)
        except (TypeError, ValueError):
            lo = hi = float("nan")
        if not (0 < lo <= hi < np.inf):
            raise ConfigError(f"system.speed_range must be [lo, hi] with 0 < lo <= hi, got {self.speed_range!r}")
        object.__setattr__(self, "speed_range", (float(lo), float(hi)))
        if self.jitter is not None:
            # The paper's times are averages; deterministic times reproduce its magnitudes (docs/papers/defedavg.md R7).
            raise ConfigError(
                f"system.jitter={self.jitter!r}: random compute-time jitter is not implemented; leave it unset "
                "(compute times are deterministic per client)"
            )

    @property
    def fastest_iteration_time(self) -> float:
        """Seconds of one local step on the fastest client (1.7 ms FMNIST, 3.14 ms CIFAR-10)."""
        return self.flops_per_iteration / self.fastest_flops * self.compute_time_scale

    @property
    def upload_time(self) -> float:
        return self.model_bytes * 8.0 / self.uplink_bps

    @property
    def download_time(self) -> float:
        return self.model_bytes * 8.0 / self.downlink_bps

    def slowdowns(self, n_clients: int, rng: np.random.Generator) -> np.ndarray:
        """(n_clients,) slowdown factors m_i >= 1, drawn once per seed and fixed for the run."""
        if isinstance(n_clients, bool) or int(n_clients) != n_clients or n_clients < 1:
            raise ConfigError(f"n_clients must be a positive integer, got {n_clients!r}")
        lo, hi = self.speed_range
        if self.speed_model == "literal":
            return hi / rng.uniform(lo, hi, size=int(n_clients))
        return rng.uniform(1.0, hi / lo, size=int(n_clients))

    def iteration_times(self, slowdowns: np.ndarray) -> np.ndarray:
        """Seconds of one local step per client."""
        return np.asarray(slowdowns, dtype=np.float64) * self.fastest_iteration_time
