"""Checks on per-run seed medians of a final value or a time to target (FedPAGE-style figures),
and on per-round counters of the raw table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fedrepro.claims.checks.common import (
    INCONCLUSIVE,
    Result,
    cells_of,
    fmt,
    rows_matching,
    selector_name,
    stat_pairs,
    verdict,
)


def compare_final(curves: pd.DataFrame, *, a: dict, b: dict, per: list[str], factor: float = 1.0,
                  require: str = "all", fraction: float | None = None, stat: str = "final") -> Result:
    """Holds in a cell when stat(a) < stat(b) * factor (factor < 1: a wins by a margin; > 1: a tolerance)."""
    pairs = list(stat_pairs(curves, a, b, per, stat))
    holds = [va < vb * factor for _, va, vb in pairs]
    name_a, name_b = selector_name(a), selector_name(b)
    detail = "; ".join(f"[{n}] {name_a} {fmt(va)} vs {name_b} {fmt(vb)}" for n, va, vb in pairs)
    measured = f"{sum(holds)}/{len(holds)} cells hold: {detail}" if pairs else "no cell has both curves"
    return verdict(holds, require, fraction), measured, ""


def log_ratio_within(curves: pd.DataFrame, *, a: dict, b: dict, per: list[str], max_abs_log10: float = 0.5,
                     or_both_below: float | None = None, require: str = "all", fraction: float | None = None) -> Result:
    """|log10 final(a)/final(b)| <= bound, or both finals below `or_both_below` x ||grad f(x0)||."""
    holds, parts = [], []
    for name, cell in cells_of(curves, per):
        sa, sb = rows_matching(cell, a), rows_matching(cell, b)
        if len(sa) != 1 or len(sb) != 1:
            continue
        fa, fb, g0 = float(sa["final"].iloc[0]), float(sb["final"].iloc[0]), float(sa["g0"].iloc[0])
        ratio = abs(math.log10(fa / fb)) if np.isfinite([fa, fb]).all() and fa > 0 and fb > 0 else math.inf
        small = or_both_below is not None and max(fa, fb) <= or_both_below * g0
        holds.append(ratio <= max_abs_log10 or small)
        parts.append(f"[{name}] {fmt(fa)} vs {fmt(fb)} (|log10 ratio| {fmt(ratio)})")
    measured = f"{sum(holds)}/{len(holds)} cells hold: " + "; ".join(parts) if parts else "no cell has both curves"
    return verdict(holds, require, fraction), measured, ""


def monotone_time_to_target(curves: pd.DataFrame, *, per: list[str], along: str, eps: list[float],
                            decreasing: bool = True) -> Result:
    """T_eps never improves when `along` shrinks (larger step converges faster), among runs
    that did not diverge; an eps that no run of the cell reaches is skipped."""
    holds, parts = [], []
    for name, cell in cells_of(curves, per):
        cell = cell[cell["diverged_seeds"] == 0].sort_values(along, ascending=not decreasing)
        if len(cell) < 2:
            continue
        for e in eps:
            times = cell[f"T_{e:g}"].to_numpy()
            if np.isinf(times).all():
                continue
            ok = bool(np.all(np.diff(times) >= 0))
            holds.append(ok)
            steps = ", ".join(f"{s:g}: {fmt(t)}" for s, t in zip(cell[along], times))
            parts.append(f"[{name}, eps={e:g}] {'ok' if ok else 'not monotone'} ({steps})")
    measured = f"{sum(holds)}/{len(holds)} hold: " + "; ".join(parts) if parts else "no comparable cells"
    return verdict(holds, "all", None), measured, ""


def rate_within(curves: pd.DataFrame, table: pd.DataFrame, *, select: dict, rate: str, target: str,
                rel_tol: float) -> Result:
    """A per-round counter (e.g. clients per round) within rel_tol of an expression of the
    run's settings; `rate` and `target` are evaluated on each run's last logged row."""
    holds, parts = [], []
    rows = rows_matching(table, select)
    for run_id, run in rows.groupby("run_id", sort=False):
        last = run[run["round"] == run["round"].max()]
        env = {c: last[c].to_numpy(dtype=float) for c in last.columns if pd.api.types.is_numeric_dtype(last[c])}
        measured_value = float(np.mean(eval(rate, {"__builtins__": {}}, env)))  # noqa: S307 (config expression)
        target_value = float(np.mean(eval(target, {"__builtins__": {}}, env)))  # noqa: S307
        ok = abs(measured_value - target_value) <= rel_tol * target_value
        holds.append(ok)
        parts.append(f"[{run['panel'].iloc[0]}, {run['curve'].iloc[0]}] {measured_value:.4g} vs {target_value:.4g}")
    measured = f"{sum(holds)}/{len(holds)} runs within {rel_tol:.0%}: " + "; ".join(parts) if parts else "no runs"
    return verdict(holds, "all", None), measured, ""


def participation_rate(curves: pd.DataFrame, table: pd.DataFrame, *, select: dict, sds: float = 3.0) -> Result:
    """FedPAGE's communication: after round 0 (always full), each round is full with probability
    p, so the expected clients per round is pN + (1-p)S. Pooled over the runs and seeds of one
    (N, S), the number of full rounds must lie within `sds` binomial standard deviations of its
    expectation; the measured clients per round is reported beside pN + (1-p)S and 2S."""
    holds, parts = [], []
    last = rows_matching(table, select).sort_values("round").groupby(["run_id", "seed"]).tail(1)
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
    return verdict(holds, "all", None), measured, ""


def diverged_runs(curves: pd.DataFrame) -> Result:
    """Informational: which curves diverged (NaN/inf or above the divergence threshold)."""
    bad = curves[curves["diverged_seeds"] > 0]
    listing = "; ".join(f"[{r.panel}] {r.curve} eta={getattr(r, 'eta_tilde', '?')}: {int(r.diverged_seeds)}/{int(r.seeds)} seeds"
                        for r in bad.itertuples())
    return INCONCLUSIVE, listing or "no run diverged", "informational; the paper says only that larger steps *may* diverge"


def not_tested(curves: pd.DataFrame, *, reason: str) -> Result:
    return INCONCLUSIVE, "", reason
