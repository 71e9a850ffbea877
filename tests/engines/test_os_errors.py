"""Operating-system errors (a full disk, a lost permission) end a step with one line naming the file and
the cause, in the job's log too, and leave no half-written file behind."""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fedrepro.cli import run_step
from fedrepro.engines.context import RunContext
from fedrepro.utils import atomic

REPO = Path(__file__).resolve().parents[2]


def _disk_full(monkeypatch) -> None:
    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(atomic.os, "fsync", full)


def test_a_full_disk_during_a_checkpoint_names_the_file_and_keeps_the_last_checkpoint(tmp_path, monkeypatch):
    ctx = RunContext("r1", {}, "cpu", tmp_path / "run" / "checkpoint.pt", logging.getLogger("test"))
    ctx.save_checkpoint({"step": 1, "w": torch.ones(3)})
    before = ctx.checkpoint_path.read_bytes()
    _disk_full(monkeypatch)
    with pytest.raises(OSError) as info:
        ctx.save_checkpoint({"step": 2, "w": torch.zeros(3)})
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(ctx.checkpoint_path)
    assert ctx.checkpoint_path.read_bytes() == before  # the last good checkpoint stays
    assert sorted(p.name for p in ctx.checkpoint_path.parent.iterdir()) == ["checkpoint.pt"]  # no temporary left
    assert ctx.load_checkpoint()["step"] == 1


def test_an_os_error_ends_a_step_with_one_line_in_stderr_and_in_the_log(tmp_path):
    """As a pipeline job meets it: a fresh process whose step writes a result on a full disk."""
    target = tmp_path / "results" / "runs" / "r1" / "metrics.csv"
    log = tmp_path / "train.log"
    script = f"""
import errno, os
from fedrepro.cli import run_step
from fedrepro.utils import atomic
def full(fd):
    raise OSError(errno.ENOSPC, "No space left on device")
atomic.os.fsync = full
run_step(lambda: atomic.write_text({str(target)!r}, "round,loss"), {str(log)!r})
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    line = f"{target}: No space left on device (ENOSPC)"
    assert done.returncode == 1 and done.stderr == f"fedrepro: error: {line}\n"
    assert line in log.read_text() and "Traceback" not in log.read_text()
    assert not target.exists() and list(target.parent.iterdir()) == []


def test_a_lost_permission_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys):
    def denied(src, dst):  # what a read-only run directory gives (a test as root cannot chmod one away)
        raise PermissionError(errno.EACCES, "Permission denied")
    monkeypatch.setattr(atomic.os, "replace", denied)
    target = tmp_path / "run.json"
    with pytest.raises(SystemExit) as done:
        run_step(lambda: atomic.write_json(target, {"seeds": 3}))
    assert done.value.code == 1
    assert capsys.readouterr().err == f"fedrepro: error: {target}: Permission denied (EACCES)\n"
    assert list(tmp_path.iterdir()) == []  # the temporary file is gone too
