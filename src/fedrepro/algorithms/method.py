"""The one shape of an algorithm, in FedJAX's spirit: built once for a run (and seed) from what it reads
(the problem or model, its hyperparameters, its random streams), it is two pure functions over an explicit
server state that the engine holds:

    init() -> state                      the server state before round 0
    round(state, r) -> (state, info)     round r: the next state, and what the round counted (clients, ...)

`round` never changes the state it is given, and all its randomness comes from named streams keyed by the
round, so round(state, r) depends only on its arguments: the engine saves a state as it is and a run resumes
bit-exactly from it.

Every method is built the same way, by the entry the registry (algorithms/__init__.py METHODS) holds for it
under its engine and name:

    build(spec, env, streams) -> Method  from the run's settings (the method reads its own hyperparameters from
                                         them), what its engine gives it to train on (`env`, one type per
                                         engine) and the seed's random streams

so no engine branches on a method's name or reaches past init() and round().
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable


State = Any  # a tensor, or a dict of tensors and numbers: all a round reads of the past
Info = dict[str, Any]


@runtime_checkable
class Method(Protocol):
    def init(self) -> State: ...

    def round(self, state: State, r: int) -> tuple[State, Info]: ...


class Builder(Protocol):
    """A registry entry: a method's class, or a record of it (an asynchronous protocol, a Monte Carlo round step)."""

    def build(self, spec: dict[str, Any], env: Any, streams: Any) -> Method: ...


@dataclass(frozen=True)
class Rounds:
    """A Method made of two functions (for methods written as closures)."""

    init: Callable[[], State]
    round: Callable[[State, int], tuple[State, Info]]


def restore(saved: State, fresh: State) -> State:
    """A saved state (a checkpoint's, which the checkpoint reader loads onto the run's device), refused unless
    it has the keys of `fresh`, the method's init(): a state of another method or layout."""
    if isinstance(fresh, dict) and saved.keys() != fresh.keys():
        raise ValueError(f"a saved state with keys {sorted(saved)}, expected {sorted(fresh)}")
    return saved
