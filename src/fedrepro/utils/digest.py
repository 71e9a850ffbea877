"""Content hashes: short ones of arrays recorded in run.json (partitions, initial weights) and of settings
(run ids, the configuration a Snakemake job reads); full ones of files (a run's metrics.csv)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

DIGEST_HEX = 16  # the hex digits of a digest below (a run id: the workflow's run_id wildcard)


def array_digest(array: np.ndarray) -> str:
    """The first 16 hex digits of the sha256 of the array's bytes (C order)."""
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:DIGEST_HEX]


def _plain(value: Any) -> Any:
    """Mapping keys as strings, so that canonical JSON can sort keys of mixed types (a scale's
    `values: {b1: {100: 10, full: full}}`); strings stay as they are, so a spec's digest is unchanged."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def config_digest(value: Any) -> str:
    """The first 16 hex digits of the sha256 of `value` as canonical JSON (keys sorted, no spaces, other
    objects as str): equal settings give equal digests in every process, whatever their key order."""
    canonical = json.dumps(_plain(value), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:DIGEST_HEX]


def file_sha256(path: Path | str) -> str:
    """The sha256 (hex) of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tree_sha256(path: Path | str, pattern: str = "*") -> str:
    """A file's sha256, or a folder's: the sha256 of its files' relative names and sha256s, in name order (a
    prepared multi-view folder); with `pattern`, of the files whose names match it (`*.py`: a package's sources)."""
    path = Path(path)
    if path.is_file():
        return file_sha256(path)
    lines = [f"{f.relative_to(path).as_posix()}\0{file_sha256(f)}\n" for f in sorted(path.rglob(pattern))
             if f.is_file()]
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


def write_sha256s(record: Path | str, files: list[Path]) -> None:
    """The sha256 of each file, in sha256sum's format ("<sha256>  <name>", one line each; the files lie beside the
    record), written atomically: what a figure table or a figure was when it was written."""
    from fedrepro.utils import atomic

    atomic.write_text(record, "".join(f"{file_sha256(f)}  {Path(f).name}\n" for f in files))


def read_sha256s(record: Path | str) -> dict[str, str]:
    """A record written by write_sha256s: file name -> sha256."""
    return {name: digest for digest, _, name in (line.partition("  ") for line in Path(record).read_text().splitlines())}
