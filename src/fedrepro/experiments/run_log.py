"""A run's log: one logger per log file, which every process training the run appends to."""

from __future__ import annotations

import logging
from pathlib import Path


def run_logger(log_path: Path | None) -> logging.Logger:
    """The run's logger, writing to `log_path` (appended to), or to standard error without one."""
    log = logging.getLogger(f"fedrepro.run.{log_path}")
    log.setLevel(logging.INFO)
    log.propagate = False
    if not log.handlers:
        handler = logging.FileHandler(log_path) if log_path else logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        log.addHandler(handler)
    return log
