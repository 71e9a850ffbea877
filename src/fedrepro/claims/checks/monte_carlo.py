"""Checks on Monte Carlo tables (engine `monte_carlo`): statistics across the runs of one configuration,
against the x column `x` (rounds by default; windows are in units of x).

The statistics in ON_RUNS are tested on the runs themselves, paired by run (the same Monte Carlo run draws the
same activations in every method: docs/papers/fedvr.md R9): a variance (`var_final`, the `var` series) by
inference.spread_below (Brown-Forsythe), a mean error over the runs (`mean_err_final`, `rel_err_final`) by the
t-test of the runs' own errors (inference.mean_below, effect_test). Their cells are Tests, and the ledger decides
them as a tested check (claims/support.py tests_runs). The other statistics (a CEP radius, a time to target) give
a cell's outcome by their values, which the ledger's bootstrap qualifies where its rate was measured
(support.MEASURED)."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Literal

import numpy as np
import pandas as pd

from fedrepro.claims.checks.common import (
    FAIL,
    INCONCLUSIVE,
    PASS,
    Columns,
    Fraction,
    OneOf,
    Positive,
    Require,
    Result,
    Selector,
    compare_stat,
    fmt,
    judged,
    margin_below,
    open_text,
    pair_rows,
    rows_matching,
    shown_outcome,
)
from fedrepro.claims.checks.inference import Test, certain, combine, decide, effect_test, mean_below, spread_below
from fedrepro.claims.data import ClaimData
from fedrepro.results.summaries import MC_COLUMNS

McStat = Annotated[str, OneOf(MC_COLUMNS)]  # a column of results.summaries.monte_carlo_statistics
Series = Literal["var", "mean_err"]  # an across-run series of results/cep.py cost_curves


def _combine(statuses: list[str]) -> str:
    if FAIL in statuses:
        return FAIL
    return PASS if statuses and all(s == PASS for s in statuses) else INCONCLUSIVE


ALL = (-np.inf, np.inf)


def _finals(sa: dict[str, np.ndarray], sb: dict[str, np.ndarray], name: str) -> tuple[np.ndarray, np.ndarray]:
    """Each run's `name` at the last x, of the runs both curves have, paired by run."""
    return _paired(sa, sb, name, ALL, column=-1)


def _auc_below(sa: dict[str, np.ndarray], sb: dict[str, np.ndarray], factor: float) -> Test:
    """The Test of auc(a) < factor x auc(b) (auc: the mean over x after the first of log10 of the mean error over
    the runs, results.summaries): Tukey's delete-one jackknife, paired by run, of factor x auc(b) - auc(a), whose
    pseudo-values the t-test of effect_test judges. auc is a smooth function of the runs' mean errors, for which
    the jackknife t-test is approximate; its rates are measured (docs/claims_reference.md, Calibration)."""
    ea, eb = _paired(sa, sb, "err", ALL)
    later = sa["x"] > sa["x"][0]
    n = len(ea)

    def auc(means: np.ndarray) -> np.ndarray:
        return np.mean(np.log10(np.maximum(means[..., later], 1e-300)), axis=-1)

    def leave_one_out(err: np.ndarray) -> np.ndarray:  # (runs, x): the mean error without each run
        return (err.sum(axis=0) - err) / max(n - 1, 1)

    whole = factor * auc(eb.mean(axis=0)) - auc(ea.mean(axis=0))
    pseudo = n * whole - (n - 1) * (factor * auc(leave_one_out(eb)) - auc(leave_one_out(ea)))
    test = effect_test(pseudo)
    return replace(test, how=f"jackknife {test.how}".strip())


# compare_mc's statistics tested on the runs: stat -> the Test of stat(a) < factor x stat(b) from the two curves
RUN_TESTS = {
    "var_final": lambda sa, sb, factor: spread_below(*_finals(sa, sb, "cost"), factor),  # the final costs' spread
    "mean_err_final": lambda sa, sb, factor: mean_below(*_finals(sa, sb, "err"), factor),  # the final errors' mean
    "auc": _auc_below,
}
# mc_stat_within's statistics tested on the runs: stat -> each run's reference of its final error (the bound is
# on mean_err(K) / mean of the references): 1 for mean_err_final, the run's error at the first x for rel_err_final
BOUND_REFERENCES = {
    "mean_err_final": lambda err: np.ones(len(err)),
    "rel_err_final": lambda err: err[:, 0],
}
# the statistics (and series) each check tests on the runs (claims/support.py tests_runs reads this, the only list)
ON_RUNS: dict[str, tuple[str, ...]] = {"compare_mc": tuple(RUN_TESTS), "mc_stat_within": tuple(BOUND_REFERENCES),
                                       "series_ratio": ("var",), "series_trend": ("var",)}


