"""Entry points shared by the Snakemake scripts and the `fedrepro` command."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Callable

from fedrepro.errors import DataError
from fedrepro.errors import ConfigError

# Errors whose message is the whole story for the user: no traceback.
USER_ERRORS = (DataError, ConfigError)


def run_step(step: Callable[[], None], log_path: str | None = None) -> None:
    """Run a pipeline step; a user error ends it with its message instead of a stack trace."""
    if log_path:
        logging.basicConfig(filename=log_path, level=logging.INFO,
                            format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        step()
    except USER_ERRORS as error:
        logging.getLogger("fedrepro").error("%s", error)
        print(f"fedrepro: error: {error}", file=sys.stderr)
        sys.exit(1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="fedrepro", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    fetch = sub.add_parser("fetch", help="download (or copy from a mirror) and prepare one dataset")
    fetch.add_argument("dataset")
    fetch.add_argument("--mirror", default=None, help="mirror directory (default: $FEDREPRO_DATA_MIRROR)")
    fetch.add_argument("--data-dir", default="data", type=Path)
    one = sub.add_parser("run", help="train one curve of a figure outside Snakemake, with overrides (checks, tuning)")
    one.add_argument("paper")
    one.add_argument("figure")
    one.add_argument("--scale", default="quick", choices=["smoke", "quick", "paper"])
    one.add_argument("--panel", help="panel name (default: the figure's first)")
    one.add_argument("--curve", help="curve label (default: the panel's first)")
    one.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override a run setting; VALUE is read as YAML (e.g. rounds=1, backend=loop)")
    one.add_argument("--out", default=Path("results/adhoc"), type=Path, help="results directory (not the pipeline's)")
    one.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    one.add_argument("--threads", default=1, type=int)
    args = parser.parse_args(argv)

    if args.command == "run":
        run_step(lambda: run_one(args))

    if args.command == "fetch":
        from fedrepro.data import fetch_dataset, prepare_dataset, resolve_mirror

        def step() -> None:
            fetch_dataset(args.dataset, args.data_dir / "raw", resolve_mirror(args.mirror))
            prepare_dataset(args.dataset, args.data_dir / "raw" / args.dataset,
                            args.data_dir / "prepared" / f"{args.dataset}.npz")

        run_step(step)


def run_one(args: argparse.Namespace) -> None:
    """One run of the run table with settings overridden, checked by the engine's run schema and
    executed as rule `train` would; its data must be prepared (e.g. `snakemake data/prepared/<name>.npz`)."""
    import yaml

    from fedrepro.experiments.execute import execute_run
    from fedrepro.experiments.runtable import RunTable, run_id_of
    from fedrepro.engines import ENGINES
    from fedrepro.validate import check, load_and_validate
    from fedrepro.results.store import read_record, run_files

    _, table = load_and_validate({"scale": args.scale}, Path("config"))
    figure = table.figure(args.paper, args.figure)
    curves = [c for c in figure.curves if (args.panel in (None, c.panel)) and (args.curve in (None, c.label))]
    if not curves:
        raise ConfigError(f"{args.figure}: no curve with panel {args.panel!r} and label {args.curve!r}; curves: "
                          + "; ".join(sorted({f"{c.panel} / {c.label}" for c in figure.curves})))
    spec = dict(table.runs[curves[0].run_id])
    for item in args.set:
        key, _, value = item.partition("=")
        spec[key] = yaml.safe_load(value)
    check(spec, ENGINES[spec["engine"]].schema, "fedrepro run --set")
    run_id = run_id_of(spec)
    files = run_files(args.out, run_id)
    log_path = args.out / f"{run_id}.log"
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"run {run_id} ({curves[0].panel} / {curves[0].label}) -> {files.run_dir}, log {log_path}")
    inputs = RunTable(args.scale, {run_id: spec}, {}).input_files(run_id)
    execute_run(run_id, spec, files, {Path(p).stem: Path(p) for p in inputs["prepared"]},
                [Path(p) for p in inputs["provenance"]], device=args.device, threads=args.threads,
                log_path=log_path)
    record = read_record(files.record)
    print(f"wall {record['wall_seconds']:.1f} s on {record['device']['device']}; diverged: {record['diverged']}")
    print(files.metrics.read_text())
