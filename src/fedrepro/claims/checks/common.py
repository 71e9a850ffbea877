"""What every claim check shares: statuses, row selection, cells of a figure table, the verdict, the margin."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Literal, NamedTuple

import numpy as np
import pandas as pd

from fedrepro.claims.checks.inference import ALPHA, Test, certain, combine, decide, effect_test, required_of
from fedrepro.verdicts import FAIL, INCONCLUSIVE, PASS


class Result(NamedTuple):
    """What a check says. `margin`: how far the deciding value lies from the check's threshold, in the
    check's own units (each check's docstring says which); > 0 on the side where the condition holds,
    nan where there is nothing to measure. `p_pass`, `p_fail`: the p-values of the claim's combined test
    (inference.combine) on which its verdict rests; nan for a check that does not test its seeds."""
    status: str
    measured: str
    note: str = ""
    margin: float = math.nan
    p_pass: float = math.nan
    p_fail: float = math.nan
    tests: tuple = ()  # the Test of each cell, in order (inference.Test): what the claim's test combined
    test: Test | None = None  # the claim's combined Test (inference.combine of `tests`; None: nothing tested)

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
    """A number > `low` (and <= `high`, when given); with `inclusive`, >= `low`."""
    low: float
    high: float | None = None
    inclusive: bool = False


Selector = Annotated[dict, Names("selector")]
Columns = Annotated[list[str], Names("columns")]
Column = Annotated[str, Names("column")]
Positive = Annotated[float, Above(0)]
Fraction = Annotated[float, Above(0, 1)]  # in (0, 1]
Tolerance = Annotated[float, Above(0, inclusive=True)]  # how far a value may miss: never negative


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


def selected_runs(params: dict[str, Any], table: pd.DataFrame) -> set[str] | None:
    """The run ids of the rows a claim's selectors match in its figures' table: its parameters that select rows
    (a dict of column values, as `a`, `b` and `select` do: rows_matching), whose rows are all its check reads of
    the curves. None where it has no selector or one matches no row (its check then reads what it reads of every
    curve)."""
    selectors = [v for v in params.values() if isinstance(v, dict) and v and set(v) <= set(table.columns)]
    if not selectors or "run_id" not in table:
        return None
    runs: set[str] = set()
    for selector in selectors:
        rows = rows_matching(table, selector)
        if rows.empty:
            return None
        runs |= set(rows["run_id"].astype(str))
    return runs


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
                 require: str = "all", fraction: float | None = None, per_seed: pd.DataFrame | None = None,
                 test: Callable[[pd.Series, pd.Series], Test] | None = None) -> Result:
    """Holds in a cell when stat(a) < stat(b) * factor (factor < 1: a wins by a margin; > 1: a tolerance).
    With `per_seed` (the runs' per-seed values of stat, column `seed`), the cell is a Test of its seeds
    (paired_below: the per-seed log10 ratios, paired by seed; a time T_<eps> not reached by a seed's last x is
    censored there, its column T_<eps>_lower); with `test`, the Test test(row of a, row of b) (a variance across
    Monte Carlo runs: monte_carlo.compare_mc). Without either (a statistic over Monte Carlo runs, which the
    bootstrap qualifies), the values decide: a censored bound only when it settles the comparison (below), else open.
    Margin: decades by which stat(a) lies below stat(b) * factor, of the seed medians (of the bounds, when
    censored); for `auc` (already a mean log10) the difference, also in decades."""
    lower = f"{stat}_lower" if f"{stat}_lower" in frame else stat
    log = stat != "auc"
    holds, margins, shown = [], [], []
    for name, ra, rb in pair_rows(frame, a, b, per) if len(frame) else []:
        sa, sb = (float(ra[lower]), float(ra[stat])), (float(rb[lower]), float(rb[stat]))
        ok = below(sa, sb, factor)
        margin = (margin_below(sa[1], sb[0] * factor, log=log) if ok
                  else margin_below(sa[0], sb[1] * factor, log=log))
        outcome = (test(ra, rb) if test is not None else ok if per_seed is None
                   else paired_below(per_seed, ra["run_id"], rb["run_id"], stat, factor, log))
        holds.append(outcome)
        margins.append(margin)
        shown.append(f"[{name}] {selector_name(a)} {fmt_span(sa)} vs {selector_name(b)} {fmt_span(sb)}"
                     + open_text(outcome))
    measured = f"{tally(holds)}: " + "; ".join(shown) if holds else "no cell has both curves"
    return judged(holds, margins, measured, require, fraction)


def paired_below(per_seed: pd.DataFrame, run_a: str, run_b: str, column: str, factor: float = 1.0,
                 log: bool = True, lower: str | None = None) -> Test:
    """The Test of column(a) < column(b) x factor over the seeds both runs have, paired by seed: the per-seed
    effect is log10(b x factor / a) in decades when `log` (else b x factor - a), an interval where a value is
    censored (its column `lower`, by default <column>_lower when there is one: the last x a time was not
    reached by) or diverged (inf); inference.effect_test. Paired by seed: valid whether or not the runs of one
    seed share their random numbers, and tighter when they do."""
    lower = lower or (f"{column}_lower" if f"{column}_lower" in per_seed else column)
    a, b = (per_seed.loc[per_seed["run_id"] == r].set_index("seed")[[lower, column]] for r in (run_a, run_b))
    pair = pd.merge(a, b, left_index=True, right_index=True, suffixes=("_a", "_b")).to_numpy(dtype=float)
    a_low, a_high, b_low, b_high = pair.T
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 and inf: an effect of -inf, inf or unknown (nan)
        if log:
            low = np.log10(b_low * factor) - np.log10(a_high)
            high = np.log10(b_high * factor) - np.log10(a_low)
        else:
            low, high = b_low * factor - a_high, b_high * factor - a_low
    return effect_test(low, high)


def open_text(outcome: Outcome) -> str:
    """What a cell's text adds when its seeds decide it neither way: " (open: t(2) = 0.85)"."""
    if isinstance(outcome, Test) and outcome.outcome is None:
        return f" (open: {outcome.how})" if outcome.how else " (open)"
    return ""


def seed_effect(values: pd.DataFrame, weights: list[float], hold_above: float = 0.0, fail_below: float = 0.0) -> Test:
    """The Test of sum_i weights[i] x mean(column i) > 0, one row per seed, over the seeds every column has:
    the per-seed sums are the effects (inference.effect_test; a diverged seed's inf decides its sign only)."""
    complete = values.dropna().to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):  # a diverged seed: inf - inf, unknown
        effects = complete @ np.asarray(weights, dtype=float) if len(complete) else np.array([])
    return effect_test(effects, hold_above=hold_above, fail_below=fail_below)


