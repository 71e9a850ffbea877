"""Equivalence claims ("comparable", "nearly the same": |effect| < a declared margin) on known inputs: the TOST of
inference.equivalent, the checks that make it (checks.EQUIVALENCE) over one and several cells, and the ledger row
that shows the margin."""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fedrepro.claims.calibration import KINDS, LABELS, SCALE
from fedrepro.claims.checks import CHECKS, EQUIVALENCE, TESTED
from fedrepro.claims.checks.inference import ALPHA, combine, decide, effect_test, equivalent
from fedrepro.claims.data import ClaimData
from fedrepro.claims.ledger import evaluate_claims, ledger_summary
from fedrepro.claims.table import ledger_html
from fedrepro.utils.yaml_file import read_yaml

REPO = Path(__file__).resolve().parents[2]

INSIDE = np.array([0.02, -0.03, 0.01, 0.04, -0.02])  # mean 0.004, sd 0.03: well inside a margin of 0.1


def test_tost_is_the_two_one_sided_t_tests():
    test = equivalent(INSIDE, margin=0.1)
    above = stats.ttest_1samp(INSIDE, -0.1, alternative="greater").pvalue
    below = stats.ttest_1samp(INSIDE, 0.1, alternative="less").pvalue
    assert test.p_holds == pytest.approx(max(above, below))  # both sides must hold: no correction
    assert decide(test) == "PASS" and test.how.startswith("TOST ±0.1: t(4)")
    assert test == combine([effect_test(INSIDE + 0.1), effect_test(0.1 - INSIDE)], how=test.how)
    beyond = INSIDE + 0.3  # mean 0.304: shown above the margin
    test = equivalent(beyond, margin=0.1)
    assert test.p_against == pytest.approx(2 * stats.ttest_1samp(beyond, 0.1, alternative="greater").pvalue)
    assert decide(test) == "FAIL"
    assert decide(equivalent(-beyond, margin=0.1)) == "FAIL"  # the other side alike


def test_what_the_seeds_cannot_place_is_open():
    # 3 seeds of spread 0.23 (a Spearman rho over 20 clients without a link) against a margin of 0.2: the
    # TOST needs t(2) = 2.92 standard errors inside each side, which 3 such seeds cannot give
    rho = np.array([0.1, -0.25, 0.2])
    assert decide(equivalent(rho, margin=0.2)) == "INCONCLUSIVE"
    # a mean at the margin: neither inside nor shown beyond it
    assert decide(equivalent(INSIDE + 0.1, margin=0.1)) == "INCONCLUSIVE"


def test_seeds_that_agree_or_are_known_only_by_sign():
    # seeds that tie are a sign test, not certain: 3 leave both sides open (1/8); inside the margin, 5 pass (each side
    # 1/2^5, IUT); beyond it, 6 fail (2 x 1/2^6 <= 5%), not 5 (2 x 1/2^5 > 5%)
    tied = equivalent([0.0] * 3, margin=0.1)
    assert decide(tied) == "INCONCLUSIVE" and tied.parts[0].how == tied.parts[1].how == "3 equal seeds, sign 3+/0-/3"
    assert decide(equivalent([0.0] * 5, margin=0.1)) == "PASS"
    assert decide(equivalent([0.5] * 3, margin=0.1)) == decide(equivalent([0.5] * 5, margin=0.1)) == "INCONCLUSIVE"
    assert decide(equivalent([0.5] * 6, margin=0.1)) == "FAIL"
    # a diverged seed (inf) counts by its sign: beyond the upper side, inside the lower one
    test = equivalent([0.0, 0.01, -0.01, 0.02, np.inf], margin=0.1)
    assert test.parts[1].p_holds == pytest.approx(stats.binom.sf(3, 5, 0.5))  # 4 of 5 inside: 6/32, open
    assert decide(test) == "INCONCLUSIVE"
    # every seed diverged: shown beyond by signs from 6 seeds on (2 x 1/2^6 <= 5%), not 5 (2 x 1/2^5 > 5%)
    assert decide(equivalent([np.inf] * 6, [np.inf] * 6, margin=0.1)) == "FAIL"
    assert decide(equivalent([0.0] * 4 + [np.inf], [0.0] * 4 + [np.inf], margin=0.1)) == "INCONCLUSIVE"


