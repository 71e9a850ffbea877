"""Why a claim is open or failed, as data (the ledger's `cause`), and how many seeds would decide it
(`seeds_needed`): docs/claims.md, "Why a claim is open or failed".

`cause` of a FAIL or INCONCLUSIVE row (a PASS, and a report, has none), the first that applies:

- data: judged on a synthetic stand-in for the paper's data: it needs the real dataset, whatever the stand-in
  gave (the ledger's `check_says`);
- reading: the verdict rests on a definition of ours (a reading whose source is `assumption`), it flips
  under an alternative reading that was judged (robustness `depends`), or it is a FAIL under the primary
  readings whose alternatives were not all judged at this scale;
- scale: this scale cannot show it: declared `undecided_at` this scale, or a figure not produced here;
- paper: a FAIL under every declared reading, each judged at this scale that can show it;
- seeds: the rule's test of the seeds is open and at most REACH seeds of the same effect would decide it (too
  few seeds for the rule at all, t-tests whose effects the spread hides, or a sign test whose every seed falls on
  one side, censored or tied, and that 2^-n does not yet reach: 5 such seeds would);
- check: the check cannot decide on these data whatever the number of seeds: an effect so small against its
  spread, or a sign test whose seeds settle so evenly (a censored time, a bound that does not settle, counting for
  neither side), that more than REACH seeds would be needed ("not within reach"), a metric below its floor, a check
  the decision rule does not calibrate (its bootstrap did not agree), no data to compare.

`seeds_needed` (for cause `seeds`): the smallest number of seeds at which the claim's own test, taking each
comparison's observed mean effect and seed s.d. as the truth, would decide it at the rule's alpha with 80% power
(POWER) in each comparison it needs. A one-sample t-test of n effects of mean d and s.d. s shows d > 0 at level a
with power 1 - b when the noncentral t with n - 1 degrees of freedom and noncentrality sqrt(n) d / s exceeds
t_{n-1, 1-a} with that probability (t_seeds). The n at which the observed t would only just
cross (b = 1/2, what this was before) decides in about half of such repetitions: a coin flip. A claim
combines its m comparisons, r of them required, as inference.combine does (the partial-conjunction test):
PASS needs r comparisons each shown to hold at alpha / (m - r + 1), so its n is the r-th smallest of theirs
(for `all`, the largest: every cell must hold, at alpha with no correction); FAIL needs m - r + 1 shown to
fail at alpha / r, so its n is the (m - r + 1)-th smallest (for `all`: the one cell most clearly against,
at alpha / m, Bonferroni: the rule's Simes form decides no later). A sign test whose seeds settle on a side
with share q needs the n at which the exact binomial test at a has 80% power for q (sign_seeds: 5 at 5% when every
seed did, 18 for 4 of 5; none for q <= 1/2).
A cell made of steps or conditions recurses the same way. The estimate is that of the
verdict the data point to (the smaller n of PASS and FAIL); beyond REACH seeds it is "not within reach".
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from fedrepro.claims.checks.inference import ALPHA, Test
from fedrepro.verdicts import FAIL, INCONCLUSIVE, PASS

DATA, PAPER, READING, SCALE, SEEDS, CHECK = "data", "paper", "reading", "scale", "seeds", "check"
CAUSES = {
    DATA: "needs the real dataset: judged on a synthetic stand-in",
    PAPER: "fails under every declared reading, each judged at a scale that can show it",
    READING: "depends on a reading: an assumed definition, an alternative that flips it, or one not judged",
    SCALE: "this scale cannot show it: declared undecided here, or a figure not made here",
    SEEDS: "more seeds would decide it (seeds_needed: how many)",
    CHECK: "the check cannot decide it on these data: censored, below a floor, an effect too small for 50 seeds, "
           "uncalibrated, no data",
}
REACH = 50  # more seeds than this: "not within reach"
POWER = 0.8  # the chance that seeds_needed seeds decide, the observed effect and spread taken as true
NOT_WITHIN_REACH = "not within reach"
UNKNOWN = "unknown"  # no estimate: a single seed has no spread, or the check does not test its seeds


@dataclass(frozen=True, order=True)
class Need:
    """The seeds at which a comparison (a Test) would be shown one way. `blocked`: seeds cannot show it
    (a censored seed's sign, a floor, a check without seeds); `unknown`: no spread to estimate from (one seed);
    else `n` seeds (0: already shown with certainty; REACH + 1: more than REACH; inf: never, its mean lying on
    the other side)."""
    blocked: bool
    unknown: bool
    n: float


SHOWN, NEVER, BLOCKED, NO_SPREAD = Need(False, False, 0), Need(False, False, math.inf), Need(True, False, math.inf), \
    Need(False, True, math.inf)


def t_seeds(effect: float, sd: float, level: float, limit: int = REACH) -> float:
    """The smallest n <= limit at which the one-sided t-test at `level` of n effects of mean `effect` and s.d. `sd`
    has power POWER (the noncentral t's, searched from the approximation (t_{n-1, 1-level} + t_{n-1, POWER}) x sd /
    sqrt(n) <= effect); limit + 1 where none is (more seeds than that), inf where the effect is not > 0."""
    if not effect > 0:
        return math.inf
    if sd == 0:
        return 2
    for n in range(2, limit + 1):
        if (_t_quantile(level, n - 1) + _t_quantile(1 - POWER, n - 1)) * sd / math.sqrt(n) <= effect:
            # the approximation is at most a seed short: the exact power of the noncentral t from there
            while n <= limit and stats.nct.sf(_t_quantile(level, n - 1), n - 1, effect / sd * math.sqrt(n)) < POWER:
                n += 1
            return n
    return limit + 1


@functools.lru_cache(maxsize=4096)
def sign_seeds(share: float, level: float, limit: int = REACH) -> float:
    """The smallest n <= limit at which the exact sign test at `level` shows a side on which each seed settles with
    probability `share`, with power POWER (share 1: the first n with 2^-n <= level, 5 at 5%); limit + 1 where none
    is, inf where share <= 1/2 (no number of seeds would)."""
    if not share > 0.5:
        return math.inf
    n = np.arange(1, limit + 1)
    # the fewest seeds on the side that reach level at each n: binom.sf(k - 1, n, 1/2) <= level
    k = stats.binom.isf(level, n, 0.5) + 1
    k = np.where(stats.binom.sf(k - 2, n, 0.5) <= level, k - 1, k)  # isf's discreteness: the least such k
    power = np.where(k <= n, stats.binom.sf(k - 1, n, share), 0.0)
    hit = np.nonzero(power >= POWER - 1e-12)[0]
    return float(n[hit[0]]) if len(hit) else limit + 1


@functools.lru_cache(maxsize=4096)
def _t_quantile(level: float, df: int) -> float:
    """t_{df, 1-level}: a ledger, and the calibration of the seed plan, ask for the same few many times."""
    return float(stats.t.ppf(1 - level, df))


def need(test: Test, level: float, holds: bool) -> Need:
    """The seeds at which `test` would be shown to hold (`holds`) or to fail at `level` (module docstring)."""
    if test.kind == "combined":
        m, r = len(test.parts), test.required
        if holds:
            return sorted(need(p, level / (m - r + 1), True) for p in test.parts)[r - 1]
        return sorted(need(p, level / r, False) for p in test.parts)[m - r]
    if test.kind == "t":
        if not math.isfinite(test.sd):
            return NO_SPREAD
        effect = test.mean - test.hold_above if holds else test.fail_below - test.mean
        return Need(False, False, t_seeds(effect, test.sd, level))
    p = test.p_holds if holds else test.p_against
    if p <= level:
        return SHOWN
    if test.kind == "sign" and test.n:
        # each new seed taken to settle on this side as often as the seeds so far did (all of them: 2^-n reaches
        # level at ceil(log2(1 / level)) seeds, 5 at 5%); an unsettled seed counts for neither side
        return Need(False, False, sign_seeds((test.ups if holds else test.downs) / test.n, level))
    # an outcome known without seeds
    return BLOCKED


def seeds_estimate(test: Test | None, level: float = ALPHA) -> Need:
    """The seeds that would decide the claim whose combined Test is `test` at `level` (the rule's ALPHA; the
    second look's level under the adaptive seed plan, claims/sequential.py), towards the verdict its data point
    to: the smaller of PASS's and FAIL's numbers; where neither has one, NO_SPREAD when a spread is missing,
    BLOCKED when seeds cannot show one of them, else NEVER (BLOCKED without a test)."""
    if test is None:
        return BLOCKED
    both = (need(test, level, True), need(test, level, False))
    counted = [x for x in both if not x.blocked and not x.unknown and math.isfinite(x.n)]
    if counted:
        return min(counted)
    return NO_SPREAD if any(x.unknown for x in both) else BLOCKED if any(x.blocked for x in both) else NEVER


def seeds_text(estimate: Need, have: int, at_least: int) -> str:
    """seeds_needed as the ledger writes it: a number (at least `at_least` and more than the `have` seeds the
    claim has), NOT_WITHIN_REACH beyond REACH, UNKNOWN where there is no estimate."""
    if estimate.blocked or estimate.unknown:
        return UNKNOWN
    if estimate.n > REACH:
        return NOT_WITHIN_REACH
    return str(int(max(estimate.n, have + 1, at_least)))


def not_found_at_paper_scale(reduced: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    """The claims a reduced scale's ledger PASSes that the paper scale's ledger does not: a PASS the reduced scale
    shows but the paper's settings do not find (cause `scale` in spirit: a row's own cause reads only its own
    scale's data, so the report compares the two ledgers on disk)."""
    at_paper = dict(zip(paper["claim_id"], paper["status"]))
    return [c for c, s in zip(reduced["claim_id"], reduced["status"]) if s == PASS and at_paper.get(c, PASS) != PASS]


def cause(status: str, *, reading: bool, scale: bool, rule: str, test: Test | None, level: float = ALPHA,
          stand_in: bool = False, unjudged: bool = False) -> str:
    """The cause of a FAIL or INCONCLUSIVE verdict ("" for a PASS). `stand_in`: judged on a stand-in for the
    paper's data; `reading`: it rests on an assumed definition or depends on an alternative reading; `unjudged`:
    an alternative of a reading it rests on was not judged here, so a FAIL is not yet the paper's (no alternative
    could turn a PASS or an open verdict into the paper's FAIL); `scale`: this scale cannot show it; `rule`: what the decision rule
    said when it left a verdict open (SEEDS: too few seeds for it; CHECK: a bootstrap that did not agree; "");
    `test`: the claim's combined Test, whose open comparisons say whether seeds could decide it at `level` (the
    level of seeds_needed: sequential.Look.estimate_level)."""
    if status == PASS:
        return ""
    if stand_in:
        return DATA
    if reading or (unjudged and status == FAIL):
        return READING
    if scale:
        return SCALE
    if status == FAIL:
        return PAPER
    assert status == INCONCLUSIVE, status
    if rule:
        return rule
    estimate = seeds_estimate(test, level)
    # an effect too small for REACH seeds (a plateau: fedvr C4's late/early variance 0.84 and 1.15) is no want of
    # seeds: these data show it neither way
    return CHECK if estimate.blocked or (not estimate.unknown and estimate.n > REACH) else SEEDS
