"""What a claim's check reads: the figure tables of the claim and the summaries the check asks for.

A check asks for the summary it needs, with its own metric, x column and window; each summary is
computed once per set of figures and parameters and shared by every claim that asks for the same.
"""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from fedrepro.results import summaries
from fedrepro.results.monte_carlo import MonteCarloRuns, curves_of


def _key(value: Any) -> Any:
    """A hashable form of a parameter (lists and mappings from the claims file)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _key(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_key(v) for v in value)
    return value


class ClaimData:
    """One or more figure tables read as one, with their declared label columns."""

    def __init__(self, table: pd.DataFrame, labels: list[str]):
        self.table = table
        self.labels = labels
        self._memo: dict[tuple, Any] = {}

    def _once(self, name: str, make: Callable[[], Any], *params: Any) -> Any:
        key = (name, *map(_key, params))
        if key not in self._memo:
            self._memo[key] = make() if len(self.table) else pd.DataFrame()
        return self._memo[key]

    def seeds(self) -> int:
        """The fewest seeds (Monte Carlo runs) of any run in the table; 0 without data."""
        return int(self.table.groupby("run_id")["seed"].nunique().min()) if len(self.table) else 0

    def medians(self, metric: str, x: str, window: float, eps: list[float] = ()) -> pd.DataFrame:
        """Seed-medians of final, auc, g0, T_<eps> per run (results.summaries.curve_medians)."""
        return self._once("medians", lambda: summaries.curve_medians(self.table, self.labels, metric, window, eps, x),
                          metric, x, window, eps)

    def auc_fin(self, metric: str, higher: bool, x: str) -> pd.DataFrame:
        """AUC and FIN per (run, seed) (results.summaries.auc_fin_per_seed)."""
        return self._once("auc_fin", lambda: summaries.auc_fin_per_seed(self.table, self.labels, metric, higher, x),
                          metric, higher, x)

    def times_to_target(self, metric: str, target: float | dict, higher: bool, x: str, seeds: str) -> pd.DataFrame:
        """t_target per run (results.summaries.time_to_target)."""
        return self._once("t2t", lambda: summaries.time_to_target(self.table, self.labels, metric, target, higher,
                                                                  x, seeds), metric, target, higher, x, seeds)

    def mc_summaries(self, coords: list[int], target: float, x: str) -> pd.DataFrame:
        """Across-run statistics per Monte Carlo curve (results.summaries.monte_carlo_summaries)."""
        return self._once("mc", lambda: summaries.monte_carlo_summaries(self.table, self.labels, tuple(coords),
                                                                        target, x), coords, target, x)

    def mc_curves(self, x: str) -> list[tuple[dict, MonteCarloRuns]]:
        """(labels, runs) per Monte Carlo curve (results.monte_carlo.curves_of)."""
        return self._once("mc_curves", lambda: list(curves_of(self.table, self.labels, x)), x) if len(self.table) else []