def _cells(kind: str, effects: list[np.ndarray]) -> ClaimData:
    """A figure table with one cell of check `kind` per array of per-seed effects (calibration.KINDS)."""
    rows = [r for c, seeds in enumerate(effects) for s, e in enumerate(seeds)
            for r in KINDS[kind].rows(f"c{c}", s, e)]
    return ClaimData(pd.DataFrame(rows), LABELS)


@pytest.mark.parametrize("kind", ["comparable", "log_ratio_within"])
def test_an_equivalence_check_over_cells_passes_only_when_every_cell_does(kind):
    params = {**KINDS[kind].params, EQUIVALENCE[kind]: 0.1}
    check = CHECKS[kind]
    inside = [INSIDE, INSIDE[::-1] + 0.01, INSIDE - 0.02]
    result = check(_cells(kind, inside), **params)
    assert result.status == "PASS" and result.measured.startswith("TOST within ±0.1")
    cells = [equivalent(e, margin=0.1) for e in inside]
    for ours, direct in zip(result.tests, cells):  # each cell is the TOST of its effects
        assert ours.p_holds == pytest.approx(direct.p_holds) and ours.p_against == pytest.approx(direct.p_against)
    assert result.p_pass == pytest.approx(max(c.p_holds for c in cells))  # intersection-union: the worst cell
    # one cell shown beyond the margin: FAIL, Holm over the 3 cells (3 x its p, itself 2 x one side's)
    beyond = inside[:2] + [INSIDE + 0.3]
    result = check(_cells(kind, beyond), **params)
    assert result.status == "FAIL"
    assert result.p_fail == pytest.approx(3 * equivalent(INSIDE + 0.3, margin=0.1).p_against)
    # one cell the seeds cannot place: the claim is open, whatever the others show
    open_ = inside[:2] + [np.array([0.15, -0.1, 0.05])]
    result = check(_cells(kind, open_), **params)
    assert result.status == "INCONCLUSIVE" and "(open: TOST ±0.1" in result.measured
    # the margin is the claim's: a wider one passes what a narrower one leaves open
    assert check(_cells(kind, open_), **{**params, EQUIVALENCE[kind]: 1.0}).status == "PASS"


def _curves(*runs) -> ClaimData:
    """Flat loss curves: (curve, {seed: loss}); FedCluster-style labels."""
    rows = [{"figure": "f", "panel": "p", "curve": curve, "method": curve, "run_id": curve, "seed": s, "round": r,
             "train_loss": value, "diverged": False}
            for curve, losses in runs for s, value in enumerate(losses) for r in range(11)]
    return ClaimData(pd.DataFrame(rows), ["figure", "panel", "curve", "method", "run_id"])


def test_comparable_within_a_winning_curves_gain():
    base = [1.0, 1.1, 0.9]
    m5 = [1.01, 1.1, 0.89]  # G about 0: comparable to FedAvg
    m10 = [0.5, 0.56, 0.44]  # G about 0.5: the winning reference
    kwargs = dict(a={"curve": "m5"}, b={"curve": "avg"}, per=["panel"], tol=0.05, reference={"curve": "m10"})
    result = CHECKS["comparable"](_curves(("avg", base), ("m5", m5), ("m10", m10)), **kwargs)
    assert result.status == "PASS" and "reference G +0.50" in result.measured
    # within the margin, but a reference that gains hardly more than A differs from B: A's gap is not shown below it
    weak = [b * (1 - 0.005) for b in base]  # G = 0.005 in every seed
    result = CHECKS["comparable"](_curves(("avg", base), ("m5", m5), ("m10", weak)), **kwargs)
    assert result.status == "INCONCLUSIVE" and result.p_pass > ALPHA
    result = CHECKS["comparable"](_curves(("avg", base), ("m5", m5)), **kwargs)  # no reference curve: open
    assert result.status == "INCONCLUSIVE" and "no reference curve" in result.measured


