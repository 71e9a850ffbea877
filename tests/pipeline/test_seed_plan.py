"""The adaptive seed plan (claims/seed_plan.py, claims/sequential.py): its levels, which claims it plans, within
max_seeds and the budget, in what order, the runs it adds, and the file `fedrepro seed-plan` writes."""

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fedrepro.claims.causes import REACH
from fedrepro.claims.checks.inference import ALPHA
from fedrepro.claims.seed_plan import OpenClaim, Settings, claim_runs, extension, make_plan, open_claims, \
    run_costs, RunCost
from fedrepro.claims.sequential import ADAPTIVE, FIXED, LOOKS, Look, level, within_reach
from fedrepro.claims.support import MIN_UNITS
from fedrepro.errors import ResultsError
from fedrepro.experiments.runtable import run_id_of
from fedrepro.schemas import SCALES, schema
from fedrepro.seeding import seeds_of

from sealed import seal

CONFIG = Path(__file__).resolve().parents[2] / "config"


def test_the_two_looks_spend_alpha_and_fixed_keeps_one_look_at_alpha():
    assert level(FIXED, 1) == ALPHA
    assert level(ADAPTIVE, 1) + level(ADAPTIVE, 2) <= ALPHA + 1e-12  # the union bound's condition
    assert min(LOOKS) > 0
    with pytest.raises(ValueError, match="one look"):
        level(FIXED, 2)
    with pytest.raises(ValueError, match="adaptive"):
        level("sequential", 1)


def test_the_settings_schema_bounds_max_seeds_by_the_rule_for_every_scale():
    config = schema("config.schema.yaml")
    assert config["properties"]["seed_plan"]["default"] == FIXED  # make reproduce keeps one look
    bounds = config["$defs"]["max_seeds"]
    assert (bounds["minimum"], bounds["maximum"]) == (MIN_UNITS, REACH)  # seeds_needed reads a number up to REACH
    for key in ("max_seeds", "seed_budget_minutes"):
        assert tuple(config["properties"][key]["properties"]) == SCALES == tuple(config["properties"][key]["default"])


def test_a_claim_is_within_reach_only_with_a_number_of_seeds_up_to_max_seeds():
    assert within_reach("4", 3, 10) and within_reach("10", 5, 10)
    assert not within_reach("11", 3, 10)
    assert not within_reach("not within reach", 3, 10) and not within_reach("unknown", 3, 10)
    assert not within_reach("6", 10, 10)  # its runs already have max_seeds


def _specs(**seeds):
    return {r: {"paper": "p", "engine": "finite_sum", "algorithm": "a", "lr": 0.1, "seeds": n}
            for r, n in seeds.items()}


def test_the_plan_brings_each_run_of_a_planned_claim_to_max_seeds_and_no_further():
    specs = _specs(r1=3, r2=3, r3=5, r4=3, r5=10)
    claims = [OpenClaim("p", "A", "6", ("r1", "r2")), OpenClaim("p", "B", "10", ("r2", "r3")),
              OpenClaim("p", "C", "12", ("r4",)), OpenClaim("p", "D", "not within reach", ("r4",)),
              OpenClaim("p", "E", "11", ("r5",))]
    plan = make_plan(claims, specs, {r: RunCost(0.0, 1.0) for r in specs}, Settings(ADAPTIVE, 10, 1000.0))
    by = {c["claim"]: c for c in plan["claims"]}
    assert [c for c in by if by[c]["planned"]] == ["A", "B"]
    assert "not within max_seeds 10" in by["C"]["reason"] and "not within" in by["D"]["reason"]
    assert "nothing to add" in by["E"]["reason"]
    added = {r["extends"]: r for r in plan["runs"]}
    assert set(added) == {"r1", "r2", "r3"}  # r2 shared by A and B: one run added
    for rid, run in added.items():
        assert specs[rid]["seeds"] + run["seeds"] == 10  # max_seeds exactly
        assert seeds_of(run["spec"]) == list(range(specs[rid]["seeds"], 10))  # the seeds not yet trained
        assert run["run_id"] == run_id_of(run["spec"]) != run_id_of(specs[rid])
    assert added["r2"]["claims"] == ["p/A", "p/B"]
    assert plan["minutes"] == pytest.approx(7 + 7 + 5)


