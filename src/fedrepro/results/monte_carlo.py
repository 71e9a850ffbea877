"""Monte Carlo runs read back from a figure table (engine `monte_carlo`, paper `fedvr`).

The table has one row per (curve, Monte Carlo run `seed`, x) with cost, cost_error,
theta_<i> and theta_star_<i>; x is a column named by the caller (`round` by default). Plots and
claim checks both need the same arrays out of it: cost (R, K+1) and the final iterates (R, d);
this module is the one place that reshapes them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator

import numpy as np
import pandas as pd

from fedrepro.results.cep import cep_metrics, cost_curves


@dataclass(frozen=True)
class MonteCarloRuns:
    x: np.ndarray  # (K+1,) the logged x (rounds by default)
    cost: np.ndarray  # (R, K+1)
    f_star: float
    theta_final: np.ndarray  # (R, d), the iterates at the last round
    theta_star: np.ndarray  # (d,)
    diverged: np.ndarray  # (R,) bool
    seeds: np.ndarray  # (R,) the run ids (column `seed`), ascending

    @property
    def n_runs(self) -> int:
        return self.cost.shape[0]

    def take(self, seeds: np.ndarray) -> MonteCarloRuns:
        """The runs `seeds` (repeats allowed; a bootstrap resample), numbered 0.. in that order; a seed
        this curve does not have is left out."""
        rows = np.searchsorted(self.seeds, seeds)
        rows = rows[(rows < len(self.seeds)) & (self.seeds[np.minimum(rows, len(self.seeds) - 1)] == seeds)]
        return replace(self, cost=self.cost[rows], theta_final=self.theta_final[rows], diverged=self.diverged[rows],
                       seeds=np.arange(len(rows)))

    def curves(self) -> dict[str, np.ndarray]:
        """err, mean_err, sqdev, var (results/cep.py cost_curves), each over x."""
        return cost_curves(self.cost, self.f_star)

    def cep(self, coords: tuple[int, int]) -> dict[str, float]:
        return cep_metrics(self.theta_final, self.cost[:, -1], coords)


def _coords(table: pd.DataFrame, prefix: str) -> list[str]:
    names = [c for c in table.columns if c.startswith(prefix) and c[len(prefix):].isdigit()]
    return sorted(names, key=lambda c: int(c[len(prefix):]))


def monte_carlo_runs(run: pd.DataFrame, x: str = "round") -> MonteCarloRuns:
    """The arrays of one run (rows of a single run_id): every Monte Carlo run must log every x."""
    cost = run.pivot(index="seed", columns=x, values="cost").sort_index(axis=0).sort_index(axis=1)
    if len(run) != cost.size:  # (a NaN cost is a diverged run, not a missing row)
        raise ValueError(f"run {run['run_id'].iloc[0]}: Monte Carlo runs logged different values of {x}")
    last = run[run[x] == cost.columns.max()].sort_values("seed")
    first = run.iloc[0]
    return MonteCarloRuns(
        x=cost.columns.to_numpy(),
        cost=cost.to_numpy(dtype=np.float64),
        f_star=float(first["cost"] - first["cost_error"]),
        theta_final=last[_coords(run, "theta_")].to_numpy(dtype=np.float64),
        theta_star=first[_coords(run, "theta_star_")].to_numpy(dtype=np.float64),
        diverged=run.groupby("seed")["diverged"].any().sort_index().to_numpy(),
        seeds=cost.index.to_numpy(),
    )


def curves_of(table: pd.DataFrame, labels: list[str], x: str = "round") -> Iterator[tuple[dict, MonteCarloRuns]]:
    """(labels, runs) per curve, in table order; `labels` are the table's label columns
    (Figure.label_columns). A run that appears in several figures of a claim (Figs 3-5 share
    theirs) is read once."""
    labels = [c for c in labels if c != "figure" and c in table]
    table = table.drop_duplicates(subset=["run_id", "panel", "curve", "seed", x])
    for _, run in table.groupby(["panel", "curve", "run_id"], sort=False):
        yield run.iloc[0][labels].to_dict(), monte_carlo_runs(run, x)
