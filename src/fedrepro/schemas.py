"""The workflow's schemas (workflow/schemas/), parsed once per process, and what they list: light to import,
so that a command that only names papers (`fedrepro list`, a misspelt paper) answers without loading the engines."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = REPO_ROOT / "workflow" / "schemas"


@functools.lru_cache(maxsize=None)
def schema(name: str, schema_dir: Path = SCHEMA_DIR) -> dict[str, Any]:
    """A schema, parsed once per process (start-up checks every resolved run against its engine's);
    callers must not modify it."""
    with open(schema_dir / name) as fh:
        return yaml.safe_load(fh)


def known_papers(schema_dir: Path = SCHEMA_DIR) -> list[str]:
    """The papers the project reproduces (config.schema.yaml `papers`)."""
    return list(schema("config.schema.yaml", schema_dir)["properties"]["papers"]["items"]["enum"])
