"""How solid a verdict is (claims/support.py): the tested checks' p-values, or for the others a seeded
bootstrap over seeds, and the rule that maps it to PASS / FAIL / INCONCLUSIVE, on data where the answer is
known."""

import math

import numpy as np
import pandas as pd
import pytest
import yaml

from fedrepro.claims.calibration_verdicts import MC_LABELS, two_curves
from fedrepro.claims.checks import Result
from fedrepro.claims.checks.common import deciding_margin
from fedrepro.claims.data import ClaimData, take_seeds
from fedrepro.claims.ledger import evaluate_claims
from fedrepro.claims.support import DECIDE, MIN_UNITS, SEED, Support, bootstrap, decide
from fedrepro.verdicts import INCONCLUSIVE

LABELS = ["figure", "panel", "curve", "method", "run_id"]
ROUNDS = np.arange(0, 11)


def _runs(**finals) -> pd.DataFrame:
    """One run per method, seed s flat at finals[method][s] (so its `final` is that value)."""
    rows = [{"figure": "f", "panel": "p", "curve": m, "method": m, "run_id": m, "seed": s, "round": r,
             "grad_norm": v, "diverged": False}
            for m, values in finals.items() for s, v in enumerate(values) for r in ROUNDS]
    return pd.DataFrame(rows)


CLAIM = {"check": "compare_final", "a": {"method": "a"}, "b": {"method": "b"}, "per": ["panel"], "metric": "grad_norm"}


def _ledger(table: pd.DataFrame, **extra) -> pd.Series:
    claim = {**CLAIM, **extra}
    if claim["check"] == "falls":
        claim = {k: v for k, v in claim.items() if k not in ("a", "b", "per")}
    claims = {"claims": [{"id": "X", "figures": ["f"], **claim}]}
    return evaluate_claims(claims, {"f": table}, "quick", {"f": LABELS}).iloc[0]


def _half_flip(good: int, seeds: int = 21) -> pd.DataFrame:
    """a beats b by 10x on `good` seeds and loses by 10x on the others; b varies a little by seed."""
    return _runs(a=[1.0] * good + [100.0] * (seeds - good), b=[10 * (1 + 0.01 * s) for s in range(seeds)])


def test_all_seeds_agree_gives_a_firm_tested_verdict():
    table = _runs(a=[1, 1.5, 1.2, 0.8, 1.1], b=[10, 12, 9, 11, 13])
    row = _ledger(table)
    assert row["status"] == "PASS" and row["p_pass"] < 1e-3 and row["p_fail"] > 0.99
    assert row["error_rate"].startswith("<= 5%") and math.isnan(row["support"])  # a test, not a bootstrap
    assert row["margin"] == pytest.approx(np.log10(11 / 1.1), rel=1e-3)  # decades: median b / median a
    swapped = _ledger(table.assign(method=table["method"].map({"a": "b", "b": "a"})))
    assert swapped["status"] == "FAIL" and swapped["p_fail"] < 1e-3 and swapped["margin"] < 0


def test_half_the_seeds_flip_gives_no_verdict():
    for good in (10, 11):  # 10 or 11 good seeds of 21: the mean log ratio is near 0
        row = _ledger(_half_flip(good))
        assert row["status"] == "INCONCLUSIVE" and row["p_pass"] > 0.05 and row["p_fail"] > 0.05
    assert _ledger(_half_flip(18))["status"] == "PASS"  # 18 of 21: firm


FALLS = {"check": "falls", "select": {"method": "a"}}  # a's loss falls below its first value: tested on its seeds


def _from_10(table: pd.DataFrame) -> pd.DataFrame:
    """Every run starting at 10 (round 0), then flat at its seed's value: it falls when that value is below 10."""
    return table.assign(grad_norm=table["grad_norm"].where(table["round"] > 0, 10.0))


def test_falls_tests_each_runs_seeds():
    row = _ledger(_from_10(_runs(a=[1, 2, 3], b=[10, 10, 10])), **FALLS)
    assert row["status"] == "PASS" and row["error_rate"].startswith("<= 5%") and row["p_pass"] < 0.05
    row = _ledger(_from_10(_half_flip(10)), **FALLS)  # a falls to 1 or rises to 100 by the seed: no verdict
    assert row["status"] == "INCONCLUSIVE" and row["p_pass"] > 0.05 and row["p_fail"] > 0.05
    diverged = _from_10(_runs(a=[1, 2, 3], b=[10, 10, 10]))
    diverged.loc[(diverged["seed"] == 0) & (diverged["method"] == "a"), "diverged"] = True
    assert _ledger(diverged, **FALLS)["status"] == "FAIL"  # a diverged seed: the run does not converge


