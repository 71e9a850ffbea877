"""Where a run's files live and how they are written.

metrics.csv holds only what the spec determines (no times, hosts or dates) and formats
floats with repr(), so the same spec on the same device and software gives a byte-identical
file. Everything circumstantial goes to run.json, with the sha256 of the metrics.csv written
beside it: whatever reads a run's metrics for a figure or a verdict checks that hash first
(read_verified_record), so a changed result stops the pipeline instead of reaching a figure.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from fedrepro.errors import ResultsError
from fedrepro.utils import atomic
from fedrepro.utils.digest import file_sha256

# run.json key: sha256 of the metrics.csv bytes as written
METRICS_SHA256 = "metrics_sha256"
# run.json key: sha256 of run.json's own content without this key (record_sha256), so that what figures and
# verdicts read from it (per-seed facts, divergence, traces) is covered as metrics.csv is
RECORD_SHA256 = "record_sha256"


@dataclass(frozen=True)
class RunFiles:
    run_dir: Path

    @property
    def metrics(self) -> Path:
        return self.run_dir / "metrics.csv"

    @property
    def record(self) -> Path:
        return self.run_dir / "run.json"

    @property
    def checkpoint(self) -> Path:
        return self.run_dir / "checkpoint.pt"

    def group_checkpoint(self, g: int) -> Path:
        """The checkpoint of seed group g when a run's groups train at once (experiments/seed_workers.py)."""
        return self.run_dir / f"checkpoint.group{g}.pt"

    def checkpoints(self) -> list[Path]:
        """Every checkpoint file in the run's folder: one after another's, and each group's of groups at once."""
        return [self.checkpoint] + sorted(self.run_dir.glob("checkpoint.group*.pt"))

    @property
    def tree(self) -> Path:
        """The results directory the run's folder lies in (run_files: <results>/runs/<run_id>)."""
        return self.run_dir.parent.parent

    def escape(self) -> str | None:
        """Where the run's folder or one of its files leads when that is outside its results tree (a symbolic link
        on the way), as a message; None when all stay inside. A run writes, and the audit reads, only inside it."""
        found = (resolves_outside(path, self.tree) for path in (self.run_dir, self.metrics, self.record,
                                                                 self.checkpoint))
        return next(filter(None, found), None)


def resolves_outside(path: Path, tree: Path) -> str | None:
    """Where `path` leads when it resolves outside `tree` (each resolved: a tree that is itself a link is where it
    leads), as a message naming both; None when it stays inside."""
    resolved, root = Path(path).resolve(), Path(tree).resolve()
    if resolved == root or resolved.is_relative_to(root):
        return None
    return f"{path} resolves to {resolved}, outside the results tree {tree}/ (a symbolic link on the way)"


def run_files(results_dir: Path | str, run_id: str) -> RunFiles:
    return RunFiles(Path(results_dir) / "runs" / run_id)


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    return str(value)


def write_metrics(path: Path, rows: Iterable[dict[str, Any]], columns: list[str]) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row[c]) for c in columns])
    atomic.write_text(path, buf.getvalue())


def read_record(path: Path) -> dict[str, Any]:
    try:
        with open(path) as fh:
            record = json.load(fh)
    except ValueError as exc:
        raise ResultsError(f"{path} is not valid JSON ({exc}); rerun the run: delete {Path(path).parent}/ "
                           f"and run snakemake again") from None
    if not isinstance(record, dict):
        raise ResultsError(f"{path} is not a JSON object; rerun the run: delete {Path(path).parent}/ "
                           f"and run snakemake again")
    return record


def verify_metrics(files: RunFiles, record: dict[str, Any]) -> str:
    """Raise ResultsError unless metrics.csv has the sha256 that run.json recorded; returns it."""
    recorded = record.get(METRICS_SHA256)
    if not recorded:
        raise ResultsError(
            f"{files.record} records no sha256 of metrics.csv (written by an older fedrepro), so the metrics of "
            f"run {files.run_dir.name} cannot be verified; recompute it: delete {files.run_dir}/ and run snakemake "
            f"again")
    actual = file_sha256(files.metrics)
    if actual != recorded:
        raise ResultsError(
            f"{files.metrics} was changed after its run wrote it: sha256 {actual}, but run.json recorded {recorded}; "
            f"rerun it (delete {files.run_dir}/ and run snakemake again) or restore the recorded version with "
            f"`dvc checkout --force {files.metrics}`")
    return actual


def canonical_json(value: Any) -> str:
    """A JSON value as text that depends neither on key order nor on having been written and read back (values
    JSON cannot hold are written as text, as atomic.write_json writes them)."""
    return json.dumps(json.loads(json.dumps(value, default=str)), sort_keys=True, separators=(",", ":"))


def record_sha256(record: dict[str, Any]) -> str:
    """The sha256 of a run record's content, its own RECORD_SHA256 aside (canonical_json), so the hash does not
    depend on the file's layout."""
    return hashlib.sha256(canonical_json({k: v for k, v in record.items() if k != RECORD_SHA256}).encode()).hexdigest()


def verify_record(files: RunFiles, record: dict[str, Any]) -> str | None:
    """Raise ResultsError unless run.json's content has the sha256 it recorded; returns it (None for a record
    written before run.json was hashed: it cannot be verified, which the audit reports)."""
    recorded = record.get(RECORD_SHA256)
    if recorded is None:
        return None
    actual = record_sha256(record)
    if actual != recorded:
        raise ResultsError(
            f"{files.record} was changed after its run wrote it: its content hashes to {actual}, but it recorded "
            f"{recorded}; rerun it (delete {files.run_dir}/ and run snakemake again) or restore the recorded "
            f"version with `dvc checkout --force {files.record}`")
    return actual


def read_verified_record(files: RunFiles) -> dict[str, Any]:
    """run.json, after checking that metrics.csv and it are what the run wrote (verify_metrics, verify_record)."""
    record = read_record(files.record)
    verify_metrics(files, record)
    verify_record(files, record)
    return record
