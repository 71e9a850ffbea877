"""The tidy table behind a figure: every run's rows, labelled with its curve and panel.

What a run contributes depends on the figure's plot kind (ROWS): its metrics (one row per logged point,
the default); for a `gantt` figure its timeline (one row per busy interval of a client, read from
run.json, plus one row per round close, read from metrics.csv); for a `clients` figure the facts of its
timing trace (one row per client, read from run.json).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pandas as pd

from fedrepro.asynchrony import TIMELINE_KINDS
from fedrepro.experiments.runtable import Figure, paper_column
from fedrepro.errors import ResultsError
from fedrepro.layout import figure_record
from fedrepro.experiments.store import RunFiles, read_verified_record, run_files
from fedrepro.utils import atomic
from fedrepro.utils.digest import file_sha256, read_sha256s, write_sha256s

TIMELINE_COLUMNS = ["seed", "kind", "client", "training", "round", "start", "end"]


def metric_rows(run_id: str, record: dict[str, Any], files: RunFiles, figure: Figure) -> pd.DataFrame:
    """The run's metrics.csv, with `diverged` per seed."""
    metrics = pd.read_csv(files.metrics)
    seeds = record["summary"]["seeds"]
    metrics["diverged"] = metrics["seed"].map(lambda s: seeds[str(s)]["diverged_at"] is not None)
    return metrics


def timeline_rows(run_id: str, record: dict[str, Any], files: RunFiles, figure: Figure) -> pd.DataFrame:
    """The run's timeline per seed (engine async with record_timeline), one row per interval: kind
    (train, upload, download), client, training (the client's training index; -1 for a download), start,
    end; then one row per round r >= 1 in metrics.csv, kind `round`, start = end = the instant round r
    closes (its sim_time, when w^r is formed), client and training -1. The rounds are those logged:
    evaluate every round to see them all. `round` is -1 on the intervals."""
    metrics = pd.read_csv(files.metrics)
    frames = []
    for seed, facts in sorted(record["summary"]["seeds"].items(), key=lambda kv: int(kv[0])):
        timeline = facts.get("timeline")
        if timeline is None:
            raise ValueError(f"figure {figure.name}: run {run_id} seed {seed} has no timeline in its run.json; "
                             f"a gantt figure needs runs with record_timeline: true")
        spans = pd.DataFrame({k: timeline[k] for k in ("client", "training", "start", "end")})
        spans.insert(0, "kind", [TIMELINE_KINDS[k] for k in timeline["kind"]])
        closes = metrics[(metrics["seed"] == int(seed)) & (metrics["round"] > 0)].drop_duplicates("round")
        closes = closes[closes["sim_time"].notna() & (closes["sim_time"] < float("inf"))]
        rounds = pd.DataFrame({"kind": "round", "client": -1, "training": -1, "round": closes["round"].to_numpy(),
                               "start": closes["sim_time"].to_numpy(), "end": closes["sim_time"].to_numpy()})
        frames.append(pd.concat([spans.assign(round=-1), rounds], ignore_index=True).assign(seed=int(seed)))
    return pd.concat(frames, ignore_index=True)[TIMELINE_COLUMNS]


def client_rows(run_id: str, record: dict[str, Any], files: RunFiles, figure: Figure) -> pd.DataFrame:
    """The facts of the run's timing trace per seed (engine async), one row per client: its simulated time
    per local step (`iteration_time`) and `speed` (steps per simulated second), the trainings it started and
    the ones a round consumed (`participation`, and its `participation_share` of all consumed), then the
    trace's summary (mean round time, consumed uploads per second, staleness, rounds_closed, ...), the same
    on every row of the seed. They come from the timing phase alone, so a diverged seed has them too."""
    frames = []
    for seed, facts in sorted(record["summary"]["seeds"].items(), key=lambda kv: int(kv[0])):
        if "participation" not in facts:
            raise ValueError(f"figure {figure.name}: run {run_id} seed {seed} has no trace facts in its run.json; "
                             f"a clients figure needs runs of engine async")
        participation = pd.Series(facts["participation"], dtype=float)
        clients = pd.DataFrame({
            "seed": int(seed), "client": range(len(participation)), "iteration_time": facts["iteration_time"],
            "trainings_started": facts["trainings_started"], "participation": participation,
            "participation_share": participation / max(participation.sum(), 1.0)})
        clients.insert(3, "speed", 1.0 / clients["iteration_time"])
        # `rounds` is also a run setting (Figs over rounds), which the labels would overwrite
        frames.append(clients.assign(**{"rounds_closed" if k == "rounds" else k: v for k, v in facts["trace"].items()}))
    return pd.concat(frames, ignore_index=True)


