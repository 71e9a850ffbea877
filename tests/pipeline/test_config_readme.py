"""config/README.md describes every setting: each key of the schemas (and of the claims files' key lists) has a row
in its section, no row names a key they lack, and config.yaml's rows give each allowed value and the default."""

import re
from pathlib import Path

import pytest

from fedrepro.claims.validation import CLAIM_FIELDS, LEDGER_FIELDS
from fedrepro.schemas import schema

README = Path(__file__).resolve().parents[2] / "config" / "README.md"
PAPER = schema("paper.schema.yaml")
# section heading -> the keys it describes, as the code defines them
SECTIONS = {
    "## config.yaml": schema("config.schema.yaml")["properties"],
    "## papers/&lt;paper&gt;.yaml": PAPER["properties"],
    "### A figure (`figures.<name>`)": PAPER["$defs"]["figure"]["properties"],
    "### A reading (`readings.<name>`)": PAPER["properties"]["readings"]["additionalProperties"]["properties"],
    "### A scale (`scales.<smoke|quick|paper>`)": PAPER["$defs"]["scale"]["properties"],
    "## claims/&lt;paper&gt;.yaml": LEDGER_FIELDS,
    "### A claim": CLAIM_FIELDS,
    "## variants/&lt;name&gt;.yaml": schema("variants.schema.yaml")["properties"],
}


def rows(text: str) -> dict[str, dict[str, str]]:
    """Per section heading, each table row's key and the rest of its row."""
    out: dict[str, dict[str, str]] = {}
    heading = ""
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line
            out[heading] = {}
        elif match := re.match(r"\| `([A-Za-z_]+)` \|(.*)", line):
            out[heading][match.group(1)] = match.group(2)
    return out


@pytest.mark.parametrize("heading", SECTIONS)
def test_each_key_has_a_row_and_each_row_a_key(heading):
    documented = rows(README.read_text())
    assert heading in documented, f"config/README.md has no section {heading!r}"
    assert sorted(documented[heading]) == sorted(SECTIONS[heading])


def shown(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {shown(v)}" for k, v in value.items()) + "}"
    return "null" if value is None else f"[{', '.join(value)}]" if isinstance(value, list) else str(value)


def test_config_rows_give_every_allowed_value_and_the_default():
    documented = rows(README.read_text())["## config.yaml"]
    for key, spec in SECTIONS["## config.yaml"].items():
        cell = documented[key]
        assert all(f"`{value}`" in cell for value in spec.get("enum", [])), key
        assert f"`{shown(spec['default'])}` (default)" in cell or f"default `{shown(spec['default'])}`" in cell, key


def test_a_missing_row_is_seen():
    assert rows("## s\n| `a` | x |\n\n## t\n| `b` | y |\n") == {"## s": {"a": " x |"}, "## t": {"b": " y |"}}
