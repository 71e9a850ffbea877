"""One registry of engines that validation, execution and the Snakemake rules read."""

from __future__ import annotations

from pathlib import Path

import yaml

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
