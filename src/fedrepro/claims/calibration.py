"""The decision rule's error rates, measured: the project's own checks (checks.CHECKS) and its rule
(checks/common.py claim_test, inference.py) on synthetic seeds whose truth is known.

For each tested check kind (checks.TESTED) a builder makes a figure table in which every panel is one cell
of the check and the check's per-seed effect in that cell is SCALE x (effect + noise): the effect in seed
standard deviations, the noise N(0, 1) or t with 3 degrees of freedom scaled to variance 1 (heavy tails).
Calls of the check on such tables give `pool` cell Tests of one (kind, seeds, noise, effect), from which
the 1-cell rates are shares (check_rates). Each cell's Test is also compared with inference.effect_test of
the effects the cell was built with: where they agree (p_against equal, p_holds no smaller: faster's seed
share only withholds PASSes), the check tests exactly the effect, and claims over m cells are measured on
inference.effect_test of many simulated cells combined by the ledger's claim_test (claim_rates): the rate
of a 12-cell claim turns on tails near alpha / 12 that a few hundred cells from the checks cannot resolve.

- false PASS: one cell at effect 0 (the boundary of a false claim), the m - 1 others at STRONG, where they
  nearly always hold (the worst case for an intersection-union test);
- false FAIL: every cell at SMALL, a true claim with a small effect;
- power: every cell at 0.5, 1 and 2 seed SD, the share of PASS.

An equivalence kind (checks.EQUIVALENCE: |effect| < margin, inference.equivalent) has its own rates (EQUIVALENT), each
at its worst case, both at the margin's edge:
- false PASS: one cell's effect exactly at its margin (a false claim at its boundary), the margin wide (EQ_WIDE
  seed SD), so that the far side's test holds in nearly every draw and TOST's rate comes to ALPHA; the m - 1
  other cells at effect 0, where they nearly always hold;
- false FAIL: every cell's effect at its margin, the margin narrow (EQ_NARROW): the true claims nearest to
  failing, where the FAIL side is nearly a two-sided t-test at ALPHA (a wider margin, or an effect further
  inside it, fails less often);
- power: every cell at effect 0 (the two sides equal), margins of 1, 2 and 4 seed SD, the share of PASS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from fedrepro.claims.causes import seeds_estimate, seeds_text
from fedrepro.claims.checks import CHECKS, EQUIVALENCE
from fedrepro.claims.checks.common import claim_test
from fedrepro.claims.checks.inference import Test, decide, effect_test, equivalent, sign_pvalue, t_pvalues, tost
from fedrepro.claims.data import ClaimData
from fedrepro.claims.sequential import LOOKS, within_reach
from fedrepro.claims.support import MIN_UNITS
from fedrepro.verdicts import FAIL, INCONCLUSIVE, PASS
from fedrepro.vertical_time import time_win_threshold

NOISES = ("normal", "t3")  # symmetric seed noise: the shapes the rule's stated rates hold on
# skewed seed noise of mean 0 and variance 1, its long tail on the failing side ("-": the worst case of a false
# PASS, typical seeds on the holding side) or the holding side ("+": of a false FAIL): lognormal (sigma 0.5),
# exponential, and bad seeds (one seed in 10 BAD seed SD off, a method alone unstable: FedPAGE C13's log ratios)
SKEWED = ("lognormal-", "lognormal+", "exponential-", "exponential+", "bad_seeds-", "bad_seeds+")
BAD, BAD_SHARE = 5.0, 0.1
SMALL = 0.1  # the small true effect of the false-FAIL rate (the 0.1-0.3 seed SD; 0.1 is the worst)
STRONG = 10.0  # the other cells of a false claim: they hold in nearly every draw
POWER = (0.5, 1.0, 2.0)
EQ_WIDE = STRONG  # the equivalence margin of the false-PASS rate, in seed SD (its worst case: wide)
EQ_NARROW = SMALL  # the equivalence margin of the false-FAIL rate (its worst case: narrow)
EQ_POWER = (1.0, 2.0, 4.0)  # the equivalence margins of the power, at effect 0
LABELS = ["figure", "panel", "curve", "method", "run_id", "v", "Q"]
WIN = time_win_threshold(10, 10)  # the smallest time-model threshold of Q = 10 over t_comm 10 and 100
H = 1e6  # the horizon of synthetic times: never censored


def noise(rng: np.random.Generator, kind: str, size) -> np.ndarray:
    """Seed noise of mean 0 and variance 1: normal, t(3) / sqrt(3), or a SKEWED shape (its tail's side by its sign)."""
    if kind == "normal":
        return rng.standard_normal(size)
    if kind == "t3":
        return rng.standard_t(3, size) / np.sqrt(3)
    shape, side = kind[:-1], {"+": 1.0, "-": -1.0}[kind[-1]]
    if shape.startswith("lognormal"):  # "lognormal0.2-": another sigma (benchmarks/seed_skew.py matches the runs')
        sigma = float(shape[len("lognormal"):] or 0.5)
        s2 = sigma ** 2
        draws = (np.exp(sigma * rng.standard_normal(size)) - np.exp(s2 / 2)) / np.sqrt((np.exp(s2) - 1) * np.exp(s2))
    elif shape == "exponential":
        draws = rng.standard_exponential(size) - 1.0
    elif shape == "bad_seeds":
        bad = rng.random(size) < BAD_SHARE
        draws = (rng.standard_normal(size) + BAD * (bad - BAD_SHARE)) / np.sqrt(1 + BAD ** 2 * BAD_SHARE * (1 - BAD_SHARE))
    else:
        raise ValueError(f"unknown seed noise {kind!r}")
    return side * draws


def _rows(panel: str, curve: str, v: float, seed: int, xs, values, column: str = "m") -> list[dict]:
    return [{"figure": "f", "panel": panel, "curve": curve, "method": curve, "run_id": f"{panel}/{curve}/{v}",
             "v": v, "seed": seed, "x": float(x), column: float(y), "diverged": False} for x, y in zip(xs, values)]


def _flat(panel, curve, v, seed, value, column="m"):
    """A flat curve: its final, AUC and FIN are `value`."""
    return _rows(panel, curve, v, seed, (0.0, 5.0, 10.0), (value,) * 3, column)


def _reaches(panel, curve, v, seed, t):
    """Accuracy 0 until x = t, then 1: it reaches any target in (0, 1] at t, before the horizon H."""
    return _rows(panel, curve, v, seed, (0.0, t, H), (0.0, 1.0, 1.0))


def _falls_at(panel, curve, v, seed, t):
    """A loss 1 until x = t, then 0.01: its T_eps for eps in (0.01, 1) is t."""
    return _rows(panel, curve, v, seed, (0.0, t, H), (1.0, 0.01, 0.01))


@dataclass(frozen=True)
class Kind:
    """How a check kind's cell is made from per-seed effects d (check units: scale x d) and judged."""
    rows: Callable[[str, int, float], list[dict]]  # (panel, seed, scaled effect) -> rows of that seed
    params: dict
    cells: bool = True  # claims over several cells exist (gain_by_group is one comparison by construction)


KINDS: dict[str, Kind] = {
    # log10 final(b) / final(a) = e
    "compare_final": Kind(lambda p, s, e: _flat(p, "a", 0, s, 10 ** -e) + _flat(p, "b", 0, s, 1.0),
                          dict(a={"method": "a"}, b={"method": "b"}, per=["panel"], metric="m", x="x")),
    # log10 fact(b) / fact(a) = e
    "compare_fact": Kind(lambda p, s, e: _flat(p, "a", 0, s, 10 ** -e, "fact") + _flat(p, "b", 0, s, 1.0, "fact"),
                         dict(a={"method": "a"}, b={"method": "b"}, per=["panel"], column="fact")),
    # log10 T(b) / T(a) = e
    "time_to_target": Kind(lambda p, s, e: _reaches(p, "a", 0, s, 100 * 10 ** -e) + _reaches(p, "b", 0, s, 100.0),
                           dict(a={"method": "a"}, b={"method": "b"}, per=["panel"], metric="m", target=0.5,
                                higher=True, x="x")),
    # log10 T(v=2) / T(v=1) = e: the time rises along v
    "time_to_target_trend": Kind(lambda p, s, e: _reaches(p, "c", 1, s, 100.0) + _reaches(p, "c", 2, s, 100 * 10 ** e),
                                 dict(select={}, per=["panel"], along="v", order=[1, 2], metric="m", target=0.5,
                                      higher=True, increasing=True, x="x")),
    # log10 T_eps(v=0.01) / T_eps(v=0.1) = e: T never improves as v shrinks
    "monotone_time_to_target": Kind(lambda p, s, e: _falls_at(p, "c", 0.1, s, 100.0)
                                    + _falls_at(p, "c", 0.01, s, 100 * 10 ** e),
                                    dict(per=["panel"], along="v", eps=[0.1], metric="m", x="x")),
    # G = (AUC_b - AUC_a) / AUC_b = e (a loss)
    "faster": Kind(lambda p, s, e: _flat(p, "a", 0, s, 1.0 - e) + _flat(p, "b", 0, s, 1.0),
                   dict(a={"method": "a"}, b={"method": "b"}, per=["panel"], metric="m", x="x")),
    # AUC(v=1) - AUC(v=2) = e: the loss falls along v
    "ordered": Kind(lambda p, s, e: _flat(p, "c", 1, s, 1.0) + _flat(p, "c", 2, s, 1.0 - e),
                    dict(select={"method": "c"}, per=["panel"], along="v", order=[1, 2], metric="m", x="x")),
    # gap - spread = B + best - 2 worst = e: best 0.5, worst 0.6, B 0.7 + e
    "slight": Kind(lambda p, s, e: _flat(p, "c", 1, s, 0.5) + _flat(p, "c", 2, s, 0.6) + _flat(p, "B", 0, s, 0.7 + e),
                   dict(select={"method": "c"}, b={"method": "B"}, per=["panel"], along="v", order=[1, 2],
                        metric="m", x="x")),
    # B's worsening from v=1 to v=2 - A's = e
    "less_sensitive": Kind(lambda p, s, e: _flat(p, "a", 1, s, 1.0) + _flat(p, "a", 2, s, 1.0) + _flat(p, "b", 1, s, 1.0)
                           + _flat(p, "b", 2, s, 1.0 + e),
                           dict(a={"method": "a"}, b={"method": "b"}, per=["panel"], along="v", low=1, high=2,
                                metric="m", x="x")),
    # mean G in group 1 - in group 2 = e (group 2: no gain)
    "gain_by_group": Kind(lambda p, s, e: [dict(r, v=1) for r in _flat(p + "g1", "a", 1, s, 1.0 - e)
                                           + _flat(p + "g1", "b", 1, s, 1.0)]
                          + [dict(r, v=2) for r in _flat(p + "g2", "a", 2, s, 1.0) + _flat(p + "g2", "b", 2, s, 1.0)],
                          dict(a={"method": "a"}, b={"method": "b"}, per=["panel"], group="v", greater=1, than=2,
                               metric="m", x="x"), cells=False),
    # log10 first / final = e (a loss falls)
    "falls": Kind(lambda p, s, e: _rows(p, "c", 0, s, (0.0, 5.0, 10.0), (1.0, 10 ** -e, 10 ** -e)),
                  dict(select={}, metric="m", x="x")),
    # log10 (threshold x n(Q=1) / n(Q=10)) = e: Q = 10 wins in time at every t_comm
    "time_win_ratio": Kind(lambda p, s, e: [dict(r, Q=1) for r in _reaches(p, "q1", 0, s, 100.0)]
                           + [dict(r, Q=10) for r in _reaches(p, "q10", 0, s, 100 * WIN * 10 ** -e)],
                           dict(a={"Q": 10}, b={"Q": 1}, per=["panel"], metric="m", target=0.5, higher=True,
                                t_comm=[10, 100], x="x")),
    # log10 of T(b)/T(a) at v=1 over T(b)/T(a) at v=2 (there 1) = e
    "time_ratio_by_group": Kind(lambda p, s, e: [dict(r, v=1) for r in _reaches(p + "g1", "a", 1, s, 100.0)
                                                 + _reaches(p + "g1", "b", 1, s, 100 * 10 ** e)]
                                + [dict(r, v=2) for r in _reaches(p + "g2", "a", 2, s, 100.0)
                                   + _reaches(p + "g2", "b", 2, s, 100.0)],
                                dict(a={"method": "a"}, b={"method": "b"}, per=["panel"], group="v", greater=[1],
                                     than=[2], metric="m", target=0.5, higher=True, x="x"), cells=False),
}
KINDS.update({  # the equivalence kinds (checks.EQUIVALENCE): the margin a parameter, SCALE x the rate's margin
    # G = (AUC_b - AUC_a) / AUC_b = e (a loss)
    "comparable": Kind(KINDS["faster"].rows, KINDS["faster"].params),
    # log10 final(a) / final(b) = e
    "log_ratio_within": Kind(lambda p, s, e: _flat(p, "a", 0, s, 10 ** e) + _flat(p, "b", 0, s, 1.0),
                             KINDS["compare_final"].params),
    # rank_correlation has none: its effect, a seed's Spearman rho, cannot be set to a drawn value
})


@dataclass(frozen=True)
class Rate:
    """A rate: the share of claims judged `verdict` when one cell has `effect` (seed SD) and the m - 1 others
    `others` (None: `effect` too), an equivalence claim with `margin` (seed SD; None: a one-sided claim)."""
    column: str
    effect: float
    verdict: str
    margin: float | None = None
    others: float | None = None


DIRECTIONAL = (Rate("false_pass", 0.0, PASS, others=STRONG), Rate("false_fail", SMALL, FAIL),
               *(Rate(f"power_{e:g}", e, PASS) for e in POWER))
EQUIVALENT = (Rate("false_pass", EQ_WIDE, PASS, EQ_WIDE, others=0.0), Rate("false_fail", EQ_NARROW, FAIL, EQ_NARROW),
              *(Rate(f"power_m{m:g}", 0.0, PASS, m) for m in EQ_POWER))


def rates_of(kind: str) -> tuple[Rate, ...]:
    """The rates measured of a check kind: EQUIVALENT for an equivalence kind, else DIRECTIONAL."""
    return EQUIVALENT if kind in EQUIVALENCE else DIRECTIONAL


CHUNK = 25  # cells per call of a check
SCALE = 0.01  # check units per seed SD of the effect (small: losses stay positive, times finite)


def cell_tests(kind: str, seeds: int, noise_kind: str, effect: float, pool: int,
               rng: np.random.Generator, margin: float | None = None) -> tuple[list[Test], float]:
    """`pool` cell Tests of check `kind`, each cell's per-seed effect SCALE x (effect + noise), and the share
    of them that agree with inference.effect_test of those effects (p_against equal, p_holds no smaller); for an
    equivalence kind, with inference.equivalent of them within SCALE x `margin`, the check's margin."""
    spec = KINDS[kind]
    params = spec.params if margin is None else {**spec.params, EQUIVALENCE[kind]: SCALE * margin}
    effects = effect + noise(rng, noise_kind, (pool, seeds))
    tests = []
    step = CHUNK if spec.cells else 1  # checks look runs up in their whole table: chunks keep that cheap
    for start in range(0, pool, step):
        rows = [r for c in range(start, min(pool, start + step)) for s in range(seeds)
                for r in spec.rows(f"c{c:05d}", s, SCALE * effects[c, s])]  # panels in the order made
        tests += list(CHECKS[kind](ClaimData(pd.DataFrame(rows), LABELS), **params).tests)
    assert len(tests) == pool, (kind, len(tests))
    direct = [effect_test(SCALE * e) if margin is None else equivalent(SCALE * e, margin=SCALE * margin)
              for e in effects]
    agree = np.mean([abs(t.p_against - d.p_against) < 1e-9 and t.p_holds >= d.p_holds - 1e-9
                     for t, d in zip(tests, direct)])
    return tests, float(agree)


def claim_rate(tests: list[Test], cells: int, verdict: str, first: list[Test] | None = None) -> float:
    """The share of claims over `cells` cells, consecutive Tests of `tests` (the first of each from `first`,
    when given), that the rule judges `verdict`."""
    claims = len(tests) // cells
    hits = 0
    for i in range(claims):
        picked = tests[i * cells:(i + 1) * cells]
        if first is not None:
            picked = [first[i], *picked[1:]]
        hits += decide(claim_test(picked, "all", None)) == verdict
    return hits / claims


def check_rates(kinds=tuple(KINDS), seeds=(3, 5, 10), noises=NOISES, pool: int = 300,
                seed: int = 44, columns: tuple[str, ...] | None = None) -> pd.DataFrame:
    """One row per (kind, noise, seeds), through the checks: the 1-cell rates of the kind (rates_of; those named
    in `columns`, when given) and `agree`, the share of cells whose Test is inference.effect_test (equivalent) of
    their effects."""
    rng = np.random.default_rng(seed)
    rows = []
    for kind in kinds:
        for noise_kind in noises:
            for n in seeds:
                made = {r: cell_tests(kind, n, noise_kind, r.effect, pool, rng, r.margin) for r in rates_of(kind)
                        if columns is None or r.column in columns}
                row = {"kind": kind, "noise": noise_kind, "seeds": n}
                row.update({r.column: claim_rate(tests, 1, r.verdict) for r, (tests, _) in made.items()})
                row["agree"] = min(a for _, a in made.values())
                rows.append(row)
    return pd.DataFrame(rows)


def claim_rates(seeds=(3, 5, 10), cells=(1, 4, 12), noises=NOISES, claims: int = 10000,
                seed: int = 45, rates: tuple[Rate, ...] = DIRECTIONAL, seed_test: str = "t") -> pd.DataFrame:
    """One row per (noise, seeds, cells): the `rates` of claims over `cells` cells, each cell the t-test that
    inference.effect_test makes of simulated effects (what every tested check computes: check_rates' agree;
    inference.t_pvalues on many cells at once), or for an equivalence claim (EQUIVALENT) the two one-sided
    t-tests of TOST combined by inference.tost, as inference.equivalent combines them. `seed_test` "sign": each cell
    the exact sign test effect_test makes under inference.seed_test("sign") (inference.sign_pvalue), one-sided only."""
    rng = np.random.default_rng(seed)
    rows = []
    for noise_kind in noises:
        for n in seeds:
            for m in cells:
                def made(effect: float, count: int, margin: float | None) -> list[Test]:
                    d = effect + noise(rng, noise_kind, (count, n))
                    if seed_test == "sign":
                        p_holds, p_against = sign_pvalue((d > 0).sum(-1), n), sign_pvalue((d < 0).sum(-1), n)
                        return [Test(h, a) for h, a in zip(p_holds.tolist(), p_against.tolist())]
                    if margin is None:
                        p_holds, p_against, *_ = t_pvalues(d)
                        return [Test(h, a) for h, a in zip(p_holds.tolist(), p_against.tolist())]
                    (h_low, a_low, *_), (h_up, a_up, *_) = t_pvalues(d + margin), t_pvalues(margin - d)
                    return [tost(Test(*low), Test(*up)) for low, up in
                            zip(zip(h_low.tolist(), a_low.tolist()), zip(h_up.tolist(), a_up.tolist()))]
                row = {"noise": noise_kind, "seeds": n, "cells": m}
                for r in rates:
                    if r.others is None:
                        row[r.column] = claim_rate(made(r.effect, claims * m, r.margin), m, r.verdict)
                    else:  # the others first: the draws of the rates measured before equivalence kinds existed
                        others = made(r.others, claims * m, r.margin)
                        row[r.column] = claim_rate(others, m, r.verdict, first=made(r.effect, claims, r.margin))
                rows.append(row)
    return pd.DataFrame(rows)


def _t_tests(effects: np.ndarray) -> list[list[Test]]:
    """The paired t-test of each cell's per-seed effects (claims, cells, seeds), as inference.paired_t makes it
    (its p-values by inference.t_pvalues, for many cells at once), with what causes.seeds_estimate reads."""
    n = effects.shape[-1]
    p_holds, p_against, *_ = t_pvalues(effects)
    mean, sd = effects.mean(axis=-1), effects.std(axis=-1, ddof=1)
    return [[Test(h, a, kind="t", n=n, mean=mu, sd=s) for h, a, mu, s in zip(*cols)]
            for cols in zip(p_holds.tolist(), p_against.tolist(), mean.tolist(), sd.tolist())]


def two_looks(effects: np.ndarray, first: int, max_seeds: int, looks: tuple[float, float] = LOOKS
              ) -> list[tuple[str, bool]]:
    """The adaptive rule's verdict of each claim over its cells' per-seed effects (claims, cells, max_seeds), and
    whether it took a second look: the first look at the `first` seeds, each verdict at looks[0]; a claim it leaves
    open whose seeds_needed (as the ledger writes it, at looks[1]) is within reach of max_seeds
    (sequential.within_reach) is judged again on all max_seeds seeds at looks[1] (the seeds a run adds are drawn as
    if it had had them from the start: a seed's draws do not depend on its run's seed count)."""
    judged = []
    later = _t_tests(effects)
    for i, tests in enumerate(_t_tests(effects[..., :first])):
        test = claim_test(tests, "all", None)
        verdict, second = decide(test, looks[0]), False
        if verdict == INCONCLUSIVE and within_reach(
                seeds_text(seeds_estimate(test, looks[1]), first, MIN_UNITS), first, max_seeds):
            verdict, second = decide(claim_test(later[i], "all", None), looks[1]), True
        judged.append((verdict, second))
    return judged


def sequential_rates(starts=(3, 5), max_seeds: int = 10, cells=(1, 4, 12), noises=NOISES, claims: int = 10000,
                     seed: int = 48, looks: tuple[float, float] = LOOKS) -> pd.DataFrame:
    """One row per (noise, seeds at the first look, cells): the one-sided rates (DIRECTIONAL) of the adaptive rule
    (two_looks) up to `max_seeds`, and `second`, the share of claims at the power's middle effect that took a second
    look. `looks`: the levels of the two looks (another split, or a loosened rule, to compare)."""
    rng = np.random.default_rng(seed)
    rows = []
    for noise_kind in noises:
        for n in starts:
            for m in cells:
                row = {"noise": noise_kind, "seeds": n, "max_seeds": max_seeds, "cells": m}
                for r in DIRECTIONAL:
                    effects = r.effect + noise(rng, noise_kind, (claims, m, max_seeds))
                    if r.others is not None:
                        effects[:, 1:] += r.others - r.effect
                    judged = two_looks(effects, n, max_seeds, looks)
                    row[r.column] = float(np.mean([v == r.verdict for v, _ in judged]))
                    if r.column == f"power_{POWER[1]:g}":
                        row["second"] = float(np.mean([second for _, second in judged]))
                rows.append(row)
    return pd.DataFrame(rows)
