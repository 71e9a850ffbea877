"""Train every smoke run of the five papers with the code on PYTHONPATH and print `run_id sha256(metrics.csv)` per
run, for a byte-identity check of a refactor between two source trees (docs/development.md, "Numerics versions"):

    PYTHONPATH=/old/src python benchmarks/smoke_identity.py --tree /old --data data --work /tmp/a > old.txt
    PYTHONPATH=src python benchmarks/smoke_identity.py --tree . --data data --work /tmp/b > new.txt
    diff old.txt new.txt

Each run goes through execute_run as rule `train` runs it, in `--work` (which gets links to the tree's config/ and
to the prepared data, so neither tree's results/ is touched). The run table is the tree's own, so its run ids are
checked as well. One thread, on the CPU."""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, required=True, help="the source tree whose config/ is read")
    parser.add_argument("--data", type=Path, required=True, help="a data/ folder with raw/ and prepared/")
    parser.add_argument("--work", type=Path, required=True, help="an empty scratch folder")
    parser.add_argument("--papers", nargs="*", default=None, help="default: every paper")
    args = parser.parse_args()
    tree, data = args.tree.resolve(), args.data.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    os.chdir(args.work)
    Path("results").mkdir(exist_ok=True)
    for name, target in (("config", tree / "config"), ("data", data)):
        if not Path(name).exists():
            Path(name).symlink_to(target)

    import fedrepro
    from fedrepro.experiments.execute import execute_run
    from fedrepro.experiments.runtable import run_id_of
    from fedrepro.experiments.store import run_files
    from fedrepro.validate import load_and_validate

    print(f"# code {Path(fedrepro.__file__).parent}", file=sys.stderr)
    _, table = load_and_validate({"scale": "smoke"}, Path("config"))
    for run_id, spec in sorted(table.runs.items(), key=lambda item: (item[1]["paper"], item[0])):
        if args.papers and spec["paper"] not in args.papers:
            continue
        assert run_id_of(spec) == run_id, run_id
        files = run_files(Path("results"), run_id)
        if not files.metrics.exists():
            inputs = table.input_files(run_id)
            execute_run(run_id, dict(spec), files, Path(inputs["prepared"]), [Path(p) for p in inputs["provenance"]],
                        device="cpu", threads=1, log_path=Path("results") / f"{run_id}.log")
        digest = hashlib.sha256(files.metrics.read_bytes()).hexdigest()
        print(f"{spec['paper']} {run_id} {digest}", flush=True)


if __name__ == "__main__":
    main()
