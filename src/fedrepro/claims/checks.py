"""Claim checks on figure tables. Each returns (status, measured, note).

The configuration (config/claims/<paper>.yaml) names the check and its parameters; the
checks know nothing about any particular paper. Comparisons use seed-medians of the per-run
summaries in `summaries.py`. A check without data for any cell is INCONCLUSIVE, never PASS.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pandas as pd

from fedrepro.claims.summaries import monte_carlo_summaries
from fedrepro.results.monte_carlo import curves_of

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
Result = tuple[str, str, str]


def _select(frame: pd.DataFrame, selector: dict[str, Any]) -> pd.DataFrame:
    mask = np.ones(len(frame), dtype=bool)
    for key, value in selector.items():
        if key not in frame:
            return frame.iloc[0:0]
        mask &= (frame[key] == value).to_numpy()
    return frame[mask]


def _cells(curves: pd.DataFrame, per: list[str]):
    keys = [k for k in per if k in curves]
    if not keys:
        yield "all", curves
        return
    for values, cell in curves.groupby(keys, sort=False):
        values = values if isinstance(values, tuple) else (values,)
        yield ", ".join(f"{v}" for v in values), cell


def _pair_rows(curves: pd.DataFrame, a: dict, b: dict, per: list[str]):
    """(cell name, row of a, row of b) for every cell holding exactly one curve of each."""
    for name, cell in _cells(curves, per):
        sa, sb = _select(cell, a), _select(cell, b)
        if len(sa) == 1 and len(sb) == 1:
            yield name, sa.iloc[0], sb.iloc[0]


def _pairs(curves: pd.DataFrame, a: dict, b: dict, per: list[str], stat: str):
    """(cell name, stat of a, stat of b) for every cell holding exactly one curve of each."""
    for name, ra, rb in _pair_rows(curves, a, b, per):
        yield name, float(ra[stat]), float(rb[stat])


def _verdict(holds: list[bool], require: str, fraction: float | None) -> str:
    if not holds:
        return INCONCLUSIVE
    share = sum(holds) / len(holds)
    needed = {"all": 1.0, "most": 0.5 + 1e-9}.get(require, fraction if fraction is not None else 1.0)
    return PASS if share >= needed else FAIL


def _name(selector: dict) -> str:
    return "/".join(str(v) for v in selector.values())


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.3g}"


def compare_final(curves: pd.DataFrame, *, a: dict, b: dict, per: list[str], factor: float = 1.0,
                  require: str = "all", fraction: float | None = None, stat: str = "final", **_: Any) -> Result:
    """Holds in a cell when stat(a) < stat(b) * factor (factor < 1: a wins by a margin; > 1: a tolerance)."""
    pairs = list(_pairs(curves, a, b, per, stat))
    holds = [va < vb * factor for _, va, vb in pairs]
    name_a, name_b = _name(a), _name(b)
    detail = "; ".join(f"[{n}] {name_a} {_fmt(va)} vs {name_b} {_fmt(vb)}" for n, va, vb in pairs)
    measured = f"{sum(holds)}/{len(holds)} cells hold: {detail}" if pairs else "no cell has both curves"
    return _verdict(holds, require, fraction), measured, ""


def log_ratio_within(curves: pd.DataFrame, *, a: dict, b: dict, per: list[str], max_abs_log10: float = 0.5,
                     or_both_below: float | None = None, require: str = "all", fraction: float | None = None,
                     **_: Any) -> Result:
    """|log10 final(a)/final(b)| <= bound, or both finals below `or_both_below` x ||grad f(x0)||."""
    holds, parts = [], []
    for name, cell in _cells(curves, per):
        sa, sb = _select(cell, a), _select(cell, b)
        if len(sa) != 1 or len(sb) != 1:
            continue
        fa, fb, g0 = float(sa["final"].iloc[0]), float(sb["final"].iloc[0]), float(sa["g0"].iloc[0])
        ratio = abs(math.log10(fa / fb)) if np.isfinite([fa, fb]).all() and fa > 0 and fb > 0 else math.inf
        small = or_both_below is not None and max(fa, fb) <= or_both_below * g0
        holds.append(ratio <= max_abs_log10 or small)
        parts.append(f"[{name}] {_fmt(fa)} vs {_fmt(fb)} (|log10 ratio| {_fmt(ratio)})")
    measured = f"{sum(holds)}/{len(holds)} cells hold: " + "; ".join(parts) if parts else "no cell has both curves"
    return _verdict(holds, require, fraction), measured, ""


def monotone_time_to_target(curves: pd.DataFrame, *, per: list[str], along: str, eps: list[float],
                            decreasing: bool = True, **_: Any) -> Result:
    """T_eps never improves when `along` shrinks (larger step converges faster), among runs
    that did not diverge; an eps that no run of the cell reaches is skipped."""
    holds, parts = [], []
    for name, cell in _cells(curves, per):
        cell = cell[cell["diverged_seeds"] == 0].sort_values(along, ascending=not decreasing)
        if len(cell) < 2:
            continue
        for e in eps:
            times = cell[f"T_{e:g}"].to_numpy()
            if np.isinf(times).all():
                continue
            ok = bool(np.all(np.diff(times) >= 0))
            holds.append(ok)
            steps = ", ".join(f"{s:g}: {_fmt(t)}" for s, t in zip(cell[along], times))
            parts.append(f"[{name}, eps={e:g}] {'ok' if ok else 'not monotone'} ({steps})")
    measured = f"{sum(holds)}/{len(holds)} hold: " + "; ".join(parts) if parts else "no comparable cells"
    return _verdict(holds, "all", None), measured, ""


def rate_within(curves: pd.DataFrame, table: pd.DataFrame, *, select: dict, rate: str, target: str,
                rel_tol: float, **_: Any) -> Result:
    """A per-round counter (e.g. clients per round) within rel_tol of an expression of the
    run's settings; `rate` and `target` are evaluated on each run's last logged row."""
    holds, parts = [], []
    rows = _select(table, select)
    for run_id, run in rows.groupby("run_id", sort=False):
        last = run[run["round"] == run["round"].max()]
        env = {c: last[c].to_numpy(dtype=float) for c in last.columns if pd.api.types.is_numeric_dtype(last[c])}
        measured_value = float(np.mean(eval(rate, {"__builtins__": {}}, env)))  # noqa: S307 (config expression)
        target_value = float(np.mean(eval(target, {"__builtins__": {}}, env)))  # noqa: S307
        ok = abs(measured_value - target_value) <= rel_tol * target_value
        holds.append(ok)
        parts.append(f"[{run['panel'].iloc[0]}, {run['curve'].iloc[0]}] {measured_value:.4g} vs {target_value:.4g}")
    measured = f"{sum(holds)}/{len(holds)} runs within {rel_tol:.0%}: " + "; ".join(parts) if parts else "no runs"
    return _verdict(holds, "all", None), measured, ""


def participation_rate(curves: pd.DataFrame, table: pd.DataFrame, *, select: dict, sds: float = 3.0,
                       **_: Any) -> Result:
    """FedPAGE's communication: after round 0 (always full), each round is full with probability
    p, so the expected clients per round is pN + (1-p)S. Pooled over the runs and seeds of one
    (N, S), the number of full rounds must lie within `sds` binomial standard deviations of its
    expectation; the measured clients per round is reported beside pN + (1-p)S and 2S."""
    holds, parts = [], []
    last = _select(table, select).sort_values("round").groupby(["run_id", "seed"]).tail(1)
    for (n, s), runs in last.groupby(["n_clients", "S"]):
        p = runs["p"].map(lambda v: s / n if v == "auto" else float(v)).to_numpy()
        trials = (runs["round"] - 1).to_numpy()  # rounds 1..R-1 decide by the coin
        full = (runs["full_rounds"] - 1).to_numpy()
        expected, sd = float(np.sum(trials * p)), float(np.sqrt(np.sum(trials * p * (1 - p))))
        ok = abs(full.sum() - expected) <= sds * sd + 1
        holds.append(bool(ok))
        per_round = float(((runs["clients"] - n) / trials).mean())
        parts.append(f"[N={n}, S={s}] clients/round {per_round:.3g} (pN+(1-p)S = {float(np.mean(p * n + (1 - p) * s)):.3g}, "
                     f"2S = {2 * s}); full rounds after r=0: {int(full.sum())} in {int(trials.sum())} (expected {expected:.1f} +- {sd:.1f})")
    measured = "; ".join(parts) if parts else "no runs"
    return _verdict(holds, "all", None), measured, ""


def diverged_runs(curves: pd.DataFrame, **_: Any) -> Result:
    """Informational: which curves diverged (NaN/inf or above the divergence threshold)."""
    bad = curves[curves["diverged_seeds"] > 0]
    listing = "; ".join(f"[{r.panel}] {r.curve} eta={getattr(r, 'eta_tilde', '?')}: {int(r.diverged_seeds)}/{int(r.seeds)} seeds"
                        for r in bad.itertuples())
    return INCONCLUSIVE, listing or "no run diverged", "informational; the paper says only that larger steps *may* diverge"


def not_tested(curves: pd.DataFrame, *, reason: str, **_: Any) -> Result:
    return INCONCLUSIVE, "", reason


# --- Monte Carlo tables (engine `monte_carlo`): statistics across runs of one configuration ---


def _combine(statuses: list[str]) -> str:
    if FAIL in statuses:
        return FAIL
    return PASS if statuses and all(s == PASS for s in statuses) else INCONCLUSIVE


def _mc_frame(table: pd.DataFrame, coords: list[int], target: float) -> pd.DataFrame:
    return monte_carlo_summaries(table, tuple(coords), target) if len(table) else pd.DataFrame()


def compare_mc(curves: pd.DataFrame, table: pd.DataFrame, *, stats: list[str], coords: list[int] = (0, 1),
               target: float = 1e-4, **params: Any) -> Result:
    """compare_final on across-run statistics (summaries.monte_carlo_summaries); every stat must hold."""
    frame = _mc_frame(table, coords, target)
    results = [compare_final(frame, stat=s, **params) for s in stats]
    return _combine([r[0] for r in results]), "; ".join(f"{s}: {r[1]}" for s, r in zip(stats, results)), ""


def compare_with_paper(curves: pd.DataFrame, table: pd.DataFrame, *, a: dict, b: dict, per: list[str], stat: str,
                       paper: dict[str, float], within: float | None = None, min_ratio: float | None = None,
                       coords: list[int] = (0, 1), **_: Any) -> Result:
    """Our stat(a) and stat(b) beside the paper's values and ratios. Holds when stat(a) < stat(b) and,
    where given, each value lies within a factor `within` of the paper's and stat(b)/stat(a) >= min_ratio."""
    frame = _mc_frame(table, coords, 1e-4)
    holds, parts = [], []
    for name, ra, rb in _pair_rows(frame, a, b, per):
        (va, la), (vb, lb) = (float(ra[stat]), ra["curve"]), (float(rb[stat]), rb["curve"])
        pa, pb = float(paper["a"]), float(paper["b"])
        ok = va < vb
        if within is not None:
            ok &= all(max(v / p, p / v) <= within for v, p in ((va, pa), (vb, pb)))
        if min_ratio is not None:
            ok &= vb / va >= min_ratio
        holds.append(bool(ok))
        parts.append(f"[{name}] {la} {_fmt(va)} (paper {pa:g}, x{_fmt(va / pa)}); {lb} {_fmt(vb)} (paper {pb:g}, "
                     f"x{_fmt(vb / pb)}); ratio {_fmt(vb / va)} (paper {_fmt(pb / pa)})")
    measured = f"{stat}: " + "; ".join(parts) if parts else "no cell has both curves"
    return _verdict(holds, "all", None), measured, ""


