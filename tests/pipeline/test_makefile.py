"""The Makefile's deleting target: `make clean` takes only a scale the configuration defines."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fedrepro.schemas import SCALES

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
