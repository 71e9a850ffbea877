"""Alternative readings as runs (utils/patch.py, runtable.resolve_alternatives) and the ledger's
robustness column (claims/ledger.py): a patch adds only the runs it changes, and a verdict that flips under an
alternative reads `depends`, naming it."""

from pathlib import Path

import pytest
import yaml

from fedrepro.claims.ledger import evaluate_claims
from fedrepro.claims.robustness import Alternative, decode, row_text
from fedrepro.experiments.runtable import build_run_table, load_paper_config, resolve_alternatives, resolve_paper
from fedrepro.utils.patch import patched
from test_claims import LABELS, READINGS, _curve, _table

CONFIG = Path(__file__).resolve().parents[2] / "config"

STEPS = {**READINGS["steps"], "alternatives": {"grid": {"choice": "a grid", "set": {"defaults": {"lr": 1}}},
                                               "words": {"choice": "not run"}}}
INTERRUPT = {**READINGS["interrupt"], "alternatives": {"longer": {"choice": "x", "set": {"defaults": {"p": 2}}}}}
ALT_READINGS = {"steps": STEPS, "interrupt": INTERRUPT}


def test_a_patch_merges_mappings_and_replaces_everything_else():
    cfg = {"methods": {"a": {"lr": 1, "k": 2}}, "scales": {"quick": {"per_run": [1, 2], "defaults": {"x": 1}}}}
    out = patched(cfg, {"methods": {"a": {"lr": 3}}, "scales": {"quick": {"per_run": [9]}}})
    assert out == {"methods": {"a": {"lr": 3, "k": 2}}, "scales": {"quick": {"per_run": [9], "defaults": {"x": 1}}}}
    assert cfg["methods"]["a"]["lr"] == 1 and cfg["scales"]["quick"]["per_run"] == [1, 2]  # the original stays


def text_of(ledger, claim):
    """The robustness a reader sees, rendered from the row's fields (claims/robustness.py)."""
    return row_text(ledger.loc[claim])


def _ledger(alternatives, claims_yaml):
    primary = _table(_curve("fast", 0.1, 5), _curve("slow", 0.1, 1))
    return evaluate_claims(yaml.safe_load(claims_yaml), {"f": primary}, "quick", {"f": LABELS}, ALT_READINGS,
                           alternatives).set_index("claim_id")


CLAIMS = """
claims:
  - {id: X1, figures: [f], check: compare_final, a: {method: fast}, b: {method: slow}, per: [panel],
     metric: grad_norm, rests_on: [steps]}
  - {id: X2, figures: [f], check: compare_final, a: {method: fast}, b: {method: slow}, per: [panel],
     metric: grad_norm, rests_on: [interrupt]}
  - {id: X3, figures: [f], check: compare_final, a: {method: fast}, b: {method: slow}, per: [panel],
     metric: grad_norm}
"""


def test_a_verdict_that_flips_under_an_alternative_depends_on_it_and_names_it():
    flipped = _table(_curve("fast", 0.1, 1), _curve("slow", 0.1, 5))  # under steps=grid, slow wins
    same = _table(_curve("fast", 0.1, 6), _curve("slow", 0.1, 1))
    alternatives = {"steps": {"grid": ({"f": flipped}, {"f": LABELS})},
                    "interrupt": {"longer": ({"f": same}, {"f": LABELS})}}
    ledger = _ledger(alternatives, CLAIMS)
    assert ledger.loc["X1", "status"] == "PASS"  # the verdict under the primary readings stays
    assert text_of(ledger, "X1") == "depends (steps=grid: FAIL; untested: steps=words (not run))"
    assert ledger.loc["X1", "robustness"] == "depends"  # the fields the text is rendered from
    assert decode(ledger.loc["X1", "alternatives"]) == [Alternative("steps", "grid", "FAIL", True),
                                                        Alternative("steps", "words", untested="not_run")]
    # an assumed reading: INCONCLUSIVE as before, and the check's verdict is the same under its alternative
    assert ledger.loc["X2", "status"] == "INCONCLUSIVE"
    assert text_of(ledger, "X2") == "robust (interrupt=longer: PASS)"
    assert text_of(ledger, "X3") == ""  # rests on no reading


