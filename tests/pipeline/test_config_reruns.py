"""Every change to a figure's or a claim's configuration reruns exactly the jobs that read it.

On a copy of the workflow whose outputs exist and are up to date (empty files, stamped by
`snakemake --touch`, which also records each job's params), an edit of config/papers/fedvr.yaml or
config/claims/fedvr.yaml must make `snakemake -n` plan the jobs that read the edited part, and
no other (never a training run)."""

import json
import os
from pathlib import Path

import pytest

from fedrepro.training_code import code_sha256

from workflow_copy import BIN, copy_checkout, planned_jobs, run

pytestmark = pytest.mark.slow
TARGET = ["--config", "scale=smoke", "--", "fedvr"]
# the paper's audit (rule audit_paper) reads its figures and ledger, so it follows any of them
AUDIT = {("audit_paper", "results/smoke/audit/fedvr.md"), ("fedvr", "")}
# a figure's report page shows its drawing
PLOT_FIG9 = {("plot", "figures/smoke/fedvr/fig9.pdf"), ("figure_page", "figures/smoke/fedvr/fig9.html")} | AUDIT
# the ledger and its HTML table (rule claims_table), and every figure's report page, which shows its ledger rows
PAGES = {("figure_page", f"figures/smoke/fedvr/fig{n}.html") for n in range(3, 10)}
CLAIMS = {("claims", "results/smoke/claims/fedvr.csv"), ("claims_table", "results/smoke/claims/fedvr.html")} | PAGES \
    | AUDIT


@pytest.fixture(scope="module")
def workflow(tmp_path_factory) -> Path:
    """A copy of the repository with every output of the smoke fedvr target present and up to date."""
    work = tmp_path_factory.mktemp("reruns")
    copy_checkout(work, git=False)
    summary = run(BIN / "snakemake", "--summary", *TARGET, cwd=work).stdout
    for line in summary.splitlines()[1:]:
        path = work / line.split("\t")[0]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    run(BIN / "snakemake", "--cores", "1", "--touch", *TARGET, cwd=work)
    assert "Nothing to be done" in run(BIN / "snakemake", "-n", *TARGET, cwd=work).stdout
    return work


def _planned_after(work: Path, path: str, old: str, new: str) -> set[tuple[str, str]]:
    """The jobs `snakemake -n` plans once `old` is replaced by `new` (once) in `path`, which is then restored."""
    file = work / path
    original = file.read_text()
    assert original.count(old) == 1, f"{old!r} must occur once in {path}"
    file.write_text(original.replace(old, new))
    try:
        return planned_jobs(run(BIN / "snakemake", "-n", *TARGET, cwd=work).stdout)
    finally:
        file.write_text(original)


@pytest.mark.parametrize("old, new, expected", [
    pytest.param('title: "Fig. 9: three algorithms', 'title: "Fig. 9: three methods', PLOT_FIG9, id="title"),
    pytest.param("overlays the three variances across runs", "overlays their variances", PLOT_FIG9, id="caption"),
    pytest.param('ylim: [1.0e-6, 1.0], overlay: variance,', 'ylim: [1.0e-7, 1.0], overlay: variance,', PLOT_FIG9,
                 id="plot option"),
    # a curve label is a column of the figure's table: the table, the figure and the ledger read it
    pytest.param("{method: fedavg_uniform}]", '{method: fedavg_uniform, label: "FedAvg [4]"}]',
                 PLOT_FIG9 | CLAIMS | {("aggregate", "results/smoke/fedvr/fig9.csv")}, id="curve label"),
])
def test_a_figure_edit_reruns_only_its_jobs(workflow, old, new, expected):
    assert _planned_after(workflow, "config/papers/fedvr.yaml", old, new) == expected


@pytest.mark.parametrize("old, new", [("factor: 0.1", "factor: 0.2"),
                                      ('expected: "as C1 for case 2"', 'expected: "as C1, in case 2"')])
def test_a_claim_edit_reruns_only_the_ledger(workflow, old, new):
    assert _planned_after(workflow, "config/claims/fedvr.yaml", old, new) == CLAIMS


def test_the_untouched_workflow_plans_nothing(workflow):
    assert planned_jobs(run(BIN / "snakemake", "-n", *TARGET, cwd=workflow).stdout) == set()


def test_an_edit_of_the_train_script_retrains_nothing(workflow):
    # runs are named by their spec and numerics version (profiles/default: rerun-triggers without `code`)
    assert _planned_after(workflow, "scripts/train.py", "# rule train:", "# rule train (edited):") == set()


def test_stale_runs_lists_the_runs_not_trained_by_this_code_for_forcerun(workflow):
    """Of three run.json files, one records this code's hash, one another's and one none; the others are the
    fixture's empty files, which cannot say. Rewritten with their modification times kept: Snakemake plans nothing
    until `--forcerun $(fedrepro stale-runs)` forces the runs the command lists, and what reads them."""
    runs = sorted((workflow / "results" / "smoke" / "runs").iterdir())
    current, other, unrecorded = (run / "run.json" for run in runs[:3])
    stamps = {path: path.stat() for path in (current, other, unrecorded)}
    for path, record in ((current, {"code_sha256": code_sha256("monte_carlo")}), (other, {"code_sha256": "0" * 64}),
                         (unrecorded, {})):
        path.write_text(json.dumps(record))
        os.utime(path, ns=(stamps[path].st_atime_ns, stamps[path].st_mtime_ns))
    try:
        assert planned_jobs(run(BIN / "snakemake", "-n", *TARGET, cwd=workflow).stdout) == set()
        listed = run(BIN / "fedrepro", "stale-runs", "--scale", "smoke", cwd=workflow)
        planned = planned_jobs(run(BIN / "snakemake", "-n", "--forcerun", *listed.stdout.split(), *TARGET,
                                   cwd=workflow).stdout)
    finally:
        for path, stamp in stamps.items():
            path.write_text("")
            os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert sorted(listed.stdout.split()) == [f"results/smoke/runs/{r.name}/run.json" for r in runs if r != current.parent]
    assert "1 run(s): predates the code hash; 1 run(s): trained by other code; 1 run(s): trained by this code" in (
        listed.stderr)
    trained = {Path(output).parent.name for rule, output in planned if rule == "train"}
    assert trained == {run.name for run in runs} - {current.parent.name}
    assert ("aggregate", "results/smoke/fedvr/fig9.csv") in planned  # and what reads them
