"""A mean error over Monte Carlo runs is tested on the runs (inference.mean_below, monte_carlo.mc_stat_within: the
paired t-test of the runs' own final errors), through fedvr's checks and the ledger, on known inputs."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fedrepro.claims.calibration_verdicts import MC_LABELS, mc_rows, stepped, two_curves
from fedrepro.claims.checks.inference import ALPHA, mean_below
from fedrepro.claims.ledger import evaluate_claims
from fedrepro.claims import support

RUNS = 20
AB = {"a": {"method": "a"}, "b": {"method": "b"}, "per": ["panel"]}
MEAN = {"check": "compare_mc", "stats": ["mean_err_final"], **AB}
C12 = {"check": "mc_stat_within", "select": {"method": "a"}, "stat": "rel_err_final", "high": 1e-3}


def _ledger(table: pd.DataFrame, claim: dict) -> pd.Series:
    return evaluate_claims({"claims": [{"id": "X", "figures": ["f"], "min_seeds": 10, **claim}]}, {"f": table},
                           "quick", {"f": MC_LABELS}).iloc[0]


def _pair(scale_b: float, seed: int = 1) -> pd.DataFrame:
    return pd.DataFrame(two_curves(scale_b)(RUNS, "normal", np.random.default_rng(seed)))


def _final_errors(table: pd.DataFrame, method: str) -> np.ndarray:
    last = table[(table["method"] == method) & (table["round"] == table["round"].max())]
    return last.sort_values("seed")["cost_error"].to_numpy()


def test_mean_below_is_the_paired_t_test_of_the_runs_errors():
    rng = np.random.default_rng(0)
    a, b = 1.0 + rng.random(RUNS), 2.0 + rng.random(RUNS)
    test = mean_below(a, b, factor=0.8)
    assert test.p_holds == pytest.approx(stats.ttest_1samp(0.8 * b - a, 0.0, alternative="greater").pvalue)
    assert test.p_holds < ALPHA < test.p_against
    assert mean_below(b, a).p_against < ALPHA  # the other way round: shown to fail
    same = mean_below(a, a)  # every run's effect 0: no evidence either way
    assert same.p_holds > ALPHA and same.p_against > ALPHA
    a_inf = a.copy()
    a_inf[3] = np.inf  # a diverged run: an infinite mean, certain
    assert mean_below(a_inf, b).outcome is False and mean_below(b, a_inf).outcome is True
    assert mean_below(a_inf, a_inf).outcome is None


def test_the_ledger_decides_a_mean_error_by_its_runs():
    for scale_b, status in ((1.5, "PASS"), (1 / 1.5, "FAIL")):
        table = _pair(scale_b)
        row = _ledger(table, MEAN)
        assert row["status"] == status, row
        effects = _final_errors(table, "b") - _final_errors(table, "a")
        p = stats.ttest_1samp(effects, 0.0, alternative="greater" if status == "PASS" else "less").pvalue
        assert row["p_pass" if status == "PASS" else "p_fail"] == pytest.approx(p, rel=1e-2, abs=1e-3)
        assert "over Monte Carlo runs" in row["error_rate"] and math.isnan(row["support"])
    a = pd.DataFrame(mc_rows("a", RUNS, 1.0, stepped(1.0, 1.0), "normal", np.random.default_rng(7)))
    # b: a's runs in reverse order, errors x1.25: 0.8 x mean_err(b) = mean_err(a) exactly, the runs' effects spread
    b = a.assign(curve="b", method="b", run_id="b", seed=RUNS - 1 - a["seed"], cost=1.0 + 1.25 * a["cost_error"],
                 cost_error=1.25 * a["cost_error"])
    at = _ledger(pd.concat([a, b], ignore_index=True), {**MEAN, "factor": 0.8})
    assert at["status"] == "INCONCLUSIVE" and at["p_pass"] > ALPHA and at["p_fail"] > ALPHA, at


def test_statistics_all_tested_combine_their_tests():
    """mean_err_final and var_final together: each must hold at ALPHA (the claim's p_pass is the larger p), a FAIL
    of either is shown with Bonferroni's correction for the two."""
    table = _pair(3.0)
    one = {s: _ledger(table, {**MEAN, "stats": [s]}) for s in ("mean_err_final", "var_final")}
    both = _ledger(table, {**MEAN, "stats": ["mean_err_final", "var_final"]})
    assert both["status"] == "PASS"
    assert both["p_pass"] == pytest.approx(max(r["p_pass"] for r in one.values()), rel=1e-2, abs=1e-3)
    worse = _ledger(_pair(1 / 3.0), {**MEAN, "stats": ["mean_err_final", "var_final"]})
    assert worse["status"] == "FAIL" and worse["p_fail"] < ALPHA


def test_a_bound_on_the_relative_error_is_tested_on_the_runs():
    """fedvr C12: mean_err(K) / mean_err(x0) <= 1e-3, the t-test of 1e-3 x e_r(x0) - e_r(K)."""
    rng = np.random.default_rng(2)
    for last, status in ((3e-4, "PASS"), (3e-3, "FAIL")):
        table = pd.DataFrame(mc_rows("a", RUNS, 1.0, stepped(1.0, 1.0, last), "normal", rng))
        row = _ledger(table, C12)
        assert row["status"] == status and "over Monte Carlo runs" in row["error_rate"], row
        first = table[table["round"] == 0].sort_values("seed")["cost_error"].to_numpy()
        effects = 1e-3 * first - _final_errors(table, "a")
        p = stats.ttest_1samp(effects, 0.0, alternative="greater" if status == "PASS" else "less").pvalue
        assert row["p_pass" if status == "PASS" else "p_fail"] == pytest.approx(p, rel=1e-2, abs=1e-3)
    # a diverged run: an infinite error, outside any upper bound with certainty
    table = pd.DataFrame(mc_rows("a", RUNS, 1.0, stepped(1.0, 1.0, 1e-5), "normal", rng))
    table.loc[(table["seed"] == 4) & (table["round"] >= 15), "cost"] = np.nan
    table.loc[table["seed"] == 4, "diverged"] = True
    row = _ledger(table, C12)
    assert row["status"] == "FAIL" and row["p_fail"] == 0.0, row


@pytest.mark.parametrize("check, params, tested", [
    ("compare_mc", {"stats": ["mean_err_final"]}, True),
    ("compare_mc", {"stats": ["mean_err_final", "var_final"]}, True),
    ("compare_mc", {"stats": ["var_final"]}, True),
    ("compare_mc", {"stats": ["mean_err_final", "cep_full"]}, False),
    ("compare_mc", {"stats": ["rel_err_final"]}, False),  # a ratio of two curves' ratios: not a mean over runs
    ("mc_stat_within", {"stat": "rel_err_final"}, True),
    ("mc_stat_within", {"stat": "mean_err_final"}, True),
    ("mc_stat_within", {"stat": "var_final"}, False),
    ("compare_with_paper", {"stat": "mean_err_final"}, False),
    ("series_ratio", {"series": "var"}, True),
    ("series_ratio", {"series": "mean_err"}, False),
    ("series_trend", {}, True),  # the var series by default
])
def test_which_statistics_are_tested_on_the_runs(check, params, tested):
    assert support.tests_runs(check, params) is tested
    if not tested and {"mean_err_final", "var_final"} & {*params.get("stats", ()), params.get("stat")}:
        assert support.unbacked(check, params)  # read untested: no verdict