def test_an_alternative_that_changes_no_run_or_is_not_evaluated_leaves_the_verdict_untested():
    nothing = {"steps": {"grid": ({}, {})}, "interrupt": {"longer": ({}, {})}}
    ledger = _ledger(nothing, CLAIMS)
    assert text_of(ledger, "X1") == ("untested (steps=grid (changes none of its runs), "
                                              "steps=words (not run))")
    ledger = _ledger(None, CLAIMS)  # readings: primary
    assert text_of(ledger, "X1") == ("untested (steps=grid (not evaluated: config readings: primary), "
                                              "steps=words (not run))")


def test_an_alternative_with_fewer_seeds_than_the_rule_needs_tests_nothing():
    """The paper's single seed (`seeds=paper`): the rule decides nothing on one seed, so the alternative neither
    flips the verdict nor agrees with it; with 3 seeds the same curves are judged (and here flip it)."""
    one_seed = _table(_curve("fast", 0.1, 1, seeds=1), _curve("slow", 0.1, 5, seeds=1))
    ledger = _ledger({"steps": {"grid": ({"f": one_seed}, {"f": LABELS})}, "interrupt": {"longer": ({}, {})}}, CLAIMS)
    assert ledger.loc["X1", "status"] == "PASS" and ledger.loc["X1", "robustness"] == "untested"
    assert text_of(ledger, "X1") == "untested (steps=grid (too few seeds for the rule), steps=words (not run))"
    three = _table(_curve("fast", 0.1, 1), _curve("slow", 0.1, 5))
    ledger = _ledger({"steps": {"grid": ({"f": three}, {"f": LABELS})}, "interrupt": {"longer": ({}, {})}}, CLAIMS)
    assert text_of(ledger, "X1") == "depends (steps=grid: FAIL; untested: steps=words (not run))"


def test_under_primary_readings_a_check_alternative_is_judged_but_robust_waits_for_the_runs():
    """An alternative of the check needs no run: readings: primary judges it. Its agreeing verdict alone does
    not make a claim robust while an alternative whose runs were not trained is unjudged."""
    readings = {**ALT_READINGS, "steps": {**STEPS, "alternatives": {**STEPS["alternatives"],
                                                                    "wide": {"choice": "w", "check": {"window": 0.2}}}}}
    primary = _table(_curve("fast", 0.1, 5), _curve("slow", 0.1, 1))
    ledger = evaluate_claims(yaml.safe_load(CLAIMS), {"f": primary}, "quick", {"f": LABELS}, readings,
                             None).set_index("claim_id")
    assert ledger.loc["X1", "status"] == "PASS"
    assert text_of(ledger, "X1") == ("untested (steps=grid (not evaluated: config readings: primary), "
                                              "steps=words (not run); the same under steps=wide: PASS)")
    alternatives = {"steps": {"grid": ({"f": primary}, {"f": LABELS})}, "interrupt": {"longer": ({}, {})}}
    ledger = evaluate_claims(yaml.safe_load(CLAIMS), {"f": primary}, "quick", {"f": LABELS}, readings,
                             alternatives).set_index("claim_id")  # readings: all
    assert text_of(ledger, "X1") == "robust (steps=grid, steps=wide: PASS; untested: steps=words (not run))"