MC = {"check": "compare_mc", "a": {"method": "a"}, "b": {"method": "b"}, "per": ["panel"], "stats": ["cep_full"]}


def _mc(scale_b: float, runs: int = 21, seed: int = 1) -> pd.DataFrame:
    """Monte Carlo runs of a (scale 1) and b (`scale_b`): a check the bootstrap qualifies (a CEP radius)."""
    return pd.DataFrame(two_curves(scale_b)(runs, "normal", np.random.default_rng(seed)))


def _mc_ledger(table: pd.DataFrame, claim: dict) -> pd.Series:
    return evaluate_claims({"claims": [{"id": "X", "figures": ["f"], **claim}]}, {"f": table}, "quick",
                           {"f": MC_LABELS}).iloc[0]


def test_bootstrap_is_deterministic_and_seeded():
    table = _mc(1.0)  # a and b alike: the CEP radii's order turns on the draw
    first, again = _mc_ledger(table, MC), _mc_ledger(table.copy(), MC)
    pd.testing.assert_series_equal(first, again)
    assert "measured (bootstrap" in first["error_rate"] and math.isnan(first["p_pass"])
    data = ClaimData(table, MC_LABELS)
    params = {k: v for k, v in MC.items() if k != "check"}
    result = __import__("fedrepro.claims.checks", fromlist=["CHECKS"]).CHECKS["compare_mc"](data, **params)
    ours = bootstrap("compare_mc", data, params, result, "f")
    assert ours.share == pytest.approx(first["support"]) and 0.05 < ours.share < 0.95
    other = bootstrap("compare_mc", ClaimData(table, MC_LABELS), params, result, "f", seed=SEED + 1)
    assert other.share != ours.share  # another stream draws other runs
    # the resamples are equal draws of runs, shared by claims on the same figures
    assert data.resamples(200, SEED, "f") is data.resamples(200, SEED, "f")
    assert sum(n for _, n in data.resamples(200, SEED, "f")) == 200


def test_a_statistic_tested_on_the_runs_is_not_decided_by_its_bootstrap():
    """A variance across runs (var_final, the var series) and a mean error are tested on the runs
    (support.tests_runs: p-values, no bootstrap), alone or together; read with a statistic that is not, untested,
    the bootstrap cannot decide it: INCONCLUSIVE, however far apart the data, with cause `check`."""
    series = {**{k: v for k, v in MC.items() if k != "stats"}, "check": "series_ratio", "window": [1, 20]}
    for claim in ({**MC, "stats": ["var_final"]}, series, {**MC, "stats": ["mean_err_final"]},
                  {**MC, "stats": ["mean_err_final", "var_final"]}):
        row = _mc_ledger(_mc(100.0), claim)
        assert row["status"] == "PASS" and row["p_pass"] < 0.05 and "over Monte Carlo runs" in row["error_rate"], row
        assert math.isnan(row["support"])
    for stats in (["cep_full", "var_final"], ["mean_err_final", "cep_full"]):
        row = _mc_ledger(_mc(100.0), {**MC, "stats": stats})
        assert row["status"] == "INCONCLUSIVE" and row["cause"] == "check", row
        tested = ({"var_final", "mean_err_final"} & set(stats)).pop()
        assert tested in row["note"] and "PASS on the full data" in row["note"]


def test_a_resample_draws_whole_seeds_with_replacement_and_renumbers_them():
    table = _runs(a=[1.0, 2.0, 3.0], b=[4.0, 5.0, 6.0])
    taken = take_seeds(table, np.array([2, 2, 0]))
    assert sorted(taken["seed"].unique()) == [0, 1, 2]
    per_seed = taken[taken["round"] == 0].set_index(["method", "seed"])["grad_norm"]
    assert per_seed[("a", 0)] == per_seed[("a", 1)] == 3.0 and per_seed[("a", 2)] == 1.0
    assert per_seed[("b", 0)] == 6.0  # the same seed drawn for every run (paired)


