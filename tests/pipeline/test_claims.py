"""Claim checks on known inputs: they must be able to PASS, FAIL and stay INCONCLUSIVE."""

import zlib

import pytest
import numpy as np
import pandas as pd
import yaml

from fedrepro.claims.checks.final_values import compare_final, log_ratio_within, monotone_time_to_target, participation_rate
from fedrepro.claims.data import ClaimData
from fedrepro.claims.ledger import evaluate_claims

ROUNDS = np.arange(0, 101, 10)
LABELS = ["figure", "panel", "curve", "method", "run_id", "eta_tilde"]


def _spread(run_id: str, seeds: int) -> np.ndarray:
    """Each run's own seed spread, up to 2%, drawn from a generator seeded by its id: independent noise per run, so
    that the paired log ratios of two runs differ by seed (a spread shared by both would cancel in them and tie the
    seeds, which the checks read as a sign test: 3 seeds could not decide)."""
    return np.random.default_rng(zlib.crc32(run_id.encode())).uniform(0.0, 0.02, seeds)


def _curve(method: str, eta: float, rate: float, seeds: int = 3, panel: str = "p1", diverge: bool = False,
           spread=None):
    """grad_norm exp(-rate t / 100) x (1 + spread[seed]); by default the run's own spread (_spread)."""
    spread = _spread(f"{panel}-{method}-{eta}", seeds) if spread is None else spread
    rows = []
    for seed in range(seeds):
        values = np.exp(-rate * ROUNDS / 100) * (1 + spread[seed])
        if diverge:
            values = values * np.exp(ROUNDS / 5)
        for r, v in zip(ROUNDS, values):
            rows.append({"figure": "f", "panel": panel, "curve": method, "method": method,
                         "run_id": f"{panel}-{method}-{eta}", "eta_tilde": eta, "seed": seed, "round": r,
                         "grad_norm": v, "diverged": diverge})
    return rows


def _table(*curves) -> pd.DataFrame:
    return pd.DataFrame([row for curve in curves for row in curve])


def _medians(table):
    """What the checks read: the table and its label columns (they ask for the seed medians)."""
    return ClaimData(table, LABELS)


def test_compare_final_pass_fail_and_margin():
    table = _table(_curve("fast", 0.1, 5), _curve("slow", 0.1, 1))
    curves = _medians(table)
    assert compare_final(curves, a={"method": "fast"}, b={"method": "slow"}, per=["panel"], metric="grad_norm")[0] == "PASS"
    assert compare_final(curves, a={"method": "slow"}, b={"method": "fast"}, per=["panel"], metric="grad_norm")[0] == "FAIL"
    # exp(-5) vs exp(-1): fast wins by ~55x, not by 100x
    assert compare_final(curves, a={"method": "fast"}, b={"method": "slow"}, per=["panel"], metric="grad_norm", factor=0.01)[0] == "FAIL"
    assert compare_final(curves, a={"method": "fast"}, b={"method": "absent"}, per=["panel"], metric="grad_norm")[0] == "INCONCLUSIVE"


def test_compare_final_leaves_values_its_paired_t_test_does_not_decide_open():
    kwargs = dict(a={"method": "a"}, b={"method": "b"}, per=["panel"], metric="grad_norm")
    # final exp(-1.1) vs exp(-1): a is 10% lower; seeds spread by a factor up to 3, differently per curve
    noisy = _table(_curve("a", 0.1, 1.1, spread=(0.0, 1.0, 2.0)), _curve("b", 0.1, 1.0, spread=(2.0, 0.0, 1.0)))
    result = compare_final(_medians(noisy), **kwargs)
    assert result.status == "INCONCLUSIVE" and "(open: t(2) = " in result.measured
    # the same seed effect in both curves cancels in the paired ratios: decided
    shared = _table(_curve("a", 0.1, 1.1, spread=(0.0, 1.0, 2.0)), _curve("b", 0.1, 1.0, spread=(0.0, 1.0, 2.0)))
    assert compare_final(_medians(shared), **kwargs).status == "PASS"
    # a difference well beyond the spread decides as well
    far = _table(_curve("a", 0.1, 5.0, spread=(0.0, 1.0, 2.0)), _curve("b", 0.1, 1.0, spread=(2.0, 0.0, 1.0)))
    assert compare_final(_medians(far), **kwargs).status == "PASS"


