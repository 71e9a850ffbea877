"""Atomic file writes: a reader never sees a half-written file.

Everything is written to a temporary file in the target directory and renamed into
place (rename is atomic on POSIX within one filesystem). A writer killed outright (kill -9, a
cluster's time limit) cleans nothing up: its temporary file stays, so the next writer of the same
target removes those of writers no longer running (temporary_sibling).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from fedrepro.utils.finite import non_finite

# mkstemp creates 0600 files; give finished files the usual umask-based mode instead.
_UMASK = os.umask(0)
os.umask(_UMASK)
FILE_MODE = 0o666 & ~_UMASK
DIR_MODE = 0o777 & ~_UMASK  # for folders built under a temporary name (mkdtemp makes them 0700)


def temporary_sibling(target: Path, suffix: str = "", directory: bool = False) -> Path:
    """A new empty temporary file (or folder) beside `target`, .<name>.<pid>-<random><suffix>.tmp, made after
    removing the ones that earlier writers of `target` left when they were killed: those whose process is not
    running here. Two writers of one target never run at once in the pipeline (Snakemake gives each output one
    job), so a temporary of a process that runs elsewhere (a cluster node) is left only by a killed job."""
    for stale in _stale_temporaries(target):
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)
    prefix = f".{target.name}.{os.getpid()}-"
    if directory:
        return Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix + ".tmp", dir=target.parent))
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix + ".tmp", dir=target.parent)
    os.close(fd)
    os.chmod(tmp, FILE_MODE)
    return Path(tmp)


def _stale_temporaries(target: Path) -> list[Path]:
    """The temporaries of `target` (temporary_sibling's names; before they named their process,
    .<name>.<random><suffix>.tmp) whose writer is not running: a target whose name extends this one's
    (fig9.png.sha256) has temporaries of its own, which the pattern does not match."""
    own = re.compile(rf"\.{re.escape(target.name)}\.(?:(\d+)-)?[a-z0-9_]{{8}}(?:\.[^.]+)?\.tmp")
    found = [Path(p) for p in glob.glob(f".{glob.escape(target.name)}.*.tmp", root_dir=target.parent)]
    return [target.parent / p for p in found if (m := own.fullmatch(p.name)) and not _running(m[1])]


def _running(pid: str | None) -> bool:
    """Whether the process `pid` runs on this machine (None: a temporary that does not name its writer)."""
    if pid is None or int(pid) <= 0:  # (os.kill(0, ...) would signal our own process group)
        return False
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:  # another user's process
        return True
    return True


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside `target`; rename it onto `target` on success.

    On any exception the temporary file is removed and `target` is left untouched.
    `suffix` lets writers that infer the format from the extension (np.savez, savefig)
    see the right one.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = temporary_sibling(target, suffix)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    except OSError as error:  # a full disk or a lost permission: name the file it was for
        tmp_path.unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror or str(error), str(target)) from error
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_bytes(target: str | os.PathLike, data: bytes) -> None:
    with atomic_path(target) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())


def write_text(target: str | os.PathLike, text: str) -> None:
    write_bytes(target, text.encode("utf-8"))


def write_json(target: str | os.PathLike, obj: Any) -> None:
    """`obj` as strict JSON (objects it cannot hold as text); a NaN or an infinity, which Python's json would write
    as bare NaN or Infinity (not JSON), is a ValueError naming the file and the key, and nothing is written."""
    found = non_finite(obj)
    if found:
        where, value = found[0]
        raise ValueError(f"{target}: {where} is {value}, which JSON cannot hold"
                         + (f" (and {len(found) - 1} more)" if len(found) > 1 else ""))
    write_text(target, json.dumps(obj, indent=2, sort_keys=True, default=str, allow_nan=False) + "\n")


def write_npz(target: str | os.PathLike, arrays: dict[str, np.ndarray], compressed: bool = True) -> None:
    """Named arrays as an .npz (uncompressed when the file is read often and decompressing costs
    more than the disk)."""
    save = np.savez_compressed if compressed else np.savez
    # A file object, because np.savez would append ".npz" to the temporary file's name.
    with atomic_path(target) as tmp, open(tmp, "wb") as fh:
        save(fh, **arrays)