def test_too_few_seeds_are_said_not_decided():
    row = _ledger(_runs(a=[1, 1.5], b=[10, 12]))
    assert row["status"] == "INCONCLUSIVE" and math.isnan(row["support"])
    assert "not decided by 2 seeds: the rule needs >= 3" in row["note"] and "PASS on the full data" in row["note"]
    assert row["margin"] > 0 and row["p_pass"] < 0.05  # the measurement is still shown


def test_a_claims_min_seeds_is_the_same_rule():
    row = _ledger(_runs(a=[1, 1.5, 1.2, 0.8], b=[10, 12, 9, 11]), min_seeds=10)
    assert row["status"] == "INCONCLUSIVE" and row["p_pass"] < 0.05
    assert "not decided by 4 seeds: the claim needs >= 10" in row["note"]


def test_checks_that_a_bootstrap_cannot_qualify_have_no_support():
    table = _runs(a=[1, 1.5, 1.2], b=[10, 12, 9]).assign(clients=10, S=10)
    claims = yaml.safe_load("""
    claims:
      - {id: R, figures: [f], check: rate_within, select: {}, rate: "clients", target: "S", rel_tol: 0.01}
      - {id: N, check: not_tested, reason: "theory"}
    """)
    ledger = evaluate_claims(claims, {"f": table}, "quick", {"f": LABELS}).set_index("claim_id")
    assert ledger.loc["R", "status"] == "PASS" and math.isnan(ledger.loc["R", "support"])
    assert "support n/a: a count fixed by the run's settings" in ledger.loc["R", "note"]
    assert ledger.loc["R", "margin"] == pytest.approx(0.01)
    assert ledger.loc["N", "status"] == "INCONCLUSIVE" and math.isnan(ledger.loc["N", "support"])


def test_a_result_that_no_resample_changes_has_no_support():
    # f* is the same in every run: each resample measures what the full data does
    f_star = {"check": "mc_stat_within", "select": {"method": "a"}, "stat": "f_star", "low": 0.5, "high": 1.5}
    row = _mc_ledger(_mc(1.0), f_star)
    assert row["status"] == "PASS" and math.isnan(row["support"]) and "same in every resample" in row["note"]
    # a tested check reads seeds that agree exactly as a tie, not as certain (no run is free of its seed): the
    # sign test of the seeds, 2^-n, which 3 seeds leave open (1/8; 5 such seeds would decide) and 5 decide (1/32)
    row = _ledger(_runs(a=[1, 1, 1], b=[10, 10, 10]))
    assert row["status"] == "INCONCLUSIVE" and row["p_pass"] == 0.125 and row["seeds_needed"] == "5"
    assert "3 equal seeds, sign 3+/0-/3" in row["measured"] and row["cause"] == "seeds"
    row = _ledger(_runs(a=[1] * 5, b=[10] * 5))
    assert row["status"] == "PASS" and row["p_pass"] == pytest.approx(0.5 ** 5, abs=1e-4) and math.isnan(row["support"])
    # the verdict is the same in every resample, the values are not: a bootstrap's support, not NA
    row = _mc_ledger(_mc(100.0), MC)
    assert row["status"] == "PASS" and row["support"] == 1.0 and "measured (bootstrap" in row["error_rate"]


@pytest.mark.parametrize("status, share, against, expected", [
    ("PASS", DECIDE, 1 - DECIDE, "PASS"),
    ("PASS", DECIDE - 0.005, 1 - DECIDE + 0.005, "INCONCLUSIVE"),
    ("FAIL", 1 - DECIDE, DECIDE, "FAIL"),
    ("FAIL", 0.0, DECIDE - 0.005, "INCONCLUSIVE"),  # the others undecided: not enough FAILs
    ("FAIL", 0.6, 0.4, "INCONCLUSIVE"),
])
def test_the_rule_at_its_threshold(status, share, against, expected):
    assert decide(status, Support(20, "seed", share, against))[0] == expected


