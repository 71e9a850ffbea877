"""Atomic file writes: a reader never sees a half-written file.

Everything is written to a temporary file in the target directory and renamed into
place (rename is atomic on POSIX within one filesystem).
"""

from __future__ import annotations

import contextlib
import json
import os
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


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside `target`; rename it onto `target` on success.

    On any exception the temporary file is removed and `target` is left untouched.
    `suffix` lets writers that infer the format from the extension (np.savez, savefig)
    see the right one.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix + ".tmp", dir=target.parent)
    os.close(fd)
    os.chmod(tmp, FILE_MODE)
    tmp_path = Path(tmp)
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
