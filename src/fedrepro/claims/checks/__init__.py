"""Claim checks on figure tables. Each returns a Result (status, measured, note, margin).

The configuration (config/claims/<paper>.yaml) names the check and its keyword parameters; the
checks know nothing about any particular paper. A check takes the claim's data (claims/data.py
ClaimData) and asks it for the summary it needs, with its own metric, x column and window. A check
without data for any cell is INCONCLUSIVE, never PASS. A check in TESTED tests its seeds itself
(inference.py: its verdict has the error rates of docs/claims_reference.md); the ledger (claims/support.py) reruns
any other on bootstrap resamples of the data, unless NOT_RESAMPLED says why that would mean nothing.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any, Callable

from fedrepro.claims.checks import final_values, learning_curves, monte_carlo, run_facts, time_model
from fedrepro.claims.checks.common import Result

_MODULES = (  # (module, what its `seed` column counts, its checks)
    (final_values, "seed", ["compare_final", "log_ratio_within", "monotone_time_to_target", "time_to_target",
                            "time_to_target_trend", "time_ratio_by_group", "rate_within", "participation_rate",
                            "falls", "diverged_runs", "not_tested"]),
    (monte_carlo, "Monte Carlo run", ["compare_mc", "compare_with_paper", "series_ratio", "series_trend",
                                      "mc_stat_within"]),
    (learning_curves, "seed", ["faster", "comparable", "ordered", "slight", "gain_by_group", "less_sensitive",
                               "oscillation_falls"]),
    (run_facts, "seed", ["compare_fact", "rank_correlation"]),
    (time_model, "seed", ["time_win_ratio"]),
)
CHECKS: dict[str, Callable[..., Result]] = {name: getattr(module, name) for module, _, names in _MODULES for name in names}
# the unit of replication a check's bootstrap resamples, as the ledger names it
UNITS: dict[str, str] = {name: unit for _, unit, names in _MODULES for name in names}
# checks whose verdict is a test of the seeds (inference.py), each comparison on its paired per-seed effects:
# the decision rule with a stated error rate (docs/claims_reference.md, benchmarks/calibrate_rule.py); no bootstrap
TESTED: frozenset[str] = frozenset({
    "compare_final", "compare_fact", "time_to_target", "time_to_target_trend", "monotone_time_to_target",
    "faster", "ordered", "slight", "less_sensitive", "gain_by_group", "comparable", "log_ratio_within",
    "rank_correlation", "falls", "time_win_ratio", "time_ratio_by_group", "oscillation_falls"})
# checks that test equivalence (inference.equivalent, TOST), each with the parameter that holds its margin, which the
# claims file declares and the ledger shows (column equivalence_margin); rank_correlation only when given `within`
EQUIVALENCE: dict[str, str] = {"comparable": "tol", "log_ratio_within": "max_abs_log10", "rank_correlation": "within"}
# checks whose verdict a bootstrap over seeds cannot qualify: their support is NA with this reason
NOT_RESAMPLED: dict[str, str] = {
    "rate_within": "a count fixed by the run's settings, the same in every seed",
    "participation_rate": "its own binomial test on the distinct coin draws pooled (a resample would repeat coin flips)",
    "diverged_runs": "informational",
    "not_tested": "not tested",
}

# checks that show a measurement without judging it (always INCONCLUSIVE): a claim of kind `report` takes one of them
# (claims/kinds.py), and only such a claim
REPORTING: frozenset[str] = frozenset({"diverged_runs", "not_tested"})

__all__ = ["CHECKS", "UNITS", "TESTED", "EQUIVALENCE", "NOT_RESAMPLED", "REPORTING", "Result", "check_parameters",
           "check_hints"]


def check_parameters(name: str) -> tuple[set[str], set[str]]:
    """(required, optional) keyword parameters a claim entry may give to check `name`."""
    params = [p for p in inspect.signature(CHECKS[name]).parameters.values() if p.kind is p.KEYWORD_ONLY]
    required = {p.name for p in params if p.default is p.empty}
    return required, {p.name for p in params} - required


def check_hints(name: str) -> dict[str, Any]:
    """The annotation of each keyword parameter of check `name`, with its markers (common.Names, ...):
    what claims/validation.py checks a claim's values against."""
    return typing.get_type_hints(CHECKS[name], include_extras=True)
