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
    pair_rows,
    room,
    rows_matching,
    selector_name,
    stat_pairs,
    values_of,
)
from fedrepro.claims.data import ClaimData
from fedrepro.results.summaries import CURVE_STATISTICS, spearman

# a seed-median summary of a curve: final, auc, g0 or T_<eps> (results/summaries.py)
CurveStat = Annotated[str, OneOf(CURVE_STATISTICS, r"T_(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", "T_<eps>")]
# a target of a metric: one value, one per panel, or the column holding each run's (results.summaries.time_to_target)
Target = Annotated[float | dict[str, float] | str, Names("target")]


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
                   target: Target, higher: bool, x: str = "round",
                   seeds: Literal["mean", "median"] = "mean", factor: Positive = 1.0, require: Require = "all",
                   fraction: Fraction | None = None) -> Result:
    """A reaches `target` of `metric` (>= when `higher` is better, else <=) in less x than B, in each cell
    (each curve of A there): T(a) < T(b) * factor. T is the first x of the seed-mean curve (seeds: mean) or
    the median of the seeds' own first x (seeds: median), results.summaries.time_to_target; a curve that never reaches
    the target has T = inf. A cell where neither reaches it is undecided: listed, not counted. `target`
    is one value, one per panel, or the column holding each run's (e.g. target_accuracy). Margin: decades
    by which T(a) lies below T(b) * factor."""
    times = data.times_to_target(metric, target, higher, x, seeds)
    pairs = list(stat_pairs(times, a, b, per, "t_target", each_a=True)) if len(times) else []
    decided = [(n, ta, tb) for n, ta, tb in pairs if not (math.isinf(ta) and math.isinf(tb))]
    holds = [ta < tb * factor for _, ta, tb in decided]
    margins = [room(ta, tb * factor) for _, ta, tb in decided]
    name_a, name_b = selector_name(a), selector_name(b)
    if any(isinstance(v, list) for v in a.values()):  # several curves of A: each pair's name holds A's curve
        name_a = "T"
    detail = "; ".join(f"[{n}] {name_a} {fmt(ta)} vs {name_b} {fmt(tb)}"
                       + (" (neither reaches the target: undecided)" if math.isinf(ta) and math.isinf(tb) else "")
                       for n, ta, tb in pairs)
    measured = f"{sum(holds)}/{len(holds)} decided cells hold: {detail}" if pairs else "no cell has both curves"
    return judged(holds, margins, measured, require, fraction)


def _times_in_order(cell: pd.DataFrame, along: str, order: list) -> np.ndarray:
    """T of the run at each value of `along`, in `order` (nan where absent; one run per value)."""
    return np.array([float(cell.loc[cell[along] == v, "t_target"].iloc[0]) if (cell[along] == v).sum() == 1
                     else np.nan for v in order])


def time_to_target_trend(data: ClaimData, *, select: Selector, per: Columns, along: Column, order: values_of("along"),
                         metric: str, target: Target, higher: bool, increasing: bool, x: str = "round",
                         seeds: Literal["mean", "median"] = "mean", inversions: int = 0, require: Require = "all",
                         fraction: Fraction | None = None) -> Result:
    """The time to target of the selected runs moves one way along `order` of the values of `along`: never
    falls (increasing) or never rises, with at most `inversions` adjacent pairs against it (e.g. Fig. 6's
    rounds to target non-increasing in n, one inversion allowed). T as in time_to_target; two curves that
    never reach the target are equal (inf), a cell where none does is undecided: listed, not counted.
    Spearman's rho of the value and T is reported beside it. Margin: decades, the smallest step along the
    expected direction, after the `inversions` worst steps are forgiven."""
    times = data.times_to_target(metric, target, higher, x, seeds)
    holds, parts, margins = [], [], []
    for name, cell in cells_of(rows_matching(times, select), per) if len(times) else []:
        t = _times_in_order(cell, along, order)
        if np.isnan(t).any():
            continue
        steps = sorted(room(a, b) if increasing else room(b, a) for a, b in zip(t[:-1], t[1:]))  # >= 0: as expected
        rho = spearman(order, t)
        series = ", ".join(f"{along}={v}: {fmt(x)}" for v, x in zip(order, t))
        if np.isinf(t).all():
            parts.append(f"[{name}] {series} (none reaches the target: undecided)")
            continue
        margin = steps[min(inversions, len(steps) - 1)]
        holds.append(margin >= 0)
        margins.append(margin)
        parts.append(f"[{name}] {series} (Spearman {rho:+.2f})")
    measured = f"{sum(holds)}/{len(holds)} decided cells hold: " + "; ".join(parts) if parts else "no cell has every value"
    return judged(holds, margins, measured, require, fraction)


