"""Learning curves compared on means over seeds (FedCluster's claim rules, docs/papers/fedcluster.md R21): AUC and FIN of a metric against
the x column `x` (results.summaries.auc_fin_per_seed)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from fedrepro.claims.checks.common import (
    INCONCLUSIVE,
    Column,
    Columns,
    Fraction,
    Outcome,
    Positive,
    Require,
    Result,
    Selector,
    Tolerance,
    cells_of,
    fmt,
    judged,
    not_learned,
    open_text,
    rows_matching,
    seed_effect,
    tally,
    values_of,
)
from fedrepro.claims.checks.inference import OPEN, combine, effect_test, equivalent, spearman_sum
from fedrepro.claims.data import ClaimData
from fedrepro.results.summaries import AucKind, spearman


def _gain(auc_a, auc_b, higher: bool, relative: bool = True):
    """How much better A is than B: G = (AUC_B - AUC_A) / |AUC_B| for a loss (docs/papers/fedcluster.md R21), the sign
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
    return f"{fmt(float(np.mean(values)))} ± {fmt(spread)}"


def _seed_pairs(data: ClaimData, a: dict, b: dict, per: list[str], metric: str, higher: bool, x: str,
                auc: str = "mean"):
    """(name, cell name, per-seed summaries of A, of B, seeds aligned) for every cell holding one run of
    B, once per run of A there: "FedCluster with M = 5, 10 and 20 each beat FedAvg" is one selector."""
    frame = data.auc_fin(metric, higher, x, auc)
    for cell_name, cell in cells_of(frame, per, named=True) if len(frame) else []:
        runs_a, sb = rows_matching(cell, a), rows_matching(cell, b)
        if sb["run_id"].nunique() != 1:
            continue
        sb = sb.set_index("seed").sort_index()
        several = runs_a["run_id"].nunique() > 1
        for _, sa in runs_a.groupby("run_id", sort=False):
            sa = sa.set_index("seed").sort_index()
            common = sa.index.intersection(sb.index)
            name = f"{cell_name}, {sa['curve'].iloc[0]}" if several else cell_name
            yield name, cell_name, sa.loc[common], sb.loc[common]


