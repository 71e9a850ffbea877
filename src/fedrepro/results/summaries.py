"""Per-run summaries of learning curves: the quantities claims compare and table figures show.

Every summary takes the label columns of its table (Figure.label_columns) and the name of its x
column (`round` by default; `virtual_time`, `iteration`, ...), never assumes one.

final : geometric mean of the metric over the points with x in the last `window` fraction of the
        x range (smooths FedPAGE's saw-tooth between full rounds and SGD noise floors; docs/papers/fedpage.md R15)
auc   : mean log10 of the metric over all logged points
T_eps : first logged x with metric <= eps * metric(first point); inf if never
A diverged seed has final = auc = T_eps = inf.

On a non-uniform x (a simulated time logged at events) "the last fraction of the x range" is still
a fraction of x, not of the logged points, and an AUC is the mean over the logged points, not a
time integral: for rounds logged at a fixed cadence the two readings agree.
"""

from __future__ import annotations

import math
from typing import Iterable, Literal, get_args

import numpy as np
import pandas as pd

from fedrepro.results.monte_carlo import MonteCarloRuns

# The per-run summaries of a curve (seed_medians), besides T_<eps>: what claims may compare.
CURVE_STATISTICS = ("final", "auc", "g0")
# The statistics across the runs of a Monte Carlo curve (monte_carlo_statistics; inf when a run diverged),
# and every column a claim may read of its rows.
MC_STATISTICS = ("mean_err_final", "rel_err_final", "auc", "t_target", "var_final", "cep_2d", "cep_full", "cep_cost",
                 "opt_dist")
MC_COLUMNS = MC_STATISTICS + ("f_star", "runs", "last_x", "diverged_runs")
# How time_to_target joins a run's seeds: the first x of their mean curve, or the median of their own first x
SeedAggregate = Literal["mean", "median"]
SEED_AGGREGATES = get_args(SeedAggregate)
# What an area under a curve is: the mean of its evaluations, or the trapezoid area over its x range / the range
AucKind = Literal["mean", "trapezoid"]


def _per_run_labels(table: pd.DataFrame, labels: list[str], exclude: Iterable[str] = ()) -> pd.DataFrame:
    """The label columns of each run (one row per run_id, indexed by it)."""
    keep = [c for c in labels if c in table and c != "run_id" and c not in set(exclude)]
    return table.drop_duplicates("run_id").set_index("run_id")[keep]


def _with_labels(summary: pd.DataFrame, table: pd.DataFrame, labels: list[str]) -> pd.DataFrame:
    """A per-run summary joined with its runs' labels; a summary column (e.g. `seeds`, the count of seeds
    summarised) wins over the run setting of that name."""
    return summary.join(_per_run_labels(table, labels, exclude=summary.columns), on="run_id")


def _is_diverged(run: pd.DataFrame, values: np.ndarray) -> bool:
    return bool(run["diverged"].any()) or not np.all(np.isfinite(values))


def seed_summaries(table: pd.DataFrame, metric: str, window: float, eps: Iterable[float],
                   x: str = "round") -> pd.DataFrame:
    """One row per (run_id, seed) with final, auc, g0, T_<eps>, T_<eps>_lower (what the data say of T_<eps>:
    itself when reached, the last x when censored there, inf when diverged), diverged, last_x."""
    rows = []
    for (run_id, seed), run in table.groupby(["run_id", "seed"], sort=False):
        run = run.sort_values(x)
        values = run[metric].to_numpy(dtype=float)
        xs = run[x].to_numpy()
        diverged = _is_diverged(run, values)
        g0 = values[0]
        row = {"run_id": run_id, "seed": seed, "g0": g0, "diverged": diverged, "last_x": xs[-1]}
        if diverged:  # never reaches any eps: T_<eps> and its lower bound inf
            row.update(final=np.inf, auc=np.inf, **{f"T_{e:g}{end}": np.inf for e in eps for end in ("", "_lower")})
        else:
            tail = values[xs >= xs[0] + (xs[-1] - xs[0]) * (1 - window)]
            row["final"] = float(np.exp(np.mean(np.log(np.maximum(tail, 1e-300)))))
            row["auc"] = float(np.mean(np.log10(np.maximum(values, 1e-300))))
            for e in eps:
                hit = np.nonzero(values <= e * g0)[0]
                row[f"T_{e:g}"] = float(xs[hit[0]]) if len(hit) else np.inf
                row[f"T_{e:g}_lower"] = row[f"T_{e:g}"] if len(hit) else float(xs[-1])  # censored at the last x
        rows.append(row)
    return pd.DataFrame(rows)


