"""The decision rule over two looks at the seeds: the adaptive seed plan's levels and when it adds seeds
(docs/claims_reference.md, "Two looks: seeds where the claims need them").

`fixed` (the default) is the rule as it always was: one look, each verdict at ALPHA. `adaptive` looks twice.
The first look judges each claim on the seeds its figures ran, each verdict at LOOKS[0]. A claim it leaves open
for want of seeds (cause `seeds`) whose `seeds_needed`, estimated at the second look's level, is at most the
scale's `max_seeds` may be planned more seeds (claims/seed_plan.py: also within the budget of job time); the
runs it reads then get seeds up to exactly `max_seeds`, and the second look judges it on all of them, each
verdict at LOOKS[1]. Any other claim keeps its first look's verdict.

Why the levels hold each error rate at ALPHA. A false claim reads PASS when the first look passes it or the
second does, so P(false PASS) <= P(first look passes it) + P(second look passes it) (the union bound;
Bonferroni's alpha spending, the split of ALPHA over the looks summing to it). The first term is at most
LOOKS[0]: the rule at that level over n seeds. The second is at most LOOKS[1] because the second look always
has the same number of seeds, `max_seeds`, whatever the first look saw: whether a claim gets its second look
depends on its data (open, its estimate within reach, the budget, other claims), but such a choice only ever
drops second looks, and the rule at LOOKS[1] over `max_seeds` seeds errs in at most LOOKS[1] of all draws. The
same bounds FAIL. This is why the plan adds seeds up to max_seeds, not up to the estimate: a second sample
size chosen from the first look's data (sample-size re-estimation with the pooled test) can inflate the rate
of its look beyond its level (Proschan & Hunsberger 1995, Biometrics 51(4)), and the estimate from 3 seeds'
spread is too noisy to aim at anyway. The bound needs no assumption on how the looks correlate, on the noise
beyond what the one-look rule needs, or on the number of cells, and it is conservative: both looks decide
mostly the same claims, so the rates measured (benchmarks/calibrate_rule.py) lie below it (2.5-4.0% false PASS).

LOOKS spends little at the first look and most at the second, the shape of O'Brien & Fleming's (1979, Biometrics
35(3)) boundaries, here set by the union bound, not by the looks' correlation: 0.5% + 4.5%. Measured over claims of
1, 4 and 12 cells (benchmarks/calibrate_rule.py, normal noise, 3 seeds then 10), it decides more than Pocock's equal
split (2.5% + 2.5%, the rule until 2026-12): 59% of one-cell claims at 1 seed SD against 52%, 57% of 12-cell claims
at 2 SD against 42%, its error rates at most 2.6% against 3.2%. The price is the first look alone: t > t_{2, 0.995}
= 9.9 standard errors at 3 seeds (4.3 at 2.5%), so a claim the budget or max_seeds leaves with one look is rarely
decided, and more claims ask for a second (59% of those one-cell claims against 39%): the plan's budget decides how
many get it (docs/claims_reference.md, the measured rates of both).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fedrepro.claims.checks.inference import ALPHA

FIXED, ADAPTIVE = "fixed", "adaptive"
MODES = (FIXED, ADAPTIVE)  # config `seed_plan` (workflow/schemas/config.schema.yaml lists the same)
LOOKS = (ALPHA / 10, ALPHA * 9 / 10)  # the level of each verdict at the first and second look (adaptive): ALPHA spent


def level(mode: str, look: int) -> float:
    """The level of each verdict at look 1 or 2 under `mode` (fixed: ALPHA, one look)."""
    if mode == FIXED:
        if look != 1:
            raise ValueError(f"seed plan mode {FIXED!r} has one look, not look {look}")
        return ALPHA
    if mode != ADAPTIVE:
        raise ValueError(f"seed plan mode {mode!r} is not one of {', '.join(MODES)}")
    return LOOKS[look - 1]


def within_reach(seeds_needed: str, have: int, max_seeds: int) -> bool:
    """Whether a claim open for want of seeds may get its second look: its ledger's `seeds_needed` (estimated at
    the second look's level, causes.seeds_text) is a number no larger than `max_seeds`, and its runs have fewer
    than that (`have`, the fewest seeds of any run it reads)."""
    return seeds_needed.isdigit() and have < max_seeds and int(seeds_needed) <= max_seeds


@dataclass(frozen=True)
class Look:
    """Which look a ledger is (the mode, look 1 or 2, and at the second the claims planned): the level of its
    tested verdicts (`level`) and the level at which it estimates `seeds_needed` (`estimate_level`: the second
    look's under adaptive, the only look to which added seeds can go; ALPHA under fixed, the one look). A
    bootstrapped verdict (a share of resamples) has no level to split: every look keeps it as it is
    (claims/seed_plan.py never plans its claim)."""
    mode: str = FIXED
    number: int = 1
    planned: tuple[str, ...] = ()  # at the second look, the claims the plan gave seeds (claims/seed_plan.py)
    plan: str = ""  # at the second look, the sha256 of the seed_plan.json it was judged with (the audit checks it)
    # under adaptive, the scale's max_seeds: a claim whose figures' curves all have as many seeds can get none, so
    # it is judged once, at ALPHA (one_look), at either look; known from the settings before any verdict. 0: none
    max_seeds: int = 0

    def __post_init__(self) -> None:
        level(self.mode, self.number)  # a mode or look that does not exist: its one-line error here
        if (self.planned or self.plan) and self.number != 2:
            raise ValueError(f"claims {', '.join(self.planned)} planned at look {self.number}: only the second "
                             f"look judges planned claims")

    @property
    def level(self) -> float:
        return level(self.mode, self.number)

    def one_look(self, seeds: int) -> bool:
        """Whether a claim whose curves have at least `seeds` seeds each is judged in one look at ALPHA: under
        adaptive, when no seed can be added to them (max_seeds). Its level does not depend on its data, so the
        two looks' error rates hold for the claims that can get seeds, and this one keeps the one look's."""
        return self.mode == ADAPTIVE and 0 < self.max_seeds <= seeds

    @property
    def estimate_level(self) -> float:
        return ALPHA if self.mode == FIXED else level(self.mode, 2)

    def record(self) -> dict[str, Any]:
        """What the ledger's JSON record says of the look: nothing under fixed (its `rule.alpha` is the level, as
        before the seed plan), else the mode, the look and both levels."""
        if self.mode == FIXED:
            return {}
        return {"seed_plan": {"mode": self.mode, "look": self.number, "level": self.level,
                              "seeds_needed_level": self.estimate_level, "planned": list(self.planned),
                              "max_seeds": self.max_seeds,
                              **({"plan_sha256": self.plan} if self.number == 2 else {}),
                              "text": "each tested verdict decided at `level` (claims/sequential.py: the two looks "
                                      "spend alpha), seeds_needed estimated at `seeds_needed_level`; a bootstrapped "
                                      "verdict as in one look, and so a claim whose curves have max_seeds seeds "
                                      "already (at ALPHA); at look 2 the `planned` claims on every seed, the "
                                      "others as at look 1"}}