def _mc_series(table: pd.DataFrame) -> tuple[pd.DataFrame, list[dict[str, np.ndarray]]]:
    """Curve labels (column `i` indexes the list) and each curve's rounds + cost_curves series."""
    labels, series = [], []
    for i, (label, mc) in enumerate(curves_of(table) if len(table) else []):
        labels.append({**label, "i": i})
        series.append({"round": mc.rounds, **mc.curves()})
    return pd.DataFrame(labels), series


def _window(s: dict[str, np.ndarray], name: str, window: list[int]) -> np.ndarray:
    return s[name][(s["round"] >= window[0]) & (s["round"] <= window[1])]


def series_ratio(curves: pd.DataFrame, table: pd.DataFrame, *, a: dict, b: dict, per: list[str], series: str = "var",
                 window: list[int] = (10, 100), agg: str = "gmean", max_ratio: float = 1.0, **_: Any) -> Result:
    """agg (gmean | median) over rounds in `window` of series_a[k] / series_b[k] <= max_ratio
    (series: var, mean_err of claims/cep.py cost_curves)."""
    if agg not in ("gmean", "median"):
        raise ValueError(f"series_ratio: agg {agg!r}; allowed: gmean, median")
    frame, data = _mc_series(table)
    holds, parts = [], []
    for name, ra, rb in _pair_rows(frame, a, b, per):
        ratio = _window(data[int(ra["i"])], series, window) / _window(data[int(rb["i"])], series, window)
        if not len(ratio):
            continue  # the run is shorter than the window (reduced scale)
        value = float(np.exp(np.mean(np.log(ratio)))) if agg == "gmean" else float(np.median(ratio))
        holds.append(value <= max_ratio)
        parts.append(f"[{name}] {agg} {series} ratio over k in [{window[0]}, {window[1]}]: {_fmt(value)}")
    return _verdict(holds, "all", None), "; ".join(parts) or "no cell has both curves over the window", ""


