"""Claim checks on figure tables. Each returns (status, measured, note).

The configuration (config/claims/<paper>.yaml) names the check and its keyword parameters; the
checks know nothing about any particular paper. A check takes the claim's data (claims/data.py
ClaimData) and asks it for the summary it needs, with its own metric, x column and window. A check
without data for any cell is INCONCLUSIVE, never PASS.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any, Callable

from fedrepro.claims.checks import final_values, learning_curves, monte_carlo
from fedrepro.claims.checks.common import FAIL, INCONCLUSIVE, PASS, Result

CHECKS: dict[str, Callable[..., Result]] = {
    name: getattr(module, name)
    for module, names in (
        (final_values, ["compare_final", "log_ratio_within", "monotone_time_to_target", "time_to_target",
                        "rate_within", "participation_rate", "diverged_runs", "not_tested"]),
        (monte_carlo, ["compare_mc", "compare_with_paper", "series_ratio", "series_trend", "mc_stat_within"]),
        (learning_curves, ["faster", "comparable", "ordered", "slight", "gain_by_group", "less_sensitive"]),
    )
    for name in names
}

__all__ = ["CHECKS", "PASS", "FAIL", "INCONCLUSIVE", "Result", "check_parameters", "check_choices"]


def check_parameters(name: str) -> tuple[set[str], set[str]]:
    """(required, optional) keyword parameters a claim entry may give to check `name`."""
    params = [p for p in inspect.signature(CHECKS[name]).parameters.values() if p.kind is p.KEYWORD_ONLY]
    required = {p.name for p in params if p.default is p.empty}
    return required, {p.name for p in params} - required


def check_choices(name: str) -> dict[str, tuple[Any, ...]]:
    """The allowed values of each parameter of check `name` annotated with a Literal (e.g. seeds: mean | median)."""
    hints = typing.get_type_hints(CHECKS[name])
    return {param: typing.get_args(hint) for param, hint in hints.items() if typing.get_origin(hint) is typing.Literal}
