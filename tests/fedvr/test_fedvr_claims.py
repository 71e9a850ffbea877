"""The Monte Carlo claim checks on known inputs: each can PASS, FAIL and stay INCONCLUSIVE."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from fedrepro.claims.checks import CHECKS
from fedrepro.claims.checks.monte_carlo import compare_mc, compare_with_paper, mc_stat_within, series_ratio, series_trend
from fedrepro.claims.data import ClaimData
from fedrepro.claims.ledger import evaluate_claims
from fedrepro.experiments.runtable import LABEL_COLUMNS
from fedrepro.results.monte_carlo import curves_of
from fedrepro.results.summaries import monte_carlo_statistics

K, R, F_STAR = 20, 6, 0.01
STAR = np.array([0.2, -0.1, 0.3])


def monte_carlo_summaries(table: pd.DataFrame, labels: list[str]) -> pd.DataFrame:
    """monte_carlo_statistics of every curve of a Monte Carlo table, as ClaimData.mc_summaries computes them."""
    return monte_carlo_statistics(curves_of(table, labels))


def circle(radius: float, center=(0.2, -0.1)) -> np.ndarray:
    """R final iterates at exactly `radius` from `center` on (θ_0, θ_1), θ_2 = θ*_2: CEP = radius."""
    angles = np.linspace(0, 2 * np.pi, R, endpoint=False)
    pts = np.column_stack([center[0] + radius * np.cos(angles), center[1] + radius * np.sin(angles),
                           np.full(R, STAR[2])])
    return pts


def costs(level: float, spread: float, decay: float = 0.0) -> np.ndarray:
    """cost (R, K+1): f* + level·exp(-decay k) + a run-dependent offset of size `spread`."""
    k = np.arange(K + 1)
    offsets = spread * np.linspace(-1, 1, R)[:, None] * np.exp(-decay * k)
    return F_STAR + level * np.exp(-0.3 * k) + level * 1e-2 + np.abs(offsets) + offsets


def curve(method: str, level: float, spread: float, radius: float, panel: str = "case 1", decay: float = 0.0,
          center=(0.2, -0.1)) -> dict:
    return {"panel": panel, "curve": method.upper(), "method": method, "cost": costs(level, spread, decay),
            "theta_final": circle(radius, center), "theta_star": STAR, "f_star": F_STAR}


@pytest.fixture
def table(mc_table):
    return mc_table(curve("ours", 0.1, 1e-5, 0.003), curve("theirs", 1.0, 1e-3, 0.006, center=(0.25, -0.1)))


def test_summaries_compute_variance_cep_and_distance_from_the_table(table):
    stats = monte_carlo_summaries(table, LABEL_COLUMNS).set_index("method")
    cost = costs(0.1, 1e-5)
    assert stats.loc["ours", "var_final"] == pytest.approx(np.var(cost[:, -1]), rel=1e-12)
    assert stats.loc["ours", "mean_err_final"] == pytest.approx(np.mean(cost[:, -1]) - F_STAR, rel=1e-12)
    assert stats.loc["ours", "cep_2d"] == pytest.approx(0.003, rel=1e-9)
    assert stats.loc["theirs", "cep_2d"] == pytest.approx(0.006, rel=1e-9)
    assert stats.loc["ours", "opt_dist"] == pytest.approx(0.0, abs=1e-12)
    assert stats.loc["theirs", "opt_dist"] == pytest.approx(0.05, rel=1e-9)
    assert stats.loc["ours", "f_star"] == pytest.approx(F_STAR, abs=1e-15)
    assert (stats["runs"] == R).all() and (stats["last_x"] == K).all()


def test_a_run_shown_in_several_figures_counts_once(table):
    twice = pd.concat([table, table.assign(figure="g")], ignore_index=True)
    pd.testing.assert_frame_equal(monte_carlo_summaries(twice, LABEL_COLUMNS), monte_carlo_summaries(table, LABEL_COLUMNS))


def test_compare_mc_pass_fail_and_every_stat_must_hold(table):
    ours, theirs = {"method": "ours"}, {"method": "theirs"}
    status, measured, *_ = compare_mc(ClaimData(table, LABEL_COLUMNS), a=ours, b=theirs, per=["panel"], stats=["mean_err_final", "var_final"])
    assert status == "PASS" and "mean_err_final: 1/1" in measured and "var_final: 1/1" in measured
    assert compare_mc(ClaimData(table, LABEL_COLUMNS), a=theirs, b=ours, per=["panel"], stats=["cep_2d"])[0] == "FAIL"
    assert compare_mc(ClaimData(table, LABEL_COLUMNS), a=ours, b=theirs, per=["panel"], stats=["cep_2d", "t_target"],
                      target=1e-9)[0] == "FAIL"  # neither reaches 1e-9: inf < inf fails
    assert compare_mc(ClaimData(table, LABEL_COLUMNS), a=ours, b={"method": "nobody"}, per=["panel"], stats=["cep_2d"])[0] == "INCONCLUSIVE"


def test_compare_with_paper_reports_paper_numbers_and_ratio(table):
    args = dict(a={"method": "ours"}, b={"method": "theirs"}, per=["panel"], stat="cep_2d",
                paper={"a": 0.0029, "b": 0.0059})
    status, measured, *_ = compare_with_paper(ClaimData(table, LABEL_COLUMNS), **args)
    assert status == "PASS"
    assert "OURS 0.003 (paper 0.0029, x1.03)" in measured and "THEIRS 0.006 (paper 0.0059, x1.02)" in measured
    assert "ratio 2 (paper 2.03)" in measured
    assert compare_with_paper(ClaimData(table, LABEL_COLUMNS), **args, within=3.0, min_ratio=1.5)[0] == "PASS"
    assert compare_with_paper(ClaimData(table, LABEL_COLUMNS), **args, min_ratio=2.5)[0] == "FAIL"
    assert compare_with_paper(ClaimData(table, LABEL_COLUMNS), **{**args, "paper": {"a": 0.0001, "b": 0.0059}}, within=3.0)[0] == "FAIL"
    assert compare_with_paper(ClaimData(table, LABEL_COLUMNS), **{**args, "a": {"method": "theirs"}, "b": {"method": "ours"}})[0] == "FAIL"


def test_series_ratio_and_trend(mc_table):
    table = mc_table(curve("ours", 0.1, 1e-5, 0.003, decay=0.1), curve("theirs", 1.0, 1e-3, 0.006, decay=-0.01))
    ours, theirs = {"method": "ours"}, {"method": "theirs"}
    status, measured, *_ = series_ratio(ClaimData(table, LABEL_COLUMNS), a=ours, b=theirs, per=["panel"], window=[2, 20], max_ratio=0.1)
    assert status == "PASS" and "gmean var ratio" in measured
    assert series_ratio(ClaimData(table, LABEL_COLUMNS), a=theirs, b=ours, per=["panel"], window=[2, 20], agg="median")[0] == "FAIL"
    assert series_ratio(ClaimData(table, LABEL_COLUMNS), a=ours, b=theirs, per=["panel"], window=[50, 100])[0] == "INCONCLUSIVE"

    trend = dict(early=[1, 5], late=[15, 20])
    assert series_trend(ClaimData(table, LABEL_COLUMNS), select=ours, **trend)[0] == "PASS"  # decaying spread
    assert series_trend(ClaimData(table, LABEL_COLUMNS), select=theirs, **trend)[0] == "FAIL"  # slowly growing: not below
    assert series_trend(ClaimData(table, LABEL_COLUMNS), select=theirs, expect="above", factor=0.1, **trend)[0] == "PASS"
    assert series_trend(ClaimData(table, LABEL_COLUMNS), select=ours, expect="above", factor=0.1, **trend)[0] == "FAIL"
    assert series_trend(ClaimData(table, LABEL_COLUMNS), select=ours, early=[11, 30], late=[81, 100])[0] == "INCONCLUSIVE"


def test_mc_stat_within_bounds_and_min_rounds(table):
    assert mc_stat_within(ClaimData(table, LABEL_COLUMNS), select={"method": "ours"}, stat="f_star", low=0.008, high=0.012)[0] == "PASS"
    assert mc_stat_within(ClaimData(table, LABEL_COLUMNS), select={}, stat="rel_err_final", high=1e-3)[0] == "FAIL"
    status, _, note, *_ = mc_stat_within(ClaimData(table, LABEL_COLUMNS), select={}, stat="rel_err_final", high=1.0, min_rounds=100)
    assert status == "INCONCLUSIVE" and "only 20 rounds" in note


def test_a_diverged_run_loses_every_comparison(mc_table):
    bad = curve("ours", 0.1, 1e-5, 0.003)
    bad["cost"] = bad["cost"].copy()
    bad["cost"][2, 5:] = np.nan
    table = mc_table(bad, curve("theirs", 1.0, 1e-3, 0.006))
    assert compare_mc(ClaimData(table, LABEL_COLUMNS), a={"method": "ours"}, b={"method": "theirs"}, per=["panel"],
                      stats=["mean_err_final"])[0] == "FAIL"


def test_ledger_runs_the_new_checks_and_gates_on_runs(table):
    assert {"compare_mc", "compare_with_paper", "series_ratio", "series_trend", "mc_stat_within"} <= set(CHECKS)
    claims = yaml.safe_load("""
    claims:
      - {id: A, figures: [f], check: compare_mc, a: {method: ours}, b: {method: theirs}, per: [panel], stats: [var_final]}
      - {id: B, figures: [f], check: compare_mc, a: {method: ours}, b: {method: theirs}, per: [panel], stats: [var_final],
         min_seeds: 20}
      - {id: C, figures: [f], check: compare_with_paper, a: {method: ours}, b: {method: theirs}, per: [panel],
         stat: cep_2d, paper: {a: 0.0029, b: 0.0059}}
    """)
    ledger = evaluate_claims(claims, {"f": table}, "smoke", {"f": LABEL_COLUMNS}).set_index("claim_id")
    assert list(ledger["status"]) == ["PASS", "INCONCLUSIVE", "PASS"]
    assert "not decided by 6 Monte Carlo runs" in ledger.loc["B", "note"] and "paper 0.0029" in ledger.loc["C", "measured"]
    # a variance is tested on the runs (paired Brown-Forsythe), not bootstrapped: ours' is 1e4 x smaller
    assert ledger.loc["A", "p_pass"] < 0.05 and np.isnan(ledger.loc["A", "support"]) and ledger.loc["A", "margin"] > 3


def test_a_resample_of_monte_carlo_runs_takes_whole_runs(table):
    (labels, runs), = [c for c in ClaimData(table, LABEL_COLUMNS).mc_curves("round") if c[0]["method"] == "ours"]
    taken = runs.take(np.array([5, 5, 0, 9]))  # run 9 does not exist: left out
    assert taken.n_runs == 3 and list(taken.seeds) == [0, 1, 2]
    np.testing.assert_array_equal(taken.cost, runs.cost[[5, 5, 0]])
    np.testing.assert_array_equal(taken.theta_final, runs.theta_final[[5, 5, 0]])
