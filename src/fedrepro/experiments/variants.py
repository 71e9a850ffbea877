"""Named variants of a paper's configuration: the alternatives of a reading (config/papers/<paper>.yaml
`readings.<name>.alternatives.<alternative>.set`) and the variants of a scale study (config/studies/).

A variant is a patch laid over the paper's configuration: mappings merge key by key, anything else (a value, a
list such as a scale's `per_run`) is replaced. Its runs are resolved by the run table like the paper's own, so
a run that the patch does not change keeps its run id (it is trained once, and its metrics are shared), and a
patch that changes no run adds none.
"""

from __future__ import annotations

import copy
from typing import Any


def patched(config: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """`config` with `patch` laid over it (neither is changed)."""
    out = copy.deepcopy(config)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = patched(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out