def test_log_ratio_within_counts_finals_below_the_floor_as_the_floor():
    def runs(a, b):  # grad norms from 1 (round 0) to a flat final
        rows = [{"figure": "f", "panel": "p", "curve": m, "method": m, "run_id": m, "seed": s, "round": r,
                 "grad_norm": 1.0 if r == 0 else v, "diverged": False}
                for m, finals in (("a", a), ("b", b)) for s, v in enumerate(finals) for r in range(11)]
        return ClaimData(pd.DataFrame(rows), ["figure", "panel", "curve", "method", "run_id"])
    kwargs = dict(a={"method": "a"}, b={"method": "b"}, per=["panel"], metric="grad_norm", max_abs_log10=0.5)
    # 2 decades apart, all below 1e-8 of the first value; 5 seeds, as at the floor every seed's ratio is 1 (a tie: the
    # sign test, 1/2^5 per side)
    tiny = runs([1e-12, 2e-12, 1.5e-12, 3e-12, 1.2e-12], [1e-10, 3e-10, 2e-10, 1.5e-10, 2.5e-10])
    assert CHECKS["log_ratio_within"](tiny, **kwargs).status == "FAIL"
    assert CHECKS["log_ratio_within"](tiny, **kwargs, or_both_below=1e-8).status == "PASS"  # all at the floor
    diverged = runs([0.1, 0.1, 0.1], [np.inf, 0.1, 0.1])
    result = CHECKS["log_ratio_within"](diverged, **kwargs)
    assert result.status == "INCONCLUSIVE" and "sign 2+/1-/3" in result.measured  # by signs: 3 seeds decide nothing


def test_rank_correlation_is_tested_within_its_margin_seed_by_seed():
    def clients(*rhos_by_order):
        rows = [{"figure": "f", "panel": "p", "curve": "c", "method": "m", "run_id": "r", "seed": s, "speed": float(i),
                 "participation": float(y)} for s, ys in enumerate(rhos_by_order) for i, y in enumerate(ys)]
        return ClaimData(pd.DataFrame(rows), ["figure", "panel", "curve", "method", "run_id"])
    kwargs = dict(select={}, per=["panel"], columns=["speed", "participation"], within=0.2)
    ten = list(range(10))
    swaps = [ten, ten[:4] + [5, 4] + ten[6:], [1, 0] + ten[2:8] + [9, 8]]  # rho 1, 0.988, 0.976 (a strong link)
    assert CHECKS["rank_correlation"](clients(*swaps), **kwargs).status == "FAIL"
    shuffled = [[3, 7, 1, 9, 0, 5, 8, 2, 6, 4], [6, 0, 8, 3, 9, 1, 4, 7, 2, 5], [2, 9, 4, 0, 7, 5, 1, 8, 3, 6]]
    rhos = [stats.spearmanr(ten, ys).statistic for ys in shuffled]
    result = CHECKS["rank_correlation"](clients(*shuffled), **kwargs)
    direct = equivalent(rhos, margin=0.2)
    assert result.tests[0].p_holds == pytest.approx(direct.p_holds)
    assert result.status == decide(direct)


def _ledger(claim: dict, data: ClaimData, readings=None) -> pd.DataFrame:
    return evaluate_claims({"claims": [claim]}, {"f": data.table}, "quick", {"f": data.labels}, readings or {})


