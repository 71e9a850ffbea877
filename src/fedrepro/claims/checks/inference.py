"""The decision rule: from the seeds of each comparison a claim makes to PASS / FAIL / INCONCLUSIVE, with
error rates stated in advance (docs/claims_reference.md, "The decision rule", where benchmarks/calibrate_rule.py's
measured rates are).

A comparison (a cell of a claim, a step of a series, a condition of a cell) is judged on its per-seed
*effect*: a value per seed, in the check's own units, that is > 0 on the side where the comparison holds
(a log10 ratio to the bound, a gain minus its threshold, a paired difference of two curves). It gives two
one-sided p-values (Test):

- p_holds, of the null "the mean effect is <= 0": small when the seeds show that the comparison holds;
- p_against, of the null "the mean effect is >= 0": small when they show that it fails.

Where every seed's effect is known, they come from the one-sample (paired) t-test of the effects
(scipy.stats.ttest_1samp): exact for normal seed noise, conservative for heavy-tailed symmetric noise
(t with 3 degrees of freedom, measured). Where some seed's effect is known only as an interval (a time to
target censored at the run's end, a diverged run), from the exact sign test (scipy.stats.binomtest) of the
seeds whose sign the interval settles, an unsettled seed counting for neither side: it needs 5 seeds to
reach 5% (1/2^5 = 3.1%), so with 3 it cannot decide.

A claim combines its comparisons, of which `required` of m must hold (all, most, a fraction), by the
partial-conjunction test of Benjamini & Heller (2008, Biometrics 64(4), eq. 2, Bonferroni form), valid
under any dependence between the comparisons:

- PASS when (m - required + 1) x the required-th smallest p_holds <= ALPHA. For "all" (required = m) this is
  the intersection-union test (Berger 1982): every comparison must hold at level ALPHA, no correction, so a
  claim with one comparison at zero effect reads PASS in at most ALPHA of cases whatever the others do. Over a
  claim's cells (positively dependent, as below) it is the Simes form, min over i = 1..m - required + 1 of
  (m - required + 1) / i x the (required - 1 + i)-th smallest p_holds: the same for "all", and for fewer it never
  withholds a PASS that a larger `required` gives (the Bonferroni form does: cells at p 0.03 and 0.04 hold "2 of
  2" at 0.04 but "1 of 2" only at 0.06).
- FAIL when at least m - required + 1 comparisons are shown to fail. Over the cells of a claim this is the
  partial-conjunction test in Simes's form (Benjamini & Heller 2008, eq. 3): min over i = 1..required of
  required / i x the (m - required + i)-th smallest p_against <= ALPHA. For "all" it is Simes's (1986) test of
  "every cell holds" (min_i m / i x the i-th smallest p), the global test of Hochberg's (1988) step-up
  procedure: a true claim reads FAIL in at most ALPHA of cases when the cells' p-values are independent or
  positively dependent (PRDS; Sarkar 1998, Ann. Stat. 26(2)). A claim's cells are separate runs (panels,
  settings, step sizes) or share a curve on the same side of each comparison (Q = 10, 20 and 30 each against
  Q = 1), which correlates them positively. Steps of a series (consecutive differences share a run with
  opposite signs: negatively dependent) and the two sides of TOST keep the Bonferroni form, valid under any
  dependence: required x the (m - required + 1)-th smallest p_against (for "all", m x the smallest, Holm's
  (1979) first step).
- INCONCLUSIVE otherwise.

An equivalence claim ("comparable", "nearly the same": |mean effect| < M, a margin M the claims file declares) is
the two one-sided tests (TOST; Schuirmann 1987, J. Pharmacokinet. Biopharm. 15(6)) of mean > -M and mean < M,
combined as two comparisons that must both hold (equivalent, tost): PASS when both hold at ALPHA, an
intersection-union test, so an effect exactly at the margin reads PASS in at most ALPHA of cases; FAIL when one
side is shown beyond the margin, the two sides Bonferroni-corrected (2 x the smaller p), so an effect at the
margin reads FAIL in at most ALPHA of cases too.

The same function combines the steps of a series (ordered, never_falls, `inversions` allowed) and the
conditions of a cell (faster: the gain and the final value) into the Test of the cell, so a claim's
verdict is one partial-conjunction test over Tests of Tests. A check without seeds (a count fixed by the
settings, a statistic over Monte Carlo runs that the bootstrap qualifies) gives each comparison a
certain outcome: holds Test(0, 1), fails Test(1, 0), open Test(1, 1), which the same rule reads as before:
PASS when every comparison needed holds, FAIL when too many fail.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from fedrepro.verdicts import FAIL, INCONCLUSIVE, PASS

ALPHA = 0.05  # the error rate each verdict is held to: false PASS and false FAIL, each at most this
# how effect_test judges seeds whose effects are all known: "t", the paired t-test of the mean effect (its rates hold
# for symmetric seed noise), or "sign", the exact sign test of the typical (median) seed, valid for any noise
# (a claims file's `seed_test`, for a paper whose seeds are skewed: docs/claims_reference.md, "Seed noise")
SEED_TESTS = ("t", "sign")
_SEED_TEST: ContextVar[str] = ContextVar("seed_test", default="t")


@contextmanager
def seed_test(name: str):
    """Judge the seeds inside this block by the SEED_TESTS `name` (a ledger sets its claims file's)."""
    if name not in SEED_TESTS:
        raise ValueError(f"seed_test {name!r} is not one of {', '.join(SEED_TESTS)}")
    token = _SEED_TEST.set(name)
    try:
        yield
    finally:
        _SEED_TEST.reset(token)


@dataclass(frozen=True)
class Test:
    """One comparison judged: one-sided p-values that it holds (p_holds) and that it fails (p_against),
    and how they were obtained ("t(2) = 3.1", "sign 5/5", "" for a certain outcome). What it was made of, for
    the seeds a verdict would need (claims/causes.py): `kind` "t" (a t-test of `n` per-seed effects of mean
    `mean` and s.d. `sd`, holding above `hold_above` and failing below `fail_below`), "sign" (a sign test of
    censored seeds or of seeds that tie), "certain" (no seeds: a count, a bound, or open for a
    reason seeds do not change), or "combined" (`required` of its `parts` must hold: combine)."""
    p_holds: float
    p_against: float
    how: str = ""
    kind: str = "certain"
    n: int = 0
    mean: float = math.nan
    sd: float = math.nan
    hold_above: float = 0.0
    fail_below: float = 0.0
    parts: tuple[Test, ...] = ()
    required: int = 0
    effects: tuple[float, ...] = ()  # a t-test's per-seed effects (benchmarks/seed_skew.py reads their shape)
    ups: int = 0  # a sign test's seeds settled on the holding side (and `downs` on the failing side), of `n`
    downs: int = 0

    @property
    def outcome(self) -> bool | None:
        """True (shown to hold at ALPHA), False (shown to fail), None (open): a comparison taken alone, for
        display; a claim's verdict combines the p-values (decide)."""
        return True if self.p_holds <= ALPHA else False if self.p_against <= ALPHA else None


HOLDS, FAILS, OPEN = Test(0.0, 1.0), Test(1.0, 0.0), Test(1.0, 1.0)


def certain(outcome: bool | None) -> Test:
    """A comparison whose outcome is known without seeds (or that cannot be judged: None, open)."""
    return OPEN if outcome is None else HOLDS if outcome else FAILS


def t_pvalues(effects: np.ndarray, hold_above: float = 0.0, fail_below: float = 0.0) -> tuple[np.ndarray, ...]:
    """The one-sample t-tests of rows of per-seed effects (seeds along the last axis, each known, a spread
    > 0): p_holds of mean <= hold_above, p_against of mean >= fail_below, and the t statistic of each."""
    n = effects.shape[-1]
    mean, se = effects.mean(axis=-1), effects.std(axis=-1, ddof=1) / math.sqrt(n)
    t_hold, t_fail = (mean - hold_above) / se, (mean - fail_below) / se
    return stats.t.sf(t_hold, n - 1), stats.t.cdf(t_fail, n - 1), t_hold, t_fail


def paired_t(effects, hold_above: float = 0.0, fail_below: float = 0.0) -> Test:
    """The one-sample t-test of per-seed effects, each known: p_holds of mean <= hold_above, p_against of
    mean >= fail_below (a band between them is a tolerance the claim states: inside it, neither). One seed,
    or no spread, decides nothing (effect_test reads seeds that agree exactly)."""
    d = np.asarray(effects, dtype=float)
    n = len(d)
    sd = float(d.std(ddof=1)) if n > 1 else math.nan
    stats_ = dict(kind="t", n=n, mean=float(d.mean()) if n else math.nan, sd=sd, hold_above=hold_above,
                  fail_below=fail_below, effects=tuple(d.tolist()))
    if not sd > 0 or not math.isfinite(sd):
        return Test(1.0, 1.0, "", **stats_)  # open: one seed has no spread to test against
    p_holds, p_against, t_hold, t_fail = t_pvalues(d, hold_above, fail_below)
    return Test(float(p_holds), float(p_against), f"t({n - 1}) = {t_hold:.2f}" if hold_above == fail_below
                else f"t({n - 1}) = {t_hold:.2f} / {t_fail:.2f}", **stats_)


def signs(low, high) -> Test:
    """The exact sign test of per-seed effects known as intervals [low, high] (nan: unknown): a seed counts
    for holding when its interval lies above 0, against when below, for neither otherwise; each p-value is
    the binomial tail of that count among all the seeds."""
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    n = len(low)
    if n < 1:
        return OPEN
    up, down = int(np.sum(low > 0)), int(np.sum(high < 0))
    p_holds, p_against = (float(sign_pvalue(k, n)) for k in (up, down))
    return Test(p_holds, p_against, f"sign {up}+/{down}-/{n}", kind="sign", n=n, ups=up, downs=down)


def sign_pvalue(count, n):
    """P(at least `count` of n fair coin flips land on a side), the exact sign test's one-sided p-value (1 for none);
    elementwise over arrays (benchmarks/calibrate_rule.py's many cells at once)."""
    count = np.asarray(count)
    return np.where(count > 0, stats.binom.sf(count - 1, n, 0.5), 1.0)


def spearman_sum(rhos, k: int) -> Test:
    """The exact test of a negative trend from independent seeds' Spearman rho over the same k runs (rho < 0 holds):
    under no trend each seed's ranks are a uniform permutation, so sum_s D_s (D = sum of squared rank differences
    = k(k^2 - 1)(1 - rho) / 6, an even integer without ties; ties rounded to it) has the k-fold convolution of the
    null law of D over the k! permutations, the same for any noise. p_holds = P(sum >= observed), p_against =
    P(sum <= observed). A seed whose rho is undefined (nan) is left out."""
    rhos = np.asarray(rhos, dtype=float)
    rhos = rhos[np.isfinite(rhos)]
    if not len(rhos) or k < 2:
        return OPEN
    null = _spearman_null(k)
    total = np.array([1.0])
    for _ in rhos:
        total = np.convolve(total, null)
    observed = int(np.rint(np.sum((1 - rhos) * k * (k * k - 1) / 6)))
    observed = min(max(observed, 0), len(total) - 1)
    return Test(float(min(1.0, total[observed:].sum())), float(min(1.0, total[:observed + 1].sum())),
                f"Spearman sum, {len(rhos)} seeds", kind="rank", n=len(rhos))


def _spearman_null(k: int) -> np.ndarray:
    """The law of D = sum of squared rank differences over the k! permutations of k ranks (index: D)."""
    from itertools import permutations  # k is the runs of a cell (5 in DeFedAvg C12): k! stays small
    ranks = np.arange(k)
    d = np.array([int(np.sum((ranks - np.array(p)) ** 2)) for p in permutations(ranks)])
    return np.bincount(d) / len(d)


def effect_test(low, high=None, hold_above: float = 0.0, fail_below: float = 0.0) -> Test:
    """Per-seed effects, each known exactly (high None, or equal to low, and finite) and not all equal: the paired
    t-test (under seed_test "sign", the sign test); else (a censored or diverged seed, or seeds that tie) the exact
    sign test of the intervals, a stated band (hold_above, fail_below) kept. Seeds that agree exactly are ties of a coarse grid (rounds between evaluations), not a quantity free
    of the seed: no run of the five papers is seed-independent, so n tied seeds weigh as n signs (p = 2^-n), never
    as certainty (3 tied seeds: 1/8, open)."""
    low = np.asarray(low, dtype=float)
    high = low if high is None else np.asarray(high, dtype=float)
    tied = len(low) > 1 and (low == low[0]).all() and (high == high[0]).all()
    if len(low) and not tied and np.array_equal(low, high) and np.isfinite(low).all() and _SEED_TEST.get() == "t":
        return paired_t(low, hold_above, fail_below)
    test = signs(low - hold_above, high - fail_below)
    return replace(test, how=f"{len(low)} equal seeds, {test.how}") if tied else test


def deviations(values) -> np.ndarray:
    """|value - the median over the runs| of each run (rows) in each column (Brown & Forsythe 1974): a run's
    spread, whose mean over the runs compares the scales of two sets of runs robustly (docs/claims_reference.md)."""
    values = np.asarray(values, dtype=float)
    return np.abs(values - np.median(values, axis=0))


def spread_below(a, b, factor: float = 1.0, same_columns: bool = True) -> Test:
    """The Test of var(a) < factor x var(b) from runs paired by row, a (runs, columns a) and b (runs, columns b)
    of values (a column: one x). Brown & Forsythe's (1974) test, one-sided and paired: each run's effect is
    sqrt(factor) x its mean deviation in b minus its mean deviation in a (deviations), which the t-test of
    effect_test judges (runs identical in a and b: open). With `same_columns` (a and b over the same x),
    each column is first divided by the mean deviation of both sides there, so that every x weighs alike
    however the scale moves along x; else (two windows of one curve) the deviations are averaged as they are.
    Paired by run: valid whether or not the runs of a and b share their random numbers, tighter when they do.
    A non-finite value (a diverged run) makes its side's variance infinite: certain."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    a, b = a.reshape(len(a), -1), b.reshape(len(b), -1)
    finite_a, finite_b = np.isfinite(a).all(), np.isfinite(b).all()
    if not (finite_a and finite_b):
        return certain(None if finite_a == finite_b else finite_a)
    dev_a, dev_b = deviations(a), math.sqrt(factor) * deviations(b)
    if same_columns:
        scale = (dev_a.mean(axis=0) + dev_b.mean(axis=0)) / 2
        weight = np.divide(1.0, scale, out=np.zeros_like(scale), where=scale > 0)  # no spread on either side: no say
        dev_a, dev_b = dev_a * weight, dev_b * weight
    test = effect_test(dev_b.mean(axis=1) - dev_a.mean(axis=1))
    return replace(test, how=f"Brown-Forsythe {test.how}".strip())


def mean_below(a, b, factor: float = 1.0) -> Test:
    """The Test of mean(a) < factor x mean(b) from runs paired by row (a, b: one value per run, e.g. each run's
    final error): the paired t-test of each run's factor x b - a (effect_test), which is exactly the comparison of
    the two means over the runs both have. A non-finite value (a diverged run) makes its side's mean infinite:
    certain, as spread_below."""
    a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    finite_a, finite_b = np.isfinite(a).all(), np.isfinite(b).all()
    if not (finite_a and finite_b):
        return certain(None if finite_a == finite_b else finite_a)
    return effect_test(factor * b - a)


def required_of(m: int, need: float) -> int:
    """How many of m comparisons must hold for a claim that needs the share `need` of them (1.0: all)."""
    return min(m, max(1, math.ceil(need * m - 1e-9)))


def combine(tests: list[Test], required: int | None = None, how: str = "", positive: bool = False) -> Test:
    """The Test of "at least `required` of these comparisons hold" (default: all), by the partial-conjunction
    test (module docstring): p_holds = (m - r + 1) x the r-th smallest p_holds; p_against (at least m - r + 1
    fail) = r x the (m - r + 1)-th smallest p_against; or with `positive` (p-values independent or positively
    dependent: a claim's cells) both in Simes's form, p_holds min over i <= m - r + 1 of (m - r + 1) / i x the
    (r - 1 + i)-th smallest, p_against min over i <= r of r / i x the (m - r + i)-th smallest. One comparison
    is itself. `how`: what it says it is (default "r of m")."""
    m = len(tests)
    if m == 0:
        return OPEN
    r = m if required is None else required
    holds = sorted(t.p_holds for t in tests)
    against = sorted(t.p_against for t in tests)
    if m == 1 and r == 1:
        return tests[0]
    if positive:
        n = m - r + 1
        passes = min(n / i * holds[r - 2 + i] for i in range(1, n + 1))
        fails = min(r / i * against[m - r + i - 1] for i in range(1, r + 1))
    else:
        passes, fails = (m - r + 1) * holds[r - 1], r * against[m - r]
    return Test(min(1.0, passes), min(1.0, fails), how or f"{r} of {m}",
                kind="combined", parts=tuple(tests), required=r)


def equivalent(low, high=None, margin=0.0) -> Test:
    """The Test of |mean effect| < margin (TOST, module docstring) of per-seed effects known as intervals [low,
    high] (effect_test: high None when each is known): the one-sided tests of effect + margin > 0 and margin -
    effect > 0, combined by tost. `margin`: one number, or one per seed (a margin that is itself measured on
    the seeds, paired with them)."""
    low = np.asarray(low, dtype=float)
    high = low if high is None else np.asarray(high, dtype=float)
    return tost(effect_test(low + margin, high + margin), effect_test(margin - high, margin - low),
                f"±{margin:g}" if np.ndim(margin) == 0 else "±margin")


def tost(lower: Test, upper: Test, margin: str = "") -> Test:
    """Equivalence from its two one-sided Tests, of effect > -margin (`lower`) and effect < margin (`upper`):
    PASS needs both to hold (an intersection-union test), FAIL either shown beyond the margin, 2 x the smaller
    p of failing (combine: Bonferroni over the two sides)."""
    return combine([lower, upper], how=f"TOST {margin}: {lower.how or 'open'} / {upper.how or 'open'}")


def decide(test: Test, level: float = ALPHA) -> str:
    """PASS, FAIL or INCONCLUSIVE from a claim's combined Test (combine), each verdict at `level` (ALPHA; a look
    of the adaptive seed plan spends less: claims/sequential.py)."""
    if test.p_holds <= level:
        return PASS
    return FAIL if test.p_against <= level else INCONCLUSIVE
