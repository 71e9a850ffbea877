"""What a pipeline step that failed leaves behind: Snakemake deletes the outputs of a failed job, so the error that
deleted them is kept beside them (results/<scale>/claims/<paper>.failed.json for rule claims), for the audit to
name the cause of a missing ledger. The record is written when the step starts, so that a step killed outright (kill
-9, a cluster's time or memory limit), which runs no handler, leaves one too; a step that succeeds removes it."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from fedrepro.utils import atomic


def record_failure(path: Path, error: str | None, log: str | None) -> None:
    """Keep the step's error at `path` (None: the step starts, and has none yet); a record that cannot be written
    does not hide the error itself."""
    try:
        atomic.write_json(path, {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "error": error,
                                 "log": log})
    except (OSError, ValueError):
        pass


def read_failure(path: Path) -> dict[str, Any] | None:
    """The record a failed step left at `path`, or None (no failure recorded, or a record that cannot be read)."""
    import json

    try:
        record = json.loads(path.read_text())
        return record if isinstance(record, dict) and "error" in record else None
    except (OSError, ValueError):
        return None


def failure_text(record: dict[str, Any]) -> str:
    """One line: when the step failed and its error, or when it started and that it never finished; its log."""
    log = f" (log: {record['log']})" if record.get("log") else ""
    at = str(record.get("at", "?"))[:19]
    if record.get("error") is None:
        return (f"started at {at} and did not finish: it was killed (kill -9, or a time or memory limit) or is still "
                f"running{log}")
    return f"failed at {at}: {record['error']}{log}"
