"""Checks on facts of a run rather than its learning curve: per-seed scalars (a timing trace's mean
round time, uploads per second) and rank correlations over the rows of a seed (clients: speed against
participation), read from a `clients` figure table (results/tables.py client_rows)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fedrepro.claims.checks.common import (
    Columns,
    Fraction,
    Positive,
    Require,
    Result,
    Selector,
    cells_of,
    compare_stat,
    judged,
    open_text,
    rows_matching,
    tally,
)
from fedrepro.claims.checks.inference import combine, effect_test, equivalent
from fedrepro.claims.data import ClaimData


def seed_mean(per_seed: pd.DataFrame, column: str) -> pd.DataFrame:
    """One row per run: the mean of `column` over its seeds, with the run's labels (its first row's)."""
    first = per_seed.drop_duplicates("run_id").set_index("run_id").drop(columns=[column, "seed"])
    return first.join(per_seed.groupby("run_id", sort=False)[column].mean()).reset_index()


def compare_fact(data: ClaimData, *, a: Selector, b: Selector, per: Columns, column: str, factor: Positive = 1.0,
                 require: Require = "all", fraction: Fraction | None = None) -> Result:
    """A per-seed fact (one value per seed, e.g. mean_round_time) of A, averaged over seeds, lies below
    B's times `factor` in each cell: value(a) < value(b) * factor, a Test of the paired per-seed log ratios.
    Margin: decades (common.compare_stat)."""
    values = data.seed_values(column)
    return compare_stat(seed_mean(values, "value") if len(values) else values, a, b, per, "value", factor,
                        require, fraction, values if len(values) else None)


def rank_correlation(data: ClaimData, *, select: Selector, per: Columns, columns: list[str],
                     above: float | None = None, within: Positive | None = None) -> Result:
    """Spearman's rho of two `columns` over a seed's rows (e.g. clients), one per seed, for every selected run of
    each cell: holds when rho > `above` (a positive association: the one-sided t-test of the seeds' rho) and, when
    given, |rho| < `within` (none beyond that equivalence margin: the TOST of the seeds' rho,
    inference.equivalent). A seed whose rho is undefined (a constant column) counts for neither side.
    Margin: the smaller of rho - above and within - |rho|, of the seeds' mean rho."""
    if above is None and within is None:
        raise ValueError("rank_correlation needs `above` or `within`")
    if len(columns) != 2:
        raise ValueError(f"rank_correlation needs two columns, got {columns}")
    rhos = data.rank_correlations(*columns)
    holds, parts, margins = [], [], []
    for name, cell in cells_of(rows_matching(rhos, select), per) if len(rhos) else []:
        for run_id, run in cell.groupby("run_id", sort=False):
            seeds = run["rho"].to_numpy(dtype=float)
            rho = float(np.mean(seeds))  # nan when a seed's rho is undefined
            conditions = ([effect_test(seeds, hold_above=above, fail_below=above)] if above is not None else []) + (
                [equivalent(seeds, margin=within)] if within is not None else [])
            test = combine(conditions)
            holds.append(test)
            margins.append(-math.inf if math.isnan(rho) else min(rho - above if above is not None else math.inf,
                                                                  within - abs(rho) if within is not None else math.inf))
            shown = ", ".join(f"{r:+.2f}" if np.isfinite(r) else "undefined" for r in seeds)
            parts.append(f"[{name}, {run['curve'].iloc[0]}] rho {f'{rho:+.2f}' if np.isfinite(rho) else 'undefined'}"
                         f" (seeds {shown})" + open_text(test))
    measured = (f"TOST within ±{within:g}, " if within is not None else "") + (
        f"{tally(holds, 'runs')}: " + "; ".join(parts) if parts else "no selected run")
    return judged(holds, margins, measured)