def test_the_plan_keeps_within_the_budget_cheapest_claim_first_and_a_shared_run_costs_nothing_more():
    specs = _specs(rx=3, ry=3, rz=3)
    minutes = {"rx": RunCost(0.0, 3.0), "ry": RunCost(0.0, 1.0), "rz": RunCost(0.0, 1.0)}  # per seed: X costs 21 job minutes, Y and Z 7 each
    claims = [OpenClaim("p", "X", "5", ("rx",)), OpenClaim("p", "Y", "5", ("ry",)), OpenClaim("p", "Z", "5", ("rz",)),
              OpenClaim("p", "W", "9", ("ry",))]  # W reads Y's run only
    plan = make_plan(claims, specs, minutes, Settings(ADAPTIVE, 10, 10.0))
    by = {c["claim"]: c for c in plan["claims"]}
    # Y and Z tie at 7: Y comes first; W then costs nothing; Z no longer fits in the 3 minutes left, nor X
    assert [c for c in by if by[c]["planned"]] == ["Y", "W"]
    assert plan["minutes"] == pytest.approx(7.0)
    assert "over budget: 7.0 more job minutes, 3.0 of 10 left" in by["Z"]["reason"]
    assert "over budget: 21.0" in by["X"]["reason"]
    assert sum(r["minutes"] for r in plan["runs"]) <= 10.0
    # a larger budget takes X too, after the cheaper ones
    assert all(c["planned"] for c in make_plan(claims, specs, minutes, Settings(ADAPTIVE, 10, 35.0))["claims"])


def test_no_plan_in_fixed_mode_and_no_guess_for_a_run_without_a_cost():
    specs = _specs(r1=3, r2=3)
    claims = [OpenClaim("p", "A", "5", ("r1",)), OpenClaim("p", "B", "5", ("r2",))]
    fixed = make_plan(claims, specs, {"r1": RunCost(0.0, 1.0), "r2": RunCost(0.0, 1.0)}, Settings(FIXED, 10, 100.0))
    assert not fixed["runs"] and all("one look" in c["reason"] for c in fixed["claims"])
    blocked = make_plan(claims, specs, {"r1": RunCost(0.0, 1.0)}, Settings(ADAPTIVE, 10, 100.0))
    assert [c["planned"] for c in blocked["claims"]] == [True, False]
    assert "no cost estimate for run r2" in blocked["claims"][1]["reason"]


def _run_record(results: Path, run_id: str, wall_seconds: float) -> None:
    (results / "runs" / run_id).mkdir(parents=True, exist_ok=True)
    (results / "runs" / run_id / "run.json").write_text(json.dumps({"run_id": run_id, "wall_seconds": wall_seconds}))


def test_a_runs_cost_is_its_jobs_start_plus_its_training_per_seed_else_its_papers_medians(tmp_path):
    specs = {"a": {"paper": "p", "seeds": 3}, "b": {"paper": "p", "seeds": 5}, "c": {"paper": "p", "seeds": 3},
             "d": {"paper": "q", "seeds": 3}, "e": {"paper": "q", "seeds": 3}}
    jobs = pd.DataFrame({"rule": ["train", "train", "plot", "train"], "job": ["a", "b", "c", "e"],
                         "wall_s": [240.0, 660.0, 60.0, 100.0]})
    _run_record(tmp_path, "a", 180.0)  # a: 60 s to start, 1 min a seed
    _run_record(tmp_path, "b", 600.0)  # b: 60 s to start, 2 min a seed
    costs = run_costs(jobs, specs, tmp_path)
    assert costs["a"] == RunCost(1.0, 1.0) and costs["b"] == RunCost(1.0, 2.0)
    # 9 seeds added to a cost 10 job minutes, not 240 s / 3 seeds x 9 = 12: the job starts once
    assert costs["a"].minutes(9) == pytest.approx(10.0)
    assert costs["c"] == RunCost(1.0, 1.5)  # no train record: the medians of p's runs
    assert "d" not in costs and "e" not in costs  # q's one job has no run record: no estimate


def test_open_claims_are_the_rows_whose_cause_is_seeds_with_the_runs_of_their_figures():
    ledger = pd.DataFrame({"claim_id": ["A", "B", "C"], "cause": ["seeds", "check", "seeds"],
                           "seeds_needed": ["6", "", "unknown"], "p_pass": ["0.3", "", "0.5"]})
    runs = claim_runs({"claims": [{"id": "A", "figures": ["f1", "f2"]}, {"id": "B", "figures": ["f1"]},
                                  {"id": "C", "figures": ["f3"]}]}, {"f1": ["r2", "r1"], "f2": ["r1", "r3"]})
    assert runs == {"A": ["r1", "r2", "r3"], "B": ["r1", "r2"], "C": []}
    found = open_claims("p", ledger, runs)
    assert [(c.claim, c.seeds_needed, c.runs) for c in found] == [("A", "6", ("r1", "r2", "r3")), ("C", "unknown", ())]


