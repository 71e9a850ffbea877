"""A copy of the working tree for tests that run Snakemake on it, and the commands they run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MIRROR = Path(os.environ.get("FEDREPRO_DATA_MIRROR", REPO.parent / "shared" / "datasets"))  # the offline data
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def run(*cmd: str | Path, cwd: Path, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """A command's result (stdout and stderr as text); with `check`, a failure fails the test with its output."""
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env={**os.environ, **GIT_ENV, **(env or {})},
                          capture_output=True, text=True)
    assert not check or done.returncode == 0, \
        f"{' '.join(map(str, cmd))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


# DVC's records of a user's own outputs (`make record`: data/raw.dvc, results/quick.dvc, ...), committed or not: not
# the code under test, and a copy holding them would hold another scale's record
OUTPUT_RECORDS = re.compile(r"(data|results|figures)/[^/]+\.dvc")
# DVC's settings in every copy: the tests' own, with the default remote beside the copy (as .dvc/config names one
# beside the checkout), never the checkout's .dvc/config, which a user's `dvc remote add -d` or `dvc config` edits: a
# copy would then push a test's outputs to the user's remote
DVC_CONFIG = ".dvc/config"
TESTS_DVC_CONFIG = """[core]
    analytics = false
    check_update = false
    remote = local
['remote "local"']
    url = ../../fedrepro-dvc-remote
"""


def copy_checkout(dest: Path, git: bool = True, source: Path = REPO) -> None:
    """The working tree as git sees it (tracked + new, not ignored), without DVC's records of the outputs (a user's
    own runs') and with the tests' DVC settings (TESTS_DVC_CONFIG); with `git`, as a new repository."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=source, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (source / name).is_file() and not OUTPUT_RECORDS.fullmatch(name) and name != DVC_CONFIG:
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / name, dest / name)
    write_dvc_config(dest)
    if git:
        run("git", "init", "-q", cwd=dest)
        run("git", "add", "-A", cwd=dest)
        run("git", "commit", "-qm", "copy", cwd=dest)


def write_dvc_config(root: Path) -> None:
    (root / DVC_CONFIG).parent.mkdir(parents=True, exist_ok=True)
    (root / DVC_CONFIG).write_text(TESTS_DVC_CONFIG)


def planned_jobs(dry_run_output: str) -> set[tuple[str, str]]:
    """(rule, first output or, for a target rule, '') of every job a `snakemake -n` plans."""
    jobs = set()
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", dry_run_output):
        rule = re.match(r"(?:local)?rule (\w+):", block)
        if rule:
            output = re.search(r"^\s+output: ([^,\n]+)", block, re.MULTILINE)
            jobs.add((rule.group(1), output.group(1) if output else ""))
    return jobs
