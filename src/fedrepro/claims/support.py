"""How solid a verdict is, and the one rule that turns a check's verdict into the ledger's verdict.

Two kinds of check (docs/claims_reference.md, "The decision rule"):

- A check in checks.TESTED tests its seeds itself (checks/inference.py): each comparison a one-sided
  paired t-test (a sign test where a seed is censored), the claim's comparisons combined so that a false
  claim reads PASS, and a true one FAIL, in at most ALPHA = 5% of cases, at 3 seeds and more, over any
  number of cells (benchmarks/calibrate_rule.py measures it). Its support is the test (kind "test"): the
  ledger shows its p-values, and no bootstrap runs.
- Any other check (a statistic over fedvr's Monte Carlo runs: compare_mc, compare_with_paper, mc_stat_within,
  series_ratio, series_trend) is qualified by
  a seeded bootstrap over the units of replication: support = the share of resamples (seeds, or Monte
  Carlo runs, drawn with replacement; the same draw for every run of the claim, claims/data.py
  ClaimData.resamples) in which the check rerun on the resample says PASS. Its verdict stands only when at
  least DECIDE = 1 - ALPHA = 95% of the resamples agree (the one-sided 95% percentile-bootstrap bound on the
  verdict's side); otherwise INCONCLUSIVE, "not decided by N seeds (support x%)". For a statistic over fedvr's
  Monte Carlo runs that no check tests on the runs (a CEP radius, a time to target: no per-run value to pair), the
  bootstrap's false PASS and false FAIL rates were measured through the ledger's own code (MEASURED;
  docs/claims_reference.md, "Calibration"): a claim of one such statistic (compare_mc, or compare_with_paper without
  bounds) whose rates lie within ALPHA plus 2.5 binomial standard errors keeps its verdict, and the ledger states the
  measured rate; any other (a rate above it, not measured, or several statistics read together) is unbacked (below).
- A statistic over fedvr's Monte Carlo runs that a check tests on the runs (checks/monte_carlo.py ON_RUNS: a
  variance by inference.spread_below, Brown-Forsythe; a mean error by the paired t-test of the runs' errors) is
  decided so (tests_runs), kind "test" as for TESTED, with its own error rate (ERROR_RATES "runs";
  docs/claims_reference.md, "Calibration"). The percentile bootstrap of a variance was measured too narrow (false
  PASS 9-10% at 20 runs): a claim that reads such a statistic without testing it (with untested statistics in one
  compare_mc, or as compare_with_paper's stat), or reads a statistic whose bootstrap is not backed (above), is
  INCONCLUSIVE whatever its support (kind "unbacked", cause `check`), its measurement shown for information.

With fewer than MIN_UNITS = 3 units there is no test and no bootstrap (the calibration starts at 3; 2
seeds give 3 distinct resamples, one of which is each seed alone). A claim's own `min_seeds` (e.g. 10
Monte Carlo runs for a variance) raises that minimum for the claim: below it, the measurement is shown
for information and the claim is INCONCLUSIVE. This is the only seed-count rule.

A check that neither can qualify (checks.NOT_RESAMPLED: a count fixed by the settings, its own binomial
test, informational, not tested), a bootstrapped check INCONCLUSIVE on the full data, and one whose
measurement is the same in every resample (e.g. f*, the same in every run) have support NA with the
reason, never a fake 100%.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import get_args

import numpy as np

from fedrepro.claims.checks import CHECKS, NOT_RESAMPLED, TESTED, UNITS, Result
from fedrepro.claims.checks.common import selected_runs
from fedrepro.claims.checks.inference import ALPHA
from fedrepro.claims.checks.monte_carlo import ON_RUNS, Series
from fedrepro.claims.data import ClaimData
from fedrepro.results.summaries import MC_STATISTICS
from fedrepro.verdicts import FAIL, INCONCLUSIVE, PASS

RESAMPLES = 200  # bootstrap resamples per set of figures (recorded in results/claims/<paper>.json)
SEED = 13  # seeds the bootstrap streams with the claim's figures (fedrepro.seeding)
DECIDE = 1 - ALPHA  # share of resamples that must agree with a bootstrapped verdict for it to stand
MIN_UNITS = 3  # fewer seeds (Monte Carlo runs) than this: no test, no bootstrap
# the error rate each kind of support states (the ledger's column error_rate)
ERROR_RATES = {
    # the t-tests' rates hold for symmetric noise (docs/claims_reference.md, "Seed noise: the shape the rates rest on")
    "test": f"<= {ALPHA:.0%} if seed noise is symmetric (paired t / sign / exact rank test; IUT, Simes)",
    "equivalence": f"<= {ALPHA:.0%} if seed noise is symmetric (TOST of paired t / sign tests; IUT, Simes)",
    "bootstrap": f"uncalibrated (bootstrap, {DECIDE:.0%} agreement)",
    "invariant": "none (the same in every resample: no sampling error)",
    "runs": f"<= {ALPHA:.0%} if run noise is symmetric (paired t / Brown-Forsythe test over Monte Carlo runs; IUT, "
            f"Simes)",
    # a claims file's seed_test "sign" (inference.seed_test): the typical seed, whatever the noise's shape
    "test_sign": f"<= {ALPHA:.0%} for any seed noise (exact sign test of the typical seed / exact rank test; IUT, "
                 f"Simes)",
    "equivalence_sign": f"<= {ALPHA:.0%} for any seed noise (TOST of exact sign tests of the typical seed; IUT, "
                        f"Simes)",
    "unbacked": f"not backed (bootstrap above {ALPHA:.0%} or not measured): no verdict",
}
SERIES_CHECKS = ("series_ratio", "series_trend")  # checks whose `series` defaults to var
TESTS_RUNS = ("; ".join(f"{check}: {', '.join(stats)}" for check, stats in ON_RUNS.items())
              + " (statistics over Monte Carlo runs tested on the runs)")  # for the ledger's record
RUN_STATS = frozenset(s for stats in ON_RUNS.values() for s in stats)  # a statistic some check tests on the runs


def _read(check: str, params: dict) -> set[str]:
    """What a Monte Carlo claim reads: its check's `stats`, `stat` or `series`."""
    return {*params.get("stats", ()), params.get("stat"),
            params.get("series", "var") if check in SERIES_CHECKS else None} - {None}