def faster(data: ClaimData, *, a: Selector, b: Selector, per: Columns, metric: str = "train_loss", x: str = "round",
           higher: bool = False, min_gain: Tolerance = 0.0, fin_rel_tol: Tolerance | None = None,
           fin_abs_tol: Tolerance | None = None, seed_share: float = 2 / 3, require: Require = "all",
           fraction: Fraction | None = None, auc: AucKind = "mean",
           floor: float | None = None) -> Result:
    """A converges faster than B in a cell (the pass rule of docs/papers/fedcluster.md R21) when, on means over the paired seeds,
    G(A over B) > 0 and >= min_gain ("significantly": 0.05), FIN(A) is no worse than FIN(B) within
    fin_rel_tol (relative) or fin_abs_tol (absolute), and, with 3 or more seeds, G > 0 in at least
    `seed_share` of them. AUC: the mean over the logged points, or (`auc: trapezoid`) the area over the
    x range divided by it (results.summaries.auc_fin_per_seed). The cell is a Test of its seeds
    (inference.combine of its conditions, each a t-test of its per-seed values: G - max(min_gain, 0), and
    FIN(B) x (1 + fin_rel_tol) - FIN(A) or FIN(B) + fin_abs_tol - FIN(A) for a loss); the seeds' share is a
    condition of holding only (a cell where fewer win cannot hold, but their count alone does not make it
    fail). The cell is open when both mean FINs sit at or below `floor`, the metric's trivial level
    (common.not_learned): neither curve has learned.
    Margin: the smallest of its conditions' margins, each a fraction: G - min_gain, the FIN tolerance left
    (relative, or absolute in the metric's units), the share of winning seeds - seed_share."""
    holds, parts, margins = [], [], []
    sign = 1 if higher else -1  # > 0: A's FIN better than B's
    for name, _, sa, sb in _seed_pairs(data, a, b, per, metric, higher, x, auc):
        g_seeds = _gain(sa["auc"].to_numpy(), sb["auc"].to_numpy(), higher)
        g = float(_gain(sa["auc"].mean(), sb["auc"].mean(), higher))
        fa, fb = sa["fin"].mean(), sb["fin"].mean()
        fin_a, fin_b = sa["fin"].to_numpy(dtype=float), sb["fin"].to_numpy(dtype=float)
        threshold = max(min_gain, 0.0)
        conditions = [effect_test(g_seeds, hold_above=threshold, fail_below=threshold)]
        condition_margins = [g - threshold]
        with np.errstate(invalid="ignore"):  # two diverged FINs: inf - inf, unknown; inf / inf, no margin
            if fin_rel_tol is not None:  # FIN(A) within fin_rel_tol of FIN(B), per seed
                conditions.append(effect_test(sign * (fin_a - fin_b) + fin_rel_tol * np.abs(fin_b)))
                condition_margins.append(sign * (fa - fb) / abs(fb) + fin_rel_tol)
            if fin_abs_tol is not None:
                conditions.append(effect_test(sign * (fin_a - fin_b) + fin_abs_tol))
                condition_margins.append(sign * (fa - fb) + fin_abs_tol)
        test = combine(conditions)
        wins = int(np.sum(g_seeds > 0))
        if len(g_seeds) >= 3:
            if wins < seed_share * len(g_seeds):  # cannot hold; fails only by the tests
                test = replace(test, p_holds=1.0, how=f"G > 0 in {wins}/{len(g_seeds)} seeds")
            condition_margins.append(wins / len(g_seeds) - seed_share)
        chance = not_learned(floor, higher, fa, fb)
        outcome = OPEN if chance else test
        holds.append(outcome)
        # nan: an undefined ratio (inf/inf)
        margins.append(min((r for r in condition_margins if not np.isnan(r)), default=np.nan))
        parts.append(f"[{name}] G {g:+.3f} (seeds {_pm(g_seeds)}, > 0 in {wins}/{len(g_seeds)}); "
                     f"AUC {_pm(sa['auc'])} vs {_pm(sb['auc'])}; FIN {_pm(sa['fin'])} vs {_pm(sb['fin'])}"
                     + (f" (both FIN at or below the floor {fmt(floor)}: not learned yet, open)" if chance
                        else open_text(test)))
    measured = f"{tally(holds)}: " + "; ".join(parts) if parts else "no cell has both curves"
    return judged(holds, margins, measured, require, fraction)


def comparable(data: ClaimData, *, a: Selector, b: Selector, per: Columns, tol: Positive, metric: str = "train_loss",
               x: str = "round", higher: bool = False, reference: Selector | None = None) -> Result:
    """A performs comparably to B in each cell ("comparable", docs/papers/fedcluster.md R21): |G(A over B)| < tol, an
    equivalence margin the claims file declares, by the TOST of the per-seed G (inference.equivalent); with a
    `reference` selector also |G(A over B)| < G(reference over B), i.e. clearly smaller than the gain of a curve
    that wins: the TOST of the same G with the reference's own G as the margin, paired by seed. A cell lacking
    the reference is open. Margin: tol - |G| (or G(reference) - |G|, if smaller) of the seed means, a fraction."""
    ref = {cell: pd.Series(_gain(sr["auc"].to_numpy(), sb["auc"].to_numpy(), higher), index=sr.index)
           for _, cell, sr, sb in (_seed_pairs(data, reference, b, per, metric, higher, x) if reference else [])}
    holds, parts, margins = [], [], []
    for name, cell, sa, sb in _seed_pairs(data, a, b, per, metric, higher, x):
        g_seeds = _gain(sa["auc"].to_numpy(), sb["auc"].to_numpy(), higher)
        g = float(_gain(sa["auc"].mean(), sb["auc"].mean(), higher))
        conditions, condition_margins = [equivalent(g_seeds, margin=tol)], [tol - abs(g)]
        if reference:
            g_ref = ref[cell].reindex(sa.index).to_numpy() if cell in ref else np.full(len(g_seeds), np.nan)
            conditions.append(equivalent(g_seeds, margin=g_ref) if cell in ref else OPEN)
            condition_margins.append(float(np.mean(g_ref)) - abs(g) if cell in ref else -np.inf)
        test = combine(conditions)
        holds.append(test)
        margins.append(min(condition_margins))
        parts.append(f"[{name}] G {g:+.3f} (seeds {_pm(g_seeds)})"
                     + (f", reference G {float(np.mean(ref[cell])):+.3f}" if cell in ref else
                        ", no reference curve" if reference else "") + open_text(test))
    measured = (f"TOST within ±{fmt(tol)}, {tally(holds)}: " + "; ".join(parts) if parts
                else "no cell has both curves")
    return judged(holds, margins, measured)


