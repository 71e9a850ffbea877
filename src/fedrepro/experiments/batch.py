"""Training a set of runs outside Snakemake (scale studies, step-size tunings): each run as rule `train`
executes it (execute_run), stored by run id under a results directory of its own, several at once."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from fedrepro.errors import DataError
from fedrepro.experiments.execute import execute_run
from fedrepro.experiments.runtable import RunTable
from fedrepro.experiments.store import run_files


def _train(run_id: str, spec: dict[str, Any], results_dir: Path, prepared: Path,
           provenance: list[Path]) -> str:
    execute_run(run_id, spec, run_files(results_dir, run_id), prepared, provenance, threads=1,
                log_path=results_dir / "logs" / f"{run_id}.log")
    return run_id


def train_missing(table: RunTable, results_dir: Path, jobs: int, what: str) -> None:
    """Train the runs of `table` not yet stored under results_dir/runs, `jobs` at once (1 torch thread
    each), so that a rerun trains only what is missing."""
    todo = [rid for rid in table.runs if not run_files(results_dir, rid).record.exists()]
    inputs = {rid: table.input_files(rid) for rid in todo}
    absent = sorted({p for files in inputs.values() for p in [files["prepared"], *files["provenance"]] if not Path(p).exists()})
    if absent:
        raise DataError(f"{what} reads data that is not prepared: {', '.join(absent)}; make it with "
                        f"`snakemake --cores 2 {' '.join(p for p in absent if p.startswith('data/prepared/'))}`")
    print(f"{what}: {len(table.runs)} runs, {len(todo)} to train", flush=True)
    (results_dir / "logs").mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max(1, jobs), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_train, rid, table.runs[rid], results_dir,
                               Path(inputs[rid]["prepared"]),
                               [Path(p) for p in inputs[rid]["provenance"]]) for rid in todo]
        for done, future in enumerate(futures, 1):
            print(f"  [{done}/{len(todo)}] trained {future.result()}", flush=True)