def series_trend(curves: pd.DataFrame, table: pd.DataFrame, *, select: dict, series: str = "var",
                 early: list[int] = (11, 30), late: list[int] = (81, 100), factor: float = 1.0,
                 expect: str = "below", **_: Any) -> Result:
    """Per selected curve: mean of the series over `late` rounds below (or, expect: above, at least)
    factor x its mean over `early` rounds; Spearman rho(k, series) over early..late reported."""
    from scipy.stats import spearmanr  # only this check needs scipy

    if expect not in ("below", "above"):
        raise ValueError(f"series_trend: expect {expect!r}; allowed: below, above")
    frame, data = _mc_series(table)
    holds, parts = [], []
    for row in _select(frame, select).itertuples():
        s = data[row.i]
        if not (len(_window(s, series, early)) and len(_window(s, series, late))):
            continue  # the run is shorter than the windows (reduced scale)
        m_early, m_late = float(np.mean(_window(s, series, early))), float(np.mean(_window(s, series, late)))
        holds.append(m_late < factor * m_early if expect == "below" else m_late >= factor * m_early)
        span = (s["round"] >= early[0]) & (s["round"] <= late[1])
        rho = spearmanr(s["round"][span], s[series][span]).statistic
        parts.append(f"[{row.panel}, {row.curve}] mean {series} k in [{early[0]}, {early[1]}]: {_fmt(m_early)}, "
                     f"k in [{late[0]}, {late[1]}]: {_fmt(m_late)} (late/early {_fmt(m_late / m_early)}, "
                     f"Spearman rho {rho:.2f})")
    return _verdict(holds, "all", None), "; ".join(parts) or "no selected curve covers both windows", ""


