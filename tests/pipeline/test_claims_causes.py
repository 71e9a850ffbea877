"""A claim's kind, the cause of an open or failed verdict and the seeds that would decide it (claims/kinds.py,
claims/causes.py), on known inputs."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from fedrepro.claims import causes
from fedrepro.claims.checks.inference import combine, effect_test
from fedrepro.claims.data_notes import STAND_IN_LABELS
from fedrepro.claims.kinds import counts_text
from fedrepro.claims.ledger import evaluate_claims, write_ledger
from fedrepro.claims.validation import validate_claims
from fedrepro.errors import ConfigError, ResultsError
from test_claims import LABELS, READINGS, _curve, _table

CLAIMS_DIR = Path(__file__).resolve().parents[2] / "config" / "claims"


def _effects(mean: float, sd: float, n: int = 3) -> np.ndarray:
    """n per-seed effects with exactly this mean and sample s.d."""
    z = np.linspace(-1, 1, n)
    return mean + sd * z / z.std(ddof=1)


def _power(effect: float, sd: float, level: float, n: int) -> float:
    """The exact power of the one-sided t-test at `level` of n effects of this mean and s.d. (noncentral t)."""
    return stats.nct.sf(stats.t.ppf(1 - level, n - 1), n - 1, effect / sd * math.sqrt(n))


def _smallest_n(effect: float, sd: float, level: float) -> int:
    """The definition, written out: the smallest n at which the t-test has 80% power, the effect taken as true."""
    return next(n for n in range(2, 1000) if _power(effect, sd, level, n) >= 0.8)


def test_one_cell_needs_the_seeds_at_which_its_t_test_decides_with_80_percent_power():
    test = effect_test(_effects(1.0, 1.0))  # t(2) = 1.73: open at 3 seeds
    assert test.outcome is None
    assert causes.seeds_estimate(test).n == _smallest_n(1.0, 1.0, 0.05) == 8
    assert causes.seeds_text(causes.seeds_estimate(test), have=3, at_least=3) == "8"
    # an effect against the claim: the estimate is that of the FAIL it points to
    assert causes.seeds_estimate(effect_test(_effects(-1.0, 1.0))).n == 8
    # not the n at which the observed t only just crosses (5 here): there the test decides about half the time
    assert 0.4 < _power(1.0, 1.0, 0.05, 5) < 0.6


@pytest.mark.parametrize("level", [0.05, 0.025, 0.005])
def test_seeds_needed_is_the_exact_power_not_its_approximation(level):
    for effect in (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 3.0):
        assert causes.t_seeds(effect, 1.0, level, limit=1000) == _smallest_n(effect, 1.0, level), effect


def test_a_claim_over_cells_needs_every_cell_for_a_pass_and_one_corrected_cell_for_a_fail():
    weak, strong = effect_test(_effects(0.5, 1.0)), effect_test(_effects(2.0, 1.0))
    both = combine([weak, strong])  # all of 2 must hold: each at alpha (intersection-union), the larger n
    assert causes.seeds_estimate(both).n == max(_smallest_n(0.5, 1.0, 0.05), _smallest_n(2.0, 1.0, 0.05))
    against = combine([effect_test(_effects(-0.5, 1.0)), strong])  # PASS out of reach: one cell at alpha / 2
    assert causes.seeds_estimate(against).n == _smallest_n(0.5, 1.0, 0.025)
    one_of_two = combine([weak, strong], required=1)  # the better cell at alpha / 2
    assert causes.seeds_estimate(one_of_two).n == _smallest_n(2.0, 1.0, 0.025)


def test_beyond_reach_a_zero_effect_and_one_seed_say_so():
    assert causes.seeds_text(causes.seeds_estimate(effect_test(_effects(0.01, 1.0))), 3, 3) == causes.NOT_WITHIN_REACH
    zero = effect_test(_effects(0.0, 1.0))
    assert causes.seeds_text(causes.seeds_estimate(zero), 3, 3) == causes.NOT_WITHIN_REACH
    # a plateau is no want of seeds: its cause is the check's, not `seeds`
    assert causes.cause("INCONCLUSIVE", reading=False, scale=False, rule="", test=zero) == causes.CHECK
    near = effect_test(_effects(0.5, 1.0))
    assert causes.cause("INCONCLUSIVE", reading=False, scale=False, rule="", test=near) == causes.SEEDS
    assert causes.seeds_text(causes.seeds_estimate(effect_test([0.3])), 1, 3) == causes.UNKNOWN


def _sign_power(share: float, n: int, level: float = 0.05) -> float:
    """The exact power of the one-sided sign test at `level` over n seeds, each on the side with probability share."""
    k = next(k for k in range(n + 2) if k > n or stats.binom.sf(k - 1, n, 0.5) <= level)
    return float(stats.binom.sf(k - 1, n, share)) if k <= n else 0.0


def test_a_sign_test_needs_the_seeds_at_which_its_share_decides_with_80_percent_power():
    # three seeds, one censored but settled on the holding side: 1/8 at 3 seeds, 1/32 at 5, if new seeds fall alike
    censored = effect_test([0.2, 0.3, 0.1], [0.2, 0.3, math.inf])
    assert censored.kind == "sign" and causes.seeds_estimate(censored) == causes.Need(False, False, 5)
    assert causes.cause("INCONCLUSIVE", reading=False, scale=False, rule="", test=censored) == causes.SEEDS
    tied = effect_test([0.5, 0.5, 0.5])  # ties weigh as signs too
    assert tied.kind == "sign" and causes.seeds_estimate(tied).n == 5
    # a seed unsettled (its interval spans 0) counts for neither side: 4 of 5 settle on the holding side
    split = effect_test([0.2, 0.3, 0.1, 0.4, -0.1], [0.2, 0.3, 0.1, 0.4, math.inf])
    n = int(causes.seeds_estimate(split).n)
    assert _sign_power(0.8, n) >= 0.8 > _sign_power(0.8, n - 1)
    assert causes.cause("INCONCLUSIVE", reading=False, scale=False, rule="", test=split) == causes.SEEDS
    # 2 of 3: more than 50 seeds; half or fewer: no number would; either is the check's
    for seeds in (([0.2, 0.3, -0.1], [0.2, 0.3, math.inf]), ([0.2, -0.3, 0.1, -0.1], [0.2, -0.3, math.inf, math.inf])):
        assert causes.cause("INCONCLUSIVE", reading=False, scale=False, rule="", test=effect_test(*seeds)) == causes.CHECK


def test_the_cause_takes_readings_then_scale_then_the_verdict():
    t = effect_test(_effects(1.0, 1.0))
    assert causes.cause("PASS", reading=True, scale=True, rule="", test=t) == ""
    assert causes.cause("FAIL", reading=True, scale=True, rule="", test=t) == causes.READING
    assert causes.cause("FAIL", reading=False, scale=True, rule="", test=t) == causes.SCALE
    assert causes.cause("FAIL", reading=False, scale=False, rule="", test=t) == causes.PAPER
    assert causes.cause("INCONCLUSIVE", reading=False, scale=False, rule="", test=t) == causes.SEEDS
    assert causes.cause("INCONCLUSIVE", reading=False, scale=False, rule=causes.CHECK, test=t) == causes.CHECK
    assert causes.cause("INCONCLUSIVE", reading=False, scale=False, rule="", test=None) == causes.CHECK


CLAIMS = """
claims:
  - {id: P1, figures: [f], check: compare_final, a: {method: fast}, b: {method: slow}, per: [panel], metric: grad_norm}
  - {id: F1, figures: [f], check: compare_final, a: {method: slow}, b: {method: fast}, per: [panel], metric: grad_norm}
  - {id: N1, figures: [f], check: compare_final, a: {method: near}, b: {method: slow}, per: [panel], metric: grad_norm}
  - {id: U1, figures: [f], check: compare_final, a: {method: slow}, b: {method: fast}, per: [panel], metric: grad_norm,
     undecided_at: {quick: "the horizon is too short"}}
  - {id: A1, figures: [f], check: compare_final, a: {method: fast}, b: {method: slow}, per: [panel], metric: grad_norm,
     rests_on: [interrupt]}
  - {id: G1, figures: [g], check: compare_final, a: {method: fast}, b: {method: slow}, per: [panel], metric: grad_norm}
  - {id: I1, kind: implementation, figures: [f], check: compare_final, a: {method: fast}, b: {method: slow},
     per: [panel], metric: grad_norm}
  - {id: R1, kind: report, check: not_tested, reason: theory}
