"""Every method of the registry (algorithms/__init__.py METHODS), of every engine, has the one shape of
algorithms/method.py: built by its entry's build(spec, env, streams) on a tiny run of its engine (method_envs.py),
it runs two rounds as pure functions of (state, round) over a state the engine holds."""

from __future__ import annotations

import copy

import pytest

from fedrepro.algorithms import METHODS, foreign_settings, method
from fedrepro.algorithms.method import Method, Rounds
from method_envs import ENVS, env_for, same

REGISTERED = [(engine, name) for engine, methods in METHODS.items() for name in methods]


def test_every_engine_of_the_registry_has_a_tiny_run():
    assert set(ENVS) == set(METHODS)


@pytest.mark.parametrize(("engine", "name"), REGISTERED, ids=[f"{e}-{n}" for e, n in REGISTERED])
def test_every_registered_method_builds_and_runs_two_rounds_as_pure_functions(engine, name):
    spec, env, streams = env_for(engine, name)
    built = method(engine, name).build(spec, env, streams)
    assert isinstance(built, Method)
    assert not any(hasattr(built, attr) for attr in ("state_dict", "load_state_dict", "iterate", "advance"))
    state0 = built.init()
    saved0 = copy.deepcopy(state0)
    state1, info = built.round(state0, 0)
    assert isinstance(info, dict) and same(state0, saved0)  # a round leaves the state it is given alone
    saved1 = copy.deepcopy(state1)
    state2, _ = built.round(state1, 1)
    assert same(state1, saved1) and not same(state2, state0)

    # the same settings and streams give the same rounds, also from a copy of a saved state (as after a resume)
    spec, env, streams = env_for(engine, name)
    again = method(engine, name).build(spec, env, streams)
    assert same(again.init(), saved0)
    assert same(again.round(copy.deepcopy(saved1), 1)[0], state2)


@pytest.mark.parametrize(("engine", "name"), REGISTERED, ids=[f"{e}-{n}" for e, n in REGISTERED])
def test_a_method_runs_the_same_without_the_settings_only_other_methods_read(engine, name):
    """What the engine refuses on a method's runs (foreign_settings: what other entries declare and this one does
    not) is indeed what it never reads."""
    spec, env, streams = env_for(engine, name)
    lean = {key: value for key, value in spec.items() if key not in foreign_settings(engine, spec)}
    rounds = []
    for settings in (spec, lean):
        _, env, streams = env_for(engine, name)
        built = method(engine, name).build(settings, env, streams)
        rounds.append(built.round(built.init(), 0)[0])
    assert same(*rounds)


def test_a_method_made_of_two_functions_has_it_too():
    """fedvr's methods are closures over every Monte Carlo run's theta, made a Method by Rounds."""
    rounds = Rounds(lambda: 0, lambda state, r: (state + 1, {}))
    assert isinstance(rounds, Method) and rounds.round(rounds.init(), 0) == (1, {})
