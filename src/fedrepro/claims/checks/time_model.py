"""Checks of a simulated-time claim in its iteration form (TDCD claim C1', spec tdcd.md §5).

With one round of Q local iterations costing t_Q = 3 t_comm + Q t_comp (engines/vertical_time.py), a run
with Q reaches a target sooner in time than one with Q = 1 exactly when n_Q / n_1, the ratio of the
iterations they need, is below Q (3 t_comm + t_comp) / (3 t_comm + Q t_comp). The check reads the
iteration curves and reports each ratio next to these thresholds; the speed-up in time at t_comm c is then
S_Q(c) = threshold(c) / (n_Q / n_1), which rises with c whenever both targets are reached (C2).
"""

from __future__ import annotations

import math
from typing import Literal

from fedrepro.claims.checks.common import (
    Column,
    Columns,
    Result,
    Selector,
    cells_of,
    fmt,
    judged,
    room,
    rows_matching,
)
from fedrepro.claims.checks.final_values import Target
from fedrepro.claims.data import ClaimData
from fedrepro.engines.vertical_time import time_win_threshold


def time_win_ratio(data: ClaimData, *, a: Selector, b: Selector, per: Columns, metric: str, target: Target,
                   higher: bool, t_comm: list[float], t_comp: float = 1.0, q: Column = "Q", x: str = "iteration",
                   seeds: Literal["mean", "median"] = "mean") -> Result:
    """In each cell, each run of `a` (local iterations per round in column `q`) against the one run of `b`
    (Q = 1): n_a / n_b, the iterations (x) to `target` of `metric`, below time_win_threshold(Q, c) for every c
    in `t_comm`, so that A wins in time at each latency. A pair where neither reaches the target is
    undecided (listed, not counted), as one where both start at it; where only A reaches it, n_a / n_b = 0.
    Margin: decades by which the ratio
    lies below the smallest threshold."""
    times = data.times_to_target(metric, target, higher, x, seeds)
    holds, margins, parts = [], [], []
    for name, cell in cells_of(times, per) if len(times) else []:
        rb = rows_matching(cell, b)
        if len(rb) != 1:
            continue
        nb = float(rb["t_target"].iloc[0])
        for _, ra in rows_matching(cell, a).iterrows():
            na, Q = float(ra["t_target"]), int(ra[q])
            thresholds = {c: time_win_threshold(Q, c, t_comp) for c in t_comm}
            shown = ", ".join(f"{fmt(v)} (t_comm {c:g})" for c, v in thresholds.items())
            if (math.isinf(na) and math.isinf(nb)) or na == nb == 0:
                why = "neither reaches the target" if math.isinf(na) else "both start at the target"
                parts.append(f"[{name}, {q}={Q}] {why}: undecided; thresholds {shown}")
                continue
            ratio = na / nb if nb > 0 else math.inf
            bound = min(thresholds.values())
            holds.append(ratio < bound)
            margins.append(room(ratio, bound) if ratio > 0 else math.inf)
            speedups = ", ".join(f"S(t_comm {c:g}) = {fmt(v / ratio) if ratio > 0 else 'inf'}"
                                 for c, v in thresholds.items())
            parts.append(f"[{name}, {q}={Q}] n/n_1 = {fmt(na)}/{fmt(nb)} = {fmt(ratio)} vs thresholds {shown}; "
                         f"{speedups}")
    measured = f"{sum(holds)}/{len(holds)} decided pairs hold: " + "; ".join(parts) if parts else "no cell has both curves"
    return judged(holds, margins, measured)