"""


def _ledger(claims=CLAIMS):
    table = _table(_curve("fast", 0.1, 5), _curve("slow", 0.1, 1),
                   _curve("near", 0.1, 1.15, spread=(0.0, 0.2, -0.15)))
    return evaluate_claims(yaml.safe_load(claims), {"f": table}, "quick", {"f": LABELS}, READINGS).set_index("claim_id")


def test_the_ledger_gives_each_open_or_failed_paper_claim_its_cause():
    ledger = _ledger()
    assert list(ledger["kind"]) == ["paper"] * 6 + ["implementation", "report"]
    assert ledger.loc["P1", "status"] == "PASS" and ledger.loc["P1", "cause"] == ""
    assert (ledger.loc["F1", "status"], ledger.loc["F1", "cause"]) == ("FAIL", causes.PAPER)
    assert ledger.loc["U1", "cause"] == causes.SCALE  # undecided at this scale: its FAIL is not the paper's
    assert ledger.loc["A1", "cause"] == causes.READING  # rests on an assumed definition
    assert ledger.loc["G1", "cause"] == causes.SCALE  # its figure is not made at this scale
    assert ledger.loc["R1", "cause"] == "" and ledger.loc["R1", "status"] == "INCONCLUSIVE"  # shown, not judged
    # 5% lower in the mean, seeds spread by 15-20%: more seeds would decide it, and the ledger says how many
    assert (ledger.loc["N1", "status"], ledger.loc["N1", "cause"]) == ("INCONCLUSIVE", causes.SEEDS)
    assert int(ledger.loc["N1", "seeds_needed"]) > 3
    assert ledger.loc[ledger["cause"] != causes.SEEDS, "seeds_needed"].eq("").all()


def test_a_failed_implementation_check_stops_the_ledger_naming_it(tmp_path):
    claims = tmp_path / "p.yaml"
    claims.write_text(CLAIMS.replace("id: I1, kind: implementation, figures: [f], check: compare_final, "
                                     "a: {method: fast}, b: {method: slow}",
                                     "id: I1, kind: implementation, figures: [f], check: compare_final, "
                                     "a: {method: slow}, b: {method: fast}"))
    table = tmp_path / "f.csv"
    _table(_curve("fast", 0.1, 5), _curve("slow", 0.1, 1), _curve("near", 0.1, 1.05)).to_csv(table, index=False)
    out = tmp_path / "p.csv"
    with pytest.raises(ResultsError, match=r"(?s)1 implementation check\(s\) FAIL.*I1"):
        write_ledger(claims, [table], {"f": {"labels": LABELS}}, "quick", out, readings=READINGS)
    assert not out.exists()


def test_kind_is_validated_and_a_report_is_exactly_a_claim_that_is_not_judged():
    def problems(claim):
        with pytest.raises(ConfigError) as error:
            validate_claims({"claims": [claim]}, "c.yaml")
        return str(error.value)

    assert "'finding' is not a kind of claim" in problems({"id": "X", "kind": "finding", "check": "not_tested",
                                                            "reason": "r"})
    assert "is kind 'report'" in problems({"id": "X", "check": "not_tested", "reason": "r"})
    assert "is kind 'report'" in problems({"id": "X", "kind": "report", "check": "compare_final", "a": {}, "b": {},
                                           "per": []})
    validate_claims({"claims": [{"id": "X", "kind": "report", "check": "not_tested", "reason": "r"}]}, "c.yaml")


@pytest.mark.parametrize("path", sorted(CLAIMS_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_claims_file_declares_valid_kinds(path):
    cfg = yaml.safe_load(path.read_text())
    validate_claims(cfg, str(path))
    assert {c.get("kind", "paper") for c in cfg["claims"]} <= {"paper", "derived", "implementation", "report"}


def test_a_derived_row_is_judged_outside_the_papers_count(tmp_path):
    """A pattern we read off the paper's numbers is no sentence of the paper: judged, counted on its own line."""
    claims = yaml.safe_load(CLAIMS)
    claims["claims"].append({"id": "D1", "kind": "derived", "figures": ["f"], "check": "compare_final",
                             "a": {"method": "fast"}, "b": {"method": "slow"}, "per": ["panel"], "metric": "grad_norm"})
    table = _table(_curve("fast", 0.1, 5), _curve("slow", 0.1, 1), _curve("near", 0.1, 1.05))
    ledger = evaluate_claims(claims, {"f": table}, "quick", {"f": LABELS}, READINGS)
    assert ledger.set_index("claim_id").loc["D1", "status"] == "PASS"
    text = counts_text(ledger)
    assert "of 6 paper claims; derived from its numbers: 1 PASS; implementation checks" in text


