"""One registry of engines that validation, execution and the Snakemake rules read."""

from __future__ import annotations

from pathlib import Path

import yaml

from fedrepro.algorithms import METHODS, method
from fedrepro.engines import ENGINES

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