def test_a_diverged_run_never_wins():
    # a diverged seed's effect is known only by its sign: a sign test, which 5 seeds decide (1/2^5 < 5%), 3 cannot
    curves = _medians(_table(_curve("wild", 0.1, 5, seeds=5, diverge=True), _curve("slow", 0.1, 1, seeds=5)))
    assert compare_final(curves, a={"method": "wild"}, b={"method": "slow"}, per=["panel"], metric="grad_norm")[0] == "FAIL"
    assert compare_final(curves, a={"method": "slow"}, b={"method": "wild"}, per=["panel"], metric="grad_norm")[0] == "PASS"


def test_require_fraction_counts_cells():
    table = _table(_curve("a", 0.1, 5, panel="p1"), _curve("b", 0.1, 1, panel="p1"),
                   _curve("a", 0.1, 1, panel="p2"), _curve("b", 0.1, 5, panel="p2"))
    curves = _medians(table)
    kwargs = dict(a={"method": "a"}, b={"method": "b"}, per=["panel"], metric="grad_norm")
    assert compare_final(curves, **kwargs)[0] == "FAIL"
    assert compare_final(curves, **kwargs, require="fraction", fraction=0.5)[0] == "PASS"
    assert compare_final(curves, **kwargs, require="most")[0] == "FAIL"  # 1 of 2 is not most


def test_monotone_time_to_target():
    # T_0.1 on a grid of 10 rounds (40, 80, censored at 100) ties across seeds, and the last step is censored: sign
    # tests, so 6 seeds (FAIL: 2 steps x 1/2^6 < 5%, Holm)
    good = _table(_curve("m", 0.1, 6, seeds=6), _curve("m", 0.03, 3, seeds=6), _curve("m", 0.01, 1, seeds=6))
    bad = _table(_curve("m", 0.1, 1, seeds=6), _curve("m", 0.03, 3, seeds=6), _curve("m", 0.01, 6, seeds=6))
    kwargs = dict(per=["panel", "method"], along="eta_tilde", eps=[0.1], metric="grad_norm")
    assert monotone_time_to_target(_medians(good), **kwargs)[0] == "PASS"
    assert monotone_time_to_target(_medians(bad), **kwargs)[0] == "FAIL"


def test_a_series_whose_steps_fail_alone_but_not_together_says_so():
    """The probe: 5 seeds decide each step alone by its sign test (1/2^5 < 5%), but not the series of 2 once combined
    (2 x 1/2^5 > 5%, inference.combine): the ledger's note read "0 step(s) open" for a series left open."""
    bad = _table(_curve("m", 0.1, 1, seeds=5), _curve("m", 0.03, 3, seeds=5), _curve("m", 0.01, 6, seeds=5))
    result = monotone_time_to_target(_medians(bad), per=["panel", "method"], along="eta_tilde", eps=[0.1],
                                     metric="grad_norm")
    assert result.status == "INCONCLUSIVE" and "0 step(s)" not in result.measured
    assert "open: each of its 2 steps is decided alone, not the series" in result.measured


def test_log_ratio_within():
    close = _medians(_table(_curve("a", 0.1, 2.0), _curve("b", 0.1, 2.2)))
    far = _medians(_table(_curve("a", 0.1, 1.0), _curve("b", 0.1, 9.0)))
    kwargs = dict(a={"method": "a"}, b={"method": "b"}, per=["panel"], max_abs_log10=0.5, metric="grad_norm")
    assert log_ratio_within(close, **kwargs)[0] == "PASS"
    assert log_ratio_within(far, **kwargs)[0] == "FAIL"


def _participation(full_rounds: int, rounds: int = 10_001, n: int = 1000, s: int = 10, run_id: str = "r",
                   **settings) -> pd.DataFrame:
    clients = n * full_rounds + s * (rounds - full_rounds)
    return pd.DataFrame([{"run_id": run_id, "seed": 0, "method": "fedpage", "panel": "p", "curve": run_id,
                          "n_clients": n, "S": s, "p": "auto", "round": rounds, "full_rounds": full_rounds,
                          "clients": clients, **settings}])


