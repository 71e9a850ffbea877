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

from fedrepro.claims.summaries import auc_fin_per_seed, monte_carlo_summaries
from fedrepro.results.monte_carlo import curves_of

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
Result = tuple[str, str, str]


def _select(frame: pd.DataFrame, selector: dict[str, Any]) -> pd.DataFrame:
    """Rows matching every key of the selector; a list value matches any of its items."""
    mask = np.ones(len(frame), dtype=bool)
    for key, value in selector.items():
        if key not in frame:
            return frame.iloc[0:0]
        mask &= (frame[key].isin(value) if isinstance(value, list) else frame[key] == value).to_numpy()
    return frame[mask]


def _cells(curves: pd.DataFrame, per: list[str], named: bool = False):
    """(name, rows) per value of the `per` keys; `named` writes settings as key = value (not figure, panel)."""
    keys = [k for k in per if k in curves]
    if not keys:
        yield "all", curves
        return
    for values, cell in curves.groupby(keys, sort=False):
        values = values if isinstance(values, tuple) else (values,)
        yield ", ".join(f"{v}" if not named or k in ("figure", "panel") else f"{k} = {v}"
                        for k, v in zip(keys, values)), cell


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


# --- Curves compared on means over seeds (FedCluster spec §4): AUC and FIN of a per-round metric ---


def _gain(auc_a, auc_b, higher: bool, relative: bool = True):
    """How much better A is than B: G = (AUC_B - AUC_A) / |AUC_B| for a loss (spec §4), the sign
    flipped for an accuracy; the plain difference when not relative. A finite A against a diverged B
    (AUC at its worst, infinite) has G = 1, the limit."""
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = np.subtract(auc_a, auc_b) if higher else np.subtract(auc_b, auc_a)
        if not relative:
            return diff
        return np.where(np.isinf(auc_b) & np.isfinite(auc_a), 1.0, diff / np.abs(auc_b))


def _pm(values) -> str:
    """mean ± sd (over seeds)."""
    values = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):  # a diverged seed: inf, and an undefined spread
        spread = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    return f"{_fmt(float(np.mean(values)))} ± {_fmt(spread)}"


def _seed_pairs(table: pd.DataFrame, a: dict, b: dict, per: list[str], metric: str, higher: bool):
    """(name, cell name, per-seed summaries of A, of B, seeds aligned) for every cell holding one run of
    B, once per run of A there: "FedCluster with M = 5, 10 and 20 each beat FedAvg" is one selector."""
    frame = auc_fin_per_seed(table, metric, higher) if len(table) else pd.DataFrame()
    for cell_name, cell in _cells(frame, per, named=True) if len(frame) else []:
        runs_a, sb = _select(cell, a), _select(cell, b)
        if sb["run_id"].nunique() != 1:
            continue
        sb = sb.set_index("seed").sort_index()
        several = runs_a["run_id"].nunique() > 1
        for _, sa in runs_a.groupby("run_id", sort=False):
            sa = sa.set_index("seed").sort_index()
            common = sa.index.intersection(sb.index)
            name = f"{cell_name}, {sa['curve'].iloc[0]}" if several else cell_name
            yield name, cell_name, sa.loc[common], sb.loc[common]


def faster(curves: pd.DataFrame, table: pd.DataFrame, *, a: dict, b: dict, per: list[str], metric: str = "train_loss",
           higher: bool = False, min_gain: float = 0.0, fin_rel_tol: float | None = None,
           fin_abs_tol: float | None = None, seed_share: float = 2 / 3, require: str = "all",
           fraction: float | None = None, **_: Any) -> Result:
    """A converges faster than B in a cell (spec §4 pass rule) when, on means over the paired seeds,
    G(A over B) > 0 and >= min_gain ("significantly": 0.05), FIN(A) is no worse than FIN(B) within
    fin_rel_tol (relative) or fin_abs_tol (absolute), and, with 3 or more seeds, G > 0 in at least
    `seed_share` of them."""
    holds, parts = [], []
    for name, _, sa, sb in _seed_pairs(table, a, b, per, metric, higher):
        g_seeds = _gain(sa["auc"].to_numpy(), sb["auc"].to_numpy(), higher)
        g = float(_gain(sa["auc"].mean(), sb["auc"].mean(), higher))
        fa, fb = sa["fin"].mean(), sb["fin"].mean()
        ok = g > 0 and g >= min_gain
        if fin_rel_tol is not None:
            ok &= fa >= fb * (1 - fin_rel_tol) if higher else fa <= fb * (1 + fin_rel_tol)
        if fin_abs_tol is not None:
            ok &= fa >= fb - fin_abs_tol if higher else fa <= fb + fin_abs_tol
        wins = int(np.sum(g_seeds > 0))
        if len(g_seeds) >= 3:
            ok &= wins >= seed_share * len(g_seeds)
        holds.append(bool(ok))
        parts.append(f"[{name}] G {g:+.3f} (seeds {_pm(g_seeds)}, > 0 in {wins}/{len(g_seeds)}); "
                     f"AUC {_pm(sa['auc'])} vs {_pm(sb['auc'])}; FIN {_pm(sa['fin'])} vs {_pm(sb['fin'])}")
    measured = f"{sum(holds)}/{len(holds)} cells hold: " + "; ".join(parts) if parts else "no cell has both curves"
    return _verdict(holds, require, fraction), measured, ""


