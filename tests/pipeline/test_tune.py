"""Step-size tuning (variants/tune.py) and the `per_run` settings that freeze its choice: each group's
value is the one with the lowest score, a diverging value loses, trials train once, the chosen block read
back into the configuration gives every run its value, and bad tunings stop with a message."""

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from fedrepro.errors import ConfigError
from fedrepro.experiments.runtable import load_paper_config, resolve_paper
from fedrepro.validate import load_and_validate
from fedrepro.variants.run import run_variants
from fedrepro.experiments.variant_files import load_variants
from fedrepro.variants.tune import chosen, groups_of, per_run_entries, score, trials_of
from fedrepro.experiments.store import read_record
from project_dir import REPO, make_project

TUNING = {"paper": "tdcd", "scale": "smoke", "figures": ["fig6"], "by": ["dataset", "N", "K", "Q"],
          "grid_by": "dataset", "grid": {"cifar10": {"lr": [0.02, 1.0e4]}}, "select": {"metric": "train_loss", "last": 3},
          # every trial: one seed of its own, and fewer iterations than the panels of Fig. 6 set
          "seeds": {"first": 1000, "count": 1},
          "set": {"scales": {"smoke": {"panels": {"cifar_k_small": {"iterations": 12},
                                                  "cifar_k_large": {"iterations": 12}}}}}}


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A project directory with the repository's configs and a tiny prepared CIFAR-10 view (3x16x16)."""
    make_project(tmp_path, "cifar10", "cifar10-tdcd_pool2", (3, 16, 16), 30)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_tuning(project: Path, name: str, tuning: dict) -> None:
    (project / "config" / "variants").mkdir(exist_ok=True)
    (project / "config" / "variants" / f"{name}.yaml").write_text(yaml.safe_dump(tuning))


def test_each_group_keeps_its_lowest_scoring_value_and_the_block_freezes_it(project, capsys):
    write_tuning(project, "tiny", TUNING)
    result = run_variants("tiny", jobs=1)
    assert len(result) == 8 * 2  # fig6: 2 K x 4 Q groups, each at both grid values
    for _, group in result.groupby(["K", "Q"]):
        assert group["chosen"].sum() == 1
        assert group.loc[group["chosen"], "score"].iloc[0] == group["score"].min()
    huge = result[result["lr"] == 1.0e4]
    assert not huge["chosen"].any() and (huge["score"] > result[result["lr"] == 0.02]["score"].max()).all()
    specs = [read_record(r / "run.json")["spec"] for r in (project / "results" / "smoke" / "variants" / "tiny" / "runs").iterdir()]
    assert len(specs) == 16 and {(s["first_seed"], s["seeds"], s["iterations"]) for s in specs} == {(1000, 1, 12)}
    assert pd.read_csv(project / "results" / "smoke" / "variants" / "tiny.csv")["chosen"].sum() == 8

    # the Markdown's per_run block, laid into the scale, gives every tuned run the chosen value
    md = (project / "results" / "smoke" / "variants" / "tiny.md").read_text()
    assert "differs from the chosen values in 8 of 8 groups" in md  # the configured smoke rate is 0.005
    block = yaml.safe_load(md.split("```yaml\n")[1].split("```")[0])
    assert block["tunings"] == {"tiny": {"first": 1000, "count": 1}}  # the seeds the values were chosen on
    cfg = load_paper_config(project / "config" / "papers" / "tdcd.yaml")
    cfg["scales"]["smoke"]["per_run"] = block["per_run"]
    runs, figures = resolve_paper(cfg, "smoke")
    fig6 = [runs[r] for r in figures[("tdcd", "fig6")].run_ids]
    assert {s["lr"] for s in fig6} == {0.02}
    assert {s["lr"] for r, s in runs.items() if s["dataset"] != "cifar10"} == {0.05, 0.003}  # others untouched

    capsys.readouterr()
    run_variants("tiny", jobs=1)
    assert "16 runs, 0 to train" in capsys.readouterr().out