def tests_runs(check: str, params: dict) -> bool:
    """Whether a Monte Carlo claim's check tests its runs (a Test in every cell, checks/monte_carlo.py): every
    statistic it reads is one its check tests on the runs (ON_RUNS)."""
    read = _read(check, params)
    return bool(read) and read <= set(ON_RUNS.get(check, ()))


# The bootstrap's rates for a Monte Carlo statistic that no check tests on the runs, measured through the ledger's
# code (calibration_verdicts.verdict_rates of "compare_mc <stat>": one cell, fedvr's 20 runs, normal noise
# and t(3), MEASURED_CLAIMS claims per rate each; docs/claims_reference.md, "Calibration"): (false PASS, false FAIL),
# each the larger of the two noises. A statistic within LIMIT keeps its bootstrap; above it, or absent, it is unbacked.
MEASURED_CLAIMS = 100
MEASURED: dict[str, tuple[float, float]] = {"t_target": (0.01, 0.11), "cep_2d": (0.03, 0.02), "cep_full": (0.02, 0.06),
                                             "cep_cost": (0.02, 0.03), "opt_dist": (0.02, 0.01)}
LIMIT = ALPHA + 2.5 * math.sqrt(ALPHA * (1 - ALPHA) / MEASURED_CLAIMS)  # ALPHA + 2.5 binomial s.e. of a measured rate
OVER_RUNS = frozenset(MC_STATISTICS) | frozenset(get_args(Series))  # what a Monte Carlo claim reads across runs


