"""Checks on per-run seed medians of a final value or a time to target (FedPAGE-style figures),
and on per-round counters of the raw table.

The seed medians (results.summaries.curve_medians) are of `metric` against the x column `x`:
final = geometric mean over the last `window` fraction of the x range, T_<eps> = first x with
metric <= eps x its first value.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np
import pandas as pd

from fedrepro.claims.checks.common import (
    INCONCLUSIVE,
    Column,
    Columns,
    Fraction,
    Names,
    OneOf,
    Positive,
    Require,
    Result,
    Selector,
    cells_of,
    compare_stat,
    fmt,
    judged,
    room,
    rows_matching,
    selector_name,
    stat_pairs,
)
from fedrepro.claims.data import ClaimData
from fedrepro.results.summaries import CURVE_STATISTICS

# a seed-median summary of a curve: final, auc, g0 or T_<eps> (results/summaries.py)
CurveStat = Annotated[str, OneOf(CURVE_STATISTICS, r"T_(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", "T_<eps>")]


def _eps_of(stat: str) -> list[float]:
    """The eps a stat T_<eps> needs computed ([] for final, auc, g0)."""
    return [float(stat[2:])] if stat.startswith("T_") else []


def compare_final(data: ClaimData, *, a: Selector, b: Selector, per: Columns, metric: str, x: str = "round",
                  window: Fraction = 0.1, factor: Positive = 1.0, require: Require = "all",
                  fraction: Fraction | None = None, stat: CurveStat = "final") -> Result:
    """Holds in a cell when stat(a) < stat(b) * factor (factor < 1: a wins by a margin; > 1: a tolerance);
    stat: final, auc, g0 or T_<eps> of the seed medians. Margin: decades (common.compare_stat)."""
    medians = data.medians(metric, x, window, _eps_of(stat))
    return compare_stat(medians, a, b, per, stat, factor, require, fraction)


def log_ratio_within(data: ClaimData, *, a: Selector, b: Selector, per: Columns, metric: str, x: str = "round",
                     window: Fraction = 0.1, max_abs_log10: float = 0.5, or_both_below: float | None = None,
                     require: Require = "all", fraction: Fraction | None = None) -> Result:
    """|log10 final(a)/final(b)| <= bound, or both finals below `or_both_below` x the metric's first value.
    Margin: decades, bound - |log10 ratio| (or how far both lie below the floor, if more)."""
    curves = data.medians(metric, x, window)
    holds, parts, margins = [], [], []
    for name, cell in cells_of(curves, per) if len(curves) else []:
        sa, sb = rows_matching(cell, a), rows_matching(cell, b)
        if len(sa) != 1 or len(sb) != 1:
            continue
        fa, fb, g0 = float(sa["final"].iloc[0]), float(sb["final"].iloc[0]), float(sa["g0"].iloc[0])
        ratio = abs(math.log10(fa / fb)) if np.isfinite([fa, fb]).all() and fa > 0 and fb > 0 else math.inf
        small = or_both_below is not None and max(fa, fb) <= or_both_below * g0
        holds.append(ratio <= max_abs_log10 or small)
        margins.append(max(max_abs_log10 - ratio,
                           room(max(fa, fb), or_both_below * g0) if or_both_below is not None else -math.inf))
        parts.append(f"[{name}] {fmt(fa)} vs {fmt(fb)} (|log10 ratio| {fmt(ratio)})")
    measured = f"{sum(holds)}/{len(holds)} cells hold: " + "; ".join(parts) if parts else "no cell has both curves"
    return judged(holds, margins, measured, require, fraction)


def monotone_time_to_target(data: ClaimData, *, per: Columns, along: Column, eps: list[float], metric: str,
                            x: str = "round", decreasing: bool = True) -> Result:
    """T_eps never improves when `along` shrinks (larger step converges faster), among runs
    that did not diverge; an eps that no run of the cell reaches is skipped. Margin: decades, the smallest
    log10 T(next step) / T(this step) (>= 0 holds)."""
    curves = data.medians(metric, x, 0.1, eps)  # (the window does not enter T_eps)
    holds, parts, margins = [], [], []
    for name, cell in cells_of(curves, per) if len(curves) else []:
        cell = cell[cell["diverged_seeds"] == 0].sort_values(along, ascending=not decreasing)
        if len(cell) < 2:
            continue
        for e in eps:
            times = cell[f"T_{e:g}"].to_numpy()
            if np.isinf(times).all():
                continue
            ok = bool(np.all(np.diff(times) >= 0))
            holds.append(ok)
            margins.append(min(-room(t_next, t) for t, t_next in zip(times[:-1], times[1:])))
            steps = ", ".join(f"{s:g}: {fmt(t)}" for s, t in zip(cell[along], times))
            parts.append(f"[{name}, eps={e:g}] {'ok' if ok else 'not monotone'} ({steps})")
    measured = f"{sum(holds)}/{len(holds)} hold: " + "; ".join(parts) if parts else "no comparable cells"
    return judged(holds, margins, measured)


def time_to_target(data: ClaimData, *, a: Selector, b: Selector, per: Columns, metric: str,
                   target: Annotated[float | dict[str, float] | str, Names("target")], higher: bool, x: str = "round",
                   seeds: Literal["mean", "median"] = "mean", factor: Positive = 1.0, require: Require = "all",
                   fraction: Fraction | None = None) -> Result:
    """A reaches `target` of `metric` (>= when `higher` is better, else <=) in less x than B, in each cell:
    T(a) < T(b) * factor. T is the first x of the seed-mean curve (seeds: mean) or the median of the
    seeds' own first x (seeds: median), results.summaries.time_to_target; a curve that never reaches
    the target has T = inf. A cell where neither reaches it is undecided: listed, not counted. `target`
    is one value, one per panel, or the column holding each run's (e.g. target_accuracy). Margin: decades
    by which T(a) lies below T(b) * factor."""
    times = data.times_to_target(metric, target, higher, x, seeds)
    pairs = list(stat_pairs(times, a, b, per, "t_target")) if len(times) else []
    decided = [(n, ta, tb) for n, ta, tb in pairs if not (math.isinf(ta) and math.isinf(tb))]
    holds = [ta < tb * factor for _, ta, tb in decided]
    margins = [room(ta, tb * factor) for _, ta, tb in decided]
    name_a, name_b = selector_name(a), selector_name(b)
    detail = "; ".join(f"[{n}] {name_a} {fmt(ta)} vs {name_b} {fmt(tb)}"
                       + (" (neither reaches the target: undecided)" if math.isinf(ta) and math.isinf(tb) else "")
                       for n, ta, tb in pairs)
    measured = f"{sum(holds)}/{len(holds)} decided cells hold: {detail}" if pairs else "no cell has both curves"
    return judged(holds, margins, measured, require, fraction)


def rate_within(data: ClaimData, *, select: Selector, rate: str, target: str, rel_tol: float, x: str = "round") -> Result:
    """A per-round counter (e.g. clients per round) within rel_tol of an expression of the
    run's settings; `rate` and `target` are evaluated on each run's last logged row (largest x).
    Margin: rel_tol - |rate - target| / target."""
    holds, parts, margins = [], [], []
    rows = rows_matching(data.table, select) if len(data.table) else data.table
    for run_id, run in rows.groupby("run_id", sort=False):
        last = run[run[x] == run[x].max()]
        env = {c: last[c].to_numpy(dtype=float) for c in last.columns if pd.api.types.is_numeric_dtype(last[c])}
        measured_value = float(np.mean(eval(rate, {"__builtins__": {}}, env)))  # noqa: S307 (config expression)
        target_value = float(np.mean(eval(target, {"__builtins__": {}}, env)))  # noqa: S307
        ok = abs(measured_value - target_value) <= rel_tol * target_value
        holds.append(ok)
        margins.append(rel_tol - abs(measured_value - target_value) / abs(target_value))
        parts.append(f"[{run['panel'].iloc[0]}, {run['curve'].iloc[0]}] {measured_value:.4g} vs {target_value:.4g}")
    measured = f"{sum(holds)}/{len(holds)} runs within {rel_tol:.0%}: " + "; ".join(parts) if parts else "no runs"
    return judged(holds, margins, measured)


def participation_rate(data: ClaimData, *, select: Selector, population: Column, sampled: Column, probability: Column,
                       sds: float = 3.0, rounds: str = "round", clients: str = "clients",
                       full_rounds: str = "full_rounds") -> Result:
    """Random full participation (FedPAGE's communication): after round 0 (always full), each round
    is full with probability p, so the expected clients per round is pN + (1-p)S. The settings are
    named by the claim: N = `population` (all clients), S = `sampled` (clients of a partial round),
    p = `probability` ("auto" means S/N); the counters `rounds`, `clients` (cumulative) and
    `full_rounds` are metrics of the run. Pooled over the runs and seeds of one (N, S), the number of
    full rounds must lie within `sds` binomial standard deviations of its expectation; the measured
    clients per round is reported beside pN + (1-p)S and 2S. Margin: in binomial standard deviations,
    sds - |full - expected| / sd."""
    holds, parts, margins = [], [], []
    table = rows_matching(data.table, select) if len(data.table) else data.table
    last = table.sort_values(rounds).groupby(["run_id", "seed"]).tail(1)
    for (n, s), runs in last.groupby([population, sampled]):
        p = runs[probability].map(lambda v: s / n if v == "auto" else float(v)).to_numpy()
        trials = (runs[rounds] - 1).to_numpy()  # rounds 1..R-1 decide by the coin
        full = (runs[full_rounds] - 1).to_numpy()
        expected, sd = float(np.sum(trials * p)), float(np.sqrt(np.sum(trials * p * (1 - p))))
        ok = abs(full.sum() - expected) <= sds * sd + 1
        holds.append(bool(ok))
        margins.append(sds - abs(full.sum() - expected) / sd if sd > 0 else math.nan)
        per_round = float(((runs[clients] - n) / trials).mean())
        parts.append(f"[N={n}, S={s}] clients/round {per_round:.3g} (pN+(1-p)S = {float(np.mean(p * n + (1 - p) * s)):.3g}, "
                     f"2S = {2 * s}); full rounds after r=0: {int(full.sum())} in {int(trials.sum())} (expected {expected:.1f} +- {sd:.1f})")
    measured = "; ".join(parts) if parts else "no runs"
    return judged(holds, margins, measured)


def diverged_runs(data: ClaimData, *, show: Columns = ()) -> Result:
    """Informational: which curves diverged (a seed flagged `diverged`), with the settings in `show`."""
    table = data.table
    if not len(table):
        return Result(INCONCLUSIVE, "no run diverged", "informational; the paper says only that larger steps *may* diverge")
    per_seed = table.groupby(["run_id", "seed"], sort=False)["diverged"].any().groupby("run_id", sort=False)
    runs = table.drop_duplicates("run_id").set_index("run_id")
    listing = "; ".join(
        f"[{runs.at[rid, 'panel']}] {runs.at[rid, 'curve']}"
        + "".join(f" {c}={runs.at[rid, c]}" for c in show) + f": {int(flags.sum())}/{len(flags)} seeds"
        for rid, flags in per_seed if flags.any())
    return Result(INCONCLUSIVE, listing or "no run diverged",
                  "informational; the paper says only that larger steps *may* diverge")


def not_tested(data: ClaimData, *, reason: str) -> Result:
    return Result(INCONCLUSIVE, "", reason)