def test_an_alternative_adds_exactly_the_runs_its_patch_changes():
    cfg = load_paper_config(CONFIG / "papers" / "defedavg.yaml")
    claims = yaml.safe_load((CONFIG / "claims" / "defedavg.yaml").read_text())["claims"]
    runs, figures = resolve_paper(cfg, "smoke")
    alt_runs, alternatives = resolve_alternatives(cfg, claims, "smoke", Path("data/raw"), figures)
    by_name = {(a.reading, a.name): a for a in alternatives}
    assert set(by_name) == {("favano", "k_over_q"), ("fedbuff_staleness", "none"),
                            ("step_sizes", "table_ii")}  # those that declare `set`
    # smoke runs the protocol's rates (scales.smoke.per_run): Table II's retrain just the runs whose rates differ
    table_ii = {rid for f in by_name[("step_sizes", "table_ii")].figures.values() for rid in f.run_ids} - set(runs)
    rates = ("lr_global", "lr_local")
    primary = {tuple(sorted((k, str(v)) for k, v in s.items() if k not in rates)): s for s in runs.values()}
    assert table_ii
    for rid in table_ii:
        twin = primary[tuple(sorted((k, str(v)) for k, v in alt_runs[rid].items() if k not in rates))]
        assert [twin[k] for k in rates] != [alt_runs[rid][k] for k in rates]
    staleness = by_name[("fedbuff_staleness", "none")]
    new = {rid for f in staleness.figures.values() for rid in f.run_ids} - set(runs)
    assert new and {alt_runs[r]["method"] for r in new} == {"fedbuff"}
    assert {alt_runs[r]["fedbuff_staleness"] for r in new} == {"none"}
    for name, figure in staleness.figures.items():  # every other run of the figure is the figure's own
        own = set(figures[("defedavg", name)].run_ids)
        assert set(figure.run_ids) - new == own - {r for r in own if runs[r]["method"] == "fedbuff"}
    # only figures that a claim resting on the reading reads, and only those the patch changes
    read = {f for c in claims if "fedbuff_staleness" in c.get("rests_on", []) for f in c["figures"]}
    assert set(staleness.figures) <= read and "fig6" not in staleness.figures  # Fig. 6 has no FedBuff

    same = patched(cfg, {"readings": {"fedbuff_staleness": {"alternatives": {"none": {
        "choice": "the primary's own value", "set": {"methods": {"fedbuff": {"fedbuff_staleness": "sqrt"}}}}}}}})
    alt_runs, alternatives = resolve_alternatives(same, claims, "smoke", Path("data/raw"), figures)
    unchanged = [a for a in alternatives if a.reading == "fedbuff_staleness"]
    rates_runs = {rid for a in alternatives if a.reading == "step_sizes" for f in a.figures.values() for rid in f.run_ids}
    assert unchanged[0].figures == {}
    assert {r for r, s in alt_runs.items() if s["method"] == "fedbuff"} - rates_runs <= set(runs)


def test_fedclusters_rate_alternative_retrains_only_the_cluster_counts_it_changes():
    """FedAvg's rate / 10 at every M (the one rate the paper states): M = 10 is that rate already, so its runs
    keep their ids; only FedCluster at M = 5 and 20 trains again."""
    cfg = load_paper_config(CONFIG / "papers" / "fedcluster.yaml")
    claims = yaml.safe_load((CONFIG / "claims" / "fedcluster.yaml").read_text())["claims"]
    runs, figures = resolve_paper(cfg, "quick")
    alt_runs, alternatives = resolve_alternatives(cfg, claims, "quick", Path("data/raw"), figures)
    (div_10,) = [a for a in alternatives if a.name == "div_10"]
    assert set(div_10.figures) == {"fig5"}
    new = set(div_10.figures["fig5"].run_ids) - set(runs)
    assert {(alt_runs[r]["algorithm"], alt_runs[r]["M"], alt_runs[r]["fc_lr_rule"]) for r in new} == {
        ("fedcluster", 5, "div_10"), ("fedcluster", 20, "div_10")}
    kept = set(div_10.figures["fig5"].run_ids) & set(runs)
    assert {runs[r]["M"] for r in kept if runs[r]["algorithm"] == "fedcluster"} == {10}