def _needed(require: str, fraction: float | None) -> float:
    return {"all": 1.0, "most": 0.5 + 1e-9}.get(require, fraction if fraction is not None else 1.0)


# A cell's outcome: True (holds), False (does not) or None (open: its data cannot decide, e.g. a time
# censored at the horizon, or both sides below the metric's chance level), known without testing seeds;
# or a Test of its seeds (inference.py), which the verdict reads by its p-values.
Holds = bool | None
Outcome = Holds | Test


def as_test(outcome: Outcome) -> Test:
    return outcome if isinstance(outcome, Test) else certain(outcome)


def shown_outcome(outcome: Outcome) -> Holds:
    """A cell's outcome taken alone (a Test: shown to hold or fail at ALPHA, else open), for counting."""
    return outcome.outcome if isinstance(outcome, Test) else outcome


def claim_test(holds: list[Outcome], require: str, fraction: float | None) -> Test:
    """The claim's combined Test over its cells (inference.combine), `require` of them needed; FAIL by Simes's form,
    the cells being separate runs or sharing a curve on one side (positively dependent: inference's docstring)."""
    return combine([as_test(h) for h in holds], required_of(len(holds), _needed(require, fraction)), positive=True)


def verdict(holds: list[Outcome], require: str, fraction: float | None) -> str:
    """PASS when the cells needed are shown to hold, FAIL when enough are shown to fail (inference.decide:
    the error rates of docs/claims_reference.md); else INCONCLUSIVE. With outcomes known without seeds: PASS or FAIL
    only when every way the open cells could fall gives that verdict."""
    if not holds:
        return INCONCLUSIVE
    return decide(claim_test(holds, require, fraction))


def tally(holds: list[Outcome], what: str = "cells") -> str:
    """"2/4 cells hold" (", 1 open" when some are shown neither to hold nor to fail)."""
    shown = [shown_outcome(h) for h in holds]
    open_ = sum(h is None for h in shown)
    return (f"{sum(1 for h in shown if h)}/{len(shown)} {what} hold"
            + (f" ({open_} open: not decided on these data)" if open_ else ""))


