"""Entry point of the timing phase: ``simulate(protocol, system, ...) -> Trace``.

Each protocol is one function over a SimContext plus its own keyword options; PROTOCOLS lists them by name
with their options' defaults and allowed values, so a new asynchronous method is one more entry. An
asynchronous algorithm holds its Protocol (algorithms/asynchronous.py), so a run looks it up once.

Random streams (docs/papers/defedavg.md R24): client speeds and server sampling come from two streams named by
``rng_parts`` plus a purpose. The engine builds rng_parts with ``timing_rng_parts(spec, seed)`` from
the keys that define the simulated fleet only, so learning rates, the model or the data setting
never change a trace, and every algorithm of a seed sees the same speeds (common random numbers).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedrepro.asynchrony.context import SimContext
from fedrepro.asynchrony.favano import REWEIGHTS, simulate_favano
from fedrepro.asynchrony.fedavg_sync import DUPLICATES, simulate_fedavg
from fedrepro.asynchrony.first_arrivals import STALENESS_WEIGHTS, simulate_first_arrivals
from fedrepro.asynchrony.send_buffers import SEND_BUFFER_MODES, simulate_send_buffers
from fedrepro.asynchrony.system import SystemModel
from fedrepro.asynchrony.trace import Trace, TraceBuilder
from fedrepro.errors import ConfigError
from fedrepro.seeding import numpy_rng


@dataclass(frozen=True)
class Option:
    default: Any
    allowed: tuple | None = None  # None: any value the check accepts
    check: Callable[[Any], bool] | None = None
    hint: str = ""


@dataclass(frozen=True)
class Protocol:
    name: str
    run: Callable[..., np.ndarray]  # (ctx, **options) -> trainings started per client
    options: Mapping[str, Option] = field(default_factory=dict)
    fixed: Mapping[str, Any] = field(default_factory=dict)  # options the protocol pins, not settable
    local_steps: int | None = None  # pinned K (AsySG sends one gradient)
    sampling: str = "with replacement"


def _nonnegative(x: Any) -> bool:
    return not isinstance(x, bool) and isinstance(x, (int, float)) and 0 <= x < math.inf


_STALENESS = Option("sqrt", tuple(STALENESS_WEIGHTS), hint="FedBuff's staleness weight s(tau)")

PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (
    Protocol("fedavg", simulate_fedavg, {"fedavg_duplicates": Option("merge", DUPLICATES)}),
    Protocol("defedavg_iid", simulate_first_arrivals, fixed={"staleness_weight": "none"}, sampling="first arrivals"),
    Protocol("fedbuff", simulate_first_arrivals, {"fedbuff_staleness": _STALENESS}, sampling="first arrivals"),
    Protocol("asysg", simulate_first_arrivals, fixed={"staleness_weight": "none"}, local_steps=1,
             sampling="first arrivals"),
    Protocol("defedavg_niid", simulate_send_buffers, {
        "niid_send_buffer": Option("continuous", SEND_BUFFER_MODES),
        "niid_upload_pauses_training": Option(True, (True, False)),
    }),
    Protocol("favano", simulate_favano, {
        "favano_period_wait_s": Option(0.0, check=_nonnegative, hint="a number of seconds >= 0"),
        "favano_reweight": Option("none", REWEIGHTS),
    }, sampling="without replacement"),
)}



def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _resolve_options(protocol: Protocol, given: Mapping[str, Any]) -> dict[str, Any]:
    name = protocol.name
    unknown = sorted(set(given) - set(protocol.options))
    if unknown:
        allowed = sorted(protocol.options) or "none"
        raise ConfigError(f"protocol {name!r} has no option(s) {unknown}; its options: {allowed}")
    resolved: dict[str, Any] = {}
    for key, opt in protocol.options.items():
        value = given.get(key, opt.default)
        ok = (value in opt.allowed and type(value) is type(opt.default)) if opt.allowed else opt.check(value)
        if not ok:
            expected = list(opt.allowed) if opt.allowed else opt.hint
            raise ConfigError(f"{key}={value!r} is not allowed for {name!r}; expected {expected}")
        resolved[key] = value
    return resolved


def simulate(
    protocol: Protocol,
    system: SystemModel,
    *,
    n_clients: int,
    n_per_round: int,
    local_steps: int,
    horizon_time: float | None = None,
    rounds: int | None = None,
    rng_parts: tuple = (),
    slowdowns: np.ndarray | None = None,
    record_timeline: bool = False,
    **options: Any,
) -> Trace:
    """Simulate ``protocol`` until ``horizon_time`` seconds (rounds closing after it are left out)
    and/or ``rounds`` closed rounds, whichever comes first.

    ``slowdowns`` (N,) overrides the drawn speeds (m_i > 0 multiplies the fastest client's step
    time), for hand-built cases. ``record_timeline`` keeps every busy interval for a Gantt chart.
    """
    if not isinstance(protocol, Protocol):
        raise ConfigError(f"protocol must be a Protocol (asynchrony.PROTOCOLS), got {type(protocol).__name__}")
    name = protocol.name
    if not isinstance(system, SystemModel):
        raise ConfigError(f"system must be a SystemModel, got {type(system).__name__}")
    N = _positive_int("n_clients", n_clients)
    n = _positive_int("n_per_round", n_per_round)
    K = _positive_int("local_steps", local_steps)
    if protocol.local_steps is not None and K != protocol.local_steps:
        raise ConfigError(f"{name!r} runs exactly {protocol.local_steps} local step(s) per upload; got local_steps={K}")
    if protocol.sampling == "without replacement" and n > N:
        raise ConfigError(f"{name!r} picks n_per_round={n} distinct clients out of n_clients={N}: need n <= N")
    if horizon_time is None and rounds is None:
        raise ConfigError("give horizon_time (seconds, time axis) or rounds (round axis), or both")
    if horizon_time is not None and (isinstance(horizon_time, bool) or not _nonnegative(horizon_time)):
        raise ConfigError(f"horizon_time must be a finite number of seconds >= 0, got {horizon_time!r}")
    max_rounds = math.inf if rounds is None else _positive_int("rounds", rounds)
    resolved = _resolve_options(protocol, options)

    if slowdowns is None:
        slowdowns = system.slowdowns(N, numpy_rng(*rng_parts, "client_speeds"))
    slowdowns = np.asarray(slowdowns, dtype=np.float64)
    if slowdowns.shape != (N,) or not np.all(np.isfinite(slowdowns)) or np.any(slowdowns <= 0):
        raise ConfigError(f"slowdowns must be {N} positive finite numbers, got shape {slowdowns.shape}")
    iteration_time = system.iteration_times(slowdowns)

    out = TraceBuilder(N, record_timeline)
    ctx = SimContext(
        n_clients=N, n_per_round=n, local_steps=K, iteration_time=iteration_time.tolist(),
        upload_time=system.upload_time, download_time=system.download_time,
        horizon_time=math.inf if horizon_time is None else float(horizon_time), max_rounds=max_rounds,
        sampling_rng=numpy_rng(*rng_parts, "server_sampling"), out=out,
    )
    run_options = {**protocol.fixed, **resolved}
    if "fedbuff_staleness" in run_options:
        run_options["staleness_weight"] = run_options.pop("fedbuff_staleness")
    started = protocol.run(ctx, **run_options)
    return out.build(
        protocol=name, n_per_round=n, local_steps=K, trainings_started=started,
        iteration_time=iteration_time, end_time=ctx.end_time(), options=resolved,
    )