def test_the_record_counts_the_papers_claims_apart_and_repeats_the_fields(tmp_path):
    import json

    claims = tmp_path / "p.yaml"
    claims.write_text(CLAIMS)
    table = tmp_path / "f.csv"
    _table(_curve("fast", 0.1, 5), _curve("slow", 0.1, 1),
           _curve("near", 0.1, 1.15, spread=(0.0, 0.2, -0.15))).to_csv(table, index=False)
    seeds = {"judged": [0, 1, 2], "tunings": {"t": {"settings": ["lr"], "seeds": [1000], "judged": []}}}
    ledger = write_ledger(claims, [table], {"f": {"labels": LABELS}}, "quick", tmp_path / "p.csv",
                          tmp_path / "p.json", readings=READINGS, seeds=seeds)
    record = json.loads((tmp_path / "p.json").read_text())
    assert record["seeds"] == seeds  # the run table's seeds_record, as rule claims passes it
    assert record["counts"]["paper"] == {"FAIL": 1, "INCONCLUSIVE": 4, "PASS": 1}
    assert record["counts"]["implementation"] == {"PASS": 1}
    assert record["counts"]["text"].startswith("1 PASS, 1 FAIL, 4 INCONCLUSIVE of 6 paper claims")
    by_id = {c["claim_id"]: c for c in record["claims"]}
    assert by_id["N1"]["cause"] == "seeds" and by_id["N1"]["seeds_needed"] == ledger.set_index("claim_id").loc[
        "N1", "seeds_needed"]
    reread = pd.read_csv(tmp_path / "p.csv", dtype=str, keep_default_na=False)
    assert list(reread["cause"]) == [by_id[c]["cause"] for c in reread["claim_id"]]


