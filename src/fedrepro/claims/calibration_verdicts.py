"""The ledger's verdict rates, measured whole: for each check kind the claims files use whose truth is not a
per-seed effect the calibration module can build a cell of (calibration.KINDS), a synthetic claim of that kind
with a known truth is judged as the ledger judges it (claims/ledger.py Judge): the check (checks.CHECKS), its
support (support.bootstrap, the project's RESAMPLES and seed) and the rule (support.decide, the claim's
`min_seeds`). A claim is one cell, at the unit counts the claims use (fedvr: its 20 Monte Carlo runs and the
10 its claims need; seeds: 3, 5, 10), normal or t(3) noise of variance 1 (calibration.noise).

Monte Carlo kinds (fedvr, engine monte_carlo; a variance is tested on the runs, TESTED_RUNS, the others
bootstrapped): each curve's R runs, at round k = 0..K, have cost
f* + s_k sigma (2 + z) and iterate theta* + s_k sigma w (z, w: the noise, w in 5 dimensions), so every
across-run statistic (a mean error, a variance, a CEP radius, the variance series) scales with sigma, and its
population value is set by sigma and the schedule s_k alone. A claim's truth is a ratio of scales: 1 at the
boundary of a comparison of two curves; at a bound (max_ratio, factor, high), the ratio of scales whose
population statistic lies exactly on it. A rate's `effect` is the factor by which the truth lies beyond the
boundary on the claim's side (1: the boundary, a false claim at its edge; SMALL_RATIO: a true claim by a small
margin; POWER_RATIOS: the power).

oscillation_falls (DeFedAvg C12): five runs along v, each seed's oscillation exp(-effect x rank(v) + noise):
effect in seed SD per step of v, 0 at the boundary (no trend).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from fedrepro.claims import support as rule
from fedrepro.claims.calibration import NOISES, POWER, SMALL, noise
from fedrepro.claims.checks import CHECKS
from fedrepro.claims.data import ClaimData
from fedrepro.results.summaries import MC_STATISTICS
from fedrepro.verdicts import FAIL, PASS

K = 20  # rounds of a synthetic Monte Carlo run
EARLY, LATE = (2, 10), (11, 20)  # the windows of the series checks over k
SMALL_RATIO = 1.02  # a true claim's small margin: its scale 2% beyond the boundary
POWER_RATIOS = (1.25, 1.5, 2.0)
MC_LABELS = ["figure", "panel", "curve", "method", "run_id"]
D = 5  # the dimension of the iterates (fedvr's problem)


def mc_rows(curve: str, runs: int, sigma: float, schedule: np.ndarray, noise_kind: str,
            rng: np.random.Generator) -> list[dict]:
    """The rows of one Monte Carlo curve (method `curve`): `runs` runs of K + 1 rounds, scale `sigma`."""
    z = noise(rng, noise_kind, (runs, K + 1))
    w = noise(rng, noise_kind, (runs, K + 1, D))
    rows = []
    for r in range(runs):
        for k in range(K + 1):
            err = schedule[k] * sigma * (2.0 + z[r, k])
            rows.append({"figure": "f", "panel": "p", "curve": curve, "method": curve, "run_id": curve, "seed": r,
                         "round": k, "cost": 1.0 + err, "cost_error": err, "diverged": False,
                         **{f"theta_{i}": schedule[k] * sigma * w[r, k, i] for i in range(D)},
                         **{f"theta_star_{i}": 0.0 for i in range(D)}})
    return rows


FLAT = np.full(K + 1, 1.0)
DECAY = 0.8 ** np.arange(K + 1)


def two_curves(scale_b: float, schedule: np.ndarray = DECAY) -> Callable:
    """a at scale 1, b at `scale_b`, both on `schedule`."""
    return lambda runs, noise_kind, rng: (mc_rows("a", runs, 1.0, schedule, noise_kind, rng)
                                          + mc_rows("b", runs, scale_b, schedule, noise_kind, rng))


def stepped(early: float, late: float, last: float | None = None) -> np.ndarray:
    """A schedule `early` over k <= EARLY's end, `late` after (and `last` at k = K, when given)."""
    s = np.where(np.arange(K + 1) <= EARLY[1], early, late).astype(float)
    if last is not None:
        s[-1] = last
    return s