# What one run contributes to a figure's table, by its kind's `rows` (experiments/runtable.py FIGURE_KINDS)
ROWS: dict[str, Callable[[str, dict[str, Any], RunFiles, Figure], pd.DataFrame]] = {
    "metrics": metric_rows, "timeline": timeline_rows, "clients": client_rows}


def figure_table(figure: Figure, results_dir: Path) -> pd.DataFrame:
    """Every run's rows (ROWS, by the figure's kind), after the figure's label columns
    (Figure.label_columns); a curve's rows are those of its run and of the runs that add seeds to it (curve_rows). Each run's metrics.csv must be the one its run.json vouches for. A curve with
    an `x_source` gets it copied into the figure's x column (and run_id <run_id>/<x_source>); with plot
    option `common_x` each panel ends at the smallest last x of its curves (common_x)."""
    records = {rid: read_verified_record(run_files(results_dir, rid)) for rid in figure.run_ids}
    specs = {rid: rec["spec"] for rid, rec in records.items()}
    frames = []
    x = figure.plot.get("x")
    for curve in figure.curves:
        rows = curve_rows(figure, curve.run_id, records, results_dir)
        labels = figure.curve_labels(curve, specs[curve.run_id])
        if "x_source" in curve.analysis:  # the panel's own x column of the run (e.g. time at its t_comm)
            rows = rows.assign(**{x: rows[curve.analysis["x_source"]]})
            # one run drawn against several x columns (TDCD's t_comm = 10 and 100 panels) is one curve each:
            # its rows carry <run_id>/<x_source>, so every per-run summary reads one curve
            labels["run_id"] = f"{curve.run_id}/{curve.analysis['x_source']}"
        frames.append(rows.assign(**labels))
    table = pd.concat(frames, ignore_index=True)
    if figure.plot.get("common_x"):
        table = common_x(table, x)
    front = figure.label_columns
    return table[front + [c for c in table.columns if c not in front]]


def curve_rows(figure: Figure, run_id: str, records: dict[str, dict[str, Any]], results_dir: Path) -> pd.DataFrame:
    """The rows of the curve of run `run_id`: its run's, then those of the runs the seed plan adds to it
    (Figure.curve_runs), whose seeds follow its own (claims/seed_plan.py extension); a seed two of them share is an
    error, never a silent duplicate."""
    rows_of, frames, seen = ROWS[figure.kind.rows], [], set()
    for rid in figure.curve_runs(run_id):
        seeds = {int(s) for s in records[rid]["summary"]["seeds"]}
        if seeds & seen:
            raise ResultsError(f"figure {figure.name}: run {rid} adds seeds {sorted(seeds & seen)} that run {run_id}'s "
                               f"curve already has; the seed plan's runs must start after the seeds trained")
        seen |= seeds
        frames.append(rows_of(rid, records[rid], run_files(results_dir, rid), figure))
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def common_x(table: pd.DataFrame, x: str) -> pd.DataFrame:
    """Each panel's rows up to the smallest last x of its curves, the range every curve covers (TDCD's time
    plots end at the final time of the largest-Q run, T_common: docs/papers/tdcd.md R10)."""
    ends = table.groupby(["panel", "run_id"], sort=False)[x].max().groupby(level="panel", sort=False).min()
    return table[table[x] <= table["panel"].map(ends)].reset_index(drop=True)


def figure_table_csv(figure: Figure, results_dir: Path) -> str:
    """The figure table as the text of its CSV file (the audit compares it with the file on disk)."""
    return figure_table(figure, results_dir).to_csv(index=False)


def table_digest(table: Path) -> Path:
    """Where aggregate records the sha256 of a figure table as written: <figure>.csv -> <figure>.csv.sha256."""
    return table.with_name(table.name + ".sha256")


