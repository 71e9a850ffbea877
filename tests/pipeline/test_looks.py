"""The ledger at a look of the seed plan (claims/sequential.py Look): under adaptive each tested verdict is decided at
the look's level and seeds_needed estimated at the second look's, a bootstrapped verdict as it is; under fixed the
ledger and its record are as they were."""

import json
import math

import pandas as pd
import pytest
import yaml

from fedrepro.claims import causes
from fedrepro.claims.checks.common import Result, at_level
from fedrepro.claims.checks.inference import ALPHA, paired_t
from fedrepro.claims.ledger import evaluate_claims, ledger_look, write_ledger
from fedrepro.claims.seed_plan import RunCost, Settings, make_plan, open_claims
from fedrepro.claims.sequential import ADAPTIVE, FIXED, LOOKS, Look
from fedrepro.verdicts import INCONCLUSIVE, PASS

LABELS = ["figure", "panel", "curve", "method", "run_id"]
CLAIM = {"id": "X", "figures": ["f"], "check": "compare_final", "a": {"method": "a"}, "b": {"method": "b"},
         "per": ["panel"], "metric": "grad_norm"}
FIRST = Look(ADAPTIVE, 1)


def _runs(**finals) -> pd.DataFrame:
    """One run per method, seed s flat at finals[method][s]."""
    return pd.DataFrame([{"figure": "f", "panel": "p", "curve": m, "method": m, "run_id": m, "seed": s, "round": r,
                          "grad_norm": v, "diverged": False}
                         for m, values in finals.items() for s, v in enumerate(values) for r in range(11)])


def _between(spread: float) -> pd.DataFrame:
    """a's 3 seeds at 10^(0, +-spread), b at 10^0.5: compare_final's log ratios have mean 0.5 and s.d. `spread`."""
    return _runs(a=[1.0, 10 ** spread, 10 ** -spread], b=[10 ** 0.5] * 3)


def _row(table: pd.DataFrame, look: Look = Look(), claim: dict = CLAIM) -> pd.Series:
    return evaluate_claims({"claims": [claim]}, {"f": table}, "quick", {"f": LABELS}, look=look).iloc[0]


def test_a_pass_at_alpha_that_the_first_look_does_not_show_is_open_for_seeds_at_the_second_looks_level():
    table = _between(0.25)
    fixed, first = _row(table), _row(table, FIRST)
    assert LOOKS[0] < fixed["p_pass"] <= ALPHA  # the case: shown at 5%, not at the first look's 0.5%
    assert fixed["status"] == PASS and fixed["margin"] > 0 and fixed["cause"] == ""
    assert first["status"] == INCONCLUSIVE and first["cause"] == causes.SEEDS and math.isnan(first["margin"])
    assert first["p_pass"] == fixed["p_pass"] and "level 0.5%" in first["note"]
    # seeds_needed at the second look's level: one-cell claim, 3 log ratios of mean 0.5 and s.d. 0.25
    test = paired_t([0.5, 0.25, 0.75])
    assert first["seeds_needed"] == causes.seeds_text(causes.seeds_estimate(test, LOOKS[1]), 3, 3)
    assert _row(_between(0.05), FIRST)["status"] == PASS  # p below 0.5%: the first look passes it too


def test_seeds_needed_is_estimated_at_alpha_under_fixed_and_at_the_second_looks_level_under_adaptive():
    table = _between(0.5)  # open at either level
    fixed, first = _row(table), _row(table, FIRST)
    test = paired_t([0.5, 0.0, 1.0])
    assert fixed["seeds_needed"] == causes.seeds_text(causes.seeds_estimate(test, ALPHA), 3, 3)
    assert first["seeds_needed"] == causes.seeds_text(causes.seeds_estimate(test, LOOKS[1]), 3, 3)
    assert int(first["seeds_needed"]) >= int(fixed["seeds_needed"])  # the lower level needs no fewer seeds
    assert fixed.drop("seeds_needed").equals(first.drop("seeds_needed"))


def test_a_bootstrapped_verdict_is_the_same_at_every_look_and_never_planned():
    from fedrepro.claims.calibration_verdicts import MC_LABELS, two_curves
    import numpy as np

    table = pd.DataFrame(two_curves(0.3)(21, "normal", np.random.default_rng(1)))
    mc = {"id": "M", "figures": ["f"], "check": "compare_mc", "a": {"method": "a"}, "b": {"method": "b"},
          "per": ["panel"], "stats": ["cep_full"]}
    rows = [evaluate_claims({"claims": [mc]}, {"f": table}, "quick", {"f": MC_LABELS}, look=look).iloc[0]
            for look in (Look(), FIRST)]
    assert "bootstrap" in rows[0]["error_rate"] and rows[0]["status"] != INCONCLUSIVE
    pd.testing.assert_series_equal(rows[0], rows[1])
    ledger = pd.DataFrame({"claim_id": ["T", "B"], "cause": ["seeds", "seeds"], "seeds_needed": ["5", "5"],
                           "p_pass": ["0.04", ""]})  # as read_ledger gives it: B has no p-values, a bootstrap
    claims = open_claims("p", ledger, {"T": ["r"], "B": ["r"]})
    assert [c.tested for c in claims] == [True, False]
    plan = make_plan(claims, {"r": {"paper": "p", "seeds": 3}}, {"r": RunCost(0.0, 1.0)}, Settings(ADAPTIVE, 10, 100.0))
    assert [c["planned"] for c in plan["claims"]] == [True, False]
    assert plan["claims"][1]["reason"].startswith("bootstrapped")