@dataclass(frozen=True)
class Verdicts:
    """A kind's claim: `make(truth, units, noise, rng)` -> rows, `truth` the factor beyond the boundary on the
    claim's side (1: the boundary); the claim's check parameters, labels and unit counts."""
    check: str
    make: Callable[[float, int, str, np.random.Generator], list[dict]]
    params: dict
    units: tuple[int, ...]
    labels: tuple[str, ...] = tuple(MC_LABELS)
    min_seeds: int = 1
    effects: tuple[float, float, tuple[float, ...]] = (1.0, SMALL_RATIO, POWER_RATIOS)  # boundary, small, power


AB = dict(a={"method": "a"}, b={"method": "b"}, per=["panel"])
MC_UNITS = (10, 20)  # fedvr: min_seeds and its Monte Carlo runs (config/papers/fedvr.yaml)


def _mc(check: str, make, **params) -> Verdicts:
    return Verdicts(check, make, params, MC_UNITS, min_seeds=10)


def _osc_rows(effect: float, seeds: int, noise_kind: str, rng: np.random.Generator) -> list[dict]:
    """Five runs along v = 1..5, each seed's curve alternating with steps of sd exp(-effect v + noise)."""
    o = np.exp(-effect * np.arange(1, 6)[:, None] + noise(rng, noise_kind, (5, seeds)))
    rows = []
    for i, v in enumerate(range(1, 6)):
        for s in range(seeds):
            rows += [{"figure": "f", "panel": "p", "curve": f"v{v}", "method": "c", "run_id": f"v{v}", "v": v,
                      "seed": s, "x": float(x), "m": o[i, s] * (x % 2), "diverged": False} for x in range(10)]
    return rows


def _pair(truth: float, runs: int, noise_kind: str, rng: np.random.Generator) -> list[dict]:
    """a at scale 1, b at `truth` (DECAY): one `make` for every compare_mc kind, so that they share their draws."""
    return two_curves(truth)(runs, noise_kind, rng)


TARGET = 2 * 0.8 ** 8  # t_target's target: the population mean error of a at k = 8

VERDICTS: dict[str, Verdicts] = {
    # fedvr's compare_mc claims, one statistic each (C1, C2, C10a, C11: mean_err_final, auc, t_target; C3a, C10b,
    # C11b: var_final; C6b, C7b: cep_full; C8: cep_2d; C9: opt_dist, mean_err_final): stat(a) < stat(b)
    **{f"compare_mc {s}": _mc("compare_mc", _pair, stats=[s], target=TARGET, **AB) for s in MC_STATISTICS},
    # fedvr C6, C7: cep_2d(a) < cep_2d(b) beside the paper's values
    "compare_with_paper": _mc("compare_with_paper", lambda t, n, q, rng: two_curves(t)(n, q, rng), stat="cep_2d",
                              paper={"a": 1.0, "b": 2.0}, **AB),
    # fedvr C6s, C7s: and cep_2d(b) / cep_2d(a) >= 1.5 (within x1000 of the paper's: never binding here)
    "compare_with_paper min_ratio": _mc("compare_with_paper", lambda t, n, q, rng: two_curves(1.5 * t)(n, q, rng),
                                        stat="cep_2d", paper={"a": 1.0, "b": 1.5}, within=1000.0, min_ratio=1.5, **AB),
    # fedvr C3b: gmean over the window of var_a / var_b <= 0.1
    "series_ratio gmean": _mc("series_ratio", lambda t, n, q, rng: two_curves(t / 0.1 ** 0.5, FLAT)(n, q, rng),
                              series="var", window=list(LATE), agg="gmean", max_ratio=0.1, x="round", **AB),
    # fedvr C10c: median over the window of var_a / var_b <= 1
    "series_ratio median": _mc("series_ratio", lambda t, n, q, rng: two_curves(t, FLAT)(n, q, rng),
                               series="var", window=list(LATE), agg="median", max_ratio=1.0, **AB),
    # fedvr C4: mean var over the late window < over the early one
    "series_trend below": _mc("series_trend", lambda t, n, q, rng: mc_rows("a", n, 1.0, stepped(1.0, 1 / t), q, rng),
                              select={"method": "a"}, series="var", early=list(EARLY), late=list(LATE),
                              expect="below", factor=1.0),
    # fedvr C5: mean var over the late window >= 0.1 x over the early one
    "series_trend above": _mc("series_trend", lambda t, n, q, rng: mc_rows("a", n, 1.0, stepped(1.0, 0.1 ** 0.5 * t),
                                                                           q, rng),
                              select={"method": "a"}, series="var", early=list(EARLY), late=list(LATE),
                              expect="above", factor=0.1),
    # fedvr C12: mean error at K / mean error at k = 0 <= 1e-3
    "mc_stat_within": _mc("mc_stat_within", lambda t, n, q, rng: mc_rows("a", n, 1.0, stepped(1.0, 1.0, 1e-3 / t),
                                                                         q, rng),
                          select={"method": "a"}, stat="rel_err_final", high=1e-3, min_rounds=K),
    # DeFedAvg C12: Spearman(v, oscillation) < 0
    "oscillation_falls": Verdicts("oscillation_falls", _osc_rows, dict(select={}, per=["panel"], along="v", metric="m",
                                                                       x="x", window=0.5),
                                  (3, 5, 10), ("figure", "panel", "curve", "method", "run_id", "v"),
                                  effects=(0.0, SMALL, POWER)),
}