def write_figure_table(figure: Figure, results_dir: Path, out: Path) -> None:
    """The figure table, then its sha256 (sha256sum's format): what reads it in the pipeline checks it first."""
    atomic.write_text(out, figure_table_csv(figure, results_dir))
    write_sha256s(table_digest(out), [out])


def verify_figure_table(table: Path) -> None:
    """Raise ResultsError unless the figure table has the sha256 aggregate recorded beside it (rules plot,
    table and claims check it before reading, as aggregate checks each run's metrics)."""
    digest = table_digest(table)
    if not digest.is_file():
        raise ResultsError(f"{digest} does not exist, so {table} cannot be verified (written by an older fedrepro, "
                           f"or not by aggregate); rebuild it: delete {table} and run snakemake again")
    recorded, actual = next(iter(read_sha256s(digest).values()), ""), file_sha256(table)
    if actual != recorded:
        raise ResultsError(f"{table} was changed after aggregate wrote it: sha256 {actual}, but {digest.name} records "
                           f"{recorded}; rebuild it (delete {table} and run snakemake again) or restore the recorded "
                           f"version with `dvc checkout --force {table}`")


def recorded_sha256(path: Path) -> str | None:
    """The sha256 a figure's file (a drawing, or a table figure's file) had when it was written, from its record
    (layout.figure_record); None when there is no record of it."""
    record = figure_record(path)
    return read_sha256s(record).get(path.name) if record.is_file() else None


def verify_figure_file(path: Path) -> None:
    """Raise ResultsError unless a figure's file has the sha256 recorded when it was drawn (the report's figure page
    shows it only then)."""
    recorded, actual = recorded_sha256(path), file_sha256(path)
    if recorded is None:
        raise ResultsError(f"{figure_record(path)} records no sha256 of {path.name}, so {path} cannot be verified "
                           f"(drawn by an older fedrepro, or not by the pipeline); redraw it: delete {path} and run "
                           f"snakemake again")
    if actual != recorded:
        raise ResultsError(f"{path} was changed after it was drawn: sha256 {actual}, but {figure_record(path).name} "
                           f"records {recorded}; redraw it (delete {path} and run snakemake again) or restore the "
                           f"recorded version with `dvc checkout --force {path}`")


def verify_drawn(figures: Path) -> None:
    """Raise ResultsError unless every figure file under `figures` (a scale's figures/<scale>/) that a record lists
    (layout.figure_record) has the sha256 it had when it was drawn: the report shows them only then."""
    for record in sorted(figures.glob("*/*.sha256")):
        for name in read_sha256s(record):
            if (record.parent / name).is_file():
                verify_figure_file(record.parent / name)


def read_figure_table(path: Path) -> pd.DataFrame:
    """A figure table as written above. Columns that mix numbers and names (b1 = 100 or "full") are
    typed from the whole column, not per chunk, so the same value never comes back as int here and
    str there."""
    return pd.read_csv(path, low_memory=False)


def merged_labels(*label_lists: list[str]) -> list[str]:
    """The label columns of several figures' tables read as one (claims that span figures)."""
    return list(dict.fromkeys(c for labels in label_lists for c in labels))


def in_paper_terms(table: pd.DataFrame, labels: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """A figure table and its label columns as the claims read them, in the paper's terms: each setting its
    scale maps at the value of its paper column (n = 10 of 100 clients where the runs have 2 of 20), which is
    then dropped."""
    paper = {paper_column(c): c for c in labels if paper_column(c) in labels}
    if not paper:
        return table, labels
    table = table.assign(**{key: table[column] for column, key in paper.items()}).drop(columns=list(paper))
    return table, [c for c in labels if c not in paper]


def paper_values(table: pd.DataFrame, key: str) -> dict[Any, Any]:
    """Each value of setting `key` in a figure table -> the paper's value it stands for (its paper column; the
    value itself where the scale maps none). A value that stands for two of the paper's is an error."""
    column = paper_column(key)
    if column not in table:
        return {v: v for v in table[key].unique()}
    pairs = table[[key, column]].drop_duplicates()
    clash = pairs[pairs[key].duplicated(keep=False)]
    if len(clash):
        raise ResultsError(f"{key} = {clash[key].iloc[0]} stands for several of the paper's values "
                           f"({', '.join(map(str, clash[column]))}): its rows cannot be read in the paper's terms")
    return dict(zip(pairs[key], pairs[column]))