def _infinite(value_a: float, value_b: float, holds: bool | None) -> Test | None:
    """The certain Test of a cell where a statistic is infinite (a diverged run: results.summaries); None when
    both are finite. Both infinite: open."""
    if np.isfinite(value_a) and np.isfinite(value_b):
        return None
    return certain(None if np.isinf(value_a) and np.isinf(value_b) else holds)


def compare_mc(data: ClaimData, *, stats: list[McStat], a: Selector, b: Selector, per: Columns,
               factor: Positive = 1.0, require: Require = "all", fraction: Fraction | None = None,
               coords: list[int] = (0, 1), target: float = 1e-4, x: str = "round") -> Result:
    """compare_final on across-run statistics (results.summaries.monte_carlo_statistics); every stat must
    hold. A stat in ON_RUNS is a Test of the runs in each cell (RUN_TESTS); when every stat is, the claim's Test
    combines theirs (inference.combine: each must hold). Margin: decades, the smallest over the stats
    (common.compare_stat)."""
    frame = data.mc_summaries(coords, target, x)
    frame = frame.assign(i=np.arange(len(frame))) if len(frame) else frame  # its rows are data.mc_curves(x)'s
    _, curves = _mc_series(data, x)

    def on_runs(stat: str):
        def test(ra: pd.Series, rb: pd.Series) -> Test:
            va, vb = float(ra[stat]), float(rb[stat])
            return (_infinite(va, vb, va < vb * factor)
                    or RUN_TESTS[stat](curves[int(ra["i"])], curves[int(rb["i"])], factor))
        return test

    results = [compare_stat(frame, a, b, per, s, factor, require, fraction,
                            test=on_runs(s) if s in RUN_TESTS else None) for s in stats]
    measured = "; ".join(f"{s}: {r.measured}" for s, r in zip(stats, results))
    if len(results) == 1:  # one statistic: its Result, with the p-values of a tested one
        return results[0]._replace(measured=measured)
    margin = min((r.margin for r in results if not np.isnan(r.margin)), default=np.nan)
    if all(s in RUN_TESTS for s in stats):  # every stat tested: the claim's Test is theirs combined
        if any(r.test is None for r in results):
            return Result(INCONCLUSIVE, measured)
        test = combine([r.test for r in results])
        status = decide(test)
        return Result(status, measured, "", margin if status != INCONCLUSIVE else np.nan, test.p_holds,
                      test.p_against, tuple(r.test for r in results), test)
    return Result(_combine([r.status for r in results]), measured, "", margin)


@np.errstate(divide="ignore", invalid="ignore")  # a ratio to a spread of 0 is inf (or nan), not an error
def compare_with_paper(data: ClaimData, *, a: Selector, b: Selector, per: Columns, stat: McStat,
                       paper: dict[str, float], within: Positive | None = None, min_ratio: Positive | None = None,
                       coords: list[int] = (0, 1), x: str = "round") -> Result:
    """Our stat(a) and stat(b) beside the paper's values and ratios. Holds when stat(a) < stat(b) and,
    where given, each value lies within a factor `within` of the paper's and stat(b)/stat(a) >= min_ratio.
    Margin: decades, the smallest of log10 stat(b)/stat(a) and the room left by `within` and `min_ratio`."""
    frame = data.mc_summaries(coords, 1e-4, x)
    holds, parts, margins = [], [], []
    for name, ra, rb in pair_rows(frame, a, b, per) if len(frame) else []:
        # numpy floats: a resample of one run repeated has a spread of 0, so a ratio may be inf or nan
        (va, la), (vb, lb) = (np.float64(ra[stat]), ra["curve"]), (np.float64(rb[stat]), rb["curve"])
        pa, pb = float(paper["a"]), float(paper["b"])
        ok, margin = va < vb, margin_below(va, vb)
        if within is not None:
            ok &= all(max(v / p, p / v) <= within for v, p in ((va, pa), (vb, pb)))
            margin = min(margin, *(margin_below(max(v / p, p / v), within) for v, p in ((va, pa), (vb, pb))))
        if min_ratio is not None:
            ok &= vb / va >= min_ratio
            margin = min(margin, margin_below(min_ratio, vb / va))
        holds.append(bool(ok))
        margins.append(margin)
        parts.append(f"[{name}] {la} {fmt(va)} (paper {pa:g}, x{fmt(va / pa)}); {lb} {fmt(vb)} (paper {pb:g}, "
                     f"x{fmt(vb / pb)}); ratio {fmt(vb / va)} (paper {fmt(pb / pa)})")
    measured = f"{stat}: " + "; ".join(parts) if parts else "no cell has both curves"
    return judged(holds, margins, measured)