def _seed_values(cell: pd.DataFrame, along: str, order: list, column: str) -> pd.DataFrame:
    """`column` of the run at each value of `along`, in `order`: one row per seed, one column per value (nan
    where a run lacks the seed; a column of nan where there is no run)."""
    wide = cell[cell[along].isin(order)].pivot_table(index="seed", columns=along, values=column, aggfunc="mean",
                                                     dropna=False)
    return wide.reindex(columns=order)


def ordered(data: ClaimData, *, select: Selector, per: Columns, along: Column, order: values_of("along"),
            metric: str = "train_loss", x: str = "round", higher: bool = False,
            value: Literal["auc", "final"] = "auc", rel_tol: Positive | None = None,
            floor: float | None = None) -> Result:
    """The selected curves get better at every step along `order` of the values of `along`: e.g. along M,
    order [5, 10, 20], a loss falls 5 -> 10 -> 20. Each curve is read as the mean over its seeds of its AUC
    (convergence speed) or, with `value: final`, of its final value (FIN: the mean over the last tenth of
    the x range), for a claim about where the curves end. Each step is a Test of the paired per-seed
    differences of its two curves (common.seed_effect), and a cell holds when every step does
    (inference.combine); `rel_tol`, where a paper states one, is a band of that fraction of the larger |mean|
    inside which a step neither holds nor fails. A step where both curves sit at or below `floor`, the
    trivial level of an accuracy or F1 (chance; predicting every sample positive; common.not_learned), is
    open. Margin: the smallest step's improvement of the mean, in the metric's units."""
    frame = data.auc_fin(metric, higher, x)
    column = {"auc": "auc", "final": "fin"}[value]
    holds, parts, margins = [], [], []
    for name, cell in cells_of(rows_matching(frame, select), per, named=True) if len(frame) else []:
        values = _seed_values(cell, along, order, column)
        means = values.mean().to_numpy()
        if np.isnan(means).any():
            continue
        steps: list[tuple[Outcome, float, bool]] = []
        for i, (m1, m2) in enumerate(zip(means[:-1], means[1:])):
            better_by = (m2 - m1) if higher else (m1 - m2)
            band = rel_tol * max(abs(m1), abs(m2)) if rel_tol is not None else 0.0
            below_floor = not_learned(floor, higher, m1, m2)
            test = OPEN if below_floor else seed_effect(values.iloc[:, [i, i + 1]], [-1, 1] if higher else [1, -1],
                                                        hold_above=band, fail_below=-band)
            steps.append((test, better_by, below_floor))
        cell_test = combine([t for t, _, _ in steps])
        holds.append(cell_test)
        margins.append(float(np.nan_to_num(min(b for _, b, _ in steps), nan=-np.inf)))
        series = ", ".join(f"{along}={v}: {fmt(m)}" for v, m in zip(order, means))
        open_ = [f"{order[i]}->{order[i + 1]}" + (" below the floor" if low else f" {t.how}")
                 for i, (t, _, low) in enumerate(steps) if t.outcome is None]
        parts.append(f"[{name}] {series}" + (f" (open: {', '.join(open_)})" if open_ else ""))
    what = "mean AUC" if value == "auc" else "mean final value"
    measured = (f"{what}; {tally(holds)}: " + "; ".join(parts)) if parts else "no cell has every value"
    return judged(holds, margins, measured)