def test_per_run_entries_apply_in_order_and_name_known_settings():
    cfg = load_paper_config(REPO / "config" / "papers" / "tdcd.yaml")
    cfg["scales"]["smoke"]["per_run"] = [{"where": {"dataset": "cifar10"}, "set": {"lr": 0.3}},
                                         {"where": {"dataset": "cifar10", "Q": 1}, "set": {"lr": 0.7}}]
    runs, _ = resolve_paper(cfg, "smoke")
    cifar = {(s["Q"], s["lr"]) for s in runs.values() if s["dataset"] == "cifar10"}
    assert cifar == {(1, 0.7), (10, 0.3), (20, 0.3), (30, 0.3)}
    cfg["scales"]["smoke"]["per_run"] = [{"where": {"datset": "cifar10"}, "set": {"lr": 0.3}}]
    with pytest.raises(ConfigError, match=r"per_run\[0\] matches on datset"):
        resolve_paper(cfg, "smoke")


def test_the_lowest_score_wins_a_tie_goes_to_the_first_grid_value_and_a_diverged_group_chooses_none():
    result = pd.DataFrame({"K": [5, 5, 5, 10, 10, 20, 20], "lr": [0.1, 0.2, 0.5, 0.1, 0.2, 0.1, 0.2],
                           "score": [2.0, 1.5, 1.5, np.inf, 3.0, np.inf, np.inf]})
    assert chosen(result, ["K"]).tolist() == [False, True, False, False, True, False, False]


def test_with_goal_max_the_highest_score_wins_and_a_tie_goes_to_the_smaller_steps():
    """DeFedAvg's protocol (config/variants/defedavg_quick.yaml): every combination of two grids, the first
    setting outermost; the highest area under the accuracy curve wins, a diverged trial (-inf) never."""
    groups = {("fedavg", 2): {"method": "fedavg", "n": 2, "lr_global": 1.0, "lr_local": 0.1, "seeds": 1},
              ("asysg", 2): {"method": "asysg", "n": 2, "lr_global": 0.1, "lr_local": 1.0, "seeds": 1}}
    tuning = {"by": ["method", "n"], "grid_by": "method", "seeds": {"first": 1000, "count": 2},
              "grid": {"fedavg": {"lr_global": [0.1, 1.0], "lr_local": [0.01, 0.1]}, "asysg": {"lr_global": [0.1, 1.0]}}}
    trials = trials_of(groups, tuning)
    fedavg = trials[trials["method"] == "fedavg"]
    assert list(zip(fedavg["lr_global"], fedavg["lr_local"])) == [(0.1, 0.01), (0.1, 0.1), (1.0, 0.01), (1.0, 0.1)]
    assert trials.loc[trials["method"] == "asysg", "lr_local"].isna().all()  # AsySG's own rate is not tuned
    assert all(s == {**groups[(s["method"], 2)], "lr_global": s["lr_global"], "lr_local": s["lr_local"],
                     "first_seed": 1000, "seeds": 2}  # the group's run at the grid's values, on the tuning's seeds
               for s in trials["spec"]) and trials["run_id"].is_unique
    result = trials.drop(columns="spec").assign(score=[0.6, 0.7, 0.7, -np.inf, 0.5, 0.5])
    picked = result[chosen(result, ["method", "n"], goal="max")]
    assert list(zip(picked["method"], picked["lr_global"], picked["lr_local"].fillna(0))) == [
        ("fedavg", 0.1, 0.1), ("asysg", 0.1, 0)]
    assert per_run_entries(picked, tuning) == [
        {"where": {"method": "fedavg", "n": 2}, "set": {"lr_global": 0.1, "lr_local": 0.1}},
        {"where": {"method": "asysg", "n": 2}, "set": {"lr_global": 0.1}}]


def test_a_group_must_be_told_apart_by_its_settings():
    runs = {"a": {"dataset": "d", "Q": 1, "K": 2, "lr": 0.1}, "b": {"dataset": "d", "Q": 10, "K": 2, "lr": 0.1}}
    tuning = {"grid": {"d": {"lr": [0.1]}}}
    assert len(groups_of(runs, {**tuning, "by": ["dataset", "Q"]})) == 2
    with pytest.raises(ConfigError, match="differ in Q; add it to `by`"):
        groups_of(runs, {**tuning, "by": ["dataset", "K"]})


