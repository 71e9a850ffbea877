"""Helpers of the end-to-end tests: run a command in a copy of the repository with the data mirror."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MIRROR = Path(os.environ.get("FEDREPRO_DATA_MIRROR", REPO.parent / "shared" / "datasets"))
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def sh(*cmd: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run `cmd` in `cwd` (environment: `env` or this process's, with the mirror); its output, or a
    failed assertion with the end of it."""
    env = {**(env or os.environ), **GIT_ENV, "FEDREPRO_DATA_MIRROR": str(MIRROR)}
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def copy_checkout(dest: Path) -> None:
    """The working tree as git sees it (tracked + new, not ignored), as a new repository."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    sh("git", "init", "-q", cwd=dest)
    sh("git", "add", "-A", cwd=dest)
    sh("git", "commit", "-qm", "copy", cwd=dest)