# the Monte Carlo kinds whose check tests its runs (a variance: support.tests_runs); the others are bootstrapped
TESTED_RUNS = tuple(k for k, v in VERDICTS.items() if rule.tests_runs(v.check, v.params))


def verdict(spec: Verdicts, data: ClaimData) -> str:
    """The ledger's verdict on a claim of `spec` over `data` (ledger.Judge: check, support, decide), its bootstrap
    run whether or not support.MEASURED backs it (what is measured here)."""
    result = CHECKS[spec.check](data, **spec.params)
    support = rule.bootstrap(spec.check, data, spec.params, result, "f", measure=True)
    return rule.decide(result.status, support, spec.min_seeds)[0]


def verdict_rates(kinds=tuple(VERDICTS), noises=NOISES, units: tuple[int, ...] | None = None, pool: int = 200,
                  seed: int = 48, power: bool = True) -> pd.DataFrame:
    """One row per (kind, noise, units): false_pass (the truth at its boundary, PASS), false_fail (a small true
    effect, FAIL) and, with `power`, power_<effect> (PASS), each a share of `pool` claims judged as the ledger
    does. Kinds with the same data (`make`, units, labels, effects: the compare_mc kinds) judge the same draws,
    each drawn once, so that its summaries and bootstrap resamples are computed once for all of them."""
    rng = np.random.default_rng(seed)
    groups: dict[tuple, list[str]] = {}
    for name in kinds:
        spec = VERDICTS[name]
        groups.setdefault((spec.make, spec.units, spec.labels, spec.effects), []).append(name)
    rows = []
    for (make, kind_units, labels, (boundary, small, powers)), names in groups.items():
        rates = [("false_pass", boundary, PASS), ("false_fail", small, FAIL)]
        rates += [(f"power_{e:g}", e, PASS) for e in powers] if power else []
        for noise_kind in noises:
            for n in kind_units if units is None else units:
                hits = {name: {column: 0 for column, _, _ in rates} for name in names}
                for column, truth, wanted in rates:
                    for _ in range(pool):
                        data = ClaimData(pd.DataFrame(make(truth, n, noise_kind, rng)), list(labels))
                        for name in names:
                            hits[name][column] += verdict(VERDICTS[name], data) == wanted
                rows += [{"kind": name, "noise": noise_kind, "units": n,
                          **{column: count / pool for column, count in hits[name].items()}} for name in names]
    return pd.DataFrame(rows)