def test_the_rule_at_the_minimum_of_units():
    firm = dict(unit="seed", share=1.0, against=0.0)
    assert decide("PASS", Support(MIN_UNITS, **firm))[0] == "PASS"
    assert decide("PASS", Support(MIN_UNITS - 1, "seed", reason="too few", kind="too_few"))[0] == "INCONCLUSIVE"
    assert decide("PASS", Support(9, **firm), min_units=10)[0] == "INCONCLUSIVE"
    assert decide("PASS", Support(10, **firm), min_units=10)[0] == "PASS"
    assert decide("FAIL", Support(2, "seed", reason="informational", kind="none"))[0] == "FAIL"
    assert decide("PASS", Support(2, "seed", reason="same", kind="invariant"), min_units=3)[0] == "INCONCLUSIVE"


def test_the_deciding_margin_has_the_sign_of_the_verdict():
    margins = [0.5, -0.2, 0.1, 0.3]
    assert deciding_margin(margins, "all") == -0.2
    assert deciding_margin(margins, "fraction", 0.75) == 0.1  # 3 of 4 must hold: the 3rd best
    assert deciding_margin(margins, "most") == 0.1
    assert deciding_margin(margins, "fraction", 0.5) == 0.3
    assert math.isnan(deciding_margin([]))


def test_a_bootstrapped_monte_carlo_statistic_needs_a_measured_rate():
    """A statistic over Monte Carlo runs that no check tests on the runs keeps its bootstrap only where its measured
    rates (support.MEASURED, one statistic, compare_mc) lie within 5% plus 2.5 binomial standard errors of the
    claims measured; the ledger then states them. Above it, not measured (compare_with_paper with bounds, a series
    of mean errors), or read with other statistics: no verdict."""
    from fedrepro.claims import support
    from fedrepro.results.summaries import MC_STATISTICS

    limit = 0.05 + 2.5 * math.sqrt(0.05 * 0.95 / support.MEASURED_CLAIMS)  # written here, not read from the rule
    assert support.LIMIT == pytest.approx(limit)
    for stat in MC_STATISTICS:
        params = {"stats": [stat]}
        if support.tests_runs("compare_mc", params):
            assert stat not in support.MEASURED and not support.unbacked("compare_mc", params)
            continue
        backed = stat in support.MEASURED and max(support.MEASURED[stat]) <= limit
        assert (support.unbacked("compare_mc", params) == "") is backed, stat
        assert (support.stated_rate("compare_mc", params) != "") is backed, stat
    assert support.unbacked("compare_mc", {"stats": ["cep_full", "cep_2d"]})  # together: not measured
    assert support.unbacked("compare_with_paper", {"stat": "cep_2d", "within": 3.0, "min_ratio": 1.5})
    assert support.unbacked("series_ratio", {"series": "mean_err"})
    assert not support.unbacked("mc_stat_within", {"stat": "f_star"})  # the same in every run: nothing to back


def test_the_ledger_states_the_measured_rate_or_gives_no_verdict():
    from fedrepro.claims import support

    for stat, rates in support.MEASURED.items():
        row = _mc_ledger(_mc(100.0), {**MC, "stats": [stat], "target": 2 * 0.8 ** 8})  # a reaches it, b does not
        if max(rates) <= support.LIMIT:
            assert row["status"] == "PASS" and row["error_rate"].startswith("<= ") and "measured" in row["error_rate"]
        else:
            assert row["status"] == "INCONCLUSIVE" and row["cause"] == "check" and stat in row["note"], row
            assert "PASS on the full data" in row["note"] and row["error_rate"].startswith("not backed")


def test_a_claims_units_are_the_seeds_of_the_runs_its_selectors_match():
    # the seed plan brought the compared curves x and y to 12 seeds and left z at 4 (it reads none of z):
    # the claim is decided on 12, whatever z has; with no selector it reads every curve, so z's 4 count
    rows = [{"figure": "f", "panel": "p", "curve": m, "method": m, "run_id": m * 4, "seed": s, "round": 0, "loss": 1.0}
            for m, seeds in (("x", 12), ("y", 12), ("z", 4)) for s in range(seeds)]
    data = ClaimData(pd.DataFrame(rows), ["figure", "panel", "curve", "method", "run_id"])
    compared = {"a": {"method": "x"}, "b": {"method": "y"}, "per": ["panel"], "metric": "loss"}
    result = Result(INCONCLUSIVE, "")  # a tested check's support reads its data's units, not its result
    assert bootstrap("compare_final", data, compared, result).units == 12
    assert bootstrap("compare_final", data, {"per": ["panel"]}, result).units == 4
    assert data.seeds() == 4 and data.seeds({"xxxx"}) == 12
