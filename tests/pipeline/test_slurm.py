"""The workflow on a real SLURM scheduler: the table of a fedvr figure at the smoke scale (download, prepare,
its two runs and the table) through profiles/slurm (the Snakemake SLURM executor plugin) on a one-node
cluster on localhost (slurm_cluster.py), against a local run of the same target. Every job but the local
rules must have gone through sbatch and ended COMPLETED under SLURM, and every metrics.csv and the figure
table must be byte-identical to the local run's.

One figure table, not the paper's whole smoke pipeline (22 jobs): a job under SLURM starts Snakemake twice
(the plugin's job step, then srun), each parsing the workflow with torch imported, ~15-20 CPU seconds a job,
and the plugin polls job states at intervals growing by 10 s, so the whole paper would take many minutes on a
2-core machine; three stages (prepare, train, aggregate) show the data, training and figure rules run there.

Needs root (installs slurm-wlm and munge with apt-get when missing, starts their daemons); elsewhere it is
skipped with the reason, which `-ra` (pyproject.toml addopts) prints in the test summary.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from slurm_cluster import JOBCOMP, PARTITION, Unavailable, local_cluster
from workflow_copy import BIN, MIRROR, copy_checkout, run

PAPER, FIGURE = "fedvr", "fig3"  # the cheapest smoke figure: 2 runs of 10 rounds (4 Monte Carlo seeds)
# the scale is the one the target path names (a remote job must find it there too, from its wildcards)
TARGET = f"results/smoke/{PAPER}/{FIGURE}.csv"
CONFIG = ["--config", f"papers=[{PAPER}]"]
# Run on the submit host, never submitted: the workflow's localrules.
LOCAL_RULES = {"download"}
# What the test sets instead of the profile's CHANGE-ME placeholders, and to be quick on a tiny cluster:
# squeue for job states (sacct needs slurmdbd), a first status check 5 s after a submission instead of 40
# (about what a job takes here; then every 15, 25, ... s), the logs of successful jobs kept as the record of
# each submission.
SLURM_ARGS = ["--default-resources", f"slurm_partition={PARTITION}", "--slurm-status-command", "squeue",
              "--slurm-init-seconds-before-status-checks", "5", "--slurm-keep-successful-logs", "--latency-wait", "5"]

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.skipif(not (MIRROR / "MANIFEST.json").exists(), reason=f"no data mirror at {MIRROR}"),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The environment for SLURM's commands; the daemons are stopped after the tests of this module."""
    root = tmp_path_factory.mktemp("slurm")
    try:
        with local_cluster(root) as env:
            yield env, root
    except Unavailable as why:
        pytest.skip(f"no SLURM cluster here: {why}")


def job_records(path: Path) -> dict[str, dict[str, str]]:
    """slurmctld's job completion records (jobcomp/filetxt): job id -> its fields."""
    records = [dict(re.findall(r"(\w+)=(\S*)", line)) for line in path.read_text().splitlines() if line.strip()]
    return {r["JobId"]: r for r in records}


def submitted_jobs(work: Path) -> list[tuple[str, str]]:
    """(rule, SLURM job id) of every job the plugin submitted: its log .snakemake/slurm_logs/rule_<rule>/
    [<wildcards>/]<job id>.log, which slurmd writes."""
    logs = (work / ".snakemake" / "slurm_logs").rglob("*.log")
    return [(log.relative_to(work / ".snakemake" / "slurm_logs").parts[0].removeprefix("rule_"), log.stem)
            for log in logs]


def results(work: Path) -> dict[str, bytes]:
    """Every run's metrics.csv and the figure table, by path."""
    paths = [*(work / "results" / "smoke" / "runs").glob("*/metrics.csv"), work / TARGET]
    return {str(p.relative_to(work)): p.read_bytes() for p in paths}


def test_a_smoke_figure_table_through_the_slurm_profile_matches_a_local_run(cluster, tmp_path):
    env, root = cluster
    local, remote = tmp_path / "local", tmp_path / "slurm"
    for work in (local, remote):
        work.mkdir()
        copy_checkout(work)

    mirror = {"FEDREPRO_DATA_MIRROR": str(MIRROR)}
    run(BIN / "snakemake", "--cores", "2", TARGET, *CONFIG, cwd=local, env=mirror)
    done = run(BIN / "snakemake", "--workflow-profile", "profiles/slurm", TARGET, *CONFIG, *SLURM_ARGS,
               cwd=remote, env={**env, **mirror})
    out = done.stdout + done.stderr

    # every job Snakemake planned, but the local rules, was submitted with sbatch and completed under SLURM
    planned = Counter(dict((rule, int(n)) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", out, re.M)))
    planned = Counter({rule: n for rule, n in planned.items() if rule not in LOCAL_RULES | {"total"}})
    jobs = submitted_jobs(remote)
    assert Counter(rule for rule, _ in jobs) == planned and planned["train"] > 0, out[-4000:]
    records = job_records(root / JOBCOMP)
    run_id = re.search(r"SLURM run ID: (\S+)", out).group(1)  # the plugin names every job of a run so
    assert {records[job_id]["Name"] for _, job_id in jobs} == {run_id} and len(records) == len(jobs)
    assert all(records[job_id]["JobState"] == "COMPLETED" for _, job_id in jobs)

    ours, theirs = results(remote), results(local)
    assert ours.keys() == theirs.keys() and len(ours) == 3  # 2 runs and the figure table
    assert [path for path in ours if ours[path] != theirs[path]] == []
