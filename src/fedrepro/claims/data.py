"""What a claim's check reads: the figure tables of the claim and the summaries the check asks for.

A check asks for the summary it needs, with its own metric, x column and window; each summary is
computed once per set of figures and parameters and shared by every claim that asks for the same.

The unit of replication is the column `seed` (a training seed, or a Monte Carlo run of engine
`monte_carlo`). ClaimData.resamples gives bootstrap copies of the data: the same seeds drawn with
replacement for every run (paired), numbered 0.. in the order drawn. A check runs unchanged on a copy;
the copy takes its per-seed summaries from the full data's instead of recomputing them from the table,
which keeps 200 resamples of a ledger within seconds.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd

from fedrepro.results import summaries
from fedrepro.results.monte_carlo import MonteCarloRuns, curves_of
from fedrepro.seeding import numpy_rng


def _key(value: Any) -> Any:
    """A hashable form of a parameter (lists and mappings from the claims file)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _key(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_key(v) for v in value)
    return value


def take_seeds(frame: pd.DataFrame, draw: np.ndarray) -> pd.DataFrame:
    """The rows of the seeds in `draw` (repeats allowed), the i-th drawn seed renamed i."""
    if not len(frame):
        return frame
    pick = pd.DataFrame({"seed": draw, "_drawn": np.arange(len(draw))}).astype({"seed": frame["seed"].dtype})
    taken = frame.merge(pick, on="seed", how="inner", sort=False)
    return taken.assign(seed=taken.pop("_drawn"))


