"""The tidy table behind a figure: every run's metrics, labelled with its curve and panel."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fedrepro.experiments.runtable import Figure
from fedrepro.results.store import read_record, run_files
from fedrepro.utils.atomic import atomic_path

LABEL_COLUMNS = ["figure", "panel", "curve", "method", "run_id"]


def _setting_keys(specs: dict[str, dict]) -> list[str]:
    """Every scalar setting of the runs, so the table alone tells how each curve was made."""
    keys = {k for s in specs.values() for k, v in s.items() if isinstance(v, (int, float, str))}
    return sorted(keys - set(LABEL_COLUMNS) - {"paper", "engine"})


def figure_table(figure: Figure, results_dir: Path) -> pd.DataFrame:
    records = {rid: read_record(run_files(results_dir, rid).record) for rid in figure.run_ids}
    specs = {rid: rec["spec"] for rid, rec in records.items()}
    keys = _setting_keys(specs)
    frames = []
    for curve in figure.curves:
        metrics = pd.read_csv(run_files(results_dir, curve.run_id).metrics)
        seeds = records[curve.run_id]["summary"]["seeds"]
        metrics["diverged"] = metrics["seed"].map(lambda s: seeds[str(s)]["diverged_at"] is not None)
        labels = {"figure": figure.name, "panel": curve.panel, "curve": curve.label,
                  "method": curve.method, "run_id": curve.run_id}
        labels.update({k: specs[curve.run_id].get(k) for k in keys})
        frames.append(metrics.assign(**labels))
    table = pd.concat(frames, ignore_index=True)
    front = LABEL_COLUMNS + keys
    return table[front + [c for c in table.columns if c not in front]]


def write_figure_table(figure: Figure, results_dir: Path, out: Path) -> None:
    table = figure_table(figure, results_dir)
    with atomic_path(out, suffix=".csv") as tmp:
        table.to_csv(tmp, index=False)


def read_figure_table(path: Path) -> pd.DataFrame:
    """A figure table as written above. Columns that mix numbers and names (b1 = 100 or "full") are
    typed from the whole column, not per chunk, so the same value never comes back as int here and
    str there."""
    return pd.read_csv(path, low_memory=False)


def label_columns(table: pd.DataFrame) -> list[str]:
    """The columns that identify a curve: everything before the metrics, which start at `seed`."""
    return list(table.columns[: table.columns.get_loc("seed")])
