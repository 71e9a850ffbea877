"""Checks on per-run seed medians of a final value or a time to target (FedPAGE-style figures),
and on per-round counters of the raw table.

The seed medians (results.summaries.seed_medians) are of `metric` against the x column `x`:
final = geometric mean over the last `window` fraction of the x range, T_<eps> = first x with
metric <= eps x its first value.
"""

from __future__ import annotations

import math
from typing import Annotated

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
    Tolerance,
    below,
    cells_of,
    compare_stat,
    fmt,
    fmt_span,
    judged,
    margin_below,
    never,
    never_falls,
    open_text,
    pair_rows,
    paired_below,
    ratio_span,
    rows_matching,
    selector_name,
    shown_outcome,
    span,
    tally,
    values_of,
)
from fedrepro.claims.checks.inference import Test, effect_test, equivalent
from fedrepro.claims.data import ClaimData
from fedrepro.experiments.runtable import LABEL_COLUMNS
from fedrepro.numerics import KEYING
from fedrepro.results.summaries import CURVE_STATISTICS, SeedAggregate, spearman

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
    stat: final, auc, g0 or T_<eps> of the seed medians. Each cell is a Test of the paired per-seed log ratios
    (common.compare_stat, common.paired_below). Margin: decades."""
    medians = data.medians(metric, x, window, _eps_of(stat))
    per_seed = data.seed_summaries(metric, x, window, _eps_of(stat))
    return compare_stat(medians, a, b, per, stat, factor, require, fraction, per_seed)


def log_ratio_within(data: ClaimData, *, a: Selector, b: Selector, per: Columns, metric: str, max_abs_log10: Positive,
                     x: str = "round", window: Fraction = 0.1, or_both_below: float | None = None,
                     require: Require = "all", fraction: Fraction | None = None) -> Result:
    """final(a) and final(b) are nearly the same in each cell: |log10 final(a)/final(b)| < max_abs_log10 (decades), an
    equivalence margin the claims file declares, by the TOST of the per-seed log ratios, paired by seed
    (inference.equivalent; a diverged seed, inf, counts by its sign). With `or_both_below`, a final below that
    fraction of the seed's first value counts as that floor: two finals below it have a ratio of 1, nothing left
    to tell apart. Margin: decades, max_abs_log10 - |mean log ratio| of the seeds."""
    per_seed = data.seed_summaries(metric, x, window)
    holds, parts, margins = [], [], []
    for name, ra, rb in pair_rows(data.medians(metric, x, window), a, b, per) if len(per_seed) else []:
        sa, sb = (per_seed.loc[per_seed["run_id"] == r["run_id"]].set_index("seed") for r in (ra, rb))
        seeds = sa.index.intersection(sb.index)
        fa, fb = sa.loc[seeds, "final"].to_numpy(dtype=float), sb.loc[seeds, "final"].to_numpy(dtype=float)
        if or_both_below is not None:
            floor = or_both_below * sa.loc[seeds, "g0"].to_numpy(dtype=float)
            fa, fb = np.maximum(fa, floor), np.maximum(fb, floor)
        with np.errstate(divide="ignore", invalid="ignore"):  # a diverged or zero final: +-inf; both diverged: nan
            ratios = np.log10(fa) - np.log10(fb)
        test = equivalent(ratios, margin=max_abs_log10)
        mean = float(np.mean(ratios)) if len(ratios) else math.nan
        holds.append(test)
        margins.append(max_abs_log10 - abs(mean) if not math.isnan(mean) else -math.inf)
        parts.append(f"[{name}] {fmt(float(ra['final']))} vs {fmt(float(rb['final']))} (log10 ratio of the seeds "
                     f"{', '.join(f'{r:+.2f}' for r in ratios)})" + open_text(test))
    measured = (f"TOST within ±{fmt(max_abs_log10)} decades, {tally(holds)}: " + "; ".join(parts) if parts
                else "no cell has both curves")
    return judged(holds, margins, measured, require, fraction)


def monotone_time_to_target(data: ClaimData, *, per: Columns, along: Column, eps: list[Positive], metric: str,
                            x: str = "round", decreasing: bool = True) -> Result:
    """T_eps never improves when `along` shrinks (larger step converges faster), among runs
    that did not diverge; an eps that no run of the cell reaches is skipped. Each step is a Test of the seeds'
    own T_eps, paired by seed (common.paired_below: a T_eps not reached by a seed's last round is censored
    there), and a series holds when every step does (common.never_falls). Margin: decades, the smallest
    log10 T(next step) / T(this step) of the seed medians (>= 0 holds)."""
    curves = data.medians(metric, x, 0.1, eps)  # (the window does not enter T_eps)
    per_seed = data.seed_summaries(metric, x, 0.1, eps) if len(curves) else None
    holds, parts, margins = [], [], []
    for name, cell in cells_of(curves, per) if len(curves) else []:
        cell = cell[cell["diverged_seeds"] == 0].sort_values(along, ascending=not decreasing)
        if len(cell) < 2:
            continue
        runs = list(cell["run_id"])
        for e in eps:
            spans = [(float(lo), float(hi)) for lo, hi in zip(cell[f"T_{e:g}_lower"], cell[f"T_{e:g}"])]
            if never(*spans):
                continue
            tests = [paired_below(per_seed, r1, r2, f"T_{e:g}") for r1, r2 in zip(runs[:-1], runs[1:])]
            test, margin, open_ = never_falls(spans, tests)
            holds.append(test)
            margins.append(margin)
            steps = ", ".join(f"{s:g}: {fmt_span(t)}" for s, t in zip(cell[along], spans))
            outcome = {True: "ok", False: "not monotone", None: open_}[test.outcome]
            parts.append(f"[{name}, eps={e:g}] {outcome} ({steps})")
    measured = f"{tally(holds, 'series')}: " + "; ".join(parts) if parts else "no comparable cells"
    return judged(holds, margins, measured)


def time_to_target(data: ClaimData, *, a: Selector, b: Selector, per: Columns, metric: str,
                   target: Target, higher: bool, x: str = "round",
                   seeds: SeedAggregate = "mean", factor: Positive = 1.0, require: Require = "all",
                   fraction: Fraction | None = None) -> Result:
    """A reaches `target` of `metric` (>= when `higher` is better, else <=) in less x than B, in each cell
    (each curve of A there): T(a) < T(b) * factor. T is the first x of the seed-mean curve (seeds: mean) or
    the median of the seeds' own first x (seeds: median), results.summaries.time_to_target. A curve that does
    not reach the target within its last logged x H is censored: T > H, a bound that decides the cell only
    when it settles the comparison (A never reaching it by x = 12 loses to B at 9; against B at 15 the cell is
    open, and an open cell makes the claim INCONCLUSIVE unless the others decide it). A diverged curve never
    reaches it (T = inf). A cell where neither reaches it is undecided: listed, not counted. `target` is one
    value, one per panel, or the column holding each run's (e.g. target_accuracy). The cell is a Test of the
    seeds' own times, paired by seed (common.paired_below: the per-seed log10 ratios, by the t-test while
    every seed reached the target, else by the sign test of the seeds the censored bounds settle). Margin:
    decades by which T(a) lies below T(b) * factor (of the bounds, when censored: the least the data guarantee)."""
    times = data.times_to_target(metric, target, higher, x, seeds)
    pairs = list(pair_rows(times, a, b, per, each_a=True)) if len(times) else []
    per_seed = data.seed_times(metric, target, higher, x) if pairs else None
    holds, margins, parts = [], [], []
    name_a, name_b = selector_name(a), selector_name(b)
    if any(isinstance(v, list) for v in a.values()):  # several curves of A: each pair's name holds A's curve
        name_a = "T"
    for n, ra, rb in pairs:
        sa, sb = span(ra), span(rb)
        shown = f"[{n}] {name_a} {fmt_span(sa)} vs {name_b} {fmt_span(sb)}"
        if never(sa, sb):
            parts.append(shown + " (neither reaches the target: undecided)")
            continue
        ok = below(sa, sb, factor)
        margin = margin_below(sa[1], sb[0] * factor) if ok else margin_below(sa[0], sb[1] * factor)
        test = paired_below(per_seed, ra["run_id"], rb["run_id"], "t_target", factor, lower="t_lower")
        holds.append(test)
        margins.append(margin)
        parts.append(shown + open_text(test))
    measured = f"{tally(holds)}: " + "; ".join(parts) if pairs else "no cell has both curves"
    return judged(holds, margins, measured, require, fraction)


def _spans_in_order(cell: pd.DataFrame, along: str, order: list) -> tuple[list[tuple[float, float]], list[str]] | None:
    """The time to target (an interval, common.span) and the run id of the run at each value of `along`, in
    `order`; None when a value has no run or several."""
    spans, runs = [], []
    for v in order:
        rows = cell[cell[along] == v]
        if len(rows) != 1:
            return None
        spans.append(span(rows.iloc[0]))
        runs.append(rows.iloc[0]["run_id"])
    return spans, runs


def time_to_target_trend(data: ClaimData, *, select: Selector, per: Columns, along: Column, order: values_of("along"),
                         metric: str, target: Target, higher: bool, increasing: bool, x: str = "round",
                         seeds: SeedAggregate = "mean", inversions: int = 0, require: Require = "all",
                         fraction: Fraction | None = None) -> Result:
    """The time to target of the selected runs moves one way along `order` of the values of `along`: never
    falls (increasing) or never rises, with at most `inversions` adjacent pairs against it (e.g. Fig. 6's
    rounds to target non-increasing in n, one inversion allowed). T as in time_to_target, and
    each step is a Test of the seeds' own times, paired by seed (common.paired_below), and a cell holds when all
    but `inversions` of its steps do (common.never_falls). A cell where none
    reaches the target is undecided: listed, not counted. Spearman's rho of the value and T is reported
    beside it. Margin: decades, the smallest step along the expected direction after the `inversions`
    worst are forgiven (of the bounds: the least the data guarantee, or the most they allow)."""
    times = data.times_to_target(metric, target, higher, x, seeds)
    per_seed = data.seed_times(metric, target, higher, x) if len(times) else None
    holds, parts, margins = [], [], []
    for name, cell in cells_of(rows_matching(times, select), per) if len(times) else []:
        found = _spans_in_order(cell, along, order)
        if found is None:
            continue
        spans, runs = found
        series = ", ".join(f"{along}={v}: {fmt_span(t)}" for v, t in zip(order, spans))
        if never(*spans):
            parts.append(f"[{name}] {series} (none reaches the target: undecided)")
            continue
        runs, ordered = (runs, spans) if increasing else (runs[::-1], spans[::-1])
        tests = [paired_below(per_seed, r1, r2, "t_target", lower="t_lower") for r1, r2 in zip(runs[:-1], runs[1:])]
        test, margin, open_ = never_falls(ordered, tests, inversions)
        holds.append(test)
        margins.append(margin)
        rho = spearman(order, [t[1] for t in spans])
        parts.append(f"[{name}] {series} (Spearman {rho:+.2f}"
                     + (f"; {open_}" if open_ else "")
                     + ")")
    measured = f"{tally(holds)}: " + "; ".join(parts) if parts else "no cell has every value"
    return judged(holds, margins, measured, require, fraction)


def time_ratio_by_group(data: ClaimData, *, a: Selector, b: Selector, per: Columns, group: Column,
                        greater: values_of("group"), than: values_of("group"), metric: str, target: Target,
                        higher: bool, x: str = "round",
                        seeds: SeedAggregate = "mean") -> Result:
    """The mean over cells of T(b) / T(a) (how many times faster A is) is larger where `group` takes a value
    in `greater` than where it takes one in `than` (DeFedAvg claim 4b: FedBuff's edge over FedAvg shrinks as
    n grows). A cell where neither reaches the target is left out. A censored time (time_to_target) makes its
    ratio an interval, and the means intervals. Shown: the ratios of the seed-`seeds` curves. Tested on the
    seeds (_group_ratio_test): each seed's effect log10(its mean ratio at `greater` / at `than`). Margin:
    decades, log10(mean ratio of `greater` / mean ratio of `than`) (of the bounds, when censored)."""
    times = data.times_to_target(metric, target, higher, x, seeds)
    ratios: dict[str, list[tuple[float, float]]] = {"greater": [], "than": []}
    runs: dict[str, list[tuple[str, str]]] = {"greater": [], "than": []}
    parts = []
    for name, ra, rb in pair_rows(times, a, b, per) if len(times) else []:
        sa, sb, value = span(ra), span(rb), ra[group]
        side = "greater" if value in greater else "than" if value in than else None
        if side is None or never(sa, sb):
            continue
        ratios[side].append(ratio_span(sb, sa))
        runs[side].append((ra["run_id"], rb["run_id"]))
        low, high = ratios[side][-1]
        shown = fmt(low) if low == high else f"[{fmt(low)}, {fmt(high)}]"
        parts.append(f"[{name}] {fmt_span(sb)} / {fmt_span(sa)} = {shown}")
    if not (ratios["greater"] and ratios["than"]):
        return Result(INCONCLUSIVE, f"decided cells: {len(ratios['greater'])} with {group} in {greater}, "
                                    f"{len(ratios['than'])} with {group} in {than}")
    (g_low, g_high), (t_low, t_high) = (_mean_span(ratios[k]) for k in ("greater", "than"))
    ok = True if g_low > t_high else False if g_high <= t_low else None
    test = _group_ratio_test(data.seed_times(metric, target, higher, x), runs["greater"], runs["than"])

    def shown(low: float, high: float) -> str:
        return fmt(low) if low == high else f"in [{fmt(low)}, {fmt(high)}] (censored times)"

    measured = (f"mean T(b)/T(a) {shown(g_low, g_high)} at {group} in {greater} ({len(ratios['greater'])} cells) vs "
                f"{shown(t_low, t_high)} at {group} in {than} ({len(ratios['than'])} cells){open_text(test)}: "
                + "; ".join(parts))
    return judged([test], [margin_below(t_high, g_low) if ok else margin_below(t_low, g_high)], measured)


def _mean_span(spans: list[tuple[float, float]]) -> tuple[float, float]:
    """The mean of values known as intervals (low, high): the interval of the mean."""
    return tuple(float(np.mean(v)) for v in zip(*spans))


def _group_ratio_test(per_seed: pd.DataFrame, greater: list[tuple[str, str]], than: list[tuple[str, str]]) -> Test:
    """The Test of mean T(b)/T(a) over the (run a, run b) pairs `greater` above that over `than`, on each seed's
    own times (summaries.seed_times, paired by seed): the per-seed effect is log10 of the ratio of the two means,
    an interval where a time is censored (inference.effect_test: the t-test, else the sign test)."""
    spans = {(r, s): (lo, hi) for r, s, lo, hi in per_seed[["run_id", "seed", "t_lower", "t_target"]].itertuples(
        index=False)}
    seeds = sorted({s for _, s in spans})
    low, high = [], []
    for s in seeds:
        if not all((r, s) in spans for pair in greater + than for r in pair):
            continue  # a seed some run lacks
        (g_low, g_high), (t_low, t_high) = (_mean_span([ratio_span(spans[rb, s], spans[ra, s]) for ra, rb in pairs])
                                            for pairs in (greater, than))
        with np.errstate(divide="ignore", invalid="ignore"):
            low.append(np.log10(g_low) - np.log10(t_high))
            high.append(np.log10(g_high) - np.log10(t_low))
    return effect_test(low, high)


def rate_within(data: ClaimData, *, select: Selector, rate: str, target: str, rel_tol: Tolerance, x: str = "round") -> Result:
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
                       engine: Annotated[str, OneOf(tuple(KEYING))] | None = None, sds: float = 3.0,
                       rounds: str = "round", clients: str = "clients", full_rounds: str = "full_rounds") -> Result:
    """Random full participation (FedPAGE's communication): after round 0 (always full), each round
    is full with probability p, so the expected clients per round is pN + (1-p)S. The settings are
    named by the claim: N = `population` (all clients), S = `sampled` (clients of a partial round),
    p = `probability` ("auto" means S/N); the counters `rounds`, `clients` (cumulative) and
    `full_rounds` are metrics of the run. Pooled over the distinct coin draws of one (N, S), the number
    of full rounds must lie within `sds` binomial standard deviations of its expectation; the measured
    clients per round is reported beside pN + (1-p)S and 2S. Runs of one seed whose settings differ only
    in those that key none of the `engine`'s streams (fedrepro.numerics.KEYING: finite_sum's step sizes) flip the
    same coins and count once; without `engine`, each (run, seed) is a draw of its own. Runs that should
    share their coins but counted different full rounds make the check INCONCLUSIVE. Margin: in binomial
    standard deviations, sds - |full - expected| / sd."""
    holds, parts, margins = [], [], []
    table = rows_matching(data.table, select) if len(data.table) else data.table
    last = table.sort_values(rounds).groupby(["run_id", "seed"]).tail(1)
    settings = [c for c in data.labels if c in last.columns and (c == "method" or c not in LABEL_COLUMNS)]
    ignored = [] if engine is None else [c for c in settings if not KEYING[engine].keys(c)]
    coins = ["run_id", "seed"] if engine is None else [c for c in settings if c not in ignored] + ["seed"]
    run_seeds = last.groupby([population, sampled]).size()
    counts = last.groupby(coins, dropna=False)[full_rounds].nunique(dropna=False)
    if (counts > 1).any():
        return Result(INCONCLUSIVE, f"{int((counts > 1).sum())} coin draw(s) counted different full rounds in "
                                    f"runs that differ only in {list(ignored)}",
                      f"the engine's streams do not key the coins as assumed (fedrepro.numerics.KEYING[{engine!r}])")
    draws = last.drop_duplicates(coins)
    for (n, s), runs in draws.groupby([population, sampled]):
        p = runs[probability].map(lambda v: s / n if v == "auto" else float(v)).to_numpy()
        trials = (runs[rounds] - 1).to_numpy()  # rounds 1..R-1 decide by the coin
        full = (runs[full_rounds] - 1).to_numpy()
        expected, sd = float(np.sum(trials * p)), float(np.sqrt(np.sum(trials * p * (1 - p))))
        ok = abs(full.sum() - expected) <= sds * sd + 1
        holds.append(bool(ok))
        margins.append(sds - abs(full.sum() - expected) / sd if sd > 0 else math.nan)
        per_round = float(((runs[clients] - n) / trials).mean())
        parts.append(f"[N={n}, S={s}] clients/round {per_round:.3g} (pN+(1-p)S = {float(np.mean(p * n + (1 - p) * s)):.3g}, "
                     f"2S = {2 * s}); full rounds after r=0: {int(full.sum())} in {int(trials.sum())} (expected {expected:.1f} +- {sd:.1f}; "
                     f"{len(runs)} distinct draws of {run_seeds[(n, s)]} run-seeds)")
    measured = "; ".join(parts) if parts else "no runs"
    return judged(holds, margins, measured)


def falls(data: ClaimData, *, select: Selector, metric: str, x: str = "round", window: Fraction = 0.1,
          require: Require = "all", fraction: Fraction | None = None) -> Result:
    """Every selected run converges in the weak sense of TDCD claim C5: all its values finite and its final
    value below its first. A run with a diverged seed does not (certain); any other is a Test of its seeds, each
    seed's effect log10(first / final), final the geometric mean over the last `window` of x (inference.effect_test:
    the t-test). Shown: the seed medians. Margin: decades, log10(first / final) of the deciding run's medians."""
    medians = data.medians(metric, x, window)
    runs = rows_matching(medians, select) if len(medians) else medians
    per_seed = data.seed_summaries(metric, x, window) if len(runs) else None
    holds, parts, margins = [], [], []
    for _, run in runs.iterrows():
        first, final = float(run["g0"]), float(run["final"])
        seeds = per_seed[per_seed["run_id"] == run["run_id"]]
        finite = run["diverged_seeds"] == 0 and np.isfinite(final)
        outcome = effect_test([margin_below(f, g) for f, g in zip(seeds["final"], seeds["g0"])]) if finite else False
        holds.append(outcome)
        margins.append(margin_below(final, first) if np.isfinite(final) else -math.inf)
        parts.append(f"[{run['panel']}, {run['curve']}] {fmt(first)} -> {fmt(final)}" + open_text(outcome))
    shown = [shown_outcome(h) for h in holds]
    failing = [p for p, ok in zip(parts, shown) if not ok]
    measured = (f"{tally(holds, 'runs')}" + (": not " + "; ".join(failing) if failing else "")
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
