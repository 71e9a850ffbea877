"""The Makefile's deleting target: `make clean` takes only a scale the configuration defines."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fedrepro.schemas import SCALES
from workflow_copy import write_dvc_config

REPO = Path(__file__).resolve().parents[2]


def checkout(root: Path) -> Path:
    """The Makefile and what it reads, with every scale's outputs and a file beside the checkout."""
    repo = root / "repo"
    for name in ("Makefile", "config/config.yaml", "workflow/schemas/config.schema.yaml"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, repo / name)
    for tree in ("results", "figures", "logs"):
        (repo / tree / ".gitignore").parent.mkdir()
        (repo / tree / ".gitignore").write_text("*\n")
        for scale in SCALES:
            (repo / tree / scale).mkdir()
            (repo / tree / scale / "file").write_text(scale)
    (root / "beside").write_text("not the repository's")
    return repo


def make(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=repo, capture_output=True, text=True)


@pytest.mark.parametrize("scale", ["", "../..", "huge", "smoke quick"])
def test_clean_refuses_a_scale_the_configuration_does_not_define(tmp_path, scale):
    """Under `make -n` (which prints what the old Makefile would have deleted) and for real: nothing runs."""
    repo = checkout(tmp_path)
    planned = make(repo, "-n", "clean", f"SCALE={scale}")
    assert planned.returncode != 0 and "rm " not in planned.stdout
    assert (f"SCALE='{scale}' is not a scale the configuration defines (smoke quick paper: "
            f"workflow/schemas/config.schema.yaml); nothing deleted") in planned.stderr
    if scale != "../..":  # never for real on a Makefile that might not refuse it: it would delete tmp_path's parent
        assert make(repo, "clean", f"SCALE={scale}").returncode != 0
    assert all((repo / tree / s / "file").is_file() for tree in ("results", "figures", "logs") for s in SCALES)
    assert (tmp_path / "beside").is_file()


@pytest.mark.parametrize("scale", SCALES)
def test_clean_deletes_that_scales_outputs_only(tmp_path, scale):
    repo = checkout(tmp_path)
    done = make(repo, "clean", f"SCALE={scale}")
    assert done.returncode == 0, done.stderr
    for tree in ("results", "figures", "logs"):
        assert sorted(p.name for p in (repo / tree).iterdir()) == sorted({".gitignore", *SCALES} - {scale})


def test_pull_names_a_default_remote_that_does_not_exist(tmp_path):
    """A fresh clone whose default DVC remote (../fedrepro-dvc-remote, beside the repository) was never pushed to:
    DVC alone says "Everything is up to date", then "Checkout failed ... Is your cache up to date?"."""
    dvc = Path(sys.executable).parent / "dvc"
    if not dvc.exists():
        pytest.skip(f"dvc is not installed beside {sys.executable}")
    repo = checkout(tmp_path)
    for name in ("pyproject.toml", "requirements.lock", ".dvcignore"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, repo / name)
    write_dvc_config(repo)  # the tests' own, not what a user's `dvc remote add` left in this checkout's
    (repo / ".venv").mkdir()
    (repo / ".venv" / ".installed").touch()  # `make install` done: the tests' own environment stands for it
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    remote = (tmp_path / "fedrepro-dvc-remote").resolve()
    done = make(repo, "pull", "SCALE=smoke", f"BIN={dvc.parent}")
    assert done.returncode != 0
    assert (f"make pull: the default DVC remote 'local' is {remote}, which does not exist: push to it first "
            f"(`dvc push` where the results were recorded), or name another (`dvc remote add -d NAME URL`)"
            ) in done.stderr
    assert "Everything is up to date" not in done.stdout + done.stderr


def test_reproduce_looks_twice_under_adaptive_seeds_and_once_by_default(tmp_path):
    """SEEDS=adaptive: the first look, the plan from its ledgers, the second look, then report and record; the default
    (config.yaml's seed_plan, fixed) runs Snakemake once, with the mode passed on."""
    repo = checkout(tmp_path)
    for name in ("pyproject.toml", "requirements.lock"):
        shutil.copy(REPO / name, repo / name)
    (repo / ".venv").mkdir()
    (repo / ".venv" / ".installed").touch()  # installed: the dry run shows the reproduction alone
    done = make(repo, "-n", "reproduce", "SEEDS=adaptive", "SCALE=smoke")
    lines = done.stdout.splitlines()
    steps = [" ".join(line.split()[:2]).removeprefix(".venv/bin/") for line in lines if line.startswith(".venv/bin")]
    assert done.returncode == 0, done.stderr
    assert steps[:3] == ["snakemake --cores", "fedrepro seed-plan", "snakemake --cores"]  # then report, record
    assert all("seed_plan=adaptive" in line for line in lines if "bin/snakemake" in line)
    assert "seed-plan --scale smoke" in "\n".join(lines)
    default = make(repo, "-n", "reproduce", "SCALE=smoke").stdout
    assert default.count("bin/snakemake --cores all") == 1 and "seed_plan=fixed" in default and "seed-plan" not in default