def test_tdcds_free_grid_retrains_only_the_groups_whose_rate_it_changes():
    """The unbounded grid's choices, frozen in the reading: a group whose rate is the bounded grid's keeps its
    run; every new run takes its group's free-grid rate, which differs from the primary's."""
    cfg = load_paper_config(CONFIG / "papers" / "tdcd.yaml")
    claims = yaml.safe_load((CONFIG / "claims" / "tdcd.yaml").read_text())["claims"]
    runs, figures = resolve_paper(cfg, "quick")
    alt_runs, alternatives = resolve_alternatives(cfg, claims, "quick", Path("data/raw"), figures)
    (free,) = [a for a in alternatives if a.name == "free_grid"]
    entries = cfg["readings"]["step_sizes"]["alternatives"]["free_grid"]["set"]["scales"]["quick"]["per_run"]
    rate = {tuple(e["where"].values()): e["set"]["lr"] for e in entries}
    group = lambda spec: (spec["dataset"], spec["N"], spec["K"], spec["Q"])  # noqa: E731
    primary = {group(spec): spec["lr"] for spec in runs.values()}
    ids = {rid for figure in free.figures.values() for rid in figure.run_ids}
    new = ids - set(runs)
    assert new and {alt_runs[r]["Q"] for r in new} >= {1}
    for r in new:
        assert alt_runs[r]["lr"] == rate[group(alt_runs[r])] != primary[group(alt_runs[r])]
    assert all(rate[group(runs[r])] == runs[r]["lr"] for r in ids & set(runs))

def test_the_claims_table_counts_and_the_claims_figure_marks_what_depends_on_a_reading():
    import pandas as pd

    from fedrepro.claims.table import ledger_html
    from fedrepro.plots.claims import claims_figure

    from fedrepro.claims.robustness import encode

    ledger = pd.DataFrame({"claim_id": ["X1", "X2", "X3"], "figure": ["f"] * 3, "scale": ["quick"] * 3,
                           "status": ["PASS", "FAIL", "PASS"], "support": [1.0, 0.0, 1.0], "note": [""] * 3,
                           "robustness": ["depends", "robust", None],
                           "alternatives": [encode([Alternative("steps", "grid", "FAIL", True)]),
                                            encode([Alternative("steps", "grid", "FAIL")]), ""]})
    assert "across readings: 1 depends, 1 robust" in ledger_html(ledger, "t")
    ticks = [t.get_text() for t in claims_figure(ledger, "p", "quick", 0.9).axes[0].get_yticklabels()]
    assert ticks == ["X1 [PASS] depends", "X2 [FAIL]", "X3 [PASS]"]
    none = ledger.assign(robustness=float("nan"))  # a paper that rests on no reading: an empty column
    assert "; across readings:" not in ledger_html(none, "t")  # no count (and the empty column is left out)