def slight(data: ClaimData, *, select: Selector, b: Selector, per: Columns, along: Column,
           order: values_of("along"), metric: str = "train_loss", x: str = "round", higher: bool = False) -> Result:
    """"Slightly" (FedCluster C14, docs/papers/fedcluster.md R21): the spread of the selected curves' mean AUC over `order` is smaller
    than the gap from B (e.g. FedAvg) to the worst of them. The cell is a Test of gap - spread over the paired
    seeds (common.seed_effect: 2 worst - best - B per seed, its sign for a loss flipped), the worst and best
    curves those of the seed means. Margin: gap - spread, in the metric's units."""
    frame = data.auc_fin(metric, higher, x)
    holds, parts, margins = [], [], []
    for name, cell in cells_of(frame, per, named=True) if len(frame) else []:
        values = _seed_values(rows_matching(cell, select), along, order, "auc")
        ref = rows_matching(cell, b)
        auc = values.mean().to_numpy()
        if np.isnan(auc).any() or ref["run_id"].nunique() != 1:
            continue
        values["B"] = ref.set_index("seed")["auc"]
        worst, best = (np.argmin(auc), np.argmax(auc)) if higher else (np.argmax(auc), np.argmin(auc))
        spread, gap = float(auc.max() - auc.min()), float(_gain(auc[worst], values["B"].mean(), higher, relative=False))
        # gap - spread = 2 worst - best - B (an accuracy), B + best - 2 worst (a loss)
        test = seed_effect(values.iloc[:, [worst, best, -1]], [2, -1, -1] if higher else [-2, 1, 1])
        holds.append(test)
        margins.append(gap - spread)
        parts.append(f"[{name}] spread over {along} {fmt(spread)} vs gap to {'/'.join(map(str, b.values()))} "
                     f"{fmt(gap)}" + open_text(test))
    measured = f"{tally(holds)}: " + "; ".join(parts) if parts else "no cell has every curve"
    return judged(holds, margins, measured)


def gain_by_group(data: ClaimData, *, a: Selector, b: Selector, per: Columns, group: Column,
                  greater: values_of("group", Any), than: values_of("group", Any), metric: str = "train_loss",
                  x: str = "round", higher: bool = False, relative: bool = True) -> Result:
    """The mean over cells of G(A over B) is larger where `group` is `greater` than where it is `than`
    (e.g. dataset: FedCluster's edge larger on CIFAR-10 than on MNIST, FedCluster claims C5, C8): a Test of the
    per-seed differences of the groups' mean gains (common.seed_effect). Margin: the difference of the two means (of G, or of the AUC difference when not `relative`)."""
    gains: dict[Any, list[float]] = {greater: [], than: []}  # G per cell
    seed_gains: dict[Any, list[pd.Series]] = {greater: [], than: []}  # and per seed
    for _, _, sa, sb in _seed_pairs(data, a, b, per, metric, higher, x):
        key = sa[group].iloc[0]
        if key in gains:
            gains[key].append(float(_gain(sa["auc"].mean(), sb["auc"].mean(), higher, relative)))
            seed_gains[key].append(pd.Series(_gain(sa["auc"].to_numpy(), sb["auc"].to_numpy(), higher, relative),
                                             index=sa.index))
    if not (gains[greater] and gains[than]):
        return Result(INCONCLUSIVE, f"cells per {group}: " + ", ".join(f"{k}: {len(v)}" for k, v in gains.items()))
    mg, mt = float(np.mean(gains[greater])), float(np.mean(gains[than]))
    per_seed = pd.concat([pd.concat(seed_gains[k], axis=1).mean(axis=1, skipna=False) for k in (greater, than)], axis=1)
    test = seed_effect(per_seed, [1, -1])  # the per-seed difference of the two groups' mean gains
    kind = "G" if relative else "AUC difference"
    measured = (f"mean {kind} {greater}: {mg:+.4f} over {len(gains[greater])} cells; {than}: {mt:+.4f} over "
                f"{len(gains[than])} cells" + open_text(test))
    return judged([test], [mg - mt], measured)


