"""A real result set to audit: fedvr at the smoke scale (5 runs of seconds on the insurance data from the offline
mirror), produced in-process as the pipeline's rules would, in a git repository of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fedrepro.claims.ledger import write_ledger
from fedrepro.claims.support import DECIDE
from fedrepro.data import fetch_dataset, prepare_dataset
from fedrepro.experiments.execute import execute_run
from fedrepro.layout import Layout
from fedrepro.plots import draw_figure
from fedrepro.plots.claims import draw_claims_figure
from fedrepro.experiments.store import run_files
from fedrepro.results.tables import write_figure_table
from fedrepro.validate import load_and_validate

REPO = Path(__file__).resolve().parents[2]
MIRROR = Path(os.environ.get("FEDREPRO_DATA_MIRROR") or REPO.parent / "shared" / "datasets")
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
PAPER = "fedvr"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env={**os.environ, **GIT_ENV}, check=True, capture_output=True)


@pytest.fixture(scope="session")
def fedvr_smoke(tmp_path_factory) -> Path:
    if not (MIRROR / "insurance" / "insurance.csv").is_file():
        pytest.skip(f"offline data mirror not found at {MIRROR} (set FEDREPRO_DATA_MIRROR)")
    root = tmp_path_factory.mktemp("fedvr-smoke")
    for name in ("config", "workflow"):
        shutil.copytree(REPO / name, root / name)
    for name in ("requirements.lock", ".gitignore", ".dvcignore", "data/.gitignore", "results/.gitignore",
                 "figures/.gitignore"):
        (root / name).parent.mkdir(exist_ok=True)
        shutil.copy(REPO / name, root / name)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "config")

    fetch_dataset("insurance", root / "data" / "raw", MIRROR)
    prepare_dataset("insurance", root / "data" / "raw" / "insurance", root / "data" / "prepared" / "insurance.npz")
    _, table = load_and_validate({"scale": "smoke"}, root / "config")
    figures = table.paper_figures(PAPER)
    results = Layout("smoke", root).results
    (root / "logs").mkdir()
    for run_id in sorted({rid for f in figures for rid in f.run_ids}):
        inputs = table.input_files(run_id)
        execute_run(run_id, table.runs[run_id], run_files(results, run_id),
                    root / inputs["prepared"], [root / p for p in inputs["provenance"]],
                    device="cpu", log_path=root / "logs" / f"{run_id}.log", repo=root)
    tables = []
    for figure in figures:
        tables.append(results / PAPER / f"{figure.name}.csv")
        write_figure_table(figure, results, tables[-1])
        draw_figure(figure, tables[-1], *(Layout("smoke", root).figure(PAPER, figure.name, ext) for ext in ("pdf", "png")))
    settings = table.ledger_settings(PAPER)  # as rule claims writes the ledger and its record
    write_ledger(root / "config" / "claims" / f"{PAPER}.yaml", tables, settings["figures"], "smoke",
                 results / "claims" / f"{PAPER}.csv", results / "claims" / f"{PAPER}.json", settings["scale_note"],
                 settings["readings"], settings["alternatives"], settings["seeds"])
    draw_claims_figure(results / "claims" / f"{PAPER}.csv", PAPER, DECIDE,
                       *(Layout("smoke", root).claims_figure(PAPER, ext) for ext in ("pdf", "png")))
    return root


@pytest.fixture
def smoke_copy(fedvr_smoke, tmp_path, monkeypatch) -> Path:
    """A copy of the result set to alter, as the current directory."""
    root = tmp_path / "repo"
    shutil.copytree(fedvr_smoke, root, symlinks=True)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def dvc_record():
    """dvc_record(root, *paths): `dvc init`, `dvc add` the paths and commit the .dvc files, as `make record` does."""
    dvc = Path(sys.executable).parent / "dvc"
    if not dvc.exists():
        pytest.skip(f"dvc is not installed beside {sys.executable}")

    def record(root: Path, *paths: str) -> None:
        subprocess.run([dvc, "init", "-q"], cwd=root, check=True)
        subprocess.run([dvc, "add", "-q", *paths], cwd=root, check=True)
        git(root, "add", "-A")
        git(root, "commit", "-qm", "record")

    return record