def test_a_claim_with_selectors_reads_only_the_runs_its_selectors_match():
    # two panels, three methods, a run each; the table as the checks read it (its run_id: the curve's own run)
    table = pd.DataFrame([{"panel": p, "method": m, "run_id": f"{m}-{p}", "seed": 0}
                          for p in ("P1", "P2") for m in ("x", "y", "z")])
    figure_runs = {"f": sorted(table["run_id"])}
    claims = {"claims": [
        {"id": "AB", "figures": ["f"], "check": "faster", "a": {"method": "x"}, "b": {"method": "y"}},
        {"id": "S", "figures": ["f"], "check": "ordered", "select": {"method": "z", "panel": ["P2"]}},
        {"id": "ALL", "figures": ["f"], "check": "monotone", "per": ["panel"]},  # no selector: every curve
        {"id": "NONE", "figures": ["f"], "check": "faster", "a": {"method": "x"}, "b": {"method": "w"}},
        {"id": "NOTABLE", "figures": ["g"], "check": "faster", "a": {"method": "x"}, "b": {"method": "y"}},
    ]}
    runs = claim_runs(claims, {**figure_runs, "g": ["g1"]}, {"f": table})
    assert runs["AB"] == ["x-P1", "x-P2", "y-P1", "y-P2"] and runs["S"] == ["z-P2"]
    assert runs["ALL"] == figure_runs["f"]
    assert runs["NONE"] == figure_runs["f"]  # a selector that matches nothing: what the check reads is not known
    assert runs["NOTABLE"] == ["g1"]  # no table on disk: every run of its figures
    assert claim_runs(claims, figure_runs) == {**claim_runs(claims, figure_runs, {}), "NOTABLE": []}
    # a run drawn against two x columns is a curve each, <run_id>/<x column> in the table (TDCD's two t_comm)
    two_x = pd.concat([table.assign(run_id=table["run_id"] + f"/time_tc{c}") for c in (10, 100)])
    assert claim_runs(claims, figure_runs, {"f": two_x})["AB"] == ["x-P1", "x-P2", "y-P1", "y-P2"]


def test_extension_starts_after_a_runs_own_first_seed():
    spec = {"seeds": 2, "first_seed": 100, "lr": 0.1}
    assert seeds_of(extension(spec, 5)) == [102, 103, 104]


def test_fedrepro_seed_plan_writes_the_plan_of_the_sealed_ledgers(tmp_path):
    from fedrepro.cli import seed_plan_file
    from fedrepro.experiments.runtable import build_run_table
    from fedrepro.layout import Layout
    from fedrepro.validate import with_defaults

    shutil.copytree(CONFIG, tmp_path / "config")
    settings = {"scale": "smoke", "seed_plan": ADAPTIVE, "max_seeds": {"smoke": 4}, "seed_budget_minutes": {"smoke": 5}}
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(settings))
    claim = yaml.safe_load((CONFIG / "claims" / "fedpage.yaml").read_text())["claims"][0]
    table = build_run_table({**with_defaults(settings), "papers": ["fedpage"]}, tmp_path / "config")
    runs = sorted({r for f in claim["figures"] for r in table.figure("fedpage", f).run_ids})
    out = Layout("smoke", tmp_path)
    out.ledger("fedpage").parent.mkdir(parents=True)
    pd.DataFrame({"claim_id": [claim["id"]], "status": ["INCONCLUSIVE"], "cause": ["seeds"],
                  "seeds_needed": ["3"], "p_pass": [0.2]}).to_csv(out.ledger("fedpage"), index=False)
    seal(out.ledger("fedpage"), Look(ADAPTIVE, 1))  # the first look, as rule claims writes it under adaptive
    for rid in runs:  # 3 s to start, 6 s a seed
        bench = out.logs / "benchmarks" / "train" / f"{rid}.tsv"
        bench.parent.mkdir(parents=True, exist_ok=True)
        bench.write_text(f"s\tcpu_time\n{3.0 + 6.0 * table.runs[rid]['seeds']}\t1\n")
        _run_record(out.results, rid, 6.0 * table.runs[rid]["seeds"])

    said = seed_plan_file(None, tmp_path)
    plan = json.loads((out.results / "seed_plan.json").read_text())
    assert said.startswith(str(out.results / "seed_plan.json")) and "1 of 1 claims" in said
    assert plan["claims"][0]["planned"] and plan["claims"][0]["runs"] == runs
    assert sorted(r["extends"] for r in plan["runs"]) == [r for r in runs if table.runs[r]["seeds"] < 4]
    assert all(table.runs[r["extends"]]["seeds"] + r["seeds"] == 4 for r in plan["runs"])
    assert plan["minutes"] == pytest.approx(sum(0.05 + 0.1 * r["seeds"] for r in plan["runs"]))
    assert math.isclose(plan["levels"]["first"] + plan["levels"]["second"], ALPHA)

    # judged at the second look, the ledgers keep the plan they were judged with; without it, or judged in one
    # look, there is no first look to plan from: each a one-line error naming what to run
    seal(out.ledger("fedpage"), Look(ADAPTIVE, 2, (claim["id"],)))
    before = (out.results / "seed_plan.json").read_bytes()
    assert "kept" in seed_plan_file(None, tmp_path) and (out.results / "seed_plan.json").read_bytes() == before
    (out.results / "seed_plan.json").unlink()
    with pytest.raises(ResultsError, match="judge the first look again"):
        seed_plan_file(None, tmp_path)
    seal(out.ledger("fedpage"))
    with pytest.raises(ResultsError, match="seed_plan fixed"):
        seed_plan_file(None, tmp_path)
    shutil.rmtree(out.results / "claims")
    with pytest.raises(ResultsError, match="no ledger at scale smoke"):
        seed_plan_file(None, tmp_path)


