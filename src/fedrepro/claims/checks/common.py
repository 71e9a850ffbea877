"""What every claim check shares: statuses, row selection, cells of a figure table, the verdict."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pandas as pd

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
Result = tuple[str, str, str]  # (status, measured, note)
Require = Literal["all", "most", "fraction"]  # how many cells must hold (verdict)


def rows_matching(frame: pd.DataFrame, selector: dict[str, Any]) -> pd.DataFrame:
    """Rows matching every key of the selector; a list value matches any of its items."""
    mask = np.ones(len(frame), dtype=bool)
    for key, value in selector.items():
        if key not in frame:
            return frame.iloc[0:0]
        mask &= (frame[key].isin(value) if isinstance(value, list) else frame[key] == value).to_numpy()
    return frame[mask]


def cells_of(curves: pd.DataFrame, per: list[str], named: bool = False):
    """(name, rows) per value of the `per` keys; `named` writes settings as key = value (not figure, panel)."""
    keys = [k for k in per if k in curves]
    if not keys:
        yield "all", curves
        return
    for values, cell in curves.groupby(keys, sort=False):
        values = values if isinstance(values, tuple) else (values,)
        yield ", ".join(f"{v}" if not named or k in ("figure", "panel") else f"{k} = {v}"
                        for k, v in zip(keys, values)), cell


def pair_rows(curves: pd.DataFrame, a: dict, b: dict, per: list[str]):
    """(cell name, row of a, row of b) for every cell holding exactly one curve of each."""
    for name, cell in cells_of(curves, per):
        sa, sb = rows_matching(cell, a), rows_matching(cell, b)
        if len(sa) == 1 and len(sb) == 1:
            yield name, sa.iloc[0], sb.iloc[0]


def stat_pairs(curves: pd.DataFrame, a: dict, b: dict, per: list[str], stat: str):
    """(cell name, stat of a, stat of b) for every cell holding exactly one curve of each."""
    for name, ra, rb in pair_rows(curves, a, b, per):
        yield name, float(ra[stat]), float(rb[stat])


def compare_stat(frame: pd.DataFrame, a: dict, b: dict, per: list[str], stat: str, factor: float = 1.0,
                 require: str = "all", fraction: float | None = None) -> Result:
    """Holds in a cell when stat(a) < stat(b) * factor (factor < 1: a wins by a margin; > 1: a tolerance)."""
    pairs = list(stat_pairs(frame, a, b, per, stat)) if len(frame) else []
    holds = [va < vb * factor for _, va, vb in pairs]
    name_a, name_b = selector_name(a), selector_name(b)
    detail = "; ".join(f"[{n}] {name_a} {fmt(va)} vs {name_b} {fmt(vb)}" for n, va, vb in pairs)
    measured = f"{sum(holds)}/{len(holds)} cells hold: {detail}" if pairs else "no cell has both curves"
    return verdict(holds, require, fraction), measured, ""


def verdict(holds: list[bool], require: str, fraction: float | None) -> str:
    if not holds:
        return INCONCLUSIVE
    share = sum(holds) / len(holds)
    needed = {"all": 1.0, "most": 0.5 + 1e-9}.get(require, fraction if fraction is not None else 1.0)
    return PASS if share >= needed else FAIL


def selector_name(selector: dict) -> str:
    return "/".join(str(v) for v in selector.values())


def fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.3g}"