STAND_IN = sorted(STAND_IN_LABELS)[0]


def test_a_paper_claim_on_a_stand_in_is_never_pass_or_fail():
    table = _table(_curve("fast", 0.1, 5), _curve("slow", 0.1, 1)).assign(data_source=STAND_IN)
    ledger = evaluate_claims(yaml.safe_load(CLAIMS), {"f": table}, "quick", {"f": LABELS}, READINGS).set_index(
        "claim_id")
    # what the check gave on the stand-in stays as information; the paper's claim needs the real data
    assert (ledger.loc["P1", ["status", "cause", "check_says"]] == ["INCONCLUSIVE", causes.DATA, "PASS"]).all()
    assert (ledger.loc["F1", ["status", "cause", "check_says"]] == ["INCONCLUSIVE", causes.DATA, "FAIL"]).all()
    assert "Needs the real dataset" in ledger.loc["P1", "note"] and STAND_IN in ledger.loc["P1", "note"]
    # an implementation check tests our code, on whatever data: it stands
    assert ledger.loc["I1", "status"] == "PASS"
    real = evaluate_claims(yaml.safe_load(CLAIMS), {"f": table.assign(data_source="CIFAR-10")}, "quick",
                           {"f": LABELS}, READINGS).set_index("claim_id")
    assert real.loc["P1", "status"] == "PASS" and real.loc["P1", "check_says"] == ""


