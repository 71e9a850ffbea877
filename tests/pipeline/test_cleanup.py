"""workflow/rules/cleanup.smk: after a failed job, Snakemake leaves a run's folder that is a symbolic link or a mount
point as it is, where its own clean-up (DAG.cleanup_workdir) ended in a traceback under fedrepro's one-line error.
The patch replaces a method, so it holds for the Snakemake that pyproject.toml pins, and only while that one still
needs it."""

import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import snakemake
import snakemake.api  # (before snakemake.dag: importing that one first is a circular import)
from snakemake.dag import DAG

from fedrepro.validate import load_and_validate
from workflow_copy import BIN, MIRROR, copy_checkout, run

ROOT = Path(__file__).parents[2]
PATCH = ROOT / "workflow" / "rules" / "cleanup.smk"
RELEASED = DAG.cleanup_workdir


def dag_of(folder: Path) -> SimpleNamespace:
    """What the clean-up reads of a DAG: one job whose output, missing, lies in `folder`."""
    job = SimpleNamespace(output=[str(folder / "run.json")], input=[])
    return SimpleNamespace(jobs=[job], is_edit_notebook_job=lambda job: False)


@pytest.fixture
def patched(monkeypatch):
    # (setattr fails first if an upgrade renamed the method; so does the workflow's start)
    monkeypatch.setattr(DAG, "cleanup_workdir", DAG.cleanup_workdir)
    exec(PATCH.read_text(), {"WorkflowError": RuntimeError})
    return DAG.cleanup_workdir


def test_a_linked_or_mounted_empty_folder_is_left_and_any_other_removed(patched, tmp_path, monkeypatch):
    elsewhere, linked, mounted, plain = (tmp_path / name for name in ("elsewhere", "linked", "mounted", "plain"))
    for folder in (elsewhere, mounted, plain):
        folder.mkdir()
    linked.symlink_to(elsewhere, target_is_directory=True)
    patched(dag_of(linked))
    assert linked.is_symlink() and elsewhere.is_dir()
    really = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda path: Path(path) == mounted or really(path))
    patched(dag_of(mounted))  # unpatched: os.removedirs on a mount point is EBUSY
    assert mounted.is_dir()
    patched(dag_of(plain))
    assert not plain.exists()  # Snakemake's own clean-up, as before


def test_the_patched_snakemake_is_the_pinned_one_and_still_fails_on_a_linked_folder(tmp_path):
    # an upgrade of the pin fails here first: check its clean-up, then update or drop cleanup.smk
    pinned = re.search(r'"snakemake==([^"]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    assert snakemake.__version__ == pinned
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(NotADirectoryError):  # the patch's reason: were this gone, Snakemake would no longer need it
        RELEASED(dag_of(tmp_path / "linked"))


@pytest.mark.slow
@pytest.mark.skipif(not (MIRROR / "MANIFEST.json").exists(), reason=f"no data mirror at {MIRROR}")
def test_a_run_folder_linked_outside_its_tree_fails_in_one_line_without_a_traceback(tmp_path):
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    copy_checkout(work, git=False)
    run_id = load_and_validate({"scale": "smoke"}, work / "config")[1].paper_figures("fedvr")[0].run_ids[0]
    folder = work / "results" / "smoke" / "runs" / run_id
    folder.parent.mkdir(parents=True)
    folder.symlink_to(elsewhere, target_is_directory=True)
    done = run(BIN / "snakemake", "--cores", "1", "--config", "scale=smoke", "--",
               f"{folder.relative_to(work)}/run.json", cwd=work, env={"FEDREPRO_DATA_MIRROR": str(MIRROR)}, check=False)
    assert done.returncode == 1
    assert f"fedrepro: error: results/smoke/runs/{run_id} resolves to {elsewhere}, outside the results" in done.stderr
    assert "Traceback" not in done.stderr and "Exiting because a job execution failed" in done.stderr
    assert folder.is_symlink() and list(elsewhere.iterdir()) == []
