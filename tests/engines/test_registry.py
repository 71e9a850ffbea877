"""One registry of engines that validation, execution and the Snakemake rules read."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fedrepro.algorithms import METHODS, method
from fedrepro.engines import ENGINES
from fedrepro.errors import ConfigError
from fedrepro.schemas import check
from fedrepro.validate import load_and_validate

SCHEMAS = Path(__file__).resolve().parents[2] / "workflow" / "schemas"


def test_every_engine_has_a_run_schema_that_pins_its_name():
    for name, engine in ENGINES.items():
        assert engine.name == name
        schema = yaml.safe_load((SCHEMAS / engine.schema).read_text())
        assert schema["properties"]["engine"] == {"const": name}
        assert schema["additionalProperties"] is False  # a misspelt key in any layer is caught
        assert engine.watch


def test_engine_names_are_listed_in_one_place():
    paper = yaml.safe_load((SCHEMAS / "paper.schema.yaml").read_text())
    assert "enum" not in paper["properties"]["engine"]


def test_every_engine_has_its_methods_in_the_one_registry_of_methods():
    """algorithms/__init__.py METHODS is keyed by engine: every engine builds its methods from it, and an engine whose
    runs name no `algorithm` (vertical) has exactly one."""
    assert set(METHODS) == set(ENGINES)
    for name in ENGINES:
        schema = yaml.safe_load((SCHEMAS / ENGINES[name].schema).read_text())
        if "algorithm" not in schema["properties"]:
            assert len(METHODS[name]) == 1 and method(name) is next(iter(METHODS[name].values()))


@pytest.fixture(scope="module")
def smoke_runs():
    return load_and_validate({"scale": "smoke"}, Path(__file__).resolve().parents[2] / "config")[1].runs


# per engine with one, a list setting whose length its other settings fix: a list of the wrong length, one of the right
# length (given the spec) and the message (formatted with the spec)
WRONG_LENGTHS = {
    "monte_carlo-theta0": ("monte_carlo", {"theta0": [0.5, 0.5]}, lambda spec: {"theta0": [0.5] * 5},
                           "theta0 lists 2 value(s), but a run of these settings needs 5: one per column of the design "
                           "(age, sex, bmi, children, smoker)"),
    "monte_carlo-p": ("monte_carlo", {"activation": {"kind": "explicit", "p": [0.5]}},
                      lambda spec: {"activation": {"kind": "explicit", "p": [0.5] * spec["n_agents"]}},
                      "activation.p lists 1 value(s), but a run of these settings needs {n_agents}: one per agent "
                      "(n_agents)"),
    "vertical-K": ("vertical", {"K": [2]}, lambda spec: {"K": [2] * spec["N"]},
                   "K lists 1 value(s), but a run of these settings needs {N}: one per silo (N)"),
    "async-slowdowns": ("async", {"slowdowns": [1.0]}, lambda spec: {"slowdowns": [1.0] * spec["n_clients"]},
                        "slowdowns lists 1 value(s), but a run of these settings needs {n_clients}: one per client "
                        "(n_clients)"),
}


@pytest.mark.parametrize("case", WRONG_LENGTHS)
def test_a_list_setting_of_the_wrong_length_is_refused_naming_the_key_and_the_length(smoke_runs, case):
    """Checked with the limits, at start-up and before a run (Engine.lengths): such a list passes the run schema, and
    ended in a torch or numpy traceback in the middle of the run, or (K) was cut short silently by a zip."""
    engine, wrong, right, message = WRONG_LENGTHS[case]
    spec = dict(next(s for s in smoke_runs.values() if s["engine"] == engine))
    check(spec | wrong, ENGINES[engine].schema, "test")
    with pytest.raises(ConfigError) as refused:
        ENGINES[engine].check_limits(spec | wrong, "here")
    assert str(refused.value) == "here: " + message.format(**spec)
    ENGINES[engine].check_limits(spec | right(spec), "here")