def _mc_series(data: ClaimData, x: str) -> tuple[pd.DataFrame, list[dict[str, np.ndarray]]]:
    """Curve labels (column `i` indexes the list) and each curve's x + cost_curves series."""
    labels, series = [], []
    for i, (label, mc) in enumerate(data.mc_curves(x)):
        labels.append({**label, "i": i})
        series.append({"x": mc.x, "cost": mc.cost, "seeds": mc.seeds, **mc.curves()})
    return pd.DataFrame(labels), series


def _window(s: dict[str, np.ndarray], name: str, window: list[float]) -> np.ndarray:
    return s[name][..., (s["x"] >= window[0]) & (s["x"] <= window[1])]


def _paired(sa: dict[str, np.ndarray], sb: dict[str, np.ndarray], name: str, window_a, window_b=None,
            column: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The per-run series `name` (runs, x) of curves sa over `window_a` and sb over `window_b` (default the same;
    `column`: only that column of each), on the runs both have, paired by run."""
    _, rows_a, rows_b = np.intersect1d(sa["seeds"], sb["seeds"], return_indices=True)
    va = _window(sa, name, window_a)[rows_a]
    vb = _window(sb, name, window_a if window_b is None else window_b)[rows_b]
    return (va, vb) if column is None else (va[:, [column]], vb[:, [column]])


def series_ratio(data: ClaimData, *, a: Selector, b: Selector, per: Columns, series: Series = "var",
                 window: list[float] = (10, 100), agg: Literal["gmean", "median"] = "gmean", max_ratio: Positive = 1.0,
                 x: str = "round") -> Result:
    """agg (gmean | median) over x in `window` of series_a[k] / series_b[k] <= max_ratio
    (series: var, mean_err of results/cep.py cost_curves); the var series is tested on the runs over the window,
    every x weighing alike (inference.spread_below), whichever `agg` is shown. Margin: decades, log10 max_ratio /
    value."""
    if agg not in ("gmean", "median"):
        raise ValueError(f"series_ratio: agg {agg!r}; allowed: gmean, median")
    frame, curves = _mc_series(data, x)
    holds, parts, margins = [], [], []
    for name, ra, rb in pair_rows(frame, a, b, per) if len(frame) else []:
        sa, sb = curves[int(ra["i"])], curves[int(rb["i"])]
        ratio = _window(sa, series, window) / _window(sb, series, window)
        if not len(ratio):
            continue  # the run is shorter than the window (reduced scale)
        value = float(np.exp(np.mean(np.log(ratio)))) if agg == "gmean" else float(np.median(ratio))
        holds.append(spread_below(*_paired(sa, sb, "cost", window), max_ratio) if series in ON_RUNS["series_ratio"]
                     else value <= max_ratio)
        margins.append(margin_below(value, max_ratio))
        parts.append(f"[{name}] {agg} {series} ratio over k in [{window[0]}, {window[1]}]: {fmt(value)}")
    return judged(holds, margins, "; ".join(parts) or "no cell has both curves over the window")


def series_trend(data: ClaimData, *, select: Selector, series: Series = "var",
                 early: list[float] = (11, 30), late: list[float] = (81, 100), factor: Positive = 1.0,
                 expect: Literal["below", "above"] = "below", x: str = "round") -> Result:
    """Per selected curve: mean of the series over x in `late` below (or, expect: above, at least)
    factor x its mean over x in `early`; Spearman rho(x, series) over early..late reported. The var series is
    tested on the runs: each run's mean deviation over `late` against its mean over `early` (inference.spread_below,
    the runs paired with themselves). Margin:
    decades, log10 of late / (factor x early), its sign flipped for `below`."""
    from scipy.stats import spearmanr  # only this check needs scipy

    if expect not in ("below", "above"):
        raise ValueError(f"series_trend: expect {expect!r}; allowed: below, above")
    frame, curves = _mc_series(data, x)
    holds, parts, margins = [], [], []
    for row in rows_matching(frame, select).itertuples() if len(frame) else []:
        s = curves[row.i]
        if not (len(_window(s, series, early)) and len(_window(s, series, late))):
            continue  # the run is shorter than the windows (reduced scale)
        m_early, m_late = float(np.mean(_window(s, series, early))), float(np.mean(_window(s, series, late)))
        if series in ON_RUNS["series_trend"]:  # each run's mean deviation over `late` against its mean over `early`
            late_, early_ = _paired(s, s, "cost", late, early)
            holds.append(spread_below(late_, early_, factor, same_columns=False) if expect == "below"
                         else spread_below(early_, late_, 1 / factor, same_columns=False))
        else:
            holds.append(m_late < factor * m_early if expect == "below" else m_late >= factor * m_early)
        below = margin_below(m_late, factor * m_early)
        margins.append(below if expect == "below" else -below)
        span = (s["x"] >= early[0]) & (s["x"] <= late[1])
        rho = spearmanr(s["x"][span], s[series][span]).statistic
        parts.append(f"[{row.panel}, {row.curve}] mean {series} k in [{early[0]}, {early[1]}]: {fmt(m_early)}, "
                     f"k in [{late[0]}, {late[1]}]: {fmt(m_late)} (late/early {fmt(m_late / m_early)}, "
                     f"Spearman rho {rho:.2f})")
    return judged(holds, margins, "; ".join(parts) or "no selected curve covers both windows")


def mc_stat_within(data: ClaimData, *, select: Selector, stat: McStat, low: float | None = None,
                   high: float | None = None, min_rounds: float = 0, coords: list[int] = (0, 1), target: float = 1e-4,
                   x: str = "round") -> Result:
    """An across-run statistic of every selected curve within [low, high] (either bound optional);
    INCONCLUSIVE when a curve ends before x = `min_rounds` (a bound set for the paper's horizon). A stat in
    ON_RUNS (a mean error) is tested on the runs: each bound the t-test of the runs' final errors against it times
    their reference (BOUND_REFERENCES: mean_err(K) <= high x mean_err(x0) is the mean of high x e_r(x0) - e_r(K)
    > 0), both bounds combined (each must hold). Margin: decades to the nearer bound (log10 value/low,
    log10 high/value)."""
    frame = data.mc_summaries(coords, target, x)
    frame = frame.assign(i=np.arange(len(frame))) if len(frame) else frame  # its rows are data.mc_curves(x)'s
    frame = rows_matching(frame, select) if len(frame) else frame
    short = frame[frame["last_x"] < min_rounds] if len(frame) else frame
    if len(short):
        return Result(INCONCLUSIVE, f"{stat} = " + ", ".join(fmt(v) for v in short[stat]),
                      f"only {short['last_x'].min():g} {x}s at this scale; the bound is for >= {min_rounds}")
    curves = _mc_series(data, x)[1] if stat in BOUND_REFERENCES else []
    holds, parts, margins = [], [], []
    for row in frame.itertuples():
        value = float(getattr(row, stat))
        ok = (low is None or value >= low) and (high is None or value <= high)
        if stat in BOUND_REFERENCES:
            ok = _infinite(value, 0.0, ok) or _within(curves[row.i]["err"], BOUND_REFERENCES[stat], low, high)
        holds.append(ok)
        margins.append(min(-margin_below(value, low) if low is not None else np.inf,
                           margin_below(value, high) if high is not None else np.inf))
        parts.append(f"[{row.panel}, {row.curve}] {stat} = {fmt(value)}" + open_text(ok))
    bounds = f"in [{'-inf' if low is None else f'{low:g}'}, {'inf' if high is None else f'{high:g}'}]"
    shown = sum(bool(shown_outcome(h)) for h in holds)
    return judged(holds, margins, f"{shown}/{len(holds)} {bounds}: " + "; ".join(parts))


def _within(err: np.ndarray, reference, low: float | None, high: float | None) -> Test:
    """The Test of low <= mean_r e_r(K) / mean_r ref_r <= high from each run's errors `err` (runs, x): the t-test
    (effect_test) of high x ref_r - e_r(K), and of e_r(K) - low x ref_r, paired within each run."""
    final, ref = err[:, -1], reference(err)
    return combine([effect_test(effect) for effect in (high * ref - final if high is not None else None,
                                                      final - low * ref if low is not None else None)
                    if effect is not None])
