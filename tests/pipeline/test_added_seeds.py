"""A curve reads its added seeds (claims/seed_plan.py planned_table, results/tables.py curve_rows): with the seed
plan's runs, a curve's table holds its run's seeds and those added, under its own run id, says how many it has and
how many the first look had, and its caption says why; without a plan every figure and its table are as they were.
On real runs: fedpage's fig1a at the smoke scale (3 runs of 1 seed, seconds)."""

import dataclasses
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from fedrepro.claims.seed_plan import OpenClaim, RunCost, Settings, make_plan, planned_table, read_plan
from fedrepro.claims.sequential import ADAPTIVE
from fedrepro.data import fetch_dataset, prepare_dataset
from fedrepro.errors import ResultsError
from fedrepro.experiments.execute import execute_run
from fedrepro.experiments.runtable import FIRST_LOOK_SEEDS, run_id_of
from fedrepro.experiments.store import run_files
from fedrepro.layout import Layout
from fedrepro.results.tables import figure_table, figure_table_csv
from fedrepro.seeding import seeds_of
from fedrepro.validate import load_and_validate

REPO = Path(__file__).resolve().parents[2]
MIRROR = Path(os.environ.get("FEDREPRO_DATA_MIRROR") or REPO.parent / "shared" / "datasets")
PAPER, FIGURE = "fedpage", "fig1a"


def train(root: Path, table, run_ids) -> None:
    """Train the runs (prepared data under root) as rule train does."""
    for rid in run_ids:
        inputs = table.input_files(rid)
        prepared = root / inputs["prepared"]
        if not prepared.is_file():
            dataset = table.runs[rid]["dataset"]
            fetch_dataset(dataset, root / "data" / "raw", MIRROR)
            prepare_dataset(dataset, root / "data" / "raw" / dataset, prepared)
        execute_run(rid, table.runs[rid], run_files(Layout("smoke", root).results, rid), prepared,
                    [root / p for p in inputs["provenance"]], device="cpu", log_path=root / f"{rid}.log", repo=root)


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """fig1a's runs and a plan that brings them to 3 seeds for claim X, every run trained."""
    if not (MIRROR / "libsvm").is_dir():
        pytest.skip(f"offline data mirror not found at {MIRROR} (set FEDREPRO_DATA_MIRROR)")
    root = tmp_path_factory.mktemp("added-seeds")
    _, table = load_and_validate({"scale": "smoke"}, REPO / "config")
    figure = table.figure(PAPER, FIGURE)
    plan = make_plan([OpenClaim(PAPER, "X", "3", tuple(figure.run_ids))], table.runs,
                     {r: RunCost(0.0, 0.01) for r in figure.run_ids}, Settings(ADAPTIVE, 3, 10.0))
    train(root, table, figure.run_ids)
    train(root, planned_table(table, plan), [r["run_id"] for r in plan["runs"]])
    return root, table, plan


def test_without_a_plan_every_figure_and_its_table_are_as_they_were(planned, tmp_path):
    root, table, _ = planned
    assert planned_table(table, None) is table and planned_table(table, {"runs": []}) is table
    assert read_plan(tmp_path / "seed_plan.json") is None
    figure = table.figure(PAPER, FIGURE)
    assert "extensions" not in figure.table_settings() and "extensions" not in figure.drawing_settings()
    assert FIRST_LOOK_SEEDS not in figure.label_columns
    assert FIRST_LOOK_SEEDS not in figure_table(figure, Layout("smoke", root).results).columns