def _measured(stat: str) -> str:
    false_pass, false_fail = MEASURED[stat]
    return f"false PASS {false_pass:.0%}, false FAIL {false_fail:.0%} at 20 runs, normal and t(3) noise"


def unbacked(check: str, params: dict) -> str:
    """Why a Monte Carlo claim's verdict cannot be backed ("" when it can): it reads statistics across runs that its
    check does not all test on the runs (tests_runs), and its bootstrap's rates are not measured within LIMIT for
    what it reads: one statistic in MEASURED, compared by compare_mc (or compare_with_paper without bounds)."""
    read = _read(check, params) & OVER_RUNS
    if not read or tests_runs(check, params):
        return ""  # tested, or nothing across runs (f*: the same in every run)
    names = ", ".join(sorted(read))
    measured = check == "compare_mc" or (check == "compare_with_paper" and params.get("within") is None
                                         and params.get("min_ratio") is None)
    if len(read) > 1:
        why = (f"{names} read together, not all tested on the runs: the bootstrap's rate is measured for one statistic "
               f"alone")
    elif not measured or names not in MEASURED:
        why = f"{names} is not tested on the runs by {check}, and its bootstrap's rates there are not measured"
    elif max(MEASURED[names]) > LIMIT:
        why = f"{names} is not tested on the runs, and its bootstrap's measured rates ({_measured(names)}) exceed {ALPHA:.0%}"
    else:
        return ""
    return f"{why} (docs/claims_reference.md, Calibration): no verdict"


def stated_rate(check: str, params: dict) -> str:
    """The error rate a backed bootstrap states: the measured rates of the one statistic a claim reads."""
    read = _read(check, params) & set(MEASURED)
    if len(read) != 1 or unbacked(check, params):
        return ""
    stat = read.pop()
    return f"<= {max(MEASURED[stat]):.0%} measured (bootstrap, {DECIDE:.0%} agreement; {_measured(stat)})"


@dataclass(frozen=True)
class Support:
    units: int  # seeds (Monte Carlo runs) of the claim's data: the fewest of any run
    unit: str  # what a unit is: "seed" or "Monte Carlo run"
    share: float = math.nan  # resamples in which the condition holds (PASS); nan: not bootstrapped
    against: float = math.nan  # resamples in which it fails (FAIL)
    margin_sd: float = math.nan  # standard deviation of the margin over the resamples
    reason: str = ""  # why there is no support ("" when there is one)
    kind: str = "bootstrap"  # or: test (TESTED), too_few (units), invariant (same in every resample),
    # none (not resampled, undecided), unbacked (a statistic whose bootstrap's rate is above ALPHA: no verdict)
    rate: str = ""  # a bootstrap's measured error rate (stated_rate), "" where it was not measured

    def units_text(self) -> str:
        return f"{self.units} {self.unit}{'' if self.units == 1 else 's'}"

    def error_rate(self, equivalence: bool = False, seed_test: str = "t") -> str:
        """The error rate the verdict's rule states ("" where there is no rule: not resampled, undecided); an
        `equivalence` claim's test is a TOST; `seed_test`: how the seeds were tested (inference.seed_test)."""
        if self.kind == "test" and self.unit == UNITS["compare_mc"]:  # a variance tested on the runs
            return ERROR_RATES["runs" if seed_test == "t" else "test_sign"]
        if self.kind == "test":
            return ERROR_RATES[("equivalence" if equivalence else "test") + ("" if seed_test == "t" else "_sign")]
        if self.rate and self.kind in ("bootstrap", "too_few"):
            return self.rate
        return ERROR_RATES.get("bootstrap" if self.kind == "too_few" else self.kind, "")


