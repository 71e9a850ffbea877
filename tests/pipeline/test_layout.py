"""One output tree per scale (fedrepro/layout.py): the old layout is refused by the workflow and moved once, by
rename, into the tree of the scale its ledgers record; two scales' targets never name each other's files."""

from pathlib import Path

import pytest

from fedrepro.errors import ConfigError
from fedrepro.layout import Layout, migrate, old_layout
from workflow_copy import BIN, copy_checkout, planned_jobs, run

LEDGER = "claim_id,figure,scale,status\nC1,fig3,{scale},PASS\n"


def _old_results(root: Path, scale: str | None = "quick") -> dict[str, bytes]:
    """Files as the pipeline wrote them before one tree per scale; returns them by path."""
    files = {"results/runs/0123456789abcdef/metrics.csv": b"round,loss\n0,1.0\n",
             "results/fedvr/fig3.csv": b"x\n1\n", "figures/fedvr/fig3.pdf": b"%PDF",
             "logs/train/0123456789abcdef.log": b"ran\n", "logs/download/insurance.log": b"data\n"}
    if scale:
        files["results/claims/fedvr.csv"] = LEDGER.format(scale=scale).encode()
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
    return files


def test_migrate_renames_the_old_layout_into_the_ledgers_scale(tmp_path):
    files = _old_results(tmp_path, "quick")
    inode = (tmp_path / "results/runs/0123456789abcdef/metrics.csv").stat().st_ino
    moves = migrate(tmp_path)
    assert old_layout(tmp_path) == [] and len(moves) == 5
    out = Layout("quick", tmp_path)
    moved = out.runs / "0123456789abcdef" / "metrics.csv"
    assert moved.read_bytes() == files["results/runs/0123456789abcdef/metrics.csv"] and moved.stat().st_ino == inode
    assert out.table("fedvr", "fig3").is_file() and out.figure("fedvr", "fig3", "pdf").is_file()
    assert out.ledger("fedvr").is_file() and (out.logs / "train" / "0123456789abcdef.log").is_file()
    assert (tmp_path / "logs/download/insurance.log").is_file()  # the data's logs stay: every scale shares the data
    assert migrate(tmp_path) == []  # once


def test_migrate_needs_a_scale_it_can_tell_and_moves_nothing_onto_existing_files(tmp_path):
    _old_results(tmp_path, scale=None)
    with pytest.raises(ConfigError, match="no claims ledger records one; give it: fedrepro migrate --scale"):
        migrate(tmp_path)
    (Layout("smoke", tmp_path).results / "fedvr").mkdir(parents=True)
    before = sorted(p for p in tmp_path.rglob("*"))
    with pytest.raises(ConfigError, match="results/smoke/fedvr already exist"):
        migrate(tmp_path, "smoke")
    assert sorted(p for p in tmp_path.rglob("*")) == before
    assert len(migrate(tmp_path, "paper")) == 4 and (Layout("paper", tmp_path).results / "fedvr").is_dir()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("layout")
    copy_checkout(work, git=False)
    return work


def test_the_workflow_refuses_the_old_layout_and_names_the_command(workdir):
    (workdir / "results" / "claims").mkdir(parents=True)
    try:
        done = run(BIN / "snakemake", "-n", "--cores", "1", cwd=workdir, check=False)
    finally:
        (workdir / "results" / "claims").rmdir()
    said = done.stdout + done.stderr
    assert done.returncode != 0 and "results/claims: outputs of the layout before" in said and "fedrepro migrate" in said


def test_a_target_plans_only_its_own_scales_files(workdir):
    """figures/smoke/... runs at smoke although config/config.yaml says quick; a paper target at quick."""
    smoke = planned_jobs(run(BIN / "snakemake", "-n", "--cores", "1", "figures/smoke/fedvr/fig3.pdf", cwd=workdir).stdout)
    assert ("plot", "figures/smoke/fedvr/fig3.pdf") in smoke
    assert {out.split("/")[1] for _, out in smoke if out.startswith(("results/", "figures/"))} == {"smoke"}
    quick = planned_jobs(run(BIN / "snakemake", "-n", "--cores", "1", "--", "fedvr", cwd=workdir).stdout)
    assert {out.split("/")[1] for _, out in quick if out.startswith(("results/", "figures/"))} == {"quick"}
    assert {rule for rule, _ in quick} >= {"train", "aggregate", "plot", "claims", "audit_paper"}


def test_migrate_moves_a_tuning_to_the_scale_its_configuration_names(tmp_path):
    _old_results(tmp_path, "quick")
    (tmp_path / "config" / "variants").mkdir(parents=True)
    (tmp_path / "config" / "variants" / "steps.yaml").write_text("paper: tdcd\nscale: smoke\n")
    for name in ("steps/runs/0123456789abcdef/run.json", "steps.csv", "orphan.md"):
        (tmp_path / "results" / "tuning" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "results" / "tuning" / name).write_text("x")
    migrate(tmp_path)
    assert (Layout("smoke", tmp_path).variants / "steps" / "runs" / "0123456789abcdef" / "run.json").is_file()
    assert (Layout("smoke", tmp_path).variants / "steps.csv").is_file()
    assert (Layout("quick", tmp_path).variants / "orphan.md").is_file()  # no configuration: the ledgers'
    assert not (tmp_path / "results" / "tuning").exists()


def test_migrate_moves_a_scales_tunings_and_studies_into_its_variants(tmp_path):
    out = Layout("quick", tmp_path)
    for kind, name in (("tuning", "steps/runs/0123456789abcdef/run.json"), ("tuning", "steps.md"),
                       ("studies", "fleet.csv")):
        (out.results / kind / name).parent.mkdir(parents=True, exist_ok=True)
        (out.results / kind / name).write_text(kind)
    inode = (out.results / "tuning" / "steps.md").stat().st_ino
    assert len(migrate(tmp_path)) == 3
    assert (out.variants / "steps.md").stat().st_ino == inode and (out.variants / "fleet.csv").read_text() == "studies"
    assert (out.variants / "steps" / "runs" / "0123456789abcdef" / "run.json").is_file()
    assert not (out.results / "tuning").exists() and not (out.results / "studies").exists()
    assert migrate(tmp_path) == []  # once
