"""Entry points shared by the Snakemake scripts and the `fedrepro` command."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Callable

from fedrepro.data import DataError
from fedrepro.experiments.runtable import ConfigError

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
    args = parser.parse_args(argv)

    if args.command == "fetch":
        from fedrepro.data import fetch_dataset, prepare_dataset, resolve_mirror

        def step() -> None:
            fetch_dataset(args.dataset, args.data_dir / "raw", resolve_mirror(args.mirror))
            prepare_dataset(args.dataset, args.data_dir / "raw" / args.dataset,
                            args.data_dir / "prepared" / f"{args.dataset}.npz")

        run_step(step)
