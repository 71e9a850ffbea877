"""Run one spec end to end: load data, train, write metrics.csv and run.json atomically.

A killed run leaves its last checkpoint; running the same spec again resumes from it and
ends with the same metrics as an uninterrupted run. The checkpoint is removed once the
results are in place.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from fedrepro.data.inputs import load_input, prepared_path
from fedrepro.engines import ENGINES
from fedrepro.engines.context import RunContext, pin_float_settings, resolve_device
from fedrepro.engines.driver import run_seeds
from fedrepro.errors import ConfigError, DataError, ResultsError
from fedrepro.experiments import provenance
from fedrepro.experiments.run_log import run_logger
from fedrepro.experiments.seed_workers import run_in_workers
from fedrepro.experiments.store import METRICS_SHA256, RECORD_SHA256, RunFiles, record_sha256, write_metrics
from fedrepro.seeding import seeds_of
from fedrepro.training_code import code_sha256
from fedrepro.utils import atomic
from fedrepro.utils.digest import file_sha256


def execute_run(
    run_id: str,
    spec: dict[str, Any],
    files: RunFiles,
    prepared: Path,
    data_provenance: list[Path],
    *,
    device: str = "auto",
    threads: int = 1,
    seed_workers: int = 1,
    log_path: Path | None = None,
    repo: Path = Path("."),
) -> dict[str, Any]:
    """Train `spec` on `prepared`, the one input its settings name (data/inputs.py prepared_path: an .npz or a
    multi-view folder), and write its results; returns the run record (run.json). `seed_workers` > 1 trains up to
    that many of its seed groups at once, each in a process of `threads` threads (experiments/seed_workers.py):
    the same metrics.csv, byte for byte."""
    if seed_workers < 1:
        raise ConfigError(f"seed_workers = {seed_workers}: a run needs at least one process")
    torch.set_num_threads(max(1, threads))
    pin_float_settings()
    device = resolve_device(device)
    log = run_logger(log_path)
    engine = ENGINES[spec["engine"]]
    code = code_sha256(spec["engine"])  # the sources as this process imported them, read before it trains
    escape = files.escape()
    if escape:
        raise ResultsError(f"{escape}: a run writes only inside its results tree; remove the link and run it again")
    engine.check_limits(spec, f"run {run_id}")  # (start-up checks the pipeline's runs; this, any other)
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    log.info("run %s on %s: %s", run_id, device, spec)
    expected = Path(prepared_path(spec)).name
    if Path(prepared).name != expected:
        raise DataError(f"run {run_id} reads {expected} (its dataset and view), not {prepared}")
    data_files = provenance.data_files(data_provenance, [prepared], repo)  # before training: fails fast

    ctx = RunContext(run_id, spec, device, files.checkpoint, log, started=t0)
    groups = len(engine.seed_groups(seeds_of(spec)))
    at_once = seed_workers > 1 and groups > 1
    checkpoints = [files.group_checkpoint(g) for g in range(groups)] if at_once else [files.checkpoint]
    for other in sorted(set(files.checkpoints()) - set(checkpoints)):
        if other.exists():
            log.warning("not resuming %s: it is a checkpoint of %s, and this job trains %s", other,
                        "seed groups at once" if other != files.checkpoint else "one seed group after another",
                        f"{min(seed_workers, groups)} at once" if at_once else "one after another")
    if at_once:  # each worker builds the setup itself: this process holds no data
        rows, summary, columns = run_in_workers(engine, spec, ctx, Path(prepared), checkpoints, seed_workers,
                                                threads, log_path)
    else:
        setup = engine.setup(spec, load_input(prepared), ctx)
        rows, summary = run_seeds(engine, setup, spec, ctx)
        columns = setup.columns

    diverged = any(info.get("diverged_at") is not None for info in summary["seeds"].values())
    record = {
        "run_id": run_id,
        "spec": spec,
        "numerics": engine.numerics,  # the version that made these results (their run id includes it when > 0)
        "code_sha256": code,  # the sources that decide its floats (training_code.py); in no run id
        "git": provenance.git_state(repo),
        "packages": provenance.package_versions(),
        "device": provenance.device_info(device),
        "platform": provenance.platform_info(),
        "seeds": seeds_of(spec),
        "seed_workers": min(seed_workers, groups),  # processes that trained its seed groups at once
        "data_files": data_files,
        "started": started.isoformat(),
        "ended": datetime.now(timezone.utc).isoformat(),
        "wall_seconds": round(ctx.wall_seconds(), 3),  # every attempt's, when resumed from a checkpoint
        "resumed": ctx.resumed,  # the checkpoints it resumed from (RunContext.resumed); [] when trained at one go
        "diverged": diverged,
        "summary": summary,
    }
    write_metrics(files.metrics, rows, columns)
    # hashed from the file as it landed, so the hash vouches for the bytes readers will see
    record[METRICS_SHA256] = file_sha256(files.metrics)
    record[RECORD_SHA256] = record_sha256(record)
    atomic.write_json(files.record, record)
    for path in files.checkpoints():
        path.unlink(missing_ok=True)
    log.info("done in %.1f s%s", record["wall_seconds"], " (diverged)" if diverged else "")
    return record


