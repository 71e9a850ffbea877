"""Reading the project's YAML files: with libyaml's parser where PyYAML has it (about 6x faster than the pure-Python
one on a paper's configuration, which every Snakemake start-up and cluster job reads), the same values either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path: Path | str) -> Any:
    """The document of a YAML file, by the safe loader (plain data only)."""
    with open(path) as fh:
        return yaml.load(fh, Loader=LOADER)
