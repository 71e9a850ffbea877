"""A variants file read and checked (config/variants/<name>.yaml; its schema: workflow/schemas/variants.schema.yaml),
without the training code: the start-up checks read the tunings a scale's `per_run` freezes (experiments/runtable.py
`tunings`) from here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fedrepro.errors import ConfigError
from fedrepro.schemas import check
from fedrepro.utils.yaml_file import read_yaml

STUDY, TUNING = "study", "tuning"


def load_variants(name: str, config_dir: Path = Path("config")) -> dict[str, Any]:
    """The variants file `name`, checked against its schema, with its `name` and `kind` (STUDY or TUNING)."""
    path = config_dir / "variants" / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (config_dir / "variants").glob("*.yaml"))
        raise ConfigError(f"no variants file {path}; known: {', '.join(known) or '(none)'}")
    spec = read_yaml(path)
    check(spec, "variants.schema.yaml", str(path))
    return {**spec, "name": name, "kind": STUDY if "variants" in spec else TUNING}


def tuned_settings(tuning: dict[str, Any]) -> list[str]:
    """Every setting some grid of a tuning tunes, in the order the grids name them."""
    return list(dict.fromkeys(k for grid in tuning["grid"].values() for k in grid))


def seed_range(seeds: dict[str, int]) -> list[int]:
    """The seeds of a `{first, count}` declaration (a tuning's `seeds`, a scale's `tunings` entry)."""
    return list(range(seeds["first"], seeds["first"] + seeds["count"]))
