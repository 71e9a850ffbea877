"""One output tree per scale (fedrepro/layout.py): two scales' targets never name each other's files."""

from pathlib import Path

import pytest

from workflow_copy import BIN, copy_checkout, planned_jobs, run


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("layout")
    copy_checkout(work, git=False)
    return work


def test_a_target_plans_only_its_own_scales_files(workdir):
    """figures/smoke/... runs at smoke although config/config.yaml says quick; a paper target at quick."""
    smoke = planned_jobs(run(BIN / "snakemake", "-n", "--cores", "1", "figures/smoke/fedvr/fig3.pdf", cwd=workdir).stdout)
    assert ("plot", "figures/smoke/fedvr/fig3.pdf") in smoke
    assert {out.split("/")[1] for _, out in smoke if out.startswith(("results/", "figures/"))} == {"smoke"}
    quick = planned_jobs(run(BIN / "snakemake", "-n", "--cores", "1", "--", "fedvr", cwd=workdir).stdout)
    assert {out.split("/")[1] for _, out in quick if out.startswith(("results/", "figures/"))} == {"quick"}
    assert {rule for rule, _ in quick} >= {"train", "aggregate", "plot", "claims", "audit_paper"}