def less_sensitive(data: ClaimData, *, a: Selector, b: Selector, per: Columns, along: Column,
                   low: values_of("along", Any), high: values_of("along", Any), metric: str = "train_loss",
                   x: str = "round", higher: bool = False) -> Result:
    """A suffers less than B from `along` going low -> high (FedCluster claim C16): the mean AUC of A worsens by
    less than B's, in each cell: a Test of B's worsening - A's over the paired seeds (common.seed_effect).
    Margin: B's worsening - A's, in the metric's units."""
    frame = data.auc_fin(metric, higher, x)
    holds, parts, margins = [], [], []
    for name, cell in cells_of(frame, per, named=True) if len(frame) else []:
        values = pd.concat([_seed_values(rows_matching(cell, s), along, [low, high], "auc") for s in (a, b)], axis=1)
        a_lo, a_hi, b_lo, b_hi = values.mean().to_numpy()
        if np.isnan([a_lo, a_hi, b_lo, b_hi]).any():
            continue
        da, db = (float(_gain(lo, hi, higher, relative=False)) for lo, hi in ((a_lo, a_hi), (b_lo, b_hi)))
        # db - da = (b_hi - b_lo) - (a_hi - a_lo) for a loss, its sign flipped for an accuracy
        test = seed_effect(values, [-1, 1, 1, -1] if higher else [1, -1, -1, 1])
        holds.append(test)
        margins.append(db - da)
        parts.append(f"[{name}] AUC worsens by {fmt(da)} ({fmt(a_lo)} -> {fmt(a_hi)}) vs {fmt(db)} "
                     f"({fmt(b_lo)} -> {fmt(b_hi)})" + open_text(test))
    measured = f"{tally(holds)}: " + "; ".join(parts) if parts else "no cell has both ends"
    return judged(holds, margins, measured)


def oscillation_falls(data: ClaimData, *, select: Selector, per: Columns, along: Column, metric: str = "test_accuracy",
                      x: str = "round", window: Fraction = 0.5) -> Result:
    """The curves oscillate less as `along` grows (DeFedAvg claim 12: "when n is small, there is greater
    variance ... more oscillations"): Spearman's rho of the value of `along` and the oscillation (the s.d.
    of the curve's steps over the last `window` of the x range; results.summaries.oscillation_per_seed) is
    negative in each cell. Tested on the seeds: each seed's rho over the runs, by the exact test of their sum
    (inference.spearman_sum; a t-test of 3 seeds' rho reads PASS in 5.8% of cases without a trend, measured).
    Shown: rho of the seed-mean oscillations.
    Margin: -rho of those."""
    frame = data.oscillation(metric, x, window)
    holds, parts, margins = [], [], []
    for name, cell in cells_of(rows_matching(frame, select), per, named=True) if len(frame) else []:
        runs = cell.groupby("run_id", sort=False).agg(value=(along, "first"), osc=("oscillation", "mean"))
        runs = runs.sort_values("value")
        if len(runs) < 3 or runs["osc"].isna().any():
            continue
        rho = spearman(runs["value"], runs["osc"])
        by_seed = cell.pivot_table(index="seed", columns="run_id", values="oscillation").dropna()
        test = spearman_sum([spearman(runs["value"], seed[runs.index]) for _, seed in by_seed.iterrows()], len(runs))
        holds.append(test)
        margins.append(-rho)
        parts.append(f"[{name}] Spearman {rho:+.2f} (" + ", ".join(f"{along}={v}: {fmt(o)}" for v, o in
                                                              zip(runs["value"], runs["osc"])) + ")" + open_text(test))
    measured = f"{tally(holds)}: " + "; ".join(parts) if parts else "no cell has 3 or more curves"
    return judged(holds, margins, measured)