def test_the_ledger_row_shows_the_margin_and_its_error_rate():
    data = _cells("log_ratio_within", [INSIDE, INSIDE + 0.01])
    claim = {"id": "E", "figures": ["f"], "check": "log_ratio_within", **KINDS["log_ratio_within"].params,
             "max_abs_log10": 0.1}
    ledger = _ledger(claim, data)
    row = ledger.iloc[0]
    assert row["status"] == "PASS" and row["equivalence_margin"] == 0.1
    assert row["error_rate"] == "<= 5% if seed noise is symmetric (TOST of paired t / sign tests; IUT, Simes)"
    assert ledger_summary(ledger)["claims"][0]["equivalence_margin"] == 0.1  # the JSON record repeats it
    json.dumps(ledger_summary(ledger))
    page = ledger_html(ledger, "t")
    assert "<th" in page and "equivalence margin" in page and "±0.1" in page
    directional = {**claim, "check": "compare_final", "id": "D"}
    directional.pop("max_abs_log10")
    other = _ledger(directional, _cells("compare_final", [INSIDE + 1])).iloc[0]
    assert math.isnan(other["equivalence_margin"]) and other["error_rate"].startswith("<= 5% if seed noise is symmetric (paired t")
    assert ledger_summary(_ledger(directional, _cells("compare_final", [INSIDE + 1])))["claims"][0][
        "equivalence_margin"] == ""


def test_a_quantified_margin_keeps_the_verdict_and_its_alternatives_say_whether_it_hangs_on_it():
    """A margin the paper does not state is a reading of source `quantified`: unlike an assumed definition, the
    verdict stands; the alternative margins, readings of the check, are judged on the same tables."""
    readings = {"margin": {"what": "how close", "paper": "§4: 'comparable'", "choice": "0.1",
                           "source": "quantified",
                           "alternatives": {"tight": {"choice": "0.005", "check": {"max_abs_log10": 0.005}},
                                            "loose": {"choice": "1", "check": {"max_abs_log10": 1.0}}}}}
    data = _cells("log_ratio_within", [INSIDE, INSIDE + 0.01])
    claim = {"id": "E", "figures": ["f"], "check": "log_ratio_within", **KINDS["log_ratio_within"].params,
             "max_abs_log10": 0.1, "rests_on": ["margin"]}
    row = _ledger(claim, data, readings).iloc[0]
    assert row["status"] == "PASS" and "Rests on readings: margin (quantified)" in row["note"]
    assert row["robustness"] == "depends"
    verdicts = {a["alternative"]: a["verdict"] for a in json.loads(row["alternatives"])}
    assert verdicts == {"tight": "INCONCLUSIVE", "loose": "PASS"}
    # the same margin as an assumption would make it our definition's verdict, never PASS
    assumed = {"margin": {**readings["margin"], "source": "assumption"}}
    assert _ledger(claim, data, assumed).iloc[0]["status"] == "INCONCLUSIVE"


def test_the_papers_equivalence_claims_declare_their_margin_as_a_reading():
    """FedCluster C12, FedPAGE C13 and C15, DeFedAvg C8c: an equivalence check, its margin in the claims file, resting on a
    reading of source `quantified` whose alternatives are other margins (the papers state none)."""
    for paper, ids in {"fedcluster": ["C12"], "fedpage": ["C13", "C15"], "defedavg": ["C8c"]}.items():
        claims = {c["id"]: c for c in read_yaml(REPO / "config" / "claims" / f"{paper}.yaml")["claims"]}
        readings = read_yaml(REPO / "config" / "papers" / f"{paper}.yaml")["readings"]
        for claim_id in ids:
            claim = claims[claim_id]
            name = EQUIVALENCE[claim["check"]]
            assert claim["check"] in TESTED and claim[name] > 0, claim_id
            margins = [r for r in claim["rests_on"] if readings[r]["source"] == "quantified"]
            assert len(margins) == 1, claim_id
            others = [a["check"][name] for a in readings[margins[0]]["alternatives"].values()]
            assert len(others) >= 2 and min(others) < claim[name] < max(others), claim_id
