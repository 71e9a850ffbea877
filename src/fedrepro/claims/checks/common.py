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


def compare_stat(frame: pd.DataFrame, a: dict, b: dict, per: list[str], stat: str, factor: float = 1.0,
                 require: str = "all", fraction: float | None = None, per_seed: pd.DataFrame | None = None) -> Result:
    """Holds in a cell when stat(a) < stat(b) * factor (factor < 1: a wins by a margin; > 1: a tolerance).
    A time T_<eps> not reached by the last x is censored there (its column T_<eps>_lower): the cell is
    decided only when the bound settles it (below), else open. With `per_seed` (the runs' per-seed values of
    stat, column `seed`), two values that are both known are open while they lie within the seed spread
    (within_spread):
    one standard error of the paired per-seed log10 ratios (paired_spread). Margin: decades by which stat(a)
    lies below stat(b) * factor (of the bounds, when censored); for `auc` (already a mean log10) the
    difference, also in decades."""
    lower = f"{stat}_lower" if f"{stat}_lower" in frame else stat
    log = stat != "auc"
    holds, margins, shown = [], [], []
    for name, ra, rb in pair_rows(frame, a, b, per) if len(frame) else []:
        sa, sb = (float(ra[lower]), float(ra[stat])), (float(rb[lower]), float(rb[stat]))
        ok = below(sa, sb, factor)
        margin = (margin_below(sa[1], sb[0] * factor, log=log) if ok
                  else margin_below(sa[0], sb[1] * factor, log=log))
        tol = paired_spread(per_seed, ra["run_id"], rb["run_id"], stat, log) if per_seed is not None else 0.0
        inside = ok is not None and within_spread(margin, tol, sa, sb)
        holds.append(None if inside else ok)
        margins.append(margin)
        shown.append(f"[{name}] {selector_name(a)} {fmt_span(sa)} vs {selector_name(b)} {fmt_span(sb)}"
                     + (f" (within the seed spread, {fmt(tol)} decades: open)" if inside else ""))
    measured = f"{tally(holds)}: " + "; ".join(shown) if holds else "no cell has both curves"
    return judged(holds, margins, measured, require, fraction)


def within_spread(difference: float, spread: float, *spans: tuple[float, float]) -> bool:
    """A comparison of values known exactly (not censored, not diverged) whose difference lies within their seed
    spread (> 0): it cannot be told apart, so it is open. A censored or diverged value keeps its interval rule
    (below), and without a spread the comparison decides by its own relation."""
    return spread > 0 and all(low == high and math.isfinite(high) for low, high in spans) and abs(difference) <= spread


