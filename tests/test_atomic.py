"""Atomic writes leave nothing half-written, even when their writer is killed outright (utils/atomic.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

from fedrepro.data.extract import extract_tar
from fedrepro.utils import atomic

SRC = Path(__file__).resolve().parents[1] / "src"
# a writer killed (SIGKILL: no handler, no finally) while it draws a figure, after its temporary file exists
KILLED_WHILE_DRAWING = """
import os, signal, sys
from fedrepro.utils.atomic import atomic_path
with atomic_path(sys.argv[1], suffix=".png") as tmp:
    os.kill(os.getpid(), signal.SIGKILL)
"""


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def dead_pid() -> int:
    """The id of a process that has ended."""
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_the_next_write_removes_what_a_killed_writer_left(tmp_path):
    """The issue's probe: a kill during savefig left a zero-byte .fig9.png.<random>.png.tmp beside the figure."""
    figure = tmp_path / "fig9.png"
    killed = subprocess.run([sys.executable, "-c", KILLED_WHILE_DRAWING, str(figure)],
                            env={**os.environ, "PYTHONPATH": str(SRC)})
    assert killed.returncode == -9
    (left,) = listing(tmp_path)
    assert left.startswith(".fig9.png.") and left.endswith(".png.tmp")
    atomic.write_bytes(figure, b"drawn")
    assert listing(tmp_path) == ["fig9.png"] and figure.read_bytes() == b"drawn"


def test_a_temporary_of_a_running_writer_or_of_another_target_is_kept(tmp_path):
    """Only the target's own temporaries whose writer is gone are removed; those from before temporaries named their
    process (the issue's .fig9.png.<random>.png.tmp) count as gone."""
    gone, running = dead_pid(), os.getpid()
    kept = [f".fig9.png.{running}-abcdefgh.png.tmp", f".fig9.png.sha256.{gone}-abcdefgh.tmp", f".fig9.pdf.{gone}-"
            f"abcdefgh.pdf.tmp", "fig9.pdf"]
    removed = [f".fig9.png.{gone}-a1b2c3d4.png.tmp", ".fig9.png.k9x_2mqa.png.tmp"]
    for name in kept + removed:
        (tmp_path / name).write_bytes(b"")
    atomic.write_bytes(tmp_path / "fig9.png", b"drawn")
    assert listing(tmp_path) == sorted(kept + ["fig9.png"])


def test_a_folder_a_killed_extraction_left_is_removed_by_the_next(tmp_path):
    source = tmp_path / "member.txt"
    source.write_text("data")
    with tarfile.open(tmp_path / "data.tar.gz", "w:gz") as tar:
        tar.add(source, arcname="member.txt")
    stale = tmp_path / "out" / f".raw.{dead_pid()}-abcdefgh.tmp"
    stale.mkdir(parents=True)
    (stale / "member.txt").write_text("da")  # half extracted
    extract_tar(tmp_path / "data.tar.gz", tmp_path / "out" / "raw")
    assert listing(tmp_path / "out") == ["raw"] and (tmp_path / "out" / "raw" / "member.txt").read_text() == "data"