def test_participation_rate_is_a_binomial_check():
    # p = 0.01 over 10,000 coin rounds: 100 +- 10 expected full rounds (plus round 0)
    def check(full_rounds):
        data = ClaimData(_participation(full_rounds), ["panel", "curve", "method", "run_id", "n_clients", "S", "p"])
        return participation_rate(data, select={"method": "fedpage"}, population="n_clients", sampled="S",
                                  probability="p")
    assert check(1 + 100)[0] == "PASS"
    assert check(1 + 160)[0] == "FAIL"
    assert check(1 + 40)[0] == "FAIL"


def test_participation_rate_counts_the_coins_that_paired_runs_share_once():
    # 10,000 coin rounds at p = 0.01 (100 +- 10 full rounds) per draw; 125 is 2.5 s.d. high
    labels = ["panel", "curve", "method", "run_id", "n_clients", "S", "p", "eta_tilde", "c_l", "K"]

    def check(*runs, engine="finite_sum"):
        data = ClaimData(pd.concat(runs, ignore_index=True), labels)
        return participation_rate(data, select={"method": "fedpage"}, population="n_clients", sampled="S",
                                  probability="p", engine=engine)
    # four tuning trials of one seed (only the step sizes differ): one draw of 125, within 3 s.d.
    trials = [_participation(1 + 125, run_id=f"r{i}", eta_tilde=eta, c_l=0.1, K=10)
              for i, eta in enumerate((0.1, 0.03, 0.01, 0.003))]
    paired = check(*trials)
    assert paired[0] == "PASS" and "1 distinct draws of 4 run-seeds" in paired[1]
    # read as four independent draws, 500 of 400 +- 20 would be 5 s.d. off
    assert check(*trials, engine=None)[0] == "FAIL"
    # runs that differ in another setting (K) flip coins of their own: 250 of 200 +- 14 is 3.5 s.d. off
    assert check(_participation(1 + 125, run_id="a", eta_tilde=0.1, c_l=0.1, K=10),
                 _participation(1 + 125, run_id="b", eta_tilde=0.1, c_l=0.1, K=5))[0] == "FAIL"
    # paired runs that counted different full rounds: the engine does not key its coins as assumed
    broken = check(trials[0], _participation(1 + 90, run_id="x", eta_tilde=0.5, c_l=0.1, K=10))
    assert broken[0] == "INCONCLUSIVE" and "do not key the coins" in broken[2]


def test_ledger_marks_too_few_seeds_and_missing_figures_inconclusive():
    claims = yaml.safe_load("""
    claims:
      - {id: X1, figures: [f], check: compare_final, a: {method: fast}, b: {method: slow}, per: [panel],
         metric: grad_norm, expected: "fast wins"}
      - {id: X2, figures: [f], check: compare_final, a: {method: fast}, b: {method: slow}, per: [panel], min_seeds: 5,
         metric: grad_norm}
      - {id: X3, figures: [g], check: compare_final, a: {method: fast}, b: {method: slow}, per: [panel],
         metric: grad_norm}
    """)
    table = _table(_curve("fast", 0.1, 5), _curve("slow", 0.1, 1))
    ledger = evaluate_claims(claims, {"f": table}, "quick", {"f": LABELS}).set_index("claim_id")
    assert ledger.loc["X1", "status"] == "PASS" and ledger.loc["X1", "expected"] == "fast wins"
    assert ledger.loc["X2", "status"] == "INCONCLUSIVE" and "not decided by 3 seeds: the claim needs >= 5" in ledger.loc["X2", "note"]
    assert ledger.loc["X3", "status"] == "INCONCLUSIVE" and "not produced" in ledger.loc["X3", "note"]
    assert set(ledger.columns) >= {"figure", "scale", "status", "measured", "expected", "note"}


def test_a_claim_undecided_at_a_scale_is_inconclusive_there_with_its_reason_and_its_numbers():
    claims = yaml.safe_load("""
    claims:
      - {id: X1, figures: [f], check: compare_final, a: {method: fast}, b: {method: slow}, per: [panel],
         metric: grad_norm, undecided_at: {quick: "the effect is below the quick scale's resolution"}}
    """)
    table = _table(_curve("fast", 0.1, 5), _curve("slow", 0.1, 1))
    quick = evaluate_claims(claims, {"f": table}, "quick", {"f": LABELS}).set_index("claim_id").loc["X1"]
    paper = evaluate_claims(claims, {"f": table}, "paper", {"f": LABELS}).set_index("claim_id").loc["X1"]
    assert paper["status"] == "PASS"
    assert quick["status"] == "INCONCLUSIVE" and quick["measured"] == paper["measured"]
    assert "not decided at the quick scale (the check alone says PASS): the effect is below" in quick["note"]


