"""Claim checks on figure tables. Each returns (status, measured, note).

The configuration (config/claims/<paper>.yaml) names the check and its keyword parameters; the
checks know nothing about any particular paper. A check without data for any cell is
INCONCLUSIVE, never PASS. A check whose second positional parameter is `table` reads the raw
figure table besides the per-run seed medians (`curves`).
"""

from __future__ import annotations

import inspect
from typing import Callable

from fedrepro.claims.checks import final_values, learning_curves, monte_carlo
from fedrepro.claims.checks.common import FAIL, INCONCLUSIVE, PASS, Result

CHECKS: dict[str, Callable[..., Result]] = {
    name: getattr(module, name)
    for module, names in (
        (final_values, ["compare_final", "log_ratio_within", "monotone_time_to_target", "rate_within",
                        "participation_rate", "diverged_runs", "not_tested"]),
        (monte_carlo, ["compare_mc", "compare_with_paper", "series_ratio", "series_trend", "mc_stat_within"]),
        (learning_curves, ["faster", "comparable", "ordered", "slight", "gain_by_group", "less_sensitive"]),
    )
    for name in names
}
NEEDS_TABLE = {name for name, check in CHECKS.items() if "table" in inspect.signature(check).parameters}

__all__ = ["CHECKS", "NEEDS_TABLE", "PASS", "FAIL", "INCONCLUSIVE", "Result", "check_parameters"]


def check_parameters(name: str) -> tuple[set[str], set[str]]:
    """(required, optional) keyword parameters a claim entry may give to check `name`."""
    params = [p for p in inspect.signature(CHECKS[name]).parameters.values() if p.kind is p.KEYWORD_ONLY]
    required = {p.name for p in params if p.default is p.empty}
    return required, {p.name for p in params} - required