class ClaimData:
    """One or more figure tables read as one, with their declared label columns; or a bootstrap
    resample of them (`draw`: the seeds of `full`, drawn with replacement)."""

    def __init__(self, table: pd.DataFrame | None, labels: list[str], *, full: ClaimData | None = None,
                 draw: np.ndarray | None = None):
        self._table = table
        self.labels = labels
        self._full, self._draw = full, draw
        self._memo: dict[tuple, Any] = {}

    @property
    def table(self) -> pd.DataFrame:
        """The rows of the data (of a resample: the drawn seeds' rows, built only when a check reads them)."""
        if self._table is None:
            self._table = take_seeds(self._full.table, self._draw)
        return self._table

    def _empty(self) -> bool:
        return not len(self._full.table if self._full is not None else self.table)

    def _once(self, name: str, make: Callable[[], Any], *params: Any) -> Any:
        key = (name, *map(_key, params))
        if key not in self._memo:
            self._memo[key] = pd.DataFrame() if self._empty() else make()
        return self._memo[key]

    def _per_seed(self, name: str, make: Callable[[pd.DataFrame], pd.DataFrame], *params: Any) -> pd.DataFrame:
        """A summary with one row per (run, seed), `make(table)`: computed on the full data only; a
        resample takes the rows of its drawn seeds."""
        if self._full is None:
            return self._once(name, lambda: make(self.table), *params)
        return self._once(name, lambda: take_seeds(self._full._per_seed(name, make, *params), self._draw), *params)

    # --- the replication units and the bootstrap ---------------------------------------------------

    def seeds(self, runs: set[str] | None = None) -> int:
        """The fewest seeds (Monte Carlo runs) of any run in the table, or of `runs` (those a claim's selectors
        match: checks/common.py selected_runs; the seed plan may add seeds to those alone); 0 without data."""
        if self._full is not None:
            return len(self._draw)
        table = self.table if runs is None else self.table[self.table["run_id"].astype(str).isin(runs)]
        return int(table.groupby("run_id")["seed"].nunique().min()) if len(table) else 0

    def units(self) -> np.ndarray:
        """The seed ids of the data (every run's, ascending): what a bootstrap draws from."""
        return np.sort(self.table["seed"].unique()) if len(self.table) else np.array([], dtype=int)

    def resamples(self, count: int, *seed_parts: object) -> list[tuple[ClaimData, int]]:
        """`count` bootstrap resamples, each drawing len(units) seeds with replacement from a stream
        seeded by `seed_parts`, as (resample, how many of the `count` draws it stands for). A check
        depends on the drawn seeds, not on their order, so each draw is sorted and equal draws are made
        once: 3 seeds have only 10 distinct resamples. Made once per ClaimData, so every claim on the
        same figures reads the same resamples and their summaries are computed once."""
        def make():
            units = self.units()
            draws = numpy_rng("claims-bootstrap", *seed_parts).integers(0, len(units), size=(count, len(units)))
            distinct, times = np.unique(np.sort(draws, axis=1), axis=0, return_counts=True)
            return [(ClaimData(None, self.labels, full=self, draw=units[d]), int(n)) for d, n in zip(distinct, times)]
        key = ("resamples", count, *map(_key, seed_parts))
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    # --- summaries ---------------------------------------------------------------------------------

    def _run_labels(self) -> pd.DataFrame:
        if self._full is not None:
            return self._full._run_labels()
        return self._once("run_labels", lambda: summaries.run_labels(self.table, self.labels))

    def seed_summaries(self, metric: str, x: str, window: float, eps: list[float] = ()) -> pd.DataFrame:
        """final, auc, g0, T_<eps> per (run, seed) (results.summaries.seed_summaries)."""
        return self._per_seed("seed_summaries", lambda t: summaries.seed_summaries(t, metric, window, eps, x),
                              metric, window, eps, x)

    def medians(self, metric: str, x: str, window: float, eps: list[float] = ()) -> pd.DataFrame:
        """Seed-medians of final, auc, g0, T_<eps> per run (results.summaries.seed_medians)."""
        return self._once("medians", lambda: summaries.seed_medians(self.seed_summaries(metric, x, window, eps),
                                                                     self._run_labels()), metric, x, window, eps)

    def auc_fin(self, metric: str, higher: bool, x: str, auc: str = "mean") -> pd.DataFrame:
        """AUC and FIN per (run, seed) (results.summaries.auc_fin_per_seed)."""
        return self._per_seed("auc_fin", lambda t: summaries.auc_fin_per_seed(t, self.labels, metric, higher, x, auc),
                              metric, higher, x, auc)

    def rank_correlations(self, x: str, y: str) -> pd.DataFrame:
        """Spearman's rho of columns x and y per (run, seed) (results.summaries.rank_correlations)."""
        return self._per_seed("rank_correlations", lambda t: summaries.rank_correlations(t, self.labels, x, y), x, y)

    def seed_values(self, column: str) -> pd.DataFrame:
        """A per-seed fact per (run, seed) (results.summaries.seed_values)."""
        return self._per_seed("seed_values", lambda t: summaries.seed_values(t, self.labels, column), column)

    def oscillation(self, metric: str, x: str, window: float) -> pd.DataFrame:
        """Spread of a curve's steps per (run, seed) (results.summaries.oscillation_per_seed)."""
        return self._per_seed("oscillation", lambda t: summaries.oscillation_per_seed(t, self.labels, metric, x, window),
                              metric, x, window)

    def times_to_target(self, metric: str, target: float | dict, higher: bool, x: str, seeds: str) -> pd.DataFrame:
        """t_target per run (results.summaries.time_to_target); a resample recomputes it from its rows
        (a seed-mean curve is not a per-seed summary)."""
        return self._once("t2t", lambda: summaries.time_to_target(self.table, self.labels, metric, target, higher,
                                                                  x, seeds), metric, target, higher, x, seeds)

    def seed_times(self, metric: str, target: float | dict, higher: bool, x: str) -> pd.DataFrame:
        """t_target and t_lower per (run, seed) (results.summaries.seed_times)."""
        return self._per_seed("seed_times", lambda t: summaries.seed_times(t, metric, target, higher, x),
                              metric, target, higher, x)

    def mc_summaries(self, coords: list[int], target: float, x: str) -> pd.DataFrame:
        """Across-run statistics per Monte Carlo curve (results.summaries.monte_carlo_statistics)."""
        return self._once("mc", lambda: summaries.monte_carlo_statistics(self.mc_curves(x), tuple(coords), target),
                          coords, target, x)

    def mc_curves(self, x: str) -> list[tuple[dict, MonteCarloRuns]]:
        """(labels, runs) per Monte Carlo curve (results.monte_carlo.curves_of); of a resample, its drawn runs."""
        if self._empty():
            return []
        if self._full is not None:
            return self._once("mc_curves", lambda: [(label, mc.take(self._draw)) for label, mc in self._full.mc_curves(x)], x)
        return self._once("mc_curves", lambda: list(curves_of(self.table, self.labels, x)), x)