def test_undecided_at_names_scales_and_reasons():
    from fedrepro.claims.validation import validate_claims
    from fedrepro.errors import ConfigError

    for bad in ({"huge": "why"}, {"quick": ""}, ["quick"]):
        claims = {"claims": [{"id": "X1", "figures": ["f"], "check": "compare_final", "a": {"method": "fast"},
                              "b": {"method": "slow"}, "per": ["panel"], "metric": "grad_norm", "undecided_at": bad}]}
        with pytest.raises(ConfigError, match="undecided_at"):
            validate_claims(claims, "test")


READINGS = {
    "interrupt": {"what": "B's interruption period", "paper": "§4: 'the server can interrupt the clients'",
                  "choice": "every 5 steps", "source": "assumption"},
    "steps": {"what": "the step size", "paper": "Table II", "choice": "Table II's values", "source": "paper"},
    "local": {"what": "the local step size", "paper": "§6: 'chosen heuristically'", "choice": "0.1 x the global",
              "source": "unreported"},
}


def test_a_claim_resting_on_an_assumed_reading_is_never_pass_or_fail():
    claims = yaml.safe_load("""
    claims:
      - {id: X1, figures: [f], check: compare_final, a: {method: fast}, b: {method: slow}, per: [panel],
         metric: grad_norm, rests_on: [steps, interrupt]}
      - {id: X2, figures: [f], check: compare_final, a: {method: slow}, b: {method: fast}, per: [panel],
         metric: grad_norm, rests_on: [interrupt]}
      - {id: X3, figures: [f], check: compare_final, a: {method: fast}, b: {method: slow}, per: [panel],
         metric: grad_norm, rests_on: [steps]}
      - {id: X4, figures: [f], check: compare_final, a: {method: slow}, b: {method: fast}, per: [panel],
         metric: grad_norm, rests_on: [local]}
    """)
    table = _table(_curve("fast", 0.1, 5), _curve("slow", 0.1, 1))
    ledger = evaluate_claims(claims, {"f": table}, "quick", {"f": LABELS}, READINGS).set_index("claim_id")
    for claim, alone in (("X1", "PASS"), ("X2", "FAIL")):
        assert ledger.loc[claim, "status"] == "INCONCLUSIVE"
        assert (f"rests on an assumed definition of B's interruption period (reading interrupt): the check alone "
                f"says {alone}") in ledger.loc[claim, "note"]
    # a reading the paper itself makes leaves the verdict alone, and the ledger names it
    assert ledger.loc["X3", "status"] == "PASS" and "Rests on readings: steps (paper)" in ledger.loc["X3", "note"]
    # a value the paper ran but does not report is no definition of ours: the verdict stands, named
    assert ledger.loc["X4", "status"] == "FAIL" and "Rests on readings: local (unreported)" in ledger.loc["X4", "note"]


def test_a_claim_may_rest_only_on_readings_its_paper_declares():
    from fedrepro.claims.validation import validate_claims
    from fedrepro.errors import ConfigError

    claim = {"id": "X1", "figures": ["f"], "check": "compare_final", "a": {"method": "fast"}, "b": {"method": "slow"},
             "per": ["panel"], "metric": "grad_norm", "rests_on": ["interupt"]}
    with pytest.raises(ConfigError, match="rests_on: unknown reading 'interupt'; readings of this paper: interrupt"):
        validate_claims({"claims": [claim]}, "test", readings=READINGS)
    with pytest.raises(ConfigError, match="rests_on: a list of reading names"):
        validate_claims({"claims": [{**claim, "rests_on": "interrupt"}]}, "test", readings=READINGS)
    with pytest.raises(ConfigError, match="does not declare"):  # the ledger, too, refuses what it cannot judge
        evaluate_claims({"claims": [claim]}, {"f": _table(_curve("fast", 0.1, 5))}, "quick", {"f": LABELS}, READINGS)