def standard_error(values) -> float:
    """The standard error of the mean of `values` (over seeds): the seed spread a difference is read
    against; 0 with one value or a value that is not finite (a diverged seed), where there is none."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2 or not np.isfinite(values).all():
        return 0.0
    return float(np.std(values, ddof=1) / np.sqrt(len(values)))


def seed_spread(values: pd.DataFrame, weights: list[float]) -> float:
    """The seed spread of sum_i weights[i] x mean(column i), one row per seed: one standard error of the per-seed
    sums over the seeds every column has (standard_error: 0 without a spread)."""
    complete = values.dropna().to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):  # a diverged seed: inf - inf
        return standard_error(complete @ np.asarray(weights, dtype=float)) if len(complete) else 0.0


def paired_spread(per_seed: pd.DataFrame, run_a: str, run_b: str, column: str, log: bool = False) -> float:
    """One standard error of the per-seed differences column(a) - column(b) over the seeds both runs have
    (of log10 values, in decades, when `log`; none when a value is not positive). Paired by seed: valid whether
    or not the runs of one seed share their random numbers, and tighter when they do."""
    pair = pd.concat([per_seed.loc[per_seed["run_id"] == r].set_index("seed")[column] for r in (run_a, run_b)],
                     axis=1).dropna()
    if log:
        if (pair <= 0).any(axis=None):
            return 0.0
        pair = np.log10(pair)
    return seed_spread(pair, [1, -1])


def _needed(require: str, fraction: float | None) -> float:
    return {"all": 1.0, "most": 0.5 + 1e-9}.get(require, fraction if fraction is not None else 1.0)


# A cell's outcome: True (holds), False (does not) or None (open: its data cannot decide, e.g. a time
# censored at the horizon, two curves inside the seed spread, or both sides below the metric's chance level).
Holds = bool | None


def verdict(holds: list[Holds], require: str, fraction: float | None) -> str:
    """PASS or FAIL only when every way the open cells could fall gives that verdict; else INCONCLUSIVE."""
    if not holds:
        return INCONCLUSIVE
    need, n = _needed(require, fraction), len(holds)
    sure = sum(1 for h in holds if h is not None and h)
    possible = sum(1 for h in holds if h is None or h)
    if sure / n >= need:
        return PASS
    return FAIL if possible / n < need else INCONCLUSIVE


def tally(holds: list[Holds], what: str = "cells") -> str:
    """"2/4 cells hold" (", 1 open" when some cannot be decided)."""
    open_ = sum(h is None for h in holds)
    return (f"{sum(1 for h in holds if h is not None and h)}/{len(holds)} {what} hold"
            + (f" ({open_} open: undecidable on these data)" if open_ else ""))


def deciding_margin(margins: list[float], require: str = "all", fraction: float | None = None) -> float:
    """The margin of the cell that decides the verdict: with m of n cells required to hold, the m-th
    largest (for "all" the smallest), so it is > 0 exactly when enough cells hold."""
    if not margins:
        return math.nan
    ranked = sorted((-math.inf if math.isnan(m) else m for m in margins), reverse=True)
    required = max(1, math.ceil(_needed(require, fraction) * len(ranked) - 1e-9))
    return ranked[min(required, len(ranked)) - 1]


def judged(holds: list[Holds], margins: list[float], measured: str, require: str = "all",
           fraction: float | None = None, note: str = "") -> Result:
    """The Result of a check that judged cells: verdict from `holds`, margin of the deciding cell. An open
    cell counts against a PASS and for a FAIL (the verdict must hold either way); an undecided verdict has
    no margin."""
    status = verdict(holds, require, fraction)
    if status == INCONCLUSIVE and holds:
        return Result(status, measured, note)
    margins = [(math.inf if status == FAIL else -math.inf) if h is None else m for h, m in zip(holds, margins)]
    return Result(status, measured, note, deciding_margin(margins, require, fraction))


def not_learned(floor: float | None, higher: bool, *values: float) -> bool:
    """Every value sits at the trivial level `floor` of its metric or on the wrong side of it (chance
    accuracy, the F1 of predicting every sample positive; a loss at or above chance): no comparison of them
    means anything yet. False without a floor."""
    if floor is None:
        return False
    return all(v <= floor if higher else v >= floor for v in values)


def below(a: tuple[float, float], b: tuple[float, float], factor: float = 1.0) -> Holds:
    """a < b * factor for two values known as intervals (low, high): a time not reached within its horizon
    H is (H, inf), a reached one (t, t). True or False when the intervals decide it, None when they do not."""
    if a[1] < b[0] * factor:
        return True
    if a[0] >= b[1] * factor:
        return False
    return None


def margin_below(value: float, bound: float, log: bool = True) -> float:
    """How far `value` lies below `bound` (> 0: below): in decades, log10(bound / value), when `log` and
    both are positive, else bound - value. Two equal infinities have no margin (0)."""
    if value == bound:
        return 0.0
    if log and min(value, bound) == 0 and max(value, bound) > 0:  # a spread of 0 (one run drawn repeatedly)
        return math.inf if value == 0 else -math.inf
    if log and value > 0 and bound > 0:
        return math.log10(bound / value) if math.isfinite(value) and math.isfinite(bound) else (
            math.inf if math.isinf(bound) else -math.inf)
    return bound - value


def span(row) -> tuple[float, float]:
    """A run's time to target as the interval the data allow (t_lower, t_target of
    results.summaries.time_to_target): (t, t) when reached, (H, inf) when censored at its last x H, (inf, inf)
    when it diverged."""
    return float(row["t_lower"]), float(row["t_target"])


def fmt_span(span: tuple[float, float]) -> str:
    """9, >12 (not reached by x = 12) or inf (diverged: never)."""
    low, high = span
    return fmt(high) if low == high or math.isinf(low) else f">{fmt(low)}"


def never(*spans: tuple[float, float]) -> bool:
    """None of the times is reached within its run."""
    return all(math.isinf(high) for _, high in spans)


def ratio_span(num: tuple[float, float], den: tuple[float, float]) -> tuple[float, float]:
    """num / den for two times known as intervals (span): the interval of the ratio (x / 0 = inf, x / inf = 0)."""
    def div(a: float, b: float) -> float:
        return math.inf if b == 0 else 0.0 if math.isinf(b) else a / b
    return div(num[0], den[1]), div(num[1], den[0])


def never_falls(spans: list[tuple[float, float]], inversions: int = 0,
                tolerances: list[float] | None = None) -> tuple[Holds, float, int]:
    """Whether a sequence of times (span) never falls from one to the next, `inversions` steps excepted:
    (outcome, margin, open steps). A step a censored bound leaves open may fall either way, and so may a step
    between two known times within its tolerance (decades, one per step: the seed spread), so the sequence is
    decided only when its open steps cannot change the outcome. Margin: decades, the smallest step after the
    `inversions` worst are forgiven, of the bounds (the least they guarantee, or for a FAIL the most they allow)."""
    pairs = list(zip(spans[:-1], spans[1:]))
    tolerances = tolerances or [0.0] * len(pairs)
    outcomes = [None if within_spread(margin_below(later[1], earlier[1]), tol, earlier, later)
                else below(later, earlier) for (earlier, later), tol in zip(pairs, tolerances)]  # True: surely falls
    against, open_ = sum(o is True for o in outcomes), sum(o is None for o in outcomes)
    ok = True if against + open_ <= inversions else False if against > inversions else None
    steps = sorted(margin_below(earlier[1], later[0]) if ok else margin_below(earlier[0], later[1])
                   for earlier, later in pairs)
    return ok, steps[min(inversions, len(steps) - 1)], open_


def selector_name(selector: dict) -> str:
    """A selector as a reader names it: its values, numbers with their column (fedavg, Q=1, K=100/cifar10)."""
    return "/".join(str(v) if isinstance(v, str) else f"{k}={v}" for k, v in selector.items())


def fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.3g}"
