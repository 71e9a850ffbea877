"""What every claim check shares: statuses, row selection, cells of a figure table, the verdict, the margin."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NamedTuple

import numpy as np
import pandas as pd

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"


class Result(NamedTuple):
    """What a check says. `margin`: how far the deciding value lies from the check's threshold, in the
    check's own units (each check's docstring says which); > 0 on the side where the condition holds,
    nan where there is nothing to measure."""
    status: str
    measured: str
    note: str = ""
    margin: float = math.nan

Require = Literal["all", "most", "fraction"]  # how many cells must hold (verdict)


# What a check's parameter holds beyond its type, read from the annotations by the start-up validation
# (claims/validation.py), so that a typo is an error there instead of a claim that selects nothing.
@dataclass(frozen=True)
class Names:
    """A parameter that names what the claim's figure tables hold: `selector` ({label column: value or
    list of values}), `columns` (a list of label columns), `column` (one), `values` (values of the column
    named by parameter `of`), `target` (a number, {panel: number} or the column holding each run's)."""
    what: str
    of: str = ""


@dataclass(frozen=True)
class OneOf:
    """A name among `names`, or matching the regular expression `pattern` (shown as `shown`)."""
    names: tuple[str, ...]
    pattern: str = ""
    shown: str = ""


@dataclass(frozen=True)
class Above:
    """A number > `low` (and <= `high`, when given)."""
    low: float
    high: float | None = None


Selector = Annotated[dict, Names("selector")]
Columns = Annotated[list[str], Names("columns")]
Column = Annotated[str, Names("column")]
Positive = Annotated[float, Above(0)]
Fraction = Annotated[float, Above(0, 1)]  # in (0, 1]


def values_of(param: str, hint: Any = list) -> Any:
    """A parameter holding values (a list, or with `hint` one) of the column that parameter `param` names."""
    return Annotated[hint, Names("values", param)]


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


def pair_rows(curves: pd.DataFrame, a: dict, b: dict, per: list[str], each_a: bool = False):
    """(cell name, row of a, row of b) for every cell holding exactly one curve of each; with `each_a`,
    once per curve of A in a cell holding one of B ("Q = 10, 20 and 30 each beat Q = 1"), named by
    the cell and A's curve when there are several."""
    for name, cell in cells_of(curves, per):
        sa, sb = rows_matching(cell, a), rows_matching(cell, b)
        if len(sb) != 1 or not (len(sa) == 1 or (each_a and len(sa) > 1)):
            continue
        for _, ra in sa.iterrows():
            yield (f"{name}, {ra['curve']}" if len(sa) > 1 else name), ra, sb.iloc[0]


def stat_pairs(curves: pd.DataFrame, a: dict, b: dict, per: list[str], stat: str, each_a: bool = False):
    """(cell name, stat of a, stat of b) for every pair of pair_rows."""
    for name, ra, rb in pair_rows(curves, a, b, per, each_a):
        yield name, float(ra[stat]), float(rb[stat])


def compare_stat(frame: pd.DataFrame, a: dict, b: dict, per: list[str], stat: str, factor: float = 1.0,
                 require: str = "all", fraction: float | None = None) -> Result:
    """Holds in a cell when stat(a) < stat(b) * factor (factor < 1: a wins by a margin; > 1: a tolerance)."""
    """Margin: decades by which stat(a) lies below stat(b) * factor; for `auc` (already a mean log10) the
    difference, also in decades."""
    pairs = list(stat_pairs(frame, a, b, per, stat)) if len(frame) else []
    holds = [va < vb * factor for _, va, vb in pairs]
    margins = [room(va, vb * factor, log=stat != "auc") for _, va, vb in pairs]
    name_a, name_b = selector_name(a), selector_name(b)
    detail = "; ".join(f"[{n}] {name_a} {fmt(va)} vs {name_b} {fmt(vb)}" for n, va, vb in pairs)
    measured = f"{sum(holds)}/{len(holds)} cells hold: {detail}" if pairs else "no cell has both curves"
    return judged(holds, margins, measured, require, fraction)


def _needed(require: str, fraction: float | None) -> float:
    return {"all": 1.0, "most": 0.5 + 1e-9}.get(require, fraction if fraction is not None else 1.0)


def verdict(holds: list[bool], require: str, fraction: float | None) -> str:
    if not holds:
        return INCONCLUSIVE
    return PASS if sum(holds) / len(holds) >= _needed(require, fraction) else FAIL


def deciding_margin(margins: list[float], require: str = "all", fraction: float | None = None) -> float:
    """The margin of the cell that decides the verdict: with m of n cells required to hold, the m-th
    largest (for "all" the smallest), so it is > 0 exactly when enough cells hold."""
    if not margins:
        return math.nan
    ranked = sorted((-math.inf if math.isnan(m) else m for m in margins), reverse=True)
    required = max(1, math.ceil(_needed(require, fraction) * len(ranked) - 1e-9))
    return ranked[min(required, len(ranked)) - 1]


def judged(holds: list[bool], margins: list[float], measured: str, require: str = "all",
           fraction: float | None = None, note: str = "") -> Result:
    """The Result of a check that judged cells: verdict from `holds`, margin of the deciding cell."""
    return Result(verdict(holds, require, fraction), measured, note, deciding_margin(margins, require, fraction))


def room(value: float, bound: float, log: bool = True) -> float:
    """How far `value` lies below `bound` (> 0: below): in decades, log10(bound / value), when `log` and
    both are positive, else bound - value. Two equal infinities have no room (0)."""
    if value == bound:
        return 0.0
    if log and min(value, bound) == 0 and max(value, bound) > 0:  # a spread of 0 (one run drawn repeatedly)
        return math.inf if value == 0 else -math.inf
    if log and value > 0 and bound > 0:
        return math.log10(bound / value) if math.isfinite(value) and math.isfinite(bound) else (
            math.inf if math.isinf(bound) else -math.inf)
    return bound - value


def selector_name(selector: dict) -> str:
    """A selector as a reader names it: its values, numbers with their column (fedavg, Q=1, K=100/cifar10)."""
    return "/".join(str(v) if isinstance(v, str) else f"{k}={v}" for k, v in selector.items())


def fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.3g}"
