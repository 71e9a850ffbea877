"""Every family's methods have the one shape of algorithms/method.py: init() and round(state, r), with the
state held by the engine (no method keeps its own state_dict)."""

from __future__ import annotations

import pytest

from fedrepro.algorithms import ALGORITHMS as FINITE_SUM
from fedrepro.algorithms.asynchronous import AsyncRounds
from fedrepro.algorithms.fedcluster import ALGORITHMS as NETWORK
from fedrepro.algorithms.method import Method, Rounds
from fedrepro.algorithms.tdcd import TDCD


@pytest.mark.parametrize("family", [*FINITE_SUM.values(), *NETWORK.values(), AsyncRounds, TDCD],
                         ids=lambda c: c.__name__)
def test_every_family_has_the_method_shape(family):
    assert issubclass(family, Method)
    assert not any(hasattr(family, name) for name in ("state_dict", "load_state_dict", "iterate", "advance"))


def test_a_method_made_of_two_functions_has_it_too():
    """fedvr's methods are closures over every Monte Carlo run's theta, made a Method by Rounds."""
    rounds = Rounds(lambda: 0, lambda state, r: (state + 1, {}))
    assert isinstance(rounds, Method) and rounds.round(rounds.init(), 0) == (1, {})
