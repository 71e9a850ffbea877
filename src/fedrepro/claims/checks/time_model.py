"""Checks of a simulated-time claim in its iteration form (TDCD claim C1', docs/papers/tdcd.md R21).

With one round of Q local iterations costing t_Q = 3 t_comm + Q t_comp (vertical_time.py), a run
with Q reaches a target sooner in time than one with Q = 1 exactly when n_Q / n_1, the ratio of the
iterations they need, is below Q (3 t_comm + t_comp) / (3 t_comm + Q t_comp). The check reads the
iteration curves and reports each ratio next to these thresholds; the speed-up in time at t_comm c is then
S_Q(c) = threshold(c) / (n_Q / n_1), which rises with c whenever both targets are reached (C2).
"""

from __future__ import annotations

import math

from fedrepro.claims.checks.common import (
    Column,
    Columns,
    Result,
    Selector,
    cells_of,
    fmt,
    fmt_span,
    judged,
    margin_below,
    never,
    open_text,
    paired_below,
    ratio_span,
    rows_matching,
    span,
    tally,
)
from fedrepro.claims.checks.final_values import Target
from fedrepro.claims.data import ClaimData
from fedrepro.results.summaries import SeedAggregate
from fedrepro.vertical_time import time_win_threshold


def time_win_ratio(data: ClaimData, *, a: Selector, b: Selector, per: Columns, metric: str, target: Target,
                   higher: bool, t_comm: list[float], t_comp: float = 1.0, q: Column = "Q", x: str = "iteration",
                   seeds: SeedAggregate = "mean") -> Result:
    """In each cell, each run of `a` (local iterations per round in column `q`) against the one run of `b`
    (Q = 1): n_a / n_b, the iterations (x) to `target` of `metric`, below time_win_threshold(Q, c) for every c
    in `t_comm`, so that A wins in time at each latency. A run that does not reach the target by its last
    iteration H is censored (n > H; final_values.time_to_target), so the ratio is known only as an interval:
    the pair is decided when the whole interval lies on one side of the smallest threshold, and open
    otherwise ("n/n_1 > 1.5; threshold 7.75"). A pair where neither reaches the target is undecided (listed,
    not counted), as one where both start at it. The pair is a Test of the seeds' own iterations, paired by seed
    (common.paired_below of n_a < n_b x the smallest threshold: the t-test of the per-seed log10 ratios while every
    seed reaches the target, else the sign test of the seeds the censored bounds settle); the ratios shown are of
    the seed-`seeds` curves. Margin: decades by which the ratio lies below the smallest threshold (of its bounds:
    the least the data guarantee, or the most they allow)."""
    times = data.times_to_target(metric, target, higher, x, seeds)
    per_seed = data.seed_times(metric, target, higher, x) if len(times) else None
    holds, margins, parts = [], [], []
    for name, cell in cells_of(times, per) if len(times) else []:
        rb = rows_matching(cell, b)
        if len(rb) != 1:
            continue
        sb = span(rb.iloc[0])
        for _, ra in rows_matching(cell, a).iterrows():
            sa, Q = span(ra), int(ra[q])
            thresholds = {c: time_win_threshold(Q, c, t_comp) for c in t_comm}
            shown = ", ".join(f"{fmt(v)} (t_comm {c:g})" for c, v in thresholds.items())
            if never(sa, sb) or sa[1] == sb[1] == 0:
                why = "neither reaches the target" if math.isinf(sa[1]) else "both start at the target"
                parts.append(f"[{name}, {q}={Q}] {why}: undecided; thresholds {shown}")
                continue
            low, high = ratio_span(sa, sb)  # n_a / n_b
            bound = min(thresholds.values())
            ok = True if high < bound else False if low >= bound else None
            test = paired_below(per_seed, ra["run_id"], rb.iloc[0]["run_id"], "t_target", bound, lower="t_lower")
            holds.append(test)
            margins.append(margin_below(high, bound) if ok else margin_below(low, bound))
            ratio = f"n/n_1 = {fmt_span(sa)}/{fmt_span(sb)} " + (
                f"= {fmt(high)}" if low == high else f"> {fmt(low)}" if math.isinf(high) else f"< {fmt(high)}")
            if ok is None:
                why = "censored: the bound does not decide"
            elif low == high:
                why = ", ".join(f"S(t_comm {c:g}) = {fmt(v / high) if high > 0 else 'inf'}"
                                for c, v in thresholds.items())
            else:
                why = "decided by the censored bound"
            parts.append(f"[{name}, {q}={Q}] {ratio} vs thresholds {shown}; {why}" + open_text(test))
    measured = f"{tally(holds, 'pairs')}: " + "; ".join(parts) if parts else "no cell has both curves"
    return judged(holds, margins, measured)