def comparable(curves: pd.DataFrame, table: pd.DataFrame, *, a: dict, b: dict, per: list[str],
               metric: str = "train_loss", higher: bool = False, tol: float = 0.05, reference: dict | None = None,
               **_: Any) -> Result:
    """|G(A over B)| <= tol in each cell (spec §4 "comparable"); with a `reference` selector also
    |G(A over B)| < G(reference over B), i.e. clearly smaller than the gain of a curve that wins."""
    ref = {cell: float(_gain(sr["auc"].mean(), sb["auc"].mean(), higher))
           for _, cell, sr, sb in (_seed_pairs(table, reference, b, per, metric, higher) if reference else [])}
    holds, parts = [], []
    for name, cell, sa, sb in _seed_pairs(table, a, b, per, metric, higher):
        g_seeds = _gain(sa["auc"].to_numpy(), sb["auc"].to_numpy(), higher)
        g = float(_gain(sa["auc"].mean(), sb["auc"].mean(), higher))
        ok = abs(g) <= tol and (reference is None or abs(g) < ref.get(cell, -np.inf))
        holds.append(bool(ok))
        parts.append(f"[{name}] G {g:+.3f} (seeds {_pm(g_seeds)})"
                     + (f", reference G {ref[cell]:+.3f}" if cell in ref else ""))
    measured = f"{sum(holds)}/{len(holds)} cells hold: " + "; ".join(parts) if parts else "no cell has both curves"
    return _verdict(holds, "all", None), measured, ""


def _series(cell: pd.DataFrame, along: str, order: list) -> list[float]:
    """Mean AUC over seeds of the run at each value of `along`, in `order` (nan where absent)."""
    return [float(cell[cell[along] == v]["auc"].mean()) if (cell[along] == v).any() else np.nan for v in order]


def ordered(curves: pd.DataFrame, table: pd.DataFrame, *, select: dict, per: list[str], along: str, order: list,
            metric: str = "train_loss", higher: bool = False, strict: bool = True, **_: Any) -> Result:
    """The mean AUC of the selected curves gets better at every step along `order` of the values of
    `along` (strictly, or not worse): e.g. along M, order [5, 10, 20], a loss falls 5 -> 10 -> 20."""
    frame = auc_fin_per_seed(table, metric, higher) if len(table) else pd.DataFrame()
    holds, parts = [], []
    for name, cell in _cells(_select(frame, select), per, named=True) if len(frame) else []:
        auc = np.array(_series(cell, along, order))
        if np.isnan(auc).any():
            continue
        steps = np.diff(auc) if higher else -np.diff(auc)  # > 0: better
        holds.append(bool(np.all(steps > 0) if strict else np.all(steps >= 0)))
        parts.append(f"[{name}] " + ", ".join(f"{along}={v}: {_fmt(x)}" for v, x in zip(order, auc)))
    measured = f"{sum(holds)}/{len(holds)} cells hold: " + "; ".join(parts) if parts else "no cell has every value"
    return _verdict(holds, "all", None), measured, ""


