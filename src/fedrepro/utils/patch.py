"""A patch laid over a configuration: mappings merge key by key, anything else (a value, a list such as a scale's
`per_run`) is replaced. Every named variant of a paper's configuration is one (an alternative reading's `set`,
config/papers/<paper>.yaml; a scale study's variant, src/fedrepro/variants/). Its runs are resolved by the run
table like the paper's own, so a run that the patch does not change keeps its run id (it is trained once, and its
metrics are shared), and a patch that changes no run adds none.
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
