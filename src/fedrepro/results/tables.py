"""The tidy table behind a figure: every run's metrics, labelled with its curve and panel."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fedrepro.experiments.runtable import Figure
from fedrepro.results.store import read_record, run_files
from fedrepro.utils.atomic import atomic_path


def figure_table(figure: Figure, results_dir: Path) -> pd.DataFrame:
    """Every run's metrics, after the figure's label columns (Figure.label_columns)."""
    records = {rid: read_record(run_files(results_dir, rid).record) for rid in figure.run_ids}
    specs = {rid: rec["spec"] for rid, rec in records.items()}
    keys = figure.setting_keys
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
    front = figure.label_columns
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


def merged_labels(*label_lists: list[str]) -> list[str]:
    """The label columns of several figures' tables read as one (claims that span figures)."""
    return list(dict.fromkeys(c for labels in label_lists for c in labels))
