"""Scale studies (variants/study.py): each variant's settings reach its runs, its claims are judged on
its own runs, shared runs train once, and bad studies or missing data stop with a message."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from fedrepro.errors import ConfigError, DataError
from fedrepro.variants.run import run_variants
from fedrepro.experiments.store import read_record
from project_dir import make_project

TINY = {"samples_per_device": 4, "E": 1, "B": 2, "csgd_batch": 4, "seeds": 2, "train_eval_subsample": 40}
def _defaults(settings: dict) -> dict:
    """A patch of the smoke scale's defaults."""
    return {"set": {"scales": {"smoke": {"defaults": settings}}}}


STUDY = {
    "paper": "fedcluster", "scale": "smoke",
    "set": {"scales": {"smoke": {"defaults": {"rounds": 2}, "panels": {"mnist": {"lr_fedavg": 0.3}}}}},
    "figures": {"fig5": {"panels": ["MNIST, ρ_device = 0.1"]}},
    "claims": ["C11b", "I3"],
    "variants": {"few": _defaults({"n_devices": 20, **TINY}), "many": _defaults({"n_devices": 40, **TINY})},
}


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A project directory with the repository's configs, a tiny prepared MNIST view and its provenance."""
    make_project(tmp_path, "mnist", "mnist-crop28_pool2", (1, 6, 6), 20)
    (tmp_path / "config" / "variants").mkdir(exist_ok=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_study(project: Path, name: str, study: dict) -> None:
    (project / "config" / "variants" / f"{name}.yaml").write_text(yaml.safe_dump(study, allow_unicode=True))


def test_each_variant_runs_with_its_settings_and_is_judged_on_its_runs(project):
    write_study(project, "tiny", STUDY)
    result = run_variants("tiny", jobs=1)
    assert sorted(zip(result["variant"], result["claim_id"])) == sorted(
        (v, c) for v in STUDY["variants"] for c in STUDY["claims"])
    assert set(result["status"]) <= {"PASS", "FAIL", "INCONCLUSIVE"}
    # I3 counts M global updates a round: an invariant of FedCluster that must hold in every variant
    assert (result.loc[result["claim_id"] == "I3", "status"] == "PASS").all()
    runs = sorted((project / "results" / "smoke" / "variants" / "tiny" / "runs").iterdir())
    specs = [read_record(r / "run.json")["spec"] for r in runs]
    assert sorted(s["n_devices"] for s in specs) == [20] * 4 + [40] * 4  # FedAvg, FedCluster M = 5, 10, 20 each
    assert {s["rounds"] for s in specs} == {2} and {s["lr_fedavg"] for s in specs} == {0.3}  # what the study pins
    written = pd.read_csv(project / "results" / "smoke" / "variants" / "tiny.csv")
    assert len(written) == len(result)
    md = (project / "results" / "smoke" / "variants" / "tiny.md").read_text()
    assert "| C11b | few |" in md and "scales.smoke.defaults.n_devices = 40" in md


def test_a_rerun_trains_only_what_is_missing(project, capsys):
    write_study(project, "tiny", STUDY)
    run_variants("tiny", jobs=1)
    runs = project / "results" / "smoke" / "variants" / "tiny" / "runs"
    stamps = {r.name: (r / "metrics.csv").stat().st_mtime_ns for r in runs.iterdir()}
    grown = {**STUDY, "variants": {**STUDY["variants"], "more": _defaults({"n_devices": 60, **TINY})}}
    write_study(project, "tiny", grown)
    capsys.readouterr()
    result = run_variants("tiny", jobs=1)
    assert "4 to train" in capsys.readouterr().out
    assert {r.name: (r / "metrics.csv").stat().st_mtime_ns for r in runs.iterdir() if r.name in stamps} == stamps
    assert set(result["variant"]) == {"few", "many", "more"}


def test_bad_studies_and_missing_data_stop_with_a_message(project):
    write_study(project, "unknown_claim", {**STUDY, "claims": ["C99"]})
    with pytest.raises(ConfigError, match="unknown claims"):
        run_variants("unknown_claim")
    write_study(project, "no_variants", {k: v for k, v in STUDY.items() if k != "variants"})
    with pytest.raises(ConfigError, match="config/variants/no_variants.yaml"):
        run_variants("no_variants")  # claims without variants: neither a study nor a tuning
    with pytest.raises(ConfigError, match="no variants file config/variants/absent.yaml; known: .*fedcluster_scale, .*no_variants"):
        run_variants("absent")
    (project / "data" / "prepared" / "mnist-crop28_pool2.npz").unlink()
    write_study(project, "tiny", STUDY)
    with pytest.raises(DataError, match="mnist-crop28_pool2.npz"):
        run_variants("tiny")