def test_score_is_the_mean_of_the_last_evaluations_and_a_diverged_trial_loses():
    metrics = pd.DataFrame({"seed": [0] * 4 + [1] * 4, "train_loss": [9.0, 3.0, 2.0, 1.0, 9.0, 5.0, 4.0, 3.0]})
    assert score(metrics, "train_loss", 3) == pytest.approx((2.0 + 4.0) / 2)
    assert score(metrics.assign(train_loss=[9.0, 3.0, np.nan, 1.0] * 2), "train_loss", 3) == np.inf
    assert score(metrics, "train_loss", "all", goal="max") == pytest.approx((15.0 / 4 + 21.0 / 4) / 2)
    assert score(metrics.assign(train_loss=[np.inf] * 8), "train_loss", "all", goal="max") == -np.inf


def test_a_tuning_that_would_train_a_judged_seed_is_refused(project):
    """Tuning never uses the judged seeds: seeds 0-4 of TDCD's runs are judged (the paper scale's 5), so a tuning
    on seeds 4-5 stops before training anything, at whatever scale it tunes; one without `seeds` is no tuning."""
    write_tuning(project, "judged", {**TUNING, "seeds": {"first": 4, "count": 2}})
    with pytest.raises(ConfigError, match="variants judged: seeds 4-5 include seeds 4 that runs of tdcd are judged on"):
        run_variants("judged", jobs=1)
    assert not (project / "results" / "smoke" / "variants" / "judged").exists()
    write_tuning(project, "unseeded", {k: v for k, v in TUNING.items() if k != "seeds"})
    with pytest.raises(ConfigError, match="config/variants/unseeded.yaml"):
        load_variants("unseeded")


def test_a_bad_tuning_is_named(project):
    write_tuning(project, "bad", {k: v for k, v in TUNING.items() if k != "grid"})
    with pytest.raises(ConfigError, match="config/variants/bad.yaml"):
        load_variants("bad")
    write_tuning(project, "bad", {**TUNING, "grid": {"cifar10": [0.1]}})
    with pytest.raises(ConfigError, match=r"grid\.cifar10: \[0\.1\] is not of type 'object'"):
        load_variants("bad")
    write_tuning(project, "bad", {**TUNING, "select": {"metric": "test_accuracy", "last": "all", "goal": "best"}})
    with pytest.raises(ConfigError, match="select.goal: 'best' is not allowed; allowed values: min, max"):
        load_variants("bad")
    write_tuning(project, "bad", {**TUNING, "claims": ["C1"]})  # a tuning judges by its score, not by claims
    with pytest.raises(ConfigError, match="config/variants/bad.yaml"):
        load_variants("bad")
    write_tuning(project, "bad", {**TUNING, "by": ["dataset", "lr"]})
    with pytest.raises(ConfigError, match="none of the tuned settings"):
        run_variants("bad", jobs=1)
    write_tuning(project, "bad", {**TUNING, "grid": {"mnist": {"lr": [0.1]}}})
    with pytest.raises(ConfigError, match="no grid for dataset = cifar10"):
        run_variants("bad", jobs=1)


def test_the_ledger_record_names_the_judged_seeds_and_the_seeds_each_frozen_tuning_chose_on(tmp_path):
    """A scale's `tunings` records the seeds its per_run was chosen on; the ledger's record (RunTable.seeds_record,
    which rule claims writes into results/<scale>/claims/<paper>.json) names them beside the judged seeds and says
    which of them are judged too."""
    config = tmp_path / "config"
    shutil.copytree(REPO / "config", config)
    path = config / "papers" / "fedpage.yaml"
    cfg = yaml.safe_load(path.read_text())

    def record(tunings):
        cfg["scales"]["smoke"]["tunings"] = tunings
        path.write_text(yaml.safe_dump(cfg))
        return load_and_validate({"scale": "smoke"}, config)[1].ledger_settings("fedpage")["seeds"]

    assert record({"fedpage_smoke": {"first": 1000, "count": 2}}) == {
        "judged": [0], "tunings": {"fedpage_smoke": {"settings": ["c_l"], "seeds": [1000, 1001], "judged": []}}}
    assert record({"fedpage_smoke": {"first": 0, "count": 1}})["tunings"]["fedpage_smoke"]["judged"] == [0]
    with pytest.raises(ConfigError, match="scales.smoke.tunings names fedpage_quick, which is not a tuning of "
                                          "fedpage at the smoke scale"):
        record({"fedpage_quick": {"first": 1000, "count": 5}})
    with pytest.raises(ConfigError, match="no variants file .*fedpage_tiny.yaml"):
        record({"fedpage_tiny": {"first": 1000, "count": 1}})
