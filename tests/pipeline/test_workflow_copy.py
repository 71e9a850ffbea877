"""The tests that run Snakemake on a copy of the checkout: the copy holds the code, not what a user's own runs left in
the checkout, and it reads the data mirror the tests were given, relative as the README writes it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workflow_copy import BIN, GIT_ENV, MIRROR, REPO, TESTS_DVC_CONFIG, copy_checkout, run

needs_mirror = pytest.mark.skipif(not (MIRROR / "MANIFEST.json").exists(), reason=f"no data mirror at {MIRROR}")


def test_a_copy_of_the_checkout_leaves_out_what_a_users_runs_recorded(tmp_path):
    """`make reproduce` ends with `make record`, which leaves data/*.dvc, results/<scale>.dvc and figures/<scale>.dvc
    (committed or not, as docs/audit.md has them committed), and a user's `dvc remote add -d` edits .dvc/config: a copy
    holds the code, the trees' .gitignore and the tests' own DVC settings (a remote beside the copy) only."""
    source, dest = tmp_path / "checkout", tmp_path / "copy"
    users_remote = "[core]\n    remote = mine\n['remote \"mine\"']\n    url = /srv/users-own-remote\n"
    for name, text in {"src/code.py": "x = 1\n", "results/.gitignore": "/quick\n", "data/.gitignore": "",
                       "results/quick.dvc": "outs: []\n", "data/raw.dvc": "outs: []\n", ".dvc/config": users_remote,
                       ".dvc/.gitignore": "/cache\n"}.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text)
    run("git", "init", "-q", cwd=source)
    run("git", "add", "src/code.py", "results/.gitignore", "data/raw.dvc", ".dvc", cwd=source)  # data/raw.dvc committed
    run("git", "commit", "-qm", "code", cwd=source)
    (source / "src" / "new.py").write_text("y = 2\n")  # work in progress: tested as it is
    (source / "figures").mkdir()
    (source / "figures" / "quick.dvc").write_text("outs: []\n")
    dest.mkdir()
    copy_checkout(dest, source=source)
    copied = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file() and ".git" not in p.parts)
    assert copied == [".dvc/.gitignore", ".dvc/config", "data/.gitignore", "results/.gitignore", "src/code.py",
                      "src/new.py"]
    assert (dest / ".dvc" / "config").read_text() == TESTS_DVC_CONFIG


@needs_mirror
def test_a_copied_workflow_reads_the_data_mirror_the_tests_were_given(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    copy_checkout(work, git=False)
    run(BIN / "snakemake", "--cores", "1", "data/raw/insurance/PROVENANCE.json", cwd=work,
        env={"FEDREPRO_DATA_MIRROR": str(MIRROR)})  # as test_end_to_end and test_slurm pass it
    assert '"source": "mirror"' in (work / "data" / "raw" / "insurance" / "PROVENANCE.json").read_text()


@pytest.mark.slow
@needs_mirror
def test_the_pipeline_tests_run_with_a_relative_mirror_as_the_readme_writes_it():
    """`FEDREPRO_DATA_MIRROR=../shared/datasets make test`: the tests' start-up (tests/conftest.py) makes it absolute
    before a test copies the workflow elsewhere."""
    relative = os.path.relpath(MIRROR.absolute(), REPO)
    assert not Path(relative).is_absolute()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           f"{Path(__file__).relative_to(REPO)}::test_a_copied_workflow_reads_the_data_mirror_the_tests_"
                           f"were_given"], cwd=REPO, env={**os.environ, **GIT_ENV, "FEDREPRO_DATA_MIRROR": relative},
                          capture_output=True, text=True)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
