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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from fedrepro.claims.checks import CHECKS, FAIL, PASS
from fedrepro.claims.checks.common import claim_test
from fedrepro.claims.checks.inference import Test, decide, effect_test, t_pvalues
from fedrepro.claims.data import ClaimData

NOISES = ("normal", "t3")
SMALL = 0.1  # the small true effect of the false-FAIL rate (the 0.1-0.3 seed SD; 0.1 is the worst)
STRONG = 10.0  # the other cells of a false claim: they hold in nearly every draw
POWER = (0.5, 1.0, 2.0)
LABELS = ["figure", "panel", "curve", "method", "run_id", "v"]
H = 1e6  # the horizon of synthetic times: never censored


def noise(rng: np.random.Generator, kind: str, size) -> np.ndarray:
    """Seed noise of variance 1: normal, or t(3) / sqrt(3)."""
    return rng.standard_normal(size) if kind == "normal" else rng.standard_t(3, size) / np.sqrt(3)


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
}
CHUNK = 25  # cells per call of a check
SCALE = 0.01  # check units per seed SD of the effect (small: losses stay positive, times finite)


def cell_tests(kind: str, seeds: int, noise_kind: str, effect: float, pool: int,
               rng: np.random.Generator) -> tuple[list[Test], float]:
    """`pool` cell Tests of check `kind`, each cell's per-seed effect SCALE x (effect + noise), and the share
    of them that agree with inference.effect_test of those effects (p_against equal, p_holds no smaller)."""
    spec = KINDS[kind]
    effects = effect + noise(rng, noise_kind, (pool, seeds))
    tests = []
    step = CHUNK if spec.cells else 1  # checks look runs up in their whole table: chunks keep that cheap
    for start in range(0, pool, step):
        rows = [r for c in range(start, min(pool, start + step)) for s in range(seeds)
                for r in spec.rows(f"c{c:05d}", s, SCALE * effects[c, s])]  # panels in the order made
        tests += list(CHECKS[kind](ClaimData(pd.DataFrame(rows), LABELS), **spec.params).tests)
    assert len(tests) == pool, (kind, len(tests))
    direct = [effect_test(SCALE * e) for e in effects]
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
                seed: int = 44) -> pd.DataFrame:
    """One row per (kind, noise, seeds), through the checks: 1-cell false_pass, false_fail, power_<effect>,
    and `agree`, the share of cells whose Test is inference.effect_test of their effects."""
    rng = np.random.default_rng(seed)
    rows = []
    for kind in kinds:
        for noise_kind in noises:
            for n in seeds:
                made = {e: cell_tests(kind, n, noise_kind, e, pool, rng) for e in (0.0, SMALL, *POWER)}
                row = {"kind": kind, "noise": noise_kind, "seeds": n,
                       "false_pass": claim_rate(made[0.0][0], 1, PASS), "false_fail": claim_rate(made[SMALL][0], 1, FAIL)}
                row.update({f"power_{e:g}": claim_rate(made[e][0], 1, PASS) for e in POWER})
                row["agree"] = min(a for _, a in made.values())
                rows.append(row)
    return pd.DataFrame(rows)


def claim_rates(seeds=(3, 5, 10), cells=(1, 4, 12), noises=NOISES, claims: int = 10000,
                seed: int = 45) -> pd.DataFrame:
    """One row per (noise, seeds, cells): the rates of claims over `cells` cells, each cell the t-test that
    inference.effect_test makes of simulated effects (what every tested check computes: check_rates' agree;
    inference.t_pvalues on many cells at once)."""
    rng = np.random.default_rng(seed)
    rows = []
    for noise_kind in noises:
        for n in seeds:
            for m in cells:
                def made(effect: float, count: int) -> list[Test]:
                    p_holds, p_against, *_ = t_pvalues(effect + noise(rng, noise_kind, (count, n)))
                    return [Test(h, a) for h, a in zip(p_holds.tolist(), p_against.tolist())]
                row = {"noise": noise_kind, "seeds": n, "cells": m,
                       "false_pass": claim_rate(made(STRONG, claims * m), m, PASS, first=made(0.0, claims)),
                       "false_fail": claim_rate(made(SMALL, claims * m), m, FAIL)}
                row.update({f"power_{e:g}": claim_rate(made(e, claims * m), m, PASS) for e in POWER})
                rows.append(row)
    return pd.DataFrame(rows)
