"""What the jobs of a scale cost, from Snakemake's own benchmark records (each rule's `benchmark:`, in
logs/<scale>/benchmarks/<rule>/..., the data rules' in logs/benchmarks/<rule>/...): per paper and rule the jobs, their
wall and CPU seconds and their peak memory, what the runs of each reading cost, and the slowest runs. `fedrepro
cost` prints it."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from fedrepro.errors import ResultsError
from fedrepro.experiments.runtable import PRIMARY
from fedrepro.experiments.store import read_record, run_files
from fedrepro.layout import Layout

DATA = "(data)"  # the data rules' jobs, shared by every scale
SLOWEST = 5
DEFAULT_TRAIN_MB = 3000  # the memory a training job asks for where no run of its paper at its scale has a record
# Snakemake samples a job's memory about once a second (its benchmark's max_rss): a short peak may fall between samples
MEMORY_MARGIN = 1.5


def _record(tsv: Path) -> dict[str, float]:
    """A benchmark file's wall seconds, CPU seconds and peak resident memory (MB): its first row (a rule run with
    Snakemake's `repeat` has more)."""
    row = pd.read_csv(tsv, sep="\t").iloc[0]
    return {"wall_s": float(row["s"]), "cpu_s": float(row.get("cpu_time", float("nan"))),
            "max_rss_mb": float(row.get("max_rss", float("nan")))}


def train_peaks(scale: str, root: Path = Path(".")) -> dict[str, float]:
    """The peak resident memory (MB) of each training job of the scale with a benchmark record, by run id."""
    folder = Layout(scale, root).logs / "benchmarks" / "train"
    return {tsv.stem: _record(tsv)["max_rss_mb"] for tsv in sorted(folder.glob("*.tsv"))}


def train_memory_mb(run_id: str, paper_runs: list[str], peaks: dict[str, float]) -> int:
    """The memory (MB) a training job asks a cluster for: MEMORY_MARGIN x the peak its own record shows (train_peaks),
    else the largest of its paper's runs at the scale (`paper_runs`), rounded up to 100 MB; DEFAULT_TRAIN_MB without
    a record."""
    mine = [peaks[run_id]] if run_id in peaks else [peaks[r] for r in paper_runs if r in peaks]
    known = [mb for mb in mine if not math.isnan(mb)]
    return math.ceil(MEMORY_MARGIN * max(known) / 100) * 100 if known else DEFAULT_TRAIN_MB


def _paper_of_run(results: Path, run_id: str) -> str:
    try:
        return read_record(run_files(results, run_id).record)["spec"]["paper"]
    except (OSError, ResultsError, KeyError, TypeError):
        return "?"


def job_costs(scale: str, root: Path = Path("."), origins: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per job with a benchmark record: rule, paper, job (its wildcards as a path), wall_s, cpu_s,
    max_rss_mb, and reading: for a train job, what `origins` says adds its run (PRIMARY or reading=alternative;
    "?" for a run that no figure of the configuration has now), else empty."""
    out = Layout(scale, root)
    rows = []
    for base, paper_of in ((out.logs / "benchmarks", None), (root / "logs" / "benchmarks", DATA)):
        for tsv in sorted(base.rglob("*.tsv")):
            rule, *rest = tsv.relative_to(base).with_suffix("").parts
            job = "/".join(rest)
            paper = paper_of or (_paper_of_run(out.results, job) if rule == "train" else rest[0])
            reading = (origins or {}).get(job, "?") if rule == "train" else ""
            rows.append({"rule": rule, "paper": paper, "job": job, **_record(tsv), "reading": reading})
    return pd.DataFrame(rows, columns=["rule", "paper", "job", "wall_s", "cpu_s", "max_rss_mb", "reading"])


def _markdown(frame: pd.DataFrame) -> str:
    cells = [[f"{v:.1f}" if isinstance(v, float) else str(v) for v in row] for row in frame.itertuples(index=False)]
    return "\n".join(["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
                     + ["| " + " | ".join(row) + " |" for row in cells])


def cost_summary(costs: pd.DataFrame, scale: str) -> str:
    """Markdown: per paper and rule, then per paper, the runs per reading, then the slowest runs."""
    if costs.empty:
        return (f"No benchmark records at scale {scale} (logs/{scale}/benchmarks/): every rule that does work "
                f"writes one when it runs.\n")
    table = costs.groupby(["paper", "rule"]).agg(
        jobs=("job", "size"), wall_s=("wall_s", "sum"), cpu_s=("cpu_s", "sum"),
        max_rss_mb=("max_rss_mb", "max")).reset_index()
    papers = table.groupby("paper")[["jobs", "wall_s", "cpu_s"]].sum().reset_index()
    train = costs[costs["rule"] == "train"]
    readings = train.groupby(["paper", "reading"]).agg(
        runs=("job", "size"), wall_s=("wall_s", "sum"), cpu_s=("cpu_s", "sum")).reset_index()
    runs = train.nlargest(SLOWEST, "wall_s")[["paper", "job", "wall_s", "cpu_s", "max_rss_mb"]]
    return "\n".join([
        f"## Job costs at scale `{scale}`", "",
        "Sums over the jobs of Snakemake's benchmark records (wall and CPU seconds; peak resident memory in MB): "
        "not the wall time of a run, whose jobs overlap.", "", _markdown(table), "", "### Per paper", "",
        _markdown(papers), "", "### Runs per reading", "",
        f"A run shared by several readings counts under {PRIMARY} when the primary reading has it, else under the "
        "first alternative that adds it.", "", _markdown(readings), "", f"### The {SLOWEST} slowest runs", "",
        _markdown(runs.rename(columns={"job": "run"})) if len(runs) else "(no train job recorded)"]) + "\n"
