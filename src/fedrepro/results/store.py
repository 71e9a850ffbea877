"""Where a run's files live and how they are written.

metrics.csv holds only what the spec determines (no times, hosts or dates) and formats
floats with repr(), so the same spec on the same device and software gives a byte-identical
file. Everything circumstantial goes to run.json.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from fedrepro.utils import atomic


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
    with open(path) as fh:
        return json.load(fh)
