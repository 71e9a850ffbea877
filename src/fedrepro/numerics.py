"""Each engine's numerics version: the number to bump when a change alters any value an engine writes
(docs/development.md, "Numerics versions").

A non-zero version enters the run id of every run of its engine, so the results of new numerics never sit
under an old id and every one of them is retrained. 0, each engine's version until its numerics first
change, enters no id, so the ids made before versions existed stand. The table lives here, not on the
engines, because run ids are computed by jobs that load no engine (and no torch); an engine reads its own
version from it (Engine.numerics).
"""

from __future__ import annotations

# engine name -> its numerics version; an engine not listed is at 0
VERSIONS: dict[str, int] = {
    "finite_sum": 1,  # 2026-11-26: streams keyed by every setting but the step sizes (trials paired)
}


# engine -> the settings that do not key its random streams: its runs that differ only in these draw the same
# clients, minibatches and coins, so that comparing them is paired (a tuning's trials); every other setting
# and the seed key them. Claims read it too (a check that pools coin flips counts shared ones once).
UNKEYED: dict[str, tuple[str, ...]] = {
    "finite_sum": ("eta_tilde", "c_l", "step_split"),  # the step sizes, since version 1 (before it, every setting)
}


def numerics_version(engine: str) -> int:
    return VERSIONS.get(engine, 0)
