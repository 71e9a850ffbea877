"""The one shape of an algorithm, in FedJAX's spirit: built once for a run (and seed) from what it reads
(the problem or model, its hyperparameters, its random streams), it is two pure functions over an explicit
server state that the engine holds:

    init() -> state                      the server state before round 0
    round(state, r) -> (state, info)     round r: the next state, and what the round counted (clients, ...)

`round` never changes the state it is given, and all its randomness comes from named streams keyed by the
round, so round(state, r) depends only on its arguments: the engine saves a state as it is and a run resumes
bit-exactly from it. A method's hyperparameters are declared with it (each family's `hyperparameters` or
`from_spec`), so no engine branches on a method's name.
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