def time_ratio_by_group(data: ClaimData, *, a: Selector, b: Selector, per: Columns, group: Column,
                        greater: values_of("group"), than: values_of("group"), metric: str, target: Target,
                        higher: bool, x: str = "round",
                        seeds: Literal["mean", "median"] = "mean") -> Result:
    """The mean over cells of T(b) / T(a) (how many times faster A is) is larger where `group` takes a value
    in `greater` than where it takes one in `than` (DeFedAvg claim 4b: FedBuff's edge over FedAvg shrinks as
    n grows). A cell where neither reaches the target is left out; one where only A does has ratio inf.
    Margin: decades, log10(mean ratio of `greater` / mean ratio of `than`)."""
    times = data.times_to_target(metric, target, higher, x, seeds)
    ratios: dict[str, list[float]] = {"greater": [], "than": []}
    parts = []
    for name, ra, rb in pair_rows(times, a, b, per) if len(times) else []:
        ta, tb, value = float(ra["t_target"]), float(rb["t_target"]), ra[group]
        side = "greater" if value in greater else "than" if value in than else None
        if side is None or (math.isinf(ta) and math.isinf(tb)):
            continue
        ratios[side].append(tb / ta if ta > 0 else math.inf)
        parts.append(f"[{name}] {fmt(tb)} / {fmt(ta)} = {fmt(ratios[side][-1])}")
    if not (ratios["greater"] and ratios["than"]):
        return Result(INCONCLUSIVE, f"decided cells: {len(ratios['greater'])} with {group} in {greater}, "
                                    f"{len(ratios['than'])} with {group} in {than}")
    mg, mt = float(np.mean(ratios["greater"])), float(np.mean(ratios["than"]))
    measured = (f"mean T(b)/T(a) {fmt(mg)} at {group} in {greater} ({len(ratios['greater'])} cells) vs {fmt(mt)} at "
                f"{group} in {than} ({len(ratios['than'])} cells): " + "; ".join(parts))
    return judged([mg > mt], [room(mt, mg)], measured)


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


def falls(data: ClaimData, *, select: Selector, metric: str, x: str = "round", window: Fraction = 0.1,
          require: Require = "all", fraction: Fraction | None = None) -> Result:
    """Every selected run converges in the weak sense of TDCD claim C5: all its values finite and its final
    value (seed median of the geometric mean over the last `window` of x) below its first. Margin: decades,
    log10(first / final) of the deciding run."""
    medians = data.medians(metric, x, window)
    runs = rows_matching(medians, select) if len(medians) else medians
    holds, parts, margins = [], [], []
    for _, run in runs.iterrows():
        first, final = float(run["g0"]), float(run["final"])
        ok = run["diverged_seeds"] == 0 and np.isfinite(final) and final < first
        holds.append(bool(ok))
        margins.append(room(final, first) if ok or np.isfinite(final) else -math.inf)
        parts.append(f"[{run['panel']}, {run['curve']}] {fmt(first)} -> {fmt(final)}")
    failing = [p for p, ok in zip(parts, holds) if not ok]
    measured = (f"{sum(holds)}/{len(holds)} runs fall" + (": not " + "; ".join(failing) if failing else "")
                + (f"; e.g. {parts[0]}" if parts and not failing else "")) if parts else "no runs"
    return judged(holds, margins, measured, require, fraction)


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
