"""What a pipeline step that failed leaves behind: Snakemake deletes the outputs of a failed job, so the error that
deleted them is kept beside them (results/<scale>/claims/<paper>.failed.json for rule claims), for the audit to
name the cause of a missing ledger. A step that succeeds removes it."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from fedrepro.utils import atomic


def record_failure(path: Path, error: str, log: str | None) -> None:
    """Keep the failed step's error at `path`; a record that cannot be written does not hide the error itself."""
    try:
        atomic.write_json(path, {"failed": datetime.now(timezone.utc).isoformat(timespec="seconds"), "error": error,
                                 "log": log})
    except (OSError, ValueError):
        pass


def read_failure(path: Path) -> dict[str, Any] | None:
    """The record a failed step left at `path`, or None (no failure recorded, or a record that cannot be read)."""
    import json

    try:
        record = json.loads(path.read_text())
        return record if isinstance(record, dict) and isinstance(record.get("error"), str) else None
    except (OSError, ValueError):
        return None


def failure_text(record: dict[str, Any]) -> str:
    """One line: when the step failed, its error and its log."""
    log = f" (log: {record['log']})" if record.get("log") else ""
    return f"failed at {str(record.get('failed', '?'))[:19]}: {record['error']}{log}"