def test_the_stage_decides_the_look_and_the_audit_names_a_plan_not_the_one_judged_with(tmp_path):
    from fedrepro.claims.seed_plan import FILE, plan_finding, plan_text, stage_look, stage_plan, write_plan

    claims = [OpenClaim("p", "A", "5", ("r",)), OpenClaim("p", "B", "40", ("r",)), OpenClaim("q", "C", "5", ("s",))]
    plan = make_plan(claims, {"r": {"paper": "p", "seeds": 3}, "s": {"paper": "q", "seeds": 3}},
                     {"r": RunCost(0.0, 1.0), "s": RunCost(0.0, 1.0)}, Settings(ADAPTIVE, 10, 100.0))
    assert stage_plan(ADAPTIVE, tmp_path, 10) is None and stage_plan(FIXED, tmp_path, 10) is None  # before the plan: look 1
    assert stage_look(ADAPTIVE, None, "p", tmp_path) == Look(ADAPTIVE, 1) and stage_look(FIXED, None, "p", tmp_path) == Look()
    write_plan(plan, tmp_path / FILE)
    assert stage_plan(FIXED, tmp_path, 10) is None and stage_plan(ADAPTIVE, tmp_path, 10) == plan
    look = stage_look(ADAPTIVE, plan, "p", tmp_path)
    assert look.number == 2 and look.planned == ("A",) and look.level == LOOKS[1]  # p's planned claims only
    assert plan_finding(look, tmp_path) == "" and plan_finding(Look(ADAPTIVE, 1), tmp_path / "none") == ""
    (tmp_path / FILE).write_text((tmp_path / FILE).read_text().replace('"minutes"', '"minutes" ', 1))
    assert "is not the plan the ledger was judged with" in plan_finding(look, tmp_path)
    (tmp_path / FILE).unlink()
    assert "is gone" in plan_finding(look, tmp_path)
    with pytest.raises(ValueError, match="only the second look"):
        Look(ADAPTIVE, 1, ("A",))
    text = plan_text(plan)
    assert "2 of 3 claims" in text and "p A, q C" in text and "1 beyond max_seeds" in text and "14 seeds added" in text