def test_a_curve_reads_every_seed_under_its_own_run_id_and_says_how_many(planned):
    root, table, plan = planned
    results = Layout("smoke", root).results
    before, after = table.figure(PAPER, FIGURE), planned_table(table, plan).figure(PAPER, FIGURE)
    old, new = figure_table(before, results), figure_table(after, results)
    assert set(after.run_ids) == set(before.run_ids) | {r["run_id"] for r in plan["runs"]}
    assert sorted(new["run_id"].unique()) == sorted(old["run_id"].unique()) == before.run_ids  # the curves' identity
    for rid, rows in new.groupby("run_id"):
        assert sorted(rows["seed"].unique()) == [0, 1, 2]  # its own seed 0 and seeds 1, 2 added
        assert set(rows["seeds"]) == {3} and set(rows[FIRST_LOOK_SEEDS]) == {table.runs[rid]["seeds"]} == {1}
    # the first look's rows are the same rows, with the added columns' values
    first = new[new["seed"] == 0].drop(columns=[FIRST_LOOK_SEEDS, "seeds"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(first, old.drop(columns=["seeds"]), check_like=False)
    assert list(new.columns[:len(after.label_columns)]) == after.label_columns
    # the digests of the figure's jobs change (its table and drawing are remade); its caption says why
    assert after.table_settings() != before.table_settings() and after.drawing_settings() != before.drawing_settings()
    for curve in after.curves:
        assert f"{curve.label} ({curve.panel}) 3 (1 at the first look, 2 for claims {PAPER}/X)" in after.caption
    assert before.caption in after.caption and "Seeds added by the seed plan" not in before.caption


def test_a_figure_whose_runs_got_no_seeds_is_the_same_figure(planned):
    _, table, plan = planned
    again = planned_table(table, plan)
    untouched = [k for k, f in table.figures.items() if not set(f.run_ids) & {r["extends"] for r in plan["runs"]}]
    assert untouched and all(again.figures[k] is table.figures[k] for k in untouched)
    assert all(again.runs[r["run_id"]] == r["spec"] and seeds_of(r["spec"]) == [1, 2] for r in plan["runs"])


def test_an_added_run_whose_seeds_a_curve_has_is_an_error(planned, tmp_path):
    root, table, plan = planned
    a, b = table.figure(PAPER, FIGURE).run_ids[:2]  # b's seed 0 "added" to a's curve, which has seed 0
    wrong = {"max_seeds": plan["max_seeds"],
             "runs": [{"run_id": b, "extends": a, "first_seed": 0, "seeds": 1, "claims": [], "spec": table.runs[b]}]}
    with pytest.raises(ResultsError, match=f"added run {b} is not an extension of run {a}"):  # refused before training
        planned_table(table, wrong)
    # and should such a figure be built around the plan's check, its table refuses the seeds its curve has
    overlapping = dataclasses.replace(table.figure(PAPER, FIGURE), extensions={
        a: [{"run_id": b, "first_seed": 0, "seeds": 1, "claims": []}]})
    with pytest.raises(ResultsError, match=f"run {b} adds seeds \\[0\\]"):
        figure_table_csv(overlapping, Layout("smoke", root).results)
    with pytest.raises(ResultsError, match="no longer has"):
        planned_table(table, {"runs": [{**plan["runs"][0], "extends": "0" * 16}]})
    (tmp_path / "seed_plan.json").write_text("{")
    with pytest.raises(ResultsError, match="not a seed plan"):
        read_plan(tmp_path / "seed_plan.json")
    (tmp_path / "seed_plan.json").write_text(json.dumps(plan))
    assert read_plan(tmp_path / "seed_plan.json") == plan


@pytest.mark.parametrize("text", ["null", "{}", "[1]", '{"claims": [], "runs": [{}]}', '{"claims": [{}], "runs": []}'])
def test_a_malformed_plan_is_one_line(tmp_path, text):
    """The probes: `{}`, `[1]` and a run without keys ended in InputFunctionException tracebacks, `null` meant no plan."""
    path = tmp_path / "seed_plan.json"
    path.write_text(text)
    with pytest.raises(ResultsError, match="seed_plan.json") as error:
        read_plan(path)
    assert "\n" not in str(error.value)


def test_an_added_run_that_is_not_its_runs_extension_is_refused_before_training():
    """The probe: between the looks the added FedAvg runs' K = 100 became K = 1 in seed_plan.json, their ids
    recomputed; the second look trained them under the K = 100 curve. Each added run must be the extension of the run
    it extends, settings and seeds alike."""
    _, table = load_and_validate({"scale": "smoke"}, REPO / "config")
    figure = table.figure(PAPER, FIGURE)
    plan = make_plan([OpenClaim(PAPER, "X", "3", tuple(figure.run_ids))], table.runs,
                     {r: RunCost(0.0, 0.01) for r in figure.run_ids}, Settings(ADAPTIVE, 3, 10.0))
    assert planned_table(table, plan) is not table  # as made
    run = plan["runs"][0]
    edited = {**run["spec"], "K": 1}
    forged = {**plan, "runs": [{**run, "spec": edited, "run_id": run_id_of(edited)}, *plan["runs"][1:]]}
    with pytest.raises(ResultsError, match=f"added run {run_id_of(edited)} is not an extension of run "
                                           f"{run['extends']} .*differs in K"):
        planned_table(table, forged)
    overlapping = {**plan, "runs": [{**run, "first_seed": 0}, *plan["runs"][1:]]}  # seeds the run already has
    with pytest.raises(ResultsError, match="is not an extension"):
        planned_table(table, overlapping)