def mc_stat_within(curves: pd.DataFrame, table: pd.DataFrame, *, select: dict, stat: str, low: float | None = None,
                   high: float | None = None, min_rounds: int = 0, coords: list[int] = (0, 1), target: float = 1e-4,
                   **_: Any) -> Result:
    """An across-run statistic of every selected curve within [low, high] (either bound optional);
    INCONCLUSIVE when a curve has fewer than `min_rounds` rounds (a bound set for the paper's horizon)."""
    frame = _select(_mc_frame(table, coords, target), select)
    short = frame[frame["last_round"] < min_rounds] if len(frame) else frame
    if len(short):
        return INCONCLUSIVE, f"{stat} = " + ", ".join(_fmt(v) for v in short[stat]), (
            f"only {int(short['last_round'].min())} rounds at this scale; the bound is for >= {min_rounds}")
    holds, parts = [], []
    for row in frame.itertuples():
        value = float(getattr(row, stat))
        holds.append((low is None or value >= low) and (high is None or value <= high))
        parts.append(f"[{row.panel}, {row.curve}] {stat} = {_fmt(value)}")
    bounds = f"in [{'-inf' if low is None else f'{low:g}'}, {'inf' if high is None else f'{high:g}'}]"
    return _verdict(holds, "all", None), f"{sum(holds)}/{len(holds)} {bounds}: " + "; ".join(parts), ""


CHECKS: dict[str, Callable[..., Result]] = {
    "compare_final": compare_final,
    "log_ratio_within": log_ratio_within,
    "monotone_time_to_target": monotone_time_to_target,
    "rate_within": rate_within,
    "participation_rate": participation_rate,
    "diverged_runs": diverged_runs,
    "not_tested": not_tested,
    "compare_mc": compare_mc,
    "compare_with_paper": compare_with_paper,
    "series_ratio": series_ratio,
    "series_trend": series_trend,
    "mc_stat_within": mc_stat_within,
}
# checks that need the raw table (counters, Monte Carlo runs) besides the per-run medians
NEEDS_TABLE = {"rate_within", "participation_rate", "compare_mc", "compare_with_paper", "series_ratio", "series_trend",
               "mc_stat_within"}