def test_the_record_names_an_adaptive_look_and_a_fixed_ledger_and_record_are_as_before(tmp_path):
    claims = tmp_path / "p.yaml"
    claims.write_text(yaml.safe_dump({"paper": "p", "claims": [{**CLAIM, "quote": "a beats b"}]}))
    table = tmp_path / "f.csv"
    _between(0.25).to_csv(table, index=False)
    written = {}
    for look in (None, Look(), FIRST):
        out = tmp_path / f"{look and look.mode}"
        out.mkdir()
        extra = {} if look is None else {"look": look}
        write_ledger(claims, [table], {"f": {"labels": LABELS}}, "quick", out / "p.csv", out / "p.json", **extra)
        written[look] = ((out / "p.csv").read_bytes(), json.loads((out / "p.json").read_text()))
        assert ledger_look(out / "p.json") == (look or Look())  # what the audit recomputes it at
    default, fixed, first = written[None], written[Look()], written[FIRST]
    assert fixed[0] == default[0] and "seed_plan" not in fixed[1]
    assert {k: v for k, v in fixed[1].items() if k != "ledger"} == {k: v for k, v in default[1].items() if k != "ledger"}
    assert first[0] != fixed[0]  # the PASS at 5% is open at 0.5%
    assert first[1]["seed_plan"] | {"text": ""} == {"mode": ADAPTIVE, "look": 1, "level": LOOKS[0],
                                                    "seeds_needed_level": LOOKS[1], "planned": [], "max_seeds": 0,
                                                    "text": ""}
    assert ledger_look(tmp_path / "missing.json") == Look()


def test_a_claim_whose_curves_are_at_max_seeds_is_judged_once_at_alpha_at_either_look():
    """A claim no seed can be added to (its curves have max_seeds already: fedvr's 20 Monte Carlo runs at quick) would
    only lose power to the first look's 0.5%; its level is known from the settings before any verdict, so it is
    judged in one look at 5%, and the two looks' rates hold for the others. Counted on the first look's seeds: a
    curve another claim's plan brought to max_seeds does not make a claim one-look at the second look."""
    from fedrepro.experiments.runtable import FIRST_LOOK_SEEDS

    table = _between(0.25).assign(seeds=3)
    fixed = _row(table)
    at_max = _row(table, Look(ADAPTIVE, 1, max_seeds=3))
    below = _row(table, Look(ADAPTIVE, 1, max_seeds=10))
    assert fixed["status"] == PASS and below["status"] == INCONCLUSIVE  # the case: open at 0.5%, shown at 5%
    assert at_max["status"] == PASS and at_max["p_pass"] == fixed["p_pass"] and "One look at 5%" in at_max["note"]
    second = _row(table, Look(ADAPTIVE, 2, (), "sha", max_seeds=3))  # not planned: as at its first look
    assert second["status"] == PASS
    extended = _ten_seeds()  # seeds 10 (max_seeds), of which the run's own 3 at the first look
    assert FIRST_LOOK_SEEDS in extended
    assert "One look" not in _row(extended, Look(ADAPTIVE, 2, ("Y",), "sha", max_seeds=10))["note"]


def test_a_look_above_alpha_or_that_does_not_exist_is_refused():
    with pytest.raises(ValueError, match="above ALPHA"):
        at_level(Result(PASS, ""), 0.1)
    with pytest.raises(ValueError, match="one look"):
        Look(FIXED, 2)
    with pytest.raises(ValueError, match="not one of"):
        Look("sequential")
    assert Look(ADAPTIVE, 2).level == LOOKS[1] and Look().level == ALPHA


def _ten_seeds() -> pd.DataFrame:
    """10 seeds of compare_final's log ratios (mean 0.5): open on the first 3 (0.5, 0, 1), shown on all 10; the
    table as the seed plan makes it, `seeds` counting all and first_look_seeds the run's own 3."""
    effects = [0.5, 0.0, 1.0, 0.5, 0.2, 0.8, 0.5, 0.3, 0.7, 0.5]
    table = _runs(a=[10 ** (0.5 - e) for e in effects], b=[10 ** 0.5] * 10)
    return table.assign(seeds=10, first_look_seeds=3)


def test_the_second_look_judges_the_planned_claims_on_every_seed_and_the_others_as_at_the_first():
    from fedrepro.experiments.runtable import FIRST_LOOK_SEEDS

    full = _ten_seeds()
    first_only = full[full["seed"] < 3].drop(columns=["seeds", FIRST_LOOK_SEEDS])
    claims = {"claims": [CLAIM, {**CLAIM, "id": "Y"}]}
    labels = LABELS + ["seeds", FIRST_LOOK_SEEDS]
    at_first = evaluate_claims(claims, {"f": first_only}, "quick", {"f": LABELS}, look=FIRST).set_index("claim_id")
    at_second = evaluate_claims(claims, {"f": full}, "quick", {"f": labels}, look=Look(ADAPTIVE, 2, ("X",))
                                ).set_index("claim_id")
    assert (at_first["status"] == INCONCLUSIVE).all() and (at_first["cause"] == causes.SEEDS).all()
    assert at_second.loc["X", "status"] == PASS and at_second.loc["X", "p_pass"] <= LOOKS[1]
    # Y was not planned: its data are its first 3 seeds, its row the first look's, its note saying so
    assert at_second.loc["Y"].drop("note").equals(at_first.loc["Y"].drop("note"))
    assert "first-look seeds" in at_second.loc["Y", "note"] and "first-look" not in at_first.loc["Y", "note"]
    # the first look on the table with added seeds reads the first look's seeds alone, the same rows as before
    again = evaluate_claims(claims, {"f": full}, "quick", {"f": labels}, look=FIRST).set_index("claim_id")
    assert again.equals(at_first)