def test_a_plan_whose_claims_the_first_look_did_not_leave_open_for_seeds_is_refused_before_training(tmp_path):
    """A hand-edited plan (issue 62: a claim planned that the first look decided, a run added that no planned claim
    reads) is refused when the workflow stages it, before any of its runs trains, naming the claim or the run."""
    from fedrepro.claims.seed_plan import FILE, stage_plan, write_plan

    claims = [OpenClaim("p", "A", "5", ("r",)), OpenClaim("p", "B", "5", ("s",))]
    plan = make_plan(claims, {"r": {"paper": "p", "seeds": 3}, "s": {"paper": "p", "seeds": 3}},
                     {"r": RunCost(0.0, 1.0), "s": RunCost(0.0, 1.0)}, Settings(ADAPTIVE, 10, 100.0))
    ledger = tmp_path / "claims" / "p.csv"
    ledger.parent.mkdir()

    def first_look(b_status: str, b_cause: str, look: Look = Look(ADAPTIVE, 1)) -> None:
        pd.DataFrame({"claim_id": ["A", "B"], "status": ["INCONCLUSIVE", b_status], "cause": ["seeds", b_cause],
                      "seeds_needed": ["5", "5" if b_cause == "seeds" else ""], "p_pass": [0.2, 0.01]}
                     ).to_csv(ledger, index=False)
        seal(ledger, look)

    write_plan(plan, tmp_path / FILE)
    first_look("INCONCLUSIVE", "seeds")
    assert stage_plan(ADAPTIVE, tmp_path, 10) == plan  # as seed-plan made it
    first_look("PASS", "")  # B was decided at the first look: planning it re-tests a decided claim
    with pytest.raises(ResultsError, match="refused before training: planned claim p/B is PASS"):
        stage_plan(ADAPTIVE, tmp_path, 10)
    first_look("INCONCLUSIVE", "seeds")
    forged = {**plan, "runs": plan["runs"] + [{**plan["runs"][0], "run_id": "x", "extends": "t"}]}
    write_plan(forged, tmp_path / FILE)
    with pytest.raises(ResultsError, match="added run x .extends t. serves no planned claim"):
        stage_plan(ADAPTIVE, tmp_path, 10)
    write_plan(plan, tmp_path / FILE)
    seal(ledger)  # judged in one look: nothing to plan from
    with pytest.raises(ResultsError, match="judged in one look"):
        stage_plan(ADAPTIVE, tmp_path, 10)
    first_look("PASS", "", Look(ADAPTIVE, 2, ("A", "B")))  # at the second look: judged with this plan (plan_finding)
    assert stage_plan(ADAPTIVE, tmp_path, 10) == plan


def test_a_plan_of_another_max_seeds_a_bootstrapped_claim_or_more_seeds_than_max_seeds_is_refused(tmp_path):
    """Issue 62's probes: the plan's own max_seeds raised to 20 let a claim needing 17 seeds through; a bootstrapped
    claim, which seed-plan never plans, was judged at a second look; an added run of 20 seeds (its id recomputed)
    brought its run past max_seeds; a plan without max_seeds or with `minutes: "abc"` ended in a traceback."""
    from fedrepro.claims.seed_plan import FILE, planned_table, read_plan, stage_plan, write_plan
    from fedrepro.experiments.runtable import RunTable

    plan = make_plan([OpenClaim("p", "A", "5", ("r",))], {"r": {"paper": "p", "seeds": 3}},
                     {"r": RunCost(0.0, 1.0)}, Settings(ADAPTIVE, 10, 100.0))
    ledger = tmp_path / "claims" / "p.csv"
    ledger.parent.mkdir()

    def first_look(needed: str, p_pass: str) -> None:
        pd.DataFrame({"claim_id": ["A"], "status": ["INCONCLUSIVE"], "cause": ["seeds"], "seeds_needed": [needed],
                      "p_pass": [p_pass]}).to_csv(ledger, index=False)
        seal(ledger, Look(ADAPTIVE, 1))

    first_look("17", "0.2")
    write_plan({**plan, "max_seeds": 20}, tmp_path / FILE)
    with pytest.raises(ResultsError, match="its max_seeds is 20, the scale's is 10.*seeds_needed '17'"):
        stage_plan(ADAPTIVE, tmp_path, 10)
    first_look("5", "")  # a bootstrapped verdict: no p-values
    write_plan(plan, tmp_path / FILE)
    with pytest.raises(ResultsError, match="planned claim p/A is bootstrapped"):
        stage_plan(ADAPTIVE, tmp_path, 10)
    spec = {"paper": "p", "seeds": 3, "lr": 0.1}
    table = RunTable("smoke", {"r": spec}, {})
    grown = {**plan["runs"][0], "seeds": 17, "spec": {**spec, "first_seed": 3, "seeds": 17}}
    grown["run_id"] = run_id_of(grown["spec"])
    with pytest.raises(ResultsError, match="is not an extension of run r .* differs in seeds"):
        planned_table(table, {**plan, "runs": [grown]})
    for key, value in (("max_seeds", None), ("minutes", "abc"), ("max_seeds", True)):
        edited = {**plan, key: value} if value is not None else {k: v for k, v in plan.items() if k != key}
        (tmp_path / FILE).write_text(json.dumps(edited))
        with pytest.raises(ResultsError, match=f"{key} not a number"):
            read_plan(tmp_path / FILE)