def bootstrap(check: str, data: ClaimData, params: dict, result: Result, *seed_parts: object,
              resamples: int = RESAMPLES, seed: int = SEED, measure: bool = False) -> Support:
    """The support of `check` (with `params`; `result` on the full data) from `resamples` resamples of
    `data`, the stream seeded by `seed` and `seed_parts` (the claim's figures). `measure`: bootstrap an unbacked
    claim all the same (what calibration_verdicts measures MEASURED with)."""
    units, unit = data.seeds(selected_runs(params, data.table)), UNITS[check]  # of the runs it compares
    if check in NOT_RESAMPLED:
        return Support(units, unit, reason=NOT_RESAMPLED[check], kind="none")
    if check in TESTED or tests_runs(check, params):
        return Support(units, unit, kind="test")
    if (why := unbacked(check, params)) and not measure:
        return Support(units, unit, reason=why, kind="unbacked")
    if result.status == INCONCLUSIVE:
        return Support(units, unit, reason="undecided on the full data", kind="none")
    rate = stated_rate(check, params)
    if units < MIN_UNITS:
        return Support(units, unit, reason=f"too few {unit}s for a bootstrap (needs >= {MIN_UNITS})", kind="too_few",
                       rate=rate)
    samples = data.resamples(resamples, seed, *seed_parts)
    runs = [CHECKS[check](sample, **params) for sample, _ in samples]
    weights = np.array([n for _, n in samples], dtype=float) / resamples  # each distinct resample's share
    statuses = np.array([r.status for r in runs])
    margins = np.array([r.margin for r in runs], dtype=float)
    # every number the check reports is the same in every resample (not only its verdict or margin, which
    # can be a count that all resamples share): it does not read the spread of the seeds at all
    same = all(r.status == result.status and r.measured == result.measured for r in runs)
    if same:
        return Support(units, unit, reason=f"the same in every resample: does not depend on which {unit}s are drawn",
                       kind="invariant")
    spread = math.nan
    if np.isfinite(margins).all():  # the s.d. over the `resamples` draws (ddof 1)
        mean = float(weights @ margins)
        spread = math.sqrt(float(weights @ (margins - mean) ** 2) * resamples / (resamples - 1))
    return Support(units, unit, float(weights @ (statuses == PASS)), float(weights @ (statuses == FAIL)), spread,
                   rate=rate)


def too_few_units(support: Support, min_units: int = 1) -> bool:
    """Whether the data have fewer units than the rule decides on: the claim's own minimum (`min_seeds`) for a
    verdict the same in every resample, else also MIN_UNITS; never for a check that is not resampled."""
    needed = min_units if support.kind == "invariant" else max(MIN_UNITS, min_units)
    return support.kind != "none" and support.units < needed


def decide(status: str, support: Support, min_units: int = 1) -> tuple[str, str, str]:
    """The ledger's verdict, a note on it and, where this rule makes it open, why (claims/causes.py: "seeds",
    too few units for the rule or the claim; "check", a bootstrap whose resamples do not agree enough, its error
    rate not calibrated; "" otherwise), from the check's verdict on the full data, its support and the claim's
    own minimum of units (`min_seeds`)."""
    if support.kind == "none" or (support.kind == "test" and status == INCONCLUSIVE):
        return status, "", ""  # nothing to qualify: not resampled, or undecided on the full data
    if too_few_units(support, min_units):
        shown = "" if math.isnan(support.share) else f"support {support.share:.0%}, "
        why = (f"the rule needs >= {MIN_UNITS}" if support.units < MIN_UNITS
               else f"the claim needs >= {min_units}")
        return INCONCLUSIVE, (f"not decided by {support.units_text()}: {why} ({shown}{status} on the full data, "
                              f"shown for information)"), "seeds"
    if support.kind in ("invariant", "test"):
        return status, "", ""
    if support.kind == "unbacked":
        return INCONCLUSIVE, f"not decided: {support.reason} ({status} on the full data, shown for information)", \
            "check"
    agree = support.share if status == PASS else support.against
    if agree >= DECIDE:
        return status, "", ""
    return INCONCLUSIVE, (f"not decided by {support.units_text()} (support {support.share:.0%}; {status} on the "
                          f"full data, by {agree:.0%} of the resamples)"), "check"