def run_labels(table: pd.DataFrame, labels: list[str]) -> pd.DataFrame:
    """The label columns of each run (one row per run_id, indexed by it)."""
    return _per_run_labels(table, labels)


def seed_medians(summaries: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """The medians over seeds of per-seed summaries (seed_summaries), joined with the runs' `labels`
    (run_labels), so that a bootstrap can re-aggregate drawn seeds."""
    value_cols = list(CURVE_STATISTICS) + [c for c in summaries.columns if c.startswith("T_")]
    med = summaries.groupby("run_id")[value_cols].median()
    med["seeds"] = summaries.groupby("run_id")["seed"].nunique()
    med["diverged_seeds"] = summaries.groupby("run_id")["diverged"].sum()
    return med.join(labels[[c for c in labels.columns if c not in med.columns]]).reset_index()


def monte_carlo_statistics(curves: Iterable[tuple[dict, MonteCarloRuns]], coords: tuple[int, int] = (0, 1),
                           target: float = 1e-4) -> pd.DataFrame:
    """One row per curve of a Monte Carlo table (engine `monte_carlo`): statistics across the runs of each
    (labels, runs) of results.monte_carlo.curves_of, or of drawn runs (MonteCarloRuns.take) for a bootstrap;
    the quantities the fedvr claims compare (docs/papers/fedvr.md R10, R13).

    mean_err_final : mean over runs of f(θ_K) − f*          rel_err_final : that / the same at the first x
    auc            : mean over x after the first of log10 mean_err   t_target : first x with mean_err <= target
    var_final      : variance across runs of f(θ_K) (ddof=0) cep_2d/cep_full/cep_cost : CEP of the final iterates
    opt_dist       : ||mean_r θ_K − θ*||                     f_star, runs, last_x, diverged_runs
    A curve with a diverged (non-finite) run gets inf for every statistic but f_star.
    """
    rows = []
    for curve, mc in curves:
        row = {**curve, "runs": mc.n_runs, "last_x": mc.x[-1], "diverged_runs": int(mc.diverged.sum()),
               "f_star": mc.f_star}
        if mc.diverged.any() or not np.isfinite(mc.cost).all():
            row.update(dict.fromkeys(MC_STATISTICS, np.inf))
        else:
            curves = mc.curves()
            mean_err = curves["mean_err"]
            hit = np.nonzero(mean_err <= target)[0]
            row.update(
                mean_err_final=float(mean_err[-1]),
                rel_err_final=float(mean_err[-1] / mean_err[0]),
                auc=float(np.mean(np.log10(np.maximum(mean_err[mc.x > mc.x[0]], 1e-300)))),
                t_target=float(mc.x[hit[0]]) if len(hit) else np.inf,
                var_final=float(curves["var"][-1]),
                opt_dist=float(np.linalg.norm(mc.theta_final.mean(axis=0) - mc.theta_star)),
                **mc.cep(coords),
            )
        rows.append(row)
    return pd.DataFrame(rows)


def auc_fin_per_seed(table: pd.DataFrame, labels: list[str], metric: str, higher_is_better: bool = False,
                     x: str = "round", auc: AucKind = "mean") -> pd.DataFrame:
    """One row per (run, seed) with FedCluster's curve summaries (docs/papers/fedcluster.md R21),
    joined with the run's labels:

    auc : mean of the metric over the logged points (the "area under the curve", linear scale); with
          auc = "trapezoid", the area under the piecewise-linear curve over its x range divided by that
          range, so that points logged densely (early, or by a run with a shorter step in x) do not weigh more
    fin : mean over the points in the last tenth of the x range, (x_last - range / 10, x_last]; for
          rounds 0..T that is R21's last max(1, ceil(T/10)) rounds
    A diverged seed gets the worst value (inf for a loss, -inf for an accuracy) for both.
    """
    worst = -np.inf if higher_is_better else np.inf
    rows = []
    for (run_id, seed), run in table.groupby(["run_id", "seed"], sort=False):
        run = run.sort_values(x)
        values, xs = run[metric].to_numpy(dtype=float), run[x].to_numpy()
        diverged = _is_diverged(run, values)
        tail = values[(xs > xs[-1] - (xs[-1] - xs[0]) / 10) | (xs == xs[-1])]
        rows.append({"run_id": run_id, "seed": seed, "diverged": diverged,
                     "auc": worst if diverged else _area(xs, values, auc),
                     "fin": worst if diverged else float(tail.mean())})
    return _with_labels(pd.DataFrame(rows), table, labels)


def _area(xs: np.ndarray, values: np.ndarray, auc: str) -> float:
    """The mean of the values, or (trapezoid) the mean height of the curve over its x range."""
    if auc == "trapezoid" and len(xs) > 1 and xs[-1] > xs[0]:
        return float(np.trapezoid(values, xs) / (xs[-1] - xs[0]))
    return float(values.mean())


def first_reach(xs: np.ndarray, values: np.ndarray, target: float, higher: bool) -> float:
    """The first x at which `values` reaches `target` (>= when higher is better, else <=); inf if never.
    A non-finite value (a diverged run) never reaches it."""
    with np.errstate(invalid="ignore"):
        hit = np.nonzero(np.isfinite(values) & (values >= target if higher else values <= target))[0]
    return float(xs[hit[0]]) if len(hit) else np.inf


def mean_curve(run: pd.DataFrame, metric: str, x: str) -> tuple[np.ndarray, np.ndarray]:
    """The mean over seeds of one run's curve, on the union of the seeds' x points: between two of its
    own evaluations a seed keeps its last value (on a simulated clock seeds log at different times).
    It covers only the x where every seed has begun and not yet ended; a seed ends at its first
    non-finite value (divergence), so a diverged seed ends the mean curve there."""
    parts = []
    for _, seed in run.sort_values(x).groupby("seed"):
        bad = np.nonzero(~np.isfinite(seed[metric].to_numpy(dtype=float)))[0]
        parts.append(seed.iloc[: bad[0]] if len(bad) else seed)
    if any(len(p) == 0 for p in parts):
        return np.array([]), np.array([])
    wide = pd.concat(parts).pivot(index=x, columns="seed", values=metric).sort_index()
    first = max(wide[s].first_valid_index() for s in wide.columns)
    last = min(wide[s].last_valid_index() for s in wide.columns)
    wide = wide.ffill().loc[first:last]
    return wide.index.to_numpy(), wide.mean(axis=1).to_numpy(dtype=float)


def _target_of(run: pd.DataFrame, target: float | dict[str, float] | str) -> float:
    """One value, one per panel ({panel: value}), or the name of the run's column that holds it (a setting
    such as `target_accuracy`, which a scale may change per panel)."""
    if isinstance(target, str):
        if target not in run:
            raise ValueError(f"time_to_target: target column {target!r} is not in the table")
        return float(run[target].iloc[0])
    if isinstance(target, dict):
        panel = run["panel"].iloc[0]
        if panel not in target:
            raise ValueError(f"time_to_target: no target for panel {panel!r}; targets are given for {sorted(target)}")
        return float(target[panel])
    return float(target)


def time_to_target(table: pd.DataFrame, labels: list[str], metric: str, target: float | dict[str, float] | str,
                   higher: bool, x: str = "round", seeds: SeedAggregate = "mean") -> pd.DataFrame:
    """One row per run: t_target, the x at which its curve first reaches `target` (inf if never), t_lower,
    what the data say of it (= t_target when reached; a target not reached within the curve's last x H is
    censored there: the time is > H, t_lower = H; inf for a diverged curve, which never reaches it), and
    seeds, joined with the run's labels. `target` may be one value or one per panel.

    seeds: mean   -> the first x of the seed-mean curve (mean_curve), as DeFedAvg's Table I reads
                     "time to target from the seed-averaged curve"
           median -> the median over seeds of each seed's own first x (inf counts as the largest); t_lower
                     the median of the seeds' own lower bounds, a lower bound of the median
    A diverged seed's non-finite values never reach the target.
    """
    if seeds not in SEED_AGGREGATES:
        raise ValueError(f"time_to_target: seeds {seeds!r}; allowed: {', '.join(SEED_AGGREGATES)}")
    medians = (seed_times(table, metric, target, higher, x).groupby("run_id")[["t_target", "t_lower"]].median()
               if seeds == "median" else None)
    rows = []
    for run_id, run in table.groupby("run_id", sort=False):
        if medians is None:
            goal = _target_of(run, target)
            run = run[[x, "seed", metric, "diverged"]].astype({metric: float})
            xs, values = mean_curve(run, metric, x)
            t, low = _reach(xs, values, goal, higher, _is_diverged(run, run[metric].to_numpy()))
        else:
            t, low = (float(v) for v in medians.loc[run_id, ["t_target", "t_lower"]])
        rows.append({"run_id": run_id, "t_target": t, "t_lower": low, "seeds": run["seed"].nunique()})
    return _with_labels(pd.DataFrame(rows), table, labels)


def seed_times(table: pd.DataFrame, metric: str, target: float | dict[str, float] | str, higher: bool,
               x: str = "round") -> pd.DataFrame:
    """One row per (run_id, seed): t_target and t_lower of the seed's own curve (as time_to_target)."""
    rows = []
    for (run_id, seed), run in table.groupby(["run_id", "seed"], sort=False):
        run = run.sort_values(x)
        values = run[metric].to_numpy(dtype=float)
        t, low = _reach(run[x].to_numpy(), values, _target_of(run, target), higher, _is_diverged(run, values))
        rows.append({"run_id": run_id, "seed": seed, "t_target": t, "t_lower": low})
    return pd.DataFrame(rows, columns=["run_id", "seed", "t_target", "t_lower"])


def _reach(xs: np.ndarray, values: np.ndarray, goal: float, higher: bool, diverged: bool) -> tuple[float, float]:
    """(first x reaching `goal`, its lower bound): (t, t), (inf, last x) when censored, (inf, inf) when diverged."""
    t = first_reach(xs, values, goal, higher)
    if math.isfinite(t):
        return t, t
    return t, (math.inf if diverged or not len(xs) else float(xs[-1]))


def final_mean(table: pd.DataFrame, labels: list[str], metric: str, x: str = "round", window: float = 0.1) -> pd.DataFrame:
    """One row per run: `final`, the mean over seeds of each seed's mean metric over the last `window`
    fraction of its x range (nan for a run with a diverged seed)."""
    rows = []
    for run_id, run in table.groupby("run_id", sort=False):
        finals = []
        for _, seed in run.sort_values(x).groupby("seed"):
            xs, values = seed[x].to_numpy(), seed[metric].to_numpy(dtype=float)
            finals.append(values[xs >= xs[0] + (xs[-1] - xs[0]) * (1 - window)].mean())
        rows.append({"run_id": run_id, "final": float(np.mean(finals)), "seeds": len(finals)})
    return _with_labels(pd.DataFrame(rows), table, labels)


def spearman(x, y) -> float:
    """Spearman's rank correlation: Pearson's of the average ranks (scipy's definition, without its
    second of import time in every job; an infinite value ranks last); nan where either side's ranks are
    all equal (undefined)."""
    rx, ry = pd.Series(x, dtype=float).rank(), pd.Series(y, dtype=float).rank()
    if len(rx) < 2 or rx.nunique() < 2 or ry.nunique() < 2:
        return np.nan
    return float(np.corrcoef(rx, ry)[0, 1])


def rank_correlations(table: pd.DataFrame, labels: list[str], x: str, y: str) -> pd.DataFrame:
    """One row per (run, seed): `rho`, Spearman's rank correlation of columns `x` and `y` over the seed's
    rows (e.g. over clients: speed and participation), joined with the run's labels."""
    rows = [{"run_id": run_id, "seed": seed, "rho": spearman(run[x], run[y])}
            for (run_id, seed), run in table.groupby(["run_id", "seed"], sort=False)]
    return _with_labels(pd.DataFrame(rows), table, labels)


def seed_values(table: pd.DataFrame, labels: list[str], column: str) -> pd.DataFrame:
    """One row per (run, seed): `value`, the seed's value of a column that is one fact per seed (e.g. a
    trace's mean round time, repeated on each client row), joined with the run's labels."""
    per_seed = table.groupby(["run_id", "seed"], sort=False)[column]
    if (per_seed.nunique(dropna=False) > 1).any():
        raise ValueError(f"column {column!r} varies within a seed: not one fact per seed")
    return _with_labels(per_seed.first().rename("value").reset_index(), table, labels)


def oscillation_per_seed(table: pd.DataFrame, labels: list[str], metric: str, x: str = "round",
                         window: float = 0.5) -> pd.DataFrame:
    """One row per (run, seed): `oscillation`, the standard deviation of the first differences of the
    metric over the points in the last `window` fraction of the x range (DeFedAvg claim 12: "more
    oscillations in the performance curves"); inf for a diverged seed."""
    rows = []
    for (run_id, seed), run in table.groupby(["run_id", "seed"], sort=False):
        run = run.sort_values(x)
        values, xs = run[metric].to_numpy(dtype=float), run[x].to_numpy()
        tail = values[xs >= xs[0] + (xs[-1] - xs[0]) * (1 - window)]
        if _is_diverged(run, values):
            spread = np.inf
        else:
            spread = float(np.std(np.diff(tail), ddof=1)) if len(tail) > 2 else np.nan
        rows.append({"run_id": run_id, "seed": seed, "oscillation": spread})
    return _with_labels(pd.DataFrame(rows), table, labels)