def test_a_fail_is_the_papers_only_when_every_alternative_reading_was_judged():
    fails = "claims:\n  - {id: F1, figures: [f], check: compare_final, a: {method: slow}, b: {method: fast}, " \
            "per: [panel], metric: grad_norm, rests_on: [steps]}\n"
    table = _table(_curve("fast", 0.1, 5), _curve("slow", 0.1, 1))

    def judged(alternatives, runs=None):
        readings = {**READINGS, "steps": {**READINGS["steps"], "alternatives": alternatives}}
        return evaluate_claims(yaml.safe_load(fails), {"f": table}, "quick", {"f": LABELS}, readings,
                               runs).set_index("claim_id").loc["F1"]

    # an alternative that changes the runs, not trained (readings: primary): the FAIL is ours so far
    row = judged({"halved": {"set": {"eta": 0.05}}})
    assert (row["status"], row["cause"]) == ("FAIL", causes.READING) and "steps=halved" in row["note"]
    # every alternative judged, and none flips it: the paper's
    row = judged({"halved": {"set": {"eta": 0.05}}}, {"steps": {"halved": ({"f": table}, {"f": LABELS})}})
    assert (row["status"], row["cause"]) == ("FAIL", causes.PAPER)
    # the paper's single seed decides nothing by the rule, so it cannot overturn the FAIL
    one_seed = _table(_curve("fast", 0.1, 5, seeds=1), _curve("slow", 0.1, 1, seeds=1))
    row = judged({"paper": {"set": {"seeds": 1}}}, {"steps": {"paper": ({"f": one_seed}, {"f": LABELS})}})
    assert (row["status"], row["cause"]) == ("FAIL", causes.PAPER)


def test_a_verdict_says_where_its_check_departs_from_the_sentence():
    claims = yaml.safe_load(CLAIMS)
    claims["claims"][0] |= {"departs": {"quick": "target 37%; the paper's 70% is out of reach here"},
                            "not_tested": "'substantially': no margin is declared"}
    table = _table(_curve("fast", 0.1, 5), _curve("slow", 0.1, 1))
    ledger = evaluate_claims(claims, {"f": table}, "quick", {"f": LABELS}, READINGS).set_index("claim_id")
    assert ledger.loc["P1", "departs"] == ("at quick: target 37%; the paper's 70% is out of reach here; "
                                           "not tested: 'substantially': no margin is declared")
    assert ledger.loc["F1", "departs"] == ""
    at_paper = evaluate_claims(claims, {"f": table}, "paper", {"f": LABELS}, READINGS).set_index("claim_id")
    assert at_paper.loc["P1", "departs"] == "not tested: 'substantially': no margin is declared"
    for bad in ({"departs": {"tiny": "x"}}, {"departs": "fewer clients"}, {"not_tested": ""}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            validate_claims({"claims": [claims["claims"][0] | bad]}, "test")


def test_a_curve_that_is_not_the_papers_never_enters_its_claims():
    """FedProx drawn in FedPAGE's Fig. 2(a) joined C8, which picks its cells by column: a claim compares only the
    paper's own methods, and says which curves it left out."""
    per_method = """
    methods: [fast, slow]
    claims:
      - {id: S1, figures: [f], check: compare_final, a: {eta_tilde: 0.2}, b: {eta_tilde: 0.1}, per: [panel, method],
         metric: grad_norm}
    """
    # each method of the paper converges faster at the larger step; the added one, ours, the other way round
    table = _table(_curve("fast", 0.2, 5), _curve("fast", 0.1, 1), _curve("slow", 0.2, 3), _curve("slow", 0.1, 1),
                   _curve("odd", 0.2, 1), _curve("odd", 0.1, 5))
    row = evaluate_claims(yaml.safe_load(per_method), {"f": table}, "quick", {"f": LABELS}, READINGS).iloc[0]
    assert row["status"] == "PASS" and "Curves not the paper's, left out: odd." in row["note"]
    every = yaml.safe_load(per_method) | {"methods": ["fast", "slow", "odd"]}
    assert evaluate_claims(every, {"f": table}, "quick", {"f": LABELS}, READINGS).iloc[0]["status"] == "FAIL"


@pytest.mark.parametrize("path", sorted(CLAIMS_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_claims_file_names_the_papers_methods(path):
    cfg = yaml.safe_load(path.read_text())
    assert cfg.get("methods"), f"{path.name}: no `methods`: a curve we add would enter the paper's claims"
    with pytest.raises(ConfigError, match="'fedprox' is no method of the paper's figures"):
        validate_claims(cfg | {"methods": [*cfg["methods"], "fedprox"]}, str(path),
                        {"f": {"method": set(cfg["methods"])}})