def test_an_alternative_reading_of_the_check_judges_the_same_tables_with_its_parameters():
    """A reading of the check, not of the runs (e.g. how much faster "much faster" is): A's 20 seeds reach the
    target at 50, B's at 70, so A is not twice as fast (factor 0.5: FAIL) but is faster (factor 1: PASS)."""
    readings = {"ttt": {"what": "how much faster", "paper": "§4", "choice": "twice as fast",
                        "source": "paper", "alternatives": {"seed_times": {"choice": "faster at all",
                                                                           "check": {"factor": 1.0}}}}}
    table = _table(_curve("fast", 0.1, 5, seeds=20, spread=(0.0,) * 20),
                   _curve("slow", 0.1, 3.3, seeds=20, spread=(0.0,) * 20))
    claims = yaml.safe_load("""
    claims:
      - {id: T1, figures: [f], check: time_to_target, a: {method: fast}, b: {method: slow}, per: [panel],
         metric: grad_norm, target: 0.1, higher: false, factor: 0.5, rests_on: [ttt]}
      - {id: T2, figures: [f], check: log_ratio_within, a: {method: slow}, b: {method: fast}, per: [panel],
         metric: grad_norm, max_abs_log10: 0.5, rests_on: [ttt]}
    """)
    ledger = evaluate_claims(claims, {"f": table}, "quick", {"f": LABELS}, readings, {}).set_index("claim_id")
    assert ledger.loc["T1", "status"] == "FAIL"
    assert text_of(ledger, "T1") == "depends (ttt=seed_times: PASS)"
    assert text_of(ledger, "T2") == "untested (ttt=seed_times (changes nothing in its check))"
    # it needs no run, so readings: primary judges it too, beside an alternative whose runs it did not train
    readings["ttt"]["alternatives"]["grid"] = {"choice": "a grid", "set": {"defaults": {"lr": 1}}}
    ledger = evaluate_claims(claims, {"f": table}, "quick", {"f": LABELS}, readings, None).set_index("claim_id")
    assert text_of(ledger, "T1") == ("depends (ttt=seed_times: PASS; untested: ttt=grid (not evaluated: "
                                              "config readings: primary))")


def test_each_run_is_counted_under_the_primary_reading_or_the_first_alternative_that_adds_it():
    """What `fedrepro cost` splits a paper's runs by: a run the alternative shares with the primary is the
    primary's; the others are the alternative's."""
    table = build_run_table({"scale": "quick", "papers": ["tdcd"], "readings": "all"}, CONFIG)
    origins = table.run_origins()
    primary = {rid for figure in table.paper_figures("tdcd") for rid in figure.run_ids}
    by_name = {f"{a.reading}={a.name}": a for a in table.alternatives["tdcd"]}
    free, scripts = by_name["step_sizes=free_grid"], by_name["step_sizes=scripts"]
    assert not by_name["seeds=paper"].figures  # the paper's single seed changes no run at quick
    alternative = {rid for figure in free.figures.values() for rid in figure.run_ids}
    copied = {rid for figure in scripts.figures.values() for rid in figure.run_ids}
    assert set(origins) == set(table.runs) == primary | alternative | copied
    assert {origins[r] for r in primary} == {"primary"}
    assert alternative - primary and {origins[r] for r in alternative - primary} == {"step_sizes=free_grid"}
    assert alternative & primary  # groups whose rate the free grid keeps share their runs
    assert {origins[r] for r in copied - primary - alternative} == {"step_sizes=scripts"}


@pytest.mark.parametrize("paper", ["fedcluster", "tdcd"])
def test_the_paper_scale_runs_the_seeds_the_rule_needs_and_the_papers_single_seed_is_a_reading(paper):
    """Issue 44 item 8: 5 seeds at the paper scale; `seeds=paper` is the paper's one seed, with the run ids the
    one-seed paper scale had, and changes no run of the reduced scales."""
    cfg = load_paper_config(CONFIG / "papers" / f"{paper}.yaml")
    runs, _ = resolve_paper(cfg, "paper")
    assert {spec["seeds"] for spec in runs.values()} == {5}
    single = patched(cfg, cfg["readings"]["seeds"]["alternatives"]["paper"]["set"])
    single_runs, _ = resolve_paper(single, "paper")
    before = {**cfg, "scales": {**cfg["scales"], "paper": {}}}  # the paper scale as it was: the paper's defaults
    assert {spec["seeds"] for spec in single_runs.values()} == {1} and set(single_runs) == set(resolve_paper(before, "paper")[0])
    for scale in ("quick", "smoke"):
        assert set(resolve_paper(single, scale)[0]) == set(resolve_paper(cfg, scale)[0])
    claims = yaml.safe_load((CONFIG / "claims" / f"{paper}.yaml").read_text())["claims"]
    assert all("seeds" in c.get("rests_on", []) for c in claims if c.get("kind", "paper") == "paper")