def deciding_margin(margins: list[float], require: str = "all", fraction: float | None = None) -> float:
    """The margin of the cell that decides the verdict: with m of n cells required to hold, the m-th
    largest (for "all" the smallest), so it is > 0 exactly when enough cells hold."""
    if not margins:
        return math.nan
    ranked = sorted((-math.inf if math.isnan(m) else m for m in margins), reverse=True)
    required = max(1, math.ceil(_needed(require, fraction) * len(ranked) - 1e-9))
    return ranked[min(required, len(ranked)) - 1]


def judged(holds: list[Outcome], margins: list[float], measured: str, require: str = "all",
           fraction: float | None = None, note: str = "") -> Result:
    """The Result of a check that judged cells: verdict and p-values from `holds` (claim_test), margin of
    the deciding cell. An open cell counts against a PASS and for a FAIL (the verdict must hold either way);
    an undecided verdict has no margin."""
    if not holds:
        return Result(INCONCLUSIVE, measured, note)
    test = claim_test(holds, require, fraction)
    status, tests = decide(test), tuple(as_test(h) for h in holds)
    if status == INCONCLUSIVE:
        return Result(status, measured, note, math.nan, test.p_holds, test.p_against, tests, test)
    shown = [shown_outcome(h) for h in holds]
    margins = [(math.inf if status == FAIL else -math.inf) if h is None else m for h, m in zip(shown, margins)]
    return Result(status, measured, note, deciding_margin(margins, require, fraction), test.p_holds, test.p_against,
                  tests, test)


def at_level(result: Result, level: float) -> Result:
    """A tested check's Result re-decided at `level` (a look of the adaptive seed plan: claims/sequential.py) from its
    combined Test: the checks decide at ALPHA, and a lower level can only leave open what ALPHA showed, so a verdict
    it does not show becomes INCONCLUSIVE, without a margin (as judged gives an undecided verdict). At ALPHA, and
    without a Test, the Result is as it was."""
    if level > ALPHA:
        raise ValueError(f"level {level} is above ALPHA = {ALPHA}: a look spends at most the rule's alpha")
    if level == ALPHA or result.test is None or decide(result.test, level) == result.status:
        return result
    said = f"not decided at this look's level {level:.1%} (seed_plan adaptive; {result.status} at {ALPHA:.0%})"
    return result._replace(status=INCONCLUSIVE, margin=math.nan, note=" ".join(x for x in (result.note, said) if x))


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


def never_falls(spans: list[tuple[float, float]], steps: list[Test], inversions: int = 0) -> tuple[Test, float, str]:
    """Whether a sequence of times (span) never falls from one to the next, `inversions` steps excepted:
    (the Test of the sequence, margin, what it leaves open: steps_open). Each step is a Test of its seeds (`steps`:
    paired_below of this time below the next), and the sequence holds when len(steps) - inversions of them do
    (inference.combine). Margin: decades, the smallest step after the `inversions` worst are forgiven, of the
    bounds (the least they guarantee, or for a FAIL the most they allow)."""
    pairs = list(zip(spans[:-1], spans[1:]))
    test = combine(steps, max(1, len(steps) - inversions))
    ok = test.outcome
    margins = sorted(margin_below(earlier[1], later[0]) if ok else margin_below(earlier[0], later[1])
                     for earlier, later in pairs)
    return test, margins[min(inversions, len(margins) - 1)], steps_open(test, steps)


def steps_open(test: Test, steps: list[Test]) -> str:
    """What a sequence of steps (never_falls) leaves open, as its note says it ("" when nothing): the steps their
    seeds decide neither way; or, where each step is decided alone and the sequence is not, that. The sequence's
    Test combines its steps and corrects for their number (inference.combine): a step that fails alone at ALPHA
    need not fail the sequence, so "0 step(s) open" would be said of an open sequence."""
    alone = sum(step.outcome is None for step in steps)
    if alone:
        return f"{alone} step(s) open: not decided by the seeds"
    if test.outcome is None:
        return (f"open: each of its {len(steps)} steps is decided alone, not the series (combining them corrects for "
                f"their number)")
    return ""


def selector_name(selector: dict) -> str:
    """A selector as a reader names it: its values, numbers with their column (fedavg, Q=1, K=100/cifar10)."""
    return "/".join(str(v) if isinstance(v, str) else f"{k}={v}" for k, v in selector.items())


def fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.3g}"
