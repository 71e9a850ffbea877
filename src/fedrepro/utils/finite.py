"""Numbers that are numbers: where a settings tree or a record holds NaN or an infinity, which no setting means and
strict JSON cannot hold (YAML reads `.nan` and `.inf` as floats; Python's json writes them as bare NaN)."""

from __future__ import annotations

import math
from typing import Any


def non_finite(value: Any, at: str = "") -> list[tuple[str, float]]:
    """(dotted key path, value) of every float in `value`, through its mappings and lists, that is NaN or infinite."""
    if isinstance(value, float) and not math.isfinite(value):
        return [(at or "(top level)", value)]
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return []
    return [found for key, item in items for found in non_finite(item, f"{at}.{key}" if at else str(key))]
