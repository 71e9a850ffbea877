"""A variance across Monte Carlo runs is tested on the runs (inference.spread_below: paired Brown-Forsythe), through
fedvr's checks (compare_mc var_final, series_ratio and series_trend of var) and the ledger, on known inputs."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fedrepro.claims.calibration_verdicts import MC_LABELS, mc_rows, stepped, two_curves
from fedrepro.claims.checks.inference import ALPHA, deviations, spread_below
from fedrepro.claims.ledger import evaluate_claims

RUNS = 20
AB = {"a": {"method": "a"}, "b": {"method": "b"}, "per": ["panel"]}


def _values(seed: int = 0, runs: int = RUNS) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((runs, 1))


def test_spread_below_is_the_paired_t_test_of_the_runs_deviations():
    a, b = _values(0), 3.0 * _values(1) + 7.0  # b: 9 times a's variance, another mean
    test = spread_below(a, b)
    dev_a, dev_b = deviations(a)[:, 0], deviations(b)[:, 0]
    assert test.p_holds == pytest.approx(stats.ttest_rel(dev_b, dev_a, alternative="greater").pvalue)
    assert test.p_holds < ALPHA < test.p_against and test.how.startswith("Brown-Forsythe t(19)")
    larger = spread_below(b, a)  # the other way round: shown to fail
    assert larger.p_against < ALPHA < larger.p_holds


def test_equal_variances_never_hold_and_the_factor_sets_the_boundary():
    a = _values(2)
    same = spread_below(a, a + 5.0)  # the same deviations: no evidence either way
    assert same.p_holds > ALPHA and same.p_against > ALPHA
    b = math.sqrt(10.0) * a  # var_b = 10 var_a, run by run
    at = spread_below(a, b, factor=0.1)  # var_a < 0.1 var_b: exactly at the boundary
    assert at.p_holds > ALPHA and at.p_against > ALPHA
    assert spread_below(a, b, factor=0.2).p_holds < ALPHA  # var_a = 0.1 var_b < 0.2 var_b
    assert spread_below(a, b, factor=0.05).p_against < ALPHA  # var_a > 0.05 var_b


def test_a_diverged_run_makes_its_variance_infinite():
    a, b = _values(3), _values(4)
    a_inf = a.copy()
    a_inf[0, 0] = np.inf
    assert spread_below(a_inf, b).outcome is False and spread_below(b, a_inf).outcome is True
    assert spread_below(a_inf, a_inf).outcome is None


def test_each_x_of_a_window_weighs_alike():
    """Over a window whose scale falls 1000-fold along x, b's larger spread at the late x decides as much as at the
    early ones: a alone at the early x's scale would hide it without the weights."""
    rng = np.random.default_rng(5)
    scale = np.array([1000.0] * 5 + [1.0] * 5)
    a = rng.standard_normal((RUNS, 10)) * scale
    b = rng.standard_normal((RUNS, 10)) * scale * np.array([1.0] * 5 + [3.0] * 5)  # 9x the variance late only
    assert spread_below(a, b).p_holds < ALPHA
    assert spread_below(a, b, same_columns=False).p_holds > ALPHA  # the early x's dominate a plain mean


def _ledger(table: pd.DataFrame, claim: dict) -> pd.Series:
    return evaluate_claims({"claims": [{"id": "X", "figures": ["f"], "min_seeds": 10, **claim}]}, {"f": table},
                           "quick", {"f": MC_LABELS}).iloc[0]


@pytest.mark.parametrize("claim", [{"check": "compare_mc", "stats": ["var_final"], **AB},
                                   {"check": "series_ratio", "series": "var", "window": [5, 20], **AB}])
def test_the_ledger_decides_a_variance_by_its_runs(claim):
    for scale_b, status in ((3.0, "PASS"), (1 / 3, "FAIL")):
        row = _ledger(pd.DataFrame(two_curves(scale_b)(RUNS, "normal", np.random.default_rng(6))), claim)
        assert row["status"] == status, row
        assert (row["p_pass"] if status == "PASS" else row["p_fail"]) < ALPHA
        assert "Brown-Forsythe" in row["error_rate"] and math.isnan(row["support"])
    a = pd.DataFrame(mc_rows("a", RUNS, 1.0, stepped(1.0, 1.0), "normal", np.random.default_rng(7)))
    b = a.assign(curve="b", method="b", run_id="b")  # a's runs again: the same spread
    row = _ledger(pd.concat([a, b], ignore_index=True), claim)
    assert row["status"] == "INCONCLUSIVE" and row["p_pass"] > ALPHA, row


def test_series_trend_tests_each_runs_two_windows():
    claim = {"check": "series_trend", "select": {"method": "a"}, "series": "var", "early": [2, 10],
             "late": [11, 20], "factor": 1.0}
    rng = np.random.default_rng(8)
    falls = pd.DataFrame(mc_rows("a", RUNS, 1.0, stepped(1.0, 0.3), "normal", rng))
    rises = pd.DataFrame(mc_rows("a", RUNS, 1.0, stepped(0.3, 1.0), "normal", rng))
    assert _ledger(falls, {**claim, "expect": "below"})["status"] == "PASS"
    assert _ledger(rises, {**claim, "expect": "below"})["status"] == "FAIL"
    assert _ledger(rises, {**claim, "expect": "above", "factor": 0.1})["status"] == "PASS"
    row = _ledger(falls, {**claim, "expect": "above", "factor": 0.01})  # late 0.09 x early >= 0.01 x
    assert row["status"] == "PASS" and row["p_pass"] < ALPHA
