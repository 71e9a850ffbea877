"""Which settings key an engine's random streams is declared once per engine (numerics.py KEYING, seeding.Keying),
and the run streams, the engines' own draws, the claims that pool draws and the tunings read that declaration."""

from __future__ import annotations

from pathlib import Path

import yaml

from fedrepro.algorithms.fedvr import DEFAULT_HP
from fedrepro.engines import ENGINES
from fedrepro.numerics import KEYING, keying
from fedrepro.seeding import Keying, stream_key
from fedrepro.variants.tune import pairing

SCHEMAS = Path(__file__).resolve().parents[2] / "workflow" / "schemas"


def test_every_engine_declares_its_keying_and_names_only_its_own_settings():
    assert set(KEYING) == set(ENGINES)
    for name, engine in ENGINES.items():
        assert engine.keying is KEYING[name] is keying(name)
        settings = set(yaml.safe_load((SCHEMAS / engine.schema).read_text())["properties"])
        declared = engine.keying
        named = {*(declared.only or ()), *declared.ignored, *(k for keys in declared.draws.values() for k in keys)}
        assert named <= settings, f"{name}: {sorted(named - settings)} are no settings of its runs"


def test_the_monte_carlo_streams_ignore_the_algorithms_settings_and_the_horizon():
    """Every method of one environment sees the same activations (docs/papers/fedvr.md R9): the settings the
    streams ignore are fedvr's hyperparameters less the environment's (activation, theta0), the method and rounds."""
    ignored = set(KEYING["monte_carlo"].ignored)
    assert ignored == (set(DEFAULT_HP) - {"activation", "theta0"}) | {"method", "algorithm", "rounds"}


def test_a_keying_keys_by_its_settings_only_by_the_rest_or_by_a_draws_own():
    spec = {"dataset": "d", "lr": 0.1, "B": 4, "seeds": 3}
    every, only = Keying(ignored=("lr",)), Keying(only=("dataset", "view"), draws={"batches": ("dataset", "B")})
    assert every.key(spec) == every.key({**spec, "lr": 0.5, "seeds": 5}) != every.key({**spec, "B": 8})
    assert only.settings(spec) == {"dataset": "d", "view": None}  # a setting the run lacks keys as None
    assert only.key(spec) == stream_key({"dataset": "d", "view": None}) == only.key({**spec, "B": 8})
    assert only.key(spec, "batches") != only.key({**spec, "B": 8}, "batches")
    assert [k for k in spec if only.keys(k)] == ["dataset", "B"] and [k for k in spec if not every.keys(k)] == ["lr"]


def test_a_tuning_says_whether_its_trials_are_paired():
    assert pairing("finite_sum", ["c_l"]).startswith("The trials of a group are paired")
    assert pairing("vertical", ["lr"]).startswith("The trials of a group are paired")
    assert "not paired: K" in pairing("finite_sum", ["c_l", "K"])
    assert "not paired: B" in pairing("vertical", ["lr", "B"])