def slight(curves: pd.DataFrame, table: pd.DataFrame, *, select: dict, b: dict, per: list[str], along: str,
           order: list, metric: str = "train_loss", higher: bool = False, **_: Any) -> Result:
    """"Slightly" (spec §4, C14): the spread of the selected curves' mean AUC over `order` is smaller
    than the gap from B (e.g. FedAvg) to the worst of them."""
    frame = auc_fin_per_seed(table, metric, higher) if len(table) else pd.DataFrame()
    holds, parts = [], []
    for name, cell in _cells(frame, per, named=True) if len(frame) else []:
        auc, ref = np.array(_series(_select(cell, select), along, order)), _select(cell, b)["auc"]
        if np.isnan(auc).any() or not len(ref):
            continue
        worst = auc.min() if higher else auc.max()
        spread, gap = float(auc.max() - auc.min()), float(_gain(worst, ref.mean(), higher, relative=False))
        holds.append(spread < gap)
        parts.append(f"[{name}] spread over {along} {_fmt(spread)} vs gap to {'/'.join(map(str, b.values()))} "
                     f"{_fmt(gap)}")
    measured = f"{sum(holds)}/{len(holds)} cells hold: " + "; ".join(parts) if parts else "no cell has every curve"
    return _verdict(holds, "all", None), measured, ""


def gain_by_group(curves: pd.DataFrame, table: pd.DataFrame, *, a: dict, b: dict, per: list[str], group: str,
                  greater: Any, than: Any, metric: str = "train_loss", higher: bool = False, relative: bool = True,
                  **_: Any) -> Result:
    """The mean over cells of G(A over B) is larger where `group` is `greater` than where it is `than`
    (e.g. dataset: FedCluster's edge larger on CIFAR-10 than on MNIST, spec C5, C8)."""
    gains: dict[Any, list[float]] = {greater: [], than: []}
    for _, _, sa, sb in _seed_pairs(table, a, b, per, metric, higher):
        key = sa[group].iloc[0]
        if key in gains:
            gains[key].append(float(_gain(sa["auc"].mean(), sb["auc"].mean(), higher, relative)))
    if not (gains[greater] and gains[than]):
        return INCONCLUSIVE, f"cells per {group}: " + ", ".join(f"{k}: {len(v)}" for k, v in gains.items()), ""
    mg, mt = float(np.mean(gains[greater])), float(np.mean(gains[than]))
    kind = "G" if relative else "AUC difference"
    measured = (f"mean {kind} {greater}: {mg:+.4f} over {len(gains[greater])} cells; {than}: {mt:+.4f} over "
                f"{len(gains[than])} cells")
    return (PASS if mg > mt else FAIL), measured, ""


def less_sensitive(curves: pd.DataFrame, table: pd.DataFrame, *, a: dict, b: dict, per: list[str], along: str,
                   low: Any, high: Any, metric: str = "train_loss", higher: bool = False, **_: Any) -> Result:
    """A suffers less than B from `along` going low -> high (spec C16): the mean AUC of A worsens by
    less than B's, in each cell."""
    frame = auc_fin_per_seed(table, metric, higher) if len(table) else pd.DataFrame()
    holds, parts = [], []
    for name, cell in _cells(frame, per, named=True) if len(frame) else []:
        (a_lo, a_hi), (b_lo, b_hi) = (_series(_select(cell, s), along, [low, high]) for s in (a, b))
        if np.isnan([a_lo, a_hi, b_lo, b_hi]).any():
            continue
        da, db = (float(_gain(lo, hi, higher, relative=False)) for lo, hi in ((a_lo, a_hi), (b_lo, b_hi)))
        holds.append(da < db)
        parts.append(f"[{name}] AUC worsens by {_fmt(da)} ({_fmt(a_lo)} -> {_fmt(a_hi)}) vs {_fmt(db)} "
                     f"({_fmt(b_lo)} -> {_fmt(b_hi)})")
    measured = f"{sum(holds)}/{len(holds)} cells hold: " + "; ".join(parts) if parts else "no cell has both ends"
    return _verdict(holds, "all", None), measured, ""


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
    "faster": faster,
    "comparable": comparable,
    "ordered": ordered,
    "slight": slight,
    "gain_by_group": gain_by_group,
    "less_sensitive": less_sensitive,
}
# checks that need the raw table (counters, Monte Carlo runs) besides the per-run medians
NEEDS_TABLE = {"rate_within", "participation_rate", "compare_mc", "compare_with_paper", "series_ratio", "series_trend",
               "mc_stat_within", "faster", "comparable", "ordered", "slight", "gain_by_group", "less_sensitive"}
